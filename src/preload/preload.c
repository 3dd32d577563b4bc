/*
 * preload: libcorotop-preload, put in LD_PRELOAD by `corotop -- CMD` so
 * that a program that never calls the probe is traced anyway, through the
 * functions every C and C++ coroutine library switches with:
 *
 *   glibc       makecontext, swapcontext, setcontext (getcontext returns
 *               twice and cannot be wrapped: it passes through)
 *   Boost       make_fcontext, jump_fcontext, ontop_fcontext (exported by
 *               libboost_context.so; Boost.Fiber and Boost.Coroutine2 are
 *               built on them)
 *   jumps       longjmp, _longjmp, siglongjmp, __longjmp_chk: a jump to a
 *               stack that is another context's is a switch to it (QEMU
 *               starts a coroutine with swapcontext, then switches with
 *               sigsetjmp/siglongjmp); jmpbuf.c reads where it lands
 *
 * A coroutine is a context made by makecontext or make_fcontext; each
 * thread's own stack is that thread's root context.  Two kinds of context
 * are the scheduler's, not the program's, and are opened as such
 * (COROTOP_CORO_ROOT, COROTOP_CORO_DISPATCHER: corotop's lints for
 * coroutines do not judge them): a thread's root, named "root", and
 * Boost.Fiber's dispatcher, named "boost.fiber dispatcher" -- the one
 * context libboost_fiber makes itself (a fiber's context is made by
 * templates instantiated in the program), told by where make_fcontext is
 * called from.  Every other context is opened with the function it was
 * made to run (makecontext's func, make_fcontext's fn) as its entry, which
 * corotop names it by from its first snapshot (docs/TRACING.md).
 *
 * Every switch suspends the context running on this thread and resumes the
 * one switched to, on this thread (M:N migration shows as the new
 * thread).  The context being resumed is found by what the switch is given:
 * the ucontext_t (the table maps each one to the context last saved in it),
 * or the fcontext_t, which is the stack pointer the resumed context saved
 * when it suspended (the table learns it on the other side of that suspend:
 * the switch returns it to whoever was resumed, as transfer_t.fctx).
 *
 * A switch made where the preload cannot see it (a jump it cannot decode,
 * a runtime's own assembly) is found at the next switch it does see: the
 * thread is then on a stack that is not its current context's.  It is
 * counted (corotop shows the count), and the context whose stack that is
 * taken as the one running (preload_here).
 *
 * A context dies when its entry returns (makecontext), when Boost leaves it
 * through ontop_fcontext to free it, or when its stack is given to a new
 * context.  Boost's exit (fiber_exit, context_exit) is told apart from the
 * other uses of ontop_fcontext (Boost.Fiber suspends with resume_with,
 * whose function keeps the suspended context and also returns a null
 * fcontext_t) by its data: the exit passes the context's own record, the
 * data the first switch into the context passed to its entry.  For the
 * others the function ontop_fcontext runs is wrapped: it receives the
 * suspended context's fcontext_t, which is where that context is saved.
 *
 * The map from ucontext_t or fcontext_t to record is consulted only when a
 * small per-thread cache misses: a switch resumes a context saved at the
 * same place as last time (a loop's yield) far more often than not, and a
 * cached entry is checked against the record's own saved_key, so the hot
 * path takes no lock and makes no atomic read-modify-write.
 *
 * Thread-local state is read only before a switch, or in a function called
 * after it that the compiler may not inline (the switch may return on
 * another thread; a TLS address computed before it would be the old one).
 *
 * A signal handler may switch too, wherever it lands -- inside one of
 * these wrappers as well (a handler that switches to another context and
 * back is legal at any instruction).  The bookkeeping of one switch (the
 * probe's writes, this thread's current context) is made whole or not at
 * all: while it is under way the thread is busy, and a switch a handler
 * makes then is passed to the real function untraced -- the probe is
 * never entered twice on one thread, and the handler never sees the
 * current context half changed.  Between the bookkeeping and the real
 * switch the handler sees the switch as made, which it nearly is: what it
 * switches away from is recorded as the context resumed, and is that
 * context once the handler returns.
 */
#define _GNU_SOURCE
/* longjmp is wrapped by its own name: the fortified headers would rename
 * it to __longjmp_chk, which is wrapped separately. */
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "corotop/probe.h"
#include "preload/ctxtable.h"
#include "preload/fiberfn.h"
#include "preload/jmpbuf.h"
#include "preload/resolve.h"
#include "preload/testpoint.h"

/* Contexts tracked at most (COROTOP_CONTEXTS, up to CTXTABLE_MAX): the
 * table maps records in chunks as they come, so the bound is only there
 * for a program that leaks contexts. */
#define PRELOAD_DEFAULT_CONTEXTS (1u << 22)
#define PRELOAD_CACHE 16u /* per-thread lookups kept (a power of two) */

#define PRELOAD_API __attribute__((visibility("default")))
#define PRELOAD_HIDDEN __attribute__((visibility("hidden")))
#define PRELOAD_NOIPA __attribute__((noinline, noipa))

/* Boost.Context's C interface (boost/context/detail/fcontext.hpp). */
typedef void *fcontext_t;
typedef struct {
	fcontext_t fctx;
	void *data;
} transfer_t;

typedef fcontext_t (*make_fcontext_fn)(void *, size_t, void (*)(transfer_t));
typedef transfer_t (*jump_fcontext_fn)(fcontext_t, void *);
typedef transfer_t (*ontop_fcontext_fn)(fcontext_t, void *,
					transfer_t (*)(transfer_t));
typedef void (*makecontext_fn)(ucontext_t *, void (*)(void), int, ...);
typedef int (*swapcontext_fn)(ucontext_t *, const ucontext_t *);
typedef int (*setcontext_fn)(const ucontext_t *);
typedef void (*longjmp_fn)(struct __jmp_buf_tag *, int);

static struct ctxtable preload_table;
/* Written once by the constructor, before the program's code runs. */
static bool preload_on;
static bool preload_jumps; /* longjmp traced (jmpbuf decodes, not off) */
static pthread_key_t preload_root_key;

