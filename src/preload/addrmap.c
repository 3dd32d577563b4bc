/*
 * addrmap: an address, at granularity 2^shift, to a record index.
 *
 * Three levels, like a page table: the unit number u = addr >> shift picks
 * a top slot (its high bits), a mid slot (the next ADDRMAP_MID_BITS) and a
 * leaf entry (the low ADDRMAP_LEAF_BITS).  The top level is mapped at init;
 * a mid level or a leaf the first time an address under it is set, with
 * mmap (never malloc: a switch may run in a signal handler), and published
 * by a CAS from NULL (release) that a losing thread answers by unmapping
 * its own.  Levels are never freed before addrmap_finish: a lookup holds
 * no lock, and the memory is bounded by the address space the program's
 * stacks and contexts ever spanned, not by how many came and went.
 *
 * Entries hold index + 1 (0: never set) and are only overwritten -- there
 * are no removals, hence no tombstones and no probe sequences, so the
 * millionth context costs what the first did.  A stale entry (its record
 * freed, or reused for another context) is the caller's to recognise: the
 * preload checks the record it names (ctxtable.h).
 *
 * Orders: a set stores with release and a get loads with acquire, so the
 * record fields written before the set are seen by the thread that finds
 * it; the level pointers pair the same way.
 */
#define _GNU_SOURCE
#include "preload/addrmap.h"

#include <sys/mman.h>

#define ADDRMAP_LEAF_N (1u << ADDRMAP_LEAF_BITS)
#define ADDRMAP_MID_N (1u << ADDRMAP_MID_BITS)

struct addrmap_leaf {
	_Atomic uint32_t v[ADDRMAP_LEAF_N];
};

struct addrmap_mid {
	_Atomic(struct addrmap_leaf *) leaf[ADDRMAP_MID_N];
};

static void *addrmap_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

bool addrmap_init(struct addrmap *m, unsigned shift)
{
	unsigned top_bits = ADDRMAP_ADDR_BITS - shift - ADDRMAP_LEAF_BITS -
			    ADDRMAP_MID_BITS;

	m->shift = shift;
	m->ntop = 1u << top_bits;
	m->top = addrmap_map((size_t)m->ntop * sizeof(*m->top));
	atomic_init(&m->bytes, m->top ? (size_t)m->ntop * sizeof(*m->top) : 0);
	return m->top != NULL;
}

void addrmap_finish(struct addrmap *m)
{
	for (unsigned t = 0; m->top && t < m->ntop; t++) {
		/* relaxed: no other thread uses the map any more. */
		struct addrmap_mid *mid =
			atomic_load_explicit(&m->top[t], memory_order_relaxed);

		if (!mid)
			continue;
		for (unsigned k = 0; k < ADDRMAP_MID_N; k++) {
			struct addrmap_leaf *l = atomic_load_explicit(
				&mid->leaf[k], memory_order_relaxed);

			if (l)
				munmap(l, sizeof(*l));
		}
		munmap(mid, sizeof(*mid));
	}
	if (m->top)
		munmap((void *)m->top, (size_t)m->ntop * sizeof(*m->top));
	m->top = NULL;
}

/* The leaf for unit u, mapped when `make` and missing; NULL otherwise. */
static struct addrmap_leaf *addrmap_leaf(struct addrmap *m, uint64_t u,
					 bool make)
{
	uint64_t t = u >> (ADDRMAP_LEAF_BITS + ADDRMAP_MID_BITS);
	unsigned k = (unsigned)(u >> ADDRMAP_LEAF_BITS) & (ADDRMAP_MID_N - 1);
	struct addrmap_mid *mid;
	struct addrmap_leaf *l;

	if (t >= m->ntop)
		return NULL;
	/* acquire: pairs with the release CAS that published it. */
	mid = atomic_load_explicit(&m->top[t], memory_order_acquire);
	if (!mid) {
		struct addrmap_mid *fresh, *none = NULL;

		if (!make || !(fresh = addrmap_map(sizeof(*fresh))))
			return NULL;
		/* release: the zeroed level before its pointer; acquire on
		 * failure: the winner's level, as above. */
		if (atomic_compare_exchange_strong_explicit(
			    &m->top[t], &none, fresh, memory_order_release,
			    memory_order_acquire)) {
			mid = fresh;
			/* relaxed: a statistic. */
			atomic_fetch_add_explicit(&m->bytes, sizeof(*fresh),
						  memory_order_relaxed);
		} else {
			munmap(fresh, sizeof(*fresh));
			mid = none;
		}
	}
	/* acquire: as for the mid level. */
	l = atomic_load_explicit(&mid->leaf[k], memory_order_acquire);
	if (!l) {
		struct addrmap_leaf *fresh, *none = NULL;

		if (!make || !(fresh = addrmap_map(sizeof(*fresh))))
			return NULL;
		/* release / acquire: as for the mid level. */
		if (atomic_compare_exchange_strong_explicit(
			    &mid->leaf[k], &none, fresh, memory_order_release,
			    memory_order_acquire)) {
			l = fresh;
			/* relaxed: a statistic. */
			atomic_fetch_add_explicit(&m->bytes, sizeof(*fresh),
						  memory_order_relaxed);
		} else {
			munmap(fresh, sizeof(*fresh));
			l = none;
		}
	}
	return l;
}

uint32_t addrmap_get(const struct addrmap *m, uint64_t addr)
{
	uint64_t u = addr >> m->shift;
	struct addrmap_leaf *l = addrmap_leaf((struct addrmap *)m, u, false);
	uint32_t v;

	if (!l)
		return ADDRMAP_NONE;
	/* acquire: pairs with addrmap_set's release store. */
	v = atomic_load_explicit(&l->v[u & (ADDRMAP_LEAF_N - 1)],
				 memory_order_acquire);
	return v ? v - 1 : ADDRMAP_NONE;
}

bool addrmap_set(struct addrmap *m, uint64_t lo, uint64_t hi, uint32_t v)
{
	uint64_t u = lo >> m->shift;
	uint64_t end = hi > lo ? ((hi - 1) >> m->shift) + 1 : u + 1;

	while (u < end) {
		struct addrmap_leaf *l = addrmap_leaf(m, u, true);
		uint64_t stop = (u | (ADDRMAP_LEAF_N - 1)) + 1;

		if (!l)
			return false;
		if (stop > end)
			stop = end;
		for (; u < stop; u++)
			/* release: the record's fields before the entry that
			 * names it (addrmap_get's acquire). */
			atomic_store_explicit(&l->v[u & (ADDRMAP_LEAF_N - 1)],
					      v + 1, memory_order_release);
	}
	return true;
}

uint64_t addrmap_bytes(const struct addrmap *m)
{
	/* relaxed: a statistic. */
	return atomic_load_explicit(&m->bytes, memory_order_relaxed);
}
