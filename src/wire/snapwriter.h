/*
 * snapwriter: the writer's side of the snapshot ring (corotop/snapring.h)
 * -- validating a mapping before trusting it, and storing one sample:
 * registers, the frame-pointer walk, and a copy of the stack's top.
 *
 * snap_view_init checks magic, version and a geometry that is exactly what
 * the file size implies, so no record computed from it leaves the mapping.
 * snap_writer_put is async-signal-safe: no lock, no allocation, no
 * syscall, a bounded copy; it never waits for the engine or another writer
 * (a record still being written makes it give up, and the caller stores
 * the sample in CallTrace instead).
 */
#ifndef COROTOP_SNAPWRITER_H
#define COROTOP_SNAPWRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corotop/snapring.h"

struct snap_view {
	struct snap_header *hdr;
	struct snap_record *rec;
	uint32_t mask; /* records - 1 */
};

/* Build a view of a mapping of `size` bytes.  false: not a valid ring. */
static inline bool snap_view_init(struct snap_view *v, void *base,
				  uint64_t size)
{
	struct snap_header *h = (struct snap_header *)base;

	if (size < SNAP_HEADER_SIZE || h->magic != SNAP_MAGIC ||
	    h->version != SNAP_VERSION || h->header_size != SNAP_HEADER_SIZE ||
	    h->record_size != sizeof(struct snap_record) ||
	    h->fp_max != SNAP_FP_MAX || h->copy_max != SNAP_COPY_MAX ||
	    h->records_offset != SNAP_HEADER_SIZE ||
	    snap_region_size(h->records) != size || h->region_size != size)
		return false;
	v->hdr = h;
	v->rec =
		(struct snap_record *)(void *)((char *)base + SNAP_HEADER_SIZE);
	v->mask = h->records - 1;
	return true;
}

/* One sample as the handler has it. */
struct snap_sample_in {
	uint64_t tag, pc, sp, fp, weight, check;
	const uint64_t *frames; /* the frame-pointer walk, pc first */
	uint32_t nframes;
	/* [sp, sp + ncopy) is readable memory: the interrupted stack. */
	uint32_t ncopy;
};

/*
 * Copy n words from the live stack at src into dst, word by word.  Not
 * instrumented by ASan: the words above a stack pointer include other
 * frames' redzones, which are fine to read here.
 */
#if defined(__GNUC__)
__attribute__((no_sanitize_address))
#endif
static inline void
snap_copy_stack(CTP_ATOMIC(uint64_t) * dst, uintptr_t src, uint32_t n)
{
	const volatile uint64_t *s = (const volatile uint64_t *)src;

	for (uint32_t i = 0; i < n; i++)
		atomic_store_explicit(&dst[i], s[i], memory_order_relaxed);
}

/* Store one sample; false when its record was busy (nothing stored). */
static inline bool snap_writer_put(const struct snap_view *v,
				   const struct snap_sample_in *in)
{
	struct snap_header *h = v->hdr;
	struct snap_record *r;
	uint32_t nf = in->nframes < SNAP_FP_MAX ? in->nframes : SNAP_FP_MAX;
	uint32_t nc =
		(in->ncopy < SNAP_COPY_MAX ? in->ncopy : SNAP_COPY_MAX) & ~7u;
	uint64_t t, s;

	/* (a) relaxed: a ticket, no data. */
	t = atomic_fetch_add_explicit(&h->head, 1, memory_order_relaxed);
	r = &v->rec[t & v->mask];
	/* (b) the CAS decides who writes; acquire on success pairs with the
	 * previous writer's release (d), so its payload stores are ordered
	 * before ours (free on x86-64 and arm64). */
	s = atomic_load_explicit(&r->seq, memory_order_relaxed);
	if ((s & 1) || s >= 2 * t + 1 ||
	    !atomic_compare_exchange_strong_explicit(&r->seq, &s, 2 * t + 1,
						     memory_order_acquire,
						     memory_order_relaxed)) {
		/* relaxed: a statistic. */
		atomic_fetch_add_explicit(&h->busy, 1, memory_order_relaxed);
		return false;
	}
	/* (c) release fence: the odd seq before any payload word, for a
	 * reader whose acquire fence (f) saw one of them. */
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&r->tag, in->tag, memory_order_relaxed);
	atomic_store_explicit(&r->pc, in->pc, memory_order_relaxed);
	atomic_store_explicit(&r->sp, in->sp, memory_order_relaxed);
	atomic_store_explicit(&r->fp, in->fp, memory_order_relaxed);
	atomic_store_explicit(&r->counts, (uint64_t)nf | (uint64_t)nc << 32,
			      memory_order_relaxed);
	atomic_store_explicit(&r->check, in->check, memory_order_relaxed);
	atomic_store_explicit(&r->weight, in->weight, memory_order_relaxed);
	for (uint32_t i = 0; i < nf; i++)
		atomic_store_explicit(&r->frames[i], in->frames[i],
				      memory_order_relaxed);
	snap_copy_stack(r->stack, (uintptr_t)in->sp, nc / 8);
	/* (d) release: pairs with the engine's acquire load (e). */
	atomic_store_explicit(&r->seq, 2 * t + 2, memory_order_release);
	/* relaxed: a statistic. */
	atomic_fetch_add_explicit(&h->stored, 1, memory_order_relaxed);
	return true;
}

#endif
