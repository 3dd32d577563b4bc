/*
 * rotor: the engine's side of the CallTrace region -- create it next to the
 * cTP region, rotate its three tables, collect what writers stored into a
 * traceset the UI can read.  See rotor.c.
 */
#ifndef COROTOP_ROTOR_H
#define COROTOP_ROTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corotop/calltrace.h"
#include "engine/calltrace/traceset.h"

struct rotor_config {
	uint32_t max_traces;	   /* distinct stacks per table (65536) */
	uint32_t pool_frames;	   /* frames per table (16 x max_traces) */
	unsigned drain_timeout_ms; /* bound on waiting for writers (100) */
};

void rotor_config_defaults(struct rotor_config *cfg);

struct rotor_stats {
	uint64_t rotations;   /* completed swaps of ACTIVE */
	uint64_t skipped;     /* rotations refused: no clean table */
	uint64_t waits;	      /* swaps after which a writer had to drain */
	uint64_t quarantined; /* drains that timed out */
	uint64_t late;	      /* quarantined tables collected later */
	uint64_t reclaimed;   /* slots of dead writers reclaimed */
	uint64_t corrupt;     /* buckets rejected (bad offset or count) */
	uint64_t overflow;    /* traces the collector could not keep */
	/* What the collections returned, summed over all rotations. */
	uint64_t traces, weight, hits;
	/* Preservation: ids re-inserted, ids not found, ids that did not fit */
	uint64_t preserved, preserve_missing, preserve_failed;
	/* Writer-side counters, copied from the region (statistics). */
	uint64_t dropped, dropped_weight, drop_no_slot, drop_full, drop_raced;
	uint32_t epoch;	 /* instance epoch of the current ACTIVE table */
	uint32_t active; /* its index */
};

struct rotor;

/*
 * Create the region `dir`/calltrace.shm (0600, O_EXCL|O_NOFOLLOW; dir is the
 * cTP region's private directory) and, when ctp is not NULL, announce it in
 * that cTP header.  Table 0 is ACTIVE with epoch 1.
 */
struct rotor *rotor_create(const char *dir, struct ctp_header *ctp,
			   const struct rotor_config *cfg, char *err,
			   size_t errlen);
/* Unmap and remove the file; NULL is a no-op. */
void rotor_destroy(struct rotor *r);
/* Remove the file without unmapping (async-signal-safe). */
void rotor_unlink(const struct rotor *r);
const char *rotor_path(const struct rotor *r);

/*
 * One rotation (the six steps in rotor.c); one thread at a time.  Each
 * rotation's union holds only what that rotation collected, so summing
 * every union never counts a weight twice.  `preserve` names trace ids
 * (from earlier rotations) that must survive with their ids: live
 * coroutines are parked at them.  Returns false when no table could be
 * swapped in (a writer still holds both spare tables); the traces collected
 * anyway are in rotor_traces() and rotor_warning() says why.
 */
bool rotor_rotate(struct rotor *r, const uint64_t *preserve, size_t npreserve);

/* What the last rotation collected: sealed, valid until the next one
 * (traceset_find looks an id up in it). */
const struct traceset *rotor_traces(const struct rotor *r);
/* What the rotation before it collected (sealed, empty before the second
 * rotation), valid as long: a stack put just before a rotation whose
 * coroutine is harvested parked at it just after is only there. */
const struct traceset *rotor_prev_traces(const struct rotor *r);
void rotor_stats(const struct rotor *r, struct rotor_stats *out);
/*
 * A cheap look at the writers' side, for deciding whether a rotation is
 * worth it: distinct stacks in the ACTIVE table (preserved ones included)
 * and the count of dropped puts.  Two loads from the mapping: the caller
 * guards against SIGBUS like for rotor_rotate.
 */
void rotor_peek(const struct rotor *r, uint64_t *active_traces,
		uint64_t *dropped);
uint32_t rotor_max_traces(const struct rotor *r);

/* A message about the last rotation ("" when it went normally). */
const char *rotor_warning(const struct rotor *r);

/* The mapping, for tests and benchmarks that write without the probe. */
void *rotor_base(const struct rotor *r);
size_t rotor_size(const struct rotor *r);

#endif
