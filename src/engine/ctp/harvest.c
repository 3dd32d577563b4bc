/*
 * harvest: the reading side of cTP, with exact loss accounting for every
 * writing style (include/corotop/ctp.h): corotop's station style (in the
 * eight slots or in a deep ring), the shipped SDKs' per-slot seqlock, and the
 * literal style of a writer that follows the spec's text.
 *
 * Event numbers.  Every style maps a slot's seq onto one event number n per
 * station, and event n always lives in one known slot (harvest_slot_of).
 * The harvester keeps, per station, the next number it owes its sink
 * (`expected`) and walks forward from it, one slot at a time:
 *   - the slot holds a complete, validated copy of exactly `expected`:
 *     deliver it;
 *   - the slot holds a later number m (complete or in progress): the writer
 *     has reused the slot, so every event from `expected` up to m - depth
 *     was overwritten before we read it; count exactly those lost and jump;
 *   - otherwise `expected` has not been written (or is being written): stop.
 * So each event written is either delivered once, in order, or counted lost
 * once, and harvested + lost never exceeds the count the highest seq seen
 * implies.  A lying seq costs one jump, never a long loop: a walk reads at
 * most 2 * depth + 16 slots.
 *
 * Validation.  A copy is taken the way upstream engines take it (D, E, F in
 * ctp.h): acquire-load seq, copy, acquire fence, re-load; a moved seq
 * discards the copy (counted torn).  A literal slot has no in-progress mark,
 * so its copy is also discarded while the writer may be rewriting it: when
 * the seq just before its next use (seq + 7) is already published.
 *
 * Styles of foreign stations.  A corotop probe marks its stations (the
 * station extension); other stations' styles are told from what their
 * seqs show (style.c).
 *
 * Station lifecycle.  A corotop-written station announces each occupant by
 * bumping ctp_station_ext.gen (G/H); its death by is_dead (I/J), which is
 * read *before* the final pass so that every event written before the flag
 * is delivered before `close`.  Only then, when we own the region, is the
 * station pushed onto the free list (K).  Foreign stations are never
 * recycled: they are opened when first written and closed at is_dead.
 *
 * Census.  A station a corotop probe published at a late attach for a
 * coroutine that lived before it (CTP_STX_CENSUS) starts with a census
 * event: delivered like any other, flagged, with the header's ctp_census
 * (where the parked stack can be walked from) copied into it.
 */
#define _GNU_SOURCE
#include "engine/ctp/harvest.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wire/freelist.h"
#include "common/hash.h"
#include "common/clock.h"
#include "engine/ctp/style.h"
#include "engine/model/namepool.h"

#ifdef HARVEST_TEST_HOOKS
void (*harvest_test_after_copy)(struct ctp_epoch *e);
#endif

#define HARVEST_NONE UINT64_MAX

static uint64_t harvest_clock(void)
{
	return clock_now_ns(CLOCK_MONOTONIC);
}

