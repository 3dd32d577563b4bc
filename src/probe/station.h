/*
 * station: what the probe writes into one cTP station -- taking it, its
 * header, one event as a seqlock, publishing the occupant, the dirty mark
 * and the sleeping check -- for the record path (coro.c) and the census
 * (census.c), which writes a coroutine's first station on its behalf.
 * The letters are the barrier pairing of corotop/ctp.h.
 */
#ifndef COROTOP_PROBE_STATION_H
#define COROTOP_PROBE_STATION_H

#include <stdbool.h>
#include <stdint.h>

#include "wire/freelist.h"
#include "probe/probe_internal.h"

/* (P): tell the engine which station group changed.  Load first so the
 * common case (bit already set) costs no atomic read-modify-write. */
static inline void station_mark(struct probe_region *r, uint32_t idx)
{
	_Atomic uint64_t *w;
	uint32_t bit;
	uint64_t m;

	if (!r->dirty)
		return;
	bit = idx >> r->dirty_shift;
	if (COROTOP_UNLIKELY(bit >= r->dirty_bits))
		return;
	w = &r->dirty[bit / 64];
	m = 1ull << (bit % 64);
	/* relaxed: a hint; ordering comes from (M) and the engine's (Q). */
	if (!(atomic_load_explicit(w, memory_order_relaxed) & m))
		atomic_fetch_or_explicit(w, m, memory_order_relaxed);
}

/* Stations a and b share one dirty bit: marking one marks both. */
static inline bool station_same_mark(const struct probe_region *r, uint32_t a,
				     uint32_t b)
{
	return (a >> r->dirty_shift) == (b >> r->dirty_shift);
}

/* (M), then (O) when the engine sleeps. */
static inline void station_check_sleeping(struct probe_region *r)
{
	struct ctp_header *hdr = r->hdr;

	/* (M) pairs with the engine's (N).  With the asymmetric fence the
	 * engine's membarrier(GLOBAL_EXPEDITED) orders us; else a full
	 * fence here. */
	if (r->asym_fence)
		atomic_signal_fence(memory_order_seq_cst);
	else
		atomic_thread_fence(memory_order_seq_cst);
	/* relaxed: the fence above provides the ordering. */
	if (COROTOP_UNLIKELY(atomic_load_explicit(&hdr->tracer_sleeping,
						  memory_order_relaxed) == 1))
		probe_wake(r);
}

/* A station for a new occupant: a recycled one from the free list first,
 * then a fresh one; FREELIST_EMPTY when the region is full. */
static inline uint32_t station_take(struct probe_region *p, bool *recycled)
{
	struct ctp_header *hdr = p->hdr;
	uint32_t idx;

	*recycled = false;
	if (p->hx_flags & CTP_HX_FREELIST) {
		idx = freelist_pop(hdr, p->stations, p->max);
		if (idx != FREELIST_EMPTY) {
			*recycled = true;
			return idx;
		}
	}
	/* Load first so a full region does not keep bumping the cursor
	 * towards wrap-around.  relaxed: no data is published through the
	 * cursor itself. */
	if (atomic_load_explicit(&hdr->allocated_count, memory_order_relaxed) >=
	    p->max)
		return FREELIST_EMPTY;
	idx = atomic_fetch_add_explicit(&hdr->allocated_count, 1,
					memory_order_relaxed);
	return idx < p->max ? idx : FREELIST_EMPTY;
}

/* A station taken and never published (its generation never moved) goes
 * back to the free list; without one it stays unused. */
static inline void station_give_back(struct probe_region *p, uint32_t idx)
{
	if (p->hx_flags & CTP_HX_FREELIST)
		freelist_push(p->hdr, p->stations, idx);
}

/* The next event number on station idx: the previous occupant's next_n,
 * published to us by the free-list acquire (L); a fresh station reads 0. */
static inline uint64_t station_next_n(struct probe_region *p, uint32_t idx)
{
	return __atomic_load_n(&p->stations[idx].ext.next_n, __ATOMIC_RELAXED);
}

/* Who occupies a station, beside its probe id and birth: the address of
 * its struct corotop_coro, its name (CTP_STX_NAME_LEN bytes, NUL-padded;
 * all zeros: none), the function its context was made to run and the
 * program's function that entry was made for (0: unknown). */
struct station_who {
	uint64_t coro;
	uint64_t entry;
	uint64_t made_for;
	char name[CTP_STX_NAME_LEN];
};

/* The new occupant's header; published by station_publish (G).  census:
 * NULL, or where its census event's stack can be walked from. */
