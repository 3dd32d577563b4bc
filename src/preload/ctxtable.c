/*
 * ctxtable: a fixed array of context records with a lock-free free list,
 * and two open-addressing maps (linear probing) from a pointer-sized key
 * to a record index.
 *
 * The maps are written by the threads that switch, concurrently, and read
 * on every switch.  A slot's key goes EMPTY -> BUSY -> key (put: the value
 * is stored while the slot is BUSY, then the key is released) and key ->
 * TOMB (take); a put reuses the first TOMB on its path when the key is not
 * already present.  A reader that meets BUSY or another key goes on; one
 * that meets EMPTY stops.  Two puts of one key never race: a key is a
 * ucontext_t the switching thread owns, or an fcontext_t that exists once
 * (the stack pointer one suspend saved) and is published by the one thread
 * that resumed after it.  A context record is found through a map only
 * while it is alive; its index is reused only after it is freed, which
 * happens when the context is gone (its entry returned, Boost freed it, or
 * its stack went to a new context).
 *
 * The free list is a Treiber stack of indexes whose head carries a counter
 * in its upper half, so a pop that raced a pop and a push of the same
 * index fails its compare-and-swap instead of corrupting the list.
 */
#include "preload/ctxtable.h"

#include <stdlib.h>
#include <string.h>

#define CTXMAP_TOMB UINT64_MAX
#define CTXMAP_BUSY (UINT64_MAX - 1)

static uint32_t ctxmap_slot(const struct ctxmap *m, uint64_t key)
{
	/* Fibonacci hashing of the address bits that vary (16-byte units). */
	return (uint32_t)(((key >> 4) * 0x9e3779b97f4a7c15ull) >> 32) & m->mask;
}

static bool ctxmap_init(struct ctxmap *m, uint32_t slots)
{
	m->key = calloc(slots, sizeof(*m->key));
	m->value = calloc(slots, sizeof(*m->value));
	m->mask = slots - 1;
	return m->key && m->value;
}

static void ctxmap_finish(struct ctxmap *m)
{
	free((void *)m->key);
	free((void *)m->value);
	memset(m, 0, sizeof(*m));
}

bool ctxmap_put(struct ctxmap *m, uint64_t key, uint32_t value)
{
	uint32_t i = ctxmap_slot(m, key), reuse = CTXTABLE_NONE;

	for (uint32_t n = 0; n <= m->mask; n++, i = (i + 1) & m->mask) {
		/* acquire: pairs with the release store of the key below,
		 * so a present key's value slot is ours to update. */
		uint64_t k =
			atomic_load_explicit(&m->key[i], memory_order_acquire);

		if (k == key) {
			/* relaxed: readers of a present key take either
			 * value (the caller's successive facts). */
			atomic_store_explicit(&m->value[i], value,
					      memory_order_relaxed);
			return true;
		}
		if (k == CTXMAP_TOMB && reuse == CTXTABLE_NONE)
			reuse = i;
		if (k == 0)
			break;
	}
	/* Not present: claim the first tomb on the path, else the empty slot
	 * where the walk stopped or the first free one after it (a slot never
	 * becomes empty again, so a reader's walk from the key's home passes
	 * every slot before the one claimed). */
	for (uint32_t n = 0; n <= m->mask + 1; n++) {
		uint32_t at = reuse;
		uint64_t k;

		if (n || reuse == CTXTABLE_NONE)
			at = (i + n - (reuse != CTXTABLE_NONE)) & m->mask;
		k = atomic_load_explicit(&m->key[at], memory_order_relaxed);
		if ((k == 0 || k == CTXMAP_TOMB) &&
		    /* relaxed: BUSY publishes nothing; the release below
		     * does. */
		    atomic_compare_exchange_strong_explicit(
			    &m->key[at], &k, CTXMAP_BUSY, memory_order_relaxed,
			    memory_order_relaxed)) {
			atomic_store_explicit(&m->value[at], value,
					      memory_order_relaxed);
			/* release: pairs with the acquire loads of readers;
			 * the value is visible before the key is. */
			atomic_store_explicit(&m->key[at], key,
					      memory_order_release);
			return true;
		}
	}
	return false; /* full */
}

/* The slot holding key, or CTXTABLE_NONE. */
static uint32_t ctxmap_find(const struct ctxmap *m, uint64_t key)
{
	uint32_t i = ctxmap_slot(m, key);

	for (uint32_t n = 0; n <= m->mask; n++, i = (i + 1) & m->mask) {
		/* acquire: pairs with the release store in ctxmap_put. */
		uint64_t k =
			atomic_load_explicit(&m->key[i], memory_order_acquire);

		if (k == key)
			return i;
		if (k == 0)
			return CTXTABLE_NONE;
	}
	return CTXTABLE_NONE;
}

