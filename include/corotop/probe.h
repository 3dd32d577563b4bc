/*
 * corotop probe: the library a coroutine scheduler links so that corotop can
 * see its coroutines.
 *
 * A scheduler embeds one struct corotop_coro in each coroutine, opens it when
 * the coroutine is born, records every resume and suspend, and closes it when
 * the coroutine dies:
 *
 *     struct corotop_coro c;
 *     corotop_coro_open(&c, (uint64_t)(uintptr_t)frame);
 *     corotop_coro_resume(&c, 0);                  // about to run
 *     corotop_coro_suspend(&c, (uint64_t)where);   // parked at `where`
 *     corotop_coro_close(&c);                      // dead
 *
 * corotop_coro_open_named(&c, id, "worker", COROTOP_NAME_STATIC) opens it
 * with a name (below).
 *
 * The probe finds the shared region through the environment, exactly as the
 * upstream cTP SDKs do (CTP_SHM_PATH, CTP_SOCK_PATH, CTP_MAX_STATIONS).  When
 * any of them is missing or the region fails validation, the probe stays
 * untraced, and a transition only keeps itself in the coroutine's struct
 * (a coarse clock read and a few plain stores: its time, thread, address,
 * state and, at a suspend, where its stack can be walked from) -- until an
 * agent attaches to the probe's own ppt buffer (corotop -p PID): the next
 * transition then maps the region the agent names and tracing begins.
 * Every coroutine open at that moment is published at once with its true
 * birth, its last transition and its parked stack's frame record (the
 * census, src/probe/census.c); the others follow with their transitions.
 * When the agent detaches, tracing stops again (the region is replaced by
 * private zero pages, never unmapped under a recorder).
 *
 * Guarantees to the program that links it:
 *   - no call ever blocks, takes a lock or allocates -- except the one-time
 *     slow path of a thread while stack captures are on (below),
 *     corotop_sampler_start/stop, which serialize on a mutex, and the one
 *     transition after corotop -p attaches or detaches (it maps or retires
 *     the region: open, mmap, malloc, and starting or stopping the
 *     sampler, which may wait for its timers, and starts the census
 *     thread); COROTOP_LATE_ATTACH=0 in the environment turns late attach
 *     off (the probe's ppt buffer then stays unpublished);
 *   - with late attach on, a thread of the probe's sleeps in accept on the
 *     doorbell (corotop/ppt.h), so that corotop -p reaches a program in
 *     which nothing transitions; COROTOP_DOORBELL=0 leaves it out;
 *   - open and close take and give back a slot of the probe's registry of
 *     live coroutines: a compare-and-swap on a free list each, no lock;
 *   - no call ever raises a signal (the socket is written with MSG_NOSIGNAL)
 *     other than the sampler's own SIGPROF timers, when asked for;
 *   - if the engine dies, the program keeps running untouched.
 *
 * Not thread-safe per coroutine: one coroutine is recorded by one thread at a
 * time, which is what any scheduler guarantees anyway.  Different coroutines
 * may be recorded from any threads concurrently.
 *
 * Stacks (when the engine attached a CallTrace region; docs/WIRE.md):
 *   - the parked stack: at each suspend the probe walks the frame pointers
 *     of the calling thread and stores that stack with weight 0; its trace
 *     id goes with the suspend event.  Record the suspend on the
 *     coroutine's own stack (before switching away from it) so that the
 *     stack is the coroutine's; corotop_coro_set_stack lets the walk cover
 *     a coroutine stack in full.  COROTOP_PARKED_STACKS=1 turns it on
 *     (default off, see docs/PERFORMANCE.md), =0 off;
 *   - the sampler (corotop_sampler_start, or COROTOP_SAMPLE_HZ in the
 *     environment): SIGPROF from per-thread CPU-time timers, one stack per
 *     sample, tagged with the coroutine that was running.
 * Both need code built with -fno-omit-frame-pointer to see past a frame.
 * The first transition a thread records while either is on costs a slow
 * path, once per thread: pthread_getattr_np (which allocates) for the
 * thread's stack bounds, and with the sampler a timer_create.
 */
