/*
 * harvest: the reading side of the cTP seqlock, with exact loss accounting.
 *
 * Each slot is read the way upstream engines read it (D, E, F in ctp.h):
 * acquire-load seq; skip it when odd or unchanged; copy the payload; re-load
 * seq after an acquire fence and throw the copy away if it moved.
 *
 * Every slot's seq names an event number n (ctp_seq_event), in both the
 * corotop station style and the upstream per-slot style, and event n always
 * lives in slot n % 8.  The harvester keeps, per station, the next number it
 * owes its sink (`expected`) and walks forward from it:
 *   - slot holds a good copy of exactly `expected`: deliver it;
 *   - slot shows a number beyond `expected` (complete, torn or in progress):
 *     `expected` was overwritten before we read it, count it lost;
 *   - otherwise `expected` has not been written yet: stop.
 * So each event written is either delivered once, in order, or counted lost
 * once, and harvested + lost == written holds exactly.  When every slot is
 * already past `expected` (the writer lapped us by more than a ring), the
 * walk jumps to the smallest number present and counts the gap at once, so a
 * lying seq costs O(1), never a long loop.
 *
 * Station lifecycle.  A corotop-written station announces each occupant by
 * bumping ctp_station_ext.gen (G/H); its death by is_dead (I/J), which is
 * read *before* the final slot pass so that every event written before the
 * flag is delivered before `close`.  Only then, when we own the region, is
 * the station pushed onto the free list (K).  Upstream stations are never
 * recycled: they are opened when allocated and closed when is_dead is set.
 */
#include "harvest.h"

#include <stdlib.h>
#include <string.h>

#include "../common/freelist.h"

#ifdef HARVEST_TEST_HOOKS
void (*harvest_test_after_copy)(struct ctp_epoch *e);
#endif

/* Safety bound on the walk per station per scan (untrusted seqs). */
#define HARVEST_WALK_MAX 64

bool harvest_init(struct harvest *h, struct ctp_header *hdr, uint32_t max,
		  bool recycle)
{
	memset(h, 0, sizeof(*h));
	h->hdr = hdr;
	h->stations = (struct ctp_station *)((char *)hdr + CTP_HEADER_SIZE);
	h->max = max;
	h->recycle = recycle;
	h->state = calloc(max ? max : 1, sizeof(*h->state));
	/* Read once: a writer may scribble on the header later. */
	h->dirty_shift = hdr->ext.dirty_shift;
	h->dirty_ok = hdr->ext.magic == CTP_HX_MAGIC &&
		      (hdr->ext.flags & CTP_HX_DIRTY) && h->dirty_shift < 32;
	return h->state != NULL;
}

void harvest_finish(struct harvest *h)
{
	free(h->state);
	h->state = NULL;
}

uint32_t harvest_allocated(const struct harvest *h)
{
	/* acquire: pairs with nothing stronger than the writer's relaxed
	 * fetch_add; station contents are ordered by gen and seq instead. */
	uint32_t a = atomic_load_explicit(&h->hdr->allocated_count,
					  memory_order_acquire);

	return a < h->max ? a : h->max;
}

struct harvest_ring {
	uint64_t obs[CTP_SLOTS]; /* event number seen in the slot, or MAX */
	uint64_t raw[CTP_SLOTS]; /* the last seq value read from the slot */
	bool valid[CTP_SLOTS];	 /* ev[] holds a good copy of obs[] */
	struct harvest_event ev[CTP_SLOTS];
};

static void harvest_read_ring(struct harvest *h, uint32_t i,
			      struct harvest_station *st,
			      struct harvest_ring *r)
{
	struct ctp_station *s = &h->stations[i];
	int style = st->station_style;

