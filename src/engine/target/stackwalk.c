/*
 * stackwalk: a parked coroutine's stack, walked in the target's memory by
 * the engine, from the frame record the probe kept at the suspend.
 *
 * A coroutine that parked before corotop attached has no captured stack:
 * the probe only kept, at its last transition, the return address into the
 * scheduler (pc), the caller's frame pointer (fp) and the lowest address of
 * the caller's frame (sp), and the census hands those over with the stack
 * the scheduler declared (corotop_coro_set_stack).  While the coroutine
 * stays parked its stack is frozen, so the frame records from fp are the
 * ones the probe itself would have walked at the suspend: the same frames
 * as a parked stack captured live (src/probe/perthread.c).
 *
 * The rules are the probe's own (src/probe/unwind.h): a record is read only
 * when it is 8-byte aligned (16 on x86-64) and lies inside [sp, stack_hi);
 * each step goes strictly up by less than STACKWALK_MAX_STEP; a return
 * address below STACKWALK_MIN_CODE or with bit 63 set ends the walk, as
 * does a zero frame pointer (the demo's coroutine entry).  Reads go
 * through procmem (process_vm_readv: an unmapped page is an error, never a
 * fault), a chunk of up to STACKWALK_CHUNK bytes at a time, so a walk of a
 * few frames costs one or two reads.  Nothing read is trusted as a range.
 *
 * Every frame, pc included (the return address into the suspending code,
 * which __builtin_return_address gave the probe), must also pass
 * framecheck (framecheck.c): an address in an executable mapping of the
 * target that a call instruction ends before.  The first frame refused
 * ends the walk unstored, and the stats say why (stopped): a stack freed
 * and reused since the suspend holds any bytes at all, and a frame record
 * read there would otherwise make them WHERE, NAME and addr.
 *
 * Only a declared stack is walked: a suspend recorded on a thread's own
 * stack (a stackless C++ coroutine, a scheduler that does not declare its
 * stacks) left frames the thread has overwritten since, which would read as
 * garbage.  Frame pointers only: code built without them hides its caller
 * (a DWARF unwind from the target's CFI is not done).
 */
#define _GNU_SOURCE
#include "engine/target/stackwalk.h"

#include <string.h>

#if defined(__x86_64__)
#define STACKWALK_ALIGN 16u
#else
#define STACKWALK_ALIGN 8u
#endif

struct stackwalk_window {
	uint64_t base;
	size_t len;
	unsigned char buf[STACKWALK_CHUNK];
};

/* The 16-byte frame record at fp, from the window or a new read. */
static bool stackwalk_record(struct procmem *pm, struct stackwalk_window *w,
			     uint64_t fp, uint64_t hi, uint64_t rec[2],
			     struct stackwalk_stats *st)
{
	char err[160];
	size_t len;

	if (w->len < 16 || fp < w->base || fp - w->base > w->len - 16) {
		len = hi - fp < STACKWALK_CHUNK ? (size_t)(hi - fp)
						: STACKWALK_CHUNK;
		if (st)
			st->reads++;
		if (!procmem_read(pm, fp, w->buf, len, err, sizeof(err))) {
			/* The rest of the chunk may be unmapped: the
			 * record alone. */
			len = 16;
			if (st)
				st->reads++;
			if (!procmem_read(pm, fp, w->buf, len, err,
					  sizeof(err))) {
				w->len = 0;
				return false;
			}
		}
		w->base = fp;
		w->len = len;
	}
	memcpy(rec, w->buf + (fp - w->base), 16);
	return true;
}

static bool stackwalk_code(uint64_t a)
{
	return a >= STACKWALK_MIN_CODE && (a >> 63) == 0;
}

/* Is a a return address to keep?  The verdict goes to st when not. */
static bool stackwalk_keep(struct framecheck *fc, uint64_t a,
			   struct stackwalk_stats *st)
{
	enum framecheck_verdict v = framecheck_frame(fc, a, false);

	if (v != FRAMECHECK_OK && st)
		st->stopped = v;
	return v == FRAMECHECK_OK;
}

size_t stackwalk_fp(struct procmem *pm, const struct stackwalk_start *s,
		    struct framecheck *fc, uint64_t *frames, size_t max,
		    struct stackwalk_stats *st)
{
	struct stackwalk_window w = {0};
	uint64_t fp = s->fp, lo = s->sp, hi = s->stack_hi;
	size_t n = 0;

	if (st)
		st->stopped = FRAMECHECK_OK;
	if (!max || !stackwalk_code(s->pc))
		return 0;
	/* A declared stack that holds sp. */
	if (s->stack_lo >= s->stack_hi || s->sp < s->stack_lo ||
	    s->sp >= s->stack_hi)
		return 0;
	if (!stackwalk_keep(fc, s->pc, st))
		return 0;
	frames[n++] = s->pc;
	while (n < max) {
		uint64_t rec[2];

		if (!fp || (fp & (STACKWALK_ALIGN - 1)) || fp < lo || hi < 16 ||
		    fp > hi - 16)
			break;
		if (!stackwalk_record(pm, &w, fp, hi, rec, st))
			break;
		if (!stackwalk_code(rec[1]) || !stackwalk_keep(fc, rec[1], st))
			break;
		frames[n++] = rec[1];
		if (rec[0] <= fp || rec[0] - fp >= STACKWALK_MAX_STEP)
			break;
		fp = rec[0];
	}
	return n;
}