bool harvest_init(struct harvest *h, struct ctp_header *hdr, uint32_t max,
		  bool recycle)
{
	memset(h, 0, sizeof(*h));
	h->hdr = hdr;
	h->stations = (struct ctp_station *)((char *)hdr + CTP_HEADER_SIZE);
	h->max = max;
	h->recycle = recycle;
	/* The region's owner saw every station from its birth: nothing it
	 * lacks predates it. */
	h->started = recycle;
	h->clock = harvest_clock;
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

void harvest_set_deep(struct harvest *h, struct ctp_deep *deep, uint32_t depth,
		      uint32_t hub_depth)
{
	if (!deep || !ctp_deep_depth_ok(depth) ||
	    (hub_depth &&
	     (hub_depth <= depth || !ctp_deep_depth_ok(hub_depth)))) {
		h->deep = NULL;
		h->deep_rings = NULL;
		h->depth = h->hub_depth = h->stride = 0;
		return;
	}
	h->deep = deep;
	h->deep_rings =
		(struct ctp_epoch *)(void *)((char *)deep + CTP_DEEP_HEADER);
	h->depth = depth;
	h->hub_depth = hub_depth;
	h->stride = hub_depth ? hub_depth : depth;
}

void harvest_pass_done(struct harvest *h, uint64_t start_ns)
{
	if (!h->deep || !h->recycle)
		return;
	/* (R) release pairs with the probe's acquire (S): a writer that
	 * sees this start time also sees that we read everything it had
	 * published before it. */
	atomic_store_explicit(&h->deep->pass_ns, start_ns,
			      memory_order_release);
}

uint32_t harvest_allocated(const struct harvest *h)
{
	/* acquire: pairs with nothing stronger than the writer's relaxed
	 * fetch_add; station contents are ordered by gen and seq instead. */
	uint32_t a = atomic_load_explicit(&h->hdr->allocated_count,
					  memory_order_acquire);

	return a < h->max ? a : h->max;
}

/* ---- styles: where event n lives and what a seq says ---- */

/* The station's ring and its depth, or NULL. */
static struct ctp_epoch *harvest_ring(const struct harvest *h, uint32_t i,
				      const struct harvest_station *st,
				      uint32_t *depth)
{
	if (st->style == HARVEST_STYLE_DEEP) {
		*depth = st->hub && h->hub_depth ? h->hub_depth : h->depth;
		return h->deep_rings ? h->deep_rings + (size_t)i * h->stride
				     : NULL;
	}
	*depth = CTP_SLOTS;
	return h->stations[i].slots;
}

static unsigned harvest_slot_of(unsigned style, uint64_t n, uint32_t depth)
{
	if (style == HARVEST_STYLE_LITERAL)
		return (unsigned)((n + 1) % CTP_SLOTS);
	return (unsigned)(n & (depth - 1));
}

/* Event number a seq read from slot k names, or HARVEST_NONE (never
 * written, or a seq that does not belong in that slot). */
static uint64_t harvest_seq_event(unsigned style, uint64_t seq, unsigned k,
				  uint32_t depth)
{
	uint64_t n;

	if (seq == 0)
		return HARVEST_NONE;
	switch (style) {
	case HARVEST_STYLE_SEQLOCK:
		return ctp_seq_event(seq, k, 0);
	case HARVEST_STYLE_LITERAL:
		n = seq - 1;
		break;
	default:
		n = ctp_seq_event(seq, k, 1);
		break;
	}
	return harvest_slot_of(style, n, depth) == k ? n : HARVEST_NONE;
}

/* The seq says the write is complete. */
static bool harvest_seq_done(unsigned style, uint64_t seq)
{
	return style == HARVEST_STYLE_LITERAL || !(seq & 1);
}

/* The event flags byte (CTP_EPOCH_FLAGS_OFFSET), the bits we know: only a
 * corotop probe's stations give it a meaning; elsewhere the reserved bytes
 * are the writer's own payload.  Relaxed, inside the copy (E). */
static uint8_t harvest_flags(struct ctp_epoch *e, unsigned style)
{
	uint8_t f;

	if (style != HARVEST_STYLE_STATION && style != HARVEST_STYLE_DEEP)
		return 0;
	f = __atomic_load_n(&e->reserved[CTP_EPOCH_FLAGS_OFFSET],
			    __ATOMIC_RELAXED);
	return (uint8_t)(f & (CTP_EPF_LONG_WAIT | CTP_EPF_CONTEXT));
}

/*
 * Copy slot k, which showed `seq` for event n, into ev.  False when the copy
 * must be thrown away (counted torn): the seq moved, or (literal style) the
 * writer may already be rewriting the slot.
 */
static bool harvest_copy(struct harvest *h, struct ctp_epoch *ring,
			 unsigned style, unsigned k, uint64_t seq,
			 struct harvest_event *ev)
{
	struct ctp_epoch *e = &ring[k];
	uint64_t again;

	/* (E) relaxed copies; validated by the re-check below. */
	ev->ts = __atomic_load_n(&e->timestamp, __ATOMIC_RELAXED);
	ev->tid = __atomic_load_n(&e->tid, __ATOMIC_RELAXED);
	ev->addr = __atomic_load_n(&e->addr, __ATOMIC_RELAXED);
	ev->is_active = __atomic_load_n(&e->is_active, __ATOMIC_RELAXED);
	ev->check = __atomic_load_n(
		(uint64_t *)(void *)&e->reserved[CTP_EPOCH_CHECK_OFFSET],
		__ATOMIC_RELAXED);
	ev->trace = __atomic_load_n(
		(uint64_t *)(void *)&e->reserved[CTP_EPOCH_TRACE_OFFSET],
		__ATOMIC_RELAXED);
	ev->flags = harvest_flags(e, style);
#ifdef HARVEST_TEST_HOOKS
	if (harvest_test_after_copy)
		harvest_test_after_copy(e);
#endif
	/* (F) pairs with the writer's (A): a copy that overlapped a new write
	 * sees the new seq here. */
	atomic_thread_fence(memory_order_acquire);
	again = atomic_load_explicit(&e->seq, memory_order_relaxed);
	if (again != seq) {
		h->count.torn++;
		return false;
	}
	if (style == HARVEST_STYLE_LITERAL) {
		/* The writer stores seq + 8's payload into this slot right
		 * after publishing seq + 7 (relaxed: ordered by the fence
		 * above, like the re-load). */
		uint64_t prev = atomic_load_explicit(
			&ring[(k + CTP_SLOTS - 1) % CTP_SLOTS].seq,
			memory_order_relaxed);

		if (prev >= seq + CTP_SLOTS - 1) {
			h->count.torn++;
			return false;
		}
	}
	ev->seq = seq;
	ev->slot = k;
	return true;
}

static void harvest_count_lost(struct harvest *h, uint32_t i,
			       struct harvest_station *st,
			       const struct harvest_sink *sink, uint64_t lost)
{
	if (!lost)
		return;
	if (st->fresh) {
		h->count.before_start += lost;
		return;
	}
	if (sink->lost)
		sink->lost(sink->ctx, i, lost);
	h->count.lost += lost;
	if (h->nhot < HARVEST_HOT_MAX &&
	    (h->nhot == 0 || h->hot[h->nhot - 1] != i))
		h->hot[h->nhot++] = i;
}

/*
 * A census event (the station's first, CTP_STX_CENSUS) carries where its
 * stack can be walked from, in the station's header: written before the
 * generation moved (G), which this walk's open acquired (H).  Relaxed:
 * only hints for the engine's walk, which checks everything it reads.
 */
static void harvest_census(struct harvest *h, uint32_t i,
			   const struct harvest_station *st,
			   struct harvest_event *ev)
{
	const struct ctp_census *c = &h->stations[i].ext.census;

	ev->census = st->census && ev->n == st->first;
	if (!ev->census) {
		memset(&ev->where, 0, sizeof(ev->where));
		return;
	}
	h->count.census++;
	ev->where.sp = __atomic_load_n(&c->sp, __ATOMIC_RELAXED);
	ev->where.fp = __atomic_load_n(&c->fp, __ATOMIC_RELAXED);
	ev->where.pc = __atomic_load_n(&c->pc, __ATOMIC_RELAXED);
	ev->where.stack_lo = __atomic_load_n(&c->stack_lo, __ATOMIC_RELAXED);
	ev->where.stack_hi = __atomic_load_n(&c->stack_hi, __ATOMIC_RELAXED);
}

void harvest_who(const struct harvest *h, uint32_t i, struct harvest_who *out)
{
	const struct ctp_station *s;
	char raw[CTP_STX_NAME_LEN];

	memset(out, 0, sizeof(*out));
	if (i >= h->max || !harvest_station_ours(&h->state[i]))
		return;
	s = &h->stations[i];
	/* relaxed: written before the generation moved (G), which the open
	 * acquired (H); the re-check below drops a copy a reuse raced. */
	if (__atomic_load_n(&s->ext.magic, __ATOMIC_RELAXED) != CTP_STX_MAGIC)
		return;
	out->coro = __atomic_load_n(&s->ext.coro, __ATOMIC_RELAXED);
	out->entry = __atomic_load_n(&s->ext.entry, __ATOMIC_RELAXED);
	out->made_for = __atomic_load_n(&s->ext.made_for, __ATOMIC_RELAXED);
	for (unsigned k = 0; k < CTP_STX_NAME_LEN; k++)
		raw[k] = __atomic_load_n(&s->ext.name[k], __ATOMIC_RELAXED);
	/* The copy is done before the generation is looked at again. */
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&s->ext.gen, memory_order_relaxed) !=
	    h->state[i].gen) {
		memset(out, 0, sizeof(*out));
		return;
	}
	namepool_clean(out->name, raw, sizeof(raw));
	/* Read at the open, with the rest of the header. */
	out->pid = h->state[i].pid;
	out->image = h->state[i].image;
	out->role = h->state[i].role;
}