static inline void station_header(struct probe_region *p, uint32_t idx,
				  uint64_t probe_id, uint64_t birth_ts,
				  uint64_t first_n, uint32_t flags,
				  const struct ctp_census *census,
				  const struct station_who *who)
{
	struct ctp_station *s = &p->stations[idx];
	struct ctp_census *cs = &s->ext.census;
	const struct ctp_census none = {0};

	if (!census)
		census = &none;
	/* relaxed, byte by byte: published by (G) like the rest; a reader
	 * racing a reuse gets a torn name, which it checks anyway. */
	__atomic_store_n(&s->ext.coro, who->coro, __ATOMIC_RELAXED);
	__atomic_store_n(&s->ext.entry, who->entry, __ATOMIC_RELAXED);
	__atomic_store_n(&s->ext.made_for, who->made_for, __ATOMIC_RELAXED);
	/* No saved registers yet (corotop_coro_set_saved): an earlier
	 * occupant's never pass for this one's. */
	__atomic_store_n(&s->ext.saved_ts, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->ext.saved_at, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->ext.saved_kind, CTP_SAVED_NONE, __ATOMIC_RELAXED);
	for (unsigned k = 0; k < CTP_STX_NAME_LEN; k++)
		__atomic_store_n(&s->ext.name[k], who->name[k],
				 __ATOMIC_RELAXED);
	/* relaxed: all of these are published by the release in (G). */
	__atomic_store_n(&s->probe_id, probe_id, __ATOMIC_RELAXED);
	__atomic_store_n(&s->birth_ts, birth_ts, __ATOMIC_RELAXED);
	atomic_store_explicit(&s->is_dead, 0, memory_order_relaxed);
	__atomic_store_n(&s->ext.magic, CTP_STX_MAGIC, __ATOMIC_RELAXED);
	__atomic_store_n(&s->ext.flags,
			 CTP_STX_SEQ_STATION |
				 (p->deep_rings ? CTP_STX_DEEP : 0u) | flags,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&s->ext.first_n, first_n, __ATOMIC_RELAXED);
	__atomic_store_n(&s->ext.pid, probe_pid, __ATOMIC_RELAXED);
	__atomic_store_n(&s->ext.image, probe_image, __ATOMIC_RELAXED);
	atomic_store_explicit(&s->ext.contexts_untracked, 0,
			      memory_order_relaxed);
	atomic_store_explicit(&s->ext.switches_unseen, 0, memory_order_relaxed);
	__atomic_store_n(&cs->sp, census->sp, __ATOMIC_RELAXED);
	__atomic_store_n(&cs->fp, census->fp, __ATOMIC_RELAXED);
	__atomic_store_n(&cs->pc, census->pc, __ATOMIC_RELAXED);
	__atomic_store_n(&cs->stack_lo, census->stack_lo, __ATOMIC_RELAXED);
	__atomic_store_n(&cs->stack_hi, census->stack_hi, __ATOMIC_RELAXED);
}

/* (G) The occupant whose header was written is there: release pairs with
 * the engine's acquire (H).  Then the dirty mark (P). */
static inline void station_publish(struct probe_region *p, uint32_t idx)
{
	atomic_fetch_add_explicit(&p->stations[idx].ext.gen, 1,
				  memory_order_release);
	station_mark(p, idx);
}

/* The epoch event n of station idx lives in, for a ring of `depth` epochs
 * (coro_depth). */
static inline struct ctp_epoch *
station_epoch(struct probe_region *r, uint32_t idx, uint64_t n, uint32_t depth)
{
	if (r->deep_rings)
		return &r->deep_rings[(size_t)idx * r->stride +
				      (n & (depth - 1))];
	return &r->stations[idx].slots[n % CTP_SLOTS];
}

/* The parked-stack word of a slot (8-aligned: reserved is at 0x20). */
static inline uint64_t *station_trace_word(struct ctp_epoch *e)
{
	return (uint64_t *)(void *)(e->reserved + CTP_EPOCH_TRACE_OFFSET);
}

/* Event n into epoch e as a seqlock (A, B, C).  flags: CTP_EPF_*, written
 * on every event (the slot may hold an earlier event's). */
static inline void station_write(struct ctp_epoch *e, uint64_t n, uint64_t ts,
				 uint64_t tid, uint64_t addr, int is_active,
				 uint64_t trace, uint8_t flags)
{
	/* (A) odd seq first; the release fence keeps the payload stores
	 * below from becoming visible before it.  The store itself is a
	 * release too: an engine that sees any seq of ours also sees the
	 * station's magic (free on x86). */
	atomic_store_explicit(&e->seq, 2 * n + 1, memory_order_release);
	atomic_thread_fence(memory_order_release);
	/* (B) payload: relaxed atomics, so a racing reader is not UB. */
	__atomic_store_n(&e->timestamp, ts, __ATOMIC_RELAXED);
	__atomic_store_n(&e->tid, tid, __ATOMIC_RELAXED);
	__atomic_store_n(&e->addr, addr, __ATOMIC_RELAXED);
	__atomic_store_n(&e->is_active, (uint8_t)(is_active != 0),
			 __ATOMIC_RELAXED);
	__atomic_store_n(station_trace_word(e), trace, __ATOMIC_RELAXED);
	__atomic_store_n(&e->reserved[CTP_EPOCH_FLAGS_OFFSET], flags,
			 __ATOMIC_RELAXED);
	/* (C) release pairs with the engine's acquire load (D). */
	atomic_store_explicit(&e->seq, ctp_event_seq(n), memory_order_release);
}

/* Epoch e holds no event at all (seq 0: never written), on a station that
 * is not published: relaxed, published by (G) like its header, or by the
 * free list's release (K) when it is given back.  The census takes back
 * the census event of a hand-over that failed. */
static inline void station_unwrite(struct ctp_epoch *e)
{
	atomic_store_explicit(&e->seq, 0, memory_order_relaxed);
}

#endif
