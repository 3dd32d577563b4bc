/*
 * rotation: the engine's CallTrace side over time.
 *
 * Lifecycle.  In launch mode the engine creates the CallTrace region
 * (rotor.c) in the cTP region's private directory and announces it in the
 * cTP header before the target starts, so the probe finds it when it
 * attaches; it is unlinked with the cTP region (engine_unlink, async-
 * signal-safe) and destroyed before the directory is removed.  An observer
 * (--shm) owns no region and has no hot stacks.
 *
 * Cadence (harvest thread).  Every CT_CHECK_NS the harvest loop peeks at
 * two words of the region -- distinct stacks in ACTIVE, dropped puts --
 * and rotates when
 *   - ct_rotate_ms passed and either moved since the last rotation (a
 *     new stack was put: every sample is one, its tag names the coroutine
 *     and ACTIVE starts each period with only the preserved parked
 *     stacks; or a put was dropped), or
 *   - ACTIVE received half its capacity in new stacks since the last
 *     rotation (so it never fills between two periods), or
 *   - ct_idle_rotate_ms passed and coroutines are parked at stacks
 *     (those are preserved: a put that only adds weight to one in ACTIVE
 *     moves neither word, and a new one reaches ACTIVE a rotation after
 *     it is first named), or a quarantined table waits to be collected.
 * Coroutine switches alone never cause a rotation: a suspend that parks at
 * a new stack put it first, and one parked at a preserved stack needs
 * nothing.  A suspend harvested parked at an id the last rotation did not
 * preserve counts as moved too (ct.parks): its stack was put just before
 * that rotation, which listed the ids before the harvest saw the park, so
 * it is only in that rotation's union -- the next one still reads it
 * (parked_update's prev), a later one would not, and nothing else might
 * ask for the next one for ct_idle_rotate_ms, or ever.  A target that
 * puts nothing therefore costs one peek per
 * harvest wakeup and no rotation at all, whatever its switch rate; one
 * with parked stacks, a rotation per ct_idle_rotate_ms.  The peek only
 * runs when the harvest loop does: a sleeping engine wakes at least every
 * sleep_max_ms (1 s).
 *
 * One rotation.
 *   1. Under the engine lock: the trace ids live coroutines are parked at
 *      (model.parked, set from the suspend events' CTP_EPOCH_TRACE_OFFSET
 *      word, or by census.c for a stack the engine walked itself),
 *      deduplicated and sorted: the liveness list (the engine's own ids
 *      last: the rotor preserves only the CallTrace ones).
 *   2. rotor_rotate with that list, so those traces keep their ids (the
 *      drain is bounded by the rotor: a stuck writer quarantines a table,
 *      it never blocks the harvest past drain_timeout_ms).
 *   3. Under the engine lock: each sampled trace's tag resolved to a model
 *      id -- CT_TAG_CORO's station must be live in the harvest with the
 *      same low 16 bits of generation, else the sample belongs to an
 *      earlier occupant and is credited to nobody.
 *   4. Under the hot lock: the union into hotstacks, the parked frames
 *      into parked.
 *   5. Without either lock: the frames of new stacks named through symtab
 *      into framenames, within CT_NAME_BUDGET_NS -- CT_FINAL_NAME_BUDGET_NS
 *      at the last rotation, which has the stacks a target that exited
 *      left behind.  Those are named from the modules it had: the peek
 *      primes the symbols (symtab_prime) as soon as stacks arrive, the
 *      symbolizer opens each module's file as it learns of it, and keeps
 *      them after the exit.
 * The engine lock is held only for the two linear passes (1, 3), never
 * across the rotation or the aggregation, so snapshots are not delayed.
 *
 * Faults.  The region is shared with the target, which can truncate it:
 * every access to the mapping (peek, rotation) runs under a SIGBUS landing
 * pad of its own, nested inside the harvest thread's.  A fault abandons the
 * rotor for good (its state may be half-updated; it is only unmapped at
 * destroy) and says so in engine_calltrace_stats; harvesting goes on.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/stacks/stacks_internal.h"
#include "engine/symbols/framenames.h"
#include "engine/calltrace/hotstacks.h"
#include "engine/calltrace/parked.h"
#include "engine/calltrace/rotor.h"
#include "engine/target/framecheck.h"

#include "wire/cttable.h"
#include "common/clock.h"
#include "common/grow.h"

#define CT_CHECK_NS 50000000ull	      /* peek at most every 50 ms */
#define CT_NAME_BUDGET_NS 20000000ull /* naming per rotation */
/* ... and at the last one: the UI waits for it once, and a target that
 * exited left its last stacks to it (the first lookups in a module load
 * its DWARF: tens of ms each). */
