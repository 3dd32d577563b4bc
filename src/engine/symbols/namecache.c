/*
 * namecache: an open-addressing table from code address to the offsets of
 * its two name forms in one text arena, under one mutex, and (for a cache
 * that resolves later) a queue of misses with a thread that drains it.
 *
 * An address asked for and not known yet gets an entry marked pending, so
 * that a hundred thousand records parked at one place queue it once; the
 * thread fills the entry.  The table never holds more than max_names
 * entries: the insert that would pass the bound forgets every name first
 * (the next pass asks again for what it still shows), which keeps the
 * probe sequences short and the memory bounded without an eviction order.
 *
 * Locking: `lock` guards everything but cfg (immutable) and the thread
 * handle.  A pass (namecache_begin .. namecache_end) holds it throughout;
 * the thread holds it only to take misses and to store names, never while
 * it resolves, so a pass waits at most for a few table operations.
 */
#define _GNU_SOURCE
#include "engine/symbols/namecache.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/hash.h"

#define NAMECACHE_PENDING UINT32_MAX /* entry.full: asked, not resolved */
#define NAMECACHE_BATCH 64u	     /* misses the thread takes at once */

struct namecache_entry {
	uint64_t addr;	      /* 0: an empty slot */
	uint32_t full, brief; /* offsets into text, or NAMECACHE_PENDING */
};

struct namecache {
	struct namecache_config cfg;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* the thread waits on it for misses or stop */
	struct namecache_entry *slot;
	uint32_t nslots, shift; /* a power of two, at least 2 * max_names */
	uint32_t n;		/* entries in use, pending ones included */
	char *text;
	size_t len, cap;
	uint64_t *queue; /* max_queued misses for the thread */
	uint32_t nqueue;
	uint32_t gen;	 /* bumped when names are added or forgotten */
	uint32_t rgen;	 /* the resolver's generation last seen */
	uint32_t clears; /* namecache_clear calls: a resolve in flight
			    across one is dropped */
	uint64_t resolves;
	bool stop;
	bool threaded;
	pthread_t thread;
};

static struct namecache_entry *namecache_slot(struct namecache *nc,
					      uint64_t addr)
{
	uint32_t i = (uint32_t)hash_fib(addr, nc->shift);

	while (nc->slot[i].addr && nc->slot[i].addr != addr)
		i = (i + 1) & (nc->nslots - 1);
	return &nc->slot[i];
}

static void namecache_forget(struct namecache *nc)
{
	memset(nc->slot, 0, nc->nslots * sizeof(*nc->slot));
	nc->n = 0;
	nc->len = 0;
	nc->nqueue = 0;
	nc->gen++;
}

/* A copy of s in the arena; its offset, or NAMECACHE_PENDING when out of
 * memory (the address then stays unnamed). */
static uint32_t namecache_text(struct namecache *nc, const char *s)
{
	size_t l = strnlen(s, NAMECACHE_NAME_MAX - 1);
	uint32_t at = (uint32_t)nc->len;

	if (!grow_array((void **)&nc->text, &nc->cap, nc->len + l + 1, 1))
		return NAMECACHE_PENDING;
	memcpy(nc->text + nc->len, s, l);
	nc->text[nc->len + l] = '\0';
	nc->len += l + 1;
	return at;
}

/* The entry for addr, made (pending) when missing; NULL when none can be. */
static struct namecache_entry *namecache_entry(struct namecache *nc,
					       uint64_t addr)
{
	struct namecache_entry *e = namecache_slot(nc, addr);

	if (e->addr)
		return e;
	if (nc->n >= nc->cfg.max_names) {
		namecache_forget(nc);
		e = namecache_slot(nc, addr);
	}
	*e = (struct namecache_entry){addr, NAMECACHE_PENDING,
				      NAMECACHE_PENDING};
	nc->n++;
	return e;
}

/* Store a resolved name (under the lock). */
static void namecache_store(struct namecache *nc, uint64_t addr, uint32_t rgen,
			    const char *full, const char *brief)
{
	struct namecache_entry *e;

	if (rgen != nc->rgen) {
		if (nc->n)
			namecache_forget(nc);
		nc->rgen = rgen;
	}
	e = namecache_entry(nc, addr);
	e->full = namecache_text(nc, full);
	e->brief = e->full == NAMECACHE_PENDING ? NAMECACHE_PENDING
						: namecache_text(nc, brief);
	if (e->brief == NAMECACHE_PENDING)
		e->full = NAMECACHE_PENDING;
	nc->resolves++;
	nc->gen++;
}

