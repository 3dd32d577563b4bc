/*
 * test-replay-unrun: coroutines that corotop saw born but never saw run,
 * in a replay (replay.c rp_unrun, replay_moment.c) -- the signature of a
 * lost wakeup, so replay must show them as the live table did.
 *
 * One corotop-style trace (built in memory with the heph encoder):
 *
 *   probe 7   born 10 ms (id 1), never ran, corotop_death at 40 ms;
 *             born again 50 ms (id 4), runs [60,70], parked till the end;
 *   probe 8   born 20 ms (id 2), never ran, and born again at 45 ms (id 3)
 *             without a death (the probe id was reused: gone by then),
 *             and that one never ran either and is alive at the end;
 *   probe 9   born 5 ms (id 5), never ran, never died: alive at the end;
 *   probe 6   born 60 ms (id 6), never ran; its death, harvested at 82 ms,
 *             is written before the next birth, at 80 ms (id 7) by the
 *             probe's clock: 6 died at 82, 7 lives (file order, not time,
 *             says whose death it is).
 *
 * Checked at several moments: which coroutines are visible, their state,
 * state time and suspended time, ids; the steps (a death is a transition)
 * and histories (none) of those that never ran.  Another writer's trace
 * with a stray corotop_death (no `corotop` option) changes nothing.  And
 * stepping back over transitions at the same instant (a zero-length
 * interval) goes on to the one before, not stays.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "engine/heph/heph.h"
#include "engine/replay/replay.h"

#define MS 1000000ull

static uint8_t buf[1 << 14];

static void meta2(struct heph_enc *e, const char *name, uint64_t a, uint64_t b,
		  uint64_t c, int n)
{
	uint8_t v[24];
	uint64_t x[3] = {a, b, c};

	for (int k = 0; k < n; k++)
		for (int i = 0; i < 8; i++)
			v[8 * k + i] = (uint8_t)(x[k] >> (56 - 8 * i));
	assert_true(heph_enc_meta(e, name, v, (uint32_t)n * 8));
}

static size_t build(bool ours)
{
	struct heph_enc e;

	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_epoch(&e, 1));
	if (ours)
		assert_true(heph_enc_meta(&e, "corotop", "1", 1));
	meta2(&e, "corotop_birth", 9, 5 * MS, 5, 3);
	meta2(&e, "corotop_birth", 7, 10 * MS, 1, 3);
	meta2(&e, "corotop_birth", 8, 20 * MS, 2, 3);
	meta2(&e, "corotop_death", 7, 40 * MS, 0, 2);
	meta2(&e, "corotop_birth", 8, 45 * MS, 3, 3);
	meta2(&e, "corotop_birth", 7, 50 * MS, 4, 3);
	meta2(&e, "corotop_birth", 6, 60 * MS, 6, 3);
	meta2(&e, "corotop_death", 6, 82 * MS, 0, 2);
	meta2(&e, "corotop_birth", 6, 80 * MS, 7, 3);
	assert_true(heph_enc_event_begin(&e, 101, 0, 7, 60 * MS, 70 * MS,
					 "running"));
	assert_true(heph_enc_u64(&e, "addr", 0x4000));
	assert_true(heph_enc_event_end(&e) > 0);
	assert_true(heph_enc_event_begin(&e, 101, 1, 7, 70 * MS, 100 * MS,
					 "suspended"));
	assert_true(heph_enc_u64(&e, "addr", 0x4100));
	assert_true(heph_enc_event_end(&e) > 0);
	meta2(&e, "corotop_end", 100 * MS, 0, 0, 1);
	return e.len;
}

/* The coroutine with id `id` in s, or NULL. */
static const struct model_coro *by_id(const struct snapshot *s, uint64_t id)
{
	for (size_t i = 0; i < s->count; i++)
		if (s->coro[i].id == id)
			return &s->coro[i];
	return NULL;
}

static void state_is(const struct snapshot *s, uint64_t id, int state,
		     uint64_t state_ts)
{
	const struct model_coro *c = by_id(s, id);

	if (!c)
		fail_msg("id %llu not visible", (unsigned long long)id);
	assert_int_equal(c->state, state);
	assert_int_equal(c->state_ts, state_ts);
	assert_int_equal(c->switches, 0);
}