void harvest_interposer(const struct harvest *h, uint32_t i,
			struct harvest_interposer *out)
{
	*out = (struct harvest_interposer){0};
	if (i >= h->max || !h->state[i].process)
		return;
	/* relaxed: statistics its process raises (CAS maximums). */
	out->untracked = atomic_load_explicit(
		&h->stations[i].ext.contexts_untracked, memory_order_relaxed);
	out->unseen = atomic_load_explicit(&h->stations[i].ext.switches_unseen,
					   memory_order_relaxed);
}

static size_t harvest_walk(struct harvest *h, uint32_t i,
			   struct harvest_station *st,
			   const struct harvest_sink *sink)
{
	uint32_t depth;
	struct ctp_epoch *ring = harvest_ring(h, i, st, &depth);
	unsigned style = st->style;
	uint64_t e = st->expected, lost = 0;
	size_t delivered = 0;
	/* A lap shows as one jump, then at most depth - 1 single skips
	 * (slots the writer reached again after the one that showed the
	 * lap), then at most depth deliveries: bounded whatever the seqs
	 * say. */
	unsigned steps = 2 * depth + 2 * CTP_SLOTS;

	if (!ring || style == HARVEST_STYLE_UNKNOWN)
		return 0;
	while (steps--) {
		unsigned k = harvest_slot_of(style, e, depth);
		struct harvest_event ev;
		uint64_t seq, obs;

		/* (D) acquire pairs with the writer's release (C). */
		seq = atomic_load_explicit(&ring[k].seq, memory_order_acquire);
		obs = harvest_seq_event(style, seq, k, depth);
		if (obs == HARVEST_NONE || obs < e)
			break; /* not written yet */
		if (obs > e) {
			/* The slot was reused: e .. obs - depth are gone. */
			uint64_t skip =
				obs - e >= depth ? obs - e - depth + 1 : 1;

			lost += skip;
			e += skip;
			continue;
		}
		if (!harvest_seq_done(style, seq))
			break; /* being written */
		if (!harvest_copy(h, ring, style, k, seq, &ev)) {
			/* A moved seq is looked at again at once: it names
			 * a later event.  A literal slot that may be in
			 * rewrite is given up (counted torn, not lost: it
			 * may never be overwritten), or a writer that went
			 * quiet would hold its last seven events back. */
			if (style == HARVEST_STYLE_LITERAL &&
			    atomic_load_explicit(&ring[k].seq,
						 memory_order_relaxed) == seq)
				e++;
			continue;
		}
		harvest_count_lost(h, i, st, sink, lost);
		lost = 0;
		ev.n = e;
		ev.station = i;
		ev.probe_id = st->probe_id;
		harvest_census(h, i, st, &ev);
		if (sink->event)
			sink->event(sink->ctx, &ev);
		delivered++;
		e++;
	}
	harvest_count_lost(h, i, st, sink, lost);
	/* Only the walk that first sees the ring finds history that was
	 * gone before we looked. */
	if (style != HARVEST_STYLE_UNKNOWN)
		st->fresh = false;
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
	st->fresh = !h->started;
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
	uint32_t flags;
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
		flags = __atomic_load_n(&s->ext.flags, __ATOMIC_RELAXED);
		st->style = (flags & CTP_STX_DEEP) ? HARVEST_STYLE_DEEP
						   : HARVEST_STYLE_STATION;
		st->census = (flags & CTP_STX_CENSUS) != 0;
		st->process = (flags & CTP_STX_PROCESS) != 0;
		st->hub = (flags & CTP_STX_HUB) != 0;
		st->role =
			(uint8_t)(flags & (CTP_STX_DISPATCHER | CTP_STX_ROOT));
		st->pid = __atomic_load_n(&s->ext.pid, __ATOMIC_RELAXED);
		st->image = __atomic_load_n(&s->ext.image, __ATOMIC_RELAXED);
		h->count.styles[st->style]++;
		st->expected =
			__atomic_load_n(&s->ext.first_n, __ATOMIC_RELAXED);
		st->first = st->expected;
		if (st->process) {
			/* A process, not a coroutine: no events, never
			 * closed by its writer (harvest_forget_image). */
			st->state = HARVEST_LIVE;
			if (sink->process)
				sink->process(sink->ctx, i);
			return n;
		}
		harvest_open(h, i, st, sink,
			     __atomic_load_n(&s->probe_id, __ATOMIC_RELAXED),
			     __atomic_load_n(&s->birth_ts, __ATOMIC_RELAXED));
	}
	if (st->state != HARVEST_LIVE || st->process)
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

