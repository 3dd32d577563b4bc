/*
 * engine_unwind: a parked coroutine's stack, walked by the engine in the
 * target's memory, and the two frames people read from it -- WHERE (the
 * first frame of the program's own code that led to the switch) and the
 * frame that names the coroutine (the first program code its entry ran).
 *
 * From what.  The registers its probe kept at the suspend (struct
 * stackwalk_start: the return address into the suspending code, the stack
 * pointer after that return, the frame pointer register) and the stack the
 * scheduler declared.  While the coroutine stays parked that stack is
 * frozen, so the walk finds the frames it had when it parked.  A stack
 * nobody declared (a thread's own, a stackless coroutine) is not walked:
 * what lay below a suspend there has been overwritten since.
 *
 * How.  With the target's CFI first (symtab_unwind: libdwfl, on the
 * symbolizer's modules), which sees through code built without frame
 * pointers (Debian's Boost and libstdc++); the frame-pointer walk
 * (stackwalk_fp) when that finds fewer frames (no symbols yet, a module
 * without CFI).  Memory is read through procmem only, and only inside
 * [sp, stack_hi): a window of ENGINE_UNWIND_CHUNK bytes at a time, so a
 * walk costs a few process_vm_readv, never a fault.
 *
 * Waits only when asked.  The symbol table's lock may be held by the names
 * thread: without `wait` the walk is then not made now (*busy), and the
 * caller asks again later.
 */
#define _GNU_SOURCE
#include "engine/engine_internal.h"

#include <stdlib.h>
#include <string.h>

#include "engine/target/stackwalk.h"

#define ENGINE_UNWIND_CHUNK 4096u

struct engine_unwind_reader {
	struct procmem *pm;
	uint64_t lo, hi; /* what may be read */
	uint64_t base;	 /* the window: [base, base + len) */
	size_t len;
	uint64_t reads;
	unsigned char buf[ENGINE_UNWIND_CHUNK];
};

static bool engine_unwind_read(void *ctx, uint64_t addr, uint64_t *word)
{
	struct engine_unwind_reader *r = ctx;
	char err[160];
	uint64_t base;
	size_t len;

	if (addr < r->lo || addr > r->hi - 8 || (addr & 7))
		return false;
	if (r->len < 8 || addr < r->base || addr - r->base > r->len - 8) {
		base = addr & ~(uint64_t)(ENGINE_UNWIND_CHUNK - 1);
		if (base < r->lo)
			base = r->lo;
		len = r->hi - base < ENGINE_UNWIND_CHUNK
			      ? (size_t)(r->hi - base)
			      : ENGINE_UNWIND_CHUNK - (size_t)(base & 4095u);
		r->reads++;
		r->len = 0;
		if (!procmem_read(r->pm, base, r->buf, len, err, sizeof(err)))
			return false;
		r->base = base;
		r->len = len;
	}
	memcpy(word, r->buf + (addr - r->base), 8);
	return true;
}

size_t engine_unwind(struct engine *e, struct procmem *pm,
		     const struct stackwalk_start *s, uint64_t *frames,
		     size_t max, bool wait, struct symtab_unwound *marks,
		     bool *busy)
{
	struct engine_unwind_reader *r;
	struct unwinder_regs regs = {.pc = s->pc, .sp = s->sp, .fp = s->fp};
	uint64_t fp[ENGINE_UNWIND_MAX];
	size_t nfp;

	marks->n = 0;
	marks->where = marks->entry = -1;
	*busy = false;
	if (!max || !s->stack_hi || s->sp < s->stack_lo || s->sp >= s->stack_hi)
		return 0;
	if (max > ENGINE_UNWIND_MAX)
		max = ENGINE_UNWIND_MAX;
	r = calloc(1, sizeof(*r));
	if (!r)
		return 0;
	r->pm = pm;
	r->lo = s->sp;
	r->hi = s->stack_hi;
	*busy = symtab_unwind(&e->symtab, &regs, engine_unwind_read, r, frames,
			      max, wait, marks) == SYMTAB_UNWIND_BUSY;
	free(r);
	if (*busy)
		return 0;
	nfp = stackwalk_fp(pm, s, fp, max, NULL);
	if (nfp > marks->n) {
		/* No CFI here (or no symbols yet): the frame records, with
		 * no frame marked as the program's. */
		memcpy(frames, fp, nfp * sizeof(*fp));
		marks->n = nfp;
		marks->where = marks->entry = -1;
	}
	return marks->n;
}
