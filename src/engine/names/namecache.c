/*
 * namecache: an open-addressing table from code address to the offsets of
 * its two name forms in one text arena, under one mutex, and (for a cache
 * that resolves later) a queue of misses with a thread that drains it.
 *
 * An address asked for and not known yet gets an entry marked pending, so
 * that a hundred thousand records parked at one place queue it once; the
 * thread fills the entry, with the name or with "no name" (an address in
 * no file, a stack address an upstream probe passes: hex, not asked for
 * again).  The table doubles at half full and never holds more than
 * max_names entries: the insert that would pass the bound forgets every
 * name first (what is still shown is asked for again), which keeps memory
 * bounded without an eviction order.
 *
 * A resolver whose names can change with no address asked (debug info
 * fetched later: symbolizer.c) gives `poll`: the thread asks it when idle
 * for a second, and namecache_poll asks it for a cache with no thread; a
 * generation that moved forgets every name, as a resolve's does.
 *
 * Locking: `lock` guards everything but cfg (immutable) and the thread
 * handle.  A lookup holds it for one probe and a copy; the thread holds it
 * only to take misses and to store a batch of names, never while it
 * resolves; a lookup of a cache with a thread only tries the lock, so the
 * caller (the UI) never waits for the thread at all.
 */
#define _GNU_SOURCE
#include "engine/names/namecache.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/grow.h"
#include "common/hash.h"

#define NAMECACHE_PENDING UINT32_MAX	  /* asked for, not resolved yet */
#define NAMECACHE_NONAME (UINT32_MAX - 1) /* resolved: it has no name */
#define NAMECACHE_BATCH 256u		  /* misses the thread takes at once */
#define NAMECACHE_SLOTS0 1024u		  /* the first table */
#define NAMECACHE_POLL_NS 1000000000ull	  /* an idle thread's poll */

struct namecache_entry {
	uint64_t addr;	      /* 0: an empty slot */
	uint32_t full, brief; /* offsets into text, or a mark above */
};

struct namecache {
	struct namecache_config cfg;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* the thread waits on it for misses or stop */
	struct namecache_entry *slot;
	uint32_t nslots; /* a power of two */
	uint32_t n;	 /* entries in use, pending ones included */
	char *text;
	size_t len, cap;
	uint64_t *queue; /* max_queued misses for the thread */
	uint32_t nqueue;
	uint32_t gen;	 /* bumped when names are forgotten */
	uint32_t rgen;	 /* the resolver's generation last seen */
	uint32_t clears; /* namecache_clear calls: a resolve in flight
			    across one is dropped */
	uint64_t resolves;
	bool idle; /* the thread waits on `wake`: the next miss signals */
	bool stop;
	bool threaded;
	pthread_t thread;
};

static struct namecache_entry *namecache_slot(struct namecache_entry *slot,
					      uint32_t nslots, uint64_t addr)
{
	uint32_t i = (uint32_t)hash_fib(addr, 64 - __builtin_ctz(nslots));

	while (slot[i].addr && slot[i].addr != addr)
		i = (i + 1) & (nslots - 1);
	return &slot[i];
}

static struct namecache_entry *namecache_find(struct namecache *nc,
					      uint64_t addr)
{
	return namecache_slot(nc->slot, nc->nslots, addr);
}

static void namecache_forget(struct namecache *nc)
{
	memset(nc->slot, 0, nc->nslots * sizeof(*nc->slot));
	nc->n = 0;
	nc->len = 0;
	nc->nqueue = 0;
	nc->gen++;
}

/* Twice the slots, every entry placed again; false when out of memory. */
static bool namecache_grow(struct namecache *nc)
{
	uint32_t slots = nc->nslots * 2;
	struct namecache_entry *s = calloc(slots, sizeof(*s));

	if (!s)
		return false;
	for (uint32_t i = 0; i < nc->nslots; i++)
		if (nc->slot[i].addr)
			*namecache_slot(s, slots, nc->slot[i].addr) =
				nc->slot[i];
	free(nc->slot);
	nc->slot = s;
	nc->nslots = slots;
	return true;
}

/* A copy of s in the arena; its offset, or NAMECACHE_NONAME when out of
 * memory (the address then shows in hex). */
