/*
 * test-replay: a Heph recording turned into model snapshots (replay.c,
 * replay_moment.c), on synthetic traces built in memory with the heph
 * encoder and opened with replay_open_bytes.
 *
 * The corotop-style trace (build_corotop) is what the recorder writes: an
 * epoch and corotop's options, two threads (streams 101 and 102), three
 * coroutines -- A and C share probe id 7 (C is born at 85 ms, before A's
 * last interval, closed at the harvest, ends at 90 ms), B has probe id 8
 * -- per-coroutine losses and one of corotop's own (stream 0, substream
 * 0), events in the order the recorder closes them (not start order),
 * corotop_end and corotop_exit.  Every value a snapshot holds is checked
 * at several moments against numbers worked out by hand in the comments;
 * then the ids (recorded, or birth order when one is missing or two
 * collide), the transition history, the parked stacks and stepping.
 *
 * Another writer's trace (no `corotop` option): spans per (stream,
 * substream), gaps suspended, substream 0, wrapping counters, a
 * substream's spans out of order.  And the edges: no bytes, metadata only,
 * a coroutine born but not run yet, a corotop trace without births.
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
#define EPOCH 1700000000000000000ull
#define LINGER (20 * MS)

static uint8_t buf[1 << 16];

/* ---- building traces ---- */

static void be64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

/* A metadata option whose value is n big-endian u64s. */
static void meta_u64s(struct heph_enc *e, const char *name, const uint64_t *v,
		      size_t n)
{
	uint8_t val[32];

	assert_true(n * 8 <= sizeof(val));
	for (size_t i = 0; i < n; i++)
		be64(val + 8 * i, v[i]);
	assert_true(heph_enc_meta(e, name, val, n * 8));
}

static void birth(struct heph_enc *e, uint64_t sub, uint64_t ts, uint64_t id)
{
	uint64_t v[3] = {sub, ts, id};

	/* id 0: the older 16-byte form, without corotop's id. */
	meta_u64s(e, "corotop_birth", v, id ? 3 : 2);
}

/* An interval as the recorder writes it. */
static void iv(struct heph_enc *e, uint32_t stream, uint64_t sub,
	       uint64_t start, uint64_t end, bool running, uint64_t addr,
	       uint64_t seq, const uint64_t *stack, size_t nstack)
{
	static uint32_t counter;

	assert_true(heph_enc_event_begin(e, stream, counter++, sub, start, end,
					 running ? "running" : "suspended"));
	assert_true(heph_enc_u64(e, "addr", addr));
	assert_true(heph_enc_u64(e, "seq", seq));
	assert_true(heph_enc_str(e, "symbol", "some_function+0x10"));
	if (nstack)
		assert_true(heph_enc_u64_array(e, "stack", stack, nstack));
	assert_true(heph_enc_event_end(e) > 0);
}

static void lost(struct heph_enc *e, uint32_t stream, uint64_t sub, uint64_t ts,
		 uint64_t count)
{
	assert_true(heph_enc_event_begin(e, stream, 0, sub, ts, ts, "lost"));
	assert_true(heph_enc_u64(e, "count", count));
	assert_true(heph_enc_event_end(e) > 0);
}

/* A foreign span: no attributes corotop knows. */
static void span(struct heph_enc *e, uint32_t stream, uint32_t counter,
		 uint64_t sub, uint64_t start, uint64_t end, const char *desc)
{
	assert_true(heph_enc_event_begin(e, stream, counter, sub, start, end,
					 desc));
	assert_true(heph_enc_f64(e, "load", 0.5));
	assert_true(heph_enc_event_end(e) > 0);
}

enum ids {
	IDS_RECORDED, /* A 5, B 9, C 6 */
	IDS_MISSING,  /* C's birth has no id */
	IDS_SHARED,   /* A and B both say 5 */
};

static const uint64_t stack_a[] = {0x111, 0x222, 0x333};
static const uint64_t stack_c[] = {0x444};

/*
 * Coroutine A: probe 7, born 10 ms, dies 90 ms.
 *   A1 R [10,20] 101 0xA1/2   A2 S [20,50] 101 0xA2/4 stack 111,222,333
 *   A3 R [50,60] 102 0xA3/6   A4 S [60,90] 102 0xA4/8
 *   lost 4 at 15 ms, 3 at 55 ms.
 * Coroutine B: probe 8, born 15 ms, dies 80 ms.
 *   B1 R [15,30] 102 0xB1/2   B2 S [30,40] 102 0xB2/4
 *   B3 R [40,70] 101 0xB3/6   B4 S [70,80] 101 0xB4/8
 *   lost 1 at 35 ms.
 * Coroutine C: probe 7 again, born 85 ms, alive at the end (150 ms).
 *   C1 R [86,100] 101 0xC1/2  C2 S [100,150] 101 0xC2/4 stack 444
 *   lost 2 at 95 ms.
 * corotop's own loss: 10 at 65 ms.  Written in closing order.
 */