uint32_t ctxmap_get(const struct ctxmap *m, uint64_t key)
{
	uint32_t i = key ? ctxmap_find(m, key) : CTXTABLE_NONE;

	/* relaxed: ordered after the key's acquire load in ctxmap_find. */
	return i == CTXTABLE_NONE ? CTXTABLE_NONE
				  : atomic_load_explicit(&m->value[i],
							 memory_order_relaxed);
}

uint32_t ctxmap_take(struct ctxmap *m, uint64_t key)
{
	uint32_t i = key ? ctxmap_find(m, key) : CTXTABLE_NONE;
	uint32_t v;
	uint64_t k = key;

	if (i == CTXTABLE_NONE)
		return CTXTABLE_NONE;
	/* relaxed: ordered after the key's acquire load in ctxmap_find. */
	v = atomic_load_explicit(&m->value[i], memory_order_relaxed);
	/* relaxed: a tomb publishes nothing; whoever reuses the slot
	 * publishes its own key with release. */
	if (!atomic_compare_exchange_strong_explicit(
		    &m->key[i], &k, CTXMAP_TOMB, memory_order_relaxed,
		    memory_order_relaxed))
		return CTXTABLE_NONE;
	return v;
}

bool ctxtable_init(struct ctxtable *t, uint32_t cap)
{
	uint32_t slots = 1;

	memset(t, 0, sizeof(*t));
	while (slots < 4 * (uint64_t)cap && slots < (1u << 30))
		slots *= 2;
	t->ctx = calloc(cap, sizeof(*t->ctx));
	if (!t->ctx || !ctxmap_init(&t->by_ptr, slots) ||
	    !ctxmap_init(&t->by_stack, slots)) {
		ctxtable_finish(t);
		return false;
	}
	t->cap = cap;
	atomic_init(&t->free_head, CTXTABLE_NONE);
	atomic_init(&t->fresh, 0);
	atomic_init(&t->next_id, 1);
	return true;
}

void ctxtable_finish(struct ctxtable *t)
{
	free(t->ctx);
	ctxmap_finish(&t->by_ptr);
	ctxmap_finish(&t->by_stack);
	memset(t, 0, sizeof(*t));
}

uint32_t ctxtable_alloc(struct ctxtable *t, enum ctx_kind kind)
{
	/* acquire: pairs with the release CAS in ctxtable_free, so the
	 * popped record's next_free is the one its pusher wrote. */
	uint64_t head =
		atomic_load_explicit(&t->free_head, memory_order_acquire);
	uint32_t i;

	for (;;) {
		uint64_t next;

		i = (uint32_t)head;
		if (i == CTXTABLE_NONE) {
			/* relaxed: an index handed out once; the record is
			 * this thread's until published (release there). */
			i = atomic_fetch_add_explicit(&t->fresh, 1,
						      memory_order_relaxed);
			if (i < t->cap)
				goto got;
			/* relaxed: undoes the overshoot, keeps it bounded;
			 * and a statistic. */
			atomic_fetch_sub_explicit(&t->fresh, 1,
						  memory_order_relaxed);
			atomic_fetch_add_explicit(&t->dropped, 1,
						  memory_order_relaxed);
			return CTXTABLE_NONE;
		}
		/* relaxed: a stale next (the record was popped and pushed
		 * again meanwhile) fails the tagged CAS below. */
		next = (head & ~0xffffffffull) + (1ull << 32) +
		       atomic_load_explicit(&t->ctx[i].next_free,
					    memory_order_relaxed);
		/* acquire on failure: the new head's record, as above. */
		if (atomic_compare_exchange_weak_explicit(
			    &t->free_head, &head, next, memory_order_acquire,
			    memory_order_acquire))
			break;
	}
got:
	memset(&t->ctx[i].coro, 0, sizeof(t->ctx[i].coro));
	t->ctx[i].stack_key = 0;
	/* relaxed: see preload_close (cleared before the record is freed). */
	atomic_store_explicit(&t->ctx[i].saved_key, 0, memory_order_relaxed);
	t->ctx[i].entry = NULL;
	t->ctx[i].argc = 0;
	t->ctx[i].link = NULL;
	/* relaxed: the record is this thread's until it is published
	 * through a map (release there). */
	atomic_store_explicit(&t->ctx[i].kind, kind, memory_order_relaxed);
	return i;
}

void ctxtable_free(struct ctxtable *t, uint32_t i)
{
	uint64_t head;

	/* relaxed: ordered by the release CAS below. */
	atomic_store_explicit(&t->ctx[i].kind, CTX_FREE, memory_order_relaxed);
	head = atomic_load_explicit(&t->free_head, memory_order_relaxed);
	do {
		/* relaxed: published by the release CAS below. */
		atomic_store_explicit(&t->ctx[i].next_free, (uint32_t)head,
				      memory_order_relaxed);
		/* release: pairs with the acquire in ctxtable_alloc. */
	} while (!atomic_compare_exchange_weak_explicit(
		&t->free_head, &head,
		(head & ~0xffffffffull) + (1ull << 32) + i,
		memory_order_release, memory_order_relaxed));
}
