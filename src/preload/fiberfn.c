/*
 * fiberfn: the program's function a Boost.Fiber or Boost.Context fiber
 * was made for, when the fiber's entry template tells only its type.
 *
 * corotop names a fiber after the function its context was made to run
 * (ctp_station_ext.entry).  For Boost.Fiber that is
 * fiber_entry<fiber_record<..., worker_context<F>...>>, and F names the
 * program's function when F is a lambda or a function object
 * (main::{lambda()#1}, counter).  A fiber of a plain function --
 * `fiber f(fn, "abc", 5)`, the shape of Boost's examples/simple.cpp -- has
 * F = void (&)(std::string const&, int): a type, no name.  The function
 * itself is in the worker_context, as its member fn_, and the
 * worker_context is on the fiber's own stack, where the preload can find
 * it as make_fcontext is called:
 *
 *   make_worker_context places the worker_context_t at the top of the
 *   stack it allocated, 256-aligned; the fiber it constructs places its
 *   fiber_record 256-aligned under it (create_fiber2), so, the record
 *   being smaller than 256 bytes, 256 bytes under it; and make_fcontext
 *   is called with sp 64 bytes under the record.  The record holds the
 *   std::bind of worker_context::run_ to `this`: the worker's address.
 *   fn_ is the worker's first member, after the base boost::fibers::context
 *   (232 bytes in Boost 1.74's headers on x86_64).
 *
 * So at make_fcontext(sp, ...): the record is at sp + 64 and 256-aligned,
 * one of its first words is sp + 64 + 256, its stack_context (its first
 * two words: size, top) spans the record and the worker's fn_, and fn_ is
 * 232 bytes past the worker.  The preload sees every make_fcontext,
 * Boost.Coroutine2's and a program's own too, where those bytes may be
 * anything or unmapped: the first context of each entry function is read
 * in one process_vm_readv on the process's own pid, which returns EFAULT
 * where a plain read would fault, and checked.  The verdict is kept per
 * entry (fiber_entry<Record> is one template instance per record type,
 * and it lays out every context it makes alike): the next contexts of a
 * worker's entry are read directly -- the record is where the first one's
 * was, and its stack_context is checked again before fn_ is read -- and
 * those of any other entry are not read at all.
 *
 * Boost.Context's own fiber of a plain function
 * (`fiber f{fn}`: fiber_entry<fiber_record<fiber, Alloc, fiber (*)(fiber&&)>>,
 * Boost's jump_void.cpp) has its record at the top of the allocation it
 * made (create_fiber1), 256-aligned, also 64 bytes above sp: its
 * stack_context's top lies just past the record, and fn_ follows the
 * stack_context and the one-word allocator.  The record's first 32 bytes
 * are read in a piece of their own (process_vm_readv does not split an
 * iovec, and the record may end its mapping), and only those directly
 * after the verdict.  What is read is a candidate, sent to corotop as the
 * station's made_for (docs/WIRE.md), which corotop uses only when the entry's F
 * is a function type and made_for is the very start of a function of the
 * program (docs/TRACING.md, "Names").
 *
 * The layout is the Boost version's.  worker_context is a template in the
 * program, laid out by the headers it was built with -- those of the
 * libboost_fiber it links, whose file name gives the version.  Only a
 * version listed here is read.  Cost, at a fiber's creation, never at a
 * switch: at a make_fcontext whose sp fits (every Boost.Fiber fiber's, a
 * sixteenth of others'), one dlopen(RTLD_NOLOAD) until a listed
 * libboost_fiber is found; then per entry function, getpid and one
 * process_vm_readv once (2.5 us on the reference machine, where a syscall
 * is slow), and a look-up in a table of 64 and a 136-byte copy after
 * (bench/fiber_spawn, PERFORMANCE.md).
 */
#define _GNU_SOURCE
#include "preload/fiberfn.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* The bytes of the record read: enough for any stack allocator's record
 * (the stack_context, the allocator, then the bind); the first
 * FIBERFN_HEAD of them are in every record (the stack_context, a one-word
 * allocator, a function pointer). */
#define FIBERFN_RECORD_READ 128u
#define FIBERFN_HEAD 32u
/* Where every listed version's record is, past make_fcontext's sp. */
#define FIBERFN_RECORD_AT 64u

