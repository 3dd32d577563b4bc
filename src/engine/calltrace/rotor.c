/*
 * rotor: the CallTrace "triple buffer" as the engine runs it.
 *
 * Three tables live in the region; writers (other processes, signal
 * handlers) only ever put into the one the ACTIVE word names.  A rotation
 * follows the six steps of docs/specs' CallTraceStorage, with the engine as
 * the processing side:
 *
 *   1. collect STANDBY -- it holds the traces preserved last time;
 *   2. clear it, give it a new instance epoch, and re-insert into it the
 *      traces the caller preserves (same ids), before anyone can see it;
 *   3. swap: ACTIVE <- that table, SCRATCH <- the old ACTIVE, STANDBY <- the
 *      old SCRATCH (one seq_cst store of ACTIVE; the other words are for
 *      people and debuggers);
 *   4. wait until no writer is inside the old ACTIVE (bounded), collect it;
 *   5. seal the union: standby and active traces, duplicates of a preserved
 *      id folded into one entry;
 *   6. clear the new STANDBY and park the preserved traces in it, so the
 *      next rotation reports them even if nobody puts them again.
 *
 * Protection.  Writers announce themselves in per-thread slots (ctslot.h;
 * pairing table in corotop/calltrace.h).  After the swap the engine scans
 * the 8192 slots once: a slot whose count is up and whose word names the
 * retired table is a writer still inside.  No new writer can enter it (its
 * re-check sees the new ACTIVE), so the engine then only polls those slots.
 * The wait is bounded (drain_timeout_ms): a writer that died inside a put
 * is reclaimed when its thread no longer exists (tgkill(pid, tid, 0) fails
 * with ESRCH); one still alive past the bound -- preempted for long, or
 * stuck -- leaves the table quarantined: neither collected nor cleared.
 * Every later rotation re-checks it and collects it once it has drained, so
 * weights arrive late but exactly once.  A table is only ever cleared, and
 * only ever becomes ACTIVE again, when no slot holds it.
 *
 * Hostile region.  The target can write anything anywhere in the region.
 * The engine keeps its own copy of the geometry, of the roles and of each
 * table's epoch and preserved ids, never reads them back, bounds every key
 * it collects (traceset.c) and every word it finds in a slot, and never
 * loops on region contents beyond the slot and bucket counts.  A lying
 * writer can make its own profile wrong, and at worst quarantine tables
 * (rotations are then skipped and say why); it can not crash or hang the
 * engine.  A writer that truncates the file would make the engine fault:
 * rotor_rotate checks the size first, which catches a truncation that
 * happened before the rotation, not one racing it; the engine runs every
 * call that touches the mapping under a SIGBUS landing pad of its own
 * (engine/stacks/rotation.c) and abandons the rotor after a fault.
 */
#define _GNU_SOURCE
#include "engine/calltrace/rotor.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/shmfile.h"
#include "wire/ctslot.h"
#include "wire/cttable.h"
#include "common/clock.h"

#define ROTOR_FILE "calltrace.shm"
#define ROTOR_POLL_MAX 256 /* busy slots polled without a full rescan */

struct rotor_table {
	struct cttable view;
	uint32_t epoch;
	bool pending;	/* writes of an ACTIVE period, not yet collected */
	bool kept_only; /* holds only preserved traces, not yet collected */
	bool clean;	/* all buckets zero (taken, or never used) */
	struct traceset_kept *kept; /* preserved ids in it, by bucket */
	size_t nkept;
};

struct rotor {
	struct rotor_config cfg;
	struct ct_geometry g;
	struct ct_header *hdr;
	struct ct_slot *slots;
	void *base; /* file.base */
	struct shmfile file;
	struct rotor_table t[CT_TABLES];
	unsigned act, stby, scr; /* private roles; the region's are copies */
	uint64_t gen;
	uint32_t next_epoch;
	struct traceset sets[2];
	unsigned cur; /* sets[cur] is the last rotation's union */
	struct rotor_stats st;
	char warning[768];
};

