/*
 * test-pptreader: the cursor over a ppt data block (src/engine/ppt/pptreader.c)
 * against a block written by a tiny writer in this file that follows the
 * multithreaded protocol of corotop/ppt.h (seqnos 0, front, body, back),
 * one step at a time so that a test can leave a frame half written or a
 * taken index never written.
 *
 * Frames here are 16 bytes: front @0, payload @4 (a function of the index),
 * pad @8, back @12.  After every poll the accounting invariant is checked:
 * delivered + lost + torn == the indexes between first and the cursor
 * (index 0 is never one: the writer skips it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/ppt/pptreader.h"

#define FS 16u
#define MS 1000000ull

struct block {
	unsigned char *b;
	uint64_t n;
	uint32_t next; /* the writer's index counter */
};

static void block_init(struct block *k, uint64_t n, uint32_t first)
{
	k->b = calloc(n, FS); /* exactly the block: ASan sees any overrun */
	assert_non_null(k->b);
	k->n = n;
	k->next = first;
}

static uint32_t payload_of(uint32_t i)
{
	return i * 2654435761u ^ 0x5bd1e995u;
}

static unsigned char *slot(struct block *k, uint32_t i)
{
	return k->b + (i % k->n) * FS;
}

static void put_u32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* Take the next index, as fetch_add on the writer's counter would. */
static uint32_t take(struct block *k)
{
	uint32_t i = k->next++;

	if (i == 0)
		i = k->next++;
	return i;
}

/* The first half of a write: seqnos zeroed, front stored, body written;
 * back not yet (a torn frame if the writer stops here). */
static void write_begin(struct block *k, uint32_t i)
{
	unsigned char *s = slot(k, i);

	put_u32(s, 0);
	put_u32(s + 12, 0);
	put_u32(s, i);
	put_u32(s + 4, payload_of(i));
}

static void write_end(struct block *k, uint32_t i)
{
	put_u32(slot(k, i) + 12, i);
}

static uint32_t write_frame(struct block *k)
{
	uint32_t i = take(k);

	write_begin(k, i);
	write_end(k, i);
	return i;
}

/* Indexes in [first, cursor), 0 excluded. */
static uint64_t span(uint32_t first, uint32_t cursor)
{
	uint32_t d = cursor - first;

	return d - (first != 0 && (uint32_t)(0u - first) < d);
}

struct rd {
	struct pptreader r;
	uint32_t first;
	uint64_t base; /* indexes accounted before first */
	uint32_t last; /* last index delivered, 0: none */
	uint32_t idx[64];
	unsigned char buf[64 * FS];
};

static void rd_init(struct rd *d, struct block *k, uint32_t first)
{
	memset(d, 0, sizeof(*d));
	pptreader_init(&d->r, k->b, k->n, FS, 0, 12, first);
	d->first = d->r.cursor;
}

static void check_accounting(const struct rd *d)
{
	const struct pptreader_stats *s = &d->r.st;

	assert_true(s->delivered + s->lost + s->torn - d->base ==
		    span(d->first, d->r.cursor));
}

/* skip_existing moves the cursor without accounting: the invariant
 * restarts from the new cursor. */
static uint32_t rd_skip(struct rd *d)
{
	const struct pptreader_stats *s = &d->r.st;
	uint32_t c = pptreader_skip_existing(&d->r);

	d->base = s->delivered + s->lost + s->torn;
	d->first = c;
	check_accounting(d);
	return c;
}

/* One poll; checks each frame delivered is whole, in order, with its
 * payload, and the accounting. */
