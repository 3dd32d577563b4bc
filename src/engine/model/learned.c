/*
 * learned: the program frame last found for a coroutine parked at a
 * switch address.
 *
 * Why.  A coroutine's WHERE is the first frame of the program's own code
 * in its parked stack, found by walking that stack in the target
 * (engine/stacks/walks.c).  A park of a few microseconds -- a fiber
 * ping-ponging on a channel -- usually ends before a walk can copy the stack,
 * and then only the switch's address is known: Boost's
 * `context::resume()+0x52`, the same for every fiber.  But a coroutine that
 * parks at the same switch address again mostly parks from the same place of
 * the program: what the last walk of that (coroutine, address) found is shown
 * instead, marked as learned (model_coro.where_learned), until a walk of the
 * park itself replaces it.
 *
 * Shape.  An open-addressing table of (id, at) -> frame, a fixed number of
 * slots chosen at init, probed LEARNED_PROBES slots from the key's hash.
 * A put updates its key's slot, else takes the first empty one, else
 * replaces the last probed one (counted): the table never grows, never
 * rehashes, and costs the same at any age.  Ids are never reused, so a
 * dead coroutine's pairs are only ever replaced, never wrongly found.
 *
 * Not thread-safe: the engine calls it under its lock.
 */
#include "engine/model/learned.h"

#include <stdlib.h>

#define LEARNED_PROBES 4u
#define LEARNED_MIN 64u
#define LEARNED_MAX (1u << 22)

static uint32_t learned_hash(const struct learned *l, uint64_t id, uint64_t at)
{
	uint64_t h =
		(id * 0x9e3779b97f4a7c15ull) ^ (at * 0xc2b2ae3d27d4eb4full);

	return (uint32_t)(h >> 32) & l->mask;
}

bool learned_init(struct learned *l, uint32_t want)
{
	uint32_t n = LEARNED_MIN;

	while (n < want && n < LEARNED_MAX)
		n <<= 1;
	l->puts = l->replaced = 0;
	l->slot = calloc(n, sizeof(*l->slot));
	l->mask = l->slot ? n - 1 : 0;
	return l->slot != NULL;
}

void learned_finish(struct learned *l)
{
	free(l->slot);
	l->slot = NULL;
	l->mask = 0;
}

uint32_t learned_put(struct learned *l, uint64_t id, uint32_t r, uint64_t at,
		     uint64_t frame, uint64_t stack)
{
	struct learned_slot *s = NULL;
	uint32_t h, was = LEARNED_NONE;

	if (!l->slot || !id || !at || !frame)
		return LEARNED_NONE;
	h = learned_hash(l, id, at);
	for (uint32_t k = 0; k < LEARNED_PROBES; k++) {
		struct learned_slot *p = &l->slot[(h + k) & l->mask];

		if (p->id == id && p->at == at) {
			s = p;
			break;
		}
		if (!s && !p->id)
			s = p;
	}
	if (!s) {
		s = &l->slot[(h + LEARNED_PROBES - 1) & l->mask];
		l->replaced++;
		if (s->id != id)
			was = s->r;
	}
	*s = (struct learned_slot){
		.id = id, .at = at, .frame = frame, .stack = stack, .r = r};
	l->puts++;
	return was;
}

uint64_t learned_get(const struct learned *l, uint64_t id, uint64_t at,
		     uint64_t *stack)
{
	uint32_t h;

	if (stack)
		*stack = 0;
	if (!l->slot || !id || !at)
		return 0;
	h = learned_hash(l, id, at);
	for (uint32_t k = 0; k < LEARNED_PROBES; k++) {
		const struct learned_slot *p = &l->slot[(h + k) & l->mask];

		if (p->id == id && p->at == at) {
			if (stack)
				*stack = p->stack;
			return p->frame;
		}
	}
	return 0;
}

void learned_stacks(const struct learned *l, void (*f)(void *, uint64_t),
		    void *ctx)
{
	for (uint32_t k = 0; l->slot && k <= l->mask; k++)
		if (l->slot[k].id && l->slot[k].stack)
			f(ctx, l->slot[k].stack);
}
