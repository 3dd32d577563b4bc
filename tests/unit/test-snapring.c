/*
 * test-snapring: the snapshot ring (corotop/snapring.h) one step at a time
 * -- its writer (src/wire/snapwriter.h, snap_view_init and snap_writer_put)
 * and the engine's reader (src/engine/calltrace/snapreader.c) on a region
 * in this process's memory, its header filled as snapring_create fills it.
 *
 * Single-threaded, so every outcome is decided by the test: a writer that
 * took a ticket and stopped (head fetch_added, seq left odd), one that gave
 * up (head fetch_added, seq untouched), a record a later ticket took, a
 * record with counts out of range, a head that lies -- each made by hand,
 * with the reader's clock a variable.  A torn copy (seq moved while the
 * reader copied) is forced too: the record's page is made PROT_NONE and
 * the SIGSEGV handler of the reader's fault plays the lapping writer.
 *
 * The test's writer fills each sample as a function of its ticket (which
 * it knows: one thread, so the ticket is the head before the put), and
 * scrambles its "interrupted stack" after every put, so a delivered copy
 * must be the stack as it was at the put.  After every poll the books are
 * checked: taken + lapped + torn + skipped + bad == the tickets the tail
 * moved over since the reader started, less those a resync jumped (which
 * are counted as resyncs, not tickets); each sample delivered is in range
 * and follows the last in ticket order (from scratch after a resync: a
 * head moved back makes records already delivered current again); the
 * tickets consumed in the loop are at most max (a bulk lap, head more than
 * a ring ahead, comes on top).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/calltrace/snapreader.h"
#include "wire/snapwriter.h"

#define MS 1000000ull
#define GRACE (5 * MS)
#define SR_KEEP 40u /* samples one poll may deliver to the test */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* ---- what the test's writer stores for ticket t ---- */

static uint64_t tag_of(uint64_t t)
{
	return mix64(t ^ 0xa0);
}

static uint64_t frame_of(uint64_t t, uint32_t i)
{
	return mix64(~t ^ (uint64_t)i << 40);
}

static uint64_t word_of(uint64_t t, uint32_t i)
{
	return mix64(t * 0x100000001b3ull + i);
}

/* ---- the ring ---- */

/* Every access to the region here is relaxed: one thread writes and
 * reads it, so there is nothing to pair with.  The orders the protocol
 * needs are those of snapwriter.h and snapreader.c, under test. */
static uint64_t sr_ld(CTP_ATOMIC(uint64_t) * p)
{
	return atomic_load_explicit(p, memory_order_relaxed);
}

static void sr_st(CTP_ATOMIC(uint64_t) * p, uint64_t v)
{
	atomic_store_explicit(p, v, memory_order_relaxed);
}

struct sr {
	void *base;
	uint64_t size, map_size; /* map_size: mmap'd (0: aligned_alloc) */
	uint32_t records;
	struct snap_view v;
	struct snapreader r;
	uint64_t first;	 /* the reader's tail at init */
	uint64_t jumped; /* tail moved by resyncs, mod 2^64 */
	/* One poll's deliveries, as the callback saw them. */
	struct snap_sample *got; /* [SR_KEEP] */
	size_t n;
	uint64_t poll_tail; /* the tail when the poll began */
	bool any;	    /* a sample was delivered, ever */
	uint64_t last;	    /* the last ticket delivered */
	/* The writer's input: its frame walk and its "interrupted stack". */
	uint64_t frames[SNAP_FP_MAX + 8];
	uint64_t stack[SNAP_COPY_MAX / 8 + 8];
};

/* The header as snapring_create writes it. */
static void sr_header(struct snap_header *h, uint32_t records, uint64_t size)
{
	snap_header_init(h, records, size, (uint32_t)getpid());
}

/* A ring of `records` whose head starts at head0; mapped: the region is
 * mmap'd (page-aligned, for mprotect) rather than allocated. */
static struct sr *sr_new(uint32_t records, uint64_t head0, bool mapped)
{
	struct sr *d = calloc(1, sizeof(*d));