static size_t build_corotop(enum ids ids)
{
	struct heph_enc e;
	uint64_t pid = 4242, exitv[2] = {3, 0}, end = 150 * MS;
	const char cmd[] = "demo\t--x";

	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_epoch(&e, EPOCH));
	assert_true(heph_enc_meta(&e, "corotop", "1", 1));
	assert_true(heph_enc_meta(&e, "corotop_command", cmd, strlen(cmd)));
	birth(&e, 7, 10 * MS, 5);
	meta_u64s(&e, "corotop_pid", &pid, 1);
	birth(&e, 8, 15 * MS, ids == IDS_SHARED ? 5 : 9);
	lost(&e, 101, 7, 15 * MS, 4);
	iv(&e, 101, 7, 10 * MS, 20 * MS, true, 0xA1, 2, NULL, 0);
	iv(&e, 102, 8, 15 * MS, 30 * MS, true, 0xB1, 2, NULL, 0);
	lost(&e, 102, 8, 35 * MS, 1);
	iv(&e, 102, 8, 30 * MS, 40 * MS, false, 0xB2, 4, NULL, 0);
	iv(&e, 101, 7, 20 * MS, 50 * MS, false, 0xA2, 4, stack_a, 3);
	lost(&e, 102, 7, 55 * MS, 3);
	iv(&e, 102, 7, 50 * MS, 60 * MS, true, 0xA3, 6, NULL, 0);
	lost(&e, 0, 0, 65 * MS, 10);
	iv(&e, 101, 8, 40 * MS, 70 * MS, true, 0xB3, 6, NULL, 0);
	iv(&e, 101, 8, 70 * MS, 80 * MS, false, 0xB4, 8, NULL, 0);
	birth(&e, 7, 85 * MS, ids == IDS_MISSING ? 0 : 6);
	iv(&e, 102, 7, 60 * MS, 90 * MS, false, 0xA4, 8, NULL, 0);
	lost(&e, 101, 7, 95 * MS, 2);
	iv(&e, 101, 7, 86 * MS, 100 * MS, true, 0xC1, 2, NULL, 0);
	iv(&e, 101, 7, 100 * MS, 150 * MS, false, 0xC2, 4, stack_c, 1);
	meta_u64s(&e, "corotop_exit", exitv, 2);
	meta_u64s(&e, "corotop_end", &end, 1);
	assert_false(e.overflow);
	return e.len;
}

static void open_bytes(struct replay *r, size_t len)
{
	char err[256] = "";

	if (!replay_open_bytes(r, buf, len, LINGER, err, sizeof(err)))
		fail_msg("replay_open_bytes: %s", err);
	assert_int_equal(r->f.nproblems, 0);
}

/* ---- checking snapshots ---- */

struct want {
	uint64_t id;
	char state;
	uint64_t state_ts, switches, tid, addr, seq;
	uint64_t lost, pending, run, susp, birth, dead;
};

static const struct model_coro *find(const struct snapshot *s, uint64_t id)
{
	for (size_t i = 0; i < s->count; i++)
		if (s->coro[i].id == id)
			return &s->coro[i];
	return NULL;
}

#define EQ(field, want)                                                        \
	do {                                                                   \
		if ((uint64_t)(c->field) != (uint64_t)(want))                  \
			fail_msg("at %llu ms, id %llu: " #field                \
				 " %llu, want %llu",                           \
				 (unsigned long long)(s->ts / MS),             \
				 (unsigned long long)w->id,                    \
				 (unsigned long long)(c->field),               \
				 (unsigned long long)(want));                  \
	} while (0)

static void check(const struct snapshot *s, const struct want *w)
{
	const struct model_coro *c = find(s, w->id);

	if (!c)
		fail_msg("at %llu ns: id %llu missing",
			 (unsigned long long)s->ts, (unsigned long long)w->id);
	EQ(state, w->state);
	EQ(state_ts, w->state_ts);
	EQ(switches, w->switches);
	EQ(last_tid, w->tid);
	EQ(last_addr, w->addr);
	EQ(last_seq, w->seq);
	EQ(lost, w->lost);
	EQ(pending_lost, w->pending);
	EQ(run_ns, w->run);
	EQ(susp_ns, w->susp);
	EQ(birth_ts, w->birth);
	EQ(dead_ts, w->dead);
	EQ(in_use, 1);
	/* The record slot is the coroutine's index: below count of all. */
	assert_true(c->slot < s->cap);
}

struct totals {
	uint64_t ts;
	size_t count;
	uint64_t events, lost, seen;
	uint32_t running, suspended, dead;
};