/* glibc's functions, found at load (resolve_libc), or at first use when
 * another library's constructor switches before the preload's ran
 * (relaxed: any thread that finds one stores the same pointer). */
static _Atomic(makecontext_fn) real_makecontext;
static _Atomic(swapcontext_fn) real_swapcontext;
static _Atomic(setcontext_fn) real_setcontext;
static _Atomic(longjmp_fn) real_longjmp;
static _Atomic(longjmp_fn) real__longjmp;
static _Atomic(longjmp_fn) real_siglongjmp;
static _Atomic(longjmp_fn) real_longjmp_chk;

/* This thread: the context running on it, its root, the context the last
 * switch from this thread suspended, and the lookup cache.  Initial-exec
 * TLS: the library is loaded at start (LD_PRELOAD), so its TLS is in the
 * static block and an access is one %fs-relative load, not a call to
 * __tls_get_addr. */
#define PRELOAD_TLS static __thread __attribute__((tls_model("initial-exec")))
PRELOAD_TLS uint32_t preload_cur = CTXTABLE_NONE;
PRELOAD_TLS uint32_t preload_root = CTXTABLE_NONE;
PRELOAD_TLS uint32_t preload_from = CTXTABLE_NONE;
/* The switch in progress is a context's exit (ontop_fcontext with its own
 * record); and the function an ontop_fcontext runs, for its wrapper. */
PRELOAD_TLS bool preload_exiting;
PRELOAD_TLS transfer_t (*preload_ontop_fn)(transfer_t);
/* This thread is in the preload's bookkeeping: a switch made meanwhile by
 * a signal handler on this thread is passed on untraced (preload_enter). */
PRELOAD_TLS volatile sig_atomic_t preload_busy;
/* A switch is recorded and the thread has not landed in the context it
 * resumed yet (a signal handler may run meanwhile, on the old stack,
 * and see the switch as made): preload_here believes the records. */
PRELOAD_TLS volatile sig_atomic_t preload_landing;
/* The page (sp >> 12) this thread's root was last found on, with no made
 * context's stack there, and the table's stacks_gen then (+ 1: 0 is none):
 * preload_here's answer for that page while no stack has been set since. */
PRELOAD_TLS uint64_t preload_root_page;
PRELOAD_TLS uint64_t preload_root_gen;
PRELOAD_TLS uint64_t preload_cache_key[PRELOAD_CACHE];
PRELOAD_TLS uint32_t preload_cache_idx[PRELOAD_CACHE];

#define PRELOAD_LIBC(var, name)                                                \
	({                                                                     \
		__typeof__(atomic_load_explicit(&var,                          \
						memory_order_relaxed)) f_ =    \
			atomic_load_explicit(&var, memory_order_relaxed);      \
		if (!f_) {                                                     \
			f_ = (__typeof__(f_))resolve_libc(name);               \
			atomic_store_explicit(&var, f_, memory_order_relaxed); \
		}                                                              \
		f_;                                                            \
	})

/* Boost's function f, as the caller of the wrapper running binds it. */
#define PRELOAD_BOOST(f) resolve_boost(f, __builtin_return_address(0))

/* Begins the bookkeeping of a switch: false when the preload is off or
 * this thread is already in it (this is a signal handler's switch, to be
 * passed on untraced). */
static inline bool preload_enter(void)
{
	if (!preload_on || preload_busy)
		return false;
	preload_busy = 1;
	/* A handler on this thread sees busy set before any store of the
	 * bookkeeping (a compiler barrier; pairs with preload_leave's). */
	atomic_signal_fence(memory_order_seq_cst);
	return true;
}

/* Ends it, before the real switch (after it, this may be another
 * thread's TLS). */
static inline void preload_leave(void)
{
	/* Every store of the bookkeeping before busy is cleared (pairs
	 * with preload_enter's). */
	atomic_signal_fence(memory_order_seq_cst);
	preload_busy = 0;
}

static struct ctx *preload_ctx(uint32_t i)
{
	return ctxtable_ctx(&preload_table, i);
}

/* A context record with its probe state opened; CTXTABLE_NONE when the
 * table is full (the context then runs untraced).  dispatcher: a
 * scheduler's own context (Boost.Fiber's), named for what it is.  entry:
 * the function the context was made to run (NULL for a root), which
 * names it in corotop until a walk finds better. */
static uint32_t preload_open(enum ctx_kind kind, uint64_t lo, uint64_t hi,
			     bool dispatcher, void (*entry)(void),
			     uint64_t made_for)
{
	uint32_t i = ctxtable_alloc(&preload_table, kind);
	struct ctx *c;

	if (i == CTXTABLE_NONE) {
		corotop_probe_context_untracked_();
		return i;
	}
	c = preload_ctx(i);
	/* A thread's own stack is named so, and a dispatcher; a made
	 * context is named by corotop after its entry (the program's
	 * function a Boost entry template was made for), then after the
	 * program's first frame its entry runs. */
	corotop_coro_open_made_for(
		&c->coro,
		/* relaxed: unique ids, no ordering. */
		atomic_fetch_add_explicit(&preload_table.next_id, 1,
					  memory_order_relaxed),
		kind == CTX_ROOT ? "root"
		: dispatcher	 ? "boost.fiber dispatcher"
				 : NULL,
		/* A thread's root takes part in most switches (an event
		 * loop's, a scheduler's): a hub, with a longer ring, so that
		 * it loses no more than the others when corotop is late. */
		COROTOP_NAME_STATIC |
			(kind == CTX_ROOT ? COROTOP_CORO_HUB | COROTOP_CORO_ROOT
					  : 0u) |
			(dispatcher ? COROTOP_CORO_DISPATCHER : 0u),
		entry, (void (*)(void))(uintptr_t)made_for);
	if (hi > lo) {
		corotop_coro_set_stack(&c->coro, (const void *)lo,
				       (const void *)hi);
		(void)ctxtable_set_stack(&preload_table, i, lo, hi);
	}
	/* Every context the preload sees is one: a thread's own stack, or
	 * one made for a context switch (set_stack said so already). */
	corotop_coro_set_context(&c->coro);
	return i;
}