	assert_non_null(d);
	d->records = records;
	d->size = snap_region_size(records);
	assert_true(d->size > 0);
	if (mapped) {
		long pg = sysconf(_SC_PAGESIZE);

		d->map_size =
			(d->size + (uint64_t)pg - 1) & ~((uint64_t)pg - 1);
		d->base = mmap(NULL, d->map_size, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		assert_true(d->base != MAP_FAILED);
	} else {
		/* Exactly the region: ASan sees any read past it. */
		d->base = aligned_alloc(64, d->size);
		assert_non_null(d->base);
		memset(d->base, 0, d->size);
	}
	sr_header(d->base, records, d->size);
	sr_st(&((struct snap_header *)d->base)->head, head0);
	assert_true(snap_view_init(&d->v, d->base, d->size));
	snapreader_init(&d->r, d->base, records, GRACE);
	assert_true(d->r.st.tail == head0);
	d->first = d->r.st.tail;
	d->got = calloc(SR_KEEP, sizeof(*d->got));
	assert_non_null(d->got);
	return d;
}

static void sr_free(struct sr *d)
{
	if (d->map_size)
		munmap(d->base, d->map_size);
	else
		free(d->base);
	free(d->got);
	free(d);
}

/* The writers' counters, and head. */
static uint64_t sr_head(struct sr *d)
{
	return sr_ld(&d->v.hdr->head);
}

static void sr_set_head(struct sr *d, uint64_t head)
{
	sr_st(&d->v.hdr->head, head);
}

static uint64_t sr_stored(struct sr *d)
{
	return sr_ld(&d->v.hdr->stored);
}

static uint64_t sr_busy(struct sr *d)
{
	return sr_ld(&d->v.hdr->busy);
}

static struct snap_record *sr_rec(struct sr *d, uint64_t t)
{
	return &d->v.rec[t & d->v.mask];
}

static uint64_t sr_seq(struct sr *d, uint64_t t)
{
	return sr_ld(&sr_rec(d, t)->seq);
}

static void sr_set_seq(struct sr *d, uint64_t t, uint64_t seq)
{
	sr_st(&sr_rec(d, t)->seq, seq);
}

/* A writer's step (a): a ticket, nothing else (relaxed, as above). */
static uint64_t sr_take(struct sr *d)
{
	return atomic_fetch_add_explicit(&d->v.hdr->head, 1,
					 memory_order_relaxed);
}

/* One sample through snap_writer_put, its content a function of the
 * ticket it will get; the stack is scrambled once the put returned. */
static bool sr_put(struct sr *d, uint32_t nframes, uint32_t ncopy)
{
	uint64_t t = sr_head(d);
	uint32_t nf = nframes < SNAP_FP_MAX + 8 ? nframes : SNAP_FP_MAX + 8;
	struct snap_sample_in in = {
		.tag = tag_of(t),
		.pc = mix64(t ^ 0xb0),
		.sp = (uintptr_t)d->stack,
		.fp = mix64(t ^ 0xc0),
		.weight = t + 1,
		.check = mix64(t ^ 0xd0),
		.frames = d->frames,
		.nframes = nframes,
		.ncopy = ncopy,
	};
	bool ok;

	for (uint32_t i = 0; i < nf; i++)
		d->frames[i] = frame_of(t, i);
	for (uint32_t i = 0; i < SNAP_COPY_MAX / 8 + 8; i++)
		d->stack[i] = word_of(t, i);
	ok = snap_writer_put(&d->v, &in);
	for (uint32_t i = 0; i < SNAP_COPY_MAX / 8 + 8; i++)
		d->stack[i] = ~word_of(t, i);
	return ok;
}

/* A sample the test's writer would put, of nframes and ncopy. */
static bool sr_put_t(struct sr *d)
{
	uint64_t t = sr_head(d);

	return sr_put(d, (uint32_t)(t % (SNAP_FP_MAX + 1)),
		      (uint32_t)(t * 136 % (SNAP_COPY_MAX + 1)));
}

/* Record t's content written by hand, as sr_put would, with counts and
 * seq as given (neither checked). */
static void sr_hand(struct sr *d, uint64_t t, uint64_t counts, uint64_t seq)
{
	struct snap_record *r = sr_rec(d, t);

	sr_st(&r->tag, tag_of(t));
	sr_st(&r->pc, mix64(t ^ 0xb0));
	sr_st(&r->sp, (uintptr_t)d->stack);
	sr_st(&r->fp, mix64(t ^ 0xc0));
	sr_st(&r->counts, counts);
	sr_st(&r->check, mix64(t ^ 0xd0));
	sr_st(&r->weight, t + 1);
	for (uint32_t i = 0; i < SNAP_FP_MAX; i++)
		sr_st(&r->frames[i], frame_of(t, i));
	for (uint32_t i = 0; i < SNAP_COPY_MAX / 8; i++)
		sr_st(&r->stack[i], word_of(t, i));
	sr_st(&r->seq, seq);
}

/* Sample s is exactly what the writer put for its ticket, nf frames and
 * nc bytes of stack. */
static void sr_expect(const struct sr *d, const struct snap_sample *s,
		      uint32_t nf, uint32_t nc)
{
	uint64_t t = s->ticket;

	assert_true(s->tag == tag_of(t));
	assert_true(s->pc == mix64(t ^ 0xb0));
	assert_true(s->sp == (uintptr_t)d->stack);
	assert_true(s->fp == mix64(t ^ 0xc0));
	assert_true(s->weight == t + 1);
	assert_true(s->check == mix64(t ^ 0xd0));
	assert_int_equal(s->nframes, nf);
	assert_int_equal(s->ncopy, nc);
	for (uint32_t i = 0; i < nf; i++)
		assert_true(s->frames[i] == frame_of(t, i));
	for (uint32_t i = 0; i < nc / 8; i++)
		assert_true(s->stack[i] == word_of(t, i));
}

/* As sr_put_t put it. */
static void sr_expect_t(const struct sr *d, const struct snap_sample *s)
{
	uint64_t t = s->ticket;

	sr_expect(d, s, (uint32_t)(t % (SNAP_FP_MAX + 1)),
		  (uint32_t)(t * 136 % (SNAP_COPY_MAX + 1)) & ~7u);
}

static void sr_books(const struct sr *d)
{
	const struct snapreader_stats *s = &d->r.st;

	assert_true(s->taken + s->lapped + s->torn + s->skipped + s->bad ==
		    s->tail - d->first - d->jumped);
}

static void sr_got(void *ctx, const struct snap_sample *s)
{
	struct sr *d = ctx;

	assert_true(d->n < SR_KEEP);
	assert_true(s->nframes <= SNAP_FP_MAX);
	assert_true(s->ncopy <= SNAP_COPY_MAX && s->ncopy % 8 == 0);
	/* In order, once each, and a ticket this poll consumed. */
	assert_true(s->ticket >= d->poll_tail);
	if (d->any)
		assert_true(s->ticket > d->last);
	d->any = true;
	d->last = s->ticket;
	memcpy(&d->got[d->n++], s, sizeof(*s));
}

/* One poll, and the checks every poll passes. */
static size_t sr_poll(struct sr *d, uint64_t now, size_t max)
{
	struct snapreader_stats b = d->r.st, a;
	uint64_t head = sr_head(d), bulk = 0;
	size_t n;

	d->n = 0;
	d->poll_tail = b.tail;
	n = snapreader_poll(&d->r, now, sr_got, d, max);
	a = d->r.st;
	assert_int_equal(n, d->n);
	assert_true(a.taken - b.taken == n);
	if (a.resyncs != b.resyncs) {
		/* Nothing counted but the resync; the tail is the head. */
		assert_true(a.resyncs == b.resyncs + 1);
		assert_int_equal(n, 0);
		assert_true(a.lapped == b.lapped && a.torn == b.torn &&
			    a.skipped == b.skipped && a.bad == b.bad);
		assert_true(a.tail == head);
		d->jumped += a.tail - b.tail;
		d->any = false; /* ticket order starts again from here */
	} else {
		if (head - b.tail > d->records)
			bulk = head - d->records - b.tail;
		assert_true(a.tail <= head);
		assert_true(a.tail - b.tail - bulk <= max);
		assert_true(a.lapped - b.lapped >= bulk);
	}
	for (size_t k = 0; k < n; k++)
		assert_true(d->got[k].ticket < a.tail);
	sr_books(d);
	return n;
}

/* Polls with the clock stepped a grace period each time, until the tail
 * is the head: what is left is skipped or delivered.  Returns the clock. */
static uint64_t sr_drain(struct sr *d, uint64_t now)
{
	for (int k = 0; k < 1000 && d->r.st.tail != sr_head(d); k++) {
		now += GRACE;
		(void)sr_poll(d, now, 64);
	}
	assert_true(d->r.st.tail == sr_head(d));
	return now;
}

/* ---- the tests ---- */

/* One put, one poll: the sample exactly, its stack as it was at the put
 * (the writer's buffer is scrambled since); the record and the writer's
 * counters say the same. */
static void test_put_then_poll(void **state)
{
	struct sr *d = sr_new(8, 0, false);
	struct snapreader_stats st;

	(void)state;
	assert_true(sr_put(d, 5, 256));
	assert_true(sr_head(d) == 1);
	assert_true(sr_stored(d) == 1 && sr_busy(d) == 0);
	assert_true(sr_seq(d, 0) == 2);
	assert_true(sr_ld(&sr_rec(d, 0)->counts) == (5ull | 256ull << 32));
	assert_true(snapreader_pending(&d->r) == 1);
	assert_int_equal(sr_poll(d, 1 * MS, 64), 1);
	assert_true(d->got[0].ticket == 0);
	sr_expect(d, &d->got[0], 5, 256);
	assert_true(d->got[0].stack[0] != d->stack[0]); /* scrambled since */
	snapreader_stats(&d->r, &st);
	assert_true(st.tail == 1 && st.taken == 1);
	assert_true(st.lapped + st.torn + st.skipped + st.bad + st.resyncs ==
		    0);
	assert_true(st.head == 1 && st.stored == 1 && st.busy == 0);
	assert_true(snapreader_pending(&d->r) == 0);
	/* Nothing more: nothing delivered, nothing counted. */
	assert_int_equal(sr_poll(d, 2 * MS, 64), 0);
	assert_true(d->r.st.tail == 1 && d->r.st.taken == 1);
	/* No frames, no stack: a sample all the same. */
	assert_true(sr_put(d, 0, 0));
	assert_int_equal(sr_poll(d, 3 * MS, 64), 1);
	sr_expect(d, &d->got[0], 0, 0);
	assert_true(d->got[0].ticket == 1);
	sr_free(d);
}

/* ncopy down to SNAP_COPY_MAX and to a multiple of 8, nframes down to
 * SNAP_FP_MAX: in the record's counts, in the words the writer stored
 * (none past the truncated counts) and in the sample delivered. */
static void test_truncation(void **state)
{
	static const struct {
		uint32_t nf, nc, want_nf, want_nc;
	} c[] = {
		{0, 7, 0, 0},
		{1, 13, 1, 8},
		{3, 8 * 5 + 3, 3, 40},
		{SNAP_FP_MAX, SNAP_COPY_MAX, SNAP_FP_MAX, SNAP_COPY_MAX},
		{SNAP_FP_MAX - 1, SNAP_COPY_MAX - 1, SNAP_FP_MAX - 1,
		 SNAP_COPY_MAX - 8},
		{SNAP_FP_MAX + 1, SNAP_COPY_MAX + 1, SNAP_FP_MAX,
		 SNAP_COPY_MAX},
		{SNAP_FP_MAX + 5, SNAP_COPY_MAX + 100, SNAP_FP_MAX,
		 SNAP_COPY_MAX},
		{UINT32_MAX, UINT32_MAX, SNAP_FP_MAX, SNAP_COPY_MAX},
	};
	const uint64_t mark = 0x5a5a5a5a5a5a5a5aull;

	(void)state;
	for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		struct sr *d = sr_new(4, 0, false);
		struct snap_record *r = sr_rec(d, 0);

		/* Words the put must not touch. */
		for (uint32_t i = 0; i < SNAP_FP_MAX; i++)
			sr_st(&r->frames[i], mark);
		for (uint32_t i = 0; i < SNAP_COPY_MAX / 8; i++)
			sr_st(&r->stack[i], mark);
		assert_true(sr_put(d, c[k].nf, c[k].nc));
		assert_true(sr_ld(&r->counts) ==
			    ((uint64_t)c[k].want_nf | (uint64_t)c[k].want_nc
							      << 32));
		if (c[k].want_nf < SNAP_FP_MAX)
			assert_true(sr_ld(&r->frames[c[k].want_nf]) == mark);
		if (c[k].want_nc < SNAP_COPY_MAX)
			assert_true(sr_ld(&r->stack[c[k].want_nc / 8]) == mark);
		assert_int_equal(sr_poll(d, 1 * MS, 64), 1);
		sr_expect(d, &d->got[0], c[k].want_nf, c[k].want_nc);
		sr_free(d);
	}
}

