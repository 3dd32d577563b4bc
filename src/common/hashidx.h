/*
 * hashidx: an open-addressing index from 64-bit hashes to record numbers,
 * for tables whose records live in an array of their own (hotstacks.c,
 * framenames.c).
 *
 * Linear probing from hash & mask; a slot holds the full hash and the record
 * number + 1 (0 = empty).  Equal hashes are only candidates: the caller
 * confirms each one against its record (the equality callback), so a hash
 * collision costs a comparison, never a wrong answer.  Deletion shifts the
 * following entries back instead of leaving tombstones, so a table that
 * churns (records evicted and inserted for hours) never degrades.  The
 * caller sizes the index at twice the records it will ever hold: the load
 * stays at or below 1/2 and every probe sequence ends at an empty slot.
 */
#ifndef COROTOP_HASHIDX_H
#define COROTOP_HASHIDX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HASHIDX_NONE UINT32_MAX

struct hashidx {
	uint64_t *hash;
	uint32_t *val; /* record + 1; 0 = empty slot */
	uint32_t mask;
};

/* An index of at least 2 * max_records slots (a power of two). */
static inline bool hashidx_init(struct hashidx *x, size_t max_records)
{
	size_t n = 16;

	while (n < 2 * max_records)
		n *= 2;
	x->hash = calloc(n, sizeof(*x->hash));
	x->val = calloc(n, sizeof(*x->val));
	x->mask = (uint32_t)(n - 1);
	if (x->hash && x->val)
		return true;
	free(x->hash);
	free(x->val);
	memset(x, 0, sizeof(*x));
	return false;
}

static inline void hashidx_finish(struct hashidx *x)
{
	free(x->hash);
	free(x->val);
	memset(x, 0, sizeof(*x));
}

static inline void hashidx_clear(struct hashidx *x)
{
	if (x->val)
		memset(x->val, 0, ((size_t)x->mask + 1) * sizeof(*x->val));
}

/* The record whose hash is h and for which eq(ctx, record) holds, or
 * HASHIDX_NONE. */
static inline uint32_t hashidx_find(const struct hashidx *x, uint64_t h,
				    bool (*eq)(void *ctx, uint32_t rec),
				    void *ctx)
{
	for (uint32_t i = (uint32_t)h & x->mask;; i = (i + 1) & x->mask) {
		if (!x->val[i])
			return HASHIDX_NONE;
		if (x->hash[i] == h && eq(ctx, x->val[i] - 1))
			return x->val[i] - 1;
	}
}

/* Add record rec under h (the caller checked it is not there yet). */
static inline void hashidx_insert(struct hashidx *x, uint64_t h, uint32_t rec)
{
	uint32_t i = (uint32_t)h & x->mask;

	while (x->val[i])
		i = (i + 1) & x->mask;
	x->hash[i] = h;
	x->val[i] = rec + 1;
}

/* Remove record rec, filed under h; shift the run after it back. */
static inline void hashidx_remove(struct hashidx *x, uint64_t h, uint32_t rec)
{
	uint32_t i = (uint32_t)h & x->mask, j;

	while (x->val[i] && x->val[i] != rec + 1)
		i = (i + 1) & x->mask;
	if (!x->val[i])
		return;
	x->val[i] = 0;
	for (j = (i + 1) & x->mask; x->val[j]; j = (j + 1) & x->mask) {
		uint32_t home = (uint32_t)x->hash[j] & x->mask;
		/* An entry may move back to i only if its home is not in the
		 * cyclic range (i, j]: it would then be found before i. */
		bool stays = i <= j ? (home > i && home <= j)
				    : (home > i || home <= j);

		if (stays)
			continue;
		x->hash[i] = x->hash[j];
		x->val[i] = x->val[j];
		x->val[j] = 0;
		i = j;
	}
}

#endif