void rotor_config_defaults(struct rotor_config *cfg)
{
	cfg->max_traces = 65536;
	cfg->pool_frames = 16 * 65536;
	cfg->drain_timeout_ms = 100;
}

static void rotor_publish_header(struct rotor *r)
{
	struct ct_header *h = r->hdr;

	h->version = CT_VERSION;
	h->header_size = CT_HEADER_SIZE;
	h->tables = CT_TABLES;
	h->slots = CT_SLOTS;
	h->max_traces = r->g.max_traces;
	h->buckets = r->g.buckets;
	h->pool_frames = r->g.pool_frames;
	h->max_frames = CT_MAX_FRAMES;
	h->slots_offset = r->g.slots_offset;
	h->tables_offset = r->g.tables_offset;
	h->table_stride = r->g.table_stride;
	h->pool_offset = r->g.pool_offset;
	h->region_size = r->g.region_size;
	h->engine_pid = (uint32_t)getpid();
	h->table[0].epoch = r->t[0].epoch;
	/* relaxed: no writer exists yet (the target starts later). */
	atomic_store_explicit(&h->active, CT_ROLE(0, 0), memory_order_relaxed);
	atomic_store_explicit(&h->standby, CT_ROLE(0, 1), memory_order_relaxed);
	atomic_store_explicit(&h->scratch, CT_ROLE(0, 2), memory_order_relaxed);
	h->magic = CT_MAGIC;
}

static void rotor_announce(struct rotor *r, struct ctp_header *ctp)
{
	struct ctp_calltrace_desc *d = ctp_calltrace_desc(ctp);

	memset(d, 0, sizeof(*d));
	d->version = CTP_CT_VERSION;
	d->size = sizeof(*d);
	d->region_size = r->g.region_size;
	snprintf(d->name, sizeof(d->name), "%s", ROTOR_FILE);
	d->magic = CTP_CT_MAGIC; /* last: before it, the descriptor is absent */
}

struct rotor *rotor_create(const char *dir, struct ctp_header *ctp,
			   const struct rotor_config *cfg, char *err,
			   size_t errlen)
{
	struct rotor *r = calloc(1, sizeof(*r));

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->cfg = *cfg;
	r->file.fd = -1;
	if (ct_geometry(&r->g, cfg->max_traces, cfg->pool_frames) != 0) {
		snprintf(err, errlen,
			 "calltrace tables of %u traces and %u frames are out "
			 "of range (1..%u traces, 1..%u frames)",
			 cfg->max_traces, cfg->pool_frames, CT_MAX_TRACES_LIMIT,
			 CT_POOL_FRAMES_LIMIT);
		goto err_free;
	}
	if (!shmfile_create(&r->file, dir, ROTOR_FILE, r->g.region_size, err,
			    errlen))
		goto err_file;
	r->base = r->file.base;
	r->hdr = r->base;
	r->slots =
		(struct ct_slot *)(void *)((char *)r->base + r->g.slots_offset);
	for (unsigned i = 0; i < CT_TABLES; i++) {
		struct rotor_table *t = &r->t[i];

		cttable_view(&t->view, &r->hdr->table[i],
			     (char *)r->base + r->g.tables_offset +
				     (uint64_t)i * r->g.table_stride,
			     &r->g);
		t->kept = malloc(r->g.max_traces * sizeof(*t->kept));
		if (!t->kept) {
			snprintf(err, errlen, "out of memory");
			goto err_file;
		}
	}
	for (unsigned i = 0; i < 2; i++)
		traceset_init(&r->sets[i], (size_t)CT_TABLES * r->g.buckets,
			      (size_t)CT_TABLES * r->g.pool_frames);
	r->act = 0;
	r->stby = 1;
	r->scr = 2;
	r->t[0].epoch = 1;
	r->t[0].pending = true;
	r->t[1].clean = r->t[2].clean = true; /* a new file is all zero */
	r->next_epoch = 2;
	rotor_publish_header(r);
	if (ctp)
		rotor_announce(r, ctp);
	return r;

err_file:
	rotor_destroy(r);
	return NULL;
err_free:
	free(r);
	return NULL;
}

