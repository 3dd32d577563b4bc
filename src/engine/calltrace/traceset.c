/*
 * traceset: the engine's private copy of what the CallTrace tables held.
 *
 * A rotation collects one or more tables (the STANDBY of preserved traces,
 * the retired ACTIVE, any quarantined table that has drained since) into one
 * set: an array of {id, weight, hits, nframes, frames} plus a frame arena.
 * The same id can come from two tables -- a preserved trace sits in STANDBY
 * with weight 0 and again in the new ACTIVE, where writers add to it -- so
 * sealing folds duplicates into one entry by summing.  After the seal the
 * set is read-only and indexed by id.
 *
 * The tables are shared with the target and so untrusted.  Collection reads
 * each bucket once, checks its pool offset and frame count against the
 * engine's own geometry, copies what is valid and counts what is not, and
 * zeroes the bucket: taking a table's traces also empties it, in the same
 * pass (the rotor then has no separate clearing pass over the buckets).
 * Growth is bounded by `max` and `frames_max`; memory is only taken as
 * traces arrive (a failed allocation counts as overflow, never a crash).
 */
#include "engine/calltrace/traceset.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "wire/cttable.h"
#include "common/grow.h"

void traceset_init(struct traceset *s, size_t max_traces, size_t max_frames)
{
	memset(s, 0, sizeof(*s));
	s->max = max_traces;
	s->frames_max = max_frames;
}

void traceset_finish(struct traceset *s)
{
	free(s->e);
	free(s->frames);
	free(s->index);
	memset(s, 0, sizeof(*s));
}

void traceset_clear(struct traceset *s)
{
	s->n = 0;
	s->nframes = 0;
	s->sealed = false;
	s->corrupt = s->overflow = s->merged = 0;
}

bool traceset_add(struct traceset *s, uint64_t id, uint64_t weight,
		  uint64_t hits, const uint64_t *frames, uint32_t n)
{
	struct traceset_entry *e;

	if (!grow_array_max((void **)&s->e, &s->cap, s->n + 1, s->max,
			    sizeof(*s->e)) ||
	    !grow_array_max((void **)&s->frames, &s->frames_cap, s->nframes + n,
			    s->frames_max, sizeof(*s->frames))) {
		s->overflow++;
		return false;
	}
	e = &s->e[s->n++];
	e->id = id;
	e->weight = weight;
	e->hits = hits;
	e->nframes = n;
	e->frames_off = (uint32_t)s->nframes;
	e->frames = NULL;
	if (n)
		memcpy(s->frames + s->nframes, frames, n * sizeof(*frames));
	s->nframes += n;
	s->sealed = false;
	return true;
}

size_t traceset_take(struct traceset *s, struct ct_bucket *b, uint32_t nbuckets,
		     const uint64_t *pool, uint32_t pool_frames, uint32_t epoch,
		     const struct traceset_kept *kept, size_t nkept)
{
	size_t first = s->n, k = 0, end = 0;

	for (uint32_t i = 0; i < nbuckets; i++) {
		struct ct_bucket *bk = &b[i];
		/* relaxed: the drain (m) ordered every writer before us. */
		uint64_t key =
			atomic_load_explicit(&bk->key, memory_order_relaxed);
		uint64_t weight =
			atomic_load_explicit(&bk->weight, memory_order_relaxed);
		uint64_t hits =
			atomic_load_explicit(&bk->hits, memory_order_relaxed);
		uint64_t off = ct_key_off(key), n = ct_key_n(key);
		struct traceset_entry *e;

		if ((key | weight | hits | bk->id) == 0)
			continue;
		/* relaxed: published to writers by the next ACTIVE store. */
		atomic_store_explicit(&bk->key, 0, memory_order_relaxed);
		atomic_store_explicit(&bk->weight, 0, memory_order_relaxed);
		atomic_store_explicit(&bk->hits, 0, memory_order_relaxed);
		bk->id = 0;
		if (key == 0)
			continue; /* stray words in an empty bucket */
		while (k < nkept && kept[k].index < i)
			k++;
		if (n > CT_MAX_FRAMES || off + n > pool_frames) {
			s->corrupt++;
			continue;
		}
		if (!grow_array_max((void **)&s->e, &s->cap, s->n + 1, s->max,
				    sizeof(*s->e))) {
			s->overflow++;
			continue;
		}
		e = &s->e[s->n++];
		e->id = (k < nkept && kept[k].index == i)
				? kept[k].id
				: ((uint64_t)epoch << 32) | i;
		e->weight = weight;
		e->hits = hits;
		e->nframes = (uint32_t)n;
		e->frames_off = (uint32_t)off; /* in the pool, for pass 2 */
		e->frames = NULL;
		if (off + n > end)
			end = off + n;
	}
	if (!grow_array_max((void **)&s->frames, &s->frames_cap,
			    s->nframes + end, s->frames_max,
			    sizeof(*s->frames))) {
		s->overflow += s->n - first;
		s->n = first;
		return 0;
	}
	if (end)
		memcpy(s->frames + s->nframes, pool, end * sizeof(*pool));
	for (size_t j = first; j < s->n; j++)
		s->e[j].frames_off += (uint32_t)s->nframes;
	s->nframes += end;
	s->sealed = false;
	return s->n - first;
}