/* The context is gone: its probe state closed, the record free.  The maps
 * may still name it; their lookups check the record (ctxtable.c). */
static void preload_close(uint32_t i)
{
	struct ctx *c = preload_ctx(i);

	/* relaxed: the record's kind is fixed while it is live; closed
	 * already (twice over one end), nothing is left to do. */
	if (atomic_load_explicit(&c->kind, memory_order_relaxed) == CTX_FREE)
		return;
	corotop_coro_close(&c->coro);
	ctxtable_free(&preload_table, i);
}

/* Any live context whose stack overlaps [lo, hi): a stack given to a new
 * context means the context that had it is gone.  Its top and bottom
 * pages are looked at (a stack is given whole), and the pages next to
 * them: a malloc'd stack shares its end pages with its neighbours, whose
 * records the page map may name there. */
static void preload_stack_reused(uint64_t lo, uint64_t hi)
{
	uint64_t at[4] = {hi - 1, lo, hi - 1 - 4096, lo + 4096};

	for (int k = 0; k < 4 && hi > lo; k++) {
		uint32_t old;

		if (at[k] < lo || at[k] >= hi)
			continue;
		old = ctxtable_by_stack(&preload_table, at[k]);

		/* relaxed: the record's kind is fixed while it is live. */
		if (old != CTXTABLE_NONE &&
		    atomic_load_explicit(&preload_ctx(old)->kind,
					 memory_order_relaxed) != CTX_ROOT)
			preload_close(old);
	}
}

/* Context i saved at key: a ucontext_t (uc), or the fcontext_t its suspend
 * made, which lies in its stack (a root's: in its thread's stack, entered
 * in the page map for that page). */
static void preload_saved(uint32_t i, uint64_t key, bool uc)
{
	struct ctx *c;

	if (i == CTXTABLE_NONE || !key)
		return;
	c = preload_ctx(i);
	/* relaxed: only the thread switching away from i writes it. */
	if (atomic_load_explicit(&c->saved_key, memory_order_relaxed) == key)
		return; /* saved where it was last time: nothing changes */
	/* relaxed: a lookup compares it; the map entries below are
	 * published with release. */
	atomic_store_explicit(&c->saved_key, key, memory_order_relaxed);
	if (uc)
		ctxtable_set_uc(&preload_table, i, key);
	/* relaxed: the record's kind is fixed while it is live. */
	else if (atomic_load_explicit(&c->kind, memory_order_relaxed) ==
		 CTX_ROOT)
		ctxtable_root_saved_at(&preload_table, i, key);
}

/* The context saved at key (CTXTABLE_NONE: not one of ours): from this
 * thread's cache when the record still says it is saved there, else from
 * the maps (a ucontext_t, or an fcontext_t in a context's stack). */
static uint32_t preload_find(uint64_t key, bool uc)
{
	unsigned h = (unsigned)(key >> 4) & (PRELOAD_CACHE - 1);
	uint32_t i = preload_cache_idx[h];

	/* relaxed: the program's own synchronization (the hand-over of the
	 * context to this thread) orders the record's state before this. */
	if (key && preload_cache_key[h] == key && i != CTXTABLE_NONE &&
	    atomic_load_explicit(&preload_ctx(i)->saved_key,
				 memory_order_relaxed) == key)
		return i;
	i = uc ? ctxtable_by_uc(&preload_table, key)
	       : ctxtable_by_stack(&preload_table, key);
	if (i != CTXTABLE_NONE) {
		preload_cache_key[h] = key;
		preload_cache_idx[h] = i;
	}
	return i;
}

static void preload_root_gone(void *arg)
{
	uint32_t i = (uint32_t)(uintptr_t)arg - 1;

	if (i < preload_table.cap &&
	    /* relaxed: the kind of a live record is fixed. */
	    atomic_load_explicit(&preload_ctx(i)->kind, memory_order_relaxed) ==
		    CTX_ROOT)
		preload_close(i);
}

/* The context running on this thread: its root the first time. */
static uint32_t preload_current(uint64_t addr)
{
	if (preload_cur != CTXTABLE_NONE)
		return preload_cur;
	if (preload_root == CTXTABLE_NONE) {
		preload_root = preload_open(CTX_ROOT, 0, 0, false, NULL, 0);
		if (preload_root == CTXTABLE_NONE)
			return CTXTABLE_NONE;
		corotop_coro_resume(&preload_ctx(preload_root)->coro, addr);
		pthread_setspecific(preload_root_key,
				    (void *)(uintptr_t)(preload_root + 1));
	}
	/* A thread that switched to a context nobody made (one saved by
	 * getcontext, say) is taken to be back on its own stack. */
	preload_cur = preload_root;
	return preload_cur;
}

/* The context whose stack holds sp: a made context's, else this thread's
 * root -- a stack no context was made on is taken to be the thread's own,
 * as preload_current does.  Called after preload_current. */
static uint32_t preload_owner(uint64_t sp)
{
	uint32_t i = ctxtable_by_stack(&preload_table, sp);

	/* relaxed: the record's kind is fixed while it is live. */
	if (i != CTXTABLE_NONE &&
	    atomic_load_explicit(&preload_ctx(i)->kind, memory_order_relaxed) !=
		    CTX_ROOT)
		return i;
	return preload_root;
}

/* The context running on this thread, as the stack this runs on says
 * (sp): preload_current's, unless sp is not in its stack (a made
 * context's), or is in a made context's (the root's) -- the thread got
 * here by a switch the preload did not see.
 * That switch is counted, and the context whose stack this is taken as
 * the one running (the model suspends the stale one when the next resume
 * on this thread is harvested).  A signal handler on its alternate stack
 * is on no context's stack and changes nothing. */
