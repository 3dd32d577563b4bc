/*
 * linetab: per-64-byte-cache-line counters for the Cacheray reader, in one
 * open-addressing hash table with a hard cap on the lines it keeps.  See
 * linetab.c.
 *
 * A line records what false-sharing analysis needs in 64 bytes: reads and
 * writes, the first two threads that touched it (which bytes each touched,
 * whether each wrote), whether more threads touched or wrote it, the first
 * region (and element) that was accessed on it and whether others were,
 * and the first two types seen on it.  When memory is freed (an RTTA
 * region removed), linetab_forget drops its bytes from the thread slots,
 * so that a later owner of the bytes is not taken to share the line with
 * the earlier one.
 */
#ifndef COROTOP_LINETAB_H
#define COROTOP_LINETAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hash.h"

/* Lines kept by default: 3/4 of 2^20 slots, a 64 MiB table. */
#define LINETAB_MAX_LINES_DEFAULT 786432u

/* cacheline.flags */
enum {
	CACHELINE_W0 = 1u << 0,		/* thread slot 0 wrote */
	CACHELINE_W1 = 1u << 1,		/* thread slot 1 wrote */
	CACHELINE_MORE = 1u << 2,	/* a third thread touched the line */
	CACHELINE_MORE_W = 1u << 3,	/* ... and one of those wrote */
	CACHELINE_REGIONS = 1u << 4,	/* accesses in more than one region
					   (or typed and untyped) */
	CACHELINE_ELEMS = 1u << 5,	/* several elements of one region */
	CACHELINE_MORE_TYPES = 1u << 6, /* a third type was seen */
};

/* cacheline.region before the first access. */
#define CACHELINE_NO_REGION UINT32_MAX

struct cacheline {
	uint64_t key; /* line number (address >> 6) + 1; 0: empty slot */
	uint64_t reads, writes;
	uint64_t bytes[2];  /* bytes touched by thread slot 0 / 1, bit i =
			       byte i of the line */
	uint32_t region;    /* tag of the first region accessed (its serial
			       folded into 1..2^32-2; 0: untyped),
			       CACHELINE_NO_REGION before that */
	uint32_t elem;	    /* its element index */
	uint16_t thread[2]; /* thread index + 1 of each slot; 0: free */
	uint16_t type[2];   /* type index + 1 of the first two types */
	uint8_t flags;
};

struct linetab {
	struct cacheline *slot;
	uint32_t mask;	/* slots - 1 */
	uint32_t shift; /* 64 - log2(slots) */
	uint32_t count, max;
};

/* An empty table that keeps at most max_lines lines (0: the default).
 * False when out of memory. */
bool linetab_init(struct linetab *t, uint32_t max_lines);
void linetab_finish(struct linetab *t);

/* The line with this key, created empty if new; NULL when the table is at
 * its cap (or out of memory) and the line is not in it. */
struct cacheline *linetab_insert(struct linetab *t, uint64_t key);

/* Where the probe for key starts (for prefetching). */
static inline const struct cacheline *linetab_slot(const struct linetab *t,
						   uint64_t key)
{
	return &t->slot[hash_fib(key, t->shift)];
}

/* The line with this key, or NULL when the table does not hold it. */
static inline struct cacheline *linetab_find(struct linetab *t, uint64_t key)
{
	uint32_t i = (uint32_t)hash_fib(key, t->shift);

	for (;; i = (i + 1) & t->mask) {
		struct cacheline *l = &t->slot[i];

		if (l->key == key)
			return l;
		if (!l->key)
			return NULL;
	}
}

static inline struct cacheline *linetab_get(struct linetab *t, uint64_t key)
{
	uint32_t i = (uint32_t)hash_fib(key, t->shift);

	for (;; i = (i + 1) & t->mask) {
		struct cacheline *l = &t->slot[i];

		if (l->key == key)
			return l;
		if (!l->key)
			return linetab_insert(t, key);
	}
}

/* Written by one thread and touched by another (some thread wrote, and at
 * least two threads touched it). */
static inline bool cacheline_shared(const struct cacheline *l)
{
	return (l->flags & (CACHELINE_W0 | CACHELINE_W1 | CACHELINE_MORE_W)) &&
	       (l->thread[1] || (l->flags & CACHELINE_MORE));
}

static inline uint64_t cacheline_accesses(const struct cacheline *l)
{
	return l->reads + l->writes;
}

/*
 * Forget the bytes [start, last] (addresses, inclusive) in the lines the
 * table holds: they are cleared from both thread slots' byte masks, and a
 * slot left without bytes is freed (with its write flag; slot 1 moves to
 * slot 0), so the thread no longer counts as one of the line's users.
 * When the bytes cover the whole line, the "more threads" flag goes too
 * (every user's bytes are gone).  A line that is already shared
 * (cacheline_shared) is left as it is: a verdict, once reached, stays.
 * A slot that keeps some bytes keeps its write flag (one flag per slot,
 * not per byte).  Work: min(lines in [start, last], table slots).
 */
void linetab_forget(struct linetab *t, uint64_t start, uint64_t last);

/*
 * The (at most max) lines with the most accesses, most first (ties: lower
 * address first), into out; only shared ones (cacheline_shared) when
 * shared_only.  O(lines log max).
 */
size_t linetab_top(const struct linetab *t, bool shared_only,
		   const struct cacheline **out, size_t max);

#endif
