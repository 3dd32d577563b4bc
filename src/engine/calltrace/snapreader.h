/*
 * snapreader: the engine's consumer of a snapshot ring (corotop/snapring.h)
 * -- tickets taken in order, each complete record copied out whole and
 * checked, every other ticket accounted for.  See snapreader.c.
 */
#ifndef COROTOP_SNAPREADER_H
#define COROTOP_SNAPREADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corotop/snapring.h"

/* One sample, copied out of the ring: the engine's to read. */
struct snap_sample {
	uint64_t ticket;
	uint64_t tag, pc, sp, fp, weight, check;
	uint32_t nframes; /* <= SNAP_FP_MAX */
	uint32_t ncopy;	  /* <= SNAP_COPY_MAX, a multiple of 8 */
	uint64_t frames[SNAP_FP_MAX];
	uint64_t stack[SNAP_COPY_MAX / 8];
};

/* What became of the tickets consumed so far (tail of them).  Every
 * ticket below tail is exactly one of taken, lapped, torn, skipped or
 * bad; a jump of head past any bound is counted in resyncs and not as
 * tickets. */
struct snapreader_stats {
	uint64_t tail;	  /* tickets consumed */
	uint64_t taken;	  /* delivered */
	uint64_t lapped;  /* overwritten by a later ticket before we read */
	uint64_t torn;	  /* overwritten while we copied */
	uint64_t skipped; /* never completed within the grace period */
	uint64_t bad;	  /* complete, but counts out of range */
	uint64_t resyncs; /* head moved backwards or impossibly far */
	/* The writers' own counters, copied (statistics, untrusted). */
	uint64_t head, stored, busy;
};

struct snapreader {
	struct snap_header *hdr;
	struct snap_record *rec;
	uint32_t records; /* the engine's own geometry, never re-read */
	uint64_t grace_ns;
	uint64_t waiting_since; /* for ticket tail; 0: not waiting */
	struct snapreader_stats st;
	struct snap_sample sample; /* the one being delivered */
};

/* A reader of `records` records at base (records a power of two, as the
 * engine made it); grace_ns: how long an unfinished ticket is waited for. */
void snapreader_init(struct snapreader *r, void *base, uint32_t records,
		     uint64_t grace_ns);

/* Called with each sample; valid only during the call. */
typedef void (*snapreader_fn)(void *ctx, const struct snap_sample *s);

/*
 * Consume tickets in order up to the writers' head, delivering complete
 * records to fn; at most max tickets examined one by one per call (a bulk
 * lap of the tickets more than a ring behind head comes on top, and is
 * made even with max 0).  now: a monotonic time in ns, for the grace period.
 * Returns the samples delivered.  The region is untrusted: every count is
 * bounded, and a head that lies costs a resync, never a long loop.
 */
size_t snapreader_poll(struct snapreader *r, uint64_t now, snapreader_fn fn,
		       void *ctx, size_t max);

/* Tickets waiting: head - tail, as the region says; 1 when head went
 * back (a poll then resyncs); 0: nothing to do. */
uint64_t snapreader_pending(const struct snapreader *r);

void snapreader_stats(const struct snapreader *r, struct snapreader_stats *out);

#endif
