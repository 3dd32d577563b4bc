/*
 * cray_snap: a copy of what the Cacheray reader has counted, for the
 * memory view.
 *
 * Taking one costs a pass over the type and thread tables (at most 16 Ki
 * and 4 Ki entries) and two selections of the top lines (O(lines log
 * CRAY_SNAP_LINES), a few milliseconds for the largest line table), so the
 * view takes one per refresh, never per chunk read.  Member counts are
 * copied only for the types the user opened: a type can have 4,096
 * offsets, and there can be thousands of types -- except in the snapshot
 * a pause stands on, which has them all (cray_snap_take_all), since a
 * type opened later must show counts of the same moment as the rest.
 */
#include "cacheray/cray_snap.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/lowerbound.h"

void cray_snap_init(struct cray_snap *s)
{
	memset(s, 0, sizeof(*s));
}

void cray_snap_finish(struct cray_snap *s)
{
	free(s->lines[0]);
	free(s->lines[1]);
	free(s->types);
	free(s->threads);
	free(s->members);
	cray_snap_init(s);
}

static enum cray_note cray_snap_note(const struct cacheray *c)
{
	const struct cacheray_thread *t = cacheray_thread_at(c, 0);

	if (cacheray_nthreads(c) != 1 || t->other)
		return CRAY_NOTE_NONE;
	return t->id == 0 ? CRAY_NOTE_TID0 : CRAY_NOTE_ONE_TID;
}

static bool cray_snap_types(struct cray_snap *s, const struct cacheray *c)
{
	size_t n = cacheray_ntypes(c);

	s->ntypes = 0;
	if (!grow_array((void **)&s->types, &s->cap_types, n,
			sizeof(*s->types)))
		return false;
	for (size_t i = 0; i < n; i++) {
		const struct cacheray_type *t = cacheray_type_at(c, i);

		if (!t->n[0] && !t->n[1] && !t->regions)
			continue; /* "(untyped)" in a trace without any */
		s->types[s->ntypes++] = (struct cray_type_copy){
			.index = (uint32_t)i,
			.name = t->name,
			.name_len = t->name_len,
			.elemsize = t->elemsize,
			.n = {t->n[0], t->n[1]},
			.regions = t->regions,
			.special = t->special,
		};
	}
	return true;
}

static bool cray_snap_threads(struct cray_snap *s, const struct cacheray *c)
{
	size_t n = cacheray_nthreads(c);

	s->nthreads = 0;
	if (!grow_array((void **)&s->threads, &s->cap_threads, n,
			sizeof(*s->threads)))
		return false;
	for (size_t i = 0; i < n; i++) {
		const struct cacheray_thread *t = cacheray_thread_at(c, i);

		s->threads[s->nthreads++] = (struct cray_thread_copy){
			.index = (uint32_t)i,
			.id = t->id,
			.n = {t->n[0], t->n[1]},
			.other = t->other,
		};
	}
	return true;
}

static bool cray_snap_lines(struct cray_snap *s, const struct cacheray *c)
{
	for (int k = 0; k < 2; k++) {
		if (!s->lines[k])
			s->lines[k] =
				malloc(CRAY_SNAP_LINES * sizeof(*s->lines[k]));
		if (!s->lines[k]) {
			s->nlines[k] = 0;
			return false;
		}
		s->nlines[k] = cacheray_top_lines(c, k == 1, s->lines[k],
						  CRAY_SNAP_LINES);
	}
	return true;
}

/* Append the member rows of reader type `index`. */
static bool cray_snap_append(struct cray_snap *s, const struct cacheray *c,
			     uint32_t index)
{
	const struct cacheray_type *t = cacheray_type_at(c, index);
	size_t need = 1;

	if (!t)
		return true;
	if (t->members)
		for (uint32_t o = 0; o < t->elemsize; o++)
			need += t->members[o].n[0] || t->members[o].n[1];
	if (!grow_array((void **)&s->members, &s->cap_members,
			s->nmembers + need, sizeof(*s->members)))
		return false;
	if (!t->members) {
		if (!t->special)
			s->members[s->nmembers++] = (struct cray_member_copy){
				.type = index,
				.offset = CRAY_SNAP_NO_MEMBERS,
			};
		return true;
	}
	for (uint32_t o = 0; o < t->elemsize; o++) {
		const struct cacheray_member *m = &t->members[o];

		if (!m->n[0] && !m->n[1])
			continue;
		s->members[s->nmembers++] = (struct cray_member_copy){
			.type = index,
			.offset = o,
			.n = {m->n[0], m->n[1]},
		};
	}
	return true;
}

/* Everything; members of the open types, or of all when open is NULL
 * and all is set. */
static bool cray_snap_fill(struct cray_snap *s, const struct cacheray *c,
			   const uint8_t *open, size_t nopen, bool all)
{
	bool ok = true;

	cacheray_totals(c, &s->tot);
	s->note = s->tot.accesses ? cray_snap_note(c) : CRAY_NOTE_NONE;
	ok &= cray_snap_types(s, c);
	ok &= cray_snap_threads(s, c);
	ok &= cray_snap_lines(s, c);
	s->nmembers = 0;
	if (all)
		nopen = cacheray_ntypes(c);
	/* In index order: cray_snap_type_members searches by halves. */
	for (size_t i = 0; i < nopen; i++)
		if (all || (open && (open[i / 8] & (1u << (i % 8)))))
			ok &= cray_snap_append(s, c, (uint32_t)i);
	s->all_members = all && ok;
	return ok;
}

bool cray_snap_take(struct cray_snap *s, const struct cacheray *c,
		    const uint8_t *open, size_t nopen)
{
	return cray_snap_fill(s, c, open, nopen, false);
}

bool cray_snap_take_all(struct cray_snap *s, const struct cacheray *c)
{
	return cray_snap_fill(s, c, NULL, 0, true);
}

const struct cray_type_copy *cray_snap_type(const struct cray_snap *s,
					    uint32_t index)
{
	for (size_t i = 0; i < s->ntypes; i++)
		if (s->types[i].index == index)
			return &s->types[i];
	return NULL;
}

size_t cray_snap_type_members(const struct cray_snap *s, uint32_t index,
			      size_t *first)
{
	size_t lo, n = 0;

	/* The first row of a type >= index. */
	LOWER_BOUND(lo, s->members, s->nmembers, type, index);
	*first = lo;
	while (lo + n < s->nmembers && s->members[lo + n].type == index)
		n++;
	return n;
}

bool cray_snap_has_members(const struct cray_snap *s, uint32_t index)
{
	size_t first;

	return s->all_members || cray_snap_type_members(s, index, &first);
}