#ifndef COROTOP_PROBE_H
#define COROTOP_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define COROTOP_API __attribute__((visibility("default")))
#define COROTOP_LIKELY(x) __builtin_expect(!!(x), 1)
#define COROTOP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define COROTOP_API
#define COROTOP_LIKELY(x) (x)
#define COROTOP_UNLIKELY(x) (x)
#endif

struct ctp_station;

/*
 * Every object that carries the probe -- the shared library, and a program
 * that links it statically -- says so in an ELF note (PT_NOTE is mapped, a
 * stripped program keeps it): owner "corotop", type COROTOP_NOTE_PROBE, a
 * 4-byte version.  corotop and its preload read it to leave a program that
 * traces itself alone (its switches would otherwise be traced twice).
 */
#define COROTOP_NOTE_NAME "corotop"
#define COROTOP_NOTE_PROBE 1u

/*
 * Per-coroutine probe state, embedded by the scheduler.  Treat as opaque.
 * It must stay at its address from corotop_coro_open to corotop_coro_close
 * (the probe's registry of live coroutines points at it), and be opened
 * once per close.
 */
struct corotop_coro {
	struct ctp_station *station; /* NULL: no station (untraced) */
	uint64_t n;		     /* next event number on the station */
	uint64_t probe_id;
	uint64_t birth_ts; /* CLOCK_MONOTONIC ns at corotop_coro_open */
	uint32_t index;	   /* station index, valid when station != NULL */
	uint32_t attach;   /* probe attachment the station belongs to */
	/* Stack declared by corotop_coro_set_stack; 0, 0 = unknown. */
	uint64_t stack_lo, stack_hi;
	/* Deep rings (corotop/ctp.h): the next event number at which the
	 * probe checks how far the engine got, the last event number known
	 * published before chk_ts, and when it last woke the engine. */
	uint64_t lap_check, chk_n, chk_ts, wake_ns;
	/* The last transition, kept traced or not, so that an engine that
	 * attaches later sees the coroutine as it is (src/probe/census.c):
	 * when (CLOCK_MONOTONIC ns; CLOCK_MONOTONIC_COARSE while untraced;
	 * 0 = none yet), on which thread, at which address, in which state. */
	uint64_t last_ts, last_tid, last_addr;
	/* At the last suspend: the lowest stack address a walk may read, the
	 * caller's frame record and the return address into the caller --
	 * what lets the engine walk the parked stack later. */
	uint64_t park_sp, park_fp, park_pc;
	uint32_t reg;	     /* registry slot + 1; 0 = not registered */
	uint8_t last_active; /* 1 running, 0 suspended (last_ts != 0) */
	/* Settings, bit 0: every suspend of c is a long wait
	 * (corotop_coro_set_long_waits); bit 1: c is an execution context of
	 * its own (corotop_coro_set_context, or a declared stack; its events
	 * carry CTP_EPF_CONTEXT).  Long waits: the next suspend is one (set
	 * by corotop_coro_suspend_long, cleared by the probe at that
	 * transition); the last suspend was one (what its event said, kept
	 * for the census). */
	uint8_t settings, long_next, last_long;
};

/* Counters of this process's probe; all run freely from 0. */
struct corotop_probe_stats {
	uint64_t untraced; /* transitions that had no station */
	uint64_t opened;   /* coroutines that got a station */
	uint64_t recycled; /* ... of which reused a recycled station */
	uint64_t wakes;	   /* engine wakeups sent */
};

/* Non-zero while the probe is attached to a valid region. */
extern COROTOP_API int corotop_probe_live_;
/* The SysV id an agent (corotop -p PID) published for the probe's own ppt
 * buffer, "corotop", or 0: how a program started without corotop becomes
 * traced at its next transition (corotop/ppt.h, "rendezvous"). */