unsigned harvest_forget_image(struct harvest *h, uint32_t pid, uint64_t image,
			      const struct harvest_sink *sink)
{
	uint32_t n = harvest_allocated(h);
	unsigned closed = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct harvest_station *st = &h->state[i];
		struct ctp_station *s = &h->stations[i];
		uint32_t depth = CTP_SLOTS;

		if (st->state != HARVEST_LIVE || !harvest_station_ours(st) ||
		    st->pid != pid || st->image != image)
			continue;
		if (!st->process)
			(void)harvest_walk(h, i, st, sink);
		harvest_close(h, i, st, sink);
		closed++;
		if (!h->recycle)
			continue;
		(void)harvest_ring(h, i, st, &depth);
		/* Nothing of that image writes here any more: the station is
		 * the engine's to give back.  Its next occupant starts a whole
		 * ring past the last event seen, so no slot can hold one of
		 * its numbers; then is_dead, then the push (K). */
		__atomic_store_n(&s->ext.next_n, st->expected + depth,
				 __ATOMIC_RELAXED);
		atomic_store_explicit(&s->is_dead, 1, memory_order_release);
		freelist_push(h->hdr, h->stations, i);
		h->count.recycled++;
	}
	return closed;
}

/* A station written by another cTP writer: never recycled. */
static size_t harvest_foreign(struct harvest *h, uint32_t i,
			      struct harvest_station *st,
			      const struct harvest_sink *sink)
{
	struct ctp_station *s = &h->stations[i];
	size_t n;
	bool dead;

	if (st->state == HARVEST_CLOSED)
		return 0;
	if (st->state == HARVEST_EMPTY) {
		h->saw_upstream = true;
		st->expected = st->first = 0;
		harvest_open(h, i, st, sink,
			     __atomic_load_n(&s->probe_id, __ATOMIC_RELAXED),
			     __atomic_load_n(&s->birth_ts, __ATOMIC_RELAXED));
	} else if (st->probe_id == 0) {
		/* The SDK writes the header after taking the station. */
		st->probe_id = __atomic_load_n(&s->probe_id, __ATOMIC_RELAXED);
	}
	/* (J) as for ours: the flag first, then the final pass. */
	dead = atomic_load_explicit(&s->is_dead, memory_order_acquire);
	if (st->style == HARVEST_STYLE_UNKNOWN)
		style_classify(h, i, st);
	n = harvest_walk(h, i, st, sink);
	/* An undecided station that dies is decided now: its events must
	 * be delivered before it closes. */
	if (dead && st->style == HARVEST_STYLE_UNKNOWN) {
		st->seen_ns = 1;
		st->odd_ns = 0;
		style_classify(h, i, st);
		if (st->style == HARVEST_STYLE_UNKNOWN) {
			st->style = HARVEST_STYLE_SEQLOCK;
			h->count.styles[st->style]++;
		}
		n += harvest_walk(h, i, st, sink);
	}
	if (dead)
		harvest_close(h, i, st, sink);
	return n;
}

