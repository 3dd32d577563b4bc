/*
 * cttable: one CallTrace hash table -- buckets plus a frame pool -- as both
 * the writer (any thread, signal handlers included) and the engine see it.
 *
 * A stack is hashed (ct_hash), then looked up by open addressing: the first
 * bucket comes from the low bits of the hash, and each next one is a prime
 * step further (the step chosen from the hash among CT_PRIME_STEPS, all odd
 * and so coprime to the power-of-two bucket count: the sequence visits every
 * bucket).  Two stacks are equal when their key (32 hash bits, frame count)
 * and their frames are equal; the hash alone never decides.
 *
 * Inserting a new stack: reserve room in the pool (fetch_add, i), copy the
 * frames there, then claim an empty bucket by CAS of its key from 0 (j), so
 * a key seen non-zero always comes with its frames (g).  A CAS lost to a
 * racing writer re-reads that bucket: if it now holds the same stack, that
 * is the answer, else the probe goes on with the frames already copied.
 * Every loop is bounded (CT_BUCKET_PROBES, the bucket count), nothing is
 * allocated and nothing blocks: safe in a signal handler.
 *
 * The view below is built from trusted (engine) or validated (probe)
 * geometry; keys read from the table are still bounded before use.
 */
#ifndef COROTOP_CTTABLE_H
#define COROTOP_CTTABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "corotop/calltrace.h"

static const uint32_t ct_prime_steps[CT_PRIME_STEP_COUNT] = {
	1009, 1013, 1019, 1021, 1031, 1033, 1039, 1049,
	1051, 1061, 1063, 1069, 1087, 1091, 1093, 1097,
};

enum ct_claim {
	CT_CLAIM_FOUND = 0, /* the stack was there */
	CT_CLAIM_INSERTED,  /* a new bucket now holds it */
	CT_CLAIM_FULL,	    /* max_traces stacks already */
	CT_CLAIM_POOL_FULL, /* no room for the frames */
	CT_CLAIM_NO_BUCKET, /* no empty bucket within the probe bound */
};

struct cttable {
	struct ct_table_meta *meta;
	struct ct_bucket *b;
	uint64_t *pool;
	uint32_t mask; /* buckets - 1 */
	uint32_t max_traces;
	uint32_t pool_frames;
	uint32_t probes; /* min(CT_BUCKET_PROBES, buckets) */
};

static inline uint64_t ct_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* 64-bit hash of n frames (two independent lanes for speed). */
static inline uint64_t ct_hash(const uint64_t *f, unsigned n)
{
	uint64_t a = 0x9e3779b97f4a7c15ull ^ n, b = 0xc2b2ae3d27d4eb4full;
	unsigned i = 0;

	for (; i + 1 < n; i += 2) {
		a = (a ^ f[i]) * 0x87c37b91114253d5ull;
		b = (b ^ f[i + 1]) * 0x4cf5ad432745937full;
		a ^= a >> 31;
		b ^= b >> 29;
	}
	if (i < n)
		a = (a ^ f[i]) * 0x87c37b91114253d5ull;
	return ct_mix64(a ^ (b * 0xff51afd7ed558ccdull));
}

/* The prime step for a hash (bits 28..31, above any bucket mask we use). */
static inline uint32_t ct_step(uint64_t h)
{
	return ct_prime_steps[(h >> 28) & (CT_PRIME_STEP_COUNT - 1)];
}

/* i-th position of the probe sequence starting at start. */
static inline uint32_t ct_probe_pos(uint32_t start, uint32_t step, uint32_t i,
				    uint32_t mask)
{
	return (uint32_t)((start + (uint64_t)i * step) & mask);
}

static inline uint64_t ct_key(uint64_t h, unsigned n, uint32_t off)
{
	uint64_t h32 = h >> 32;

	if (h32 == 0)
		h32 = 1; /* a key is never 0 */
	return (h32 << 32) | ((uint64_t)n << CT_KEY_OFF_BITS) | off;
}

static inline unsigned ct_key_n(uint64_t key)
{
	return (unsigned)(key >> CT_KEY_OFF_BITS) & ((1u << CT_KEY_N_BITS) - 1);
}

static inline uint32_t ct_key_off(uint64_t key)
{
	return (uint32_t)key & ((1u << CT_KEY_OFF_BITS) - 1);
}