static uint32_t preload_here(uint64_t addr, uint64_t sp)
{
	/* Before the lookups: a stack set after this read moves it. */
	uint64_t gen = ctxtable_stacks_gen(&preload_table);
	uint32_t cur = preload_current(addr), own;
	struct ctx *c;
	uint64_t lo, hi;
	stack_t ss;

	/* Between a recorded switch and its landing (this is a signal
	 * handler there, or the switch was a jump, which lands in the
	 * program's code): the records stand, once. */
	if (cur == CTXTABLE_NONE || preload_landing) {
		preload_landing = 0;
		return cur;
	}
	c = preload_ctx(cur);
	/* relaxed: written by the thread that opened the record, ordered
	 * before this by the program's hand-over of the context. */
	lo = atomic_load_explicit(&c->stack_lo, memory_order_relaxed);
	hi = atomic_load_explicit(&c->stack_hi, memory_order_relaxed);
	/* A made context on its own stack; a root is on its own unless a
	 * made context's holds sp (preload_owner then says so).  relaxed:
	 * the record's kind is fixed while it is live. */
	if (atomic_load_explicit(&c->kind, memory_order_relaxed) != CTX_ROOT) {
		if (lo >= hi || (sp >= lo && sp < hi))
			return cur;
	} else if (preload_root_gen == gen + 1 &&
		   preload_root_page == sp >> 12) {
		/* The root, on a page no made context's stack held when
		 * last looked at, and none set since. */
		return cur;
	}
	own = preload_owner(sp);
	if (own == cur && cur == preload_root) {
		preload_root_page = sp >> 12;
		preload_root_gen = gen + 1;
	}
	if (own == cur ||
	    (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK)))
		return cur;
	corotop_probe_switch_unseen_();
	preload_cur = own;
	return own;
}

/* One switch on this thread, before the real one: `from` suspends and
 * `to` (CTXTABLE_NONE: not known) resumes, both at addr -- one probe call
 * and one clock read for both, traced or not (untraced, the probe keeps
 * them in the contexts' probe state, so that an attach later finds them
 * as they are). */
static void preload_switch(uint32_t from, uint32_t to, uint64_t addr)
{
	corotop_coro_switch_(
		from != CTXTABLE_NONE ? &preload_ctx(from)->coro : NULL,
		to != CTXTABLE_NONE ? &preload_ctx(to)->coro : NULL, addr);
	PRELOAD_TEST_POINT(PRELOAD_POINT_RECORDED);
	preload_cur = to;
	preload_landing = 1;
}

/* The thread is in the context its last switch resumed (called there:
 * not inlined, so the TLS is that thread's). */
static PRELOAD_NOIPA void preload_landed(void)
{
	preload_landing = 0;
}

/* ---- glibc ucontext ---- */

/* The program's entry, called with CTX_MAX_ARGS 64-bit arguments: the
 * ones makecontext was given, then zeros.  Passing more than a function
 * takes is harmless on x86-64 and AArch64 (the caller owns the argument
 * area), and each is the full greg_t glibc itself would pass. */
typedef void (*preload_entry_fn)(uint64_t, uint64_t, uint64_t, uint64_t,
				 uint64_t, uint64_t, uint64_t, uint64_t,
				 uint64_t, uint64_t, uint64_t, uint64_t,
				 uint64_t, uint64_t, uint64_t, uint64_t,
				 uint64_t, uint64_t, uint64_t, uint64_t,
				 uint64_t, uint64_t, uint64_t, uint64_t,
				 uint64_t, uint64_t, uint64_t, uint64_t,
				 uint64_t, uint64_t, uint64_t, uint64_t);

_Static_assert(CTX_MAX_ARGS == 32, "preload_entry_fn takes CTX_MAX_ARGS");

/* Context idx ended on this thread: closed, and glibc resumes link
 * (bookkeeping like a switch's).  Not inlined: its TLS is the thread's
 * the entry returned on. */
static PRELOAD_NOIPA void preload_died(int idx, void *link)
{
	uint32_t next;

	if (!preload_enter())
		return;
	next = link ? ctxtable_by_uc(&preload_table, (uint64_t)link)
		    : CTXTABLE_NONE;
	preload_cur = CTXTABLE_NONE;
	preload_close((uint32_t)idx);
	if (next != CTXTABLE_NONE) {
		corotop_coro_resume(&preload_ctx(next)->coro,
				    (uint64_t)__builtin_return_address(0));
		preload_cur = next;
	}
	preload_leave();
}

/* Entry of every context made by makecontext: the program's entry with
 * its arguments, then the context's death, then glibc resumes uc_link
 * (which no wrapper sees, so the resume is recorded here). */
static void preload_uc_entry(int idx)
{
	struct ctx *c = preload_ctx((uint32_t)idx);
	void *link = c->link;
	const uint64_t *a = c->argv;

	preload_landed();
	((preload_entry_fn)c->entry)(
		a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9],
		a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18],
		a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26], a[27],
		a[28], a[29], a[30], a[31]);
	/* The entry may have returned on another thread than it started:
	 * the TLS below is read after the call. */
	preload_died(idx, link);
}

/* glibc's makecontext given n of the arguments in a (it reads n; the
 * rest are ignored). */
static void preload_makecontext(makecontext_fn f, ucontext_t *ucp,
				void (*func)(void), int n, const uint64_t *a)
{
	f(ucp, func, n, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8],
	  a[9], a[10], a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18],
	  a[19], a[20], a[21], a[22], a[23], a[24], a[25], a[26], a[27], a[28],
	  a[29], a[30], a[31]);
}

/* Called from makecontext_x86_64.S (hence not static). */
PRELOAD_HIDDEN makecontext_fn preload_makecontext_many(int argc);
PRELOAD_HIDDEN void preload_makecontext_c(ucontext_t *ucp, void (*func)(void),
					  int argc, ...);

/* A makecontext with more than CTX_MAX_ARGS arguments, from the x86-64
 * entry (makecontext_x86_64.S), which then jumps to glibc's with the
 * program's registers and stack untouched: that context is not traced.
 * Says so once; returns glibc's makecontext. */
PRELOAD_HIDDEN makecontext_fn preload_makecontext_many(int argc)
{
	static atomic_flag said = ATOMIC_FLAG_INIT;

	/* relaxed: only one note, whoever prints it. */
	if (!atomic_flag_test_and_set_explicit(&said, memory_order_relaxed))
		fprintf(stderr,
			"corotop: preload: makecontext with %d arguments (over "
			"%d): that context runs untraced\n",
			argc, CTX_MAX_ARGS);
	return PRELOAD_LIBC(real_makecontext, "makecontext");
}