static size_t traceset_slot(uint64_t id, size_t mask)
{
	return (size_t)ct_mix64(id) & mask;
}

/* Index position of id, or of the empty slot where it would go. */
static size_t traceset_lookup(const struct traceset *s, uint64_t id)
{
	size_t p = traceset_slot(id, s->index_mask);

	for (;;) {
		uint64_t v = s->index[p];

		if ((uint32_t)(v >> 32) != s->stamp)
			return p;
		if (s->e[(uint32_t)v - 1].id == id)
			return p;
		p = (p + 1) & s->index_mask;
	}
}

static bool traceset_index_fit(struct traceset *s)
{
	size_t want = 1024;
	uint64_t *idx;

	while (want < 2 * s->n)
		want *= 2;
	if (++s->stamp == 0) { /* wrapped: old stamps could match */
		s->stamp = 1;
		if (s->index)
			memset(s->index, 0,
			       (s->index_mask + 1) * sizeof(*s->index));
	}
	if (s->index && want <= s->index_mask + 1)
		return true;
	idx = calloc(want, sizeof(*idx));
	if (!idx)
		return false;
	free(s->index);
	s->index = idx;
	s->index_mask = want - 1;
	return true;
}

void traceset_seal(struct traceset *s)
{
	size_t w = 0;

	if (!traceset_index_fit(s)) {
		/* No index memory: keep the entries, findable by scan. */
		s->index_mask = 0;
		free(s->index);
		s->index = NULL;
	}
	for (size_t r = 0; r < s->n; r++) {
		struct traceset_entry *e = &s->e[r];

		/* The index is written at random: fetch a few ahead. */
		if (s->index && r + 8 < s->n)
			__builtin_prefetch(
				&s->index[traceset_slot(s->e[r + 8].id,
							s->index_mask)],
				1, 0);
		if (s->index) {
			size_t p = traceset_lookup(s, e->id);
			uint64_t v = s->index[p];

			if ((uint32_t)(v >> 32) == s->stamp) {
				struct traceset_entry *first =
					&s->e[(uint32_t)v - 1];

				first->weight += e->weight;
				first->hits += e->hits;
				s->merged++;
				continue;
			}
			s->index[p] = ((uint64_t)s->stamp << 32) | (w + 1);
		}
		s->e[w] = *e;
		s->e[w].frames =
			s->frames ? s->frames + s->e[w].frames_off : NULL;
		w++;
	}
	s->n = w;
	s->sealed = true;
}

const struct traceset_entry *traceset_find(const struct traceset *s,
					   uint64_t id)
{
	if (!s->sealed || s->n == 0)
		return NULL;
	if (!s->index) {
		for (size_t i = 0; i < s->n; i++)
			if (s->e[i].id == id)
				return &s->e[i];
		return NULL;
	}
	{
		uint64_t v = s->index[traceset_lookup(s, id)];

		if ((uint32_t)(v >> 32) != s->stamp)
			return NULL;
		return &s->e[(uint32_t)v - 1];
	}
}

uint64_t traceset_weight(const struct traceset *s)
{
	uint64_t w = 0;

	for (size_t i = 0; i < s->n; i++)
		w += s->e[i].weight;
	return w;
}