/* Same hash bits and frame count (the offset differs per copy). */
static inline bool ct_key_same(uint64_t a, uint64_t b)
{
	return (a >> CT_KEY_OFF_BITS) == (b >> CT_KEY_OFF_BITS);
}

static inline void cttable_view(struct cttable *t, struct ct_table_meta *meta,
				void *table_base, const struct ct_geometry *g)
{
	t->meta = meta;
	t->b = (struct ct_bucket *)table_base;
	t->pool = (uint64_t *)(void *)((char *)table_base + g->pool_offset);
	t->mask = g->buckets - 1;
	t->max_traces = g->max_traces;
	t->pool_frames = g->pool_frames;
	t->probes =
		g->buckets < CT_BUCKET_PROBES ? g->buckets : CT_BUCKET_PROBES;
}

/* Frames of a key, or NULL when its offset and count leave the pool. */
static inline const uint64_t *cttable_frames(const struct cttable *t,
					     uint64_t key)
{
	uint64_t off = ct_key_off(key), n = ct_key_n(key);

	if (n > CT_MAX_FRAMES || off + n > t->pool_frames)
		return NULL;
	return t->pool + off;
}

static inline bool cttable_equal(const struct cttable *t, uint64_t key,
				 uint64_t want, const uint64_t *frames,
				 unsigned n)
{
	const uint64_t *have;

	if (!ct_key_same(key, want))
		return false;
	have = cttable_frames(t, key);
	return have && (n == 0 || memcmp(have, frames, n * 8u) == 0);
}

/*
 * Find the stack or insert it.  match = false always inserts a new bucket
 * (the engine re-inserting a preserved id whose frames another preserved id
 * already has).  On FOUND/INSERTED *index is the bucket.  n <= CT_MAX_FRAMES.
 */
static inline enum ct_claim cttable_claim(const struct cttable *t,
					  const uint64_t *frames, unsigned n,
					  uint64_t h, bool match,
					  uint32_t *index)
{
	uint32_t start = (uint32_t)h & t->mask, step = ct_step(h);
	uint64_t want = ct_key(h, n, 0), mine = 0;
	bool reserved = false;

	for (uint32_t i = 0; i < t->probes; i++) {
		uint32_t pos = ct_probe_pos(start, step, i, t->mask);
		struct ct_bucket *b = &t->b[pos];
		/* acquire (g) pairs with the inserter's release CAS (j). */
		uint64_t key =
			atomic_load_explicit(&b->key, memory_order_acquire);

		if (key == 0) {
			if (!reserved) {
				uint64_t off;

				/* relaxed: a bound, not an ordering. */
				if (atomic_load_explicit(
					    &t->meta->traces,
					    memory_order_relaxed) >=
				    t->max_traces)
					return CT_CLAIM_FULL;
				/* relaxed (i): only the room must be ours. */
				off = atomic_fetch_add_explicit(
					&t->meta->pool_used, n,
					memory_order_relaxed);
				if (off + n > t->pool_frames)
					return CT_CLAIM_POOL_FULL;
				if (n)
					memcpy(t->pool + off, frames, n * 8u);
				mine = ct_key(h, n, (uint32_t)off);
				reserved = true;
			}
			/* release (j): the frames are visible with the key;
			 * acquire on failure (g): so are the winner's. */
			if (atomic_compare_exchange_strong_explicit(
				    &b->key, &key, mine, memory_order_release,
				    memory_order_acquire)) {
				/* relaxed: a bound (see above). */
				atomic_fetch_add_explicit(&t->meta->traces, 1,
							  memory_order_relaxed);
				*index = pos;
				return CT_CLAIM_INSERTED;
			}
		}
		if (match && cttable_equal(t, key, want, frames, n)) {
			*index = pos;
			return CT_CLAIM_FOUND;
		}
	}
	return CT_CLAIM_NO_BUCKET;
}

/* The id of the stack in bucket index of a table with epoch `epoch`. */
static inline uint64_t cttable_id(const struct cttable *t, uint32_t index,
				  uint32_t epoch)
{
	uint64_t id = t->b[index].id;

	return id ? id : ((uint64_t)epoch << 32) | index;
}

#endif