static size_t rd_poll(struct rd *d, uint64_t now, size_t max)
{
	size_t n;

	assert_true(max <= 64);
	n = pptreader_poll(&d->r, now, d->buf, d->idx, max);
	assert_true(n <= max);
	for (size_t j = 0; j < n; j++) {
		const unsigned char *f = d->buf + j * FS;
		uint32_t front, back, pay;

		memcpy(&front, f, 4);
		memcpy(&pay, f + 4, 4);
		memcpy(&back, f + 12, 4);
		assert_int_not_equal(d->idx[j], 0);
		assert_int_equal(front, d->idx[j]);
		assert_int_equal(back, d->idx[j]);
		assert_int_equal(pay, payload_of(d->idx[j]));
		if (d->last)
			assert_true((int32_t)(d->idx[j] - d->last) > 0);
		d->last = d->idx[j];
	}
	check_accounting(d);
	return n;
}

static void test_in_order(void **state)
{
	struct block k;
	struct rd d;
	uint64_t written = 0, got = 0;

	(void)state;
	block_init(&k, 8, 1);
	rd_init(&d, &k, 1);
	assert_int_equal(d.r.lookahead, 64); /* used up to nframes - 1 */
	assert_true(d.r.stall_ns == 100 * MS);
	/* Nothing written: nothing delivered, one stall. */
	assert_int_equal(rd_poll(&d, 0, 4), 0);
	assert_int_equal(d.r.st.stalls, 1);
	for (int i = 0; i < 5; i++)
		write_frame(&k);
	assert_int_equal(rd_poll(&d, 0, 2), 2);
	assert_int_equal(d.idx[0], 1);
	assert_int_equal(d.idx[1], 2);
	assert_int_equal(rd_poll(&d, 0, 2), 2);
	assert_int_equal(rd_poll(&d, 0, 2), 1);
	assert_int_equal(d.idx[0], 5);
	assert_int_equal(rd_poll(&d, 0, 2), 0);
	got = 5;
	written = 5;
	/* Many rounds: 3 written, polled 2 at a time until it runs dry. */
	for (int round = 0; round < 200; round++) {
		size_t n;

		for (int i = 0; i < 3; i++)
			write_frame(&k);
		written += 3;
		do {
			n = rd_poll(&d, 0, 2);
			got += n;
		} while (n == 2);
	}
	assert_true(got == written);
	assert_true(d.r.st.delivered == written);
	assert_true(d.r.st.lost == 0 && d.r.st.torn == 0);
	assert_int_equal(d.r.cursor, written + 1);
	free(k.b);
}

/* The writer laps the reader by k * nframes + 3: the ring holds the newest
 * nframes, every older index is lost, counted once. */
static void test_lapped(void **state)
{
	(void)state;
	for (uint32_t laps = 1; laps <= 3; laps++) {
		struct block k;
		struct rd d;
		uint32_t w = laps * 8 + 3;
		size_t n;

		block_init(&k, 8, 1);
		rd_init(&d, &k, 1);
		for (uint32_t i = 0; i < w; i++)
			write_frame(&k);
		n = rd_poll(&d, 0, 64);
		assert_int_equal(n, 8);
		assert_true(d.r.st.lost == w - 8);
		for (uint32_t j = 0; j < 8; j++)
			assert_int_equal(d.idx[j], w - 7 + j);
		assert_int_equal(rd_poll(&d, 0, 64), 0);
		/* Lapped again while it has read half. */
		for (uint32_t i = 0; i < 20; i++)
			write_frame(&k);
		assert_int_equal(rd_poll(&d, 0, 3), 3);
		assert_true(d.r.st.lost == w - 8 + 12);
		assert_int_equal(d.idx[0], w + 13);
		free(k.b);
	}
}

/* A frame half written (front, no back) holds the reader until stall_ns
 * has passed and a whole newer frame exists; then it is torn. */