void rotor_unlink(const struct rotor *r)
{
	if (r)
		shmfile_unlink(&r->file);
}

void rotor_destroy(struct rotor *r)
{
	if (!r)
		return;
	shmfile_finish(&r->file);
	for (unsigned i = 0; i < CT_TABLES; i++)
		free(r->t[i].kept);
	for (unsigned i = 0; i < 2; i++)
		traceset_finish(&r->sets[i]);
	free(r);
}

const char *rotor_path(const struct rotor *r)
{
	return r->file.path;
}

void *rotor_base(const struct rotor *r)
{
	return r->base;
}

size_t rotor_size(const struct rotor *r)
{
	return r->g.region_size;
}

const struct traceset *rotor_traces(const struct rotor *r)
{
	return &r->sets[r->cur];
}

const struct traceset *rotor_prev_traces(const struct rotor *r)
{
	return &r->sets[r->cur ^ 1];
}

const char *rotor_warning(const struct rotor *r)
{
	return r->warning;
}

/* ---- writer protection: who is still inside a table ---- */

/*
 * Is the owner of a slot gone?  Only a thread that provably no longer exists
 * (or an owner id that can name no thread) is; anything else -- alive, or
 * another user's -- is treated as a writer that may still write.
 */
static bool rotor_owner_dead(uint64_t owner)
{
	pid_t pid = (pid_t)(owner >> 32), tid = (pid_t)(uint32_t)owner;

	if (pid <= 0 || tid <= 0)
		return true;
	return syscall(SYS_tgkill, pid, tid, 0) < 0 &&
	       (errno == ESRCH || errno == EINVAL);
}

static void rotor_reclaim(struct rotor *r, struct ct_slot *s, uint64_t owner)
{
	uint64_t expect = owner;

	/* release (r): pairs with a new owner's acquire claim (a). */
	atomic_store_explicit(&s->refs, 0, memory_order_release);
	if (atomic_compare_exchange_strong_explicit(&s->owner, &expect, 0,
						    memory_order_release,
						    memory_order_relaxed))
		r->st.reclaimed++;
}

/* Does slot s still hold table idx (reclaiming it if its thread is dead)? */
static bool rotor_slot_busy(struct rotor *r, struct ct_slot *s, unsigned idx,
			    bool check_live)
{
	uint64_t owner;

	if (!ctslot_holds(s, idx, &owner))
		return false;
	if (check_live && rotor_owner_dead(owner)) {
		rotor_reclaim(r, s, owner);
		return false;
	}
	return true;
}

/*
 * Full scan (m) for table idx.  Returns the number of busy slots; up to
 * ROTOR_POLL_MAX of them go to list.
 */
static size_t rotor_scan(struct rotor *r, unsigned idx, bool check_live,
			 uint32_t *list)
{
	size_t busy = 0;

	for (uint32_t i = 0; i < CT_SLOTS; i++) {
		if (!rotor_slot_busy(r, &r->slots[i], idx, check_live))
			continue;
		if (list && busy < ROTOR_POLL_MAX)
			list[busy] = i;
		busy++;
	}
	return busy;
}

static bool rotor_idle(struct rotor *r, unsigned idx)
{
	return rotor_scan(r, idx, true, NULL) == 0;
}

static void rotor_pause(unsigned round)
{
	if (round < 64) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	} else if (round < 256) {
		sched_yield();
	} else {
		struct timespec ts = {0, 50000};

		nanosleep(&ts, NULL);
	}
}