static void check_totals(const struct snapshot *s, const struct totals *t)
{
	assert_int_equal(s->ts, t->ts);
	assert_int_equal(s->wall_ns, EPOCH + t->ts);
	assert_int_equal(s->count, t->count);
	assert_int_equal(s->t.events, t->events);
	assert_int_equal(s->t.lost, t->lost);
	assert_int_equal(s->t.coroutines_seen, t->seen);
	assert_int_equal(s->t.running, t->running);
	assert_int_equal(s->t.suspended, t->suspended);
	assert_int_equal(s->t.dead, t->dead);
	/* Every record is in use, each id once. */
	for (size_t i = 0; i < s->count; i++)
		for (size_t j = i + 1; j < s->count; j++)
			assert_true(s->coro[i].id != s->coro[j].id);
}

/* ---- the corotop trace ---- */

static void test_open_corotop(void **state)
{
	struct replay r;

	(void)state;
	open_bytes(&r, build_corotop(IDS_RECORDED));
	assert_true(r.ours);
	assert_int_equal(r.t0, 10 * MS);
	assert_int_equal(r.t1, 150 * MS);
	assert_int_equal(r.ncoro, 3);
	assert_int_equal(r.nlost, 4);  /* A's two, B's, C's */
	assert_int_equal(r.nglost, 5); /* and corotop's own */
	assert_int_equal(r.niv, 10);
	assert_int_equal(r.other_events, 0);
	assert_int_equal(r.pid, 4242);
	assert_string_equal(r.command, "demo?--x"); /* controls replaced */
	assert_true(r.exited);
	assert_int_equal(r.exit_code, 3);
	assert_int_equal(r.exit_signal, 0);
	assert_int_equal(r.end_mark, 150 * MS);
	assert_true(r.f.have_epoch);
	assert_int_equal(r.f.epoch_ns, EPOCH);
	replay_close(&r);
}

static void test_snapshots(void **state)
{
	struct replay r;
	struct snapshot s;

	(void)state;
	open_bytes(&r, build_corotop(IDS_RECORDED));
	snapshot_init(&s);

	/* Before the start: clamped to t0, only A, running. */
	replay_snapshot(&r, 0, &s);
	check_totals(&s, &(struct totals){10 * MS, 1, 1, 0, 1, 1, 0, 0});
	check(&s, &(struct want){5, 'R', 10 * MS, 1, 101, 0xA1, 2, 0, 0, 0, 0,
				 10 * MS, 0});

	/* 17 ms: A has lost 4 since its transition; B running. */
	replay_snapshot(&r, 17 * MS, &s);
	check_totals(&s, &(struct totals){17 * MS, 2, 2, 4, 2, 2, 0, 0});
	check(&s, &(struct want){5, 'R', 10 * MS, 1, 101, 0xA1, 2, 4, 4, 0, 0,
				 10 * MS, 0});
	check(&s, &(struct want){9, 'R', 15 * MS, 1, 102, 0xB1, 2, 0, 0, 0, 0,
				 15 * MS, 0});

	/* 55 ms: A in A3 (run 10, susp 50-10-10), the loss at 55 pending; B
	 * in B3 (run 15, susp 40-15-15); 9 events by then, 3 of them losses. */
	replay_snapshot(&r, 55 * MS, &s);
	check_totals(&s, &(struct totals){55 * MS, 2, 6, 8, 2, 2, 0, 0});
	check(&s, &(struct want){5, 'R', 50 * MS, 3, 102, 0xA3, 6, 7, 3,
				 10 * MS, 30 * MS, 10 * MS, 0});
	check(&s, &(struct want){9, 'R', 40 * MS, 3, 101, 0xB3, 6, 1, 0,
				 15 * MS, 10 * MS, 15 * MS, 0});

	/* 87 ms: A parked in A4, B dead at 80 (lingering), C running since
	 * 86 though born at 85 -- while A, same probe id, is still alive. */
	replay_snapshot(&r, 87 * MS, &s);
	check_totals(&s, &(struct totals){87 * MS, 3, 9, 18, 3, 1, 1, 1});
	check(&s, &(struct want){5, 'S', 60 * MS, 4, 102, 0xA4, 8, 7, 0,
				 20 * MS, 30 * MS, 10 * MS, 0});
	check(&s, &(struct want){9, 'D', 80 * MS, 4, 101, 0xB4, 8, 1, 0,
				 45 * MS, 20 * MS, 15 * MS, 80 * MS});
	check(&s, &(struct want){6, 'R', 86 * MS, 1, 101, 0xC1, 2, 0, 0, 0,
				 1 * MS, 85 * MS, 0});
	assert_int_equal(find(&s, 6)->probe_id, 7);
	assert_int_equal(find(&s, 5)->probe_id, 7);
	assert_int_equal(find(&s, 9)->probe_id, 8);

	/* 95 ms: A dead at 90 (its last interval closed: susp 30 + 30). */
	replay_snapshot(&r, 95 * MS, &s);
	check_totals(&s, &(struct totals){95 * MS, 3, 9, 20, 3, 1, 0, 2});
	check(&s, &(struct want){5, 'D', 90 * MS, 4, 102, 0xA4, 8, 7, 0,
				 20 * MS, 60 * MS, 10 * MS, 90 * MS});
	check(&s, &(struct want){6, 'R', 86 * MS, 1, 101, 0xC1, 2, 2, 2, 0,
				 1 * MS, 85 * MS, 0});

	/* Linger: B is visible 20 ms after its death, not 1 ns more. */
	replay_snapshot(&r, 100 * MS, &s);
	assert_non_null(find(&s, 9));
	replay_snapshot(&r, 100 * MS + 1, &s);
	assert_null(find(&s, 9));
	assert_int_equal(s.count, 2);

	/* 105 ms: C parked in C2 (run 14, susp 100-85-14). */
	replay_snapshot(&r, 105 * MS, &s);
	check_totals(&s, &(struct totals){105 * MS, 2, 10, 20, 3, 0, 1, 1});
	check(&s, &(struct want){6, 'S', 100 * MS, 2, 101, 0xC2, 4, 2, 0,
				 14 * MS, 1 * MS, 85 * MS, 0});
	replay_snapshot(&r, 110 * MS, &s);
	assert_non_null(find(&s, 5));
	replay_snapshot(&r, 110 * MS + 1, &s);
	assert_null(find(&s, 5));

	/* The end, and beyond (clamped): C alone, not dead. */
	for (int k = 0; k < 2; k++) {
		replay_snapshot(&r, k ? UINT64_MAX : 150 * MS, &s);
		check_totals(&s,
			     &(struct totals){150 * MS, 1, 10, 20, 3, 0, 1, 0});
		check(&s, &(struct want){6, 'S', 100 * MS, 2, 101, 0xC2, 4, 2,
					 0, 14 * MS, 1 * MS, 85 * MS, 0});
	}

	/* Back in time again: nothing is replayed, so nothing is stale. */
	replay_snapshot(&r, 17 * MS, &s);
	check_totals(&s, &(struct totals){17 * MS, 2, 2, 4, 2, 2, 0, 0});
	snapshot_finish(&s);
	replay_close(&r);
}

