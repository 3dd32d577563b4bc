/*
 * walks: the parked stacks the engine walks while watching -- which parks,
 * when, on which thread, and what the walks found applied to the records
 * (walker.c makes one walk).
 *
 * When.  At a late attach, for each coroutine the census finds parked
 * (census.c, waiting for the symbols: once).  While watching, on a
 * thread of its own, every STACKS_UNWIND_PERIOD_NS (stacks_unwind_start;
 * stacks_unwind_parked): each new park of a coroutine whose probe said
 * where its struct corotop_coro is (the station's ext.coro), however
 * short, has that struct read from the target -- it must still be the
 * same coroutine (probe id), at the park picked -- then the stack's top
 * copied in one process_vm_readv (STACKS_UNWIND_COPY bytes), last_ts read
 * again (changed: the copy is not that park's, and is dropped), and the
 * copy walked, after the coroutine may have moved on.  Round robin, once
 * per park (the model marks each park: no scan of the records that did
 * not move), within 1/STACKS_UNWIND_SHARE of the time (4% of a core),
 * once the first STACKS_UNWIND_BURST_NS of walking (each module's CFI and
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

#include "engine/calltrace/parked.h"
#include "engine/target/fcsave.h"
#include "engine/target/framecheck.h"
#include "engine/target/stackwalk.h"

/* The walker's tick (STACKS_UNWIND_IDLE_NS at most while nothing parks
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
#define STACKS_UNWIND_PERIOD_NS 10000000ull
#define STACKS_UNWIND_IDLE_NS 160000000ull
#define STACKS_UNWIND_SHARE 25u
/* The first walks read each module's CFI and symbols for the first time,
 * once: this much of the walker's busy time is not paced, so that a
 * program's first second is walked too (a first tick of 50 ms would
 * otherwise wait a second). */
#define STACKS_UNWIND_BURST_NS 300000000ull
#define STACKS_UNWIND_BUDGET 64u
/* A prime that found the symbols held is tried again this soon. */
#define STACKS_UNWIND_RETRY_NS 1000000ull
/* What the walk found, to record r if it still holds the coroutine the
 * walk was for (lock held): its name always (its entry is the same at any
 * park), WHERE and the parked stack only when the park walked is the one
 * the model shows (the target may be a park or more ahead of it). */
static void stacks_unwind_apply(struct stacks *sk,
				const struct stacks_unwind_job *j)
{
	struct model *m = sk->env.model;
	struct model_coro *c = &m->coro[j->r];
	const struct symtab_unwound *marks = &j->marks;
	const uint64_t *frames = j->frames;
	size_t n = j->n;
	uint64_t where = 0, id = 0, walked = 0;
	uint32_t name_was;
	unsigned kind_was;

	sk->unwind.raced += j->got == UNWIND_RACED;
	if (j->got != UNWIND_DONE || j->r >= m->used || !c->in_use ||
	    c->id != j->id)
		return;
	/* What the snapshots' copies show of it may change below (its
	 * name, WHERE, learned WHERE): model_touch. */
	model_touch(m, j->r);
	sk->unwind.walks++;
	sk->unwind.from_saved += j->from == UNWIND_FROM_SAVED;
	sk->unwind.from_probe += j->from == UNWIND_FROM_PROBE;
	sk->unwind.saved_refused += j->from == UNWIND_SAVED_REFUSED;
	name_was = c->name;
	kind_was = c->kind;
	/* Named through its station only while the station is still its
	 * own: a dead coroutine's station may have its next occupant. */
	if (model_station_coro(m, c->station) == c) {
		if (marks->entry >= 0)
			model_name_pc(m, c->station, frames[marks->entry]);
		else if (marks->inlined[0])
			model_name_text(m, c->station, marks->inlined);
	}
	if (c->name != name_was || c->kind != kind_was)
		sk->env.rec_learned(sk->env.ctx, c, name_was, kind_was);
	/* No frame of the program's own: the runtime frame that runs its
	 * code inlined says more than the switch's caller. */
	if (marks->where > 0)
		where = frames[marks->where];
	else if (marks->inlined_at > 0)
		where = frames[marks->inlined_at];
	/* The walked stack, kept in the parked store under its own id:
	 * the park's, or, learned, the next parks' at the same switch. */
	if (n && sk->ct.parked) {
		walked = parked_own_id(frames, (uint32_t)n);
		pthread_mutex_lock(&sk->ct.hot_lock);
		parked_put(sk->ct.parked, walked, frames, (uint32_t)n);
		pthread_mutex_unlock(&sk->ct.hot_lock);
	}
	/* Learned for this coroutine's next parks at the same switch, which
	 * may be too short to walk. */
	/* A pair of another coroutine's replaced: its learned WHERE is gone
	 * (engine_where_learned), which its copies must show. */
	model_touch(m, learned_put(&sk->unwind.learned, c->id, j->r,
				   j->switch_at, where, walked));
	if (j->last_ts != c->state_ts) {
		/* Parked since at that switch: the live view shows this frame,
		 * learned, from now on (engine_where_learned). */
		if (c->state == MODEL_SUSPENDED &&
		    c->last_addr == j->switch_at && where &&
		    where != j->switch_at &&
		    (j->r >= sk->unwind.cap ||
		     sk->unwind.where_ts[j->r] != c->state_ts))
			sk->env.rec_where(sk->env.ctx, c, where, walked, true);
		return;
	}
	if (where) {
		model_where(m, c->station, where);
		sk->unwind.where_ts[j->r] = c->state_ts; /* not learned */
	}
	if (n && sk->ct.parked) {
		uint64_t had[STACKS_UNWIND_MAX];
		size_t nhad = 0;

		/* The probe's own capture is a frame-pointer walk: it stops
		 * at the first frame built without one.  Ours replaces it
		 * when it went further. */
		pthread_mutex_lock(&sk->ct.hot_lock);
		if (m->parked[j->r])
			nhad = parked_frames(sk->ct.parked, m->parked[j->r],
					     had, STACKS_UNWIND_MAX);
		pthread_mutex_unlock(&sk->ct.hot_lock);
		if (n > nhad)
			id = walked;
		if (id)
			model_park(m, c->station, id);
	}
	sk->env.rec_where(sk->env.ctx, c, where, id, false);
}