/* Tickets delivered in order, whatever max, round the ring many times
 * without ever being lapped. */
static void test_in_order(void **state)
{
	struct sr *d = sr_new(8, 0, false);
	uint64_t want = 0;

	(void)state;
	for (uint32_t round = 0; round < 100; round++) {
		uint32_t w = 1 + round % 8;
		size_t max = 1 + round % 3, n;

		for (uint32_t i = 0; i < w; i++)
			assert_true(sr_put_t(d));
		do {
			n = sr_poll(d, 1 * MS, max);
			for (size_t k = 0; k < n; k++) {
				assert_true(d->got[k].ticket == want++);
				sr_expect_t(d, &d->got[k]);
			}
		} while (n == max);
	}
	assert_true(d->r.st.taken == want && d->r.st.tail == want);
	assert_true(want == sr_head(d) && want == sr_stored(d));
	assert_true(d->r.st.lapped + d->r.st.skipped + d->r.st.bad == 0);
	sr_free(d);
}

/* More than a ring put before a poll: the oldest are lapped (counted,
 * exactly, at once) and the newest `records` delivered, whole. */
static void test_lapped(void **state)
{
	(void)state;
	for (uint32_t laps = 1; laps <= 3; laps++) {
		struct sr *d = sr_new(8, 0, false);
		uint64_t w = laps * 8 + 3;

		for (uint64_t i = 0; i < w; i++)
			assert_true(sr_put_t(d));
		assert_int_equal(sr_poll(d, 1 * MS, 64), 8);
		assert_true(d->r.st.lapped == w - 8);
		for (uint32_t k = 0; k < 8; k++) {
			assert_true(d->got[k].ticket == w - 8 + k);
			sr_expect_t(d, &d->got[k]);
		}
		assert_int_equal(sr_poll(d, 1 * MS, 64), 0);
		/* Lapped again, and read three at a time. */
		for (uint32_t i = 0; i < 20; i++)
			assert_true(sr_put_t(d));
		assert_int_equal(sr_poll(d, 2 * MS, 3), 3);
		assert_true(d->r.st.lapped == w - 8 + 12);
		assert_true(d->got[0].ticket == w + 12);
		assert_int_equal(sr_poll(d, 2 * MS, 64), 5);
		assert_true(d->got[4].ticket == w + 19);
		assert_true(d->r.st.taken == 16);
		assert_true(d->r.st.skipped + d->r.st.bad + d->r.st.torn == 0);
		sr_free(d);
	}
}