unsigned harvest_station_recent(const struct harvest *h, uint32_t i,
				uint64_t probe_id, struct harvest_event *out)
{
	const struct harvest_station *st;
	struct harvest_event ev[CTP_SLOTS];
	struct ctp_epoch *ring;
	uint32_t depth;
	unsigned got = 0;

	if (i >= h->max)
		return 0;
	st = &h->state[i];
	if (st->state == HARVEST_EMPTY || st->probe_id != probe_id ||
	    st->style == HARVEST_STYLE_UNKNOWN)
		return 0;
	ring = harvest_ring(h, i, st, &depth);
	if (!ring)
		return 0;
	/* Newest first, from expected - 1 back to first; at most eight. */
	for (uint64_t n = st->expected; n > st->first && got < CTP_SLOTS;) {
		struct ctp_epoch *e;
		uint64_t seq, again;
		unsigned k;

		n--;
		k = harvest_slot_of(st->style, n, depth);
		e = &ring[k];
		/* (D) acquire pairs with the writer's release (C). */
		seq = atomic_load_explicit(&e->seq, memory_order_acquire);
		if (harvest_seq_event(st->style, seq, k, depth) != n ||
		    !harvest_seq_done(st->style, seq))
			continue;
		/* (E) relaxed copies, validated by (F) as in the scan. */
		ev[got] = (struct harvest_event){0};
		ev[got].ts = __atomic_load_n(&e->timestamp, __ATOMIC_RELAXED);
		ev[got].tid = __atomic_load_n(&e->tid, __ATOMIC_RELAXED);
		ev[got].addr = __atomic_load_n(&e->addr, __ATOMIC_RELAXED);
		ev[got].is_active =
			__atomic_load_n(&e->is_active, __ATOMIC_RELAXED);
		/* (F) pairs with the writer's (A). */
		atomic_thread_fence(memory_order_acquire);
		again = atomic_load_explicit(&e->seq, memory_order_relaxed);
		if (again != seq)
			continue;
		ev[got].n = n;
		ev[got].seq = seq;
		ev[got].slot = k;
		ev[got].station = i;
		ev[got].probe_id = probe_id;
		got++;
	}
	/* Oldest first. */
	for (unsigned j = 0; j < got; j++)
		out[j] = ev[got - 1 - j];
	return got;
}

