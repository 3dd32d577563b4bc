/*
 * walker: a parked coroutine's stack, walked by the engine in the
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
 * [sp, stack_hi): a window of STACKS_UNWIND_CHUNK bytes at a time, so a
 * walk costs a few process_vm_readv, never a fault.  Every frame of both
 * walks, pc included, must be a return address into the target's code
 * (engine/target/framecheck.c: in an executable mapping, after a call
 * instruction): a stack freed and reused since the park holds junk, and
 * the first frame refused ends the walk, before any frame is marked; the
 * walk kept counts its stop (JSON's `frames`).
 *
 * When and how often walks are made, and under which lock: walks.c.
 *
 * Waits only when asked.  The symbol table's lock may be held by the names
 * thread: without `wait` the walk is then not made now (*busy), and the
 * caller asks again later.
 */
#define _GNU_SOURCE
#include "engine/stacks/stacks_internal.h"

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

#define STACKS_UNWIND_CHUNK 4096u

struct stacks_unwind_reader {
	struct procmem *pm;
	struct stacks_unwind_copy *copy; /* read first, or NULL */
	uint64_t lo, hi;		 /* what may be read */
	uint64_t base;			 /* the window: [base, base + len) */
	size_t len;
	uint64_t reads;
	unsigned char buf[STACKS_UNWIND_CHUNK];
};

