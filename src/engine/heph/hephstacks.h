/*
 * hephstacks: the parked stacks a corotop recording names by id --
 * `corotop_stack` options (u64 id, then the frames) that an interval's
 * `stack_id` refers to, written once the engine had the frames (see
 * recstacks.h) -- and an interval's stack, whichever way it holds it.
 * See hephstacks.c.
 */
#ifndef COROTOP_HEPHSTACKS_H
#define COROTOP_HEPHSTACKS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/heph/hephfile.h"

struct heph_stack_ref {
	uint64_t id;
	uint32_t opt; /* the option's index (heph_file_option) */
};

struct heph_stacks {
	struct heph_stack_ref *v; /* sorted by id, unique (the first) */
	size_t n;
};

/* Index f's corotop_stack options (none is fine; out of memory leaves
 * what fitted). */
void heph_stacks_init(struct heph_stacks *s, const struct heph_file *f);
void heph_stacks_finish(struct heph_stacks *s);
/* The frames of the corotop_stack of `id`, at most max; 0: none. */
size_t heph_stacks_find(const struct heph_stacks *s, const struct heph_file *f,
			uint64_t id, uint64_t *frames, size_t max);
/* The frames of event p's stack: its `stack` attribute, else the
 * corotop_stack its `stack_id` names; innermost first, at most max.
 * 0: none. */
size_t heph_stacks_of(const struct heph_stacks *s, const struct heph_file *f,
		      const struct heph_packet *p, uint64_t *frames,
		      size_t max);

#endif
