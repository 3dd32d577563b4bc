/*
 * recstacks: an open-addressing set of CallTrace ids (RECSTACKS_SLOTS,
 * allocated at the first wait: a recording without parked stacks costs
 * nothing), each waiting for its frames or already written.  A retry
 * walks the slots once and asks for the waiting ones; the recorder's
 * writer thread retries when its ring runs dry (at most every
 * RECORDER_STACK_RETRY_NS) and once more at the end, after the engine's
 * last rotation.  Ids never answered stay `stack_id` without frames: a
 * replay shows no parked stack there, as it did before.
 */
#define _GNU_SOURCE
#include "engine/record/recstacks.h"

#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

#define RECSTACKS_BITS 16
#define RECSTACKS_SLOTS (1u << RECSTACKS_BITS)
#define RECSTACKS_FRAMES 64

enum { RS_EMPTY, RS_WAITING, RS_GIVEN };

struct recstacks_slot {
	uint64_t id;
	uint32_t state;
};

void recstacks_init(struct recstacks *s)
{
	memset(s, 0, sizeof(*s));
}

void recstacks_finish(struct recstacks *s)
{
	free(s->slot);
	memset(s, 0, sizeof(*s));
}

bool recstacks_wait(struct recstacks *s, uint64_t id)
{
	uint32_t i;

	if (!id)
		return false;
	if (!s->slot) {
		s->slot = calloc(RECSTACKS_SLOTS, sizeof(*s->slot));
		if (!s->slot) {
			s->dropped++;
			return false;
		}
	}
	for (i = (uint32_t)hash_fib(id, 64 - RECSTACKS_BITS);
	     s->slot[i].state != RS_EMPTY && s->slot[i].id != id;
	     i = (i + 1) & (RECSTACKS_SLOTS - 1))
		;
	if (s->slot[i].state != RS_EMPTY)
		return s->slot[i].state == RS_WAITING;
	/* At most 3/4 full: a walk always ends at an empty slot. */
	if (s->used >= RECSTACKS_SLOTS / 4 * 3) {
		s->dropped++;
		return false;
	}
	s->slot[i] = (struct recstacks_slot){.id = id, .state = RS_WAITING};
	s->used++;
	s->waiting++;
	return true;
}

bool recstacks_given(const struct recstacks *s, uint64_t id)
{
	uint32_t i;

	if (!s->slot || !id)
		return false;
	for (i = (uint32_t)hash_fib(id, 64 - RECSTACKS_BITS);
	     s->slot[i].state != RS_EMPTY; i = (i + 1) & (RECSTACKS_SLOTS - 1))
		if (s->slot[i].id == id)
			return s->slot[i].state == RS_GIVEN;
	return false;
}

void recstacks_retry(struct recstacks *s, const struct recstacks_io *io)
{
	uint64_t frames[RECSTACKS_FRAMES];

	for (uint32_t i = 0; s->waiting && i < RECSTACKS_SLOTS; i++) {
		struct recstacks_slot *t = &s->slot[i];
		size_t n;

		if (t->state != RS_WAITING)
			continue;
		n = io->stack(io->ctx, t->id, frames, RECSTACKS_FRAMES);
		if (!n)
			continue;
		io->emit(io->ctx, t->id, frames, n);
		t->state = RS_GIVEN;
		s->waiting--;
		s->given++;
	}
}
