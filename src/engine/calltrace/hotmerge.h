/*
 * hotmerge: a top list of hot stacks merged at a coarser granularity --
 * one row per function stack (or per line stack), as perf top and py-spy
 * top show them.  See hotmerge.c.
 */
#ifndef COROTOP_HOTMERGE_H
#define COROTOP_HOTMERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/calltrace/hotstacks.h"

/* What a frame is keyed by: two frames with one key are one. */
typedef uint64_t (*hotmerge_key_fn)(void *ctx, uint64_t addr, bool leaf);

/* One stack to merge, heaviest first (hotstacks_heaviest's order). */
struct hotmerge_stack {
	uint64_t stack_id, trace_id;
	uint64_t total;	  /* raw weight since start or zero */
	double weight;	  /* over the window, decayed */
	uint32_t first;	  /* its frames: frames[first .. first + n) */
	uint32_t nframes; /* innermost first */
};

struct hotmerge_in {
	const struct hotmerge_stack *s;
	size_t n;
	const uint64_t *frames;
	enum hot_order order; /* the basis: weight or total */
	double sum;	      /* the basis of every stack of the set */
};

/*
 * Merge the stacks whose frames have equal keys into rows, and write the
 * heaviest `max` rows into out, heaviest first (ties: the other weight,
 * then the key).  Of a row, 0..100 of in->sum:
 *
 *   self_pct   its stacks' basis: samples whose stack is this one, at the
 *              granularity of the keys;
 *   total_pct  the basis of every stack in which the row's leaf key appears
 *              anywhere (once per stack, however often it recurses): the
 *              inclusive time of the leaf function (line, address).
 *
 * self_pct <= total_pct.  A row's frames, stack_id and trace_id are those
 * of its heaviest stack; key hashes the keys (stable across calls);
 * merged counts its stacks.  key_fn is called once per distinct frame (a
 * memo).  Returns how many rows were written; 0 when out of memory.
 */
size_t hotmerge(const struct hotmerge_in *in, hotmerge_key_fn key_fn, void *ctx,
		struct hot_stack *out, size_t max);

#endif
