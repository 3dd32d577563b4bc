/*
 * ctxtable: context records in chunks that never move, a lock-free free
 * list, and the two address maps (addrmap.c) that find a record.
 *
 * Records.  Index i lives in chunk i >> CTXTABLE_CHUNK_BITS, mapped (mmap,
 * NORESERVE: pages are touched as records are used) by whichever thread
 * first hands out an index in it, and published by a CAS from NULL.  A
 * record's address is stable for the table's life: the probe's registry
 * and the cTP stations keep it.  Records are handed out fresh (`fresh`
 * counts up to cap), then from the free list, a Treiber stack of indexes
 * whose head carries a counter in its upper half, so a pop that raced a
 * pop and a push of the same index fails its compare-and-swap instead of
 * corrupting the list.  At cap, a context is not tracked, and counted.
 *
 * Maps.  A switch is given either an fcontext_t, which is a stack pointer
 * inside the resumed context's stack, or a ucontext_t, where it was saved.
 *   by_page  every page of a context's stack -> its record; a root (a
 *            thread's own stack, whose extent is not asked for: that
 *            would read /proc on the main thread) is entered for the page
 *            of each place it suspends at.  Malloc'd stacks side by side
 *            share their end pages, which name the stack made last: an
 *            address there the named stack does not hold is looked up on
 *            the pages either side, one of which is its own stack's;
 *   by_uc    a ucontext_t's 512-byte unit -> the record last saved in it
 *            (two live ucontext_t are over 512 bytes apart: each is
 *            larger).
 * Entries are only overwritten.  One may be stale -- its record closed,
 * or reused for a context elsewhere -- so every lookup checks the record:
 * live, and its stack holds the address, or it was saved exactly there.
 * The program's own synchronization (a context is handed to the thread
 * that resumes it) orders a record's fields before a lookup that must
 * find them; a racing, stale one only fails the check.
 */
#define _GNU_SOURCE
#include "preload/ctxtable.h"

#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

/* by_uc's unit: less than a ucontext_t, so two never share one. */
#define CTXTABLE_UC_SHIFT 9u
_Static_assert(sizeof(ucontext_t) > (1u << CTXTABLE_UC_SHIFT),
	       "a ucontext_t spans more than one by_uc unit");
#define CTXTABLE_PAGE_SHIFT 12u

bool ctxtable_init(struct ctxtable *t, uint32_t cap)
{
	memset(t, 0, sizeof(*t));
	t->cap = cap < 1 ? 1 : cap > CTXTABLE_MAX ? CTXTABLE_MAX : cap;
	atomic_init(&t->free_head, CTXTABLE_NONE);
	atomic_init(&t->fresh, 0);
	atomic_init(&t->next_id, 1);
	if (!addrmap_init(&t->by_page, CTXTABLE_PAGE_SHIFT) ||
	    !addrmap_init(&t->by_uc, CTXTABLE_UC_SHIFT)) {
		ctxtable_finish(t);
		return false;
	}
	return true;
}

void ctxtable_finish(struct ctxtable *t)
{
	for (size_t k = 0; k < CTXTABLE_MAX / CTXTABLE_CHUNK; k++) {
		/* relaxed: nobody uses the table any more. */
		struct ctx *c = atomic_load_explicit(&t->chunk[k],
						     memory_order_relaxed);

		if (c)
			munmap(c, CTXTABLE_CHUNK * sizeof(*c));
	}
	addrmap_finish(&t->by_page);
	addrmap_finish(&t->by_uc);
	memset(t, 0, sizeof(*t));
}

/* Index i's chunk exists, mapped now if it did not.  False when it could
 * not be mapped. */
