/*
 * unwind: the probe's stack walk -- a frame-pointer walk that is bounded in
 * depth and checks every read before it makes it, for a SIGPROF handler
 * (the sampler) and for the parked stack captured at a suspend.
 *
 * Frame records.  Code built with -fno-omit-frame-pointer keeps, in every
 * frame, a record of two words at the frame pointer: [fp] = the caller's
 * frame pointer, [fp + 8] = the return address into the caller (x86_64:
 * push rbp; mov rbp, rsp.  aarch64: stp x29, x30 / mov x29, sp).  Walking
 * the chain yields the return addresses, innermost first.
 *
 * Why the walk can not fault.  It only ever reads the 16 bytes at fp, and
 * only when all of these hold:
 *
 *   1. lo <= fp and fp + 16 <= hi, where [lo, hi) is a range known to be
 *      mapped and readable (unwind_range):
 *        - lo is the stack pointer the walk starts from (the interrupted
 *          context's sp, or the probe's own frame); every byte from there
 *          up to the top of the same stack is mapped, since a stack is one
 *          mapping that the program has already grown down to sp;
 *        - hi is the top of the stack that contains sp: the thread's stack
 *          (pthread_getattr_np, captured once per thread outside any signal
 *          handler), or the coroutine stack the scheduler declared with
 *          corotop_coro_set_stack;
 *        - on any other stack (a coroutine whose bounds were not declared,
 *          a sigaltstack), hi is the end of the 4 KiB page that holds sp:
 *          sp's own page is mapped, and the next one may not be, so the
 *          walk stays on it;
 *   2. fp is aligned: 16 bytes on x86_64 (the ABI aligns every frame
 *      record there), 8 elsewhere, so each word is read whole;
 *   3. each step moves strictly up (next > fp) and by less than
 *      UNWIND_MAX_STEP, so the walk terminates and garbage (a register that
 *      code built without frame pointers used for data) ends it early;
 *   4. at most `max` frames are written (the caller's buffer).
 *
 * Residual risk, and only that: a range is trusted to be mapped.  A thread
 * stack's top and a declared coroutine stack are what the C library and
 * the scheduler say; if a scheduler declares a range that is not mapped,
 * or unmaps a stack while it still runs on it, a read can fault.  Nothing
 * read from the stack is ever trusted as a range.
 *
 * What the walk can not promise is a correct stack: code without frame
 * pointers (libc, the vDSO) skips or ends frames, and a sample that lands
 * in a prologue loses the caller.  Where such code used the frame-pointer
 * register for data, the walk may take one last frame of garbage before a
 * check stops it (seen under TSan, whose runtime starts every thread): a
 * return address below UNWIND_MIN_CODE or with bit 63 set (not a user-space
 * address; CallTrace tag frames live there) ends the walk unstored.
 */
#ifndef COROTOP_PROBE_UNWIND_H
#define COROTOP_PROBE_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#if defined(__x86_64__) || defined(__aarch64__)
#define UNWIND_SUPPORTED 1
#else
#define UNWIND_SUPPORTED 0
#endif

/* Largest distance between two consecutive frame records. */
#define UNWIND_MAX_STEP (1u << 20)
/* No code lies below vm.mmap_min_addr (64 KiB by default): a smaller
 * "return address" is data, read through a frame pointer that code without
 * frame pointers left behind. */
#define UNWIND_MIN_CODE 0x10000u
/* Window around sp on a stack of unknown bounds: sp's own page. */
#define UNWIND_PAGE 4096u
#if defined(__x86_64__)
#define UNWIND_ALIGN 16u
#else
#define UNWIND_ALIGN 8u
#endif
#define UNWIND_RECORD (2u * sizeof(uintptr_t))

/* A stack's extent, [lo, hi); {0, 0} = unknown. */
struct unwind_stack {
	uintptr_t lo, hi;
};

static inline bool unwind_contains(const struct unwind_stack *s, uintptr_t a)
{
	return s && s->lo < s->hi && s->lo <= a && a < s->hi;
}

/*
 * The readable range for a walk from stack pointer sp: [sp, top of the
 * stack holding sp).  The declared coroutine stack is tried first (it is
 * the more specific one), then the thread's stack, else sp's own page.
 */
static inline struct unwind_stack
unwind_range(uintptr_t sp, const struct unwind_stack *coro,
	     const struct unwind_stack *thread)
{
	struct unwind_stack r = {sp, sp};

	if (unwind_contains(coro, sp))
		r.hi = coro->hi;
	else if (unwind_contains(thread, sp))
		r.hi = thread->hi;
	else if (sp <= UINTPTR_MAX - UNWIND_PAGE)
		r.hi = (sp | (UNWIND_PAGE - 1)) + 1;
	return r;
}

/*
 * Walk the frame records from fp inside r; store at most max return
 * addresses in out, innermost first.  Returns how many were stored.  Never
 * reads outside r (see the top of this file).  Not instrumented by ASan: a
 * frame record read through a stale or garbage fp may lie in another
 * frame's redzone, which is fine here and must not be reported.
 */
#if defined(__GNUC__)
__attribute__((no_sanitize_address))
#endif
static inline unsigned
unwind_fp(uintptr_t fp, struct unwind_stack r, uint64_t *out, unsigned max)
{
	unsigned n = 0;

	if (r.hi < r.lo || r.hi - r.lo < UNWIND_RECORD)
		return 0;
	while (n < max) {
		const volatile uintptr_t *rec;
		uintptr_t next, ret;

		if ((fp & (UNWIND_ALIGN - 1)) || fp < r.lo ||
		    fp > r.hi - UNWIND_RECORD)
			break;
		rec = (const volatile uintptr_t *)fp;
		next = rec[0];
		ret = rec[1];
		if (ret < UNWIND_MIN_CODE || ((uint64_t)ret >> 63) != 0)
			break;
		out[n++] = ret;
		if (next <= fp || next - fp >= UNWIND_MAX_STEP)
			break;
		fp = next;
	}
	return n;
}

#endif
