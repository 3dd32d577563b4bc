/*
 * fuzz-snapreader: the engine's snapshot-ring reader
 * (src/engine/calltrace/snapreader.c) against a region made of arbitrary
 * bytes -- what a hostile or broken target can leave in the file the
 * engine drains: any head, any seq, any counts.
 *
 * The harness builds a ring of FZ_RECORDS records with a valid header (the
 * engine's own geometry: the reader never re-reads it).  The input chooses
 * the first head (small, any 64-bit value, or just below 2^63 or 2^64,
 * where a ticket's seq wraps), the grace period, the first
 * clock, then each record: its seq (raw, or made plausible for a ticket
 * near the tail: complete, being written, or 0, so that delivery, waits,
 * skips and laps are all reached and not only "nothing there"), its counts
 * (raw, or in range, or just past it) and its payload words.  Then a
 * sequence of polls, each possibly preceded by an edit of a record (a
 * writer at work) or a move of head (forwards a little or by rings, back,
 * past 2^32, anywhere), with the clock advancing and a max of 0..7.
 * Nothing may crash or read outside the region, and after every poll:
 *   - taken + lapped + torn + skipped + bad == the tickets the tail moved
 *     over since init, less those resyncs jumped (tracked here: a resync
 *     poll moves the tail to the head and counts nothing else);
 *   - a resync happens exactly when head is behind the tail or more than
 *     2^32 ahead of it, and then nothing is delivered;
 *   - otherwise the tail never passes head, and the tickets consumed in
 *     the loop are at most max (a bulk lap, head more than a ring ahead,
 *     comes on top: at least head - records - tail counted lapped);
 *   - nothing is torn (one thread: no seq moves during a copy), at most
 *     one ticket is skipped per poll, and only once the wait for it began
 *     in an earlier poll at least grace_ns before; a poll with a ticket
 *     to look at and max >= 1 consumes one unless that ticket's record is
 *     unfinished and its wait (if any) has not run the grace;
 *   - a poll that stopped short of head and of max waits on a record that
 *     is not complete for the tail's ticket;
 *   - each sample delivered is a ticket the poll consumed, in order, with
 *     nframes <= SNAP_FP_MAX, ncopy <= SNAP_COPY_MAX and a multiple of 8,
 *     and equals its record word for word (seq 2t + 2, every field, the
 *     frames and stack words its counts say);
 *   - pending and stats agree with the region's head and the books.
 *
 * Built as a libFuzzer target with clang (-Dfuzz=true) and, always, with
 * tests/fuzz/driver.c, which replays a seeded pseudo-random corpus.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzzin.h"
#include "engine/calltrace/snapreader.h"

#define FZ_RECORDS 4u
#define FZ_POLLS 64
#define FZ_JUMP (1ull << 32) /* snapreader.c's SNAP_JUMP_MAX */

static void fz_header(struct snap_header *h, uint64_t size)
{
	snap_header_init(h, FZ_RECORDS, size, 0);
}