#if defined(__x86_64__)
/* The exported makecontext is the assembly entry, which comes here with
 * at most CTX_MAX_ARGS arguments. */
#define PRELOAD_MAKECONTEXT PRELOAD_HIDDEN void preload_makecontext_c
#else
/* Elsewhere the C wrapper is the exported one: arguments past
 * CTX_MAX_ARGS are not passed on (the note says so). */
#define PRELOAD_MAKECONTEXT PRELOAD_API void makecontext
#endif

PRELOAD_MAKECONTEXT(ucontext_t *ucp, void (*func)(void), int argc, ...)
{
	makecontext_fn real = PRELOAD_LIBC(real_makecontext, "makecontext");
	uint64_t a[CTX_MAX_ARGS] = {0};
	int n = argc < 0 ? 0 : argc > CTX_MAX_ARGS ? CTX_MAX_ARGS : argc;
	uint64_t lo = (uint64_t)ucp->uc_stack.ss_sp;
	uint64_t hi = lo + ucp->uc_stack.ss_size;
	uint32_t old, i;
	va_list ap;

	/* As glibc reads them on x86-64 (greg_t): an int argument's upper
	 * half is whatever the caller left there, for glibc too. */
	va_start(ap, argc);
	for (int k = 0; k < n; k++)
		a[k] = va_arg(ap, uint64_t);
	va_end(ap);
	if (argc > CTX_MAX_ARGS)
		(void)preload_makecontext_many(argc);
	if (!preload_enter()) {
		preload_makecontext(real, ucp, func, n, a);
		return;
	}
	/* A stack given to a new context: the old one is gone.  So is the
	 * context this ucontext_t made before, if any. */
	preload_stack_reused(lo, hi);
	old = ctxtable_by_uc(&preload_table, (uint64_t)ucp);
	/* relaxed: the record's kind is fixed while it is in a map. */
	if (old != CTXTABLE_NONE &&
	    atomic_load_explicit(&preload_ctx(old)->kind,
				 memory_order_relaxed) == CTX_UCONTEXT)
		preload_close(old);
	i = argc > CTX_MAX_ARGS
		    ? CTXTABLE_NONE
		    : preload_open(CTX_UCONTEXT, lo, hi, false, func, 0);
	if (i == CTXTABLE_NONE) {
		preload_leave();
		preload_makecontext(real, ucp, func, n, a);
		return;
	}
	preload_ctx(i)->entry = func;
	preload_ctx(i)->argc = n;
	memcpy(preload_ctx(i)->argv, a, sizeof(a));
	preload_ctx(i)->link = ucp->uc_link;
	preload_saved(i, (uint64_t)ucp, true);
	preload_leave();
	real(ucp, (void (*)(void))preload_uc_entry, 1, (int)i);
}

PRELOAD_API int swapcontext(ucontext_t *oucp, const ucontext_t *ucp)
{
	swapcontext_fn real = PRELOAD_LIBC(real_swapcontext, "swapcontext");
	uint64_t addr = (uint64_t)__builtin_return_address(0);
	uint32_t from;
	int ret;

	if (preload_enter()) {
		from = preload_here(addr, (uint64_t)__builtin_frame_address(0));
		preload_saved(from, (uint64_t)oucp, true);
		preload_switch(from, preload_find((uint64_t)ucp, true), addr);
		preload_leave();
		PRELOAD_TEST_POINT(PRELOAD_POINT_SWITCH);
	}
	ret = real(oucp, ucp);
	preload_landed();
	return ret;
}

PRELOAD_API int setcontext(const ucontext_t *ucp)
{
	setcontext_fn real = PRELOAD_LIBC(real_setcontext, "setcontext");
	uint64_t addr = (uint64_t)__builtin_return_address(0);

	if (preload_enter()) {
		preload_switch(
			preload_here(addr,
				     (uint64_t)__builtin_frame_address(0)),
			preload_find((uint64_t)ucp, true), addr);
		preload_leave();
		PRELOAD_TEST_POINT(PRELOAD_POINT_SWITCH);
	}
	return real(ucp);
}

/* ---- setjmp/longjmp ---- */

/* A jump about to be made to env, from addr: a switch when it lands on
 * another context's stack (preload_owner: a made context's, or this
 * thread's own), nothing when it stays on the running one's (an error
 * path's jump, a signal handler's way out). */
static void preload_jump(const void *env, uint64_t addr)
{
	uint64_t sp;
	uint32_t from, to;
	bool moves;

	if (!preload_jumps || !jmpbuf_sp(env, &sp) || !preload_enter())
		return;
	from = preload_here(addr, (uint64_t)__builtin_frame_address(0));
	to = preload_owner(sp);
	moves = from != CTXTABLE_NONE && to != from;
	if (moves) {
		/* It is saved in its own stack now, no longer in the
		 * ucontext_t it was made or last swapped in: QEMU makes every
		 * coroutine in the same local ucontext_t, which must not end
		 * the one made there before. */
		preload_saved(from, (uint64_t)__builtin_frame_address(0),
			      false);
		preload_switch(from, to, addr);
	}
	preload_leave();
	if (moves)
		PRELOAD_TEST_POINT(PRELOAD_POINT_SWITCH);
}

/* The four names glibc jumps by (longjmp, _longjmp and siglongjmp are
 * the same code; __longjmp_chk is the fortified one), each forwarded to
 * its own real function. */
