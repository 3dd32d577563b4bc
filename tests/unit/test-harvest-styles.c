/*
 * test-harvest-styles: the harvest against every cTP writing style -- the
 * literal style of a writer that follows the spec's text (seq 1, 2, 3, ...
 * in slot seq % 8, odd seqs complete), the shipped SDKs' per-slot seqlock,
 * corotop's station style, and corotop's deep rings -- told apart from the
 * seqs alone, one region at a time, with exact books: delivered + lost (+
 * literal copies given up as torn) equals what the highest seq implies.
 */
#include "harvest-fixture.h"

#include "engine/engine_internal.h"

/* ---- writers ---- */

/* Literal: the station's seq runs 1, 2, 3...; event n = seq - 1 goes to
 * slot seq % 8, payload first, seq last, once. */
static void lit_write(struct fx *f, uint32_t st)
{
	uint64_t seq = ++f->up_count[st];
	struct ctp_epoch *e = &f->st[st].slots[seq % CTP_SLOTS];

	put_payload(e, st, seq - 1);
	atomic_store_explicit(&e->seq, seq, memory_order_release);
}

/* ---- deep rings ---- */

#define DEPTH 64u

static struct ctp_deep *deep_of(struct fx *f)
{
	return (struct ctp_deep *)(void *)((char *)f->hdr +
					   ctp_deep_offset(NST));
}

static struct ctp_epoch *deep_ring(struct fx *f, uint32_t st)
{
	return (struct ctp_epoch *)(void *)((char *)deep_of(f) +
					    CTP_DEEP_HEADER) +
	       (size_t)st * DEPTH;
}

static int setup_deep(void **state)
{
	struct fx *f = fx_create((size_t)ctp_deep_size(NST, DEPTH),
				 CTP_HX_FREELIST | CTP_HX_DEEP);

	deep_of(f)->magic = CTP_DEEP_MAGIC;
	deep_of(f)->depth = DEPTH;
	deep_of(f)->stations = NST;
	harvest_set_deep(&f->h, deep_of(f), DEPTH, 0);
	*state = f;
	return 0;
}

static void deep_open(struct fx *f, uint32_t i, uint64_t pid, uint64_t first)
{
	ours_open(f, i, pid, first);
	f->st[i].ext.flags = CTP_STX_SEQ_STATION | CTP_STX_DEEP;
}

static void deep_write(struct fx *f, uint32_t st, uint64_t n)
{
	struct ctp_epoch *e = &deep_ring(f, st)[n % DEPTH];

	atomic_store(&e->seq, 2 * n + 1);
	put_payload(e, st, n);
	atomic_store(&e->seq, ctp_event_seq(n));
}

/* ---- literal ---- */

static void test_literal_paced_exact(void **state)
{
	struct fx *f = *state;

	for (int i = 0; i < 100; i++) {
		lit_write(f, 1);
		assert_int_equal(scan(f), 1);
	}
	assert_int_equal(f->h.state[1].style, HARVEST_STYLE_LITERAL);
	assert_int_equal(f->r->delivered[1], 100);
	assert_int_equal(f->h.count.lost, 0);
	assert_int_equal(f->h.count.torn, 0);
	assert_int_equal(f->r->last_n[1], 99);
	assert_int_equal(f->r->bad, 0);
}

/* A literal writer's odd seqs are complete: the very first event (seq 1,
 * slot 1) is delivered, and so is each odd one after it. */
static void test_literal_odd_seqs_complete(void **state)
{
	struct fx *f = *state;

	lit_write(f, 0);
	assert_int_equal(scan(f), 1);
	assert_string_equal(logstr(f->r, 0), "O E0");
	lit_write(f, 0);
	lit_write(f, 0);
	assert_int_equal(scan(f), 2);
	assert_string_equal(logstr(f->r, 0), "O E0 E1 E2");
	assert_int_equal(f->h.count.lost + f->h.count.torn, 0);
	assert_int_equal(f->r->bad, 0);
}

/* One event, then nothing: every style delivers it. */
static void test_one_event_stations(void **state)
{
	struct fx *f = *state;

	lit_write(f, 0);
	up_write(f, 1);
	ours_open(f, 2, 0xC, 0);
	ours_write(f, 2, 0);
	assert_int_equal(scan(f), 3);
	assert_int_equal(f->h.state[0].style, HARVEST_STYLE_LITERAL);
	assert_int_equal(f->h.state[1].style, HARVEST_STYLE_SEQLOCK);
	assert_int_equal(f->h.state[2].style, HARVEST_STYLE_STATION);
	for (uint32_t i = 0; i < 3; i++)
		assert_string_equal(logstr(f->r, i), "O E0");
	assert_int_equal(f->h.count.lost, 0);
	assert_int_equal(f->r->bad, 0);
}