/* A record showing a later ticket (the poll read head before that
 * writer's ticket, or a writer raced ahead): lapped, one at a time, with
 * no wait -- complete or still being written. */
static void test_later_ticket(void **state)
{
	struct sr *d = sr_new(8, 0, false);

	(void)state;
	for (int i = 0; i < 4; i++)
		assert_true(sr_put_t(d));
	sr_set_seq(d, 2, 2 * (2 + 8) + 2);
	sr_set_seq(d, 3, 2 * (3 + 8) + 1);
	assert_int_equal(sr_poll(d, 1 * MS, 64), 2);
	assert_true(d->got[0].ticket == 0 && d->got[1].ticket == 1);
	assert_true(d->r.st.lapped == 2 && d->r.st.tail == 4);
	assert_true(d->r.st.skipped == 0);
	sr_free(d);
}

/* A writer that took a ticket and never finished (seq left odd) is waited
 * for, a grace period to the nanosecond from when the reader first met
 * it, then skipped, and the reader goes on.  Completed late, it is not
 * delivered.  One completed within the grace is delivered, and the next
 * wait starts afresh. */
static void test_unfinished_waited(void **state)
{
	struct sr *d = sr_new(8, 0, false);
	uint64_t t;

	(void)state;
	assert_true(sr_put_t(d));
	assert_true(sr_put_t(d));
	assert_int_equal(sr_poll(d, 1 * MS, 64), 2);
	t = sr_take(d); /* 2: its writer stops after (b) */
	sr_set_seq(d, t, 2 * t + 1);
	assert_true(sr_put_t(d)); /* 3 */
	assert_int_equal(sr_poll(d, 10 * MS, 64), 0);
	assert_true(d->r.st.skipped == 0 && d->r.st.tail == t);
	assert_true(d->r.waiting_since == 10 * MS);
	assert_int_equal(sr_poll(d, 10 * MS + GRACE - 1, 64), 0);
	assert_true(d->r.st.skipped == 0 && d->r.st.tail == t);
	assert_int_equal(sr_poll(d, 10 * MS + GRACE, 64), 1);
	assert_true(d->r.st.skipped == 1);
	assert_true(d->got[0].ticket == 3);
	sr_expect_t(d, &d->got[0]);
	/* Ticket 2 completes now: too late. */
	sr_hand(d, t, 0, 2 * t + 2);
	assert_int_equal(sr_poll(d, 20 * MS, 64), 0);
	assert_true(d->r.st.taken == 3 && d->r.st.tail == 4);

	/* Completed within the grace: delivered, the wait over. */
	t = sr_take(d); /* 4 */
	sr_set_seq(d, t, 2 * t + 1);
	assert_int_equal(sr_poll(d, 30 * MS, 64), 0);
	assert_true(d->r.waiting_since == 30 * MS);
	sr_hand(d, t, 8ull << 32 | 2, 2 * t + 2);
	assert_int_equal(sr_poll(d, 30 * MS + GRACE - 1, 64), 1);
	assert_true(d->got[0].ticket == t);
	sr_expect(d, &d->got[0], 2, 8);
	assert_true(d->r.waiting_since == 0);
	/* The last ticket, unfinished, nothing after it: the wait starts
	 * when the reader meets it (not at the wait before), and it is
	 * skipped all the same -- no newer ticket is needed. */
	t = sr_take(d); /* 5 */
	sr_set_seq(d, t, 2 * t + 1);
	assert_int_equal(sr_poll(d, 100 * MS, 64), 0);
	assert_int_equal(sr_poll(d, 100 * MS + GRACE - 1, 64), 0);
	assert_true(d->r.st.tail == t);
	assert_int_equal(sr_poll(d, 100 * MS + GRACE, 64), 0);
	assert_true(d->r.st.skipped == 2 && d->r.st.tail == t + 1);
	assert_true(d->r.st.taken == 4);
	sr_free(d);
}

