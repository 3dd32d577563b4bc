/*
 * ctslot: writer protection for the CallTrace tables, across processes.
 *
 * The region holds CT_SLOTS (8192) per-thread slots.  A put claims one for
 * its thread (CAS of owner from 0; start and prime step from a hash of the
 * owner id, so two threads whose start collides follow different sequences),
 * stores the ACTIVE word it is about to enter, and only then raises the
 * slot's reference count.  The engine, after it has swapped ACTIVE, waits
 * until no slot has a count and a word naming the table it retires; only
 * then does it read or clear that table.  The barrier letters are those of
 * the pairing table in corotop/calltrace.h.
 *
 * A put from a signal handler that interrupted a put on the same thread
 * finds the slot already owned by its thread (owner == me, refs > 0): it
 * nests, on the table the slot names, and re-checks ACTIVE itself (a nested
 * put is only safe if its own count was seen before the engine's swap).
 *
 * Owner ids are pid << 32 | tid, so the engine can tell a slot whose thread
 * has died inside a put (tgkill(pid, tid, 0) fails with ESRCH) and reclaim
 * it instead of waiting forever.
 */
#ifndef COROTOP_CTSLOT_H
#define COROTOP_CTSLOT_H

#include <stdbool.h>
#include <stdint.h>

#include "corotop/calltrace.h"
#include "wire/cttable.h"

enum ctslot_enter {
	CTSLOT_OK = 0,
	CTSLOT_NO_SLOT, /* every slot of our probe sequence is taken */
	CTSLOT_RACED,	/* ACTIVE moved twice under us, or a nested put */
	CTSLOT_BAD,	/* the ACTIVE word names no table */
};

struct ctslot_ticket {
	struct ct_slot *slot;
	uint64_t word;	/* the ACTIVE word we are inside */
	uint64_t saved; /* nested over a put holding no table: its word */
	bool nested;
};

/* Claim the slot of `owner` (or find it already ours).  NULL: none free. */
static inline struct ct_slot *ctslot_claim(struct ct_slot *slots,
					   uint64_t owner, bool *nested)
{
	uint64_t h = ct_mix64(owner);
	uint32_t start = (uint32_t)h & (CT_SLOTS - 1), step = ct_step(h);

	for (uint32_t i = 0; i < CT_SLOT_PROBES; i++) {
		struct ct_slot *s =
			&slots[ct_probe_pos(start, step, i, CT_SLOTS - 1)];
		uint64_t cur = 0;

		/* acquire (a) pairs with the last owner's release (h) or the
		 * engine's reclaim (r): their stores are behind us. */
		if (atomic_compare_exchange_strong_explicit(
			    &s->owner, &cur, owner, memory_order_acquire,
			    memory_order_relaxed)) {
			*nested = false;
			return s;
		}
		/* Ours already: a signal handler interrupted our own put.
		 * Only this thread writes a slot it owns, so relaxed. */
		if (cur == owner) {
			*nested = true;
			return s;
		}
	}
	return NULL;
}

static inline void ctslot_release(struct ct_slot *s)
{
	/* release (h): our slot stores happen before the next owner's. */
	atomic_store_explicit(&s->owner, 0, memory_order_release);
}

/*
 * Enter the ACTIVE table.  On CTSLOT_OK, *t names the slot and the word, and
 * the table CT_ROLE_INDEX(t->word) stays allocated to us (not collected, not
 * cleared) until ctslot_leave.
 */
static inline enum ctslot_enter ctslot_enter(struct ct_header *hdr,
					     struct ct_slot *slots,
					     uint64_t owner,
					     struct ctslot_ticket *t)
{
	struct ct_slot *s = ctslot_claim(slots, owner, &t->nested);