/* Rates: over the second before t, transitions only. */
static void test_rates(void **state)
{
	struct replay r;
	struct snapshot s;

	(void)state;
	open_bytes(&r, build_corotop(IDS_RECORDED));
	snapshot_init(&s);
	replay_snapshot(&r, 55 * MS, &s);
	assert_true(s.t.events_per_sec == 6.0);
	assert_true(find(&s, 5)->sw_per_sec == 3.0);
	replay_snapshot(&r, 150 * MS, &s);
	assert_true(s.t.events_per_sec == 10.0);
	snapshot_finish(&s);
	replay_close(&r);
}

static void test_ids(void **state)
{
	static const struct {
		enum ids ids;
		uint64_t a, b, c;
	} cases[] = {
		{IDS_RECORDED, 5, 9, 6},
		{IDS_MISSING, 1, 2, 3},
		{IDS_SHARED, 1, 2, 3},
	};
	struct replay r;
	struct snapshot s;

	(void)state;
	snapshot_init(&s);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct model_coro *a, *b, *c;

		open_bytes(&r, build_corotop(cases[k].ids));
		replay_snapshot(&r, 87 * MS, &s);
		assert_int_equal(s.count, 3);
		a = find(&s, cases[k].a);
		b = find(&s, cases[k].b);
		c = find(&s, cases[k].c);
		assert_non_null(a);
		assert_non_null(b);
		assert_non_null(c);
		assert_int_equal(a->birth_ts, 10 * MS);
		assert_int_equal(b->birth_ts, 15 * MS);
		assert_int_equal(c->birth_ts, 85 * MS);
		/* The births still cut probe 7 in two. */
		assert_int_equal(a->switches, 4);
		assert_int_equal(c->switches, 1);
		replay_close(&r);
	}
	snapshot_finish(&s);
}