#define PRELOAD_LONGJMP(name, var)                                             \
	PRELOAD_API void name(struct __jmp_buf_tag env[1], int val)            \
	{                                                                      \
		longjmp_fn real = PRELOAD_LIBC(var, #name);                    \
                                                                               \
		preload_jump(env, (uint64_t)__builtin_return_address(0));      \
		real(env, val);                                                \
		__builtin_unreachable();                                       \
	}

void __longjmp_chk(struct __jmp_buf_tag env[1], int val)
	__attribute__((noreturn));

PRELOAD_LONGJMP(longjmp, real_longjmp)
PRELOAD_LONGJMP(_longjmp, real__longjmp)
PRELOAD_LONGJMP(siglongjmp, real_siglongjmp)
PRELOAD_LONGJMP(__longjmp_chk, real_longjmp_chk)

/* ---- Boost.Context fcontext ---- */

PRELOAD_API fcontext_t make_fcontext(void *sp, size_t size,
				     void (*fn)(transfer_t));
PRELOAD_API transfer_t jump_fcontext(fcontext_t to, void *vp);
PRELOAD_API transfer_t ontop_fcontext(fcontext_t to, void *vp,
				      transfer_t (*fn)(transfer_t));

/* What an fcontext switch leaves for the other side of it (preload_from,
 * preload_exiting, preload_ontop_fn): set from just before the real switch
 * until the resumed side takes it.  A signal handler's switch in between
 * keeps it aside and puts it back (preload_pending_take, _put). */
struct preload_pending {
	uint32_t from;
	bool exiting;
	transfer_t (*ontop)(transfer_t);
};

static struct preload_pending preload_pending_take(void)
{
	struct preload_pending p = {preload_from, preload_exiting,
				    preload_ontop_fn};

	/* Nothing in flight: the common case stores nothing. */
	if (p.from != CTXTABLE_NONE || p.ontop) {
		preload_from = CTXTABLE_NONE;
		preload_exiting = false;
		preload_ontop_fn = NULL;
	}
	return p;
}

/* Context i suspended at fctx, its registers pushed there by Boost's
 * jump_fcontext or ontop_fcontext: told to the probe at every park (the
 * address is often the same as the last one, the registers in it are
 * not), so that corotop walks the parked stack from them. */
static void preload_fc_saved(uint32_t i, fcontext_t fctx)
{
	corotop_coro_set_saved(&preload_ctx(i)->coro, COROTOP_SAVED_FCONTEXT,
			       (uint64_t)fctx);
}

/* After a switch returned into a context: whoever switched to it is now
 * suspended at t.fctx -- or, when it was exiting, freed by the function
 * ontop_fcontext ran (Boost's fiber_exit); a null t.fctx otherwise means
 * an ontop function kept it (its wrapper saw where).  Then what this
 * switch kept aside (p, when not NULL) is put back.  On the thread it
 * returned on: not inlined, so its TLS is that thread's. */
static PRELOAD_NOIPA void preload_arrived(fcontext_t fctx,
					  const struct preload_pending *p)
{
	uint32_t from;
	bool exiting;

	preload_landed();
	if (!preload_enter())
		return; /* a handler's switch: the outer one is not done */
	from = preload_from;
	exiting = preload_exiting;
	preload_from = CTXTABLE_NONE;
	preload_exiting = false;
	if (from != CTXTABLE_NONE) {
		if (exiting) {
			if (from != preload_root)
				preload_close(from);
		} else if (fctx) {
			preload_saved(from, (uint64_t)fctx, false);
			preload_fc_saved(from, fctx);
		}
	}
	if (p && (p->from != CTXTABLE_NONE || p->ontop)) {
		preload_from = p->from;
		preload_exiting = p->exiting;
		preload_ontop_fn = p->ontop;
	}
	preload_leave();
}

/* What ontop_fcontext runs on top of the resumed context, for a switch
 * that is not an exit: t.fctx is where the suspended context is saved
 * (the function may keep it elsewhere and return null). */
static PRELOAD_NOIPA transfer_t preload_ontop(transfer_t t)
{
	transfer_t (*fn)(transfer_t) = preload_ontop_fn;

	/* Not taken by a handler's switch: that one puts it back. */
	if (preload_enter()) {
		preload_ontop_fn = NULL;
		if (preload_from != CTXTABLE_NONE && t.fctx) {
			preload_saved(preload_from, (uint64_t)t.fctx, false);
			preload_fc_saved(preload_from, t.fctx);
		}
		preload_leave();
	}
	return fn(t);
}

/* Entry of every context made by make_fcontext. */
static void preload_fc_entry(transfer_t t)
{
	void (*entry)(transfer_t);
	uint32_t here;

	preload_arrived(t.fctx, NULL);
	/* This context is the one the switch that started it resumed --
	 * or, when that switch did not find it, the one whose stack this
	 * is: its entry is never lost. */
	here = preload_cur;
	if (here == CTXTABLE_NONE || !preload_ctx(here)->entry) {
		here = ctxtable_by_stack(&preload_table,
					 (uint64_t)__builtin_frame_address(0));
		if (here != CTXTABLE_NONE)
			preload_cur = here;
	}
	entry = NULL;
	if (here != CTXTABLE_NONE) {
		entry = (void (*)(transfer_t))preload_ctx(here)->entry;
		preload_ctx(here)->first_data = t.data;
	}
	if (entry)
		entry(t);
	/* An entry that returns: Boost's trampoline (make_fcontext's
	 * assembly) then ends the process with _exit(0); so does this one. */
	_exit(0);
}

/* Whether code at pc is Boost.Fiber's own (libboost_fiber*): the one
 * context it makes itself, from context::active() at a thread's first use,
 * is that thread's dispatcher.  _dl_find_object takes no lock (glibc
 * 2.35); dladdr before it. */
static bool preload_fiber_runtime(uint64_t pc)
{
	const char *path = NULL, *base;
#if defined(__GLIBC__) && defined(__GLIBC_PREREQ)
#if __GLIBC_PREREQ(2, 35)
#define PRELOAD_FIND_OBJECT 1
#endif
#endif
#ifdef PRELOAD_FIND_OBJECT
	struct dl_find_object o;

	if (_dl_find_object((void *)pc, &o) == 0 && o.dlfo_link_map)
		path = o.dlfo_link_map->l_name;
#else
	Dl_info info;

	if (dladdr((void *)pc, &info))
		path = info.dli_fname;
#endif
	if (!path)
		return false;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return !strncmp(base, "libboost_fiber", 14);
}

PRELOAD_API fcontext_t make_fcontext(void *sp, size_t size,
				     void (*fn)(transfer_t))
{
	make_fcontext_fn real =
		(make_fcontext_fn)PRELOAD_BOOST(RESOLVE_MAKE_FCONTEXT);
	uint64_t hi = (uint64_t)sp;
	bool dispatcher;
	uint32_t i;
	fcontext_t f;

	if (!preload_enter())
		return real(sp, size, fn);
	preload_stack_reused(hi - size, hi);
	dispatcher =
		preload_fiber_runtime((uint64_t)__builtin_return_address(0));
	/* A fiber of a plain function: which one (fiberfn.c). */
	i = preload_open(CTX_FCONTEXT, hi - size, hi, dispatcher,
			 (void (*)(void))fn,
			 dispatcher ? 0 : fiberfn_of(hi, (uint64_t)fn));
	if (i == CTXTABLE_NONE) {
		preload_leave();
		return real(sp, size, fn);
	}
	preload_ctx(i)->entry = (void (*)(void))fn;
	f = real(sp, size, preload_fc_entry);
	preload_saved(i, (uint64_t)f, false);
	preload_leave();
	return f;
}

PRELOAD_API transfer_t jump_fcontext(fcontext_t to, void *vp)
{
	jump_fcontext_fn real =
		(jump_fcontext_fn)PRELOAD_BOOST(RESOLVE_JUMP_FCONTEXT);
	uint64_t addr = (uint64_t)__builtin_return_address(0);
	struct preload_pending p;
	uint32_t from;
	transfer_t t;

	if (!preload_enter())
		return real(to, vp);
	p = preload_pending_take();
	from = preload_here(addr, (uint64_t)__builtin_frame_address(0));
	preload_switch(from, preload_find((uint64_t)to, false), addr);
	preload_from = from;
	preload_leave();
	PRELOAD_TEST_POINT(PRELOAD_POINT_SWITCH);
	t = real(to, vp);
	preload_arrived(t.fctx, &p);
	return t;
}

PRELOAD_API transfer_t ontop_fcontext(fcontext_t to, void *vp,
				      transfer_t (*fn)(transfer_t))
{
	ontop_fcontext_fn real =
		(ontop_fcontext_fn)PRELOAD_BOOST(RESOLVE_ONTOP_FCONTEXT);
	uint64_t addr = (uint64_t)__builtin_return_address(0);
	struct preload_pending p;
	transfer_t t;
	uint32_t from;
	bool exiting;

	if (!preload_enter())
		return real(to, vp, fn);
	p = preload_pending_take();
	from = preload_here(addr, (uint64_t)__builtin_frame_address(0));
	exiting = from != CTXTABLE_NONE && vp &&
		  vp == preload_ctx(from)->first_data;
	preload_switch(from, preload_find((uint64_t)to, false), addr);
	preload_from = from;
	preload_exiting = exiting;
	if (!exiting && fn)
		preload_ontop_fn = fn;
	preload_leave();
	PRELOAD_TEST_POINT(PRELOAD_POINT_SWITCH);
	t = exiting || !fn ? real(to, vp, fn) : real(to, vp, preload_ontop);
	preload_arrived(t.fctx, &p);
	return t;
}

/* ---- stacks given back ---- */

/*
 * A context dies when its stack is given back: freed (free() of the block
 * that starts where the stack does: Boost.Coroutine's and Boost.Context's
 * malloc'd stacks, GNU Pth's) or unmapped (munmap over its first or last
 * page: protected stacks, pdns's MTasker).  free() is on every program's
 * hot path: a block is looked up only when the stack-base filter says a
 * stack may start there (ctxtable_maybe_base, one load).  The context
 * running on this thread is never ended here (a runtime that frees the
 * stack it runs on jumps away at once: its next switch finds it gone).
 * The real functions are the next ones in the lookup order (an allocator
 * the program preloads or links is honoured), found at first use.
 */
typedef void (*free_fn)(void *);
typedef int (*munmap_fn)(void *, size_t);

static _Atomic(free_fn) real_free;
static _Atomic(munmap_fn) real_munmap;
/* Looking the next free up (dlsym may free on an error path). */
static atomic_flag preload_finding_free = ATOMIC_FLAG_INIT;

static void preload_stack_gone(uint32_t i)
{
	/* Not the context running here, nor the one whose exit is under
	 * way on this thread: Boost's fiber_exit frees the stack of the
	 * context it ends, and the exit closes that one (preload_arrived) --
	 * closed here first, its record could be another context's by
	 * then. */
	if (i != CTXTABLE_NONE && i != preload_cur &&
	    !(preload_exiting && i == preload_from))
		preload_close(i);
}

static free_fn preload_real_free(void)
{
	/* relaxed: any thread that finds it stores the same pointer. */
	free_fn f = atomic_load_explicit(&real_free, memory_order_relaxed);

	if (f)
		return f;
	/* acquire/release: pairs with the clear below; a free that comes
	 * in while dlsym runs (its own, nested) is left undone -- one
	 * block, once, rather than a loop. */
	if (atomic_flag_test_and_set_explicit(&preload_finding_free,
					      memory_order_acquire))
		return NULL;
	f = (free_fn)dlsym(RTLD_NEXT, "free");
	atomic_store_explicit(&real_free, f, memory_order_relaxed);
	atomic_flag_clear_explicit(&preload_finding_free, memory_order_release);
	return f;
}

PRELOAD_API void free(void *p)
{
	free_fn f = preload_real_free();

	if (p && preload_on &&
	    ctxtable_maybe_base(&preload_table, (uint64_t)p) &&
	    preload_enter()) {
		preload_stack_gone(
			ctxtable_by_base(&preload_table, (uint64_t)p));
		preload_leave();
	}
	if (f)
		f(p);
}

PRELOAD_API int munmap(void *addr, size_t len)
{
	/* relaxed: as for free. */
	munmap_fn f = atomic_load_explicit(&real_munmap, memory_order_relaxed);
	uint64_t lo = (uint64_t)addr, hi = lo + len;

	if (!f) {
		f = (munmap_fn)dlsym(RTLD_NEXT, "munmap");
		atomic_store_explicit(&real_munmap, f, memory_order_relaxed);
	}
	/* Before the real call: once it returns, another thread may map
	 * the range again for a new stack. */
	if (preload_on && len && hi > lo && !(lo & 4095) && preload_enter()) {
		/* A stack is unmapped whole, maybe with a guard page below:
		 * look at the first two pages and the last. */
		uint64_t at[3] = {lo, lo + 4096, hi - 1};

		for (int k = 0; k < 3; k++) {
			uint32_t i;
			struct ctx *c;

			if (at[k] >= hi)
				continue;
			i = ctxtable_by_stack(&preload_table, at[k]);
			if (i == CTXTABLE_NONE)
				continue;
			c = preload_ctx(i);
			/* relaxed: see ctxtable.c (checks of a found
			 * record); a root's stack is not known. */
			if (atomic_load_explicit(&c->kind,
						 memory_order_relaxed) !=
				    CTX_ROOT &&
			    atomic_load_explicit(&c->stack_lo,
						 memory_order_relaxed) < hi &&
			    atomic_load_explicit(&c->stack_hi,
						 memory_order_relaxed) > lo)
				preload_stack_gone(i);
		}
		preload_leave();
	}
	if (!f)
		return (int)syscall(SYS_munmap, addr, len);
	return f(addr, len);
}

/* ---- load ---- */

/* Whether the PT_NOTE segment ph of the object at base holds the probe's
 * note (probe.h, COROTOP_NOTE_PROBE): the probe linked statically. */
static bool preload_note_probe(ElfW(Addr) base, const ElfW(Phdr) * ph)
{
	const uint8_t *p = (const uint8_t *)(base + ph->p_vaddr);
	size_t size = ph->p_memsz, align = ph->p_align == 8 ? 8 : 4;

	for (size_t off = 0; size - off >= sizeof(ElfW(Nhdr));) {
		ElfW(Nhdr) n;
		size_t name, desc;

		memcpy(&n, p + off, sizeof(n));
		name = (n.n_namesz + align - 1) & ~(align - 1);
		desc = (n.n_descsz + align - 1) & ~(align - 1);
		if (name > size || desc > size ||
		    size - off - sizeof(n) < name + desc)
			return false;
		if (n.n_type == COROTOP_NOTE_PROBE &&
		    n.n_namesz == sizeof(COROTOP_NOTE_NAME) &&
		    !memcmp(p + off + sizeof(n), COROTOP_NOTE_NAME,
			    sizeof(COROTOP_NOTE_NAME)))
			return true;
		off += sizeof(n) + name + desc;
	}
	return false;
}

/* dl_iterate_phdr visits the program first: whether its DT_NEEDED names
 * the probe library, or it carries the probe itself (its note). */
static int preload_needs_probe(struct dl_phdr_info *info, size_t size,
			       void *arg)
{
	const ElfW(Dyn) *dyn = NULL;
	const char *strtab = NULL;
	size_t strsz = 0;

	(void)size;
	for (ElfW(Half) k = 0; k < info->dlpi_phnum; k++) {
		if (info->dlpi_phdr[k].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr +
						  info->dlpi_phdr[k].p_vaddr);
		if (info->dlpi_phdr[k].p_type == PT_NOTE &&
		    preload_note_probe(info->dlpi_addr, &info->dlpi_phdr[k]))
			*(bool *)arg = true;
	}
	for (const ElfW(Dyn) *d = dyn; d && d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_STRTAB)
			/* ld.so relocates it in place where .dynamic is
			 * writable; elsewhere it is still the file's. */
			strtab = (const char *)(d->d_un.d_ptr < info->dlpi_addr
							? info->dlpi_addr +
								  d->d_un.d_ptr
							: d->d_un.d_ptr);
		else if (d->d_tag == DT_STRSZ)
			strsz = d->d_un.d_val;
	}
	for (const ElfW(Dyn) *d = dyn; d && strtab && d->d_tag != DT_NULL;
	     d++) {
		static const char probe[] = "libcorotop-probe.so";
		const char *name = strtab + d->d_un.d_val;

		if (d->d_tag == DT_NEEDED && d->d_un.d_val < strsz &&
		    strnlen(name, strsz - d->d_un.d_val) >= sizeof(probe) - 1 &&
		    !memcmp(name, probe, sizeof(probe) - 1))
			*(bool *)arg = true;
	}
	return 1; /* the program only */
}