static const struct fiberfn_layout fiberfn_table[] = {
#if defined(__x86_64__)
	/* Debian's 1.74: sizeof(boost::fibers::context) == 232 in its
	 * headers; e2e-preload-fiber names a Boost.Fiber fiber of a plain
	 * function through it, and a Boost.Context one (step). */
	{
		.lib = "libboost_context.so.1.74.0",
		.record_at = FIBERFN_RECORD_AT,
		.record_len = FIBERFN_RECORD_READ,
		.sctx_size_at = 0,
		.sctx_sp_at = 8,
		.worker_at = 256,
		.fn_at = 232,
		.record_fn_at = 24,
		.record_top_max = 256 + FIBERFN_RECORD_READ,
	},
#endif
	/* a sentinel, so that the table is never empty */
	{.lib = NULL},
};

/* Entry functions (make_fcontext's fn) seen, each with its verdict:
 * entry << 2 | enum fiberfn_kind (the same template instance lays out
 * every context it makes the same way, so a worker's or a record's bytes
 * can then be read directly; FIBERFN_NONE: never read again); 0 = a free
 * slot.  Filled once each, never emptied; full, the others are read the
 * safe way each time. */
#define FIBERFN_ENTRIES 64u
static _Atomic uint64_t fiberfn_entries[FIBERFN_ENTRIES];

/* The layout found, once one is: relaxed, every thread that looks finds
 * the same one (a library is never replaced while it is loaded). */
static _Atomic(const struct fiberfn_layout *) fiberfn_found;

const struct fiberfn_layout *fiberfn_layout(void)
{
	const struct fiberfn_layout *l =
		atomic_load_explicit(&fiberfn_found, memory_order_relaxed);

	if (l)
		return l;
	for (size_t k = 0; fiberfn_table[k].lib; k++) {
		void *h = dlopen(fiberfn_table[k].lib, RTLD_LAZY | RTLD_NOLOAD);

		if (!h)
			continue;
		dlclose(h); /* NOLOAD took a reference; give it back */
		l = &fiberfn_table[k];
		atomic_store_explicit(&fiberfn_found, l, memory_order_relaxed);
		return l;
	}
	return NULL;
}

/* Whether the record's words (len bytes at rec) are a Boost.Fiber
 * worker's: one of them is the worker's address (the bind's `this`), and
 * its stack_context says the allocation holds the worker's fn_. */
static bool fiberfn_is_worker(const struct fiberfn_layout *l,
			      const uint64_t *record, size_t len, uint64_t rec)
{
	uint64_t worker = rec + l->worker_at;
	uint64_t size = record[l->sctx_size_at / 8];
	uint64_t top = record[l->sctx_sp_at / 8];
	bool found = false;

	for (size_t k = 0; k < len / 8 && !found; k++)
		found = record[k] == worker;
	return found && top >= worker + l->fn_at + 8 && size <= top &&
	       top - size <= rec;
}

/* Whether the record's first FIBERFN_HEAD bytes are a Boost.Context
 * fiber's own (create_fiber1: the record at the top of the allocation its
 * stack_context spans, under the context's stack), whose fn_ follows the
 * stack_context and a one-word allocator. */
static bool fiberfn_is_record(const struct fiberfn_layout *l,
			      const uint64_t *head, uint64_t rec, uint64_t sp)
{
	uint64_t size = head[l->sctx_size_at / 8];
	uint64_t top = head[l->sctx_sp_at / 8];

	return top >= rec + l->record_fn_at + 8 &&
	       top <= rec + l->record_top_max && size <= top &&
	       top - size <= sp;
}

/* The bytes past sp that fiberfn reads, when they do not wrap. */
static bool fiberfn_fits(const struct fiberfn_layout *l, uint64_t sp)
{
	return l && l->record_len <= FIBERFN_RECORD_READ &&
	       l->record_len >= FIBERFN_HEAD &&
	       l->sctx_size_at + 8 <= FIBERFN_HEAD &&
	       l->sctx_sp_at + 8 <= FIBERFN_HEAD &&
	       l->record_fn_at + 8 <= FIBERFN_HEAD &&
	       sp <= UINT64_MAX - l->record_at - l->worker_at - l->fn_at - 8 &&
	       !((sp + l->record_at) & 0xff);
}

uint64_t fiberfn_peek(const struct fiberfn_layout *l, uint64_t sp,
		      enum fiberfn_kind *kind)
{
	uint64_t record[FIBERFN_RECORD_READ / 8], fn = 0, rec;
	struct iovec local[3], remote[3];
	ssize_t n;

