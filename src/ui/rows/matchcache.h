/*
 * matchcache: "did the filter match the cell that shows this value?",
 * remembered by value (a thread id, an address, a warning mask), so that a
 * refresh in which every record changed still formats and matches each
 * distinct value once.  See matchcache.c.
 */
#ifndef COROTOP_MATCHCACHE_H
#define COROTOP_MATCHCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hash.h"

struct matchcache_entry {
	uint64_t key;
	uint32_t gen; /* struct matchcache.gen when stored; else empty */
	uint8_t match;
};

struct matchcache {
	struct matchcache_entry *e;
	size_t cap;  /* power of two, or 0 */
	size_t used; /* entries stored in the current generation */
	uint32_t gen;
	/* The last key asked for, in front of the table: rows next to each
	 * other mostly share their thread and their warnings. */
	struct matchcache_entry last;
};

void matchcache_init(struct matchcache *mc);
void matchcache_finish(struct matchcache *mc);
/* Forget every result, in O(1). */
void matchcache_reset(struct matchcache *mc);
/* Room for about `distinct` keys; growing forgets every result.  False when
 * memory ran out (the cache then holds nothing and get always misses). */
bool matchcache_reserve(struct matchcache *mc, size_t distinct);
void matchcache_put(struct matchcache *mc, uint64_t key, bool match);

/* Fibonacci hashing: thread ids and addresses differ in low bits. */
static inline size_t matchcache_home(const struct matchcache *mc, uint64_t key)
{
	return (size_t)hash_fib(key, 32) & (mc->cap - 1);
}

/* 1 matched, 0 did not, -1 unknown.  Inline: the filter asks three times
 * per row, 100k rows per refresh. */
static inline int matchcache_get(struct matchcache *mc, uint64_t key)
{
	size_t i;

	if (mc->last.gen == mc->gen && mc->last.key == key)
		return mc->last.match;
	if (!mc->cap)
		return -1;
	for (i = matchcache_home(mc, key); mc->e[i].gen == mc->gen;
	     i = (i + 1) & (mc->cap - 1))
		if (mc->e[i].key == key) {
			mc->last = mc->e[i];
			return mc->e[i].match;
		}
	return -1;
}

/* Start loading key's bucket: the filter asks for it a few rows later. */
static inline void matchcache_prefetch(const struct matchcache *mc,
				       uint64_t key)
{
	if (mc->cap)
		__builtin_prefetch(&mc->e[matchcache_home(mc, key)]);
}

#endif