	if (!s)
		return CTSLOT_NO_SLOT;
	t->slot = s;
	/* relaxed: only this thread (and its signal handlers) writes refs of
	 * a slot it owns. */
	if (t->nested &&
	    atomic_load_explicit(&s->refs, memory_order_relaxed) != 0) {
		/* relaxed: our own thread wrote it (the interrupted put). */
		uint64_t w =
			atomic_load_explicit(&s->word, memory_order_relaxed);

		/* seq_cst (d) and (e), as for an outer put. */
		atomic_fetch_add_explicit(&s->refs, 1, memory_order_seq_cst);
		if (atomic_load_explicit(&hdr->active, memory_order_seq_cst) !=
		    w) {
			/* release (h): undo; the table was not touched. */
			atomic_fetch_sub_explicit(&s->refs, 1,
						  memory_order_release);
			return CTSLOT_RACED;
		}
		t->word = t->saved = w;
		return CTSLOT_OK;
	}
	/* Not nested, or nested in a put that holds no table yet (between
	 * its claim and (d), or after its (h)): the full protocol.  The
	 * interrupted put may already have stored its word (c): keep it, and
	 * put it back on leave, before that put resumes with (d). */
	/* relaxed: our own thread's store, if any. */
	t->saved = atomic_load_explicit(&s->word, memory_order_relaxed);
	for (int attempt = 0; attempt < 2; attempt++) {
		/* acquire (b) pairs with the engine's ACTIVE store (k). */
		uint64_t w = atomic_load_explicit(&hdr->active,
						  memory_order_acquire);

		if (CT_ROLE_INDEX(w) >= CT_TABLES) {
			if (!t->nested)
				ctslot_release(s);
			return CTSLOT_BAD;
		}
		/* relaxed (c): published by the RMW (d) that follows. */
		atomic_store_explicit(&s->word, w, memory_order_relaxed);
		/* seq_cst (d): Dekker with the engine's (k)/(m). */
		atomic_fetch_add_explicit(&s->refs, 1, memory_order_seq_cst);
		/* seq_cst (e): still ACTIVE after our count is visible? */
		if (atomic_load_explicit(&hdr->active, memory_order_seq_cst) ==
		    w) {
			t->word = w;
			return CTSLOT_OK;
		}
		/* release (h): undo; we never touched the table. */
		atomic_fetch_sub_explicit(&s->refs, 1, memory_order_release);
	}
	if (!t->nested)
		ctslot_release(s);
	else
		/* relaxed: give the interrupted put its word back (see above);
		 * refs is back to its value, so the engine ignores it. */
		atomic_store_explicit(&s->word, t->saved, memory_order_relaxed);
	return CTSLOT_RACED;
}

static inline void ctslot_leave(struct ctslot_ticket *t)
{
	/* release (h): our table writes (l) before the engine's (m). */
	atomic_fetch_sub_explicit(&t->slot->refs, 1, memory_order_release);
	if (!t->nested)
		ctslot_release(t->slot);
	else if (t->saved != t->word)
		/* relaxed: refs is 0 again (we were the only count), so the
		 * engine ignores the word until the interrupted put's (d). */
		atomic_store_explicit(&t->slot->word, t->saved,
				      memory_order_relaxed);
}

/*
 * Engine side (m): does slot s hold table `index`?  *owner gets the owner
 * for liveness checks.  Slot contents are untrusted: a word naming no table
 * holds nothing.
 */
static inline bool ctslot_holds(struct ct_slot *s, unsigned index,
				uint64_t *owner)
{
	/* seq_cst (m): Dekker with the writer's (d)/(e); acquire part pairs
	 * with the release sequence of (d), so `word` below is the one that
	 * goes with this count. */
	if (atomic_load_explicit(&s->refs, memory_order_seq_cst) == 0)
		return false;
	if (CT_ROLE_INDEX(atomic_load_explicit(&s->word,
					       memory_order_relaxed)) != index)
		return false;
	/* relaxed: for a liveness check only. */
	*owner = atomic_load_explicit(&s->owner, memory_order_relaxed);
	return true;
}

#endif
