/*
 * snapcopy: a snapshot's records copied from the model, only those that
 * changed since that snapshot's last copy.
 *
 * Why.  The copy is made under the model's lock, which the harvest thread
 * needs for every event.  A whole copy is 128 bytes a record: 12 MiB and
 * a millisecond or more at 100k coroutines, once per refresh for each
 * reader (the TUI, batch, each of serve's states).  Most records do not
 * change between two refreshes -- a server's parked connections.
 *
 * How.  The model counts its changes: every write to a record a copy
 * shows sets the record's gen_of to the next value of the model's gen
 * (model_touch).  A snapshot remembers which model it copied (its uid)
 * and the gen it copied at.  The next take, under the lock, reads only
 * the dense gen_of array (8 bytes a record, sequential) and copies the
 * records whose gen_of is above that: births, deaths, reclaims, switches.
 * The copies go to a change list, in slot order; the lock is let go; then
 * settle merges the list into the copy without the lock.  A changed record
 * the copy holds, alive still, is put in its place (found by its slot);
 * with births or reclaims among them, every record the list names is
 * dropped from the first one on, and the list's live records merged in
 * from the back.  The copy is again the records in use, in slot order,
 * exactly what a whole copy would have given.
 *
 * A whole copy is still made for a snapshot that holds none of this model
 * (new, another model's, a replay's), when the caller asks (the target
 * exited: every record's copy changes), when more than half the records
 * changed (the list would cost more than it saves), and after running out
 * of memory.
 *
 * Not thread-safe: take runs under the caller's lock, settle on the
 * snapshot's owner's thread.
 */
#include "engine/model/snapcopy.h"

#include <string.h>

#include "common/grow.h"

/* Every record in use, into s->coro (lock held). */
static void snapcopy_whole(struct snapshot *s, const struct model *m,
			   snapcopy_fix fix, void *ctx)
{
	size_t k = 0, live = 0;

	/* Room for every record ever handed out (not the model's capacity:
	 * the copy is the bigger half of corotop's memory); made before the
	 * lock was taken, mostly (snapcopy_reserve). */
	grow_array_fit((void **)&s->coro, &s->cap, m->used, sizeof(*s->coro));
	for (uint32_t r = 0; r < m->used; r++) {
		const struct model_coro *c = &m->coro[r];

		if (!c->in_use)
			continue;
		live++;
		if (k == s->cap)
			continue;
		s->coro[k] = *c;
		if (fix)
			fix(ctx, &s->coro[k], r, true);
		k++;
	}
	s->count = k;
	s->ncopied = k;
	s->nchanged = 0;
	s->copy_used = m->used;
	/* Only a copy of every record is one the next take can build on. */
	s->copy_of = k == live ? m->uid : 0;
	s->copy_gen = m->gen;
}

bool snapcopy_take(struct snapshot *s, const struct model *m, bool whole,
		   snapcopy_fix fix, void *ctx)
{
	size_t n = 0, want;

	if (whole || !m->uid || s->copy_of != m->uid) {
		snapcopy_whole(s, m, fix, ctx);
		return true;
	}
	/* Most records changed (every coroutine switched since): a whole
	 * copy holds the lock no longer and copies each record once, where
	 * the list would copy it twice (into the list, then into place). */
	for (uint32_t r = 0; r < m->used; r++)
		n += m->gen_of[r] > s->copy_gen;
	/* Room for them, once (the lock is held: what grows, grows in one
	 * step); out of memory, a whole copy needs none. */
	if (n > m->used / 2 ||
	    !grow_array((void **)&s->changed, &s->changed_cap, n ? n : 1,
			sizeof(*s->changed))) {
		snapcopy_whole(s, m, fix, ctx);
		return true;
	}
	want = n;
	n = 0;
	for (uint32_t r = 0; r < m->used && n < want; r++) {
		if (m->gen_of[r] <= s->copy_gen)
			continue;
		s->changed[n] = m->coro[r];
		/* A reclaimed record keeps its slot (the merge drops the copy
		 * of that slot); a live one is fixed as a whole copy's is. */
		s->changed[n].slot = r;
		if (fix && m->coro[r].in_use)
			fix(ctx, &s->changed[n], r, false);
		n++;
	}
	s->nchanged = n;
	s->ncopied = n;
	s->copy_gen = m->gen;
	s->copy_used = m->used;
	return false;
}