/* A writer that gave up at (b): head bumped, seq untouched -- still 0 in
 * the first lap, still the ticket a lap older afterwards.  Waited for,
 * then skipped. */
/* A clock that goes back (or 0 twice) starts the wait over: an unfinished
 * ticket is never skipped before a whole grace period of the caller's
 * clock went by. */
static void test_clock_back(void **state)
{
	struct sr *d = sr_new(8, 0, false);
	uint64_t t = sr_take(d);

	(void)state;
	sr_set_seq(d, t, 2 * t + 1);
	assert_int_equal(sr_poll(d, 1000 * MS, 64), 0);
	assert_int_equal(sr_poll(d, 1000 * MS - 1, 64), 0);
	assert_true(d->r.st.skipped == 0);
	sr_free(d);
}

static void test_gave_up(void **state)
{
	struct sr *d = sr_new(2, 0, false);
	uint64_t t;

	(void)state;
	t = sr_take(d); /* 0: record 0 never written */
	assert_true(sr_put_t(d));
	assert_int_equal(sr_poll(d, 1 * MS, 64), 0);
	assert_int_equal(sr_poll(d, 1 * MS + GRACE, 64), 1);
	assert_true(d->r.st.skipped == 1 && d->got[0].ticket == 1);
	assert_true(sr_seq(d, t) == 0);
	assert_true(sr_put_t(d)); /* 2, in record 0 */
	assert_int_equal(sr_poll(d, 10 * MS, 64), 1);
	t = sr_take(d); /* 3: record 1 still holds ticket 1 */
	assert_true(sr_seq(d, t) == 2 * 1 + 2);
	assert_true(sr_put_t(d)); /* 4 */
	assert_int_equal(sr_poll(d, 20 * MS, 64), 0);
	assert_true(d->r.st.tail == t);
	assert_int_equal(sr_poll(d, 20 * MS + GRACE, 64), 1);
	assert_true(d->got[0].ticket == 4);
	sr_expect_t(d, &d->got[0]);
	assert_true(d->r.st.skipped == 2 && d->r.st.taken == 3);
	/* The writers' books: the two tickets taken by hand are neither
	 * stored nor busy (a real writer counts one or the other). */
	assert_true(sr_stored(d) == 3 && sr_busy(d) == 0);
	sr_free(d);
}

/* A writer finding its record odd (a writer a lap behind, stopped in its
 * handler) or already past its ticket (a writer a lap ahead) stores
 * nothing, returns false and counts busy; its ticket is then skipped or
 * lapped by the reader. */