/* A literal writer laps the ring: the lost count is exactly the events that
 * were overwritten, the oldest one left (whose slot the writer may be
 * rewriting) is given up as torn, and the newest seven are delivered. */
static void test_literal_lapping(void **state)
{
	struct fx *f = *state;

	lit_write(f, 0);
	assert_int_equal(scan(f), 1); /* decided: literal */
	for (int i = 0; i < 29; i++)
		lit_write(f, 0); /* seqs 2..30 */
	assert_int_equal(scan(f), 7);
	/* Events 1..21 overwritten (seqs 2..22), event 22 (seq 23) given up,
	 * events 23..29 delivered. */
	assert_int_equal(f->r->lost[0], 21);
	assert_int_equal(f->h.count.torn, 1);
	assert_int_equal(f->r->last_n[0], 29);
	assert_int_equal(f->r->delivered[0] + f->r->lost[0] + f->h.count.torn,
			 30);
	/* The writer goes on: nothing is held back or counted twice. */
	lit_write(f, 0);
	assert_int_equal(scan(f), 1);
	assert_int_equal(f->r->lost[0], 21);
	assert_int_equal(f->r->bad, 0);
}

/* A literal copy whose slot the writer is rewriting (seq + 7 published,
 * payload of seq + 8 half stored) is never delivered. */
static int lit_hook_calls;

static void lit_hook(struct ctp_epoch *e)
{
	(void)e;
	if (lit_hook_calls++ == 0)
		for (int i = 0; i < 7; i++)
			lit_write(F, 0); /* up to seq + 7, not + 8 */
}

static void test_literal_copy_overlapping_lap_discarded(void **state)
{
	struct fx *f = *state;

	lit_write(f, 0);
	assert_int_equal(scan(f), 1);
	lit_write(f, 0); /* event 1, seq 2 */
	lit_hook_calls = 0;
	harvest_test_after_copy = lit_hook;
	/* The copy of event 1 is taken, then the writer publishes seqs 3..9:
	 * seq 9 is seq 2 + 7, so the copy may overlap seq 10's payload. */
	scan(f);
	harvest_test_after_copy = NULL;
	assert_int_equal(f->h.count.torn, 1);
	assert_int_equal(f->r->lost[0], 0);
	assert_string_equal(logstr(f->r, 0), "O E0 E2 E3 E4 E5 E6 E7 E8");
	assert_int_equal(f->r->bad, 0);
}

/* ---- seqlock ---- */

static void test_seqlock_lapping(void **state)
{
	struct fx *f = *state;

	up_write(f, 0);
	assert_int_equal(scan(f), 1);
	for (int i = 0; i < 19; i++)
		up_write(f, 0); /* events 1..19 */
	assert_int_equal(scan(f), 8);
	assert_int_equal(f->r->lost[0], 11); /* events 1..11 */
	assert_int_equal(f->r->last_n[0], 19);
	assert_int_equal(f->h.state[0].style, HARVEST_STYLE_SEQLOCK);
	assert_int_equal(f->r->bad, 0);
}

/* ---- mixed, random: the books hold per station in every style ---- */

static uint64_t rs = 88172645463325252ull;

