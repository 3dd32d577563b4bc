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
 * what lay below a suspend there has been overwritten since.  A Boost
 * fcontext's park whose switch published where it saved the registers
 * (the station's saved_*, for that very park: libcorotop-preload) starts
 * from those instead -- the exact sp, frame pointer and return address
 * of the switch -- when its Boost.Context is a version whose layout
 * engine/target/fcsave.c checked and the area passes its check; else
 * from the probe's, as any other park.  JSON's frames.walk_from counts
 * which way each walk went.
 *
 * How.  With the target's CFI first (symtab_unwind: libdwfl, on the
 * symbolizer's modules), which sees through code built without frame
 * pointers (Debian's Boost and libstdc++); the frame-pointer walk
 * (stackwalk_fp) when that finds fewer frames (no symbols yet, a module
 * without CFI).  Memory is read through procmem only, and only inside
 * [sp, stack_hi): a window of ENGINE_UNWIND_CHUNK bytes at a time, so a
 * walk costs a few process_vm_readv, never a fault.  Every frame of both
 * walks, pc included, must be a return address into the target's code
 * (engine/target/framecheck.c: in an executable mapping, after a call
 * instruction): a stack freed and reused since the park holds junk, and
 * the first frame refused ends the walk, before any frame is marked; the
 * walk kept counts its stop (JSON's `frames`).
 *
 * When.  At a late attach, for each coroutine the census finds parked
 * (engine_census.c, waiting for the symbols: once).  While watching, on a
 * thread of its own, every ENGINE_UNWIND_PERIOD_NS (engine_unwind_start;
 * engine_unwind_parked): each new park of a coroutine whose probe said
 * where its struct corotop_coro is (the station's ext.coro), however
 * short, has that struct read from the target -- it must still be the
 * same coroutine (probe id), at the park picked -- then the stack's top
 * copied in one process_vm_readv (ENGINE_UNWIND_COPY bytes), last_ts read
 * again (changed: the copy is not that park's, and is dropped), and the
 * copy walked, after the coroutine may have moved on.  Round robin, once
 * per park (the model marks each park: no scan of the records that did
 * not move), within 1/ENGINE_UNWIND_SHARE of the time (4% of a core),
 * once the first ENGINE_UNWIND_BURST_NS of walking (each module's CFI and
 * symbols read for the first time) are done.
 * Most parks of a fiber ping-ponging on a channel last microseconds, and
 * end before their copy: what a walk found is learned per (coroutine,
 * switch address) (engine/model/learned.c), and a snapshot shows it for a
 * park at the same switch that no walk caught, marked as learned
 * (model_coro.where_learned; engine_snapshot).
 * The walk gives WHERE (when the switch was recorded inside a runtime),
 * the coroutine's NAME (its outermost program frame: the first program
 * code its entry ran; model_name_pc) and, with --parked-stacks, its parked
 * stack when the probe captured none or a shorter one (its frame-pointer
 * walk stops at the first frame built without frame pointers).
 *
 * Never on the harvest thread, never under the engine lock while walking.
 * A walk reads the target and, the first time a module is met, parses its
 * CFI: 150 ms for a tick's walks on a loaded machine, which the harvest
 * thread once spent with the lock held while the demo's busiest
 * coroutines lapped their rings (docs/PERFORMANCE.md, the demo under two
 * hogs).  So the lock is held only to pick the tick's walks (the records,
 * what identifies them) and to apply what they found to the records that
 * are still the same coroutines.

 * Waits only when asked.  The symbol table's lock may be held by the names
 * thread: without `wait` the walk is then not made now (*busy), and the
 * caller asks again later.
 */
#define _GNU_SOURCE
#include "engine/engine_internal.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "corotop/probe.h"

#include "engine/target/fcsave.h"
#include "engine/target/framecheck.h"
#include "engine/target/stackwalk.h"

#define ENGINE_UNWIND_CHUNK 4096u

struct engine_unwind_reader {
	struct procmem *pm;
	struct engine_unwind_copy *copy; /* read first, or NULL */
	uint64_t lo, hi;		 /* what may be read */
	uint64_t base;			 /* the window: [base, base + len) */
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
	if (r->copy && addr >= r->copy->at && r->copy->len >= 8 &&
	    addr - r->copy->at <= r->copy->len - 8) {
		memcpy(word, r->copy->bytes + (addr - r->copy->at), 8);
		return true;
	}
	if (r->copy)
		r->copy->live = true;
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

/* The CFI walk's frames, cut at the first one framecheck refuses. */
struct engine_unwind_keep {
	struct framecheck *fc;
	enum framecheck_verdict why;
};

static size_t engine_unwind_keep(void *ctx, const uint64_t *frames, size_t n)
{
	struct engine_unwind_keep *k = ctx;

	return framecheck_walk(k->fc, frames, n, FRAMECHECK_RETURNS, &k->why);
}

size_t engine_unwind(struct engine *e, struct procmem *pm, pid_t pid,
		     struct framecheck *fc, const struct stackwalk_start *s,
		     uint64_t *frames, size_t max, bool wait,
		     struct symtab_unwound *marks, bool *busy,
		     struct engine_unwind_copy *copy)
{
	struct engine_unwind_reader *r;
	struct unwinder_regs regs = {.pc = s->pc, .sp = s->sp, .fp = s->fp};
	struct engine_unwind_keep keep = {.fc = fc, .why = FRAMECHECK_OK};
	struct stackwalk_stats st;
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
	r->copy = copy;
	r->lo = s->sp;
	r->hi = s->stack_hi;
	*busy = symtab_unwind_in(
			&e->symtab, pid, &regs, engine_unwind_read, r, frames,
			max, wait,
			&(struct symtab_keep){engine_unwind_keep, &keep},
			marks) == SYMTAB_UNWIND_BUSY;
	free(r);
	if (*busy)
		return 0;
	nfp = stackwalk_fp(pm, s, fc, fp, max, &st);
	/* The walk kept counts its stop at a refused frame (both empty: the
	 * frame-pointer walk's, which needs no symbols). */
	framecheck_count(fc, nfp > marks->n || (!marks->n && !keep.why)
				     ? st.stopped
				     : keep.why);
	if (nfp > marks->n) {
		/* No CFI here (or no symbols yet): the frame records, with
		 * no frame marked as the program's.  They were read in the
		 * target's memory, not in the copy. */
		if (copy)
			copy->live = true;
		memcpy(frames, fp, nfp * sizeof(*fp));
		marks->n = nfp;
		marks->where = marks->entry = marks->inlined_at = -1;
		marks->inlined[0] = '\0';
	}
	return marks->n;
}

/* The walker's tick (ENGINE_UNWIND_IDLE_NS at most while nothing parks
 * anew), the share of the time it may be busy (1/25: 4% of a core, by its
 * own CPU clock, so that with the first burst below it stays within the
 * 5% issue 28 bounds it to in any 30 s; the walks within a tick stop at
 * that share of its period, and the wait after a tick is SHARE - 1 times
 * the CPU time the thread used since the last wait) and the walks it
 * picks at most (among the records parked since the last tick:
 * model_take_parks).  A park is
 * walked at its first tick, however short: what its walk finds is
 * learned for the next parks at the same switch address, which may be
 * too short to catch. */
#define ENGINE_UNWIND_PERIOD_NS 10000000ull
#define ENGINE_UNWIND_IDLE_NS 160000000ull
#define ENGINE_UNWIND_SHARE 25u
/* The first walks read each module's CFI and symbols for the first time,
 * once: this much of the walker's busy time is not paced, so that a
 * program's first second is walked too (a first tick of 50 ms would
 * otherwise wait a second). */
#define ENGINE_UNWIND_BURST_NS 300000000ull
#define ENGINE_UNWIND_BUDGET 64u
/* A prime that found the symbols held is tried again this soon. */
#define ENGINE_UNWIND_RETRY_NS 1000000ull
/* The top of a parked stack copied in one read, then walked in the copy;
 * past it the walk reads the target (and the park must then have lasted
 * the walk). */
#define ENGINE_UNWIND_COPY 16384u

/* The target's memory for walks made while watching: the walker's own,
 * opened when first needed (lock held: target.running). */
static struct procmem *engine_unwind_pm(struct engine *e)
{
	char err[256];

	if (e->unwind.pm_open)
		return &e->unwind.pm;
	if (e->unwind.pm_failed || e->target.pid <= 0 || !e->target.running)
		return NULL;
	e->unwind.pm_open =
		procmem_open(&e->unwind.pm, e->target.pid, err, sizeof(err));
	e->unwind.pm_failed = !e->unwind.pm_open;
	return e->unwind.pm_open ? &e->unwind.pm : NULL;
}

/* The memory of process pid, a child of the target's whose coroutines
 * are walked too (lock held), and its frames' check (*fc): kept open for
 * the next walks, the least recently used replaced; NULL when it cannot
 * be opened (gone). */
static struct procmem *engine_unwind_child_pm(struct engine *e, pid_t pid,
					      struct framecheck **fc,
					      struct engine_fcsave **fcs)
{
	struct engine_unwind_state *u = &e->unwind;
	struct engine_unwind_proc *p = NULL, *lru = &u->procs[0];
	char err[256];

	for (size_t k = 0; k < ENGINE_UNWIND_PROCS && !p; k++) {
		if (u->procs[k].pid == pid)
			p = &u->procs[k];
		else if (u->procs[k].used < lru->used)
			lru = &u->procs[k];
	}
	if (!p) {
		p = lru;
		if (p->open)
			procmem_finish(&p->pm);
		p->pid = pid;
		p->open = procmem_open(&p->pm, pid, err, sizeof(err));
		p->fcs = (struct engine_fcsave){0};
		/* The slot's check, for the new process (its counts go on). */
		if (!p->fc)
			p->fc = framecheck_create(pid);
		else
			framecheck_retarget(p->fc, pid);
	}
	p->used = ++u->procs_used;
	*fc = p->fc;
	*fcs = &p->fcs;
	return p->open ? &p->pm : NULL;
}

/* One walk of a tick: picked under the lock (the record, and what tells
 * whether it is still the same park), made without it, then applied. */
struct engine_unwind_job {
	struct procmem *pm;	   /* its process's memory */
	struct framecheck *fc;	   /* ... and its frames' check */
	struct engine_fcsave *fcs; /* ... and its Boost.Context */
	pid_t pid;		   /* its process, 0: the target */
	uint32_t station;	   /* its station (the saved registers) */
	uint32_t r;		   /* the model record */
	uint64_t id;		   /* its coroutine (model_coro.id) */
	uint64_t state_ts;	   /* the park picked (model_coro.state_ts) */
	uint64_t probe_id;	   /* what the struct read must say */
	uint64_t at;		   /* its struct corotop_coro in the target */
	/* the walk's result */
	enum { UNWIND_SKIP, UNWIND_RACED, UNWIND_BUSY, UNWIND_DONE } got;
	/* where the walk started (engine_unwind_saved) */
	enum {
		UNWIND_FROM_PROBE,
		UNWIND_FROM_SAVED,
		UNWIND_SAVED_REFUSED
	} from;
	uint64_t last_ts;   /* the park walked (the struct's last_ts) */
	uint64_t switch_at; /* ... at this switch (the struct's last_addr) */
	size_t n;
	struct symtab_unwound marks;
	uint64_t frames[ENGINE_UNWIND_MAX];
};

/* Has the park of the coroutine at `at` ended (its last_ts moved from
 * ts, or it cannot be read)? */
static bool engine_unwind_moved(struct procmem *pm, uint64_t at, uint64_t ts)
{
	char err[160];
	uint64_t now;

	return !procmem_read(pm, at + offsetof(struct corotop_coro, last_ts),
			     &now, sizeof(now), err, sizeof(err)) ||
	       now != ts;
}

/* corotop's own frames at the top of a walked stack of the target (the
 * preload's wrapper and its switch, where the probe took the park's
 * registers) and at its bottom (the preload's entry trampoline) are not
 * the program's: dropped, the marks moved with the frames.  A stack of
 * nothing else keeps one frame. */
static void engine_unwind_trim_own(struct engine *e,
				   struct engine_unwind_job *j)
{
	struct symtab_unwound *m = &j->marks;
	struct symtab_sym sym;
	size_t k = 0;

	while (j->n > 1 &&
	       symtab_lookup(&e->symtab, j->frames[j->n - 1], &sym) &&
	       !strncmp(sym.module, "libcorotop-", 11))
		j->n--;
	m->n = j->n;
	m->where = m->where < (int)j->n ? m->where : -1;
	m->entry = m->entry < (int)j->n ? m->entry : -1;
	m->inlined_at = m->inlined_at < (int)j->n ? m->inlined_at : -1;
	while (k + 1 < j->n && symtab_lookup(&e->symtab, j->frames[k], &sym) &&
	       !strncmp(sym.module, "libcorotop-", 11))
		k++;
	if (!k)
		return;
	memmove(j->frames, j->frames + k, (j->n - k) * sizeof(*j->frames));
	j->n -= k;
	m->n = j->n;
	m->where = m->where >= (int)k ? m->where - (int)k : -1;
	m->entry = m->entry >= (int)k ? m->entry - (int)k : -1;
	m->inlined_at = m->inlined_at >= (int)k ? m->inlined_at - (int)k : -1;
}

/* How often a process's maps are read again for its Boost.Context. */
#define ENGINE_UNWIND_LAYOUT_NS 1000000000ull

/* The saved-registers words of station i (corotop_coro_set_saved), read
 * in the engine's mapping of the region -- which the target may
 * truncate: under a SIGBUS landing pad of its own (savemask 0: the
 * handler runs with SA_NODEFER, so no mask needs restoring).  False when
 * the station is not mapped or faulted. */
static bool engine_unwind_station_saved(struct engine *e, uint32_t i,
					uint32_t *kind, uint64_t *at,
					uint64_t *ts)
{
	sigjmp_buf jb;
	sigjmp_buf *volatile outer = engine_guard;
	struct ctp_station *st;

	if (!e->harvest.stations || i >= e->harvest.max)
		return false;
	st = &e->harvest.stations[i];
	if (sigsetjmp(jb, 0)) {
		engine_guard = outer;
		return false;
	}
	engine_guard = &jb;
	/* (T) acquire: pairs with the probe's release store of saved_ts
	 * (S): this park's saved_at, and its area, are visible. */
	*ts = atomic_load_explicit(&st->ext.saved_ts, memory_order_acquire);
	/* (U) acquire: pairs with the probe's release store of saved_at
	 * (R): an address of a later park comes with that park's last_ts,
	 * which the walk's re-read of last_ts sees (engine_unwind_moved). */
	*at = atomic_load_explicit(&st->ext.saved_at, memory_order_acquire);
	/* relaxed: published with saved_at (R). */
	*kind = atomic_load_explicit(&st->ext.saved_kind, memory_order_relaxed);
	engine_guard = outer;
	return true;
}

/* The Boost.Context layout of the job's process (walker thread only). */
static const struct fcsave_layout *
engine_unwind_layout(struct engine *e, const struct engine_unwind_job *j)
{
	struct engine_fcsave *f = j->fcs;
	pid_t pid = j->pid ? j->pid : e->target.pid;
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC);

	if (f->pid != pid || now - f->read_ns >= ENGINE_UNWIND_LAYOUT_NS) {
		f->pid = pid;
		f->read_ns = now;
		f->layout = fcsave_layout_of(pid);
	}
	return f->layout;
}

/* Where the job's park is walked from: the registers Boost's switch
 * saved for that very park (its station says where, cc->last_ts which
 * park), when their layout is one fcsave knows and they pass its check
 * -- else the probe's (*s as it is).  One process_vm_readv of the area. */
static void engine_unwind_saved(struct engine *e, struct engine_unwind_job *j,
				const struct corotop_coro *cc,
				struct stackwalk_start *s)
{
	unsigned char area[FCSAVE_AREA_MAX];
	const struct fcsave_layout *l;
	struct stackwalk_start from;
	uint64_t at, ts;
	uint32_t kind;
	bool read;
	char err[160];

	j->from = UNWIND_FROM_PROBE;
	if (!engine_unwind_station_saved(e, j->station, &kind, &at, &ts) ||
	    kind != CTP_SAVED_FCONTEXT || !at || ts != cc->last_ts)
		return; /* none for this park */
	j->from = UNWIND_SAVED_REFUSED;
	l = engine_unwind_layout(e, j);
	if (!l || l->size > sizeof(area))
		return;
	read = fcsave_in_stack(l, at, cc->stack_lo, cc->stack_hi) &&
	       procmem_read(j->pm, at, area, l->size, err, sizeof(err));
	if (fcsave_check(l, at, read ? area : NULL, cc->stack_lo, cc->stack_hi,
			 j->fc, &from) != FCSAVE_OK)
		return;
	*s = from;
	j->from = UNWIND_FROM_SAVED;
}

/* The job's park, walked from the registers its probe saved in its
 * struct corotop_coro (read from the target, untrusted: it must still be
 * this coroutine, parked at the park picked).  The stack's top is copied
 * in one read, and the park read again: unchanged, the copy is that
 * park's stack, and the walk reads it even after the coroutine moved on
 * -- only what it reads past the copy needs the park to last the walk.
 * No lock held: only the target and the symbol table (its own lock; busy
 * when the names thread holds it) are read. */
static void engine_unwind_walk(struct engine *e, struct engine_unwind_job *j)
{
	struct procmem *pm = j->pm;
	struct corotop_coro cc;
	struct stackwalk_start s;
	struct engine_unwind_copy copy = {0};
	char err[160];
	bool busy;

	j->got = UNWIND_SKIP;
	if (!j->at ||
	    !procmem_read(pm, j->at, &cc, sizeof(cc), err, sizeof(err)) ||
	    cc.probe_id != j->probe_id || !cc.stack_hi ||
	    cc.park_sp < cc.stack_lo || cc.park_sp >= cc.stack_hi)
		return;
	if (cc.last_active || cc.last_ts != j->state_ts) {
		j->got = UNWIND_RACED; /* a later park is a later tick's */
		return;
	}
	s = (struct stackwalk_start){
		.sp = cc.park_sp,
		.fp = cc.park_fp,
		.pc = cc.park_pc,
		.stack_lo = cc.stack_lo,
		.stack_hi = cc.stack_hi,
	};
	engine_unwind_saved(e, j, &cc, &s);
	copy.at = s.sp;
	copy.len = cc.stack_hi - s.sp < ENGINE_UNWIND_COPY
			   ? (size_t)(cc.stack_hi - s.sp)
			   : ENGINE_UNWIND_COPY;
	copy.bytes = e->unwind.copy;
	if (!e->unwind.copy || !procmem_read(pm, copy.at, e->unwind.copy,
					     copy.len, err, sizeof(err)))
		return;
	if (engine_unwind_moved(pm, j->at, cc.last_ts)) {
		j->got = UNWIND_RACED;
		return;
	}
	j->n = engine_unwind(e, pm, j->pid, j->fc, &s, j->frames,
			     ENGINE_UNWIND_MAX, false, &j->marks, &busy, &copy);
	if (busy) {
		j->got = UNWIND_BUSY;
		return;
	}
	/* Read past the copy, and resumed meanwhile: anyone's frames. */
	if (copy.live && engine_unwind_moved(pm, j->at, cc.last_ts)) {
		j->got = UNWIND_RACED;
		return;
	}
	if (!j->pid)
		engine_unwind_trim_own(e, j);
	j->last_ts = cc.last_ts;
	j->switch_at = cc.last_addr;
	j->got = UNWIND_DONE;
}

/* What the walk found, to record r if it still holds the coroutine the
 * walk was for (lock held): its name always (its entry is the same at any
 * park), WHERE and the parked stack only when the park walked is the one
 * the model shows (the target may be a park or more ahead of it). */
static void engine_unwind_apply(struct engine *e,
				const struct engine_unwind_job *j)
{
	struct model *m = &e->model;
	struct model_coro *c = &m->coro[j->r];
	const struct symtab_unwound *marks = &j->marks;
	const uint64_t *frames = j->frames;
	size_t n = j->n;
	uint64_t where = 0, id = 0, walked = 0;
	uint32_t name_was;
	unsigned kind_was;

	e->unwind.raced += j->got == UNWIND_RACED;
	if (j->got != UNWIND_DONE || j->r >= m->used || !c->in_use ||
	    c->id != j->id)
		return;
	e->unwind.walks++;
	e->unwind.from_saved += j->from == UNWIND_FROM_SAVED;
	e->unwind.from_probe += j->from == UNWIND_FROM_PROBE;
	e->unwind.saved_refused += j->from == UNWIND_SAVED_REFUSED;
	name_was = c->name;
	kind_was = c->kind;
	if (marks->entry >= 0)
		model_name_pc(m, c->station, frames[marks->entry]);
	else if (marks->inlined[0])
		model_name_text(m, c->station, marks->inlined);
	if (c->name != name_was || c->kind != kind_was)
		engine_rec_learned(e, c, name_was, kind_was);
	/* No frame of the program's own: the runtime frame that runs its
	 * code inlined says more than the switch's caller. */
	if (marks->where > 0)
		where = frames[marks->where];
	else if (marks->inlined_at > 0)
		where = frames[marks->inlined_at];
	/* The walked stack, kept in the parked store under its own id:
	 * the park's, or, learned, the next parks' at the same switch. */
	if (n && e->ct.parked) {
		walked = parked_own_id(frames, (uint32_t)n);
		pthread_mutex_lock(&e->ct.hot_lock);
		parked_put(e->ct.parked, walked, frames, (uint32_t)n);
		pthread_mutex_unlock(&e->ct.hot_lock);
	}
	/* Learned for this coroutine's next parks at the same switch, which
	 * may be too short to walk. */
	learned_put(&e->unwind.learned, c->id, j->switch_at, where, walked);
	if (j->last_ts != c->state_ts) {
		/* Parked since at that switch: the live view shows this frame,
		 * learned, from now on (engine_where_learned). */
		if (c->state == MODEL_SUSPENDED &&
		    c->last_addr == j->switch_at && where &&
		    where != j->switch_at &&
		    (j->r >= e->unwind.cap ||
		     e->unwind.where_ts[j->r] != c->state_ts))
			engine_rec_where(e, c, where, walked, true);
		return;
	}
	if (where) {
		model_where(m, c->station, where);
		e->unwind.where_ts[j->r] = c->state_ts; /* not learned */
	}
	if (n && e->ct.parked) {
		uint64_t had[ENGINE_UNWIND_MAX];
		size_t nhad = 0;

		/* The probe's own capture is a frame-pointer walk: it stops
		 * at the first frame built without one.  Ours replaces it
		 * when it went further. */
		pthread_mutex_lock(&e->ct.hot_lock);
		if (m->parked[j->r])
			nhad = parked_frames(e->ct.parked, m->parked[j->r], had,
					     ENGINE_UNWIND_MAX);
		pthread_mutex_unlock(&e->ct.hot_lock);
		if (n > nhad)
			id = walked;
		if (id)
			model_park(m, c->station, id);
	}
	engine_rec_where(e, c, where, id, false);
}

/* done_ts for cap records (new ones zero). */
static bool engine_unwind_grow(struct engine *e, uint32_t cap)
{
	uint64_t *p;

	if (e->unwind.cap >= cap)
		return true;
	p = realloc(e->unwind.done_ts, cap * sizeof(*p));
	if (!p)
		return false;
	memset(p + e->unwind.cap, 0, (cap - e->unwind.cap) * sizeof(*p));
	e->unwind.done_ts = p;
	p = realloc(e->unwind.where_ts, cap * sizeof(*p));
	if (!p)
		return false;
	memset(p + e->unwind.cap, 0, (cap - e->unwind.cap) * sizeof(*p));
	e->unwind.where_ts = p;
	e->unwind.cap = cap;
	return true;
}

void engine_unwind_finish(struct engine *e)
{
	engine_unwind_stop(e);
	if (e->unwind.pm_open)
		procmem_finish(&e->unwind.pm);
	for (size_t k = 0; k < ENGINE_UNWIND_PROCS; k++) {
		if (e->unwind.procs[k].open)
			procmem_finish(&e->unwind.procs[k].pm);
		framecheck_destroy(e->unwind.procs[k].fc);
	}
	if (e->unwind.inited) {
		pthread_cond_destroy(&e->unwind.wake);
		pthread_mutex_destroy(&e->unwind.mu);
	}
	free(e->unwind.jobs);
	free(e->unwind.done_ts);
	free(e->unwind.where_ts);
	free(e->unwind.copy);
	learned_finish(&e->unwind.learned);
	memset(&e->unwind, 0, sizeof(e->unwind));
}

/* The tick's walks (lock held): the records parked since the last tick
 * (model_take_parks: no scan of the others), ENGINE_UNWIND_BUDGET at
 * most, round robin, each in the memory of its process (pm: the
 * target's).  Returns how many. */
static unsigned engine_unwind_pick(struct engine *e, uint64_t now,
				   struct procmem *pm,
				   struct engine_unwind_job *job)
{
	struct model *m = &e->model;
	uint32_t took[ENGINE_UNWIND_BUDGET], t;
	unsigned n = 0;

	if (!m->used || !engine_unwind_grow(e, m->cap))
		return 0;
	t = model_take_parks(m, &e->unwind.cursor, took, ENGINE_UNWIND_BUDGET);
	for (uint32_t k = 0; k < t; k++) {
		uint32_t r = took[k];
		const struct model_coro *c = &m->coro[r];

		if (!c->in_use || c->state != MODEL_SUSPENDED ||
		    e->unwind.done_ts[r] == c->state_ts)
			continue;
		/* Harvested after `now` was read: the next tick's. */
		if (c->state_ts > now) {
			model_mark_park(m, r);
			continue;
		}
		bool child = c->pid && (pid_t)c->pid != e->target.pid;
		struct framecheck *fc = e->framecheck;
		struct engine_fcsave *fcs = &e->unwind.fcs;
		struct procmem *in =
			child ? engine_unwind_child_pm(e, (pid_t)c->pid, &fc,
						       &fcs)
			      : pm;

		if (!in)
			continue;
		e->unwind.done_ts[r] = c->state_ts;
		job[n++] = (struct engine_unwind_job){
			.pm = in,
			.fc = fc,
			.fcs = fcs,
			.pid = child ? (pid_t)c->pid : 0,
			.station = c->station,
			.r = r,
			.id = c->id,
			.state_ts = c->state_ts,
			.probe_id = c->probe_id,
			.at = model_coro_at(m, r),
		};
	}
	return n;
}

unsigned engine_unwind_parked(struct engine *e, uint64_t now)
{
	struct engine_unwind_job *job = e->unwind.jobs;
	struct procmem *pm;
	unsigned n, k;

	pthread_mutex_lock(&e->lock);
	pm = engine_unwind_pm(e);
	n = job ? engine_unwind_pick(e, now, pm, job) : 0;
	pthread_mutex_unlock(&e->lock);
	uint64_t until = clock_now_ns(CLOCK_MONOTONIC) +
			 ENGINE_UNWIND_PERIOD_NS / ENGINE_UNWIND_SHARE;

	/* Within the tick's share of time (the first walk always). */
	for (k = 0; k < n; k++) {
		if (k && clock_now_ns(CLOCK_MONOTONIC) > until)
			break;
		engine_unwind_walk(e, &job[k]);
		if (job[k].got == UNWIND_BUSY)
			break;
	}
	if (!n)
		return 0;
	pthread_mutex_lock(&e->lock);
	for (unsigned i = 0; i < k; i++)
		engine_unwind_apply(e, &job[i]);
	/* The names thread held the symbols, or the time is up: this walk
	 * and the ones not made are made at a later tick. */
	for (unsigned i = k; i < n; i++) {
		e->unwind.done_ts[job[i].r] = 0;
		model_mark_park(&e->model, job[i].r);
	}
	pthread_mutex_unlock(&e->lock);
	return n;
}

static void *engine_unwind_main(void *arg)
{
	struct engine *e = arg;
	struct engine_unwind_state *u = &e->unwind;
	uint64_t idle_ns = ENGINE_UNWIND_PERIOD_NS;
	uint64_t burst = ENGINE_UNWIND_BURST_NS; /* busy time left unpaced */
	/* The thread's CPU time at its last wait: the busy time since, the
	 * wait, the prime and the locks included, is what is paced. */
	uint64_t cpu = clock_now_ns(CLOCK_THREAD_CPUTIME_ID);
	bool retry = false; /* a prime found the symbols held */

	pthread_mutex_lock(&u->mu);
	while (!u->stop) {
		struct timespec at;
		uint64_t t, took, wait;
		unsigned n;
		bool prime;

		prime = u->prime || retry;
		u->prime = false;
		pthread_mutex_unlock(&u->mu);
		/* Another thread held the symbols (a lookup, or making
		 * them): prime again soon rather than never. */
		retry = prime && !symtab_prime(&e->symtab);
		n = engine_unwind_parked(e, engine_now(e));
		t = clock_now_ns(CLOCK_THREAD_CPUTIME_ID);
		took = t > cpu ? t - cpu : 0;
		cpu = t;
		/* Busy 1/ENGINE_UNWIND_SHARE of the time at most; a tick with
		 * nothing parked anew waits twice as long as the last, up to
		 * ENGINE_UNWIND_IDLE_NS. */
		idle_ns = n ? ENGINE_UNWIND_PERIOD_NS
			    : (idle_ns * 2 < ENGINE_UNWIND_IDLE_NS
				       ? idle_ns * 2
				       : ENGINE_UNWIND_IDLE_NS);
		wait = took > burst ? (took - burst) * (ENGINE_UNWIND_SHARE - 1)
				    : 0;
		burst = took > burst ? 0 : burst - took;
		if (wait < idle_ns)
			wait = idle_ns;
		if (retry && wait > ENGINE_UNWIND_RETRY_NS)
			wait = ENGINE_UNWIND_RETRY_NS;
		pthread_mutex_lock(&u->mu);
		/* CLOCK_MONOTONIC: the condition was made with it. */
		t = clock_now_ns(CLOCK_MONOTONIC) + wait;
		at.tv_sec = (time_t)(t / 1000000000u);
		at.tv_nsec = (long)(t % 1000000000u);
		while (!u->stop && !u->prime &&
		       pthread_cond_timedwait(&u->wake, &u->mu, &at) == 0)
			;
	}
	pthread_mutex_unlock(&u->mu);
	return NULL;
}

/* Raise one of the walker's flags (stop, prime) and wake it. */
static void engine_unwind_poke(struct engine_unwind_state *u, bool *flag)
{
	pthread_mutex_lock(&u->mu);
	*flag = true;
	pthread_cond_signal(&u->wake);
	pthread_mutex_unlock(&u->mu);
}

void engine_unwind_prime(struct engine *e)
{
	if (e->unwind.inited)
		engine_unwind_poke(&e->unwind, &e->unwind.prime);
}

bool engine_unwind_start(struct engine *e, char *err, size_t errlen)
{
	struct engine_unwind_state *u = &e->unwind;
	pthread_condattr_t ca;
	int rc;

	/* Observer mode: no process to walk. */
	if (e->target.pid <= 0 || u->running)
		return true;
	u->jobs = calloc(ENGINE_UNWIND_BUDGET, sizeof(*u->jobs));
	u->copy = malloc(ENGINE_UNWIND_COPY);
	/* Room for a switch address or two per coroutine; none: nothing
	 * learned, the walks go on. */
	(void)learned_init(&u->learned, 2 * e->cfg.stations);
	if (!u->jobs || !u->copy) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&u->wake, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&u->mu, NULL);
	u->inited = true;
	rc = pthread_create(&u->thread, NULL, engine_unwind_main, e);
	if (rc) {
		snprintf(err, errlen, "cannot start a thread: %s",
			 strerror(rc));
		return false;
	}
	/* For top -H and bench/where_walks.sh. */
	pthread_setname_np(u->thread, "corotop-walk");
	u->running = true;
	return true;
}

void engine_unwind_stop(struct engine *e)
{
	struct engine_unwind_state *u = &e->unwind;

	if (!u->running)
		return;
	engine_unwind_poke(u, &u->stop);
	pthread_join(u->thread, NULL);
	u->running = false;
}
