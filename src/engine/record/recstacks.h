/*
 * recstacks: the parked stacks a recording waits for.  A suspended
 * interval names its stack by CallTrace id; the engine has the frames
 * only once a rotation collected them, which may come after the interval
 * was written -- a program's exit closes its parked coroutines before
 * the last rotation.  Such an interval carries `stack_id`, and the
 * frames follow later as one `corotop_stack` option per id.  See
 * recstacks.c.
 */
#ifndef COROTOP_RECSTACKS_H
#define COROTOP_RECSTACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct recstacks_slot;

struct recstacks {
	struct recstacks_slot *slot; /* NULL until the first wait */
	uint32_t used, waiting;
	uint64_t given, dropped; /* written; not kept (the set full) */
};

struct recstacks_io {
	/* The frames of `id`, innermost first, at most max; 0: not yet. */
	size_t (*stack)(void *ctx, uint64_t id, uint64_t *frames, size_t max);
	/* Write them (a corotop_stack option). */
	void (*emit)(void *ctx, uint64_t id, const uint64_t *frames, size_t n);
	void *ctx;
};

void recstacks_init(struct recstacks *s);
void recstacks_finish(struct recstacks *s);
/* An interval named id without its frames: wait for them (once per id;
 * false when the set is full or out of memory: the id stays unresolved). */
bool recstacks_wait(struct recstacks *s, uint64_t id);
/* Whether id's frames were written already. */
bool recstacks_given(const struct recstacks *s, uint64_t id);
/* Ask for every id waited for; those answered are written, once. */
void recstacks_retry(struct recstacks *s, const struct recstacks_io *io);

#endif
