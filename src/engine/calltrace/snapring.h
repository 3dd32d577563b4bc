/*
 * snapring: the engine's snapshot ring -- the file next to the CallTrace
 * region in which the probe's sampler leaves stack copies, its
 * announcement in the CallTrace header, and the reader that drains it.
 * See snapring.c and corotop/snapring.h.
 */
#ifndef COROTOP_SNAPRING_ENGINE_H
#define COROTOP_SNAPRING_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corotop/calltrace.h"
#include "engine/calltrace/snapreader.h"

struct snapring;

/*
 * Create `dir`/snapshots.shm (0600, O_EXCL|O_NOFOLLOW; dir is the engine's
 * private directory) with `records` records (a power of two), and announce
 * it in the CallTrace header ct (before any writer maps ct).  NULL with a
 * message in err on failure.
 */
struct snapring *snapring_create(const char *dir, struct ct_header *ct,
				 uint32_t records, uint64_t grace_ns, char *err,
				 size_t errlen);
/* NULL is a no-op.  Unlinks the file. */
void snapring_destroy(struct snapring *r);
void snapring_unlink(const struct snapring *r);
const char *snapring_path(const struct snapring *r);

/* The file still has its size (a target may truncate it: reading a record
 * past its end would fault). */
bool snapring_size_ok(const struct snapring *r);

/* The reader (snapreader_poll, _stats) of the ring. */
struct snapreader *snapring_reader(struct snapring *r);

#endif