static void test_busy(void **state)
{
	struct sr *d = sr_new(4, 0, false);
	struct snap_record *r;
	uint64_t t;

	(void)state;
	t = sr_take(d); /* 0: stopped after (b) */
	sr_set_seq(d, t, 2 * t + 1);
	for (int i = 0; i < 3; i++)
		assert_true(sr_put_t(d)); /* 1..3 */
	r = sr_rec(d, 4);
	assert_false(sr_put_t(d)); /* 4: record 0 still odd */
	assert_true(sr_busy(d) == 1 && sr_stored(d) == 3);
	assert_true(sr_head(d) == 5);
	assert_true(sr_seq(d, 4) == 1);
	assert_true(sr_ld(&r->tag) == 0);
	assert_true(sr_ld(&r->counts) == 0);
	/* The reader: head is more than a ring ahead, so 0 is lapped at
	 * once (the bound, though its record still says 0); 1..3 delivered;
	 * 4 (its record odd for ticket 0) waited for and skipped. */
	assert_int_equal(sr_poll(d, 1 * MS, 64), 3);
	assert_true(d->r.st.lapped == 1 && d->r.st.tail == 4);
	assert_true(d->r.st.skipped == 0);
	assert_int_equal(sr_poll(d, 1 * MS + GRACE - 1, 64), 0);
	assert_int_equal(sr_poll(d, 1 * MS + GRACE, 64), 0);
	assert_true(d->r.st.tail == 5 && d->r.st.skipped == 1);
	assert_true(d->r.st.taken == 3);
	sr_free(d);

	/* The same, the reader at 0 before the busy put: 0 waited for,
	 * then lapped in bulk once head is a ring and one ahead. */
	d = sr_new(4, 0, false);
	t = sr_take(d);
	sr_set_seq(d, t, 2 * t + 1);
	for (int i = 0; i < 3; i++)
		assert_true(sr_put_t(d));
	assert_int_equal(sr_poll(d, 1 * MS, 64), 0);
	assert_true(d->r.waiting_since == 1 * MS);
	assert_false(sr_put_t(d));
	assert_int_equal(sr_poll(d, 1 * MS, 64), 3);
	assert_true(d->r.st.lapped == 1 && d->r.st.skipped == 0);
	assert_true(d->r.waiting_since == 1 * MS); /* now for ticket 4 */
	(void)sr_drain(d, 1 * MS);
	assert_true(d->r.st.skipped == 1 && d->r.st.taken == 3);
	sr_free(d);

	/* Records already past the ticket: complete, odd, or exactly the
	 * ticket's own odd seq. */
	d = sr_new(4, 0, false);
	sr_set_seq(d, 1, 2 * (1 + 4) + 2);
	sr_set_seq(d, 2, 2 * (2 + 4) + 1);
	sr_set_seq(d, 3, 2 * 3 + 1);
	assert_true(sr_put_t(d)); /* 0 */
	for (uint64_t k = 1; k <= 3; k++) {
		uint64_t before = sr_seq(d, k);

		assert_false(sr_put_t(d));
		assert_true(sr_seq(d, k) == before);
	}
	assert_true(sr_busy(d) == 3 && sr_stored(d) == 1);
	assert_true(sr_stored(d) + sr_busy(d) == sr_head(d));
	/* 0 delivered, 1 and 2 lapped (a later ticket's), 3 waited for. */
	assert_int_equal(sr_poll(d, 1 * MS, 64), 1);
	assert_true(d->r.st.lapped == 2 && d->r.st.tail == 3);
	(void)sr_drain(d, 1 * MS);
	assert_true(d->r.st.skipped == 1);
	sr_free(d);
}

/* Complete records (even seq, the right ticket) whose counts are out of
 * range: bad, never delivered; counts exactly at the bounds are fine. */
static void test_bad_counts(void **state)
{
	static const uint64_t bad[] = {
		SNAP_FP_MAX + 1,
		12ull << 32,
		4ull << 32,
		(uint64_t)(SNAP_COPY_MAX + 8) << 32,
		(uint64_t)(SNAP_COPY_MAX + 1) << 32 | 1,
		0xffffffffull,
		UINT64_MAX,
	};
	const size_t nbad = sizeof(bad) / sizeof(bad[0]);
	struct sr *d = sr_new(16, 0, false);
	uint64_t t;

	(void)state;
	for (size_t k = 0; k < nbad; k++) {
		t = sr_take(d);
		sr_hand(d, t, bad[k], 2 * t + 2);
	}
	t = sr_take(d);
	sr_hand(d, t, (uint64_t)SNAP_FP_MAX | (uint64_t)SNAP_COPY_MAX << 32,
		2 * t + 2);
	assert_int_equal(sr_poll(d, 1 * MS, 64), 1);
	assert_true(d->got[0].ticket == t);
	sr_expect(d, &d->got[0], SNAP_FP_MAX, SNAP_COPY_MAX);
	assert_true(d->r.st.bad == nbad);
	assert_true(d->r.st.tail == nbad + 1 && d->r.st.taken == 1);
	sr_free(d);
}

/* A head that lies: backwards, or more than 2^32 ahead of the tail.  One
 * resync each, nothing lapped, the tail moved to the head; then on as
 * before.  A jump of exactly 2^32 is a lap. */
static void test_resync(void **state)
{
	struct sr *d = sr_new(8, 0, false);
	uint64_t now = 1 * MS, h;

	(void)state;
	for (int i = 0; i < 5; i++)
		assert_true(sr_put_t(d));
	assert_int_equal(sr_poll(d, now, 64), 5);
	sr_set_head(d, 2);			     /* backwards */
	assert_true(snapreader_pending(&d->r) == 1); /* a poll resyncs */
	assert_int_equal(sr_poll(d, now, 64), 0);
	assert_true(d->r.st.resyncs == 1 && d->r.st.lapped == 0);
	assert_true(d->r.st.tail == 2);
	/* Records 2..4 still hold tickets 2..4 as written before the head
	 * went back: their writers now give up (busy, the record is not
	 * older than their ticket); 5 is new.  The reader has only the
	 * region's word: the old records are whole, and delivered again. */
	for (int i = 0; i < 3; i++)
		assert_false(sr_put_t(d));
	assert_true(sr_put_t(d));
	assert_true(sr_busy(d) == 3);
	assert_int_equal(sr_poll(d, now, 64), 4);
	for (uint32_t k = 0; k < 4; k++) {
		assert_true(d->got[k].ticket == 2 + k);
		sr_expect_t(d, &d->got[k]);
	}
	assert_true(d->r.st.taken == 9 && d->r.st.resyncs == 1);

	/* Far ahead: 2^32 + 1 past the tail. */
	h = d->r.st.tail + (1ull << 32) + 1;
	sr_set_head(d, h);
	assert_true(snapreader_pending(&d->r) == (1ull << 32) + 1);
	assert_int_equal(sr_poll(d, now, 64), 0);
	assert_true(d->r.st.resyncs == 2 && d->r.st.tail == h);
	assert_true(d->r.st.lapped == 0);
	for (int i = 0; i < 3; i++)
		assert_true(sr_put_t(d));
	assert_int_equal(sr_poll(d, now, 64), 3);
	assert_true(d->got[0].ticket == h);
	sr_expect_t(d, &d->got[0]);

	/* Exactly 2^32: a lap, not a lie.  The records hold older tickets:
	 * each waited for, then skipped. */
	h = d->r.st.tail + (1ull << 32);
	sr_set_head(d, h);
	assert_int_equal(sr_poll(d, now, 64), 0);
	assert_true(d->r.st.resyncs == 2);
	assert_true(d->r.st.lapped == (1ull << 32) - 8);
	assert_true(d->r.st.tail == h - 8);
	(void)sr_drain(d, now);
	assert_true(d->r.st.skipped == 8);
	sr_free(d);
}

