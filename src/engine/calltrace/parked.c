/*
 * parked: where each live coroutine is parked, as frames.
 *
 * A corotop probe that captures a coroutine's stack when it suspends puts
 * it (untagged, usually with weight 0) and writes the trace id into the
 * suspend event (CTP_EPOCH_TRACE_OFFSET); the model keeps that id per
 * record.  The rotor preserves those ids across rotations, so each union
 * holds the frames of every id still parked at.  This store copies them out
 * of the unions -- the unions last one rotation, and the UI asks at any
 * time -- and keeps each one exactly as long as some coroutine is parked at
 * it (mark and sweep against the engine's list after every rotation).  A
 * trace id always names the same frames, so a kept stack is never
 * rewritten.
 *
 * The engine also keeps stacks it walked itself in the target's memory
 * (a coroutine parked before a late attach: engine/stacks/census.c; a long
 * park: engine/stacks/walks.c), under ids of its own (parked_own_id), swept by
 * the same list.  Such a stack may be put by the walker's thread after the
 * engine made the list the next sweep uses (engine_ct_rotate takes it
 * under the engine lock, sweeps later under the hot lock): a stack put
 * since the last sweep is young, and a sweep keeps a young stack even when
 * the list lacks it -- the next list names it if a coroutine is parked at
 * it, since the walker records the coroutine's park under the engine lock
 * together with its put.
 *
 * A stored stack is cut, when first kept, after the frames the engine's
 * check accepts (every frame in the target's code: engine/stacks/rotation.c);
 * a stack the engine walked itself was checked by its walk.
 *
 * Bounded: at most `max` stacks, in a fixed array with a hash index
 * (hashidx.h) and a stack of free records.  Not thread-safe: the engine
 * serialises calls with its hot lock.
 */
#include "engine/calltrace/parked.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "wire/cttable.h"
#include "common/hashidx.h"

struct parked_rec {
	uint64_t id; /* trace id; 0: free record */
	uint64_t *frames;
	uint32_t nframes;
	bool young; /* put since the last sweep (see the top) */
};

struct parked {
	struct parked_rec *r;
	uint32_t cap, used, live;
	uint32_t *free;
	uint32_t nfree;
	struct hashidx idx;
	uint64_t dropped;
	traceset_keep_fn keep;
	void *keep_ctx;
};

struct parked *parked_create(uint32_t max, traceset_keep_fn keep,
			     void *keep_ctx)
{
	struct parked *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->keep = keep;
	p->keep_ctx = keep_ctx;
	p->cap = max ? max : 1;
	p->r = calloc(p->cap, sizeof(*p->r));
	p->free = malloc(p->cap * sizeof(*p->free));
	if (!p->r || !p->free || !hashidx_init(&p->idx, p->cap)) {
		parked_destroy(p);
		return NULL;
	}
	return p;
}

void parked_destroy(struct parked *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; p->r && i < p->used; i++)
		free(p->r[i].frames);
	free(p->r);
	free(p->free);
	hashidx_finish(&p->idx);
	free(p);
}

bool parked_sorted_has(const uint64_t *ids, size_t n, uint64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ids[mid] == id)
			return true;
		if (ids[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

struct parked_key {
	const struct parked *p;
	uint64_t id;
};

static bool parked_eq(void *ctx, uint32_t rec)
{
	const struct parked_key *k = ctx;

	return k->p->r[rec].id == k->id;
}

static uint32_t parked_find(const struct parked *p, uint64_t id)
{
	struct parked_key k = {p, id};

	return hashidx_find(&p->idx, ct_mix64(id), parked_eq, &k);
}

/* Keep frames under id (cut by the check: a trace's, not the engine's own
 * walks, which checked theirs); returns the record, or HASHIDX_NONE when
 * the bound was reached. */
static uint32_t parked_keep(struct parked *p, uint64_t id,
			    const uint64_t *frames, uint32_t n, bool check)
{
	uint64_t *copy;
	uint32_t rec = parked_find(p, id);

	if (rec != HASHIDX_NONE)
		return rec; /* an id always names the same frames */
	if (!p->nfree && p->used == p->cap) {
		p->dropped++;
		return HASHIDX_NONE;
	}
	if (check && p->keep) {
		size_t k = p->keep(p->keep_ctx, frames, n);

		n = k < n ? (uint32_t)k : n;
	}
	copy = malloc((n ? n : 1) * sizeof(*copy));
	if (!copy) {
		p->dropped++;
		return HASHIDX_NONE;
	}
	rec = p->nfree ? p->free[--p->nfree] : p->used++;
	memcpy(copy, frames, n * sizeof(*copy));
	p->r[rec] = (struct parked_rec){.id = id, .frames = copy, .nframes = n};
	hashidx_insert(&p->idx, ct_mix64(id), rec);
	p->live++;
	return rec;
}

void parked_put(struct parked *p, uint64_t id, const uint64_t *frames,
		uint32_t n)
{
	uint32_t rec;

	if (!id || n > CT_MAX_FRAMES)
		return;
	rec = parked_keep(p, id, frames, n, false);
	if (rec != HASHIDX_NONE)
		p->r[rec].young = true;
}

uint64_t parked_own_id(const uint64_t *frames, uint32_t n)
{
	uint64_t h = ct_hash(frames, n);

	return PARKED_OWN_ID | (h >> 1);
}

/* A trace that can be a parked stack: bounded, untagged. */
static bool parked_usable(const struct traceset_entry *e)
{
	return e->frames && e->nframes <= CT_MAX_FRAMES &&
	       !(e->nframes && CT_TAG_IS(e->frames[e->nframes - 1]));
}

void parked_update(struct parked *p, const struct traceset *u,
		   const struct traceset *prev, const uint64_t *ids, size_t n)
{
	for (size_t i = 0; i < u->n && n; i++) {
		const struct traceset_entry *e = &u->e[i];

		if (parked_usable(e) && parked_sorted_has(ids, n, e->id))
			(void)parked_keep(p, e->id, e->frames, e->nframes,
					  true);
	}
	/* Ids first listed now whose stacks only the previous union has:
	 * put just before that rotation, harvested just after it. */
	for (size_t k = 0; prev && k < n; k++) {
		const struct traceset_entry *e;

		if (ids[k] & PARKED_OWN_ID ||
		    parked_find(p, ids[k]) != HASHIDX_NONE)
			continue;
		e = traceset_find(prev, ids[k]);
		if (e && parked_usable(e))
			(void)parked_keep(p, e->id, e->frames, e->nframes,
					  true);
	}
	for (uint32_t rec = 0; rec < p->used; rec++) {
		struct parked_rec *r = &p->r[rec];
		bool young = r->young;

		r->young = false;
		if (!r->id || young || parked_sorted_has(ids, n, r->id))
			continue;
		hashidx_remove(&p->idx, ct_mix64(r->id), rec);
		free(r->frames);
		*r = (struct parked_rec){0};
		p->free[p->nfree++] = rec;
		p->live--;
	}
}

size_t parked_frames(const struct parked *p, uint64_t id, uint64_t *frames,
		     size_t max)
{
	uint32_t rec = id ? parked_find(p, id) : HASHIDX_NONE;
	size_t n;

	if (rec == HASHIDX_NONE)
		return 0;
	n = p->r[rec].nframes < max ? p->r[rec].nframes : max;
	if (n)
		memcpy(frames, p->r[rec].frames, n * sizeof(*frames));
	return n;
}

void parked_stats(const struct parked *p, struct parked_stats *out)
{
	out->kept = p->live;
	out->dropped = p->dropped;
}