	*kind = FIBERFN_NONE;
	if (!fiberfn_fits(l, sp))
		return 0;
	rec = sp + l->record_at;
	/* Three pieces: a read stops at the first that is not mapped, and
	 * a Boost.Context record may end at its mapping's end. */
	local[0] = (struct iovec){record, FIBERFN_HEAD};
	local[1] = (struct iovec){(uint8_t *)record + FIBERFN_HEAD,
				  l->record_len - FIBERFN_HEAD};
	local[2] = (struct iovec){&fn, sizeof(fn)};
	remote[0] = (struct iovec){(void *)(uintptr_t)rec, FIBERFN_HEAD};
	remote[1] = (struct iovec){(void *)(uintptr_t)(rec + FIBERFN_HEAD),
				   l->record_len - FIBERFN_HEAD};
	remote[2] = (struct iovec){
		(void *)(uintptr_t)(rec + l->worker_at + l->fn_at), sizeof(fn)};
	n = process_vm_readv(getpid(), local, 3, remote, 3, 0);
	if (n == (ssize_t)(l->record_len + sizeof(fn)) &&
	    fiberfn_is_worker(l, record, l->record_len, rec)) {
		*kind = FIBERFN_WORKER;
		return fn;
	}
	if (n >= (ssize_t)FIBERFN_HEAD &&
	    fiberfn_is_record(l, record, rec, sp)) {
		*kind = FIBERFN_RECORD;
		return record[l->record_fn_at / 8];
	}
	return 0;
}

uint64_t fiberfn_read(const struct fiberfn_layout *l, uint64_t sp,
		      enum fiberfn_kind kind)
{
	uint64_t record[FIBERFN_RECORD_READ / 8], fn, rec;

	if (!fiberfn_fits(l, sp))
		return 0;
	rec = sp + l->record_at;
	switch (kind) {
	case FIBERFN_WORKER:
		/* The worker lies 256 bytes past the record: all of it is
		 * the allocation's. */
		memcpy(record, (const void *)(uintptr_t)rec, l->record_len);
		if (!fiberfn_is_worker(l, record, l->record_len, rec))
			return 0;
		memcpy(&fn,
		       (const void *)(uintptr_t)(rec + l->worker_at + l->fn_at),
		       sizeof(fn));
		return fn;
	case FIBERFN_RECORD:
		/* Only the head: the record may end its mapping. */
		memcpy(record, (const void *)(uintptr_t)rec, FIBERFN_HEAD);
		return fiberfn_is_record(l, record, rec, sp)
			       ? record[l->record_fn_at / 8]
			       : 0;
	default:
		return 0;
	}
}

/* The verdict kept for an entry, or -1 (not known; the table full). */
static int fiberfn_verdict(uint64_t entry)
{
	for (unsigned k = 0; k < FIBERFN_ENTRIES; k++) {
		/* acquire: pairs with fiberfn_keep's release CAS. */
		uint64_t v = atomic_load_explicit(&fiberfn_entries[k],
						  memory_order_acquire);

		if (!v)
			return -1;
		if (v >> 2 == entry)
			return (int)(v & 3);
	}
	return -1;
}

static void fiberfn_keep(uint64_t entry, enum fiberfn_kind kind)
{
	uint64_t v = entry << 2 | (uint64_t)kind;

	for (unsigned k = 0; k < FIBERFN_ENTRIES; k++) {
		uint64_t had = 0;

		/* release: pairs with fiberfn_verdict's acquire (the value
		 * is the whole verdict; nothing else is published). */
		if (atomic_compare_exchange_strong_explicit(
			    &fiberfn_entries[k], &had, v, memory_order_release,
			    memory_order_relaxed) ||
		    had >> 2 == entry)
			return;
	}
}

uint64_t fiberfn_of(uint64_t sp, uint64_t entry)
{
	const struct fiberfn_layout *l;
	enum fiberfn_kind kind;
	int verdict;
	uint64_t fn;

	/* Not a fiber's sp (its record would not be 256-aligned): the
	 * dynamic linker is not asked. */
	if ((sp + FIBERFN_RECORD_AT) & 0xff || !entry || entry >> 62)
		return 0;
	l = fiberfn_layout();
	if (!l)
		return 0;
	verdict = fiberfn_verdict(entry);
	if (verdict >= 0)
		return fiberfn_read(l, sp, (enum fiberfn_kind)verdict);
	fn = fiberfn_peek(l, sp, &kind);
	fiberfn_keep(entry, kind);
	return fn;
}