#define CT_FINAL_NAME_BUDGET_NS 2000000000ull
#define CT_NAME_CHUNK 64
#define CT_NAMES_MAX 65536u	  /* frame names kept */
#define CT_NAMES_BYTES (8u << 20) /* ... and their strings */

/*
 * The check on a stored stack (traceset_keep_fn), while the target is the
 * only process writing to the region: every frame in the target's code
 * (framecheck.c, FRAMECHECK_IN_CODE: a put holds addresses "as the caller
 * chooses"), the stack cut at the first that is not, and the cut counted with
 * the engine's walks (JSON's `frames`).  Called under the hot lock, as the
 * stores copy a stack: the hot stacks on every rotation a stack gains weight
 * in, the parked store once per stack.
 */
static size_t stacks_ct_keep(void *ctx, const uint64_t *frames, size_t n)
{
	struct stacks *sk = ctx;
	enum framecheck_verdict why;
	size_t k;

	/* relaxed: a hint, set on this (the harvest) thread (others). */
	if (atomic_load_explicit(&sk->ct.others, memory_order_relaxed))
		return n; /* maybe another process's: its own mappings */
	k = framecheck_walk(stacks_fc(sk), frames, n, FRAMECHECK_IN_CODE, &why);
	framecheck_count(stacks_fc(sk), why);
	return k;
}

bool stacks_ct_create(struct stacks *sk, char *err, size_t errlen)
{
	struct stacks_ct *ct = &sk->ct;
	struct rotor_config rc;
	uint64_t frames = 16ull * sk->cfg.ct_traces;

	ct->last_rotate = clock_now_ns(CLOCK_MONOTONIC);
	if (!sk->env.region->owner || !sk->cfg.ct_traces)
		return true;
	rotor_config_defaults(&rc);
	rc.max_traces = sk->cfg.ct_traces;
	rc.pool_frames = frames > CT_POOL_FRAMES_LIMIT ? CT_POOL_FRAMES_LIMIT
						       : (uint32_t)frames;
	ct->hot = hotstacks_create(&(struct hotstacks_config){
		.window_s = sk->cfg.hot.window_s,
		.half_life_s = sk->cfg.hot.half_life_s,
		.max_stacks = sk->cfg.hot.max_stacks,
		.max_coro = sk->cfg.hot.max_coro,
		.keep = stacks_ct_keep,
		.keep_ctx = sk,
	});
	ct->parked = parked_create(sk->cfg.hot.max_stacks, stacks_ct_keep, sk);
	ct->names = framenames_create(CT_NAMES_MAX, CT_NAMES_BYTES);
	if (sk->cfg.record)
		ct->dead_parked =
			calloc(STACKS_CT_DEAD_MAX, sizeof(*ct->dead_parked));
	if (!ct->hot || !ct->parked || !ct->names ||
	    (sk->cfg.record && !ct->dead_parked)) {
		snprintf(err, errlen, "out of memory for the hot stacks");
		return false;
	}
	ct->rotor = rotor_create(sk->env.region->dir, sk->env.region->hdr, &rc,
				 err, errlen);
	return ct->rotor != NULL && stacks_samples_create(sk, err, errlen);
}

void stacks_ct_destroy(struct stacks *sk)
{
	struct stacks_ct *ct = &sk->ct;

	stacks_samples_destroy(sk);
	rotor_destroy(ct->rotor);
	hotstacks_destroy(ct->hot);
	parked_destroy(ct->parked);
	framenames_destroy(ct->names);
	free(ct->preserve);
	free(ct->seen);
	free(ct->owner);
	free(ct->dead_parked);
	ct->dead_parked = NULL;
	ct->ndead_parked = 0;
	free(ct->top);
	ct->top = NULL;
	ct->top_cap = 0;
	ct->rotor = NULL;
	ct->hot = NULL;
	ct->parked = NULL;
	ct->names = NULL;
	ct->preserve = ct->seen = ct->owner = NULL;
}