/* Station i's n events of this scan, in its slack: the share of its ring
 * they filled. */
static size_t harvest_slack(struct harvest *h, uint32_t i, size_t n)
{
	const struct harvest_station *st = &h->state[i];
	uint64_t ring, fill;

	if (!n)
		return 0;
	if (st->style == HARVEST_STYLE_DEEP) {
		ring = st->hub && h->hub_depth ? h->hub_depth : h->depth;
	} else {
		ring = CTP_SLOTS;
		h->pass_shallow = true;
	}
	fill = ring ? ((uint64_t)n << 16) / ring : 1u << 16;
	if (fill > 1u << 16)
		fill = 1u << 16;
	if (fill > h->pass_fill)
		h->pass_fill = (uint32_t)fill;
	return n;
}

/* A scan begins: no slack used yet. */
static void harvest_scan_begin(struct harvest *h)
{
	h->nhot = 0;
	h->pass_fill = 0;
	h->pass_shallow = false;
}

static size_t harvest_station_scan_in(struct harvest *h, uint32_t i,
				      const struct harvest_sink *sink)
{
	struct harvest_station *st = &h->state[i];
	uint32_t magic =
		__atomic_load_n(&h->stations[i].ext.magic, __ATOMIC_RELAXED);

	if (magic == CTP_STX_MAGIC || harvest_station_ours(st))
		return harvest_ours(h, i, st, sink);
	if (st->state != HARVEST_EMPTY)
		return harvest_foreign(h, i, st, sink);
	/* Allocated but not yet claimed by either kind of writer.  A corotop
	 * probe stores its magic before its first seq (release, C), so a
	 * non-zero seq seen with acquire and still no magic means another
	 * writer wrote it. */
	for (unsigned k = 0; k < CTP_SLOTS; k++) {
		/* acquire pairs with the writer's release (C). */
		if (atomic_load_explicit(&h->stations[i].slots[k].seq,
					 memory_order_acquire) == 0)
			continue;
		magic = __atomic_load_n(&h->stations[i].ext.magic,
					__ATOMIC_RELAXED);
		if (magic == CTP_STX_MAGIC)
			return harvest_ours(h, i, st, sink);
		return harvest_foreign(h, i, st, sink);
	}
	return 0;
}