static void test_torn(void **state)
{
	struct block k;
	struct rd d;
	uint32_t t;

	(void)state;
	block_init(&k, 8, 1);
	rd_init(&d, &k, 1);
	for (int i = 0; i < 3; i++)
		write_frame(&k);
	assert_int_equal(rd_poll(&d, 1000, 8), 3);
	t = take(&k);
	write_begin(&k, t);		    /* its writer stops here */
	assert_int_equal(d.r.st.stalls, 1); /* the poll above stopped at 4 */
	assert_int_equal(rd_poll(&d, 1000, 8), 0);
	assert_int_equal(d.r.st.stalls, 2);
	assert_int_equal(d.r.stall_at, 4);
	assert_true(d.r.stall_torn);
	/* Long past stall_ns, but nothing newer: still waiting. */
	assert_int_equal(rd_poll(&d, 1000 + 10000 * MS, 8), 0);
	assert_int_equal(d.r.cursor, 4);
	/* Newer frames now; the stall's start set to a round time to check
	 * the threshold to the nanosecond. */
	write_frame(&k);
	write_frame(&k);
	d.r.stall_since = 2000 * MS;
	assert_int_equal(rd_poll(&d, 2000 * MS + 50 * MS, 8), 0);
	assert_int_equal(d.r.st.torn, 0);
	assert_int_equal(rd_poll(&d, 2000 * MS + 100 * MS - 1, 8), 0);
	assert_int_equal(d.r.st.torn, 0);
	assert_int_equal(rd_poll(&d, 2000 * MS + 100 * MS, 8), 2);
	assert_int_equal(d.r.st.torn, 1);
	assert_int_equal(d.r.st.lost, 0);
	assert_int_equal(d.idx[0], 5);
	assert_int_equal(d.idx[1], 6);
	/* The torn frame completes late: the reader has moved on. */
	write_end(&k, t);
	assert_int_equal(rd_poll(&d, 3000 * MS, 8), 0);
	assert_int_equal(d.r.st.delivered, 5);
	free(k.b);
}

/* The writer took an index and died before writing anything: the slot
 * still holds the frame nframes older.  Lost after the stall. */
static void test_never_written(void **state)
{
	struct block k;
	struct rd d;
	uint32_t dead;

	(void)state;
	block_init(&k, 8, 1);
	rd_init(&d, &k, 1);
	d.r.stall_ns = 5 * MS;
	for (int i = 0; i < 8; i++)
		write_frame(&k);
	/* Delivered; the stall on 9 (not written yet) starts at 10 ms. */
	assert_int_equal(rd_poll(&d, 10 * MS, 64), 8);
	assert_int_equal(d.r.stall_at, 9);
	dead = take(&k); /* 9: slot 1 still holds 1 */
	assert_int_equal(dead, 9);
	write_frame(&k);
	write_frame(&k);
	assert_int_equal(rd_poll(&d, 10 * MS, 64), 0);
	assert_false(d.r.stall_torn);
	assert_int_equal(rd_poll(&d, 14 * MS, 64), 0);
	assert_int_equal(rd_poll(&d, 15 * MS, 64), 2);
	assert_int_equal(d.idx[0], 10);
	assert_int_equal(d.idx[1], 11);
	assert_int_equal(d.r.st.lost, 1);
	assert_int_equal(d.r.st.torn, 0);
	/* A lookahead of 0 never finds the newer frame: it waits. */
	dead = take(&k);
	write_frame(&k);
	d.r.lookahead = 0;
	assert_int_equal(rd_poll(&d, 20 * MS, 64), 0);
	assert_int_equal(rd_poll(&d, 100 * MS, 64), 0);
	assert_int_equal(d.r.cursor, dead);
	d.r.lookahead = 1;
	assert_int_equal(rd_poll(&d, 100 * MS, 64), 1);
	assert_int_equal(d.r.st.lost, 2);
	/* The poll above stopped at 14 at 100 ms.  A clock that goes back
	 * does not expire that stall. */
	dead = take(&k);
	assert_int_equal(d.r.stall_at, dead);
	write_frame(&k);
	assert_int_equal(rd_poll(&d, 90 * MS, 64), 0);
	assert_int_equal(rd_poll(&d, 104 * MS, 64), 0);
	assert_int_equal(rd_poll(&d, 105 * MS, 64), 1);
	assert_int_equal(d.r.st.lost, 3);
	free(k.b);
}