void stacks_ct_unlink(const struct stacks *sk)
{
	rotor_unlink(sk->ct.rotor);
	stacks_samples_unlink(sk);
}

/* ---- faults ---- */

static void stacks_ct_fail(struct stacks *sk, const char *what)
{
	struct stacks_ct *ct = &sk->ct;

	ct->dead = true;
	pthread_mutex_lock(&ct->hot_lock);
	ct->failed = true;
	snprintf(ct->warning, sizeof(ct->warning),
		 "calltrace: %s faulted (SIGBUS: %s was truncated?); hot "
		 "stacks stopped, harvesting goes on",
		 what, rotor_path(ct->rotor));
	pthread_mutex_unlock(&ct->hot_lock);
}

/*
 * fn(sk, arg) under a SIGBUS landing pad of its own; false when it faulted
 * (the rotor is then abandoned).  The thread's outer pad (the harvest
 * loop's, or none) is put back either way.
 */
static bool stacks_ct_guard(struct stacks *sk, const char *what,
			    void (*fn)(struct stacks *sk, void *arg), void *arg)
{
	sigjmp_buf jb;
	sigjmp_buf *volatile outer = *sk->env.guard();

	if (sigsetjmp(jb, 1)) {
		*sk->env.guard() = outer;
		stacks_ct_fail(sk, what);
		return false;
	}
	*sk->env.guard() = &jb;
	fn(sk, arg);
	*sk->env.guard() = outer;
	return true;
}

struct stacks_ct_rot {
	bool rotated;
	uint64_t active, dropped;
	struct rotor_stats rs;
	char warning[256];
};

static void stacks_ct_do_peek(struct stacks *sk, void *arg)
{
	struct stacks_ct_rot *o = arg;

	rotor_peek(sk->ct.rotor, &o->active, &o->dropped);
}

static void stacks_ct_do_rotate(struct stacks *sk, void *arg)
{
	struct stacks_ct *ct = &sk->ct;
	struct stacks_ct_rot *o = arg;

	o->rotated = rotor_rotate(ct->rotor, ct->preserve, ct->npreserve_ct);
	rotor_stats(ct->rotor, &o->rs);
	snprintf(o->warning, sizeof(o->warning), "%s",
		 rotor_warning(ct->rotor));
	rotor_peek(ct->rotor, &o->active, &o->dropped);
}

/* ---- the liveness list (engine lock held) ---- */

static int stacks_ct_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Real trace ids have an epoch (>= 1) in the high half. */
static bool stacks_ct_is_id(uint64_t id)
{
	return id >> 32 != 0;
}

/* id into the preserved list, once (the seen set has room for twice as
 * many as there can be). */
static void stacks_ct_take(void *ctx, uint64_t id)
{
	struct stacks_ct *ct = ctx;
	size_t i, slots = ct->seen_slots;

	if (!stacks_ct_is_id(id) || ct->npreserve == ct->cap_preserve)
		return;
	for (i = ct_mix64(id) & (slots - 1); ct->seen[i] && ct->seen[i] != id;
	     i = (i + 1) & (slots - 1))
		;
	if (ct->seen[i])
		return;
	ct->seen[i] = id;
	ct->preserve[ct->npreserve++] = id;
}

static void stacks_ct_count(void *ctx, uint64_t id)
{
	(void)id;
	(*(size_t *)ctx)++;
}

/* The distinct trace ids live coroutines are parked at, sorted: those of
 * the records, of coroutines that died parked since the last rotation,
 * and the walked stacks the learned WHERE of short parks shows. */
