/*
 * snapreader: the engine's consumer of a snapshot ring.  Writers are signal
 * handlers in the target, any number at once; the reader is one engine
 * thread.  The protocol and its barriers (a)..(f) are in corotop/snapring.h.
 *
 * Tickets are consumed in order; tail is the next one.  For ticket t, its
 * record's seq s says:
 *
 *   s == 2t + 2    complete: copy it (relaxed loads), acquire fence, load
 *                  seq again; unchanged => deliver, else torn (a writer a
 *                  lap ahead took the record during the copy)
 *   s >  2t + 2    (or 2t' + 1 for t' > t) a later ticket has it: lapped
 *   s <= 2t + 1    not written yet, being written, or given up (a writer
 *                  that found the record busy never writes t): wait, up
 *                  to grace_ns from when t was first seen unfinished, then
 *                  skipped
 *
 * When head is more than a ring ahead of tail, the oldest tickets are gone
 * (overwritten, or given up and never written): tail jumps to head -
 * records and they count as lapped -- unless the jump is beyond what any
 * writer could have done since the last poll (SNAP_JUMP_MAX) or head went
 * backwards: the region lies, tail resyncs to head and nothing is counted
 * but the resync (records of tickets already delivered may then be
 * delivered again: a region that lies about its head gets its own samples
 * back, nothing worse).
 *
 * The copy is made of relaxed atomic loads, as the ppt reader's: the record
 * is written concurrently, and only atomic loads make the seqlock a
 * race-free C11 program (ThreadSanitizer agrees).
 */
#include "engine/calltrace/snapreader.h"

#include <stdatomic.h>
#include <string.h>

/* More tickets than this since the last poll is a lie, not a lap: at 10 000
 * samples a second per thread and 4096 threads, 2^32 takes 29 hours. */
#define SNAP_JUMP_MAX (1ull << 32)

void snapreader_init(struct snapreader *r, void *base, uint32_t records,
		     uint64_t grace_ns)
{
	memset(r, 0, sizeof(*r));
	r->hdr = base;
	r->rec =
		(struct snap_record *)(void *)((char *)base + SNAP_HEADER_SIZE);
	r->records = records;
	r->grace_ns = grace_ns;
	/* relaxed: the ring is new (or the reader starts where it is). */
	r->st.tail = atomic_load_explicit(&r->hdr->head, memory_order_relaxed);
}

/* Copy record rec into r->sample; false when it was torn meanwhile. */
static bool snapreader_copy(struct snapreader *r, struct snap_record *rec,
			    uint64_t seq)
{
	struct snap_sample *s = &r->sample;
	uint64_t counts;

	s->tag = atomic_load_explicit(&rec->tag, memory_order_relaxed);
	s->pc = atomic_load_explicit(&rec->pc, memory_order_relaxed);
	s->sp = atomic_load_explicit(&rec->sp, memory_order_relaxed);
	s->fp = atomic_load_explicit(&rec->fp, memory_order_relaxed);
	counts = atomic_load_explicit(&rec->counts, memory_order_relaxed);
	s->check = atomic_load_explicit(&rec->check, memory_order_relaxed);
	s->weight = atomic_load_explicit(&rec->weight, memory_order_relaxed);
	/* Bounded before use: the counts are the target's word. */
	s->nframes = (uint32_t)counts;
	s->ncopy = (uint32_t)(counts >> 32);
	if (s->nframes > SNAP_FP_MAX)
		s->nframes = SNAP_FP_MAX + 1; /* bad: see below */
	if (s->ncopy > SNAP_COPY_MAX || (s->ncopy & 7))
		s->ncopy = SNAP_COPY_MAX + 1;
	for (uint32_t i = 0; i < s->nframes && i < SNAP_FP_MAX; i++)
		s->frames[i] = atomic_load_explicit(&rec->frames[i],
						    memory_order_relaxed);
	for (uint32_t i = 0; i < s->ncopy / 8 && i < SNAP_COPY_MAX / 8; i++)
		s->stack[i] = atomic_load_explicit(&rec->stack[i],
						   memory_order_relaxed);
	/* (f) acquire fence: pairs with the writer's release fence (c). */
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&rec->seq, memory_order_relaxed) == seq;
}

size_t snapreader_poll(struct snapreader *r, uint64_t now, snapreader_fn fn,
		       void *ctx, size_t max)
{
	struct snapreader_stats *st = &r->st;
	size_t delivered = 0, steps = 0;
	/* relaxed: the head only says how far to look; each record's seq
	 * (acquire) is what carries its data. */
	uint64_t head =
		atomic_load_explicit(&r->hdr->head, memory_order_relaxed);

	if (head < st->tail || head - st->tail > SNAP_JUMP_MAX) {
		st->resyncs++;
		st->tail = head;
		r->waiting_since = 0;
		return 0;
	}
	if (head - st->tail > r->records) {
		st->lapped += head - r->records - st->tail;
		st->tail = head - r->records;
		r->waiting_since = 0;
	}
	while (st->tail < head && steps++ < max) {
		uint64_t t = st->tail;
		struct snap_record *rec = &r->rec[t & (r->records - 1)];
		/* (e) acquire: pairs with the writer's release (d). */
		uint64_t s =
			atomic_load_explicit(&rec->seq, memory_order_acquire);

		if (s <= 2 * t + 1) {
			/* Not complete: wait for it, within the grace. */
			/* A clock that went back (a caller's, never
			 * CLOCK_MONOTONIC) starts the wait over rather than
			 * ending it. */
			if (!r->waiting_since || now < r->waiting_since) {
				r->waiting_since = now ? now : 1;
				break;
			}
			if (now - r->waiting_since < r->grace_ns)
				break;
			st->skipped++;
		} else if (s > 2 * t + 2) {
			st->lapped++;
		} else if (!snapreader_copy(r, rec, s)) {
			st->torn++;
		} else if (r->sample.nframes > SNAP_FP_MAX ||
			   r->sample.ncopy > SNAP_COPY_MAX) {
			st->bad++;
		} else {
			st->taken++;
			r->sample.ticket = t;
			delivered++;
			fn(ctx, &r->sample);
		}
		st->tail = t + 1;
		r->waiting_since = 0;
	}
	return delivered;
}

uint64_t snapreader_pending(const struct snapreader *r)
{
	/* relaxed: a statistic. */
	uint64_t head =
		atomic_load_explicit(&r->hdr->head, memory_order_relaxed);

	if (head < r->st.tail)
		return 1; /* went back: a poll resyncs */
	return head - r->st.tail;
}

void snapreader_stats(const struct snapreader *r, struct snapreader_stats *out)
{
	*out = r->st;
	/* relaxed: the writers' statistics. */
	out->head = atomic_load_explicit(&r->hdr->head, memory_order_relaxed);
	out->stored =
		atomic_load_explicit(&r->hdr->stored, memory_order_relaxed);
	out->busy = atomic_load_explicit(&r->hdr->busy, memory_order_relaxed);
}
