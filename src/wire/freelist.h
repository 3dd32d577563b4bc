/*
 * freelist: the lock-free stack of recycled stations that lives in the cTP
 * region (ctp_header_ext.free_head, linked through ctp_station_ext.next_free).
 *
 * The engine pushes: it recycles a station after it has seen the station's
 * is_dead flag and harvested its last events, so a new occupant can never be
 * mixed up with the old one.  A probe's census (src/probe/census.c) also
 * pushes back a station it took and never published (its generation did
 * not move: no engine ever saw an occupant there).  Any number of probe
 * threads pop; the push is a CAS loop, safe with several pushers.
 *
 * free_head packs (tag << 32) | (index + 1).  Every successful push and pop
 * bumps the tag, so a pop that read a stale `next` (the classic ABA: the head
 * was popped, reused and pushed back in between) fails its CAS and retries.
 * Station memory stays mapped for the life of the region, so reading the
 * `next` of a station someone else just popped is harmless: the value is
 * discarded by the failed CAS.
 *
 * Indexes come from shared memory and are untrusted: pop bounds them against
 * the region's station count and reports a corrupt list as empty.
 */
#ifndef COROTOP_FREELIST_H
#define COROTOP_FREELIST_H

#include <stdbool.h>
#include <stdint.h>

#include "corotop/ctp.h"

#define FREELIST_EMPTY UINT32_MAX

static inline uint64_t freelist_pack(uint32_t tag, uint32_t index_plus_one)
{
	return ((uint64_t)tag << 32) | index_plus_one;
}

/* Push station `index` (the engine; a probe's census for a station it never
 * published). */
static inline void freelist_push(struct ctp_header *hdr,
				 struct ctp_station *stations, uint32_t index)
{
	uint64_t head =
		atomic_load_explicit(&hdr->ext.free_head, memory_order_relaxed);
	uint64_t next;

	do {
		/* relaxed: published by the release CAS below (K). */
		atomic_store_explicit(&stations[index].ext.next_free,
				      (uint32_t)head, memory_order_relaxed);
		next = freelist_pack((uint32_t)(head >> 32) + 1, index + 1);
		/* release (K): the station's final state and next_free are
		 * visible to the popper's acquire CAS (L). */
	} while (!atomic_compare_exchange_weak_explicit(
		&hdr->ext.free_head, &head, next, memory_order_release,
		memory_order_relaxed));
}

/* Probe side: pop a station index, or FREELIST_EMPTY. */
static inline uint32_t freelist_pop(struct ctp_header *hdr,
				    struct ctp_station *stations, uint32_t max)
{
	/* acquire (L) pairs with the pusher's release (K). */
	uint64_t head =
		atomic_load_explicit(&hdr->ext.free_head, memory_order_acquire);

	for (;;) {
		uint32_t top = (uint32_t)head;
		uint64_t link;
		uint64_t next;

		if (top == 0 || top > max)
			return FREELIST_EMPTY;
		/* relaxed: a stale value is rejected by the tagged CAS. */
		link = atomic_load_explicit(&stations[top - 1].ext.next_free,
					    memory_order_relaxed);
		if (link > max)
			link = 0; /* corrupt link: truncate the list */
		next = freelist_pack((uint32_t)(head >> 32) + 1,
				     (uint32_t)link);
		/* acquire (L) on success: see the old owner's close. */
		if (atomic_compare_exchange_weak_explicit(
			    &hdr->ext.free_head, &head, next,
			    memory_order_acquire, memory_order_acquire))
			return top - 1;
	}
}

#endif