/* max bounds the tickets a poll consumes, whatever becomes of them
 * (delivered, bad, lapped); a bulk lap comes on top. */
static void test_max(void **state)
{
	struct sr *d = sr_new(16, 0, false);
	uint64_t t;

	(void)state;
	for (int i = 0; i < 10; i++)
		assert_true(sr_put_t(d));
	assert_int_equal(sr_poll(d, 1 * MS, 3), 3);
	assert_true(d->r.st.tail == 3);
	assert_int_equal(sr_poll(d, 1 * MS, 0), 0);
	assert_true(d->r.st.tail == 3);
	assert_int_equal(sr_poll(d, 1 * MS, 1), 1);
	assert_true(d->got[0].ticket == 3);
	assert_int_equal(sr_poll(d, 1 * MS, 64), 6);
	/* Two bad, one lapped, then one good: each a step. */
	t = sr_take(d);
	sr_hand(d, t, SNAP_FP_MAX + 1, 2 * t + 2);
	t = sr_take(d);
	sr_hand(d, t, 3, 2 * t + 2 + 2 * 16);
	t = sr_take(d);
	sr_hand(d, t, 1ull << 32, 2 * t + 2);
	assert_true(sr_put_t(d));
	assert_int_equal(sr_poll(d, 1 * MS, 2), 0);
	assert_true(d->r.st.tail == 12);
	assert_true(d->r.st.bad == 1 && d->r.st.lapped == 1);
	assert_int_equal(sr_poll(d, 1 * MS, 1), 0);
	assert_true(d->r.st.bad == 2 && d->r.st.tail == 13);
	assert_int_equal(sr_poll(d, 1 * MS, 1), 1);
	assert_true(d->got[0].ticket == 13);
	sr_free(d);

	/* 20 puts on a ring of 8, max 2: 12 lapped at once, then 2. */
	d = sr_new(8, 0, false);
	for (int i = 0; i < 20; i++)
		assert_true(sr_put_t(d));
	assert_int_equal(sr_poll(d, 1 * MS, 2), 2);
	assert_true(d->r.st.lapped == 12 && d->r.st.tail == 14);
	assert_true(d->got[0].ticket == 12);
	/* max 0: only the bulk lap moves the tail. */
	for (int i = 0; i < 10; i++)
		assert_true(sr_put_t(d));
	assert_int_equal(sr_poll(d, 1 * MS, 0), 0);
	assert_true(d->r.st.tail == 30 - 8 && d->r.st.lapped == 12 + 8);
	assert_int_equal(sr_poll(d, 1 * MS, 0), 0);
	assert_true(d->r.st.tail == 22);
	sr_free(d);
}

/* A reader started on a ring already written (head far from 0): the
 * tail starts at the head, and nothing before it is counted. */
static void test_start_midway(void **state)
{
	const uint64_t head0 = 1000003;
	struct sr *d = sr_new(4, head0, false);

	(void)state;
	assert_true(snapreader_pending(&d->r) == 0);
	for (int i = 0; i < 3; i++)
		assert_true(sr_put_t(d));
	assert_true(snapreader_pending(&d->r) == 3);
	assert_int_equal(sr_poll(d, 1 * MS, 64), 3);
	assert_true(d->got[0].ticket == head0);
	sr_expect_t(d, &d->got[2]);
	assert_true(d->r.st.taken == 3 && d->r.st.tail == head0 + 3);
	assert_true(d->r.st.lapped == 0);
	sr_free(d);
}

/* ---- a torn copy, forced ---- */

/* The page the trap protects, and what its handler does: restore the
 * page, then store seq as a writer a lap ahead that took the record
 * while the reader copied it. */
static struct {
	char *page;
	size_t len;
	CTP_ATOMIC(uint64_t) * seq;
	uint64_t to;
	volatile sig_atomic_t hits;
} sr_trap;

static void sr_trap_handler(int sig, siginfo_t *si, void *uc)
{
	char *a = si->si_addr;

	(void)uc;
	if (!sr_trap.page || a < sr_trap.page ||
	    a >= sr_trap.page + sr_trap.len) {
		signal(sig, SIG_DFL); /* not ours: fault again, and die */
		return;
	}
	mprotect(sr_trap.page, sr_trap.len, PROT_READ | PROT_WRITE);
	/* relaxed: the same thread reads it back (the reader's re-check). */
	sr_st(sr_trap.seq, sr_trap.to);
	sr_trap.hits++;
}

/* The reader copies record 0 (ticket 0, 8 KiB of stack) and faults on
 * the page in the middle of its stack words; while it is stopped there,
 * the record is taken by ticket 8 (odd) or completed by it.  The copy's
 * re-check sees seq moved: torn, not delivered, and the reader goes on. */