	for (unsigned k = 0; k < CTP_SLOTS; k++) {
		struct ctp_epoch *e = &s->slots[k];
		struct harvest_event *ev = &r->ev[k];
		uint64_t seq, again;

		r->valid[k] = false;
		/* (D) acquire pairs with the writer's release (C). */
		seq = atomic_load_explicit(&e->seq, memory_order_acquire);
		r->raw[k] = seq;
		r->obs[k] = ctp_seq_event(seq, k, style);
		if ((seq & 1) || seq == st->last_seen[k])
			continue;
		/* (E) relaxed copies; validated by the re-check below. */
		ev->ts = __atomic_load_n(&e->timestamp, __ATOMIC_RELAXED);
		ev->tid = __atomic_load_n(&e->tid, __ATOMIC_RELAXED);
		ev->addr = __atomic_load_n(&e->addr, __ATOMIC_RELAXED);
		ev->is_active =
			__atomic_load_n(&e->is_active, __ATOMIC_RELAXED);
		ev->check = __atomic_load_n(
			(uint64_t *)(void *)&e
				->reserved[CTP_EPOCH_CHECK_OFFSET],
			__ATOMIC_RELAXED);
		ev->trace = __atomic_load_n(
			(uint64_t *)(void *)&e
				->reserved[CTP_EPOCH_TRACE_OFFSET],
			__ATOMIC_RELAXED);
#ifdef HARVEST_TEST_HOOKS
		if (harvest_test_after_copy)
			harvest_test_after_copy(e);
#endif
		/* (F) pairs with the writer's (A): a copy that overlapped a
		 * new write sees the new seq here. */
		atomic_thread_fence(memory_order_acquire);
		again = atomic_load_explicit(&e->seq, memory_order_relaxed);
		if (again != seq) {
			h->count.torn++;
			r->raw[k] = again;
			r->obs[k] = ctp_seq_event(again, k, style);
			continue;
		}
		ev->seq = seq;
		ev->n = r->obs[k];
		ev->station = i;
		ev->probe_id = st->probe_id;
		r->valid[k] = true;
	}
}

static size_t harvest_walk(struct harvest *h, uint32_t i,
			   struct harvest_station *st,
			   const struct harvest_sink *sink)
{
	struct harvest_ring r;
	uint64_t e = st->expected;
	uint64_t lost = 0, lowest = UINT64_MAX;
	bool all_written = true;
	size_t delivered = 0;
	uint64_t lost0 = h->count.lost;
	unsigned k0 = (unsigned)(e % CTP_SLOTS);

	/* Fast path: the slot `expected` would land in still holds what we
	 * last saw there, so it was not written, and since a writer fills
	 * slots in order nothing else was either.  One cache line instead of
	 * eight for an idle station.  acquire: as (D). */
	if (atomic_load_explicit(&h->stations[i].slots[k0].seq,
				 memory_order_acquire) == st->last_seen[k0])
		return 0;
	harvest_read_ring(h, i, st, &r);
	for (unsigned k = 0; k < CTP_SLOTS; k++) {
		if (r.obs[k] == UINT64_MAX)
			all_written = false;
		else if (r.obs[k] < lowest)
			lowest = r.obs[k];
	}
	if (all_written && lowest > e) {
		lost += lowest - e;
		e = lowest;
	}
	for (int step = 0; step < HARVEST_WALK_MAX; step++) {
		unsigned k = (unsigned)(e % CTP_SLOTS);

		if (r.valid[k] && r.ev[k].n == e) {
			if (lost && sink->lost)
				sink->lost(sink->ctx, i, lost);
			h->count.lost += lost;
			lost = 0;
			st->last_seen[k] = r.ev[k].seq;
			if (sink->event)
				sink->event(sink->ctx, &r.ev[k]);
			delivered++;
			e++;
		} else if (r.obs[k] != UINT64_MAX && r.obs[k] > e) {
			lost++;
			e++;
		} else {
			break;
		}
	}
	if (lost) {
		if (sink->lost)
			sink->lost(sink->ctx, i, lost);
		h->count.lost += lost;
	}
	if (h->count.lost != lost0 && h->nhot < HARVEST_HOT_MAX)
		h->hot[h->nhot++] = i;
	/* Slots the walk has passed (delivered or counted lost) are "seen",
	 * which keeps the fast path above exact. */
	for (unsigned k = 0; k < CTP_SLOTS; k++)
		if (!(r.raw[k] & 1) && r.obs[k] != UINT64_MAX && r.obs[k] < e)
			st->last_seen[k] = r.raw[k];
	st->expected = e;
	h->count.harvested += delivered;
	return delivered;
}

static void harvest_open(struct harvest *h, uint32_t i,
			 struct harvest_station *st,
			 const struct harvest_sink *sink, uint64_t probe_id,
			 uint64_t birth_ts)
{
	st->state = HARVEST_LIVE;
	st->probe_id = probe_id;
	h->count.opened++;
	if (sink->open)
		sink->open(sink->ctx, i, probe_id, birth_ts);
}

