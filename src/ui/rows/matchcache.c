/*
 * matchcache: a filter's results by the value a cell shows.
 *
 * The table filter matches each row's name cells (filter.c).  Most cells
 * are functions of one value that many rows share or that stays put while
 * the rest of the record changes: a thread id, a parked-at address (upstream
 * probes report the coroutine frame, which lives as long as the coroutine),
 * a warning mask.  Remembering the result per value means a refresh in which
 * all 100k records switched formats and matches each distinct value once,
 * not each row.
 *
 * An open-addressing table with linear probing, keyed by the 64-bit value.
 * Entries carry the generation they were stored in; anything else is empty,
 * so forgetting everything (the filter or the symbols changed) is one
 * increment.  The table is never more than half full: a put that would pass
 * that starts a new generation, so lookups always end at an empty entry,
 * and a miss (the common case when the values are new) probes about 2.5
 * entries, not the 8.5 of a 3/4-full table.
 * Memory is two entries per expected distinct value, 16 bytes each.  The
 * last key found or stored sits in front of the table (struct matchcache
 * last), with the same generation rule.
 */
#define _GNU_SOURCE /* MADV_HUGEPAGE */
#include "ui/rows/matchcache.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>

#define MATCHCACHE_MIN 64u
#define MATCHCACHE_MAX ((size_t)1 << 24)
#define MATCHCACHE_HUGE ((size_t)2 << 20) /* x86-64 and arm64 huge page */

void matchcache_init(struct matchcache *mc)
{
	memset(mc, 0, sizeof(*mc));
	mc->gen = 1; /* calloc'ed entries hold gen 0: empty */
}

void matchcache_finish(struct matchcache *mc)
{
	free(mc->e);
	memset(mc, 0, sizeof(*mc));
}

void matchcache_reset(struct matchcache *mc)
{
	mc->used = 0;
	if (++mc->gen == 0) {
		/* Wrapped: entries of generation 1 would come back to life. */
		if (mc->e)
			memset(mc->e, 0, mc->cap * sizeof(*mc->e));
		memset(&mc->last, 0, sizeof(mc->last));
		mc->gen = 1;
	}
}

/* Zeroed entries.  Tables of megabytes are looked up at random, one miss
 * per row, so they ask for huge pages: 4 KiB pages cost a TLB walk on
 * nearly every lookup as well. */
static struct matchcache_entry *matchcache_alloc(size_t n)
{
	size_t bytes = n * sizeof(struct matchcache_entry);
	void *p;

	if (bytes < MATCHCACHE_HUGE)
		return calloc(n, sizeof(struct matchcache_entry));
	if (posix_memalign(&p, MATCHCACHE_HUGE, bytes))
		return NULL;
	(void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint: may be off */
	memset(p, 0, bytes);
	return p;
}

bool matchcache_reserve(struct matchcache *mc, size_t distinct)
{
	size_t need = MATCHCACHE_MIN;
	struct matchcache_entry *e;

	while (need < distinct * 2 && need < MATCHCACHE_MAX)
		need *= 2;
	if (need <= mc->cap)
		return true;
	e = matchcache_alloc(need);
	if (!e)
		return mc->cap != 0;
	free(mc->e);
	mc->e = e;
	mc->cap = need;
	mc->used = 0;
	mc->gen = 1;
	memset(&mc->last, 0, sizeof(mc->last));
	return true;
}

void matchcache_put(struct matchcache *mc, uint64_t key, bool match)
{
	size_t i;

	if (!mc->cap)
		return;
	if ((mc->used + 1) * 2 > mc->cap)
		matchcache_reset(mc);
	for (i = matchcache_home(mc, key); mc->e[i].gen == mc->gen;
	     i = (i + 1) & (mc->cap - 1))
		if (mc->e[i].key == key) {
			mc->e[i].match = match;
			mc->last = mc->e[i];
			return;
		}
	mc->e[i] = (struct matchcache_entry){
		.key = key, .gen = mc->gen, .match = match};
	mc->last = mc->e[i];
	mc->used++;
}