static void test_history(void **state)
{
	struct model_transition h[8];
	struct replay r;

	(void)state;
	open_bytes(&r, build_corotop(IDS_RECORDED));
	assert_int_equal(replay_history(&r, 5, 95 * MS, h, 8), 4);
	for (size_t i = 0; i < 4; i++) {
		static const uint64_t ts[] = {10, 20, 50, 60};
		static const uint64_t tid[] = {101, 101, 102, 102};
		static const uint64_t addr[] = {0xA1, 0xA2, 0xA3, 0xA4};
		static const uint64_t lostb[] = {0, 4, 0, 3};

		assert_int_equal(h[i].ts, ts[i] * MS);
		assert_int_equal(h[i].tid, tid[i]);
		assert_int_equal(h[i].addr, addr[i]);
		assert_int_equal(h[i].seq, 2 * (i + 1));
		assert_int_equal(h[i].n, i);
		assert_int_equal(h[i].is_active, i % 2 == 0);
		assert_int_equal(h[i].lost_before, lostb[i]);
	}
	/* The latest two: the loss at 15 ms came before A2, not A3. */
	assert_int_equal(replay_history(&r, 5, 95 * MS, h, 2), 2);
	assert_int_equal(h[0].ts, 50 * MS);
	assert_int_equal(h[0].n, 2);
	assert_int_equal(h[0].lost_before, 0);
	assert_int_equal(h[1].ts, 60 * MS);
	assert_int_equal(h[1].lost_before, 3);
	/* Up to t: A2 starts at 20 ms exactly. */
	assert_int_equal(replay_history(&r, 5, 20 * MS, h, 8), 2);
	assert_int_equal(h[1].lost_before, 4);
	assert_int_equal(replay_history(&r, 5, 20 * MS - 1, h, 8), 1);
	assert_int_equal(replay_history(&r, 5, 5 * MS, h, 8), 0);
	/* C: its own transitions only (not A's, same probe id). */
	assert_int_equal(replay_history(&r, 6, 150 * MS, h, 8), 2);
	assert_int_equal(h[0].ts, 86 * MS);
	assert_int_equal(h[0].lost_before, 0);
	assert_int_equal(h[1].ts, 100 * MS);
	assert_int_equal(h[1].lost_before, 2);
	/* Unknown ids, no room. */
	assert_int_equal(replay_history(&r, 0, 95 * MS, h, 8), 0);
	assert_int_equal(replay_history(&r, 1, 95 * MS, h, 8), 0);
	assert_int_equal(replay_history(&r, 5, 95 * MS, h, 0), 0);
	replay_close(&r);
}

static void test_parked_stack(void **state)
{
	uint64_t fr[8];
	struct replay r;

	(void)state;
	open_bytes(&r, build_corotop(IDS_RECORDED));
	memset(fr, 0, sizeof(fr));
	assert_int_equal(replay_parked_stack(&r, 5, 30 * MS, fr, 8), 3);
	assert_int_equal(fr[0], 0x111);
	assert_int_equal(fr[1], 0x222);
	assert_int_equal(fr[2], 0x333);
	assert_int_equal(replay_parked_stack(&r, 5, 20 * MS, fr, 2), 2);
	assert_int_equal(fr[2], 0x333); /* untouched past max */
	/* Running, parked without a stack, dead, not born, unknown. */
	assert_int_equal(replay_parked_stack(&r, 5, 55 * MS, fr, 8), 0);
	assert_int_equal(replay_parked_stack(&r, 5, 70 * MS, fr, 8), 0);
	assert_int_equal(replay_parked_stack(&r, 5, 95 * MS, fr, 8), 0);
	assert_int_equal(replay_parked_stack(&r, 9, 35 * MS, fr, 8), 0);
	assert_int_equal(replay_parked_stack(&r, 6, 50 * MS, fr, 8), 0);
	assert_int_equal(replay_parked_stack(&r, 77, 30 * MS, fr, 8), 0);
	/* C parked at the end (alive): its stack. */
	assert_int_equal(replay_parked_stack(&r, 6, 150 * MS, fr, 8), 1);
	assert_int_equal(fr[0], 0x444);
	replay_close(&r);
}

static void test_step(void **state)
{
	struct replay r;

	(void)state;
	open_bytes(&r, build_corotop(IDS_RECORDED));
	/* A forwards: 10 -> 20 -> 50 -> 60 -> its death at 90 -> stays. */
	assert_int_equal(replay_step(&r, 5, 5 * MS, 1), 10 * MS);
	assert_int_equal(replay_step(&r, 5, 10 * MS, 1), 20 * MS);
	assert_int_equal(replay_step(&r, 5, 25 * MS, 1), 50 * MS);
	assert_int_equal(replay_step(&r, 5, 50 * MS, 1), 60 * MS);
	assert_int_equal(replay_step(&r, 5, 60 * MS, 1), 90 * MS);
	assert_int_equal(replay_step(&r, 5, 90 * MS, 1), 90 * MS);
	assert_int_equal(replay_step(&r, 5, 120 * MS, 1), 120 * MS);
	/* ... and back: the death too, then 60 -> 50 -> 20 -> 10 -> stays. */
	assert_int_equal(replay_step(&r, 5, 120 * MS, -1), 90 * MS);
	assert_int_equal(replay_step(&r, 5, 90 * MS, -1), 60 * MS);
	assert_int_equal(replay_step(&r, 5, 60 * MS, -1), 50 * MS);
	assert_int_equal(replay_step(&r, 5, 55 * MS, -1), 50 * MS);
	assert_int_equal(replay_step(&r, 5, 20 * MS, -1), 10 * MS);
	assert_int_equal(replay_step(&r, 5, 10 * MS, -1), 10 * MS);
	assert_int_equal(replay_step(&r, 5, 5 * MS, -1), 5 * MS);
	/* C is alive at the end: no death to step to. */
	assert_int_equal(replay_step(&r, 6, 100 * MS, 1), 100 * MS);
	assert_int_equal(replay_step(&r, 6, 150 * MS, -1), 100 * MS);
	assert_int_equal(replay_step(&r, 6, 100 * MS, -1), 86 * MS);
	/* Any coroutine: the next or previous start, or a death before it. */
	assert_int_equal(replay_step(&r, 0, 10 * MS, 1), 15 * MS);
	assert_int_equal(replay_step(&r, 0, 20 * MS, 1), 30 * MS);
	assert_int_equal(replay_step(&r, 0, 95 * MS, 1), 100 * MS);
	assert_int_equal(replay_step(&r, 0, 100 * MS, 1), 100 * MS);
	assert_int_equal(replay_step(&r, 0, 30 * MS, -1), 20 * MS);
	assert_int_equal(replay_step(&r, 0, 86 * MS, -1), 80 * MS);
	assert_int_equal(replay_step(&r, 0, 80 * MS, -1), 70 * MS);
	assert_int_equal(replay_step(&r, 0, 10 * MS, -1), 10 * MS);
	/* An unknown id steps like id 0. */
	assert_int_equal(replay_step(&r, 77, 10 * MS, 1), 15 * MS);
	replay_close(&r);
}