size_t harvest_station_scan(struct harvest *h, uint32_t i,
			    const struct harvest_sink *sink)
{
	return harvest_slack(h, i, harvest_station_scan_in(h, i, sink));
}

size_t harvest_scan(struct harvest *h, const struct harvest_sink *sink)
{
	uint32_t alloc = harvest_allocated(h);
	size_t n = 0;

	harvest_scan_begin(h);
	for (uint32_t i = 0; i < alloc; i++)
		n += harvest_station_scan(h, i, sink);
	h->count.scans++;
	h->started = true;
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

/* Start loading the line station i's next event lands in (the seq
 * harvest_walk reads first: the line its writer just wrote, a cache miss
 * on another CPU's line), while the station before it is read.  A hint:
 * no load is done, nothing can fault. */
static void harvest_prefetch(const struct harvest *h, uint32_t i)
{
	const struct harvest_station *st = &h->state[i];
	uint32_t depth;
	const struct ctp_epoch *ring;

	if (st->style == HARVEST_STYLE_UNKNOWN)
		return;
	ring = harvest_ring(h, i, st, &depth);
	if (ring)
		__builtin_prefetch(
			&ring[harvest_slot_of(st->style, st->expected, depth)]);
}

size_t harvest_scan_marked(struct harvest *h, const uint64_t *marks,
			   const struct harvest_sink *sink)
{
	uint32_t alloc = harvest_allocated(h);
	uint32_t shift = h->dirty_shift;
	uint32_t pend = UINT32_MAX; /* marked, prefetched, not read yet */
	size_t n = 0;

	harvest_scan_begin(h);
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
			/* One station behind: each one's line loads while
			 * the one before it is read. */
			for (uint64_t i = first; i < end; i++) {
				harvest_prefetch(h, (uint32_t)i);
				if (pend < alloc)
					n += harvest_station_scan(h, pend,
								  sink);
				pend = (uint32_t)i;
			}
		}
	}
	if (pend < alloc)
		n += harvest_station_scan(h, pend, sink);
	h->count.scans++;
	return n;
}

size_t harvest_scan_list(struct harvest *h, const uint32_t *list, unsigned n,
			 const struct harvest_sink *sink)
{
	uint32_t alloc = harvest_allocated(h);
	size_t got = 0;

	harvest_scan_begin(h);
	for (unsigned k = 0; k < n; k++)
		if (list[k] < alloc)
			got += harvest_station_scan(h, list[k], sink);
	h->count.scans++;
	return got;
}