/* Indexes wrap at 2^32 and skip 0. */
static void test_wrap(void **state)
{
	struct block k;
	struct rd d;
	uint32_t start = UINT32_MAX - 5, want = start;
	uint64_t got = 0;

	(void)state;
	block_init(&k, 8, start);
	rd_init(&d, &k, start);
	for (int round = 0; round < 10; round++) {
		size_t n;

		write_frame(&k);
		write_frame(&k);
		do {
			n = rd_poll(&d, 0, 3);
			for (size_t j = 0; j < n; j++) {
				assert_int_equal(d.idx[j], want);
				want = want + 1 ? want + 1 : 1;
			}
			got += n;
		} while (n == 3);
	}
	assert_true(got == 20);
	assert_int_equal(d.r.cursor, 15);
	assert_true(d.r.st.lost == 0);
	free(k.b);

	/* Lapped across the wrap: slots hold 1..6 and UINT32_MAX. */
	block_init(&k, 8, start);
	rd_init(&d, &k, start);
	for (int i = 0; i < 12; i++)
		write_frame(&k);
	assert_int_equal(rd_poll(&d, 0, 64), 7);
	assert_int_equal(d.idx[0], UINT32_MAX);
	for (uint32_t j = 1; j < 7; j++)
		assert_int_equal(d.idx[j], j);
	assert_int_equal(d.r.st.lost, 5);
	assert_int_equal(d.r.cursor, 7);
	free(k.b);

	/* first == 0 means 1. */
	block_init(&k, 4, 1);
	rd_init(&d, &k, 0);
	assert_int_equal(d.r.cursor, 1);
	free(k.b);
}

static void test_skip_existing(void **state)
{
	struct block k;
	struct rd d;

	(void)state;
	block_init(&k, 8, 1);
	rd_init(&d, &k, 1);
	/* An empty block: the cursor stays. */
	assert_int_equal(rd_skip(&d), 1);
	for (int i = 0; i < 5; i++)
		write_frame(&k);
	write_begin(&k, take(&k)); /* 6, torn: not whole, not counted */
	assert_int_equal(rd_skip(&d), 6);
	write_end(&k, 6);
	write_frame(&k);
	assert_int_equal(rd_poll(&d, 0, 64), 2);
	assert_int_equal(d.idx[0], 6);
	assert_int_equal(d.idx[1], 7);
	/* Lapped many times: past the newest. */
	for (int i = 0; i < 20; i++)
		write_frame(&k);
	assert_int_equal(rd_skip(&d), 28);
	assert_int_equal(rd_poll(&d, 0, 64), 0);
	write_frame(&k);
	assert_int_equal(rd_poll(&d, 0, 64), 1);
	assert_int_equal(d.idx[0], 28);
	/* A cursor already past what the block holds stays. */
	d.r.cursor = 40;
	assert_int_equal(rd_skip(&d), 40);
	free(k.b);
}

/* sync: the client's indexes did not start at our attach (the generator
 * counts unattached saves): the cursor goes to the oldest whole frame the
 * ring still holds, and nothing before it is counted. */
static void test_sync(void **state)
{
	struct block k;
	struct rd d;

	(void)state;
	block_init(&k, 8, 1000);
	rd_init(&d, &k, 1);
	/* Nothing whole yet: no sync, cursor unchanged. */
	assert_false(pptreader_sync(&d.r));
	assert_int_equal(d.r.cursor, 1);
	write_begin(&k, take(&k)); /* 1000, torn */
	assert_false(pptreader_sync(&d.r));
	write_end(&k, 1000);
	for (int i = 0; i < 3; i++)
		write_frame(&k); /* 1001..1003 */
	assert_true(pptreader_sync(&d.r));
	assert_int_equal(d.r.cursor, 1000);
	d.first = d.r.cursor;
	assert_int_equal(rd_poll(&d, 0, 64), 4);
	assert_int_equal(d.idx[0], 1000);
	assert_int_equal(d.idx[3], 1003);
	/* Lapped: the oldest frame still in the ring, not a leftover. */
	for (int i = 0; i < 13; i++)
		write_frame(&k); /* 1004..1016: slots hold 1009..1016 */
	assert_true(pptreader_sync(&d.r));
	assert_int_equal(d.r.cursor, 1009);
	free(k.b);
}

