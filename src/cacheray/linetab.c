/*
 * linetab: the cache lines a Cacheray trace touched, counted in a hash table
 * whose memory is bounded by a cap on distinct lines, never by the length
 * of the trace.
 *
 * Open addressing with linear probing; the slot is the line itself (64
 * bytes, so one probe is one cache miss), found by Fibonacci hashing of the
 * key (line number + 1, so 0 marks an empty slot).  Lines are never
 * deleted (forgetting freed bytes only clears thread slots), so there are
 * no tombstones.  The table starts small and doubles
 * while it is at most 3/4 full; once it holds `max` lines, an access to a
 * line it does not hold is refused (the caller counts those accesses as
 * dropped) -- the lines already kept go on counting, so the hottest lines
 * of a long trace are those that appeared before the cap, which is the
 * usual case for hot data.
 *
 * Selection of the hottest lines happens at report time: one pass with a
 * min-heap of the N best, O(lines log N).
 */
#include "cacheray/linetab.h"

#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

#define LINETAB_MIN_SLOTS 4096u

static bool linetab_alloc(struct linetab *t, uint32_t slots)
{
	uint32_t bits = 0;

	t->slot = calloc(slots, sizeof(*t->slot));
	if (!t->slot)
		return false;
	while ((1u << bits) < slots)
		bits++;
	t->mask = slots - 1;
	t->shift = 64 - bits;
	return true;
}

bool linetab_init(struct linetab *t, uint32_t max_lines)
{
	memset(t, 0, sizeof(*t));
	t->max = max_lines ? max_lines : LINETAB_MAX_LINES_DEFAULT;
	/* The slots at 3/4 load must fit a uint32_t mask. */
	if (t->max > (3u << 29))
		t->max = 3u << 29;
	return linetab_alloc(t, LINETAB_MIN_SLOTS);
}

void linetab_finish(struct linetab *t)
{
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

static struct cacheline *linetab_place(struct linetab *t, uint64_t key)
{
	uint32_t i = (uint32_t)hash_fib(key, t->shift);

	while (t->slot[i].key)
		i = (i + 1) & t->mask;
	return &t->slot[i];
}

static bool linetab_grow(struct linetab *t)
{
	struct cacheline *old = t->slot;
	uint32_t n = t->mask + 1;

	if (!linetab_alloc(t, n * 2)) {
		t->slot = old;
		return false;
	}
	for (uint32_t i = 0; i < n; i++)
		if (old[i].key)
			*linetab_place(t, old[i].key) = old[i];
	free(old);
	return true;
}

struct cacheline *linetab_insert(struct linetab *t, uint64_t key)
{
	struct cacheline *l;

	if (t->count >= t->max)
		return NULL;
	if ((uint64_t)(t->count + 1) * 4 > (uint64_t)(t->mask + 1) * 3 &&
	    !linetab_grow(t))
		return NULL;
	l = linetab_place(t, key);
	memset(l, 0, sizeof(*l));
	l->key = key;
	l->region = CACHELINE_NO_REGION;
	t->count++;
	return l;
}

/* linetab_forget on one line: [start, last] overlaps it. */
static void cacheline_forget(struct cacheline *l, uint64_t start, uint64_t last)
{
	uint64_t base = (l->key - 1) << 6, lo, hi, m;

	if (cacheline_shared(l))
		return; /* sticky */
	lo = start > base ? start - base : 0;
	hi = last - base < 63 ? last - base : 63;
	m = ((2ull << (hi - lo)) - 1) << lo; /* 2 << 63 is 0: all 64 */
	l->bytes[0] &= ~m;
	l->bytes[1] &= ~m;
	if (l->thread[1] && !l->bytes[1]) {
		l->thread[1] = 0;
		l->flags &= (uint8_t)~CACHELINE_W1;
	}
	if (l->thread[0] && !l->bytes[0]) {
		/* Slot 1 (or nothing) moves down: slot 0 is used first. */
		l->thread[0] = l->thread[1];
		l->bytes[0] = l->bytes[1];
		l->flags =
			(uint8_t)((l->flags & ~(CACHELINE_W0 | CACHELINE_W1)) |
				  (l->flags & CACHELINE_W1 ? CACHELINE_W0 : 0));
		l->thread[1] = 0;
		l->bytes[1] = 0;
	}
	if (m == ~0ull)
		l->flags &= (uint8_t) ~(CACHELINE_MORE | CACHELINE_MORE_W);
}

void linetab_forget(struct linetab *t, uint64_t start, uint64_t last)
{
	uint64_t first = start >> 6, end = last >> 6;

	if (!t->count || start > last)
		return;
	if (end - first <= t->mask) {
		/* No more lines than slots: look each one up. */
		for (uint64_t n = first;; n++) {
			struct cacheline *l = linetab_find(t, n + 1);

			if (l)
				cacheline_forget(l, start, last);
			if (n == end)
				break;
		}
		return;
	}
	/* A region larger than the table: one pass over the slots. */
	for (uint32_t i = 0; i <= t->mask; i++) {
		struct cacheline *l = &t->slot[i];

		if (l->key && l->key - 1 >= first && l->key - 1 <= end)
			cacheline_forget(l, start, last);
	}
}

/* a ranks below b: fewer accesses, or as many at a higher address. */
static bool linetab_below(const struct cacheline *a, const struct cacheline *b)
{
	uint64_t x = cacheline_accesses(a), y = cacheline_accesses(b);

	return x != y ? x < y : a->key > b->key;
}

static void linetab_sift_down(const struct cacheline **h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;

		if (l < n && linetab_below(h[l], h[m]))
			m = l;
		if (l + 1 < n && linetab_below(h[l + 1], h[m]))
			m = l + 1;
		if (m == i)
			return;
		const struct cacheline *x = h[i];
		h[i] = h[m];
		h[m] = x;
		i = m;
	}
}

size_t linetab_top(const struct linetab *t, bool shared_only,
		   const struct cacheline **out, size_t max)
{
	size_t n = 0;

	if (!max || !t->slot)
		return 0;
	/* out[0..n) is a min-heap of the best so far. */
	for (uint32_t i = 0; i <= t->mask; i++) {
		const struct cacheline *l = &t->slot[i];

		if (!l->key || (shared_only && !cacheline_shared(l)))
			continue;
		if (n < max) {
			size_t j = n++;

			out[j] = l;
			while (j && linetab_below(out[j], out[(j - 1) / 2])) {
				const struct cacheline *x = out[j];

				out[j] = out[(j - 1) / 2];
				out[(j - 1) / 2] = x;
				j = (j - 1) / 2;
			}
		} else if (linetab_below(out[0], l)) {
			out[0] = l;
			linetab_sift_down(out, n, 0);
		}
	}
	/* Heap sort: pop the smallest to the back, best ends up first. */
	for (size_t k = n; k > 1; k--) {
		const struct cacheline *x = out[0];

		out[0] = out[k - 1];
		out[k - 1] = x;
		linetab_sift_down(out, k - 1, 0);
	}
	return n;
}