/* Without the lock: room for `used` records and some to spare (records
 * born before the next take), its new pages touched, so that a whole copy
 * neither allocates nor faults them in under the lock.  Out of memory,
 * the room stays as it was (the whole copy tries again). */
static void snapcopy_room(struct snapshot *s, size_t used)
{
	size_t had = s->cap;

	if (had >= used)
		return;
	if (grow_array_fit((void **)&s->coro, &s->cap, used + used / 16 + 256,
			   sizeof(*s->coro)) &&
	    s->cap > had)
		memset(s->coro + had, 0, (s->cap - had) * sizeof(*s->coro));
}

bool snapcopy_reserve(struct snapshot *s, const struct model *m, size_t used)
{
	if (m->uid && s->copy_of == m->uid)
		return false;
	snapcopy_room(s, used);
	return true;
}

/* The first of s's records whose slot is `slot` or above (s->count: none). */
static size_t snapcopy_find(const struct snapshot *s, uint32_t slot)
{
	size_t lo = 0, hi = s->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->coro[mid].slot < slot)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t snapcopy_settle(struct snapshot *s)
{
	size_t w, j, live = 0, n, i, at;

	/* The cap bounds every record's slot: room for every record handed
	 * out at the take, made now rather than by a whole copy, under the
	 * lock. */
	snapcopy_room(s, s->copy_used);
	if (!s->nchanged)
		return s->ncopied;
	/* Most changed records are ones the copy holds, alive still (a
	 * switch, a rate): each goes in its place, and the rest of the copy
	 * is not touched.  Stopped by the first birth or reclaim; what was
	 * put in place by then, the merge below puts there again. */
	for (j = 0; j < s->nchanged; j++) {
		const struct model_coro *d = &s->changed[j];

		at = snapcopy_find(s, d->slot);
		if (!d->in_use || at == s->count || s->coro[at].slot != d->slot)
			break;
		s->coro[at] = *d;
	}
	if (j == s->nchanged) {
		s->nchanged = 0;
		return s->ncopied;
	}
	/* Every record the list names leaves the copy (its new self, if it
	 * has one, comes from the list); the others close up, in order,
	 * from the first one the list names. */
	w = snapcopy_find(s, s->changed[0].slot);
	j = 0;
	for (i = w; i < s->count; i++) {
		uint32_t slot = s->coro[i].slot;

		while (j < s->nchanged && s->changed[j].slot < slot)
			j++;
		if (j < s->nchanged && s->changed[j].slot == slot)
			continue;
		if (w != i)
			s->coro[w] = s->coro[i];
		w++;
	}
	for (j = 0; j < s->nchanged; j++)
		live += s->changed[j].in_use;
	n = w + live;
	/* Out of memory: the highest slots are left out, as a whole copy
	 * leaves them, and the next take is whole. */
	if (n > s->cap &&
	    !grow_array((void **)&s->coro, &s->cap, n, sizeof(*s->coro)))
		s->copy_of = 0;
	/* The list's live records merged in from the back: a record moves
	 * only up, into room no record still to be read holds. */
	i = w;
	at = n;
	for (j = s->nchanged; j > 0;) {
		const struct model_coro *d = &s->changed[j - 1];

		if (!d->in_use) {
			j--;
			continue;
		}
		at--;
		if (i > 0 && s->coro[i - 1].slot > d->slot) {
			if (at < s->cap)
				s->coro[at] = s->coro[i - 1];
			i--;
		} else {
			if (at < s->cap)
				s->coro[at] = *d;
			j--;
		}
	}
	s->count = n < s->cap ? n : s->cap;
	s->nchanged = 0;
	return s->ncopied;
}