static void harvest_close(struct harvest *h, uint32_t i,
			  struct harvest_station *st,
			  const struct harvest_sink *sink)
{
	st->state = HARVEST_CLOSED;
	h->count.closed++;
	if (sink->close)
		sink->close(sink->ctx, i);
}

/* A station written by a corotop probe: generations, recycling. */
static size_t harvest_ours(struct harvest *h, uint32_t i,
			   struct harvest_station *st,
			   const struct harvest_sink *sink)
{
	struct ctp_station *s = &h->stations[i];
	size_t n = 0;
	uint64_t gen;
	bool dead;

	/* (H) acquire pairs with the opener's release (G). */
	gen = atomic_load_explicit(&s->ext.gen, memory_order_acquire);
	if (gen != st->gen) {
		if (st->state == HARVEST_LIVE) {
			/* Someone reopened a station we never recycled (a
			 * foreign engine, or a lying region).  Deliver what is
			 * left, then start over. */
			n += harvest_walk(h, i, st, sink);
			harvest_close(h, i, st, sink);
		}
		st->gen = gen;
		st->station_style = 1;
		st->expected =
			__atomic_load_n(&s->ext.first_n, __ATOMIC_RELAXED);
		st->first = st->expected;
		harvest_open(h, i, st, sink,
			     __atomic_load_n(&s->probe_id, __ATOMIC_RELAXED),
			     __atomic_load_n(&s->birth_ts, __ATOMIC_RELAXED));
	}
	if (st->state != HARVEST_LIVE)
		return n;
	/* (J) is_dead first, then the final pass: every event written before
	 * the flag is delivered before close. */
	dead = atomic_load_explicit(&s->is_dead, memory_order_acquire);
	n += harvest_walk(h, i, st, sink);
	if (dead) {
		harvest_close(h, i, st, sink);
		if (h->recycle) {
			freelist_push(h->hdr, h->stations, i);
			h->count.recycled++;
		}
	}
	return n;
}

/* A station written by an upstream SDK: per-slot seqs, never recycled. */
static size_t harvest_upstream(struct harvest *h, uint32_t i,
			       struct harvest_station *st,
			       const struct harvest_sink *sink)
{
	struct ctp_station *s = &h->stations[i];
	size_t n;
	bool dead;

	if (st->state == HARVEST_CLOSED)
		return 0;
	if (st->state == HARVEST_EMPTY) {
		st->station_style = 0;
		h->saw_upstream = true;
		harvest_open(h, i, st, sink,
			     __atomic_load_n(&s->probe_id, __ATOMIC_RELAXED),
			     __atomic_load_n(&s->birth_ts, __ATOMIC_RELAXED));
	} else if (st->probe_id == 0) {
		/* The SDK writes the header after taking the station. */
		st->probe_id = __atomic_load_n(&s->probe_id, __ATOMIC_RELAXED);
	}
	dead = atomic_load_explicit(&s->is_dead, memory_order_acquire);
	n = harvest_walk(h, i, st, sink);
	if (dead)
		harvest_close(h, i, st, sink);
	return n;
}

unsigned harvest_station_recent(const struct harvest *h, uint32_t i,
				uint64_t probe_id, struct harvest_event *out)
{
	const struct harvest_station *st;
	unsigned got = 0;

	if (i >= h->max)
		return 0;
	st = &h->state[i];
	if (st->state == HARVEST_EMPTY || st->probe_id != probe_id)
		return 0;
	for (unsigned k = 0; k < CTP_SLOTS; k++) {
		struct ctp_epoch *e = &h->stations[i].slots[k];
		struct harvest_event ev = {0};
		uint64_t seq, again;
		unsigned at;

		/* (D) acquire pairs with the writer's release (C). */
		seq = atomic_load_explicit(&e->seq, memory_order_acquire);
		if (seq & 1)
			continue;
		ev.n = ctp_seq_event(seq, k, st->station_style);
		if (ev.n == UINT64_MAX || ev.n < st->first ||
		    ev.n >= st->expected || ev.n % CTP_SLOTS != k)
			continue;
		/* (E) relaxed copies, validated by (F) as in the scan. */
		ev.ts = __atomic_load_n(&e->timestamp, __ATOMIC_RELAXED);
		ev.tid = __atomic_load_n(&e->tid, __ATOMIC_RELAXED);
		ev.addr = __atomic_load_n(&e->addr, __ATOMIC_RELAXED);
		ev.is_active = __atomic_load_n(&e->is_active, __ATOMIC_RELAXED);
		/* (F) pairs with the writer's (A). */
		atomic_thread_fence(memory_order_acquire);
		again = atomic_load_explicit(&e->seq, memory_order_relaxed);
		if (again != seq)
			continue;
		ev.seq = seq;
		ev.station = i;
		ev.probe_id = probe_id;
		/* Insertion by event number: at most 8 entries. */
		for (at = got; at > 0 && out[at - 1].n > ev.n; at--)
			out[at] = out[at - 1];
		out[at] = ev;
		got++;
	}
	return got;
}