__attribute__((constructor)) static void preload_init(void)
{
	const char *env = secure_getenv("COROTOP_CONTEXTS");
	unsigned long cap = env ? strtoul(env, NULL, 10) : 0;

	resolve_init((const void *)preload_init);
	atomic_store_explicit(&real_makecontext,
			      (makecontext_fn)resolve_libc("makecontext"),
			      memory_order_relaxed);
	atomic_store_explicit(&real_swapcontext,
			      (swapcontext_fn)resolve_libc("swapcontext"),
			      memory_order_relaxed);
	atomic_store_explicit(&real_setcontext,
			      (setcontext_fn)resolve_libc("setcontext"),
			      memory_order_relaxed);
	(void)preload_real_free();
	/* COROTOP_LONGJMP=0: jumps are not taken for switches (a runtime
	 * whose jumps between stacks are not switches). */
	env = secure_getenv("COROTOP_LONGJMP");
	preload_jumps = jmpbuf_init() && !(env && !strcmp(env, "0"));

	/* ASan must come first in the library list and keeps its own view
	 * of stacks: stepping aside is the honest choice. */
	if (dlsym(RTLD_DEFAULT, "__asan_init")) {
		fprintf(stderr, "corotop: preload: AddressSanitizer is loaded; "
				"context switches are not traced\n");
		return;
	}
	/* A program that links the probe, shared or static, traces itself
	 * (corotop does not preload it; this is a child that inherited
	 * LD_PRELOAD): tracing its switches too would show each of its
	 * coroutines twice. */
	bool self = false;

	dl_iterate_phdr(preload_needs_probe, &self);
	if (self)
		return;
	if (!cap || cap > CTXTABLE_MAX)
		cap = PRELOAD_DEFAULT_CONTEXTS;
	if (pthread_key_create(&preload_root_key, preload_root_gone) ||
	    !ctxtable_init(&preload_table, (uint32_t)cap)) {
		fprintf(stderr,
			"corotop: preload: out of memory for %lu "
			"contexts; context switches are not traced\n",
			cap);
		return;
	}
	preload_on = true;
}
