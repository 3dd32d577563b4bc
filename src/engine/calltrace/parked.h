/*
 * parked: the frames of the stacks live coroutines are parked at, by
 * CallTrace id, kept by the engine for the detail view.  See parked.c.
 */
#ifndef COROTOP_PARKED_H
#define COROTOP_PARKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/calltrace/traceset.h"

struct parked_stats {
	uint64_t kept;	  /* parked stacks kept now */
	uint64_t dropped; /* not kept: the bound was reached */
};

struct parked;

/* A store of at most max stacks, each cut after the frames keep accepts
 * when it is first kept (keep NULL: all); NULL when out of memory. */
struct parked *parked_create(uint32_t max, traceset_keep_fn keep,
			     void *keep_ctx);
/* NULL is a no-op. */
void parked_destroy(struct parked *p);

/*
 * After a rotation: keep the traces of u whose ids are in ids[0..n) (sorted
 * ascending: what live coroutines are parked at now), and forget the kept
 * stacks whose ids are no longer there.  An id in ids found neither kept
 * nor in u is looked up in prev (the union before u; NULL: none): its
 * coroutine was harvested parked only after the rotation that collected
 * its stack.  Tagged traces (samples) are never parked stacks and are
 * skipped.
 */
void parked_update(struct parked *p, const struct traceset *u,
		   const struct traceset *prev, const uint64_t *ids, size_t n);

/*
 * Keep a stack the engine found itself (it walked it in the target's
 * memory), under an id outside the CallTrace ids (PARKED_OWN_ID): kept by
 * the next parked_update whatever its ids (they may have been listed
 * before this put), then as long as parked_update's ids name it, like the
 * others.  Only marks it young again when id is already kept; a no-op when
 * the bound is reached.
 */
void parked_put(struct parked *p, uint64_t id, const uint64_t *frames,
		uint32_t n);
/* The id of such a stack: bit 63 set (no trace id has it: their epochs stay
 * far below 2^31), the rest a hash of the frames, so coroutines parked at
 * the same place share one. */
uint64_t parked_own_id(const uint64_t *frames, uint32_t n);
#define PARKED_OWN_ID (1ull << 63)

/* The frames of trace `id` (innermost first, at most max), or 0. */
size_t parked_frames(const struct parked *p, uint64_t id, uint64_t *frames,
		     size_t max);

void parked_stats(const struct parked *p, struct parked_stats *out);

/* Is id in the sorted ids[0..n)? */
bool parked_sorted_has(const uint64_t *ids, size_t n, uint64_t id);

#endif