static bool stacks_unwind_read(void *ctx, uint64_t addr, uint64_t *word)
{
	struct stacks_unwind_reader *r = ctx;
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
		base = addr & ~(uint64_t)(STACKS_UNWIND_CHUNK - 1);
		if (base < r->lo)
			base = r->lo;
		len = r->hi - base < STACKS_UNWIND_CHUNK
			      ? (size_t)(r->hi - base)
			      : STACKS_UNWIND_CHUNK - (size_t)(base & 4095u);
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
struct stacks_unwind_keep {
	struct framecheck *fc;
	enum framecheck_verdict why;
	enum framecheck_rule rule;
};

static size_t stacks_unwind_keep(void *ctx, const uint64_t *frames, size_t n)
{
	struct stacks_unwind_keep *k = ctx;

	return framecheck_walk(k->fc, frames, n, k->rule, &k->why);
}

size_t stacks_unwind(struct stacks *sk, struct procmem *pm, pid_t pid,
		     struct framecheck *fc, const struct stackwalk_start *s,
		     uint64_t *frames, size_t max, bool wait,
		     struct symtab_unwound *marks, bool *busy,
		     struct stacks_unwind_copy *copy)
{
	struct stacks_unwind_reader *r;
	struct unwinder_regs regs = {.pc = s->pc, .sp = s->sp, .fp = s->fp};
	struct stacks_unwind_keep keep = {.fc = fc,
					  .why = FRAMECHECK_OK,
					  .rule = s->leaf ? FRAMECHECK_FROM_PC
							  : FRAMECHECK_RETURNS};
	struct stackwalk_stats st;
	uint64_t fp[STACKS_UNWIND_MAX];
	size_t nfp;

	marks->n = 0;
	marks->where = marks->entry = marks->inlined_at = -1;
	marks->inlined[0] = '\0';
	*busy = false;
	if (!max || !s->stack_hi || s->sp < s->stack_lo || s->sp >= s->stack_hi)
		return 0;
	if (max > STACKS_UNWIND_MAX)
		max = STACKS_UNWIND_MAX;
	r = calloc(1, sizeof(*r));
	if (!r)
		return 0;
	r->pm = pm;
	r->copy = copy;
	r->lo = s->sp;
	r->hi = s->stack_hi;
	*busy = symtab_unwind_in(
			sk->env.symtab, pid, &regs, stacks_unwind_read, r,
			frames, max, wait,
			&(struct symtab_keep){stacks_unwind_keep, &keep},
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

/* The target's memory for walks made while watching: the walker's own,
 * opened when first needed (lock held: target.running). */
struct procmem *stacks_unwind_pm(struct stacks *sk)
{
	char err[256];

	if (sk->unwind.pm_open)
		return &sk->unwind.pm;
	if (sk->unwind.pm_failed || sk->env.target->pid <= 0 ||
	    !sk->env.target->running)
		return NULL;
	sk->unwind.pm_open = procmem_open(&sk->unwind.pm, sk->env.target->pid,
					  err, sizeof(err));
	sk->unwind.pm_failed = !sk->unwind.pm_open;
	return sk->unwind.pm_open ? &sk->unwind.pm : NULL;
}

/* The memory of process pid, a child of the target's whose coroutines
 * are walked too (lock held), and its frames' check (*fc): kept open for
 * the next walks, the least recently used replaced; NULL when it cannot
 * be opened (gone). */
struct procmem *stacks_unwind_child_pm(struct stacks *sk, pid_t pid,
				       struct framecheck **fc,
				       struct stacks_fcsave **fcs)
{
	struct stacks_unwind_state *u = &sk->unwind;
	struct stacks_unwind_proc *p = NULL, *lru = &u->procs[0];
	char err[256];

	for (size_t k = 0; k < STACKS_UNWIND_PROCS && !p; k++) {
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
		p->fcs = (struct stacks_fcsave){0};
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

/* Has the park of the coroutine at `at` ended (its last_ts moved from
 * ts, or it cannot be read)? */
static bool stacks_unwind_moved(struct procmem *pm, uint64_t at, uint64_t ts)
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
static void stacks_unwind_trim_own(struct stacks *sk,
				   struct stacks_unwind_job *j)
{
	struct symtab_unwound *m = &j->marks;
	struct symtab_sym sym;
	size_t k = 0;

	while (j->n > 1 &&
	       symtab_lookup(sk->env.symtab, j->frames[j->n - 1], &sym) &&
	       !strncmp(sym.module, "libcorotop-", 11))
		j->n--;
	m->n = j->n;
	m->where = m->where < (int)j->n ? m->where : -1;
	m->entry = m->entry < (int)j->n ? m->entry : -1;
	m->inlined_at = m->inlined_at < (int)j->n ? m->inlined_at : -1;
	while (k + 1 < j->n &&
	       symtab_lookup(sk->env.symtab, j->frames[k], &sym) &&
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
#define STACKS_UNWIND_LAYOUT_NS 1000000000ull

/* The saved-registers words of station i (corotop_coro_set_saved), read
 * in the engine's mapping of the region -- which the target may
 * truncate: under a SIGBUS landing pad of its own (savemask 0: the
 * handler runs with SA_NODEFER, so no mask needs restoring).  False when
 * the station is not mapped or faulted. */
static bool stacks_unwind_station_saved(struct stacks *sk, uint32_t i,
					uint32_t *kind, uint64_t *at,
					uint64_t *ts)
{
	sigjmp_buf jb;
	sigjmp_buf *volatile outer = *sk->env.guard();
	struct ctp_station *st;

	if (!sk->env.harvest->stations || i >= sk->env.harvest->max)
		return false;
	st = &sk->env.harvest->stations[i];
	if (sigsetjmp(jb, 0)) {
		*sk->env.guard() = outer;
		return false;
	}
	*sk->env.guard() = &jb;
	/* (T) acquire: pairs with the probe's release store of saved_ts
	 * (S): this park's saved_at, and its area, are visible. */
	*ts = atomic_load_explicit(&st->ext.saved_ts, memory_order_acquire);
	/* (U) acquire: pairs with the probe's release store of saved_at
	 * (R): an address of a later park comes with that park's last_ts,
	 * which the walk's re-read of last_ts sees (stacks_unwind_moved). */
	*at = atomic_load_explicit(&st->ext.saved_at, memory_order_acquire);
	/* relaxed: published with saved_at (R). */
	*kind = atomic_load_explicit(&st->ext.saved_kind, memory_order_relaxed);
	*sk->env.guard() = outer;
	return true;
}

/* The Boost.Context layout of the job's process (walker thread only). */
static const struct fcsave_layout *
stacks_unwind_layout(struct stacks *sk, const struct stacks_unwind_job *j)
{
	struct stacks_fcsave *f = j->fcs;
	pid_t pid = j->pid ? j->pid : sk->env.target->pid;
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC);

	if (f->pid != pid || now - f->read_ns >= STACKS_UNWIND_LAYOUT_NS) {
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
static void stacks_unwind_saved(struct stacks *sk, struct stacks_unwind_job *j,
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
	if (!stacks_unwind_station_saved(sk, j->station, &kind, &at, &ts) ||
	    kind != CTP_SAVED_FCONTEXT || !at || ts != cc->last_ts)
		return; /* none for this park */
	j->from = UNWIND_SAVED_REFUSED;
	l = stacks_unwind_layout(sk, j);
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
void stacks_unwind_walk(struct stacks *sk, struct stacks_unwind_job *j)
{
	struct procmem *pm = j->pm;
	struct corotop_coro cc;
	struct stackwalk_start s;
	struct stacks_unwind_copy copy = {0};
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
	stacks_unwind_saved(sk, j, &cc, &s);
	copy.at = s.sp;
	copy.len = cc.stack_hi - s.sp < STACKS_UNWIND_COPY
			   ? (size_t)(cc.stack_hi - s.sp)
			   : STACKS_UNWIND_COPY;
	copy.bytes = sk->unwind.copy;
	if (!sk->unwind.copy || !procmem_read(pm, copy.at, sk->unwind.copy,
					      copy.len, err, sizeof(err)))
		return;
	if (stacks_unwind_moved(pm, j->at, cc.last_ts)) {
		j->got = UNWIND_RACED;
		return;
	}
	j->n = stacks_unwind(sk, pm, j->pid, j->fc, &s, j->frames,
			     STACKS_UNWIND_MAX, false, &j->marks, &busy, &copy);
	if (busy) {
		j->got = UNWIND_BUSY;
		return;
	}
	/* Read past the copy, and resumed meanwhile: anyone's frames. */
	if (copy.live && stacks_unwind_moved(pm, j->at, cc.last_ts)) {
		j->got = UNWIND_RACED;
		return;
	}
	if (!j->pid)
		stacks_unwind_trim_own(sk, j);
	j->last_ts = cc.last_ts;
	j->switch_at = cc.last_addr;
	j->got = UNWIND_DONE;
}