extern COROTOP_API int _ppt_hmem_corotop;

/*
 * Attach to the region named by the environment.  Runs automatically when the
 * library loads; calling it again is a no-op.  Returns true when tracing.
 */
COROTOP_API bool corotop_probe_init(void);
/* Detach: later records are untraced.  Not safe while other threads record. */
COROTOP_API void corotop_probe_shutdown(void);
/* Why the probe is untraced, for people ("" when tracing). */
COROTOP_API const char *corotop_probe_status(void);
COROTOP_API void corotop_probe_stats(struct corotop_probe_stats *out);

COROTOP_API void corotop_coro_open(struct corotop_coro *c, uint64_t probe_id);

/*
 * Names.  A coroutine may carry a name for people (corotop's NAME column,
 * its detail view, JSON and Heph recordings): corotop_coro_open_named is
 * corotop_coro_open with one.  name NULL or "" is no name.  flags:
 *   COROTOP_NAME_COPY    the first COROTOP_NAME_MAX - 1 bytes are copied
 *                        at open (cut at a UTF-8 character boundary); the
 *                        caller may reuse or free the string at once;
 *   COROTOP_NAME_STATIC  the pointer is kept, not the text: a string
 *                        literal, or any string that stays valid and
 *                        unchanged until corotop_coro_close returns (its
 *                        first COROTOP_NAME_MAX - 1 bytes are read
 *                        whenever the coroutine takes a station);
 *   COROTOP_CORO_HUB     (or'ed with either) the coroutine is a hub: it
 *                        takes part in most of the program's switches (an
 *                        event loop's root, a scheduler's own context), so
 *                        its deep ring is longer (CTP_STX_HUB, docs/WIRE.md
 *                        "Deep rings") and it loses no more than the
 *                        others when corotop is late;
 *   COROTOP_CORO_DISPATCHER  (or'ed in) it is not a coroutine of the
 *                        program's but a scheduler's own context, the one
 *                        that picks what runs next (Boost.Fiber's
 *                        dispatcher): JSON's "kind" says "dispatcher",
 *                        and the lints meant for coroutines (a lost
 *                        wakeup, a stall, a storm) do not judge it;
 *   COROTOP_CORO_ROOT    (or'ed in) it is a thread's own stack, its main
 *                        context: "kind" "root", not judged either.
 * The name lives in the probe's registry of live coroutines, not in
 * struct corotop_coro (whose size is ABI): a coroutine opened while the
 * registry is full (more than 2^20 live) is unnamed.  No allocation, no
 * lock: a copy costs at most COROTOP_NAME_MAX bytes of stores.  corotop
 * shows printable ASCII; other bytes appear as '?'.
 */
#define COROTOP_NAME_MAX 48 /* bytes kept, the terminating NUL included */
#define COROTOP_NAME_COPY 0u
#define COROTOP_NAME_STATIC 1u
#define COROTOP_CORO_HUB 2u
#define COROTOP_CORO_DISPATCHER 4u
#define COROTOP_CORO_ROOT 8u
COROTOP_API void corotop_coro_open_named(struct corotop_coro *c,
					 uint64_t probe_id, const char *name,
					 unsigned flags);
/*
 * corotop_coro_open_named, and the function c's context was made to run
 * (the func given to makecontext, the fn given to make_fcontext; NULL:
 * unknown): corotop names an unnamed coroutine after it from its first
 * snapshot -- the function's own name, or, for a runtime's entry template
 * (Boost's fiber_entry<...worker_context<F>...>), the program's F it was
 * instantiated for -- until a walk of its parked stack finds the
 * program's first frame (docs/TRACING.md).  Only its address is kept and
 * sent (ctp_station_ext.entry); it is never called nor read.
 */
COROTOP_API void corotop_coro_open_entry(struct corotop_coro *c,
					 uint64_t probe_id, const char *name,
					 unsigned flags, void (*entry)(void));
