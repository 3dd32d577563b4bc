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
 * When.  At a late attach, for each coroutine the census finds parked
 * (engine_census.c, waiting for the symbols: once).  While watching, on
 * the harvest thread's tick (engine_unwind_parked): a coroutine parked for
 * ENGINE_UNWIND_AFTER_NS whose probe said where its struct corotop_coro
 * is (the station's ext.coro) has that struct read from the target -- it
 * must still be the same coroutine (probe id), parked -- and its stack
 * walked from the registers kept there, then last_ts read again: a
 * coroutine resumed meanwhile is not believed.
 * At most ENGINE_UNWIND_BUDGET walks a tick, round robin, once per park.
 * The walk gives WHERE (when the switch was recorded inside a runtime),
 * the coroutine's NAME (its outermost program frame: the first program
 * code its entry ran; model_name_pc) and, with --parked-stacks, its parked
 * stack when the probe captured none or a shorter one (its frame-pointer
 * walk stops at the first frame built without frame pointers).
 *
 * Waits only when asked.  The symbol table's lock may be held by the names
 * thread: without `wait` the walk is then not made now (*busy), and the
 * caller asks again later.
 */
#define _GNU_SOURCE
#include "engine/engine_internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "corotop/probe.h"

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
	marks->where = marks->entry = marks->inlined_at = -1;
	marks->inlined[0] = '\0';
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
		marks->where = marks->entry = marks->inlined_at = -1;
		marks->inlined[0] = '\0';
	}
	return marks->n;
}

/* How long a coroutine stays parked before its stack is walked (most
 * parks are shorter: the walk would find a stack already moving) -- but a
 * coroutine with no name yet is walked at its first park, whatever its
 * length, until one walk found no program frame -- and how many walks a
 * tick makes at most (the engine lock is held). */
#define ENGINE_UNWIND_AFTER_NS 100000000ull
#define ENGINE_UNWIND_BUDGET 16u

/* The target's memory for walks made while watching: attach mode's, or
 * one opened on the launched target when first needed. */
static struct procmem *engine_unwind_pm(struct engine *e)
{
	char err[256];

	if (e->ppt.enabled)
		return &e->ppt.pm;
	if (e->unwind.pm_open)
		return &e->unwind.pm;
	if (e->unwind.pm_failed || e->target.pid <= 0 || !e->target.running)
		return NULL;
	e->unwind.pm_open =
		procmem_open(&e->unwind.pm, e->target.pid, err, sizeof(err));
	e->unwind.pm_failed = !e->unwind.pm_open;
	return e->unwind.pm_open ? &e->unwind.pm : NULL;
}

/* Record r's park, walked from the registers its probe saved in its
 * struct corotop_coro (read from the target, untrusted: it must still be
 * this coroutine, parked, and at the same suspend before and after the
 * walk; WHERE and the parked stack only when that suspend is the one the
 * model shows).  False when the names thread held the symbols (ask
 * again). */