static void test_unrun(void **state)
{
	struct replay r;
	struct snapshot s;
	struct model_transition h[4];
	char err[128];

	(void)state;
	assert_true(replay_open_bytes(&r, buf, build(true), 5 * MS, err,
				      sizeof(err)));
	assert_int_equal(r.ncoro, 7);
	snapshot_init(&s);

	replay_snapshot(&r, 30 * MS, &s);
	assert_int_equal(s.count, 3); /* 5, 1, 2 */
	state_is(&s, 5, MODEL_SUSPENDED, 5 * MS);
	state_is(&s, 1, MODEL_SUSPENDED, 10 * MS);
	state_is(&s, 2, MODEL_SUSPENDED, 20 * MS);
	assert_null(by_id(&s, 3));

	/* 42 ms: 1 died at 40 (lingering 5 ms). */
	replay_snapshot(&r, 42 * MS, &s);
	state_is(&s, 1, MODEL_DEAD, 40 * MS);
	assert_int_equal(by_id(&s, 1)->susp_ns, 30 * MS);
	assert_int_equal(by_id(&s, 1)->dead_ts, 40 * MS);
	assert_int_equal(s.t.dead, 1);

	/* 47 ms: 1 gone (linger), 2 dead at 45 (its probe id reborn as 3). */
	replay_snapshot(&r, 47 * MS, &s);
	assert_null(by_id(&s, 1));
	state_is(&s, 2, MODEL_DEAD, 45 * MS);
	state_is(&s, 3, MODEL_SUSPENDED, 45 * MS);

	/* 84 ms: 6 died at 82, after 7's birth at 80 (both visible). */
	replay_snapshot(&r, 84 * MS, &s);
	state_is(&s, 6, MODEL_DEAD, 82 * MS);
	state_is(&s, 7, MODEL_SUSPENDED, 80 * MS);

	/* The end: 5, 3 and 7 never ran and are alive; 4 ran. */
	replay_snapshot(&r, 100 * MS, &s);
	assert_int_equal(s.count, 4);
	state_is(&s, 5, MODEL_SUSPENDED, 5 * MS);
	state_is(&s, 3, MODEL_SUSPENDED, 45 * MS);
	state_is(&s, 7, MODEL_SUSPENDED, 80 * MS);
	assert_int_equal(by_id(&s, 4)->switches, 2);
	assert_int_equal(s.t.coroutines_seen, 7);

	/* No history; a death is a step, both ways. */
	assert_int_equal(replay_history(&r, 1, 100 * MS, h, 4), 0);
	assert_int_equal(replay_step(&r, 1, 30 * MS, 1), 40 * MS);
	assert_int_equal(replay_step(&r, 1, 60 * MS, -1), 40 * MS);
	assert_int_equal(replay_step(&r, 5, 30 * MS, 1), 30 * MS);
	assert_int_equal(replay_step(&r, 5, 30 * MS, -1), 30 * MS);
	/* Any coroutine: from 30 ms the next is 1's death, then 2's. */
	assert_int_equal(replay_step(&r, 0, 30 * MS, 1), 40 * MS);
	assert_int_equal(replay_step(&r, 0, 40 * MS, 1), 45 * MS);
	snapshot_finish(&s);
	replay_close(&r);
}

/* Another writer's trace: births and deaths are corotop's, not its. */
static void test_foreign(void **state)
{
	struct replay r;
	char err[128];

	(void)state;
	assert_true(replay_open_bytes(&r, buf, build(false), 5 * MS, err,
				      sizeof(err)));
	assert_int_equal(r.ncoro, 1); /* (101, 7): one span set */
	replay_close(&r);
}

static void test_step_equal_starts(void **state)
{
	static const uint64_t st[][3] = {
		{100, 200, 1}, {200, 200, 0}, {200, 300, 1}, {300, 400, 0}};
	struct heph_enc e;
	struct replay r;
	char err[128];

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_meta(&e, "corotop", "1", 1));
	meta2(&e, "corotop_birth", 3, 100, 1, 3);
	for (uint32_t i = 0; i < 4; i++) {
		assert_true(heph_enc_event_begin(
			&e, 9, i, 3, st[i][0], st[i][1],
			st[i][2] ? "running" : "suspended"));
		assert_true(heph_enc_event_end(&e) > 0);
	}
	meta2(&e, "corotop_end", 400, 0, 0, 1);
	assert_true(replay_open_bytes(&r, buf, e.len, 0, err, sizeof(err)));
	for (uint64_t id = 0; id <= 1; id++) { /* any, and coroutine 1 */
		assert_int_equal(replay_step(&r, id, 300, -1), 200);
		assert_int_equal(replay_step(&r, id, 200, -1), 100);
		assert_int_equal(replay_step(&r, id, 100, -1), 100);
		assert_int_equal(replay_step(&r, id, 100, 1), 200);
		assert_int_equal(replay_step(&r, id, 200, 1), 300);
	}
	replay_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unrun),
		cmocka_unit_test(test_foreign),
		cmocka_unit_test(test_step_equal_starts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