/* ---- other shapes ---- */

/* Born at 20 ms (the option), first transition at 30 ms, a loss between. */
static void test_born_not_run(void **state)
{
	struct heph_enc e;
	struct replay r;
	struct snapshot s;
	uint64_t end = 40 * MS;

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_epoch(&e, EPOCH));
	assert_true(heph_enc_meta(&e, "corotop", "1", 1));
	birth(&e, 3, 20 * MS, 1);
	lost(&e, 101, 3, 25 * MS, 2);
	iv(&e, 101, 3, 30 * MS, 40 * MS, true, 0x3, 4, NULL, 0);
	meta_u64s(&e, "corotop_end", &end, 1);
	open_bytes(&r, e.len);
	assert_int_equal(r.t0, 20 * MS);
	snapshot_init(&s);
	replay_snapshot(&r, 26 * MS, &s);
	check_totals(&s, &(struct totals){26 * MS, 1, 0, 2, 1, 0, 1, 0});
	check(&s, &(struct want){1, 'S', 20 * MS, 0, 0, 0, 0, 2, 2, 0, 0,
				 20 * MS, 0});
	replay_snapshot(&r, 30 * MS, &s);
	check(&s, &(struct want){1, 'R', 30 * MS, 1, 101, 0x3, 4, 2, 0, 0,
				 10 * MS, 20 * MS, 0});
	assert_int_equal(replay_history(&r, 1, 40 * MS,
					(struct model_transition[2]){0}, 2),
			 1);
	snapshot_finish(&s);
	replay_close(&r);
}

/* Loss counts come from the file: two that add past 2^64 saturate, for
 * the whole and for the coroutine, instead of wrapping to a small number
 * (18446744073709551480 was seen). */
static void test_lost_saturates(void **state)
{
	struct heph_enc e;
	struct replay r;
	struct snapshot s;
	uint64_t end = 40 * MS;

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_epoch(&e, EPOCH));
	assert_true(heph_enc_meta(&e, "corotop", "1", 1));
	birth(&e, 3, 20 * MS, 1);
	lost(&e, 101, 3, 22 * MS, UINT64_MAX - 100);
	lost(&e, 101, 3, 24 * MS, 236);
	lost(&e, 0, 0, 25 * MS, 1000);
	iv(&e, 101, 3, 30 * MS, 40 * MS, true, 0x3, 4, NULL, 0);
	meta_u64s(&e, "corotop_end", &end, 1);
	open_bytes(&r, e.len);
	snapshot_init(&s);
	replay_snapshot(&r, 23 * MS, &s);
	assert_true(s.t.lost == UINT64_MAX - 100);
	replay_snapshot(&r, 26 * MS, &s);
	assert_true(s.t.lost == UINT64_MAX);
	assert_int_equal(s.count, 1);
	assert_true(s.coro[0].lost == UINT64_MAX);
	assert_true(s.coro[0].pending_lost == UINT32_MAX); /* saturated */
	replay_snapshot(&r, 35 * MS, &s);
	assert_true(s.coro[0].lost == UINT64_MAX);
	{
		struct model_transition h[2];

		assert_int_equal(replay_history(&r, 1, 40 * MS, h, 2), 1);
		assert_true(h[0].lost_before == UINT64_MAX);
	}
	snapshot_finish(&s);
	replay_close(&r);
}