/* Wait (bounded) until no writer is inside table idx.  false: timed out. */
static bool rotor_drain(struct rotor *r, unsigned idx)
{
	uint64_t deadline = clock_now_ns(CLOCK_MONOTONIC) +
			    (uint64_t)r->cfg.drain_timeout_ms * 1000000u;
	uint32_t list[ROTOR_POLL_MAX];
	size_t busy = rotor_scan(r, idx, false, list);
	unsigned round = 0;

	if (busy == 0)
		return true;
	r->st.waits++;
	for (;;) {
		/* Liveness checks (a syscall each) only once a writer is
		 * slow: normally it leaves within microseconds. */
		bool live = round >= 256;
		size_t still = 0;

		if (busy > ROTOR_POLL_MAX) {
			busy = rotor_scan(r, idx, live, list);
		} else {
			for (size_t i = 0; i < busy; i++)
				if (rotor_slot_busy(r, &r->slots[list[i]], idx,
						    live))
					list[still++] = list[i];
			busy = still;
		}
		if (busy == 0)
			return true;
		if (clock_now_ns(CLOCK_MONOTONIC) > deadline)
			break;
		rotor_pause(round++);
	}
	snprintf(r->warning, sizeof(r->warning),
		 "calltrace: %zu writer(s) still inside table %u (epoch %u) "
		 "after %u ms; the table is quarantined and will be collected "
		 "once they leave",
		 busy, idx, r->t[idx].epoch, r->cfg.drain_timeout_ms);
	return false;
}

/* ---- tables ---- */

static void rotor_collect(struct rotor *r, struct traceset *into, unsigned i)
{
	struct rotor_table *t = &r->t[i];
	size_t before_c = into->corrupt, before_o = into->overflow;
	size_t first = into->n;

	r->st.traces +=
		traceset_take(into, t->view.b, r->g.buckets, t->view.pool,
			      r->g.pool_frames, t->epoch, t->kept, t->nkept);
	/* relaxed: published to writers by the ACTIVE store (k). */
	atomic_store_explicit(&t->view.meta->traces, 0, memory_order_relaxed);
	atomic_store_explicit(&t->view.meta->pool_used, 0,
			      memory_order_relaxed);
	t->nkept = 0;
	t->clean = true;
	for (size_t k = first; k < into->n; k++) {
		r->st.weight += into->e[k].weight;
		r->st.hits += into->e[k].hits;
	}
	r->st.corrupt += into->corrupt - before_c;
	r->st.overflow += into->overflow - before_o;
	t->pending = false;
	t->kept_only = false;
}

/*
 * Empty table i (no writer inside it: checked by the caller).  A table whose
 * traces were taken is empty already; the memset is for a table reused
 * without having been collected (never, in the six steps; kept for
 * robustness).  A target that scribbles on a table it is not writing only
 * spoils its own profile.
 */
static void rotor_clear(struct rotor *r, unsigned i)
{
	struct rotor_table *t = &r->t[i];

	/* Plain stores: published to writers by the ACTIVE store (k). */
	if (!t->clean)
		memset(t->view.b, 0,
		       (size_t)r->g.buckets * sizeof(struct ct_bucket));
	t->clean = true;
	/* relaxed: published to writers by the ACTIVE store (k). */
	atomic_store_explicit(&t->view.meta->traces, 0, memory_order_relaxed);
	atomic_store_explicit(&t->view.meta->pool_used, 0,
			      memory_order_relaxed);
	t->nkept = 0;
	t->pending = t->kept_only = false;
}

static int rotor_kept_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct traceset_kept *)a)->index;
	uint32_t y = ((const struct traceset_kept *)b)->index;

	return (x > y) - (x < y);
}