/* done_ts for cap records (new ones zero). */
static bool stacks_unwind_grow(struct stacks *sk, uint32_t cap)
{
	uint64_t *p;

	if (sk->unwind.cap >= cap)
		return true;
	p = realloc(sk->unwind.done_ts, cap * sizeof(*p));
	if (!p)
		return false;
	memset(p + sk->unwind.cap, 0, (cap - sk->unwind.cap) * sizeof(*p));
	sk->unwind.done_ts = p;
	p = realloc(sk->unwind.where_ts, cap * sizeof(*p));
	if (!p)
		return false;
	memset(p + sk->unwind.cap, 0, (cap - sk->unwind.cap) * sizeof(*p));
	sk->unwind.where_ts = p;
	sk->unwind.cap = cap;
	return true;
}

void stacks_unwind_finish(struct stacks *sk)
{
	stacks_unwind_stop(sk);
	if (sk->unwind.pm_open)
		procmem_finish(&sk->unwind.pm);
	for (size_t k = 0; k < STACKS_UNWIND_PROCS; k++) {
		if (sk->unwind.procs[k].open)
			procmem_finish(&sk->unwind.procs[k].pm);
		framecheck_destroy(sk->unwind.procs[k].fc);
	}
	if (sk->unwind.inited) {
		pthread_cond_destroy(&sk->unwind.wake);
		pthread_mutex_destroy(&sk->unwind.mu);
	}
	free(sk->unwind.jobs);
	free(sk->unwind.done_ts);
	free(sk->unwind.where_ts);
	free(sk->unwind.copy);
	learned_finish(&sk->unwind.learned);
	memset(&sk->unwind, 0, sizeof(sk->unwind));
}

/* The tick's walks (lock held): the records parked since the last tick
 * (model_take_parks: no scan of the others), STACKS_UNWIND_BUDGET at
 * most, round robin, each in the memory of its process (pm: the
 * target's).  Returns how many. */
static unsigned stacks_unwind_pick(struct stacks *sk, uint64_t now,
				   struct procmem *pm,
				   struct stacks_unwind_job *job)
{
	struct model *m = sk->env.model;
	uint32_t took[STACKS_UNWIND_BUDGET], t;
	unsigned n = 0;