static void test_torn_forced(void **state)
{
	long pg = sysconf(_SC_PAGESIZE);

	(void)state;
	/* A page must fit within a record's 8 KiB of stack words. */
	if (pg <= 0 || pg > (long)SNAP_COPY_MAX / 2) {
		skip();
		return;
	}
	for (int complete = 0; complete < 2; complete++) {
		struct sr *d = sr_new(8, 0, true);
		struct sigaction sa = {0}, old;
		char *first = (char *)sr_rec(d, 0)->stack;
		char *page = (char *)(((uintptr_t)first + (uintptr_t)pg) &
				      ~((uintptr_t)pg - 1));

		assert_true(sr_put(d, 3, SNAP_COPY_MAX));
		assert_true(sr_put_t(d));
		/* The protected page holds stack words only. */
		assert_true(page + pg <= first + SNAP_COPY_MAX);
		sr_trap.page = page;
		sr_trap.len = (size_t)pg;
		sr_trap.seq = &sr_rec(d, 0)->seq;
		sr_trap.to = 2 * 8 + 1 + (uint64_t)complete;
		sr_trap.hits = 0;
		sa.sa_sigaction = sr_trap_handler;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		assert_int_equal(sigaction(SIGSEGV, &sa, &old), 0);
		assert_int_equal(mprotect(page, (size_t)pg, PROT_NONE), 0);
		assert_int_equal(sr_poll(d, 1 * MS, 1), 0);
		assert_int_equal(sigaction(SIGSEGV, &old, NULL), 0);
		sr_trap.page = NULL;
		assert_int_equal(sr_trap.hits, 1);
		assert_true(d->r.st.torn == 1 && d->r.st.tail == 1);
		assert_true(d->r.st.taken == 0);
		/* Ticket 1 as usual. */
		assert_int_equal(sr_poll(d, 1 * MS, 64), 1);
		assert_true(d->got[0].ticket == 1);
		sr_expect_t(d, &d->got[0]);
		sr_free(d);
	}
}

/* snap_view_init: a mapping is trusted only when its header is exactly
 * the ring the engine makes, of exactly the size the mapping has. */
static void test_view_init(void **state)
{
	const uint32_t records = 4;
	const uint64_t size = snap_region_size(records);
	struct snap_header *h = aligned_alloc(64, size);
	struct snap_view v = {0};

	(void)state;
	assert_non_null(h);
	memset(h, 0, size);
	sr_header(h, records, size);
	assert_true(snap_view_init(&v, h, size));
	assert_true(v.hdr == h && v.mask == records - 1);
	assert_true((char *)v.rec == (char *)h + SNAP_HEADER_SIZE);
	/* The size of the mapping. */
	assert_false(snap_view_init(&v, h, size - 1));
	assert_false(snap_view_init(&v, h, size + 8));
	assert_false(snap_view_init(&v, h, SNAP_HEADER_SIZE));
	assert_false(snap_view_init(&v, h, SNAP_HEADER_SIZE - 1));
	assert_false(snap_view_init(&v, h, 0));
	/* Each header field. */
#define SR_BROKEN(field, value)                                                \
	do {                                                                   \
		sr_header(h, records, size);                                   \
		h->field = value;                                              \
		assert_false(snap_view_init(&v, h, size));                     \
	} while (0)
	SR_BROKEN(magic, SNAP_MAGIC ^ 1);
	SR_BROKEN(magic, 0);
	SR_BROKEN(version, SNAP_VERSION + 1);
	SR_BROKEN(version, 0);
	SR_BROKEN(header_size, SNAP_HEADER_SIZE * 2);
	SR_BROKEN(record_size, sizeof(struct snap_record) - 64);
	SR_BROKEN(fp_max, SNAP_FP_MAX * 2);
	SR_BROKEN(copy_max, SNAP_COPY_MAX / 2);
	SR_BROKEN(records_offset, 0);
	SR_BROKEN(region_size, size + 4096);
	SR_BROKEN(records, records * 2);
	SR_BROKEN(records, records - 1);
	SR_BROKEN(records, 1);
	SR_BROKEN(records, 0);
#undef SR_BROKEN
	/* Records not a power of two, with a size to match (3 records'
	 * worth): snap_region_size says 0, so no size matches. */
	{
		uint64_t s3 = SNAP_HEADER_SIZE + 3 * sizeof(struct snap_record);

		sr_header(h, 3, s3);
		assert_false(snap_view_init(&v, h, s3));
		/* Out of range: too many, with a consistent size. */
		sr_header(h, SNAP_RECORDS_LIMIT * 2,
			  SNAP_HEADER_SIZE +
				  (uint64_t)SNAP_RECORDS_LIMIT * 2 *
					  sizeof(struct snap_record));
		assert_false(snap_view_init(&v, h, h->region_size));
	}
	assert_true(snap_region_size(1) == 0 && snap_region_size(0) == 0);
	assert_true(snap_region_size(6) == 0);
	assert_true(snap_region_size(SNAP_RECORDS_LIMIT * 2) == 0);
	assert_true(snap_region_size(2) ==
		    SNAP_HEADER_SIZE + 2 * sizeof(struct snap_record));
	assert_true(snap_region_size(SNAP_RECORDS_LIMIT) != 0);
	/* And the whole header again: still fine. */
	sr_header(h, records, size);
	assert_true(snap_view_init(&v, h, size));
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_then_poll),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_lapped),
		cmocka_unit_test(test_later_ticket),
		cmocka_unit_test(test_unfinished_waited),
		cmocka_unit_test(test_gave_up),
		cmocka_unit_test(test_busy),
		cmocka_unit_test(test_bad_counts),
		cmocka_unit_test(test_resync),
		cmocka_unit_test(test_clock_back),
		cmocka_unit_test(test_max),
		cmocka_unit_test(test_start_midway),
		cmocka_unit_test(test_torn_forced),
		cmocka_unit_test(test_view_init),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
