/*
 * snapcopy: a snapshot's records copied from the model, only those that
 * changed since that snapshot's last copy.  See snapcopy.c.
 */
#ifndef COROTOP_SNAPCOPY_H
#define COROTOP_SNAPCOPY_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/model/model.h"
#include "engine/model/snapshot.h"

/* The copier's own fix-ups of one record's copy, made while the lock is
 * held (the engine's: the learned WHERE, the state at the target's exit);
 * r is the record's index in the model; whole: the copy is a whole copy's,
 * in place (what is done to each record of the snapshot can be done now,
 * while it is in the cache), else a changed one's, in the list. */
typedef void (*snapcopy_fix)(void *ctx, struct model_coro *copy, uint32_t r,
			     bool whole);

/*
 * With the model's lock held: s's records brought up to date with m.  A
 * snapshot that holds a copy of m (its last snapcopy_take, settled) gets
 * only the records touched since (model_touch), into its change list;
 * any other -- new, another model's, a replay's -- or `whole` gets every
 * record, as a full copy.  fix (may be NULL) sees each record copied.
 * Call snapcopy_settle after letting the lock go.  Out of memory, the copy
 * holds as many records as fit and the next one is whole.  Returns whether
 * the copy was whole.
 */
bool snapcopy_take(struct snapshot *s, const struct model *m, bool whole,
		   snapcopy_fix fix, void *ctx);
/* Without the lock, before a take: whether that take will copy every
 * record (s holds no copy of m to build on), and if so, room for about
 * `used` records (the model's, read under the lock) made now, its pages
 * touched, so that the take does not allocate nor fault them in under
 * the lock. */
bool snapcopy_reserve(struct snapshot *s, const struct model *m, size_t used);
/* Without the lock: the change list merged into the copy, which is again
 * the model's records in use at the take, in slot order (s->count of
 * them).  Returns how many records the take copied. */
size_t snapcopy_settle(struct snapshot *s);

#endif