static void *namecache_main(void *arg)
{
	struct namecache *nc = arg;
	char full[NAMECACHE_BATCH][NAMECACHE_NAME_MAX];
	char brief[NAMECACHE_BATCH][NAMECACHE_NAME_MAX];
	uint64_t addr[NAMECACHE_BATCH];
	uint32_t rgen[NAMECACHE_BATCH];

	pthread_mutex_lock(&nc->lock);
	while (!nc->stop) {
		uint32_t k = 0, clears;

		if (!nc->nqueue) {
			pthread_cond_wait(&nc->wake, &nc->lock);
			continue;
		}
		while (nc->nqueue && k < NAMECACHE_BATCH)
			addr[k++] = nc->queue[--nc->nqueue];
		clears = nc->clears;
		pthread_mutex_unlock(&nc->lock);
		for (uint32_t i = 0; i < k; i++)
			rgen[i] = nc->cfg.resolve(nc->cfg.ctx, addr[i], full[i],
						  brief[i]);
		pthread_mutex_lock(&nc->lock);
		/* Names of a process that is no longer the one named are
		 * dropped; the next pass asks again. */
		if (clears != nc->clears)
			continue;
		for (uint32_t i = 0; i < k; i++)
			namecache_store(nc, addr[i], rgen[i], full[i],
					brief[i]);
		pthread_mutex_unlock(&nc->lock);
		if (nc->cfg.notify)
			nc->cfg.notify(nc->cfg.ctx);
		pthread_mutex_lock(&nc->lock);
	}
	pthread_mutex_unlock(&nc->lock);
	return NULL;
}

struct namecache *namecache_create(const struct namecache_config *c)
{
	struct namecache *nc = calloc(1, sizeof(*nc));
	uint32_t slots = 2;

	if (!nc)
		return NULL;
	nc->cfg = *c;
	if (!nc->cfg.max_names)
		nc->cfg.max_names = 1;
	if (nc->cfg.max_names > (1u << 30))
		nc->cfg.max_names = 1u << 30;
	while (slots < 2 * nc->cfg.max_names)
		slots *= 2;
	nc->nslots = slots;
	nc->shift = 64 - (uint32_t)__builtin_ctz(slots);
	nc->slot = calloc(slots, sizeof(*nc->slot));
	nc->queue = calloc(nc->cfg.max_queued ? nc->cfg.max_queued : 1,
			   sizeof(*nc->queue));
	pthread_mutex_init(&nc->lock, NULL);
	pthread_cond_init(&nc->wake, NULL);
	if (!nc->slot || !nc->queue) {
		namecache_destroy(nc);
		errno = ENOMEM;
		return NULL;
	}
	if (nc->cfg.later) {
		int rc = pthread_create(&nc->thread, NULL, namecache_main, nc);

		if (rc) {
			namecache_destroy(nc);
			errno = rc;
			return NULL;
		}
		nc->threaded = true;
	}
	return nc;
}

void namecache_destroy(struct namecache *nc)
{
	if (!nc)
		return;
	if (nc->threaded) {
		pthread_mutex_lock(&nc->lock);
		nc->stop = true;
		pthread_cond_signal(&nc->wake);
		pthread_mutex_unlock(&nc->lock);
		pthread_join(nc->thread, NULL);
	}
	pthread_cond_destroy(&nc->wake);
	pthread_mutex_destroy(&nc->lock);
	free(nc->slot);
	free(nc->queue);
	free(nc->text);
	free(nc);
}

void namecache_begin(struct namecache *nc)
{
	pthread_mutex_lock(&nc->lock);
}

bool namecache_find(struct namecache *nc, uint64_t addr, const char **full,
		    const char **brief)
{
	struct namecache_entry *e;

	if (!addr)
		return false;
	e = namecache_slot(nc, addr);
	if (!e->addr && nc->cfg.later) {
		if (nc->nqueue >= nc->cfg.max_queued)
			return false; /* asked again by a later pass */
		e = namecache_entry(nc, addr);
		nc->queue[nc->nqueue++] = addr;
		pthread_cond_signal(&nc->wake);
		return false;
	}
	if (!e->addr) {
		/* Resolve now, on this thread, with the lock held: nobody
		 * else uses a cache that has no thread meanwhile. */
		char f[NAMECACHE_NAME_MAX], b[NAMECACHE_NAME_MAX];
		uint32_t rgen = nc->cfg.resolve(nc->cfg.ctx, addr, f, b);

		namecache_store(nc, addr, rgen, f, b);
		e = namecache_slot(nc, addr);
	}
	if (!e->addr || e->full == NAMECACHE_PENDING)
		return false;
	*full = nc->text + e->full;
	*brief = nc->text + e->brief;
	return true;
}

uint32_t namecache_end(struct namecache *nc)
{
	uint32_t gen = nc->gen;

	pthread_mutex_unlock(&nc->lock);
	return gen;
}

void namecache_clear(struct namecache *nc)
{
	pthread_mutex_lock(&nc->lock);
	namecache_forget(nc);
	nc->clears++;
	pthread_mutex_unlock(&nc->lock);
}

void namecache_stats(struct namecache *nc, struct namecache_stats *out)
{
	pthread_mutex_lock(&nc->lock);
	out->names = nc->n;
	out->resolves = nc->resolves;
	out->queued = nc->nqueue;
	pthread_mutex_unlock(&nc->lock);
}