/* A resize: a new, bigger block; the cursor stays. */
static void test_rebase(void **state)
{
	struct block a, b;
	struct rd d;

	(void)state;
	block_init(&a, 4, 1);
	rd_init(&d, &a, 1);
	for (int i = 0; i < 4; i++)
		write_frame(&a);
	assert_int_equal(rd_poll(&d, 0, 64), 4);
	block_init(&b, 16, a.next);
	pptreader_rebase(&d.r, b.b, b.n);
	assert_int_equal(d.r.cursor, 5);
	assert_int_equal(rd_poll(&d, 0, 64), 0);
	for (int i = 0; i < 12; i++)
		write_frame(&b);
	assert_int_equal(rd_poll(&d, 0, 64), 12);
	assert_int_equal(d.idx[0], 5);
	assert_int_equal(d.idx[11], 16);
	assert_int_equal(d.r.st.lost, 0);
	free(a.b);
	free(b.b);
}

/* Geometry that cannot be: nothing read, nothing counted. */
static void test_bad_geometry(void **state)
{
	struct block k;
	struct pptreader r;
	unsigned char buf[64];
	uint32_t idx[4];

	(void)state;
	block_init(&k, 4, 1);
	for (int i = 0; i < 4; i++)
		write_frame(&k);
	pptreader_init(&r, k.b, k.n, FS, 0, 13, 1); /* back past the end */
	assert_int_equal(pptreader_poll(&r, 0, buf, idx, 4), 0);
	assert_int_equal(pptreader_skip_existing(&r), 1);
	pptreader_init(&r, k.b, k.n, 3, 0, 0, 1);
	assert_int_equal(pptreader_poll(&r, 0, buf, idx, 4), 0);
	pptreader_init(&r, k.b, 0, FS, 0, 12, 1);
	assert_int_equal(pptreader_poll(&r, 0, buf, idx, 4), 0);
	pptreader_init(&r, NULL, 4, FS, 0, 12, 1);
	assert_int_equal(pptreader_poll(&r, 0, buf, idx, 4), 0);
	pptreader_init(&r, k.b, UINT64_MAX / 2, FS, 0, 12, 1);
	assert_int_equal(pptreader_poll(&r, 0, buf, idx, 4), 0);
	assert_true(r.st.delivered + r.st.lost + r.st.torn + r.st.stalls == 0);
	/* Unaligned seqnos are read too (byte by byte). */
	pptreader_init(&r, k.b + 1, 3, FS, 0, 12, 1);
	(void)pptreader_poll(&r, 0, buf, idx, 4);
	assert_int_equal(r.st.delivered + r.st.lost + r.st.torn, r.cursor - 1);
	free(k.b);
}

/* A block claiming a loss of 2^30 frames: the indexes a whole ring behind
 * the frame in the cursor's slot are counted at once, not walked, and the
 * frames still there are delivered in the same poll. */
static void test_bounded_poll(void **state)
{
	struct block k;
	struct rd d;

	(void)state;
	block_init(&k, 4, 1u << 30);
	for (int i = 0; i < 4; i++)
		write_frame(&k);
	rd_init(&d, &k, 1);
	assert_int_equal(rd_poll(&d, 0, 4), 4);
	assert_int_equal(d.idx[0], 1u << 30);
	assert_true(d.r.st.lost == (1u << 30) - 1);
	assert_int_equal(rd_poll(&d, 0, 4), 0);
	free(k.b);
}

/* A reader left 2^31 frames behind (corotop stopped while the writer ran
 * on): serial order sees the writer's frames as old.  After a stall period
 * the reader notices, counts the gap lost and delivers the ring. */