/* corotop's trace without births: a gap in a substream is a death. */
static void test_gap_without_births(void **state)
{
	struct heph_enc e;
	struct replay r;
	struct snapshot s;

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_meta(&e, "corotop", "1", 1));
	iv(&e, 101, 7, 10, 20, true, 1, 2, NULL, 0);
	iv(&e, 101, 7, 20, 30, false, 1, 4, NULL, 0);
	iv(&e, 101, 7, 40, 50, true, 1, 2, NULL, 0);
	open_bytes(&r, e.len);
	assert_int_equal(r.ncoro, 2);
	snapshot_init(&s);
	replay_snapshot(&r, 45, &s);
	assert_int_equal(s.wall_ns, 0); /* no epoch */
	assert_int_equal(s.count, 2);
	assert_int_equal(find(&s, 1)->state, 'D');
	assert_int_equal(find(&s, 1)->dead_ts, 30);
	assert_int_equal(find(&s, 1)->run_ns, 10);
	assert_int_equal(find(&s, 1)->susp_ns, 10);
	assert_int_equal(find(&s, 2)->state, 'R');
	assert_int_equal(find(&s, 2)->birth_ts, 40);
	/* The last one ends the recording: alive. */
	replay_snapshot(&r, 50, &s);
	assert_int_equal(find(&s, 2)->state, 'R');
	snapshot_finish(&s);
	replay_close(&r);
}

/*
 * Another writer: (stream 1, substream 0) spans [100,200] and [300,350],
 * written out of order, counters 0xFFFFFFFE, 0xFFFFFFFF then 0 (wrapped);
 * (1, 5) [120,130]; (2, 5) [150,400]: a different coroutine.  A loss of 2
 * on (1, 0) at 250.
 */
static void test_foreign(void **state)
{
	struct model_transition h[4];
	struct heph_enc e;
	struct replay r;
	struct snapshot s;

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	span(&e, 1, 0xFFFFFFFEu, 0, 300, 350, "poll");
	span(&e, 1, 0xFFFFFFFFu, 0, 100, 200, "poll");
	span(&e, 1, 0, 5, 120, 130, "task");
	span(&e, 2, 7, 5, 150, 400, "task");
	assert_true(heph_enc_event_begin(&e, 1, 1, 0, 250, 250, "lost"));
	assert_true(heph_enc_u64(&e, "count", 2));
	assert_true(heph_enc_event_end(&e) > 0);
	open_bytes(&r, e.len);
	assert_false(r.ours);
	assert_int_equal(r.t0, 100);
	assert_int_equal(r.t1, 400);
	assert_int_equal(r.ncoro, 3);
	assert_int_equal(r.pid, -1);
	snapshot_init(&s);

	/* Ids in birth order: (1,0) 1, (1,5) 2, (2,5) 3. */
	replay_snapshot(&r, 125, &s);
	assert_int_equal(s.ts, 125);
	assert_int_equal(s.wall_ns, 0);
	assert_int_equal(s.count, 2);
	check(&s, &(struct want){1, 'R', 100, 1, 1, 0, 0, 0, 0, 0, 0, 100, 0});
	check(&s, &(struct want){2, 'R', 120, 1, 1, 0, 0, 0, 0, 0, 0, 120, 0});
	assert_int_equal(find(&s, 1)->probe_id, 0);
	assert_int_equal(find(&s, 2)->probe_id, 5);

	/* 260: the gaps are suspended, since the span ended. */
	replay_snapshot(&r, 260, &s);
	assert_int_equal(s.count, 3);
	assert_int_equal(s.t.running, 1);
	assert_int_equal(s.t.suspended, 2);
	assert_int_equal(s.t.dead, 0);
	assert_int_equal(s.t.events, 3); /* and the loss */
	assert_int_equal(s.t.lost, 2);
	check(&s,
	      &(struct want){1, 'S', 200, 1, 1, 0, 0, 2, 2, 100, 0, 100, 0});
	check(&s, &(struct want){2, 'S', 130, 1, 1, 0, 0, 0, 0, 10, 0, 120, 0});
	check(&s, &(struct want){3, 'R', 150, 1, 2, 0, 0, 0, 0, 0, 0, 150, 0});

	/* 320: the second span of (1,0), sorted after the first. */
	replay_snapshot(&r, 320, &s);
	check(&s,
	      &(struct want){1, 'R', 300, 2, 1, 0, 0, 2, 0, 100, 100, 100, 0});

	/* The end: nobody is dead in another writer's trace. */
	replay_snapshot(&r, 1000, &s);
	assert_int_equal(s.ts, 400);
	assert_int_equal(s.count, 3);
	assert_int_equal(s.t.dead, 0);
	assert_int_equal(s.t.coroutines_seen, 3);
	check(&s,
	      &(struct want){1, 'S', 350, 2, 1, 0, 0, 2, 0, 150, 100, 100, 0});
	check(&s,
	      &(struct want){3, 'S', 400, 1, 2, 0, 0, 0, 0, 250, 0, 150, 0});

	assert_int_equal(replay_history(&r, 1, 400, h, 4), 2);
	assert_int_equal(h[0].ts, 100);
	assert_int_equal(h[0].tid, 1);
	assert_int_equal(h[0].is_active, 1);
	assert_int_equal(h[1].ts, 300);
	assert_int_equal(h[1].lost_before, 2);
	assert_int_equal(replay_step(&r, 1, 100, 1), 300);
	assert_int_equal(replay_step(&r, 1, 300, -1), 100);
	assert_int_equal(replay_parked_stack(&r, 1, 250, (uint64_t[4]){0}, 4),
			 0);
	snapshot_finish(&s);
	replay_close(&r);
}