/*
 * corotop_coro_open_entry, and the program's function that entry was made
 * for, when the entry is a runtime's template whose name gives only the
 * function's type (Boost.Fiber's worker_context<F> with F a function:
 * `fiber f(fn, args...)`; NULL: none).  corotop names the coroutine after
 * it when the entry's name says F is a function type and made_for is a
 * function's first instruction; otherwise as corotop_coro_open_entry
 * (docs/TRACING.md, "Names").  Only the address is kept and sent
 * (ctp_station_ext.made_for); never called nor read.
 */
COROTOP_API void corotop_coro_open_made_for(struct corotop_coro *c,
					    uint64_t probe_id, const char *name,
					    unsigned flags, void (*entry)(void),
					    void (*made_for)(void));
COROTOP_API void corotop_coro_close(struct corotop_coro *c);
/* Out-of-line record; use the inline wrappers below.  _record_ writes the
 * transition (traced, or an agent knocking); _note_ only keeps it in c
 * (untraced: a coarse clock and a few stores, no syscall, no fence). */
COROTOP_API void corotop_coro_record_(struct corotop_coro *c, int is_active,
				      uint64_t addr);
COROTOP_API void corotop_coro_note_(struct corotop_coro *c, int is_active,
				    uint64_t addr);
/* A switch, on the thread that makes it, on from's stack before the real
 * switch: from suspends and to resumes, both at addr (either may be NULL).
 * The same as recording the two transitions (traced or not, as the
 * wrapper below decides for each), but the two share one clock read:
 * both keep, and both events carry, the same time.  For an interposer
 * (libcorotop-preload); a scheduler that links the probe records its
 * coroutines with corotop_coro_resume/_suspend. */
COROTOP_API void corotop_coro_switch_(struct corotop_coro *from,
				      struct corotop_coro *to, uint64_t addr);
/* A context the interposer (libcorotop-preload) could not track, its
 * table full: counted for this process, and shown by corotop
 * (contexts.untracked, docs/WIRE.md "Processes"). */
COROTOP_API void corotop_probe_context_untracked_(void);
/* A switch the interposer found made behind its back (a thread on a
 * stack that is not its current context's): counted for this process,
 * and shown by corotop (contexts.switches_unseen, docs/WIRE.md
 * "Processes"). */
COROTOP_API void corotop_probe_switch_unseen_(void);

/*
 * CallTrace: store one call stack (frames[0] = innermost, as the caller
 * chooses; at most 128 are kept) and add `weight` to that stack's counter.
 * Returns the stack's trace id: (instance epoch << 32) | slot, stable for as
 * long as the engine keeps the stack alive; COROTOP_CALLTRACE_DROPPED when
 * the stack could not be stored (table full, no protection slot, a rotation
 * raced twice), in which case the put and its weight are counted as dropped;
 * 0 when no CallTrace region is attached (the engine announces one in the
 * cTP header; see docs/WIRE.md).
 *
 * Async-signal-safe: callable from a SIGPROF handler, including one that
 * interrupted another put on the same thread.  No allocation, no lock,
 * bounded work, never blocks, never raises a signal.
 */
#define COROTOP_CALLTRACE_DROPPED 1ull
COROTOP_API uint64_t corotop_calltrace_put(const uint64_t *frames, unsigned n,
					   uint64_t weight);

/*
 * Declare the stack coroutine c runs on: [lo, hi), which must stay mapped
 * and readable for as long as c can run.  The stack walks (parked stacks,
 * sampler) then read frames anywhere in it; without it they stay inside
 * the 4 KiB page of the stack pointer on a coroutine stack.  Call after
 * corotop_coro_open, which forgets an earlier declaration.  lo >= hi
 * forgets it too.  Stackless coroutines (C++20) run on their thread's
 * stack, which the probe finds by itself: nothing to declare.
 */