static uint64_t rnd64(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static void test_mixed_styles_books(void **state)
{
	struct fx *f = *state;
	uint64_t ours_n = 0;

	ours_open(f, 2, 0xC, 0);
	for (int it = 0; it < 20000; it++) {
		uint32_t st = (uint32_t)(rnd64() % 3);
		unsigned burst = (unsigned)(rnd64() % 12);

		for (unsigned b = 0; b < burst; b++) {
			if (st == 0)
				lit_write(f, 0);
			else if (st == 1)
				up_write(f, 1);
			else
				ours_write(f, 2, ours_n++);
		}
		if (rnd64() % 3 == 0)
			scan(f);
	}
	scan(f);
	assert_int_equal(f->h.state[0].style, HARVEST_STYLE_LITERAL);
	assert_int_equal(f->h.state[1].style, HARVEST_STYLE_SEQLOCK);
	assert_int_equal(f->h.state[2].style, HARVEST_STYLE_STATION);
	/* Everything written was delivered or counted, and nothing else. */
	assert_true(f->r->delivered[0] + f->r->lost[0] <= f->up_count[0]);
	assert_true(f->r->delivered[1] + f->r->lost[1] == f->up_count[1]);
	assert_true(f->r->delivered[2] + f->r->lost[2] == ours_n);
	/* Literal: the rest are the copies given up as torn. */
	assert_true(f->r->delivered[0] + f->r->lost[0] + f->h.count.torn ==
		    f->up_count[0]);
	assert_true(f->r->delivered[0] > 0 && f->r->delivered[1] > 0);
	assert_int_equal(f->r->bad, 0);
}

/* ---- undecided stations ---- */

static void test_undecided_shown_not_lost_then_decided(void **state)
{
	struct fx *f = *state;

	/* Seqs that fit no known writer: 3 in slot 0 is not literal, and
	 * slot 1 five writes ahead of slot 0 is not a seqlock. */
	atomic_store(&f->st[0].slots[0].seq, 3);
	atomic_store(&f->st[0].slots[1].seq, 10);
	assert_int_equal(scan(f), 0);
	assert_int_equal(f->r->opens[0], 1); /* shown at once */
	assert_int_equal(f->h.state[0].style, HARVEST_STYLE_UNKNOWN);
	fx_now_ns += HARVEST_DECIDE_NS / 2;
	assert_int_equal(scan(f), 0);
	assert_int_equal(f->h.state[0].style, HARVEST_STYLE_UNKNOWN);
	assert_int_equal(f->h.count.lost, 0);
	fx_now_ns += HARVEST_DECIDE_NS;
	scan(f);
	assert_int_equal(f->h.state[0].style, HARVEST_STYLE_SEQLOCK);
	assert_int_equal(f->h.count.styles[HARVEST_STYLE_SEQLOCK], 1);
}

/* ---- observers: history before the first scan is not loss ---- */

static void test_observer_history_before_start(void **state)
{
	struct fx *f = *state;

	harvest_finish(&f->h);
	assert_true(harvest_init(&f->h, f->hdr, NST, false));
	f->h.clock = fx_clock;
	ours_open(f, 0, 0xA, 0);
	for (uint64_t n = 0; n < 20; n++)
		ours_write(f, 0, n);
	for (int i = 0; i < 20; i++)
		up_write(f, 1);
	assert_int_equal(scan(f), 16);
	assert_int_equal(f->h.count.before_start, 24);
	assert_int_equal(f->h.count.lost, 0);
	/* From now on, a lap is a loss. */
	for (uint64_t n = 20; n < 40; n++)
		ours_write(f, 0, n);
	assert_int_equal(scan(f), 8);
	assert_int_equal(f->h.count.lost, 12);
	assert_int_equal(f->h.count.before_start, 24);
	assert_int_equal(f->r->bad, 0);
}

/* ---- deep rings ---- */

static void test_deep_ring_exact_and_lapped(void **state)
{
	struct fx *f = *state;

	deep_open(f, 0, 0xA, 0);
	for (uint64_t n = 0; n < 50; n++)
		deep_write(f, 0, n);
	assert_int_equal(scan(f), 50);
	assert_int_equal(f->h.state[0].style, HARVEST_STYLE_DEEP);
	/* The spec's slots stay untouched. */
	for (unsigned k = 0; k < CTP_SLOTS; k++)
		assert_true(atomic_load(&f->st[0].slots[k].seq) == 0);
	for (uint64_t n = 50; n < 200; n++)
		deep_write(f, 0, n);
	assert_int_equal(scan(f), DEPTH);
	assert_int_equal(f->r->lost[0], 150 - DEPTH);
	assert_int_equal(f->r->last_n[0], 199);
	assert_int_equal(f->r->delivered[0] + f->r->lost[0], 200);
	assert_int_equal(f->r->bad, 0);
}

static void test_deep_ring_recent(void **state)
{
	struct fx *f = *state;
	struct harvest_event ev[CTP_SLOTS];
	unsigned got;

	deep_open(f, 1, 0xB, 100);
	for (uint64_t n = 100; n < 103; n++)
		deep_write(f, 1, n);
	assert_int_equal(scan(f), 3);
	got = harvest_station_recent(&f->h, 1, 0xB, ev);
	assert_int_equal(got, 3);
	assert_int_equal(ev[0].n, 100);
	assert_int_equal(ev[2].n, 102);
	assert_int_equal(ev[2].slot, 102 % DEPTH);
	for (uint64_t n = 103; n < 130; n++)
		deep_write(f, 1, n);
	assert_int_equal(scan(f), 27);
	got = harvest_station_recent(&f->h, 1, 0xB, ev);
	assert_int_equal(got, CTP_SLOTS);
	assert_int_equal(ev[0].n, 122);
	assert_int_equal(ev[7].n, 129);
	assert_true(ev[7].seq == ctp_event_seq(129));
}

/* (R): a pass published to deep-ring writers only by the region's owner. */
static void test_pass_done_published(void **state)
{
	struct fx *f = *state;

	harvest_pass_done(&f->h, 12345);
	assert_true(atomic_load(&deep_of(f)->pass_ns) == 12345);
	f->h.recycle = false;
	harvest_pass_done(&f->h, 999);
	assert_true(atomic_load(&deep_of(f)->pass_ns) == 12345);
}

/* A deep station whose region has no deep area shows, but reads nothing. */
static void test_deep_station_without_area(void **state)
{
	struct fx *f = *state;

	deep_open(f, 0, 0xA, 0);
	assert_int_equal(scan(f), 0);
	assert_int_equal(f->r->opens[0], 1);
	assert_int_equal(f->h.count.lost, 0);
}

/* A scan's slack: the fullest station's share of its ring, and whether a
 * station without a deep ring wrote (issue 31: the engine paces by it). */
static void test_pass_slack(void **state)
{
	struct fx *f = *state;

	deep_open(f, 0, 0xA, 0);
	deep_open(f, 1, 0xB, 0);
	for (uint64_t n = 0; n < 16; n++)
		deep_write(f, 0, n);
	for (uint64_t n = 0; n < 4; n++)
		deep_write(f, 1, n);
	assert_int_equal(scan(f), 20);
	/* 16 of 64: a quarter. */
	assert_int_equal(f->h.pass_fill, 16u << 16 >> 6);
	assert_false(f->h.pass_shallow);
	/* Nothing new: no slack used. */
	assert_int_equal(scan(f), 0);
	assert_int_equal(f->h.pass_fill, 0);
	/* A station of the spec's eight slots: no slack to pace by. */
	ours_open(f, 2, 0xC, 0);
	ours_write(f, 2, 0);
	deep_write(f, 1, 4);
	assert_int_equal(scan(f), 2);
	assert_true(f->h.pass_shallow);
	assert_int_equal(f->h.pass_fill, 1u << 16 >> 3); /* 1 of 8 */
	assert_int_equal(f->h.count.lost, 0);
	assert_int_equal(f->r->bad, 0);
}

/* The pause after a busy pass (engine_harvest.c). */
static void test_slack_pause(void **state)
{
	(void)state;
	/* An eighth of a ring in 1 ms: a quarter more in 2 ms. */
	assert_int_equal(engine_slack_us(500, true, 1u << 13, false, 1000000),
			 2000);
	/* At least the interval, at most 10 ms. */
	assert_int_equal(engine_slack_us(500, true, 1u << 16, false, 100000),
			 500);
	assert_int_equal(engine_slack_us(500, true, 1, false, 1000000), 10000);
	/* No deep area, a shallow station, no events, no span: the
	 * interval. */
	assert_int_equal(engine_slack_us(500, false, 1u << 13, false, 1000000),
			 500);
	assert_int_equal(engine_slack_us(500, true, 1u << 13, true, 1000000),
			 500);
	assert_int_equal(engine_slack_us(500, true, 0, false, 1000000), 500);
	assert_int_equal(engine_slack_us(500, true, 1u << 13, false, 0), 500);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
#define TD(fn) cmocka_unit_test_setup_teardown(fn, setup_deep, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_literal_paced_exact),
		T(test_literal_odd_seqs_complete),
		T(test_one_event_stations),
		T(test_literal_lapping),
		T(test_literal_copy_overlapping_lap_discarded),
		T(test_seqlock_lapping),
		T(test_mixed_styles_books),
		T(test_undecided_shown_not_lost_then_decided),
		T(test_observer_history_before_start),
		TD(test_deep_ring_exact_and_lapped),
		TD(test_deep_ring_recent),
		TD(test_pass_done_published),
		T(test_deep_station_without_area),
		TD(test_pass_slack),
		T(test_slack_pause),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