/* Times at the very end of the u64 range: nothing wraps. */
static void test_time_edges(void **state)
{
	const uint64_t end = UINT64_MAX;
	struct heph_enc e;
	struct replay r;
	struct snapshot s;

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	span(&e, 1, 0, 1, end - 10, end, "x");
	assert_true(
		heph_enc_event_begin(&e, 1, 1, 1, end - 5, end - 5, "lost"));
	assert_true(heph_enc_u64(&e, "count", 1));
	assert_true(heph_enc_event_end(&e) > 0);
	open_bytes(&r, e.len);
	assert_int_equal(r.t0, end - 10);
	assert_int_equal(r.t1, end);
	snapshot_init(&s);
	replay_snapshot(&r, end, &s);
	assert_int_equal(s.ts, end);
	assert_int_equal(s.count, 1);
	assert_int_equal(s.t.events, 1);
	assert_int_equal(s.t.lost, 1);
	assert_true(s.t.events_per_sec == 1.0);
	check(&s, &(struct want){1, 'S', end, 1, 1, 0, 0, 1, 1, 10, 0, end - 10,
				 0});
	replay_snapshot(&r, 0, &s);
	assert_int_equal(s.ts, end - 10);
	assert_int_equal(s.t.events, 1);
	assert_int_equal(s.t.lost, 0);
	assert_int_equal(replay_step(&r, 0, end, 1), end);
	/* A loss is not a transition: steps go over it. */
	assert_int_equal(replay_step(&r, 0, end - 10, 1), end - 10);
	assert_int_equal(replay_step(&r, 0, end, -1), end - 10);
	assert_int_equal(replay_step(&r, 1, end, 1), end);
	assert_int_equal(replay_step(&r, 1, end, -1), end - 10);
	snapshot_finish(&s);
	replay_close(&r);
}

static void test_empty(void **state)
{
	struct model_transition h[2];
	uint64_t fr[2];
	struct replay r;
	struct snapshot s;
	char err[128];

	(void)state;
	assert_true(replay_open_bytes(&r, NULL, 0, LINGER, err, sizeof(err)));
	assert_int_equal(r.ncoro, 0);
	assert_int_equal(r.t0, 0);
	assert_int_equal(r.t1, 0);
	snapshot_init(&s);
	replay_snapshot(&r, 12345, &s);
	assert_int_equal(s.ts, 0);
	assert_int_equal(s.count, 0);
	assert_int_equal(s.t.events, 0);
	assert_int_equal(s.t.coroutines_seen, 0);
	assert_int_equal(replay_history(&r, 1, 5, h, 2), 0);
	assert_int_equal(replay_parked_stack(&r, 1, 5, fr, 2), 0);
	assert_int_equal(replay_step(&r, 0, 5, 1), 5);
	assert_int_equal(replay_step(&r, 0, 5, -1), 5);
	assert_int_equal(replay_step(&r, 1, 5, 1), 5);
	snapshot_finish(&s);
	replay_close(&r);
}

static void test_metadata_only(void **state)
{
	struct heph_enc e;
	struct replay r;
	struct snapshot s;
	uint64_t end = 5000, pid = 7;

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_epoch(&e, EPOCH));
	assert_true(heph_enc_meta(&e, "corotop", "1", 1));
	meta_u64s(&e, "corotop_pid", &pid, 1);
	meta_u64s(&e, "corotop_end", &end, 1);
	open_bytes(&r, e.len);
	assert_true(r.ours);
	assert_int_equal(r.pid, 7);
	assert_int_equal(r.ncoro, 0);
	assert_int_equal(r.t0, 0);
	assert_int_equal(r.t1, 5000);
	assert_false(r.exited);
	snapshot_init(&s);
	replay_snapshot(&r, 2500, &s);
	assert_int_equal(s.ts, 2500);
	assert_int_equal(s.wall_ns, EPOCH + 2500);
	assert_int_equal(s.count, 0);
	assert_int_equal(s.t.events, 0);
	assert_int_equal(replay_step(&r, 0, 2500, 1), 2500);
	snapshot_finish(&s);
	replay_close(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_corotop),
		cmocka_unit_test(test_snapshots),
		cmocka_unit_test(test_rates),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_history),
		cmocka_unit_test(test_parked_stack),
		cmocka_unit_test(test_step),
		cmocka_unit_test(test_born_not_run),
		cmocka_unit_test(test_lost_saturates),
		cmocka_unit_test(test_gap_without_births),
		cmocka_unit_test(test_foreign),
		cmocka_unit_test(test_time_edges),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_metadata_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