/* relaxed, every region access here: one thread. */
static uint64_t fz_ld(CTP_ATOMIC(uint64_t) * p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

static void fz_st(CTP_ATOMIC(uint64_t) * p, uint64_t v)
{
	atomic_store_explicit(p, v, memory_order_relaxed);
}

/* Record k made from the input, its ticket near tail. */
static void fz_record(struct fz_in *in, struct snap_record *r, uint32_t k,
		      uint64_t tail)
{
	uint8_t how = fz_u8(in), cm = fz_u8(in);
	uint64_t t = tail + (uint64_t)(how >> 2) % 16 - 6, seq, counts;
	uint64_t fill = fz_u64(in);

	/* The ticket in [tail - 6, tail + 10) whose record is k. */
	t = (t & ~(uint64_t)(FZ_RECORDS - 1)) | k;
	switch (how & 3) {
	case 0:
		seq = fz_u64(in);
		break;
	case 1:
		seq = 2 * t + 2; /* complete */
		break;
	case 2:
		seq = 2 * t + 1; /* being written */
		break;
	default:
		seq = 0;
		break;
	}
	if ((cm & 3) == 0) {
		counts = fz_u64(in);
	} else {
		uint8_t f = fz_u8(in), c0 = fz_u8(in), c1 = fz_u8(in);
		uint32_t nf = (uint32_t)f % (SNAP_FP_MAX + 3);
		uint32_t nc = ((uint32_t)c0 << 8 | c1) % (SNAP_COPY_MAX + 24);

		if (cm & 4)
			nc &= ~7u;
		counts = (uint64_t)nf | (uint64_t)nc << 32;
	}
	fz_st(&r->tag, fill);
	fz_st(&r->pc, fill ^ 1);
	fz_st(&r->sp, fill ^ 2);
	fz_st(&r->fp, fill ^ 3);
	fz_st(&r->counts, counts);
	fz_st(&r->check, fill ^ 4);
	fz_st(&r->weight, fill ^ 5);
	for (uint32_t i = 0; i < SNAP_FP_MAX; i++)
		fz_st(&r->frames[i], fill + i);
	for (uint32_t i = 0; i < SNAP_COPY_MAX / 8; i++)
		fz_st(&r->stack[i], fill * 3 + i);
	fz_st(&r->seq, seq);
}

struct fz_poll {
	struct snap_record *rec;
	uint64_t tail; /* when the poll began */
	uint64_t last;
	size_t n;
};

static void fz_sample(void *ctx, const struct snap_sample *s)
{
	struct fz_poll *p = ctx;
	struct snap_record *r = &p->rec[s->ticket & (FZ_RECORDS - 1)];
	uint64_t counts = (uint64_t)s->nframes | (uint64_t)s->ncopy << 32;

	if (s->nframes > SNAP_FP_MAX || s->ncopy > SNAP_COPY_MAX ||
	    s->ncopy % 8)
		abort();
	/* Consumed by this poll, in order (the upper bound is checked
	 * against the tail after the poll). */
	if (s->ticket - p->tail >= FZ_JUMP || (p->n && s->ticket <= p->last))
		abort();
	p->last = s->ticket;
	p->n++;
	if (fz_ld(&r->seq) != 2 * s->ticket + 2 ||
	    fz_ld(&r->counts) != counts || fz_ld(&r->tag) != s->tag ||
	    fz_ld(&r->pc) != s->pc || fz_ld(&r->sp) != s->sp ||
	    fz_ld(&r->fp) != s->fp || fz_ld(&r->check) != s->check ||
	    fz_ld(&r->weight) != s->weight)
		abort();
	for (uint32_t i = 0; i < s->nframes; i++)
		if (fz_ld(&r->frames[i]) != s->frames[i])
			abort();
	for (uint32_t i = 0; i < s->ncopy / 8; i++)
		if (fz_ld(&r->stack[i]) != s->stack[i])
			abort();
}

/* Move head as the input says. */
static void fz_move_head(struct fz_in *in, struct snap_header *h, uint64_t tail)
{
	uint8_t op = fz_u8(in);
	uint64_t head = fz_ld(&h->head), d = op >> 3;

	switch (op & 7) {
	case 0:
		head += d; /* writers took a few tickets */
		break;
	case 1:
		head += d * FZ_RECORDS; /* laps */
		break;
	case 2:
		head -= d; /* backwards */
		break;
	case 3:
		head = tail + FZ_JUMP - 16 + d; /* about the bound */
		break;
	case 4:
		head = tail + FZ_RECORDS + d % 4 - 1; /* about a ring */
		break;
	case 5:
		head = fz_u64(in); /* anywhere */
		break;
	default:
		head = tail + d % 8; /* near the tail */
		break;
	}
	fz_st(&h->head, head);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct snapreader r;
	struct fz_in in = {.d = data, .n = size};
	const uint64_t rsize = snap_region_size(FZ_RECORDS);
	struct snap_header *h;
	struct snap_record *rec;
	uint64_t first, jumped = 0, now, grace, head0;
	uint8_t flags = fz_u8(&in), g, c;

	h = aligned_alloc(64, rsize);
	if (!h)
		abort();
	memset(h, 0, rsize);
	fz_header(h, rsize);
	rec = (struct snap_record *)(void *)((char *)h + SNAP_HEADER_SIZE);
	/* The first head: small, any, or just below 2^64 or 2^63 (where
	 * 2t + 2 wraps). */
	switch (flags & 3) {
	case 0:
		head0 = fz_u8(&in);
		break;
	case 1:
		head0 = fz_u64(&in);
		break;
	case 2:
		head0 = UINT64_MAX - fz_u8(&in);
		break;
	default:
		head0 = (1ull << 63) - fz_u8(&in);
		break;
	}
	g = fz_u8(&in);
	c = fz_u8(&in);
	grace = (uint64_t)g * 1000;
	now = 1 + (uint64_t)c * 1000;
	fz_st(&h->head, head0);
	snapreader_init(&r, h, FZ_RECORDS, grace);
	first = r.st.tail;
	if (first != head0)
		abort();
	for (uint32_t k = 0; k < FZ_RECORDS; k++)
		fz_record(&in, &rec[k], k, first);

	for (int p = 0; p < FZ_POLLS && in.pos < in.n; p++) {
		uint8_t cmd = fz_u8(&in);
		struct snapreader_stats b, a, out;
		struct fz_poll fp = {.rec = rec};
		uint64_t head, wait, bulk = 0;
		size_t max = cmd & 7, got;

		if (cmd & 0x80) {
			uint8_t k = fz_u8(&in);

			fz_record(&in, &rec[k % FZ_RECORDS], k % FZ_RECORDS,
				  r.st.tail);
		}
		if (cmd & 0x40)
			fz_move_head(&in, h, r.st.tail);
		now += (uint64_t)((cmd >> 3) & 7) * 400 * (1 + g / 4);
		head = fz_ld(&h->head);
		b = r.st;
		wait = r.waiting_since;
		fp.tail = b.tail;
		got = snapreader_poll(&r, now, fz_sample, &fp, max);
		a = r.st;
		if (got != fp.n || a.taken - b.taken != got || a.torn != b.torn)
			abort();
		if (head < b.tail || head - b.tail > FZ_JUMP) {
			if (a.resyncs != b.resyncs + 1 || a.tail != head ||
			    got || a.lapped != b.lapped ||
			    a.skipped != b.skipped || a.bad != b.bad)
				abort();
			jumped += a.tail - b.tail;
		} else {
			if (a.resyncs != b.resyncs || a.tail > head ||
			    a.tail < b.tail)
				abort();
			if (head - b.tail > FZ_RECORDS)
				bulk = head - FZ_RECORDS - b.tail;
			if (a.tail - b.tail - bulk > max ||
			    a.lapped - b.lapped < bulk)
				abort();
			if (fp.n && fp.last >= a.tail)
				abort();
			/* One skip at most, after a wait begun earlier
			 * (and not ended by a bulk lap) for the grace. */
			if (a.skipped - b.skipped > 1 ||
			    (a.skipped != b.skipped &&
			     (!wait || bulk || now - wait < grace)))
				abort();
			/* Nothing consumed though there was a ticket and a
			 * step: the tail's record is not complete, and the
			 * wait for it had not run its grace. */
			if (max && b.tail < head && a.tail == b.tail &&
			    (fz_ld(&rec[b.tail & (FZ_RECORDS - 1)].seq) >
				     2 * b.tail + 1 ||
			     (wait && now - wait >= grace)))
				abort();
			/* Stopped short of head and of max: waiting on an
			 * unfinished record for the tail's ticket. */
			if (a.tail < head && a.tail - b.tail - bulk < max &&
			    (!r.waiting_since ||
			     fz_ld(&rec[a.tail & (FZ_RECORDS - 1)].seq) >
				     2 * a.tail + 1))
				abort();
		}
		if (a.taken + a.lapped + a.torn + a.skipped + a.bad !=
		    a.tail - first - jumped)
			abort();
		if (snapreader_pending(&r) !=
		    (head > a.tail ? head - a.tail : 0))
			abort();
		snapreader_stats(&r, &out);
		if (out.head != head || out.tail != a.tail ||
		    out.taken != a.taken || out.stored != 0 || out.busy != 0)
			abort();
	}
	free(h);
	return 0;
}
