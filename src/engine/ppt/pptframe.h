/*
 * pptframe: one frame's bytes (copied out of a data block) decoded by its
 * buffer's description: which type it is, and its values, one per column
 * (pptdesc.h), formatted for people or for JSON.  See pptframe.c.
 *
 * Untrusted bytes: a discriminator outside 1..ntypes is an error, never an
 * index; values are read with memcpy (frames are packed, members may be
 * unaligned in the block); a float that is NaN or infinite is shown as such
 * and printed to JSON as null.
 */
#ifndef COROTOP_PPTFRAME_H
#define COROTOP_PPTFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/ppt/pptdesc.h"

enum ppt_vkind {
	PPT_V_INT = 0,	/* i: int and byte members */
	PPT_V_UINT,	/* u: counters */
	PPT_V_FLOAT,	/* f: float, double */
	PPT_V_TIME,	/* i: ns (timespec/timeval as ns; may be any clock) */
	PPT_V_DURATION, /* i: ns, an interval of times (end - begin) */
	PPT_V_DELTA,	/* i: an interval of ints or counters (end - begin) */
};

struct ppt_value {
	enum ppt_vkind kind;
	union {
		int64_t i;
		uint64_t u;
		double f;
	} v;
};

/* The seqnos of a frame (4 bytes each, native order). */
uint32_t pptframe_front(const struct ppt_desc *d, const void *frame);
uint32_t pptframe_back(const struct ppt_desc *d, const void *frame);
/* Its layout index (0-based), or -1 for a discriminator out of range. */
int pptframe_type(const struct ppt_desc *d, const void *frame);

/* Values of the columns of layout `type` into out[0..ncols): returns the
 * count (min of ncols and max). */
size_t pptframe_decode(const struct ppt_desc *d, int type, const void *frame,
		       struct ppt_value *out, size_t max);

/* For people: "-12", "3.25", "1.5ms", "+42", "12:00:03.123456789" (a time
 * of day when the value looks like a realtime clock, else seconds).
 * Returns the length written (always NUL-terminated when n > 0). */
size_t pptframe_format(const struct ppt_value *v, char *buf, size_t n);
/* For JSON: a number, or null for NaN/Inf.  Durations and times in ns. */
size_t pptframe_json(const struct ppt_value *v, char *buf, size_t n);

#endif
