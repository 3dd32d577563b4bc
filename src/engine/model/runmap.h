/*
 * runmap: which coroutine record last resumed on each OS thread, so that
 * the model can suspend the previous one by implication when its own
 * suspend was lost (model.c, "One running context per thread").  See
 * runmap.c.
 */
#ifndef COROTOP_RUNMAP_H
#define COROTOP_RUNMAP_H

#include <stdbool.h>
#include <stdint.h>

/* Threads remembered at most; past it, a new thread is not (and nothing is
 * inferred on it). */
#define RUNMAP_MAX (1u << 16)

struct runmap_entry {
	uint64_t tid; /* 0: empty */
	uint64_t id;  /* the record's model id (records are reused); 0: none
			 yet */
	uint32_t slot;
};

struct runmap {
	struct runmap_entry *e;
	uint32_t cap, used; /* cap: a power of two, or 0 */
};

void runmap_init(struct runmap *r);
void runmap_finish(struct runmap *r);

/* Thread tid's entry -- the record that last resumed on it (id 0 for a
 * thread new here) -- for the caller to read and then overwrite: one
 * lookup per resume.  Valid until the next call.  NULL when tid is 0 or
 * can not be remembered (out of memory, or RUNMAP_MAX threads already). */
struct runmap_entry *runmap_entry(struct runmap *r, uint64_t tid);

#endif