static uint32_t namecache_text(struct namecache *nc, const char *s)
{
	size_t l = strnlen(s, NAMECACHE_NAME_MAX - 1);
	size_t at = nc->len;

	if (at + l + 1 >= NAMECACHE_NONAME ||
	    !grow_array((void **)&nc->text, &nc->cap, at + l + 1, 1))
		return NAMECACHE_NONAME;
	memcpy(nc->text + at, s, l);
	nc->text[at + l] = '\0';
	nc->len += l + 1;
	return (uint32_t)at;
}

/* The entry for addr, made (pending) when missing; NULL when none can be. */
static struct namecache_entry *namecache_entry(struct namecache *nc,
					       uint64_t addr)
{
	struct namecache_entry *e = namecache_find(nc, addr);

	if (e->addr)
		return e;
	if (nc->n >= nc->cfg.max_names)
		namecache_forget(nc);
	if ((nc->n + 1) * 2 > nc->nslots && !namecache_grow(nc))
		return NULL;
	e = namecache_find(nc, addr);
	*e = (struct namecache_entry){addr, NAMECACHE_PENDING,
				      NAMECACHE_PENDING};
	nc->n++;
	return e;
}

/* Store what a resolve said (under the lock). */
static void namecache_store(struct namecache *nc, uint64_t addr, bool named,
			    uint32_t rgen, const char *full, const char *brief)
{
	struct namecache_entry *e;

	if (rgen != nc->rgen) {
		if (nc->n)
			namecache_forget(nc);
		nc->rgen = rgen;
	}
	nc->resolves++;
	e = namecache_entry(nc, addr);
	if (!e)
		return;
	e->full = e->brief = NAMECACHE_NONAME;
	if (!named)
		return;
	e->full = namecache_text(nc, full);
	if (e->full != NAMECACHE_NONAME)
		e->brief = namecache_text(nc, brief);
	if (e->brief == NAMECACHE_NONAME)
		e->full = NAMECACHE_NONAME;
}

/* Ask the resolver's generation (cfg.poll, no lock held); every name is
 * forgotten when it moved.  True when names were forgotten. */
static bool namecache_repoll(struct namecache *nc)
{
	bool moved = false;
	uint32_t gen;

	if (!nc->cfg.poll || !nc->cfg.poll(nc->cfg.ctx, &gen))
		return false;
	pthread_mutex_lock(&nc->lock);
	if (gen != nc->rgen) {
		moved = nc->n != 0;
		if (moved)
			namecache_forget(nc);
		nc->rgen = gen;
	}
	pthread_mutex_unlock(&nc->lock);
	return moved;
}

/* With the lock held: wait for misses or stop; with a poll, a second at
 * most (then poll, and tell whoever shows names when they were
 * forgotten). */
static void namecache_idle(struct namecache *nc)
{
	uint64_t t = clock_now_ns(CLOCK_MONOTONIC) + NAMECACHE_POLL_NS;
	struct timespec at = {.tv_sec = (time_t)(t / 1000000000u),
			      .tv_nsec = (long)(t % 1000000000u)};

	nc->idle = true;
	if (!nc->cfg.poll) {
		pthread_cond_wait(&nc->wake, &nc->lock);
		nc->idle = false;
		return;
	}
	/* CLOCK_MONOTONIC: the condition was made with it. */
	if (pthread_cond_timedwait(&nc->wake, &nc->lock, &at) == 0 ||
	    nc->stop) {
		nc->idle = false;
		return;
	}
	nc->idle = false;
	pthread_mutex_unlock(&nc->lock);
	if (namecache_repoll(nc) && nc->cfg.notify)
		nc->cfg.notify(nc->cfg.ctx);
	pthread_mutex_lock(&nc->lock);
}

