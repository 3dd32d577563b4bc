/*
 * census: at a late attach, every coroutine live at that moment published
 * on a station of its own, before its next event.  See census.c.
 */
#ifndef COROTOP_PROBE_CENSUS_H
#define COROTOP_PROBE_CENSUS_H

#include <stdint.h>

#include "corotop/probe.h"

struct probe_region;

/* Counters over every walk, running freely from 0. */
struct census_stats {
	uint64_t walks;	     /* walks done (one per late attach) */
	uint64_t visited;    /* coroutines pinned */
	uint64_t published;  /* ... handed a station with their state */
	uint64_t events;     /* ... of which with a census event (they ran) */
	uint64_t raced;	     /* ... whose owner claimed or closed them first */
	uint64_t unreadable; /* ... whose memory could not be read */
	uint64_t no_station; /* ... left for want of a station */
	uint64_t aborted;    /* walks cut short by a detach */
	uint64_t no_barrier; /* walks without membarrier (see census.c) */
	uint64_t inline_walks; /* walks run on the attaching thread */
	uint64_t walk_ns;      /* CLOCK_MONOTONIC ns spent walking */
};

/* Walk the registry for attachment r on a thread of the census's own (or,
 * when none can be started, right here).  Called by the rendezvous right
 * after r went live. */
void census_start(struct probe_region *r);
/* The walk itself (the census thread's body). */
void census_walk(struct probe_region *r);
/* In a forked child (one thread): a walk the parent ran is not here, and
 * its lock may have been held across the fork. */
void census_atfork_child(void);
/* Walks started and not finished (tests wait for 0). */
uint32_t census_running(void);
void census_stats(struct census_stats *out);

#ifdef CENSUS_TEST_HOOKS
/* Where a walk is with one coroutine: pinned, its struct copied, its
 * station filled (not yet handed over). */
enum census_step {
	CENSUS_PINNED,
	CENSUS_COPIED,
	CENSUS_FILLED,
};
/* Called by the walker at each step (tests only): a test that records,
 * claims or closes the coroutine there forces each race of the walk. */
extern void (*census_test_hook)(enum census_step step, uint32_t slot,
				struct corotop_coro *c);
#endif

#endif
