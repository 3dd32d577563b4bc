/*
 * ctwriter: the put of a stack into a mapped CallTrace region -- the body of
 * corotop_calltrace_put, shared with tests and benchmarks that map a region
 * without going through the probe's environment.
 *
 * put = hash the frames, enter the ACTIVE table through a protection slot
 * (ctslot.h), find or insert the stack (cttable.h), add the weight and one
 * hit to its bucket, leave.  Anything that stops it -- no slot, a full table
 * or pool, a rotation raced twice -- returns CT_DROPPED_TRACE_ID and counts
 * the put and its weight in the region, so that
 *     sum(weight put) == sum(weight collected) + dropped_weight
 * holds exactly.  Async-signal-safe: no allocation, no lock, bounded loops.
 *
 * ct_view_init validates a mapping before the writer trusts it: magic,
 * version, and a geometry that is both sane and exactly what the file size
 * implies, so no offset computed from it leaves the mapping.
 */
#ifndef COROTOP_CTWRITER_H
#define COROTOP_CTWRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corotop/calltrace.h"
#include "wire/ctslot.h"
#include "wire/cttable.h"

struct ct_view {
	struct ct_header *hdr;
	struct ct_slot *slots;
	struct cttable t[CT_TABLES];
	struct ct_geometry g;
};

/* Build a view of a mapping of `size` bytes.  false: not a valid region. */
static inline bool ct_view_init(struct ct_view *v, void *base, uint64_t size)
{
	struct ct_header *h = (struct ct_header *)base;
	struct ct_geometry g;

	if (size < CT_HEADER_SIZE || h->magic != CT_MAGIC ||
	    h->version != CT_VERSION || h->header_size != CT_HEADER_SIZE ||
	    h->tables != CT_TABLES || h->slots != CT_SLOTS ||
	    h->max_frames != CT_MAX_FRAMES ||
	    ct_geometry(&g, h->max_traces, h->pool_frames) != 0 ||
	    g.buckets != h->buckets || g.slots_offset != h->slots_offset ||
	    g.tables_offset != h->tables_offset ||
	    g.table_stride != h->table_stride ||
	    g.pool_offset != h->pool_offset || g.region_size != size ||
	    h->region_size != size)
		return false;
	v->hdr = h;
	v->g = g;
	v->slots = (struct ct_slot *)(void *)((char *)base + g.slots_offset);
	for (unsigned i = 0; i < CT_TABLES; i++)
		cttable_view(&v->t[i], &h->table[i],
			     (char *)base + g.tables_offset +
				     (uint64_t)i * g.table_stride,
			     &g);
	return true;
}

static inline uint64_t ct_writer_drop(struct ct_header *h,
				      CTP_ATOMIC(uint64_t) * reason,
				      uint64_t weight)
{
	/* relaxed: statistics, read by the engine as such. */
	atomic_fetch_add_explicit(&h->dropped, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->dropped_weight, weight,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(reason, 1, memory_order_relaxed);
	return CT_DROPPED_TRACE_ID;
}

/*
 * Store n frames with `weight` for the thread `owner` (pid << 32 | tid).
 * Returns the trace id, or CT_DROPPED_TRACE_ID.  Longer stacks than
 * CT_MAX_FRAMES are truncated to their first CT_MAX_FRAMES frames.
 */
static inline uint64_t ct_writer_put(const struct ct_view *v, uint64_t owner,
				     const uint64_t *frames, unsigned n,
				     uint64_t weight)
{
	struct ct_header *h = v->hdr;
	struct ctslot_ticket tk;
	const struct cttable *t;
	enum ct_claim c;
	uint32_t idx;
	uint64_t hash, id;

	if (n > CT_MAX_FRAMES)
		n = CT_MAX_FRAMES;
	if (!frames && n)
		return ct_writer_drop(h, &h->drop_full, weight);
	hash = ct_hash(frames, n);
	switch (ctslot_enter(h, v->slots, owner, &tk)) {
	case CTSLOT_OK:
		break;
	case CTSLOT_NO_SLOT:
		return ct_writer_drop(h, &h->drop_no_slot, weight);
	default:
		return ct_writer_drop(h, &h->drop_raced, weight);
	}
	t = &v->t[CT_ROLE_INDEX(tk.word)];
	c = cttable_claim(t, frames, n, hash, true, &idx);
	if (c != CT_CLAIM_FOUND && c != CT_CLAIM_INSERTED) {
		ctslot_leave(&tk);
		return ct_writer_drop(h, &h->drop_full, weight);
	}
	/* relaxed (l): published to the engine by (h) in ctslot_leave. */
	atomic_fetch_add_explicit(&t->b[idx].weight, weight,
				  memory_order_relaxed);
	atomic_fetch_add_explicit(&t->b[idx].hits, 1, memory_order_relaxed);
	/* (f): the epoch is stable while we are inside. */
	id = cttable_id(t, idx, t->meta->epoch);
	ctslot_leave(&tk);
	return id;
}

#endif