size_t harvest_station_scan(struct harvest *h, uint32_t i,
			    const struct harvest_sink *sink)
{
	struct harvest_station *st = &h->state[i];
	uint32_t magic =
		__atomic_load_n(&h->stations[i].ext.magic, __ATOMIC_RELAXED);

	if (magic == CTP_STX_MAGIC || st->station_style)
		return harvest_ours(h, i, st, sink);
	if (st->state != HARVEST_EMPTY)
		return harvest_upstream(h, i, st, sink);
	/* Allocated but not yet claimed by either kind of writer.  A corotop
	 * probe stores its magic before its first seq (release, C), so a
	 * non-zero seq seen with acquire and still no magic means an upstream
	 * SDK wrote it. */
	for (unsigned k = 0; k < CTP_SLOTS; k++) {
		/* acquire pairs with the writer's release (C). */
		if (atomic_load_explicit(&h->stations[i].slots[k].seq,
					 memory_order_acquire) == 0)
			continue;
		magic = __atomic_load_n(&h->stations[i].ext.magic,
					__ATOMIC_RELAXED);
		if (magic == CTP_STX_MAGIC)
			return harvest_ours(h, i, st, sink);
		return harvest_upstream(h, i, st, sink);
	}
	return 0;
}

size_t harvest_scan(struct harvest *h, const struct harvest_sink *sink)
{
	uint32_t alloc = harvest_allocated(h);
	size_t n = 0;

	h->nhot = 0;
	for (uint32_t i = 0; i < alloc; i++)
		n += harvest_station_scan(h, i, sink);
	h->count.scans++;
	return n;
}

bool harvest_has_dirty(const struct harvest *h)
{
	return h->dirty_ok;
}

bool harvest_dirty_collect(struct harvest *h, uint64_t *marks)
{
	uint64_t any = 0;

	for (unsigned w = 0; w < CTP_HX_DIRTY_WORDS; w++) {
		/* (Q) relaxed: a hint; the seq/gen/is_dead loads in the scan
		 * carry the acquire ordering for the data itself. */
		marks[w] = atomic_load_explicit(&h->hdr->ext.dirty[w],
						memory_order_relaxed)
				   ? atomic_exchange_explicit(
					     &h->hdr->ext.dirty[w], 0,
					     memory_order_relaxed)
				   : 0;
		any |= marks[w];
	}
	return any != 0;
}

size_t harvest_scan_marked(struct harvest *h, const uint64_t *marks,
			   const struct harvest_sink *sink)
{
	uint32_t alloc = harvest_allocated(h);
	uint32_t shift = h->dirty_shift;
	size_t n = 0;

	h->nhot = 0;
	for (unsigned w = 0; w < CTP_HX_DIRTY_WORDS; w++) {
		uint64_t bits = marks[w];

		while (bits) {
			uint64_t b = (uint64_t)w * 64 +
				     (uint64_t)__builtin_ctzll(bits);
			uint64_t first = b << shift, end = (b + 1) << shift;

			bits &= bits - 1;
			if (first >= alloc)
				continue;
			if (end > alloc)
				end = alloc;
			for (uint64_t i = first; i < end; i++)
				n += harvest_station_scan(h, (uint32_t)i, sink);
		}
	}
	h->count.scans++;
	return n;
}

size_t harvest_scan_list(struct harvest *h, const uint32_t *list, unsigned n,
			 const struct harvest_sink *sink)
{
	uint32_t alloc = harvest_allocated(h);
	size_t got = 0;

	h->nhot = 0;
	for (unsigned k = 0; k < n; k++)
		if (list[k] < alloc)
			got += harvest_station_scan(h, list[k], sink);
	h->count.scans++;
	return got;
}
