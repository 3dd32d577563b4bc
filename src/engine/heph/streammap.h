/*
 * streammap: the (stream, substream) pairs of a Heph trace, each numbered
 * 0, 1, 2 ... in the order first seen -- the key both readers of a trace
 * group its events by: replay (a coroutine's intervals, births and deaths)
 * and corotop convert (a Chrome thread per pair).
 *
 * Open addressing over the numbers (slot: number + 1, 0 empty), at most
 * half full; the pairs themselves are kept in order, so the number of a
 * pair and the pair of a number are both one step.  The keys come from an
 * untrusted file: the hash is seeded per map (hash_seed, common/hash.h), so no
 * file can make its keys land in one slot.
 */
#ifndef COROTOP_STREAMMAP_H
#define COROTOP_STREAMMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct streammap_key {
	uint64_t substream;
	uint32_t stream;
};

struct streammap {
	struct streammap_key *key; /* by number */
	size_t n, cap_key;
	uint32_t *slot; /* number + 1; 0: empty */
	size_t nslot;	/* 0 or a power of two, at least 2 n */
	uint64_t seed;
};

void streammap_init(struct streammap *m);
void streammap_finish(struct streammap *m);

/* The number of (substream, stream); a new one (make) if it is not there
 * yet.  -1: not there (!make), or no memory. */
long streammap_get(struct streammap *m, uint64_t substream, uint32_t stream,
		   bool make);

#endif