static void *namecache_main(void *arg)
{
	struct namecache *nc = arg;
	char full[NAMECACHE_BATCH][NAMECACHE_NAME_MAX];
	char brief[NAMECACHE_BATCH][NAMECACHE_NAME_MAX];
	uint64_t addr[NAMECACHE_BATCH];
	uint32_t rgen[NAMECACHE_BATCH];
	bool named[NAMECACHE_BATCH];

	pthread_mutex_lock(&nc->lock);
	while (!nc->stop) {
		uint32_t k = 0, clears;

		if (!nc->nqueue) {
			namecache_idle(nc);
			continue;
		}
		while (nc->nqueue && k < NAMECACHE_BATCH)
			addr[k++] = nc->queue[--nc->nqueue];
		clears = nc->clears;
		pthread_mutex_unlock(&nc->lock);
		for (uint32_t i = 0; i < k; i++)
			named[i] = nc->cfg.resolve(nc->cfg.ctx, addr[i],
						   full[i], brief[i], &rgen[i]);
		pthread_mutex_lock(&nc->lock);
		/* Names of a process that is no longer the one named are
		 * dropped; a later lookup asks again. */
		if (clears != nc->clears)
			continue;
		for (uint32_t i = 0; i < k; i++)
			namecache_store(nc, addr[i], named[i], rgen[i], full[i],
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
	pthread_condattr_t ca;

	if (!nc)
		return NULL;
	nc->cfg = *c;
	if (!nc->cfg.max_names)
		nc->cfg.max_names = 1;
	if (nc->cfg.max_names > (1u << 30))
		nc->cfg.max_names = 1u << 30;
	if (!nc->cfg.max_queued)
		nc->cfg.max_queued = 1;
	nc->nslots = NAMECACHE_SLOTS0;
	nc->slot = calloc(nc->nslots, sizeof(*nc->slot));
	nc->queue = calloc(nc->cfg.max_queued, sizeof(*nc->queue));
	pthread_mutex_init(&nc->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&nc->wake, &ca);
	pthread_condattr_destroy(&ca);
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

bool namecache_name(struct namecache *nc, uint64_t addr, bool full, char *buf,
		    size_t n, bool *settled)
{
	struct namecache_entry *e;
	bool ok = false, done = !nc->cfg.later;

	if (settled)
		*settled = true;
	if (!addr || !n)
		return false;
	/* The thread stores a batch of names under the lock: a lookup that
	 * finds it busy does not wait, it answers "no name yet" (hex, not
	 * settled, so nothing derived is kept) and is asked again. */
	if (nc->cfg.later) {
		if (pthread_mutex_trylock(&nc->lock)) {
			if (settled)
				*settled = false;
			return false;
		}
	} else {
		pthread_mutex_lock(&nc->lock);
	}
	e = namecache_find(nc, addr);
	if (e->addr) {
		uint32_t at = full ? e->full : e->brief;

		ok = at < NAMECACHE_NONAME;
		if (ok)
			snprintf(buf, n, "%s", nc->text + at);
		done = e->full != NAMECACHE_PENDING;
	} else if (nc->cfg.later && nc->nqueue < nc->cfg.max_queued &&
		   namecache_entry(nc, addr)) {
		/* Past max_queued nothing is marked: a later lookup asks. */
		nc->queue[nc->nqueue++] = addr;
		/* One wakeup per burst of misses, not a syscall each. */
		if (nc->idle) {
			nc->idle = false;
			pthread_cond_signal(&nc->wake);
		}
	}
	pthread_mutex_unlock(&nc->lock);
	if (settled)
		*settled = done;
	return ok;
}

void namecache_ensure(struct namecache *nc, uint64_t addr)
{
	char full[NAMECACHE_NAME_MAX], brief[NAMECACHE_NAME_MAX];
	uint32_t rgen, clears;
	bool known, named;

	if (!addr)
		return;
	pthread_mutex_lock(&nc->lock);
	known = namecache_find(nc, addr)->addr &&
		namecache_find(nc, addr)->full != NAMECACHE_PENDING;
	clears = nc->clears;
	pthread_mutex_unlock(&nc->lock);
	if (known)
		return;
	named = nc->cfg.resolve(nc->cfg.ctx, addr, full, brief, &rgen);
	pthread_mutex_lock(&nc->lock);
	if (clears == nc->clears)
		namecache_store(nc, addr, named, rgen, full, brief);
	pthread_mutex_unlock(&nc->lock);
}

void namecache_poll(struct namecache *nc)
{
	(void)namecache_repoll(nc);
}

uint32_t namecache_gen(struct namecache *nc)
{
	uint32_t gen;

	pthread_mutex_lock(&nc->lock);
	gen = nc->gen;
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
