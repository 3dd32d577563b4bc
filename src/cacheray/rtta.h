/*
 * rtta: Cacheray's run-time type annotations as an interval map from address
 * ranges to types.  See rtta.c.
 *
 * The map holds non-overlapping regions [start, end), each with a type id,
 * an element size and a serial number (distinct per add, so two regions
 * that reuse one address are still told apart).  An add that overlaps live
 * regions wins: the older regions it touches are dropped whole (see rtta.c
 * for why).  Lookups answer with the region that holds an address or, when
 * none does, with the gap around it, so that a caller can cache either.
 * A hook, when set, hears of every region that leaves the map (removed or
 * dropped), with its extent.
 */
#ifndef COROTOP_RTTA_H
#define COROTOP_RTTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Live regions kept by default; an add beyond the limit is dropped. */
#define RTTA_MAX_REGIONS_DEFAULT (1u << 22)

struct rtta_node {
	uint64_t start, last; /* [start, last], inclusive */
	uint32_t left, right; /* the free list goes through left */
	uint32_t prio;
	uint32_t type, elemsize;
	uint64_t serial; /* 0 while the node is free */
};

struct rtta {
	struct rtta_node *node; /* [0] unused: index 0 means "none" */
	size_t cap;		/* allocated nodes */
	uint32_t used;		/* nodes handed out + 1 */
	uint32_t free;		/* free list through .left */
	uint32_t root;
	uint32_t live, max;
	uint64_t rng;
	/* Called with [start, last] of each region as it leaves the map
	 * (rtta_remove, or dropped by an overlapping rtta_add); NULL: none.
	 * Set after rtta_init. */
	void (*on_remove)(void *ctx, uint64_t start, uint64_t last);
	void *ctx;
};

/*
 * What holds an address: a region (type, elemsize and serial set) or a gap
 * (region false, serial 0) -- either way the range [start, last] around the
 * address with the same answer.  last is inclusive, so a range can reach
 * the top of the address space.
 */
struct rtta_hit {
	uint64_t start, last;
	uint32_t type, elemsize;
	uint64_t serial;
	uint32_t node; /* the region's node (see rtta_still) */
	bool region;
};

/* Result of rtta_add. */
enum rtta_add_result {
	RTTA_ADDED,
	RTTA_FULL, /* max live regions reached: not added */
	RTTA_NOMEM,
};

/* An empty map that keeps at most max_regions live regions (0: default). */
void rtta_init(struct rtta *r, uint32_t max_regions);
void rtta_finish(struct rtta *r);

/*
 * Add [start, start + len) (len > 0, start + len <= 2^64) with the given
 * type, elemsize and serial.  Live regions overlapping it are dropped first
 * (the hook hears of each); *dropped counts them.  On RTTA_FULL / RTTA_NOMEM
 * nothing changes (the overlapping regions are still dropped: they are stale
 * either way).
 */
enum rtta_add_result rtta_add(struct rtta *r, uint64_t start, uint64_t len,
			      uint32_t type, uint32_t elemsize, uint64_t serial,
			      uint32_t *dropped);

/* Remove the region that starts at start (the hook hears of it); false
 * when there is none. */
bool rtta_remove(struct rtta *r, uint64_t start);

/* The region holding addr, or the gap around it. */
void rtta_lookup(const struct rtta *r, uint64_t addr, struct rtta_hit *hit);

/*
 * Whether a region answer (hit.node, hit.serial) still holds: the region
 * was not removed or dropped since.  (Serials are the caller's; they must
 * differ between adds that reuse a node: a 64-bit counter never repeats.)
 * Gap answers only go stale when a region is added.
 */
static inline bool rtta_still(const struct rtta *r, uint32_t node,
			      uint64_t serial)
{
	return node < r->used && r->node[node].serial == serial;
}

/* Live regions. */
static inline uint32_t rtta_live(const struct rtta *r)
{
	return r->live;
}

#endif
