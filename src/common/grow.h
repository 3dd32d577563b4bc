/*
 * grow: a heap array that doubles to fit, for the engine's copies whose
 * size is only known while they are filled (hot-stack copies, profiles).
 * Capacity starts at 256 elements; a failed realloc leaves the array as it
 * was, so the caller can stop and report instead of losing what it had.
 */
#ifndef COROTOP_GROW_H
#define COROTOP_GROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

/* Make *v hold at least `need` elements of `size` bytes. */
static inline bool grow_array(void **v, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : 256;
	void *p;

	if (need <= *cap)
		return true;
	while (c < need)
		c *= 2;
	p = realloc(*v, c * size);
	if (!p)
		return false;
	*v = p;
	*cap = c;
	return true;
}

#endif
