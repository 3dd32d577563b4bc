/*
 * registry: the probe's list of live coroutines, traced or not, so that an
 * agent that attaches later can publish each of them exactly once
 * (census.c).  See registry.c for the protocol and why it holds.
 */
#ifndef COROTOP_PROBE_REGISTRY_H
#define COROTOP_PROBE_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "corotop/ctp.h"
#include "corotop/probe.h"

/* Slots: one per live coroutine; more are not registered (counted). */
#define REGISTRY_MAX CTP_MAX_STATIONS_LIMIT

/* A slot's word: flags, the station of a hand-over, the attachment. */
#define REGISTRY_LIVE (1ull << 0)    /* between open and close */
#define REGISTRY_PIN (1ull << 1)     /* a census walker is looking */
#define REGISTRY_HANDOFF (1ull << 2) /* the walker gave it a station */
#define REGISTRY_STATION(w) ((uint32_t)(((w) >> 8) & 0xffffffu))
#define REGISTRY_ATTACH(w) ((uint32_t)((w) >> 32))

/* What the owner of a coroutine finds when it first records under an
 * attachment (registry_claim). */
enum registry_claim {
	REGISTRY_CLAIM_OWN,	/* take a station yourself */
	REGISTRY_CLAIM_HANDOFF, /* the census published you on *station: adopt
				   it */
	REGISTRY_CLAIM_STALE, /* a newer attachment claimed you: record nothing
			       */
};

struct registry_stats {
	uint64_t used; /* slots ever handed out (the walk's bound) */
	uint64_t live; /* registered now */
	uint64_t full; /* opens that found no slot (not registered) */
	uint64_t pins; /* walker pins held now */
};

/* Reserve the slots (address space only, touched as used); at load, before
 * any coroutine opens.  False: nothing is registered. */
bool registry_init(void);

/* Owner side.  add: c is live from now on (REGISTRY_LIVE, attachment 0),
 * with its name (corotop_coro_open_named's name and flags: copied now, or
 * the pointer kept) and its entry (corotop_coro_open_entry's; 0: none),
 * which the slot keeps until it is reused;
 * returns its reg (slot + 1), or 0 when no slot is left.  remove: c is
 * dead, no walker can hand it a station any more; returns the word it had
 * (a hand-over it never adopted is in it), and the slot is reused once no
 * walker holds it.  claim: the owner's first record under `attach` (a
 * non-zero attachment number). */
uint32_t registry_add_named(struct corotop_coro *c, const char *name,
			    unsigned flags, uint64_t entry, uint64_t made_for);
static inline uint32_t registry_add(struct corotop_coro *c)
{
	return registry_add_named(c, NULL, COROTOP_NAME_COPY, 0, 0);
}
uint64_t registry_remove(uint32_t reg);
enum registry_claim registry_claim(uint32_t reg, uint32_t attach,
				   uint32_t *station);

/* Walker side (one walker per attachment; census.c).  size: the slots to
 * visit.  pin: slot is live and not yet claimed under `attach` -- it can
 * not be reused until hand or unpin; *word is what to hand over against,
 * *c the coroutine (whose memory its owner may free at any time: read it
 * only with census.c's checked copy).  hand: publish `station` as the
 * coroutine's under `attach`, if nothing changed since the pin; false
 * (and the pin dropped) when its owner claimed or closed it meanwhile. */
uint32_t registry_size(void);
bool registry_pin(uint32_t slot, uint32_t attach, uint64_t *word,
		  struct corotop_coro **c);
bool registry_hand(uint32_t slot, uint64_t word, uint32_t attach,
		   uint32_t station);
void registry_unpin(uint32_t slot);

/* The name of registered coroutine reg (slot + 1) into out, NUL-padded;
 * returns its length (0: none, or reg is 0).  The owner's call (at a
 * station take) reads a static name directly; the walker's (`checked`,
 * on a pinned slot whose coroutine may close meanwhile) reads it with
 * process_vm_readv, so a string freed after the close never faults. */
size_t registry_name(uint32_t reg, char out[COROTOP_NAME_MAX], bool checked);

/* The entry of registered coroutine reg (slot + 1), as add kept it; 0:
 * none, or reg is 0.  The owner's call, or a walker's on a pinned slot. */
uint64_t registry_entry(uint32_t reg);
/* The function that entry was made for (corotop_coro_open_made_for's),
 * the same way; 0: none. */
uint64_t registry_made_for(uint32_t reg);

/* The bytes of name s to keep: at most COROTOP_NAME_MAX - 1 of the `len`
 * readable (a NUL ends it sooner), cut back to a UTF-8 character
 * boundary when the cut would split one. */
size_t registry_name_len(const char *s, size_t len);

/* The word of a slot (tests). */
uint64_t registry_word(uint32_t slot);
void registry_stats(struct registry_stats *out);

/* In a forked child (one thread): pins of walkers that do not exist there
 * are dropped, and the slots they held back freed. */
void registry_atfork_child(void);

#endif
