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
	uint64_t stack; /* the walked stack's id in the parked store, 0 */
	uint32_t r;	/* the model record id had (what a replacement
			   changes: learned_put) */
};

/* learned_put replaced no other coroutine's pair. */
#define LEARNED_NONE UINT32_MAX

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

/* Coroutine id (model record r) parked at switch address `at` was found
 * parked in the program's `frame`, at the walked stack `stack` (its id in
 * the engine's parked store; 0: none kept).  Returns the record whose pair
 * this put replaced -- its lookups answer 0 from now on -- or LEARNED_NONE
 * (a slot free, or the pair's own). */
uint32_t learned_put(struct learned *l, uint64_t id, uint32_t r, uint64_t at,
		     uint64_t frame, uint64_t stack);
/* The frame learned for (id, at), or 0; its stack into *stack (may be
 * NULL; 0: none). */
uint64_t learned_get(const struct learned *l, uint64_t id, uint64_t at,
		     uint64_t *stack);
/* Each stack id the table holds, to f (repeats possible). */
void learned_stacks(const struct learned *l, void (*f)(void *, uint64_t),
		    void *ctx);

#endif
