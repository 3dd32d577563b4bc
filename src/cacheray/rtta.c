/*
 * rtta: the interval map behind Cacheray's run-time type annotations.
 *
 * Cacheray's RTTA records come from a compiler pass that wraps malloc,
 * calloc, realloc and free (a realloc is logged as a remove plus an add), so
 * a live region is a live heap block and live regions never overlap in a
 * well-formed trace.  The map keeps them as a treap (a binary search tree
 * on the start address, heap-ordered on random priorities): expected
 * O(log n) per lookup, add and remove, and memory proportional to the live
 * regions only.  Nodes live in one array, linked by 32-bit indexes (0 is
 * "none"), freed nodes go to a free list, and every walk is iterative, so a
 * degenerate shape could only ever be slow, never overflow the stack.
 *
 * Overlap rule: the newer add wins, and every older region it overlaps is
 * dropped whole (the caller counts them).  An allocator never hands out a
 * block that overlaps a live one, so an overlap means the older block's
 * free was not logged (freed by code built without the pass): the older
 * region is dead, and keeping its remaining bytes would attribute later
 * accesses to a type that no longer lives there.  The cost of the rule is
 * nested annotations (an arena annotated, then objects inside it): the
 * arena loses its annotation when the first object is added.
 *
 * Lookups return the region holding an address or the gap between the
 * neighbouring regions, so the caller's one-entry cache also catches runs
 * of untyped accesses.
 */
#include "cacheray/rtta.h"

#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/grow.h"

#define RTTA_N(r, i) ((r)->node[(i)])

void rtta_init(struct rtta *r, uint32_t max_regions)
{
	memset(r, 0, sizeof(*r));
	r->max = max_regions ? max_regions : RTTA_MAX_REGIONS_DEFAULT;
	if (r->max > UINT32_MAX - 2)
		r->max = UINT32_MAX - 2;
	r->used = 1;
	r->rng = HASH_GOLDEN;
}

void rtta_finish(struct rtta *r)
{
	free(r->node);
	memset(r, 0, sizeof(*r));
}

static uint32_t rtta_prio(struct rtta *r)
{
	/* xorshift64*: the priorities only need to be independent of the
	 * addresses, which is what keeps the tree balanced on any input. */
	r->rng ^= r->rng >> 12;
	r->rng ^= r->rng << 25;
	r->rng ^= r->rng >> 27;
	return (uint32_t)((r->rng * 2685821657736338717ull) >> 32);
}

static uint32_t rtta_alloc(struct rtta *r)
{
	uint32_t i;

	if (r->free) {
		i = r->free;
		r->free = RTTA_N(r, i).left;
		return i;
	}
	if (!grow_array_max((void **)&r->node, &r->cap, (size_t)r->used + 1,
			    (size_t)r->max + 1, sizeof(*r->node)))
		return 0;
	return r->used++;
}

static void rtta_release(struct rtta *r, uint32_t i)
{
	RTTA_N(r, i).serial = 0;
	RTTA_N(r, i).left = r->free;
	r->free = i;
}

/* Split t into the nodes that start before key (*l) and the rest (*rt). */
static void rtta_split(struct rtta *r, uint32_t t, uint64_t key, uint32_t *l,
		       uint32_t *rt)
{
	while (t) {
		if (RTTA_N(r, t).start < key) {
			*l = t;
			l = &RTTA_N(r, t).right;
			t = RTTA_N(r, t).right;
		} else {
			*rt = t;
			rt = &RTTA_N(r, t).left;
			t = RTTA_N(r, t).left;
		}
	}
	*l = 0;
	*rt = 0;
}

/* Join two treaps, every key of a below every key of b. */
static uint32_t rtta_merge(struct rtta *r, uint32_t a, uint32_t b)
{
	uint32_t res = 0, *p = &res;

	while (a && b) {
		if (RTTA_N(r, a).prio > RTTA_N(r, b).prio) {
			*p = a;
			p = &RTTA_N(r, a).right;
			a = RTTA_N(r, a).right;
		} else {
			*p = b;
			p = &RTTA_N(r, b).left;
			b = RTTA_N(r, b).left;
		}
	}
	*p = a ? a : b;
	return res;
}

