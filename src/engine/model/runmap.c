/*
 * runmap: OS thread -> the coroutine record that last resumed on it.
 *
 * An open-addressing table keyed by tid (linear probing, at most half
 * full, doubled when it would be more), never shrunk: a program has few
 * threads compared with its coroutines, and a thread id is cheap to keep
 * after the thread is gone (a reused tid simply takes the entry over).
 * Entries are never removed, so a lookup stops at the first empty slot.
 * The value is only a hint: the model checks that the record still has
 * that id and still runs on that thread before it acts on it.
 *
 * Not thread-safe: the model's users serialise access.
 */
#include "engine/model/runmap.h"

#include <stdlib.h>

static uint32_t runmap_hash(uint64_t tid)
{
	return (uint32_t)((tid * 0x9e3779b97f4a7c15ull) >> 32);
}

void runmap_init(struct runmap *r)
{
	*r = (struct runmap){0};
}

void runmap_finish(struct runmap *r)
{
	free(r->e);
	*r = (struct runmap){0};
}

static struct runmap_entry *runmap_find(const struct runmap *r, uint64_t tid)
{
	uint32_t mask = r->cap - 1;

	if (!r->cap)
		return NULL;
	for (uint32_t i = runmap_hash(tid) & mask;; i = (i + 1) & mask)
		if (!r->e[i].tid || r->e[i].tid == tid)
			return &r->e[i];
}

static bool runmap_grow(struct runmap *r)
{
	uint32_t cap = r->cap ? 2 * r->cap : 64;
	struct runmap old = *r;

	if (cap > 2 * RUNMAP_MAX)
		return false;
	r->e = calloc(cap, sizeof(*r->e));
	if (!r->e) {
		*r = old;
		return false;
	}
	r->cap = cap;
	r->used = 0;
	for (uint32_t i = 0; i < old.cap; i++)
		if (old.e[i].tid) {
			*runmap_find(r, old.e[i].tid) = old.e[i];
			r->used++;
		}
	free(old.e);
	return true;
}

struct runmap_entry *runmap_entry(struct runmap *r, uint64_t tid)
{
	struct runmap_entry *e;

	if (!tid)
		return NULL;
	e = runmap_find(r, tid);
	if (!e || (!e->tid && 2 * (r->used + 1) > r->cap)) {
		if (!runmap_grow(r))
			return NULL;
		e = runmap_find(r, tid);
	}
	if (!e->tid) {
		*e = (struct runmap_entry){.tid = tid};
		r->used++;
	}
	return e;
}
