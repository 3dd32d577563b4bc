/*
 * lowerbound: the binary search of a sorted array of records by one of
 * their fields -- the first record whose field is not below a key -- for
 * the tables sorted once and searched often (recorded names, births,
 * members by type).
 */
#ifndef COROTOP_LOWERBOUND_H
#define COROTOP_LOWERBOUND_H

#include <stddef.h>

/*
 * out = the first index i of [0 .. n) for which `below` -- an expression of
 * the index lb_mid_ -- is false, or n when there is none; below must be
 * true up to some index and false from it on.  The searches below are
 * this one.
 */
#define LOWER_BOUND_WHERE(out, n, below)                                       \
	do {                                                                   \
		size_t lb_lo_ = 0, lb_hi_ = (n);                               \
		while (lb_lo_ < lb_hi_) {                                      \
			size_t lb_mid_ = lb_lo_ + (lb_hi_ - lb_lo_) / 2;       \
			if (below)                                             \
				lb_lo_ = lb_mid_ + 1;                          \
			else                                                   \
				lb_hi_ = lb_mid_;                              \
		}                                                              \
		(out) = lb_lo_;                                                \
	} while (0)

/*
 * out = the first index i of a[0 .. n) with a[i].field >= key, or n when
 * there is none; a must be sorted by field.  A macro, so the comparison is
 * the field's own (no callback per step).
 */
#define LOWER_BOUND(out, a, n, field, key)                                     \
	LOWER_BOUND_WHERE(out, n, (a)[lb_mid_].field < (key))

/* The same over an array of scalars: the first a[i] >= key. */
#define LOWER_BOUND_ARRAY(out, a, n, key)                                      \
	LOWER_BOUND_WHERE(out, n, (a)[lb_mid_] < (key))

#endif