/*
 * c is an execution context of its own: a stack it runs on, entered and
 * left by context switches (a thread's own stack included), so nothing else
 * runs on its thread while it does.  Its events say so, and corotop then
 * shows it suspended as soon as another such coroutine resumes on its
 * thread, even when its own suspend was lost.  corotop_coro_set_stack
 * implies it.  Call after corotop_coro_open, which forgets it.
 */
COROTOP_API void corotop_coro_set_context(struct corotop_coro *c);

COROTOP_API void corotop_coro_set_stack(struct corotop_coro *c, const void *lo,
					const void *hi);

/*
 * Where the switch that just suspended c saved its registers: `at`, an
 * area whose layout `kind` names -- COROTOP_SAVED_FCONTEXT: Boost.Context's
 * fcontext_t, the stack pointer jump_fcontext or ontop_fcontext left after
 * pushing the registers it keeps (docs/TRACING.md).  For an interposer
 * (libcorotop-preload), called after the switch on the side it resumed,
 * before the fcontext_t is handed to anyone: corotop then walks c's parked
 * stack from the registers the switch saved -- checked against the stack
 * and the code first -- instead of the ones the probe took at the suspend.
 * Traced only (it goes on c's station; untraced it does nothing), and only
 * while c is suspended.  No lock, no syscall: three stores.
 */
#define COROTOP_SAVED_FCONTEXT 1u
COROTOP_API void corotop_coro_set_saved(struct corotop_coro *c, unsigned kind,
					uint64_t at);

/*
 * Sampler: a CPU profile per coroutine.  Every thread that records a
 * transition while the sampler runs gets a timer on its own CPU clock
 * (timer_create(CLOCK_THREAD_CPUTIME_ID), SIGEV_THREAD_ID) that sends it
 * SIGPROF `hz` times per second of CPU it uses (the calling thread gets one
 * at once).  The handler walks the interrupted stack (frame pointers,
 * bounded, every read checked) and stores it with weight 1, its outermost
 * frame a tag naming the coroutine that ran (CT_TAG_CORO) or, when none
 * did, the thread (CT_TAG_THREAD) -- corotop/calltrace.h.  The kernel
 * delivers at most one signal per scheduler tick (CONFIG_HZ) per thread;
 * expirations merged into one signal count as overruns, not weight.
 *
 * Returns 0, or a negative errno:
 *   -EINVAL   hz outside 1..10000
 *   -ENODEV   no CallTrace region attached: nowhere to store samples
 *   -EALREADY the sampler runs already
 *   -EBUSY    SIGPROF already has a handler (a profiler, setitimer user):
 *             the probe never replaces it
 *   -ENOTSUP  not x86_64 or aarch64
 *   other     timer_create or sigaction failed for the calling thread
 * The probe installs its SIGPROF handler (SA_RESTART | SA_SIGINFO) on start
 * and puts the old disposition back on stop.  It never raises a signal
 * other than these timers'.  Start and stop are not meant to race each
 * other (they serialize on a mutex); both are cheap enough to toggle.
 * COROTOP_SAMPLE_HZ=N in the environment starts it when the probe attaches
 * (corotop --sample N sets it); an invalid value is ignored.
 */
COROTOP_API int corotop_sampler_start(unsigned hz);
/* Delete every timer (also those of threads blocked right now) and restore
 * SIGPROF.  A no-op when not running. */
COROTOP_API void corotop_sampler_stop(void);

/* Sampler counters, all running freely from 0 (threads, hz: current). */
struct corotop_sampler_stats {
	uint64_t signals;  /* SIGPROF handled while the sampler ran */
	uint64_t stored;   /* samples stored (put returned an id) */
	uint64_t dropped;  /* samples the CallTrace region dropped */
	uint64_t overruns; /* expirations merged into earlier signals */
	uint64_t timers;   /* timers created */
	uint64_t no_timer; /* threads left unsampled (no slot, or failure) */
	uint32_t threads;  /* timers alive now */
	uint32_t hz;	   /* 0 when stopped */
	/* CLOCK_MONOTONIC ns spent in the handler on samples (walk and put;
	 * not the kernel's delivery of the signal): what one sample costs. */
	uint64_t handler_ns;
};
COROTOP_API void corotop_sampler_stats(struct corotop_sampler_stats *out);