static bool ctxtable_chunk(struct ctxtable *t, uint32_t i)
{
	_Atomic(struct ctx *) *slot = &t->chunk[i >> CTXTABLE_CHUNK_BITS];
	struct ctx *fresh, *none = NULL;

	/* acquire: pairs with the release CAS below (another thread's). */
	if (atomic_load_explicit(slot, memory_order_acquire))
		return true;
	fresh = mmap(NULL, CTXTABLE_CHUNK * sizeof(*fresh),
		     PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (fresh == MAP_FAILED)
		return false;
	/* release: the zeroed chunk before its pointer. */
	if (!atomic_compare_exchange_strong_explicit(slot, &none, fresh,
						     memory_order_release,
						     memory_order_acquire))
		munmap(fresh, CTXTABLE_CHUNK * sizeof(*fresh));
	return true;
}

static uint32_t ctxtable_none(struct ctxtable *t)
{
	/* relaxed: a count the engine reads as a statistic. */
	atomic_fetch_add_explicit(&t->untracked, 1, memory_order_relaxed);
	return CTXTABLE_NONE;
}

uint32_t ctxtable_alloc(struct ctxtable *t, enum ctx_kind kind)
{
	/* acquire: pairs with the release CAS in ctxtable_free, so the
	 * popped record's next_free is the one its pusher wrote. */
	uint64_t head =
		atomic_load_explicit(&t->free_head, memory_order_acquire);
	struct ctx *c;
	uint32_t i;

	for (;;) {
		uint64_t next;

		i = (uint32_t)head;
		if (i == CTXTABLE_NONE) {
			/* relaxed: an index handed out once; the record is
			 * this thread's until published (release there). */
			i = atomic_fetch_add_explicit(&t->fresh, 1,
						      memory_order_relaxed);
			if (i < t->cap && ctxtable_chunk(t, i))
				goto got;
			/* relaxed: undoes the overshoot, keeps it bounded.
			 * (A chunk that could not be mapped gives its index
			 * up too: the next attempt maps it again.) */
			atomic_fetch_sub_explicit(&t->fresh, 1,
						  memory_order_relaxed);
			return ctxtable_none(t);
		}
		/* relaxed: a stale next (the record was popped and pushed
		 * again meanwhile) fails the tagged CAS below. */
		next = (head & ~0xffffffffull) + (1ull << 32) +
		       atomic_load_explicit(&ctxtable_ctx(t, i)->next_free,
					    memory_order_relaxed);
		/* acquire on failure: the new head's record, as above. */
		if (atomic_compare_exchange_weak_explicit(
			    &t->free_head, &head, next, memory_order_acquire,
			    memory_order_acquire))
			break;
	}
got:
	c = ctxtable_ctx(t, i);
	memset(&c->coro, 0, sizeof(c->coro));
	/* relaxed: the record is this thread's until it is published
	 * through a map (release there); a reader of a stale entry that
	 * races this sees the old or the new values, and either fails its
	 * check or names this record rightly. */
	atomic_store_explicit(&c->stack_lo, 0, memory_order_relaxed);
	atomic_store_explicit(&c->stack_hi, 0, memory_order_relaxed);
	atomic_store_explicit(&c->saved_key, 0, memory_order_relaxed);
	c->entry = NULL;
	c->argc = 0;
	c->link = NULL;
	c->first_data = NULL;
	atomic_store_explicit(&c->kind, kind, memory_order_relaxed);
	/* relaxed: a statistic. */
	atomic_fetch_add_explicit(&t->live, 1, memory_order_relaxed);
	return i;
}

void ctxtable_free(struct ctxtable *t, uint32_t i)
{
	struct ctx *c = ctxtable_ctx(t, i);
	uint64_t head;

	/* relaxed: ordered by the release CAS below; a lookup that finds
	 * the record through a stale entry sees CTX_FREE or fails on the
	 * key.  Freed already: pushed once only, or two contexts would get
	 * the record. */
	if (atomic_exchange_explicit(&c->kind, CTX_FREE,
				     memory_order_relaxed) == CTX_FREE)
		return;
	atomic_store_explicit(&c->saved_key, 0, memory_order_relaxed);
	/* relaxed: a statistic. */
	atomic_fetch_sub_explicit(&t->live, 1, memory_order_relaxed);
	head = atomic_load_explicit(&t->free_head, memory_order_relaxed);
	do {
		/* relaxed: published by the release CAS below. */
		atomic_store_explicit(&c->next_free, (uint32_t)head,
				      memory_order_relaxed);
		/* release: pairs with the acquire in ctxtable_alloc. */
	} while (!atomic_compare_exchange_weak_explicit(
		&t->free_head, &head,
		(head & ~0xffffffffull) + (1ull << 32) + i,
		memory_order_release, memory_order_relaxed));
}

bool ctxtable_set_stack(struct ctxtable *t, uint32_t i, uint64_t lo,
			uint64_t hi)
{
	struct ctx *c = ctxtable_ctx(t, i);
	bool ok;

	if (hi <= lo)
		return false;
	/* relaxed: published with the map entries (release) below. */
	atomic_store_explicit(&c->stack_lo, lo, memory_order_relaxed);
	atomic_store_explicit(&c->stack_hi, hi, memory_order_relaxed);
	/* relaxed: a hint; see ctxtable_maybe_base.  Only when the bit is
	 * not set yet: no read-modify-write on a line every maker shares. */
	if (!ctxtable_maybe_base(t, lo)) {
		uint32_t b = ctxtable_base_bit(lo);

		atomic_fetch_or_explicit(&t->base_bloom[b / 64],
					 1ull << (b % 64),
					 memory_order_relaxed);
	}
	ok = addrmap_set(&t->by_page, lo, hi, i);
	/* relaxed: see ctxtable_stacks_gen. */
	atomic_fetch_add_explicit(&t->stacks_gen, 1, memory_order_relaxed);
	return ok;
}

uint32_t ctxtable_by_base(const struct ctxtable *t, uint64_t lo)
{
	/* lo's page may be shared with the block below (a malloc'd stack
	 * is not page-aligned), whose record the map then names: the next
	 * page is the stack's alone. */
	uint64_t at[2] = {lo, lo + (1ull << CTXTABLE_PAGE_SHIFT)};

	for (int k = 0; k < 2; k++) {
		uint32_t i = ctxtable_by_stack(t, at[k]);

		/* relaxed: see the top (checks of a record found in the
		 * map). */
		if (i != CTXTABLE_NONE &&
		    atomic_load_explicit(&ctxtable_ctx(t, i)->stack_lo,
					 memory_order_relaxed) == lo &&
		    atomic_load_explicit(&ctxtable_ctx(t, i)->kind,
					 memory_order_relaxed) != CTX_ROOT)
			return i;
	}
	return CTXTABLE_NONE;
}

/* Record i, if it is live (not free). */
static const struct ctx *ctxtable_live(const struct ctxtable *t, uint32_t i)
{
	const struct ctx *c;

	if (i == CTXTABLE_NONE || i >= t->cap)
		return NULL;
	c = ctxtable_ctx(t, i);
	/* relaxed: see the top (a check, ordered by the map's acquire). */
	return atomic_load_explicit(&((struct ctx *)c)->kind,
				    memory_order_relaxed) != CTX_FREE
		       ? c
		       : NULL;
}

/* What the page map's entry for page says of addr: 1 when it names a live
 * record that holds addr (*out), -1 when it names a live made context
 * whose stack is beside addr (the page is shared), else 0. */
static int ctxtable_page_says(const struct ctxtable *t, uint64_t page,
			      uint64_t addr, uint32_t *out)
{
	uint32_t i = addrmap_get(&t->by_page, page);
	struct ctx *c = (struct ctx *)ctxtable_live(t, i);
	uint64_t lo, hi;

	if (!c)
		return 0;
	/* relaxed: see the top. */
	lo = atomic_load_explicit(&c->stack_lo, memory_order_relaxed);
	hi = atomic_load_explicit(&c->stack_hi, memory_order_relaxed);
	if (lo < hi ? addr >= lo && addr < hi
		    : atomic_load_explicit(&c->saved_key,
					   memory_order_relaxed) == addr) {
		*out = i;
		return 1;
	}
	return lo < hi ? -1 : 0;
}

uint32_t ctxtable_by_stack(const struct ctxtable *t, uint64_t addr)
{
	const uint64_t page = 1ull << CTXTABLE_PAGE_SHIFT;
	uint32_t i = CTXTABLE_NONE;
	int says = ctxtable_page_says(t, addr, addr, &i);

	/* A page two malloc'd stacks share names the one made last: the
	 * other's stack goes on past the page, whose entry names it. */
	if (says < 0 && ctxtable_page_says(t, addr - page, addr, &i) <= 0)
		(void)ctxtable_page_says(t, addr + page, addr, &i);
	return i;
}

void ctxtable_root_saved_at(struct ctxtable *t, uint32_t i, uint64_t addr)
{
	uint32_t j = addrmap_get(&t->by_page, addr);

	/* The page already says so (the root suspends where it did last
	 * time, give or take a frame): no store. */
	if (j == i)
		return;
	/* A live made context's stack holds addr: the page stays that
	 * context's, or it could never be found again (a root is never
	 * saved there unless a switch was missed). */
	if (j != CTXTABLE_NONE && ctxtable_by_stack(t, addr) == j &&
	    /* relaxed: see the top (a check of a record found in the
	     * map). */
	    atomic_load_explicit(&ctxtable_ctx(t, j)->kind,
				 memory_order_relaxed) != CTX_ROOT)
		return;
	(void)addrmap_set(&t->by_page, addr, addr + 1, i);
}

void ctxtable_set_uc(struct ctxtable *t, uint32_t i, uint64_t ucp)
{
	if (addrmap_get(&t->by_uc, ucp) != i)
		(void)addrmap_set(&t->by_uc, ucp, ucp + 1, i);
}

uint32_t ctxtable_by_uc(const struct ctxtable *t, uint64_t ucp)
{
	uint32_t i = addrmap_get(&t->by_uc, ucp);
	struct ctx *c = (struct ctx *)ctxtable_live(t, i);

	/* relaxed: see the top. */
	return c && atomic_load_explicit(&c->saved_key, memory_order_relaxed) ==
				       ucp
		       ? i
		       : CTXTABLE_NONE;
}
