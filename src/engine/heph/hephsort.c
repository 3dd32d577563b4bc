/*
 * hephsort: a Heph file's events by start time (heph_file_sort, the
 * by_start index of hephfile.h) and the search in it (heph_file_seek).
 *
 * by_start orders the events stably (equal starts keep file order): an LSD
 * radix sort of (start - first start) on 12-bit digits, skipping digits
 * that are the same in every key -- a few passes over the keys rather than
 * n log n comparisons, since a 10-million-event file may wait for it (the
 * converters).  A file already in start order is noticed and not sorted.
 */
#include "engine/heph/hephfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Keys are packed with their position: (key << IDX_BITS) | i in one u64,
 * so a pass moves one 8-byte stream, and LSD passes over the key bits only
 * keep equal keys in position order.  IDX_BITS = 28 holds every position
 * (HEPHFILE_MAX_EVENTS); 36 bits of key (68 s of start times) remain.  A
 * wider key is sorted in two rounds: its low 36 bits, then its high bits
 * packed with the position from the first round (LSD again).  The last
 * pass writes positions (u32) instead of packed values.
 */
#define IDX_BITS 28u
#define IDX_MASK ((1u << IDX_BITS) - 1)
#define KEY_BITS (64u - IDX_BITS)
#define RADIX_BITS 12u
#define RADIX_DIGITS 3u /* 36 bits: KEY_BITS */
#define RADIX_SIZE (1u << RADIX_BITS)

struct sorter {
	uint64_t *v, *tmp; /* n packed values and scratch */
	size_t n;
	uint32_t count[RADIX_DIGITS][RADIX_SIZE];
};

static uint32_t digit(uint64_t v, unsigned d)
{
	return (uint32_t)(v >> (IDX_BITS + d * RADIX_BITS)) & (RADIX_SIZE - 1);
}

static void sorter_count(struct sorter *s)
{
	memset(s->count, 0, sizeof(s->count));
	for (size_t i = 0; i < s->n; i++)
		for (unsigned d = 0; d < RADIX_DIGITS; d++)
			s->count[d][digit(s->v[i], d)]++;
}

/*
 * Stable sort of s->v by the bits above IDX_BITS (counted already); out[k]
 * = the position (low bits) of the k-th value, or map[position] with a map.
 */
static void sorter_run(struct sorter *s, uint32_t *out, const uint32_t *map)
{
	unsigned pass[RADIX_DIGITS], np = 0;
	uint64_t *v = s->v, *tmp = s->tmp, *t;
	size_t n = s->n;

	for (unsigned d = 0; d < RADIX_DIGITS; d++) {
		uint32_t *c = s->count[d], sum = 0;

		if (c[digit(v[0], d)] == n)
			continue; /* the same digit everywhere */
		for (uint32_t b = 0; b < RADIX_SIZE; b++) {
			uint32_t k = c[b];

			c[b] = sum;
			sum += k;
		}
		pass[np++] = d;
	}
	for (unsigned p = 0; p + 1 < np; p++) {
		uint32_t *c = s->count[pass[p]];

		for (size_t i = 0; i < n; i++)
			tmp[c[digit(v[i], pass[p])]++] = v[i];
		t = v, v = tmp, tmp = t;
	}
	if (np) {
		uint32_t *c = s->count[pass[np - 1]];

		for (size_t i = 0; i < n; i++) {
			uint32_t at = (uint32_t)(v[i] & IDX_MASK);

			out[c[digit(v[i], pass[np - 1])]++] =
				map ? map[at] : at;
		}
	} else {
		for (size_t i = 0; i < n; i++) {
			uint32_t at = (uint32_t)(v[i] & IDX_MASK);

			out[i] = map ? map[at] : at;
		}
	}
	s->v = v;
	s->tmp = tmp;
}

bool heph_file_sort(struct heph_file *f, char *err, size_t errlen)
{
	size_t n = f->nev, i;
	uint32_t *idx, *p1 = NULL, *hi = NULL;
	struct sorter *s = NULL;
	bool wide = (f->max_start - f->first_start) >> KEY_BITS;
	bool ok = false;

	if (f->by_start)
		return true;
	idx = malloc((n ? n : 1) * sizeof(*idx));
	if (!idx)
		goto out;
	if (f->in_order) {
		for (i = 0; i < n; i++)
			idx[i] = (uint32_t)i;
		goto done;
	}
	s = malloc(sizeof(*s));
	if (!s)
		goto out;
	s->n = n;
	s->v = malloc(n * sizeof(*s->v)); /* the keys, packed below */
	s->tmp = malloc(n * sizeof(*s->tmp));
	if (wide) {
		hi = malloc(n * sizeof(*hi));
		p1 = malloc(n * sizeof(*p1));
	}
	if (!s->v || !s->tmp || (wide && (!hi || !p1)))
		goto out;
	for (i = 0; i < n; i++) {
		uint64_t key = f->ev[i].start - f->first_start;

		s->v[i] = key << IDX_BITS | i;
		if (wide)
			hi[i] = (uint32_t)(key >> KEY_BITS);
	}
	sorter_count(s);
	if (!wide) {
		sorter_run(s, idx, NULL);
		goto done;
	}
	/* Round two: the high bits, in the order of round one. */
	sorter_run(s, p1, NULL);
	for (i = 0; i < n; i++)
		s->v[i] = (uint64_t)hi[p1[i]] << IDX_BITS | i;
	sorter_count(s);
	sorter_run(s, idx, p1);
done:
	f->by_start = idx;
	idx = NULL;
	ok = true;
out:
	if (!ok && err && errlen)
		snprintf(err, errlen,
			 "out of memory sorting %zu events by start time", n);
	free(idx);
	free(p1);
	free(hi);
	if (s) {
		free(s->v);
		free(s->tmp);
		free(s);
	}
	return ok;
}

size_t heph_file_seek(const struct heph_file *f, uint64_t t)
{
	size_t lo = 0, hi = f->by_start ? f->nev : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->ev[f->by_start[mid]].start < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