static void stacks_ct_parked_ids(struct stacks *sk)
{
	struct stacks_ct *ct = &sk->ct;
	const struct model *m = sk->env.model;
	size_t cand = 0, slots = 16;

	ct->npreserve = ct->npreserve_ct = 0;
	for (uint32_t r = 0; r < m->used; r++)
		cand += stacks_ct_is_id(m->parked[r]);
	cand += ct->ndead_parked;
	learned_stacks(&sk->unwind.learned, stacks_ct_count, &cand);
	if (!cand)
		return;
	while (slots < 2 * cand)
		slots *= 2;
	if (slots > ct->seen_slots) {
		uint64_t *s = realloc(ct->seen, slots * sizeof(*s));

		if (!s)
			return; /* nothing preserved this time */
		ct->seen = s;
		ct->seen_slots = slots;
	}
	if (!grow_array((void **)&ct->preserve, &ct->cap_preserve, cand,
			sizeof(*ct->preserve)))
		return;
	memset(ct->seen, 0, ct->seen_slots * sizeof(*ct->seen));
	for (uint32_t r = 0; r < m->used; r++)
		stacks_ct_take(ct, m->parked[r]);
	for (size_t k = 0; k < ct->ndead_parked; k++)
		stacks_ct_take(ct, ct->dead_parked[k]);
	learned_stacks(&sk->unwind.learned, stacks_ct_take, ct);
	ct->ndead_parked = 0; /* preserved by this rotation, once */
	qsort(ct->preserve, ct->npreserve, sizeof(*ct->preserve),
	      stacks_ct_u64_cmp);
	/* The engine's own ids (census stacks, PARKED_OWN_ID) sort last:
	 * the parked store keeps them, the rotor has never seen them. */
	ct->npreserve_ct = ct->npreserve;
	while (ct->npreserve_ct &&
	       (ct->preserve[ct->npreserve_ct - 1] & PARKED_OWN_ID))
		ct->npreserve_ct--;
}

/* ---- tags -> coroutines (engine lock held) ---- */

/* The model id of the coroutine a CT_TAG_CORO tag names, if it is still
 * the station's occupant; else 0. */
static uint64_t stacks_ct_owner(struct stacks *sk, uint64_t tag)
{
	uint32_t st = CT_TAG_CORO_INDEX(tag), r;
	const struct harvest_station *hs;

	if (st >= sk->env.harvest->max || st >= sk->env.model->stations)
		return 0;
	hs = &sk->env.harvest->state[st];
	if (hs->state != HARVEST_LIVE || !harvest_station_ours(hs) ||
	    (uint16_t)hs->gen != CT_TAG_CORO_GEN16(tag))
		return 0;
	r = sk->env.model->by_station[st];
	return r == MODEL_NONE ? 0 : sk->env.model->coro[r].id;
}

uint64_t *stacks_ct_resolve(struct stacks *sk, const struct traceset *u)
{
	struct stacks_ct *ct = &sk->ct;

	if (!grow_array((void **)&ct->owner, &ct->cap_owner, u->n ? u->n : 1,
			sizeof(*ct->owner)))
		return NULL;
	for (size_t i = 0; i < u->n; i++) {
		const struct traceset_entry *t = &u->e[i];
		uint64_t tag =
			t->nframes && t->frames ? t->frames[t->nframes - 1] : 0;

		ct->owner[i] = (tag & CT_TAG_MASK) == CT_TAG_CORO
				       ? stacks_ct_owner(sk, tag)
				       : 0;
	}
	return ct->owner;
}

/* ---- naming new frames while the target lives ---- */

static void stacks_ct_name(struct stacks *sk, uint64_t now, uint64_t budget)
{
	struct stacks_ct *ct = &sk->ct;
	struct hot_frame todo[CT_NAME_CHUNK];
	struct symtab_sym sym[CT_NAME_CHUNK];
	uint64_t key[CT_NAME_CHUNK];
	bool ok[CT_NAME_CHUNK];
	uint64_t deadline = now + budget;

	/* target.pid is written before the threads start. */
	if (!sk->env.target->pid)
		return;
	while (clock_now_ns(CLOCK_MONOTONIC) < deadline) {
		struct framename have;
		size_t n, k = 0;

		pthread_mutex_lock(&ct->hot_lock);
		n = hotstacks_new_frames(ct->hot, todo, CT_NAME_CHUNK);
		for (size_t i = 0; i < n; i++) {
			uint64_t at = framename_key(todo[i].addr, todo[i].leaf);

			if (!framenames_get(ct->names, at, &have))
				key[k++] = at;
		}
		pthread_mutex_unlock(&ct->hot_lock);
		if (!n)
			return;
		for (size_t i = 0; i < k; i++)
			ok[i] = symtab_lookup(sk->env.symtab, key[i], &sym[i]);
		pthread_mutex_lock(&ct->hot_lock);
		for (size_t i = 0; i < k; i++)
			if (ok[i])
				framenames_put(ct->names, key[i], &sym[i]);
		pthread_mutex_unlock(&ct->hot_lock);
	}
}