/*
 * Frames of an id put during the period that is ending, into out: its
 * bucket in the ACTIVE table, which is collected only after the swap.  A
 * coroutine that parked since the last rotation names such an id, and
 * without this it would get a new id at every rotation (it parks again in
 * the new ACTIVE, where nothing kept its stack).  Writers may be inserting
 * next to the bucket meanwhile: a key seen non-zero (acquire, pairs with
 * the inserter's release CAS (j), corotop/calltrace.h) has its frames in
 * the pool, and they never change in this table's life.  Bounded like any
 * key the collector reads.
 */
static bool rotor_active_frames(struct rotor *r, uint64_t id, uint64_t *out,
				uint32_t *n)
{
	const struct rotor_table *t = &r->t[r->act];
	uint32_t idx = (uint32_t)id;
	const uint64_t *f;
	uint64_t key;

	if ((uint32_t)(id >> 32) != t->epoch || idx > t->view.mask)
		return false;
	key = atomic_load_explicit(&t->view.b[idx].key, memory_order_acquire);
	f = key ? cttable_frames(&t->view, key) : NULL;
	if (!f)
		return false;
	*n = ct_key_n(key);
	memcpy(out, f, *n * sizeof(*out));
	return true;
}

/* Re-insert the preserved ids (frames looked up in the two sets, or, at
 * step 2, in the ACTIVE table being retired). */
static void rotor_preserve(struct rotor *r, unsigned i, const uint64_t *ids,
			   size_t n, bool count)
{
	struct rotor_table *t = &r->t[i];
	const struct traceset *cur = &r->sets[r->cur];
	const struct traceset *prev = &r->sets[r->cur ^ 1];
	uint64_t live[CT_MAX_FRAMES];

	for (size_t k = 0; k < n; k++) {
		const struct traceset_entry *e = traceset_find(cur, ids[k]);
		const uint64_t *frames = NULL;
		uint32_t idx, nframes = 0;

		if (!e)
			e = traceset_find(prev, ids[k]);
		if (e && e->nframes <= CT_MAX_FRAMES) {
			frames = e->frames;
			nframes = e->nframes;
		} else if (count &&
			   rotor_active_frames(r, ids[k], live, &nframes)) {
			frames = live;
		}
		if (!frames) {
			r->st.preserve_missing += count;
			continue;
		}
		if (t->nkept >= r->g.max_traces ||
		    cttable_claim(&t->view, frames, nframes,
				  ct_hash(frames, nframes), false,
				  &idx) != CT_CLAIM_INSERTED) {
			r->st.preserve_failed += count;
			continue;
		}
		t->view.b[idx].id = ids[k];
		t->clean = false;
		t->kept[t->nkept].index = idx;
		t->kept[t->nkept].id = ids[k];
		t->nkept++;
		r->st.preserved += count;
	}
	qsort(t->kept, t->nkept, sizeof(*t->kept), rotor_kept_cmp);
}

static bool rotor_usable(struct rotor *r, unsigned i)
{
	return !r->t[i].pending && rotor_idle(r, i);
}

static bool rotor_size_ok(struct rotor *r)
{
	long long now;

	if (shmfile_size_ok(&r->file, &now))
		return true;
	snprintf(r->warning, sizeof(r->warning),
		 "calltrace: %s was truncated (now %lld bytes, need %llu); "
		 "not touching it again",
		 r->file.path, now, (unsigned long long)r->g.region_size);
	return false;
}