/* Record a transition: is_active 1 = now running, 0 = now suspended.
 * Untraced, and no agent knocking: one predictable branch and a call that
 * keeps the transition in c (corotop_coro_note_). */
static inline void corotop_coro_record(struct corotop_coro *c, int is_active,
				       uint64_t addr)
{
	/* relaxed: hints only (a plain load on x86-64 and AArch64).  The
	 * probe publishes live with release, an agent writes _hmem from
	 * another process; corotop_coro_record_ re-reads both sides with the
	 * ordering they need (its acquire load of the attachment, and the
	 * late-attach poll), and corotop_coro_note_ looks again after its
	 * stores.  Atomic, not plain: these words change under a running
	 * loop, and a plain load may legally be hoisted out of it. */
	if (COROTOP_UNLIKELY(
		    !(__atomic_load_n(&corotop_probe_live_, __ATOMIC_RELAXED) |
		      __atomic_load_n(&_ppt_hmem_corotop, __ATOMIC_RELAXED)))) {
		corotop_coro_note_(c, is_active, addr);
		return;
	}
	corotop_coro_record_(c, is_active, addr);
}

static inline void corotop_coro_resume(struct corotop_coro *c, uint64_t addr)
{
	corotop_coro_record(c, 1, addr);
}

static inline void corotop_coro_suspend(struct corotop_coro *c, uint64_t addr)
{
	corotop_coro_record(c, 0, addr);
}

/*
 * Long waits.  corotop's lost-wakeup lint (WAKE?) flags a coroutine
 * suspended longer than its threshold, which is also what an idle
 * keep-alive connection or a worker waiting for jobs does by design.  A
 * suspend the program expects to last says so, and corotop does not flag
 * it (stall, storm and dead-station are unchanged):
 *   corotop_coro_suspend_long   this suspend only: the mark ends at the
 *                               coroutine's next transition;
 *   corotop_coro_set_long_waits every suspend of c from its next one on,
 *                               until turned off (or c is closed; call it
 *                               after corotop_coro_open, which forgets it).
 * The mark travels with the suspend event (CTP_EPF_LONG_WAIT, corotop/ctp.h):
 * a byte of the slot's payload, no extra store elsewhere, no syscall.  Like
 * every record, it is made by the thread that records c.
 */
COROTOP_API void corotop_coro_set_long_waits(struct corotop_coro *c, bool on);

static inline void corotop_coro_suspend_long(struct corotop_coro *c,
					     uint64_t addr)
{
	c->long_next = 1;
	corotop_coro_record(c, 0, addr);
}

/*
 * The kind of `addr`.  corotop_coro_resume and _suspend take a return
 * address (__builtin_return_address(0) in a yield function): corotop names
 * it at its call site, addr - 1, as a debugger does, so WHERE shows the
 * line of the call, not the line after it.  An exact code address (a
 * function's entry, a resume label) goes through the _pc forms, which
 * record pc + 1 so that it is named at pc itself.  0 stays 0 (none).
 */
static inline void corotop_coro_resume_pc(struct corotop_coro *c, uint64_t pc)
{
	corotop_coro_record(c, 1, pc ? pc + 1 : 0);
}

static inline void corotop_coro_suspend_pc(struct corotop_coro *c, uint64_t pc)
{
	corotop_coro_record(c, 0, pc ? pc + 1 : 0);
}

static inline void corotop_coro_suspend_long_pc(struct corotop_coro *c,
						uint64_t pc)
{
	corotop_coro_suspend_long(c, pc ? pc + 1 : 0);
}

#ifdef __cplusplus
}
#endif

#endif