	if (!m->used || !stacks_unwind_grow(sk, m->cap))
		return 0;
	t = model_take_parks(m, &sk->unwind.cursor, took, STACKS_UNWIND_BUDGET);
	for (uint32_t k = 0; k < t; k++) {
		uint32_t r = took[k];
		const struct model_coro *c = &m->coro[r];

		if (!c->in_use || c->state != MODEL_SUSPENDED ||
		    sk->unwind.done_ts[r] == c->state_ts)
			continue;
		/* Harvested after `now` was read: the next tick's. */
		if (c->state_ts > now) {
			model_mark_park(m, r);
			continue;
		}
		bool child = c->pid && (pid_t)c->pid != sk->env.target->pid;
		struct framecheck *fc = stacks_fc(sk);
		struct stacks_fcsave *fcs = &sk->unwind.fcs;
		struct procmem *in =
			child ? stacks_unwind_child_pm(sk, (pid_t)c->pid, &fc,
						       &fcs)
			      : pm;

		if (!in)
			continue;
		sk->unwind.done_ts[r] = c->state_ts;
		job[n++] = (struct stacks_unwind_job){
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

unsigned stacks_unwind_parked(struct stacks *sk, uint64_t now)
{
	struct stacks_unwind_job *job = sk->unwind.jobs;
	struct procmem *pm;
	unsigned n, k;

	pthread_mutex_lock(sk->env.lock);
	pm = stacks_unwind_pm(sk);
	n = job ? stacks_unwind_pick(sk, now, pm, job) : 0;
	pthread_mutex_unlock(sk->env.lock);
	uint64_t until = clock_now_ns(CLOCK_MONOTONIC) +
			 STACKS_UNWIND_PERIOD_NS / STACKS_UNWIND_SHARE;

	/* Within the tick's share of time (the first walk always). */
	for (k = 0; k < n; k++) {
		if (k && clock_now_ns(CLOCK_MONOTONIC) > until)
			break;
		stacks_unwind_walk(sk, &job[k]);
		if (job[k].got == UNWIND_BUSY)
			break;
	}
	if (!n)
		return 0;
	pthread_mutex_lock(sk->env.lock);
	for (unsigned i = 0; i < k; i++)
		stacks_unwind_apply(sk, &job[i]);
	/* The names thread held the symbols, or the time is up: this walk
	 * and the ones not made are made at a later tick. */
	for (unsigned i = k; i < n; i++) {
		sk->unwind.done_ts[job[i].r] = 0;
		model_mark_park(sk->env.model, job[i].r);
	}
	pthread_mutex_unlock(sk->env.lock);
	return n;
}

static void *stacks_unwind_main(void *arg)
{
	struct stacks *sk = arg;
	struct stacks_unwind_state *u = &sk->unwind;
	uint64_t idle_ns = STACKS_UNWIND_PERIOD_NS;
	uint64_t burst = STACKS_UNWIND_BURST_NS; /* busy time left unpaced */
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
		retry = prime && !symtab_prime(sk->env.symtab);
		n = stacks_unwind_parked(sk, stacks_now(sk));
		t = clock_now_ns(CLOCK_THREAD_CPUTIME_ID);
		took = t > cpu ? t - cpu : 0;
		cpu = t;
		/* Busy 1/STACKS_UNWIND_SHARE of the time at most; a tick with
		 * nothing parked anew waits twice as long as the last, up to
		 * STACKS_UNWIND_IDLE_NS. */
		idle_ns = n ? STACKS_UNWIND_PERIOD_NS
			    : (idle_ns * 2 < STACKS_UNWIND_IDLE_NS
				       ? idle_ns * 2
				       : STACKS_UNWIND_IDLE_NS);
		wait = took > burst ? (took - burst) * (STACKS_UNWIND_SHARE - 1)
				    : 0;
		burst = took > burst ? 0 : burst - took;
		if (wait < idle_ns)
			wait = idle_ns;
		if (retry && wait > STACKS_UNWIND_RETRY_NS)
			wait = STACKS_UNWIND_RETRY_NS;
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
static void stacks_unwind_poke(struct stacks_unwind_state *u, bool *flag)
{
	pthread_mutex_lock(&u->mu);
	*flag = true;
	pthread_cond_signal(&u->wake);
	pthread_mutex_unlock(&u->mu);
}

void stacks_unwind_prime(struct stacks *sk)
{
	if (sk->unwind.inited)
		stacks_unwind_poke(&sk->unwind, &sk->unwind.prime);
}

bool stacks_unwind_start(struct stacks *sk, char *err, size_t errlen)
{
	struct stacks_unwind_state *u = &sk->unwind;
	pthread_condattr_t ca;
	int rc;

	/* Observer mode: no process to walk. */
	if (sk->env.target->pid <= 0 || u->running)
		return true;
	u->jobs = calloc(STACKS_UNWIND_BUDGET, sizeof(*u->jobs));
	u->copy = malloc(STACKS_UNWIND_COPY);
	/* Room for a switch address or two per coroutine; none: nothing
	 * learned, the walks go on. */
	(void)learned_init(&u->learned, 2 * sk->cfg.stations);
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
	rc = pthread_create(&u->thread, NULL, stacks_unwind_main, sk);
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

void stacks_unwind_stop(struct stacks *sk)
{
	struct stacks_unwind_state *u = &sk->unwind;

	if (!u->running)
		return;
	stacks_unwind_poke(u, &u->stop);
	pthread_join(u->thread, NULL);
	u->running = false;
}
