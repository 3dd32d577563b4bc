/*
 * learned: the program frame last found for a coroutine parked at a
 * switch address, for the parks too short to walk.  See learned.c.
 */
#ifndef COROTOP_LEARNED_H
#define COROTOP_LEARNED_H

#include <stdbool.h>
#include <stdint.h>

struct learned_slot {
	uint64_t id; /* model id (never reused); 0: empty */
	uint64_t at; /* the switch's address (the event's) */
	uint64_t frame;
};

struct learned {
	struct learned_slot *slot;
	uint32_t mask; /* slots - 1 */
	uint64_t puts, replaced;
};

/* Room for about `want` pairs (rounded up to a power of two, at least 64);
 * false when out of memory (the map then keeps nothing, and says so by
 * answering 0). */
bool learned_init(struct learned *l, uint32_t want);
void learned_finish(struct learned *l);

/* Coroutine id parked at switch address `at` was found parked in the
 * program's `frame`. */
void learned_put(struct learned *l, uint64_t id, uint64_t at, uint64_t frame);
/* The frame learned for (id, at), or 0. */
uint64_t learned_get(const struct learned *l, uint64_t id, uint64_t at);

#endif
