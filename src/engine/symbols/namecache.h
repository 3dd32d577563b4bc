/*
 * namecache: the names of code addresses as people read them, kept by the
 * engine so that whoever draws a snapshot never runs the symbolizer.  See
 * namecache.c.
 *
 * A name has two forms: full ("func+0x1a (file.c:42)") and brief
 * ("func+0x1a").  A cache that resolves later has a thread of its own: a
 * lookup that misses queues the address and returns at once, the thread
 * resolves it (which may take libdwfl seconds the first time) and calls
 * `notify`, and the next lookup finds it.  A cache that resolves now does
 * the work inside the lookup, on the caller's thread (batch output, where
 * the first snapshot printed must already carry names).
 */
#ifndef COROTOP_NAMECACHE_H
#define COROTOP_NAMECACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest form kept, in bytes with the NUL; longer names are cut. */
#define NAMECACHE_NAME_MAX 160

struct namecache_config {
	/* Fill both forms of addr's name (never called for 0).  It may
	 * block: on the thread with no lock of the cache held, or (a cache
	 * that resolves now) inside namecache_find.  It returns the
	 * resolver's generation: when that differs from the last one seen,
	 * every name given earlier is forgotten (libraries came or went). */
	uint32_t (*resolve)(void *ctx, uint64_t addr, char *full, char *brief);
	/* Later only: called by the thread after names arrived. */
	void (*notify)(void *ctx);
	void *ctx;
	bool later;	     /* a thread resolves misses (else lookups do) */
	uint32_t max_names;  /* names kept at most (then all are dropped) */
	uint32_t max_queued; /* misses waiting at most (more are asked
				again by the next lookup) */
};

struct namecache;

/* NULL (with errno) when out of memory or the thread cannot start. */
struct namecache *namecache_create(const struct namecache_config *c);
/* Stops the thread (waiting for a resolve in progress); NULL is a no-op. */
void namecache_destroy(struct namecache *nc);

/*
 * One pass of lookups, between namecache_begin and namecache_end: the
 * cache's lock is held, so a pass over a snapshot's every record costs one
 * lock.  namecache_find returns the forms of addr's name, valid until the
 * next namecache_find or namecache_end (copy them), or false: not known yet
 * (queued, with a cache that resolves later).  namecache_end returns the
 * generation of the names the pass saw: it changes whenever a name was added or
 * forgotten since.
 */
void namecache_begin(struct namecache *nc);
bool namecache_find(struct namecache *nc, uint64_t addr, const char **full,
		    const char **brief);
uint32_t namecache_end(struct namecache *nc);

/* Forget every name (the process to name changed). */
void namecache_clear(struct namecache *nc);

/* Tests: names kept, resolves made, and misses waiting now. */
struct namecache_stats {
	uint32_t names;
	uint64_t resolves;
	uint32_t queued;
};
void namecache_stats(struct namecache *nc, struct namecache_stats *out);

#endif