/* ---- rotation ---- */

static void stacks_ct_rotate(struct stacks *sk, uint64_t now, uint64_t budget)
{
	struct stacks_ct *ct = &sk->ct;
	struct stacks_ct_rot o;
	const struct traceset *u;
	uint64_t *owner;

	pthread_mutex_lock(sk->env.lock);
	stacks_ct_parked_ids(sk);
	pthread_mutex_unlock(sk->env.lock);
	ct->parks_mark = ct->parks;
	if (!stacks_ct_guard(sk, "rotation", stacks_ct_do_rotate, &o))
		return;
	ct->last_rotate = now;
	ct->active_mark = o.active;
	ct->dropped_mark = o.dropped;
	u = rotor_traces(ct->rotor);
	pthread_mutex_lock(sk->env.lock);
	owner = stacks_ct_resolve(sk, u);
	pthread_mutex_unlock(sk->env.lock);
	pthread_mutex_lock(&ct->hot_lock);
	hotstacks_ingest(ct->hot, u, owner, now);
	parked_update(ct->parked, u, rotor_prev_traces(ct->rotor), ct->preserve,
		      ct->npreserve);
	ct->rs = o.rs;
	if (o.warning[0] || o.rotated)
		snprintf(ct->warning, sizeof(ct->warning), "%s", o.warning);
	pthread_mutex_unlock(&ct->hot_lock);
	stacks_samples_ingest(sk, now);
	stacks_ct_name(sk, now, budget);
}

void stacks_ct_poll(struct stacks *sk, uint64_t now)
{
	struct stacks_ct *ct = &sk->ct;
	struct stacks_ct_rot p;
	uint64_t since, grown;
	bool moved, idle;

	if (!ct->rotor || ct->dead || now < ct->next_check)
		return;
	ct->next_check = now + CT_CHECK_NS;
	if (!stacks_ct_guard(sk, "a peek at the CallTrace region",
			     stacks_ct_do_peek, &p))
		return;
	/* A target that put stacks gets its symbols made (and refreshed
	 * each second) while it runs: it may exit before the next rotation,
	 * whose stacks are then named from the modules it had. */
	if (p.active || p.dropped)
		symtab_prime(sk->env.symtab);
	since = now - ct->last_rotate;
	grown = p.active > ct->active_mark ? p.active - ct->active_mark : 0;
	moved = p.active != ct->active_mark || p.dropped != ct->dropped_mark ||
		ct->parks != ct->parks_mark || stacks_samples_waiting(sk);
	/* Idle rotations only when something could be waiting: a weight-only
	 * put needs a stack already in ACTIVE (the preserved ones), preserved
	 * stacks reach ACTIVE a rotation after they are first named, and a
	 * quarantined table is collected by a later rotation. */
	idle = ct->active_mark || ct->npreserve ||
	       ct->rs.quarantined != ct->rs.late;
	if (grown >= rotor_max_traces(ct->rotor) / 2 ||
	    (idle && since >= (uint64_t)sk->cfg.ct_idle_rotate_ms * 1000000u) ||
	    (moved && since >= (uint64_t)sk->cfg.ct_rotate_ms * 1000000u))
		stacks_ct_rotate(sk, now, CT_NAME_BUDGET_NS);
}

void stacks_ct_final(struct stacks *sk)
{
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC);

	if (!sk->ct.rotor || sk->ct.dead)
		return;
	/* What the sampler left in the snapshot ring. */
	stacks_samples_final(sk);
	stacks_ct_rotate(sk, now, CT_FINAL_NAME_BUDGET_NS);
}
