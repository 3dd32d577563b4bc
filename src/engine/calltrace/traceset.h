/*
 * traceset: the engine's private, de-duplicated copy of collected call
 * traces -- what one rotation of the CallTrace tables produced, and what the
 * UI reads.  See traceset.c.
 */
#ifndef COROTOP_TRACESET_H
#define COROTOP_TRACESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corotop/calltrace.h"

struct traceset_entry {
	uint64_t id;
	uint64_t weight;
	uint64_t hits;
	uint32_t nframes;
	uint32_t frames_off;	/* into the set's frame arena */
	const uint64_t *frames; /* valid after traceset_seal */
};

/* Where a table keeps ids the engine assigned itself (preserved traces). */
struct traceset_kept {
	uint32_t index; /* bucket */
	uint64_t id;
};

struct traceset {
	struct traceset_entry *e;
	size_t n, cap, max;
	uint64_t *frames;
	size_t nframes, frames_cap, frames_max;
	/* id -> entry + 1, stamped per seal (no clearing between seals). */
	uint64_t *index;
	size_t index_mask;
	uint32_t stamp;
	bool sealed;
	/* Statistics of the collections since traceset_clear. */
	uint64_t corrupt;  /* buckets rejected: bad offset or count */
	uint64_t overflow; /* traces not kept: max reached */
	uint64_t merged;   /* duplicates of an id folded into one entry */
};

/* max_traces and max_frames bound what the set ever holds. */
void traceset_init(struct traceset *s, size_t max_traces, size_t max_frames);
void traceset_finish(struct traceset *s);
void traceset_clear(struct traceset *s);

/*
 * Append every non-empty bucket of one table and leave every bucket empty
 * (all four words zero), so the table needs no further clearing.  The table
 * is untrusted: every offset and count is bounded by the engine's own
 * geometry (nbuckets, pool_frames), and nothing read from it is used as an
 * index unchecked.  Ids are epoch << 32 | bucket, except for the buckets
 * listed in kept (sorted by index), whose ids the engine assigned.  Call
 * only when no writer is inside the table.  Returns the traces appended.
 */
size_t traceset_take(struct traceset *s, struct ct_bucket *b, uint32_t nbuckets,
		     const uint64_t *pool, uint32_t pool_frames, uint32_t epoch,
		     const struct traceset_kept *kept, size_t nkept);

/* Append one trace (frames copied). */
bool traceset_add(struct traceset *s, uint64_t id, uint64_t weight,
		  uint64_t hits, const uint64_t *frames, uint32_t n);

/*
 * Fold entries with the same id into one (weights and hits added, the first
 * one's frames kept), fix the frame pointers and build the id index.  Call
 * after appending and before traceset_find or reading frames.
 */
void traceset_seal(struct traceset *s);

/*
 * A check on a stored stack's frames, for the stores that copy traces out
 * of a set (hotstacks, parked): how many of frames[0..n) (innermost first,
 * the tag frame not offered) to keep.  The set itself is never cut: the
 * rotor puts preserved traces back with their frames as stored, which is
 * how a writer's next put of the same stack finds the same id.
 */
typedef size_t (*traceset_keep_fn)(void *ctx, const uint64_t *frames, size_t n);

/* The entry of id, or NULL (needs a sealed set). */
const struct traceset_entry *traceset_find(const struct traceset *s,
					   uint64_t id);

/* Sum of the weights (sealed or not). */
uint64_t traceset_weight(const struct traceset *s);

#endif
