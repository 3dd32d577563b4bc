/*
 * namecache: the names of code addresses as people read them, kept by the
 * engine so that whoever draws a snapshot never runs the symbolizer.  See
 * namecache.c.
 *
 * A name has two forms: full ("func+0x1a (file.c:42)") and brief
 * ("func+0x1a").  A cache that resolves later has a thread of its own: a
 * lookup that misses queues the address and returns at once (the caller
 * shows hex), the thread resolves it -- which may take libdwfl seconds the
 * first time -- and calls `notify`, and a later lookup finds it.  A cache
 * without the thread is filled by namecache_ensure, on the caller's thread
 * (batch output, where the first snapshot printed must carry its names).
 */
#ifndef COROTOP_NAMECACHE_H
#define COROTOP_NAMECACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest form kept, in bytes with the NUL; longer names are cut. */
#define NAMECACHE_NAME_MAX 160

struct namecache_config {
	/* Fill both forms of addr's name (never called for 0) and return
	 * true, or false: the address has no name (it shows in hex, and is
	 * not asked for again).  *gen is the resolver's generation: when it
	 * differs from the last one seen, every name given earlier is
	 * forgotten (libraries came or went).  It may block; it runs with no
	 * lock of the cache held, on the thread or in namecache_ensure. */
	bool (*resolve)(void *ctx, uint64_t addr, char *full, char *brief,
			uint32_t *gen);
	/* Optional: the resolver's generation now, as resolve gives it, or
	 * false when it can not tell without waiting; asked by an idle
	 * thread once a second and by namecache_poll (names that changed
	 * with no address asked: debug info fetched later). */
	bool (*poll)(void *ctx, uint32_t *gen);
	/* Later only: called by the thread after names arrived (or were
	 * forgotten by a poll). */
	void (*notify)(void *ctx);
	void *ctx;
	bool later;	     /* a thread resolves what lookups miss */
	uint32_t max_names;  /* addresses kept at most (then all are dropped) */
	uint32_t max_queued; /* misses waiting at most (more are asked
				again by a later lookup) */
};

struct namecache;

/* NULL (with errno) when out of memory or the thread cannot start. */
struct namecache *namecache_create(const struct namecache_config *c);
/* Stops the thread (waiting for a resolve in progress); NULL is a no-op. */
void namecache_destroy(struct namecache *nc);

/*
 * addr's name (full or brief form) into buf, or false: no name, or none
 * yet -- a cache that resolves later then queues addr for its thread.
 * *settled (when not NULL) is false while a name may still come, true when
 * the answer stands until namecache_gen changes.  Never resolves on the
 * caller's thread; with the thread, never waits for it either (a cache
 * busy storing answers "not yet", unsettled).  Thread-safe.
 */
bool namecache_name(struct namecache *nc, uint64_t addr, bool full, char *buf,
		    size_t n, bool *settled);

/* Resolve addr now, on this thread, unless the cache knows it already. */
void namecache_ensure(struct namecache *nc, uint64_t addr);

/* Changes whenever names given earlier are forgotten (and may come back
 * different); not when an address is named for the first time, which
 * only settles an answer that was not (namecache_name's *settled). */
uint32_t namecache_gen(struct namecache *nc);

/* Ask cfg.poll now (a cache with no thread): every name is forgotten when
 * the resolver's generation moved. */
void namecache_poll(struct namecache *nc);

/* Forget every name (the process to name changed). */
void namecache_clear(struct namecache *nc);

/* Tests: addresses kept, resolves made, and misses waiting now. */
struct namecache_stats {
	uint32_t names;
	uint64_t resolves;
	uint32_t queued;
};
void namecache_stats(struct namecache *nc, struct namecache_stats *out);

#endif