static void test_lag_2_31(void **state)
{
	const uint32_t ahead = (1u << 31) + 100;
	struct block k;
	struct rd d;

	(void)state;
	block_init(&k, 8, 1 + ahead);
	for (int i = 0; i < 8; i++)
		write_frame(&k);
	rd_init(&d, &k, 1);
	d.r.stall_ns = 1000;
	assert_int_equal(rd_poll(&d, 0, 8), 0);
	assert_int_equal(rd_poll(&d, 500, 8), 0);
	/* Stalled long enough: the writer is found ahead, the ring read. */
	assert_int_equal(rd_poll(&d, 2000, 8), 8);
	assert_int_equal(d.idx[0], 1 + ahead);
	assert_int_equal(d.idx[7], 8 + ahead);
	assert_true(d.r.st.lost == ahead);
	free(k.b);
}

/* The same jump across the 32-bit wrap: index 0 is never counted. */
static void test_lapped_wrap(void **state)
{
	struct block k;
	struct rd d;

	(void)state;
	block_init(&k, 4, 5); /* the writer at 5..12, the reader from 1 */
	for (int i = 0; i < 8; i++)
		write_frame(&k);
	rd_init(&d, &k, 1);
	assert_int_equal(rd_poll(&d, 0, 8), 4);
	assert_int_equal(d.idx[0], 9);
	assert_true(d.r.st.lost == 8);
	free(k.b);
	block_init(&k, 4, UINT32_MAX - 5);
	for (int i = 0; i < 12; i++)
		write_frame(&k); /* ... 0xffffffff, then 1, 2, ... 6 */
	rd_init(&d, &k, UINT32_MAX - 5);
	assert_int_equal(rd_poll(&d, 0, 8), 4);
	assert_int_equal(d.idx[0], 3);
	assert_int_equal(d.idx[3], 6);
	/* UINT32_MAX-5 .. UINT32_MAX and 1, 2: 8 indexes, 0 not one. */
	assert_true(d.r.st.lost == 8);
	free(k.b);
}

/* A lying block: four whole frames a quarter of the index space apart, in
 * the slots their indexes name, so that each is "newer" than the cursor
 * the one before left.  Unchecked, one poll walks the cursor round the
 * 32-bit space 2^18 times and counts 2^32 lost per turn.  Lost may never
 * exceed the reader's credit: PPTREADER_CREDIT_MAX, plus one per
 * nanosecond of poll clock. */
static void test_garbage_bounded(void **state)
{
	struct block k;
	struct rd d;
	uint64_t now = 0;

	(void)state;
	block_init(&k, 4, 1);
	for (uint32_t s = 0; s < 4; s++) {
		uint32_t i = s * (1u << 30) + s; /* slot s; 0 -> 4 */

		if (s == 0)
			i = 4;
		put_u32(k.b + s * FS, i);
		put_u32(k.b + s * FS + 12, i);
	}
	rd_init(&d, &k, 1);
	for (int p = 0; p < 8; p++) {
		(void)rd_poll(&d, now, 64); /* checks the accounting */
		assert_true(d.r.st.lost + d.r.st.torn <=
			    PPTREADER_CREDIT_MAX + now);
		now += 1000;
	}
	/* The first poll spent the whole budget; the rest had ~1000 each. */
	assert_true(d.r.st.lost >= PPTREADER_CREDIT_MAX - (1u << 30));
	free(k.b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_lapped),
		cmocka_unit_test(test_torn),
		cmocka_unit_test(test_never_written),
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_skip_existing),
		cmocka_unit_test(test_sync),
		cmocka_unit_test(test_rebase),
		cmocka_unit_test(test_bad_geometry),
		cmocka_unit_test(test_bounded_poll),
		cmocka_unit_test(test_lapped_wrap),
		cmocka_unit_test(test_lag_2_31),
		cmocka_unit_test(test_garbage_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
