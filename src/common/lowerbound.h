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
 * out = the first index i of a[0 .. n) with a[i].field >= key, or n when
 * there is none; a must be sorted by field.  A macro, so the comparison is
 * the field's own (no callback per step).
 */
#define LOWER_BOUND(out, a, n, field, key)                                     \
	do {                                                                   \
		size_t lb_lo_ = 0, lb_hi_ = (n);                               \
		while (lb_lo_ < lb_hi_) {                                      \
			size_t lb_mid_ = lb_lo_ + (lb_hi_ - lb_lo_) / 2;       \
			if ((a)[lb_mid_].field < (key))                        \
				lb_lo_ = lb_mid_ + 1;                          \
			else                                                   \
				lb_hi_ = lb_mid_;                              \
		}                                                              \
		(out) = lb_lo_;                                                \
	} while (0)

/* The same over an array of scalars: the first a[i] >= key. */
#define LOWER_BOUND_ARRAY(out, a, n, key)                                      \
	do {                                                                   \
		size_t lb_lo_ = 0, lb_hi_ = (n);                               \
		while (lb_lo_ < lb_hi_) {                                      \
			size_t lb_mid_ = lb_lo_ + (lb_hi_ - lb_lo_) / 2;       \
			if ((a)[lb_mid_] < (key))                              \
				lb_lo_ = lb_mid_ + 1;                          \
			else                                                   \
				lb_hi_ = lb_mid_;                              \
		}                                                              \
		(out) = lb_lo_;                                                \
	} while (0)

#endif