/* The live region that starts at or below addr and starts last, or 0. */
static uint32_t rtta_floor(const struct rtta *r, uint64_t addr)
{
	uint32_t t = r->root, best = 0;

	while (t) {
		if (RTTA_N(r, t).start <= addr) {
			best = t;
			t = RTTA_N(r, t).right;
		} else {
			t = RTTA_N(r, t).left;
		}
	}
	return best;
}

bool rtta_remove(struct rtta *r, uint64_t start)
{
	uint32_t *slot = &r->root, x;

	while (*slot && RTTA_N(r, *slot).start != start)
		slot = start < RTTA_N(r, *slot).start ? &RTTA_N(r, *slot).left
						      : &RTTA_N(r, *slot).right;
	x = *slot;
	if (!x)
		return false;
	if (r->on_remove)
		r->on_remove(r->ctx, RTTA_N(r, x).start, RTTA_N(r, x).last);
	*slot = rtta_merge(r, RTTA_N(r, x).left, RTTA_N(r, x).right);
	rtta_release(r, x);
	r->live--;
	return true;
}

enum rtta_add_result rtta_add(struct rtta *r, uint64_t start, uint64_t len,
			      uint32_t type, uint32_t elemsize, uint64_t serial,
			      uint32_t *dropped)
{
	uint64_t last = start + (len - 1);
	uint32_t x, *slot;

	*dropped = 0;
	/* Live regions are disjoint and sorted, so the ones overlapping
	 * [start, last] are the floor of last, then its predecessors, for as
	 * long as they reach start. */
	for (;;) {
		uint32_t f = rtta_floor(r, last);

		if (!f || RTTA_N(r, f).last < start)
			break;
		rtta_remove(r, RTTA_N(r, f).start);
		(*dropped)++;
	}
	if (r->live >= r->max)
		return RTTA_FULL;
	x = rtta_alloc(r);
	if (!x)
		return r->cap >= r->max + 1 ? RTTA_FULL : RTTA_NOMEM;
	RTTA_N(r, x) = (struct rtta_node){
		.start = start,
		.last = last,
		.prio = rtta_prio(r),
		.type = type,
		.elemsize = elemsize,
		.serial = serial,
	};
	/* Treap insert: down to where the priority fits, split there. */
	slot = &r->root;
	while (*slot && RTTA_N(r, *slot).prio > RTTA_N(r, x).prio)
		slot = start < RTTA_N(r, *slot).start ? &RTTA_N(r, *slot).left
						      : &RTTA_N(r, *slot).right;
	rtta_split(r, *slot, start, &RTTA_N(r, x).left, &RTTA_N(r, x).right);
	*slot = x;
	r->live++;
	return RTTA_ADDED;
}

void rtta_lookup(const struct rtta *r, uint64_t addr, struct rtta_hit *hit)
{
	uint32_t t = r->root, below = 0;
	uint64_t gap_last = UINT64_MAX;

	while (t) {
		if (RTTA_N(r, t).start <= addr) {
			below = t;
			t = RTTA_N(r, t).right;
		} else {
			gap_last = RTTA_N(r, t).start - 1;
			t = RTTA_N(r, t).left;
		}
	}
	if (below && addr <= RTTA_N(r, below).last) {
		const struct rtta_node *n = &RTTA_N(r, below);

		*hit = (struct rtta_hit){
			.start = n->start,
			.last = n->last,
			.type = n->type,
			.elemsize = n->elemsize,
			.serial = n->serial,
			.node = below,
			.region = true,
		};
		return;
	}
	*hit = (struct rtta_hit){
		.start = below ? RTTA_N(r, below).last + 1 : 0,
		.last = gap_last,
	};
}