static bool engine_unwind_one(struct engine *e, struct procmem *pm, uint32_t r)
{
	struct model *m = &e->model;
	struct model_coro *c = &m->coro[r];
	uint64_t at = model_coro_at(m, r), frames[ENGINE_UNWIND_MAX], ts;
	struct corotop_coro cc;
	struct symtab_unwound marks;
	struct stackwalk_start s;
	char err[160];
	bool busy;
	size_t n;

	e->unwind.done_ts[r] = c->state_ts;
	if (!at || !procmem_read(pm, at, &cc, sizeof(cc), err, sizeof(err)) ||
	    cc.probe_id != c->probe_id || cc.last_active || !cc.stack_hi)
		return true;
	s = (struct stackwalk_start){
		.sp = cc.park_sp,
		.fp = cc.park_fp,
		.pc = cc.park_pc,
		.stack_lo = cc.stack_lo,
		.stack_hi = cc.stack_hi,
	};
	n = engine_unwind(e, pm, &s, frames, ENGINE_UNWIND_MAX, false, &marks,
			  &busy);
	if (busy) {
		e->unwind.done_ts[r] = 0;
		return false;
	}
	/* Resumed during the walk: what was read may be anyone's frames. */
	if (!procmem_read(pm, at + offsetof(struct corotop_coro, last_ts), &ts,
			  sizeof(ts), err, sizeof(err)) ||
	    ts != cc.last_ts)
		return true;
	e->unwind.walks++;
	if (marks.entry < 0 && !marks.inlined[0])
		e->unwind.tried[r] = c->id;
	/* Its entry is the same at any park; the rest only of the park the
	 * model shows (the target may be a park or more ahead of it). */
	if (marks.entry >= 0)
		model_name_pc(m, c->station, frames[marks.entry]);
	else if (marks.inlined[0])
		model_name_text(m, c->station, marks.inlined);
	if (cc.last_ts != c->state_ts)
		return true;
	/* No frame of the program's own: the runtime frame that runs its
	 * code inlined says more than the switch's caller. */
	if (marks.where > 0)
		model_where(m, c->station, frames[marks.where]);
	else if (marks.inlined_at > 0)
		model_where(m, c->station, frames[marks.inlined_at]);
	if (n && e->ct.parked) {
		uint64_t had[ENGINE_UNWIND_MAX], id = 0;
		size_t nhad = 0;

		/* The probe's own capture is a frame-pointer walk: it stops
		 * at the first frame built without one.  Ours replaces it
		 * when it went further. */
		pthread_mutex_lock(&e->ct.hot_lock);
		if (m->parked[r])
			nhad = parked_frames(e->ct.parked, m->parked[r], had,
					     ENGINE_UNWIND_MAX);
		if (n > nhad) {
			id = parked_own_id(frames, (uint32_t)n);
			parked_put(e->ct.parked, id, frames, (uint32_t)n);
		}
		pthread_mutex_unlock(&e->ct.hot_lock);
		if (id)
			model_park(m, c->station, id);
	}
	return true;
}

/* done_ts for cap records (new ones zero). */
static bool engine_unwind_grow(struct engine *e, uint32_t cap)
{
	uint64_t *p;
	uint64_t *t;

	if (e->unwind.cap >= cap)
		return true;
	p = realloc(e->unwind.done_ts, cap * sizeof(*p));
	if (!p)
		return false;
	memset(p + e->unwind.cap, 0, (cap - e->unwind.cap) * sizeof(*p));
	e->unwind.done_ts = p;
	t = realloc(e->unwind.tried, cap * sizeof(*t));
	if (!t)
		return false;
	memset(t + e->unwind.cap, 0, (cap - e->unwind.cap) * sizeof(*t));
	e->unwind.tried = t;
	e->unwind.cap = cap;
	return true;
}

void engine_unwind_finish(struct engine *e)
{
	if (e->unwind.pm_open)
		procmem_finish(&e->unwind.pm);
	free(e->unwind.done_ts);
	free(e->unwind.tried);
	memset(&e->unwind, 0, sizeof(e->unwind));
}

void engine_unwind_parked(struct engine *e, uint64_t now)
{
	struct model *m = &e->model;
	unsigned budget = ENGINE_UNWIND_BUDGET;
	struct procmem *pm;
	uint32_t used = m->used;

	if (!used || !engine_unwind_pm(e) || !engine_unwind_grow(e, m->cap))
		return;
	pm = engine_unwind_pm(e);
	for (uint32_t k = 0; k < used && budget; k++) {
		uint32_t r = (e->unwind.cursor + k) % used;
		const struct model_coro *c = &m->coro[r];

		e->unwind.next = (r + 1) % used;
		bool nameless = !c->name && e->unwind.tried[r] != c->id;

		if (!c->in_use || c->state != MODEL_SUSPENDED ||
		    e->unwind.done_ts[r] == c->state_ts || c->state_ts > now ||
		    (!nameless && now - c->state_ts < ENGINE_UNWIND_AFTER_NS))
			continue;
		budget--;
		if (!engine_unwind_one(e, pm, r)) {
			e->unwind.next = r; /* this one again, first */
			break;
		}
	}
	/* The next tick goes on where this one stopped. */
	e->unwind.cursor = e->unwind.next;
}