bool rotor_rotate(struct rotor *r, const uint64_t *preserve, size_t npreserve)
{
	struct traceset *cur;
	unsigned next, old, third;

	r->warning[0] = '\0';
	r->cur ^= 1; /* the previous union stays readable as sets[cur ^ 1] */
	cur = &r->sets[r->cur];
	traceset_clear(cur);
	if (!rotor_size_ok(r)) {
		traceset_seal(cur); /* empty: never report a union twice */
		return false;
	}

	/* 0. Quarantined tables whose writers have left since. */
	for (unsigned i = 0; i < CT_TABLES; i++)
		if (i != r->act && r->t[i].pending && rotor_idle(r, i)) {
			rotor_collect(r, cur, i);
			r->st.late++;
		}
	/* 1. Collect STANDBY: last rotation's preserved traces. */
	if (r->t[r->stby].kept_only)
		rotor_collect(r, cur, r->stby);
	traceset_seal(cur);

	/* 2. Clear STANDBY (or, if a writer still holds it, SCRATCH) with a
	 * new epoch, and put the preserved traces in first. */
	if (rotor_usable(r, r->stby))
		next = r->stby;
	else if (rotor_usable(r, r->scr))
		next = r->scr;
	else {
		r->st.skipped++;
		if (!r->warning[0])
			snprintf(r->warning, sizeof(r->warning),
				 "calltrace: no table free of writers to "
				 "rotate in; ACTIVE stays table %u",
				 r->act);
		return false;
	}
	rotor_clear(r, next);
	r->t[next].epoch = r->next_epoch++;
	if (r->next_epoch == 0) /* 2^32 rotations: ids start over */
		r->next_epoch = 1;
	r->t[next].view.meta->epoch = r->t[next].epoch;
	rotor_preserve(r, next, preserve, npreserve, true);

	/* 3. Swap.  seq_cst (k): Dekker with the writers' (d)/(e); its
	 * release publishes the clear, the epoch and the preserved buckets. */
	old = r->act;
	third = CT_TABLES * (CT_TABLES - 1) / 2 - next - old;
	r->gen++;
	atomic_store_explicit(&r->hdr->active, CT_ROLE(r->gen, next),
			      memory_order_seq_cst);
	r->act = next;
	r->scr = old;
	r->stby = third;
	/* relaxed: informational copies; no writer reads them. */
	atomic_store_explicit(&r->hdr->standby, CT_ROLE(r->gen, third),
			      memory_order_relaxed);
	atomic_store_explicit(&r->hdr->scratch, CT_ROLE(r->gen, old),
			      memory_order_relaxed);
	r->t[next].pending = true;
	r->t[next].clean = false;
	r->st.rotations++;

	/* 4. Wait for the old ACTIVE's writers, then collect it. */
	if (rotor_drain(r, old))
		rotor_collect(r, cur, old);
	else
		r->st.quarantined++;

	/* 5. The union of this rotation. */
	traceset_seal(cur);

	/* 6. Park the preserved traces in the new STANDBY. */
	if (rotor_usable(r, third)) {
		rotor_clear(r, third);
		rotor_preserve(r, third, preserve, npreserve, false);
		r->t[third].kept_only = r->t[third].nkept > 0;
	}
	return true;
}

void rotor_peek(const struct rotor *r, uint64_t *active_traces,
		uint64_t *dropped)
{
	/* relaxed: statistics; the rotation itself orders what it reads. */
	*active_traces = atomic_load_explicit(&r->t[r->act].view.meta->traces,
					      memory_order_relaxed);
	*dropped = atomic_load_explicit(&r->hdr->dropped, memory_order_relaxed);
}

uint32_t rotor_max_traces(const struct rotor *r)
{
	return r->g.max_traces;
}

void rotor_stats(const struct rotor *r, struct rotor_stats *out)
{
	struct ct_header *h = r->hdr;

	*out = r->st;
	/* relaxed: statistics written by the writers. */
	out->dropped = atomic_load_explicit(&h->dropped, memory_order_relaxed);
	out->dropped_weight =
		atomic_load_explicit(&h->dropped_weight, memory_order_relaxed);
	out->drop_no_slot =
		atomic_load_explicit(&h->drop_no_slot, memory_order_relaxed);
	out->drop_full =
		atomic_load_explicit(&h->drop_full, memory_order_relaxed);
	out->drop_raced =
		atomic_load_explicit(&h->drop_raced, memory_order_relaxed);
	out->epoch = r->t[r->act].epoch;
	out->active = r->act;
}
