/*
 * grow: a heap array that doubles to fit, for every array whose size is
 * only known while it is filled (hot-stack copies, profiles, a trace
 * file's index, the model's records, a parser's stack...).  Capacity
 * starts at 256 elements and doubles up to what is needed; with a bound
 * it never passes the bound.  An array sized to a snapshot (an index over
 * its rows, a copy of its records) grows to fit instead: it is redone at
 * every refresh to the same count, give or take.  A failed realloc leaves
 * the array as it was, so the caller can stop and report instead of
 * losing what it had.
 */
#ifndef COROTOP_GROW_H
#define COROTOP_GROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Make *v hold at least `need` elements of `size` bytes, and never more
 * than `max` (the last doubling is cut to max).  False, the array as it
 * was, when need > max or memory ran out. */
static inline bool grow_array_max(void **v, size_t *cap, size_t need,
				  size_t max, size_t size)
{
	size_t c = *cap ? *cap : 256;
	void *p;

	if (need <= *cap)
		return true;
	if (max > SIZE_MAX / size)
		max = SIZE_MAX / size;
	if (need > max)
		return false;
	while (c < need)
		c = c > max / 2 ? max : c * 2;
	if (c > max)
		c = max;
	p = realloc(*v, c * size);
	if (!p)
		return false;
	*v = p;
	*cap = c;
	return true;
}

/* Make *v hold at least `need` elements of `size` bytes; when it must
 * grow, to exactly `need` (an index sized to a snapshot's count).  False,
 * the array as it was, when memory ran out. */
static inline bool grow_array_fit(void **v, size_t *cap, size_t need,
				  size_t size)
{
	void *p;

	if (need <= *cap)
		return true;
	if (need > SIZE_MAX / size)
		return false;
	p = realloc(*v, need * size);
	if (!p)
		return false;
	*v = p;
	*cap = need;
	return true;
}

/* Make *v hold at least `need` elements of `size` bytes. */
static inline bool grow_array(void **v, size_t *cap, size_t need, size_t size)
{
	return grow_array_max(v, cap, need, SIZE_MAX, size);
}

#endif
