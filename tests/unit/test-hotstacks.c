/*
 * hotstacks: the aggregate of rotation unions
 * (src/engine/calltrace/hotstacks.c), driven with hand-made unions at chosen
 * times.
 *
 *   decay     window weight = sum of slices in the window, each halved per
 *             half-life of age since the slice ended; exact values;
 *   window    weights leave the window a slice at a time; totals stay;
 *   zero      drops every weight, later weights count from zero;
 *   tags      the tag frame is dropped: one global stack per frames,
 *             weights split per coroutine by the resolved owner; an owner
 *             of 0 (gen mismatch, thread tag) is counted as unattributed;
 *   bound     a full table evicts its lightest stacks; evicted totals are
 *             counted, and kept + evicted == ingested;
 *   percent   %self and %total (this stack and those it is a caller of);
 *   order     by window and by total, ties by the other, then stack id;
 *   frames    new stacks' frames come out once, leaf first;
 *   keep      the configured check cuts a stack before its first refused
 *             frame (the tag still splits it), the weight whole.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/calltrace/hotstacks.h"

#define S 1000000000ull /* one second in ns */
#define TAGC(st, gen) (CT_TAG_CORO | ((uint64_t)(gen) << 32) | (uint64_t)(st))
#define TAGT(tid) (CT_TAG_THREAD | (uint64_t)(tid))

struct rig {
	struct hotstacks *h;
	struct traceset u;
	uint64_t owner[64];
	size_t n;
	uint64_t next_id;
};

static void rig_open(struct rig *g, unsigned window_s, unsigned half_s,
		     uint32_t max_stacks, uint32_t max_coro)
{
	struct hotstacks_config c;

	memset(g, 0, sizeof(*g));
	hotstacks_config_defaults(&c);
	c.window_s = window_s;
	c.half_life_s = half_s;
	c.max_stacks = max_stacks;
	c.max_coro = max_coro;
	g->h = hotstacks_create(&c);
	assert_non_null(g->h);
	traceset_init(&g->u, 1024, 1 << 16);
	g->next_id = 1ull << 32;
}

static void rig_close(struct rig *g)
{
	hotstacks_destroy(g->h);
	traceset_finish(&g->u);
}

/* Queue one trace: frames f[0..n), weight w, owner (model id) o. */
static void put(struct rig *g, const uint64_t *f, uint32_t n, uint64_t w,
		uint64_t o)
{
	assert_true(traceset_add(&g->u, g->next_id++, w, 1, f, n));
	g->owner[g->n++] = o;
}

static void ingest(struct rig *g, uint64_t now)
{
	traceset_seal(&g->u);
	assert_int_equal(g->u.n, g->n);
	hotstacks_ingest(g->h, &g->u, g->owner, now);
	traceset_clear(&g->u);
	g->n = 0;
}

static size_t top(struct rig *g, uint64_t coro, enum hot_order o, uint64_t now,
		  struct hot_stack *out, size_t max)
{
	return hotstacks_top(g->h, coro, o, now, out, max);
}

static void test_decay_arithmetic(void **state)
{
	static struct hot_stack out[4];
	uint64_t f[2] = {0x1000, 0x2000};
	struct rig g;

	(void)state;
	/* window 8 s: slices of 1 s; half-life 1 s. */
	rig_open(&g, 8, 1, 64, 64);
	put(&g, f, 2, 100, 0);
	ingest(&g, S / 2); /* slice 0, ends at 1 s */
	assert_int_equal(top(&g, 0, HOT_BY_WINDOW, S * 9 / 10, out, 4), 1);
	assert_true(out[0].weight == 100.0); /* current slice: no decay */
	assert_int_equal(out[0].total, 100);
	top(&g, 0, HOT_BY_WINDOW, 2 * S, out, 4); /* 1 s after its end */
	assert_true(fabs(out[0].weight - 50.0) < 1e-9);
	top(&g, 0, HOT_BY_WINDOW, 3 * S, out, 4);
	assert_true(fabs(out[0].weight - 25.0) < 1e-9);
	top(&g, 0, HOT_BY_WINDOW, 7 * S + S / 2, out, 4);
	assert_true(fabs(out[0].weight - 100.0 * exp2(-6.5)) < 1e-9);
	/* At 8 s slice 0 has left the 8-slice window. */
	assert_int_equal(top(&g, 0, HOT_BY_WINDOW, 8 * S, out, 4), 0);
	assert_int_equal(top(&g, 0, HOT_BY_TOTAL, 8 * S, out, 4), 1);
	assert_int_equal(out[0].total, 100);
	assert_true(out[0].weight == 0.0);
	/* Two slices: 10 in slice 3, 40 in slice 5, read at 5.5 s. */
	put(&g, f, 2, 10, 0);
	ingest(&g, 3 * S + 1);
	put(&g, f, 2, 40, 0);
	ingest(&g, 5 * S + 1);
	top(&g, 0, HOT_BY_WINDOW, 5 * S + S / 2, out, 4);
	/* slice 3 ended at 4 s: 1.5 s old; slice 0 at 1 s: 4.5 s old. */
	assert_true(fabs(out[0].weight - (40.0 + 10.0 * exp2(-1.5) +
					  100.0 * exp2(-4.5))) < 1e-9);
	assert_int_equal(out[0].total, 150);
	rig_close(&g);
}

static void test_window_without_decay(void **state)
{
	static struct hot_stack out[4];
	uint64_t a[1] = {0xa}, b[1] = {0xb};
	struct rig g;

	(void)state;
	rig_open(&g, 8, 0, 64, 64);
	put(&g, a, 1, 100, 0);
	ingest(&g, S / 2);
	put(&g, b, 1, 10, 0);
	put(&g, a, 1, 1, 0);
	ingest(&g, 3 * S + S / 2);
	assert_int_equal(top(&g, 0, HOT_BY_WINDOW, 7 * S, out, 4), 2);
	assert_true(out[0].weight == 101.0); /* plain sums */
	assert_true(out[1].weight == 10.0);
	/* At 8.2 s the 100 of slice 0 has left; a keeps 1, b 10. */
	assert_int_equal(top(&g, 0, HOT_BY_WINDOW, 8 * S + S / 5, out, 4), 2);
	assert_int_equal(out[0].frames[0], 0xb);
	assert_true(out[0].weight == 10.0);
	assert_true(out[1].weight == 1.0);
	assert_int_equal(out[1].total, 101);
	/* By total the order flips back. */
	top(&g, 0, HOT_BY_TOTAL, 8 * S + S / 5, out, 4);
	assert_int_equal(out[0].frames[0], 0xa);
	assert_int_equal(out[0].total, 101);
	/* Nothing new for a whole window: the window list is empty. */
	assert_int_equal(top(&g, 0, HOT_BY_WINDOW, 12 * S, out, 4), 0);
	/* A new window setting restarts window weights, keeps totals. */
	put(&g, a, 1, 5, 0);
	ingest(&g, 12 * S);
	hotstacks_set_window(g.h, 4, 0);
	assert_int_equal(top(&g, 0, HOT_BY_WINDOW, 12 * S, out, 4), 0);
	assert_int_equal(top(&g, 0, HOT_BY_TOTAL, 12 * S, out, 4), 2);
	assert_int_equal(out[0].total, 106);
	rig_close(&g);
}

static void test_zero(void **state)
{
	static struct hot_stack out[4];
	struct hotstacks_stats st;
	uint64_t a[2] = {0xa, 0xc0};
	struct rig g;

	(void)state;
	rig_open(&g, 30, 10, 64, 64);
	put(&g, a, 2, 7, 0);
	ingest(&g, S);
	hotstacks_zero(g.h, 2 * S);
	hotstacks_stats(g.h, &st);
	assert_int_equal(st.zeroed_ns, 2 * S);
	assert_int_equal(st.stacks, 0);
	assert_int_equal(top(&g, 0, HOT_BY_TOTAL, 2 * S, out, 4), 0);
	put(&g, a, 2, 3, 0);
	ingest(&g, 3 * S);
	assert_int_equal(top(&g, 0, HOT_BY_TOTAL, 3 * S, out, 4), 1);
	assert_int_equal(out[0].total, 3);
	assert_true(out[0].weight == 3.0);
	assert_true(out[0].stack_id > 1); /* ids are never reused */
	rig_close(&g);
}

static void test_tags_merge_and_split(void **state)
{
	static struct hot_stack out[4];
	struct hotstacks_stats st;
	uint64_t s1[3] = {0x10, 0x20, TAGC(1, 5)};
	uint64_t s2[3] = {0x10, 0x20, TAGC(2, 7)};
	uint64_t s3[3] = {0x10, 0x20, TAGT(4242)};
	uint64_t s4[3] = {0x10, 0x20, TAGC(3, 9)}; /* owner unresolved */
	uint64_t plain[2] = {0x10, 0x20};
	struct rig g;

	(void)state;
	rig_open(&g, 30, 0, 64, 64);
	put(&g, s1, 3, 3, 11);
	put(&g, s2, 3, 4, 12);
	put(&g, s3, 3, 5, 0);
	put(&g, s4, 3, 6, 0);
	put(&g, plain, 2, 1, 0);
	ingest(&g, S);
	/* Global: one stack, the tag gone. */
	assert_int_equal(top(&g, 0, HOT_BY_TOTAL, S, out, 4), 1);
	assert_int_equal(out[0].total, 19);
	assert_int_equal(out[0].nframes, 2);
	assert_int_equal(out[0].frames[0], 0x10);
	assert_int_equal(out[0].frames[1], 0x20);
	assert_true(out[0].self_pct == 100.0);
	/* Per coroutine. */
	assert_int_equal(top(&g, 11, HOT_BY_TOTAL, S, out, 4), 1);
	assert_int_equal(out[0].total, 3);
	assert_true(out[0].self_pct == 100.0); /* of its own total */
	assert_int_equal(top(&g, 12, HOT_BY_WINDOW, S, out, 4), 1);
	assert_int_equal(out[0].total, 4);
	assert_int_equal(top(&g, 13, HOT_BY_TOTAL, S, out, 4), 0);
	hotstacks_stats(g.h, &st);
	assert_int_equal(st.attributed, 7);
	assert_int_equal(st.unattributed, 11); /* thread tag + unresolved */
	assert_int_equal(st.weight, 19);
	assert_int_equal(st.coro_entries, 2);
	/* A second rotation adds to the same pair. */
	put(&g, s1, 3, 10, 11);
	ingest(&g, 2 * S);
	top(&g, 11, HOT_BY_TOTAL, 2 * S, out, 4);
	assert_int_equal(out[0].total, 13);
	/* Weightless traces (parked stacks) add nothing. */
	put(&g, (uint64_t[]){0x99}, 1, 0, 0);
	ingest(&g, 2 * S);
	assert_int_equal(top(&g, 0, HOT_BY_TOTAL, 2 * S, out, 4), 1);
	rig_close(&g);
}

/* A check that refuses every frame of 0x9000 and up (the engine's: not
 * in the target's code), counting its calls. */
static size_t calls;
static size_t below_9000(void *ctx, const uint64_t *f, size_t n)
{
	size_t k = 0;

	(void)ctx;
	calls++;
	while (k < n && f[k] < 0x9000)
		k++;
	return k;
}

static void test_keep_cuts(void **state)
{
	static struct hot_stack out[4];
	struct hotstacks_config c;
	struct hotstacks_stats st;
	uint64_t junk[4] = {0x10, 0x20, 0xa0d0a, TAGC(1, 5)};
	uint64_t clean[3] = {0x10, 0x20, TAGC(2, 7)};
	uint64_t first[2] = {0x74736574, 0x20};
	struct rig g;

	(void)state;
	rig_open(&g, 30, 0, 64, 64);
	hotstacks_destroy(g.h);
	hotstacks_config_defaults(&c);
	c.keep = below_9000;
	g.h = hotstacks_create(&c);
	assert_non_null(g.h);
	calls = 0;
	put(&g, junk, 4, 3, 11);
	put(&g, clean, 3, 4, 12);
	put(&g, first, 2, 2, 0);
	ingest(&g, S);
	assert_int_equal(calls, 3);
	/* The junk stack is the clean one: one stack of 7, split by tag. */
	assert_int_equal(top(&g, 0, HOT_BY_TOTAL, S, out, 4), 2);
	assert_int_equal(out[0].total, 7);
	assert_int_equal(out[0].nframes, 2);
	assert_int_equal(out[0].frames[1], 0x20);
	assert_int_equal(top(&g, 11, HOT_BY_TOTAL, S, out, 4), 1);
	assert_int_equal(out[0].total, 3);
	/* Junk innermost: an empty stack, its weight kept. */
	top(&g, 0, HOT_BY_TOTAL, S, out, 4);
	assert_int_equal(out[1].total, 2);
	assert_int_equal(out[1].nframes, 0);
	hotstacks_stats(g.h, &st);
	assert_int_equal(st.weight, 9);
	rig_close(&g);
}

static void test_eviction_bound(void **state)
{
	static struct hot_stack out[64];
	struct hotstacks_stats st;
	uint64_t sum = 0, kept = 0;
	struct rig g;
	size_t n;

	(void)state;
	rig_open(&g, 30, 0, 16, 8);
	for (uint64_t i = 1; i <= 40; i++) {
		uint64_t f[2] = {0x1000 + i, TAGC(0, 0)};

		put(&g, f, 2, i, 100 + i % 12); /* 12 coroutines */
		sum += i;
		ingest(&g, S);
	}
	hotstacks_stats(g.h, &st);
	assert_true(st.stacks <= 16);
	assert_true(st.coro_entries <= 8);
	assert_true(st.evicted >= 24);
	n = top(&g, 0, HOT_BY_TOTAL, S, out, 64);
	assert_int_equal(n, st.stacks);
	for (size_t i = 0; i < n; i++)
		kept += out[i].total;
	assert_int_equal(kept + st.evicted_weight, sum);
	/* The lightest went first: the heaviest are all still there. */
	assert_int_equal(out[0].total, 40);
	assert_int_equal(out[1].total, 39);
	assert_true(out[n - 1].total > 40 - 16);
	/* Pairs never outlive their stack. */
	for (uint64_t c = 100; c < 112; c++) {
		size_t k = top(&g, c, HOT_BY_TOTAL, S, out, 64);

		for (size_t i = 0; i < k; i++)
			assert_true(out[i].total > 40 - 16);
	}
	rig_close(&g);
}

static void test_percentages(void **state)
{
	static struct hot_stack out[8];
	uint64_t a[3] = {0xa, 0xb, 0xf}; /* f -> b -> a */
	uint64_t b[3] = {0xc, 0xb, 0xf}; /* f -> b -> c */
	uint64_t c[2] = {0xb, 0xf};	 /* f -> b: a caller of a and b */
	uint64_t d[1] = {0xd};
	struct rig g;

	(void)state;
	rig_open(&g, 30, 0, 64, 64);
	put(&g, a, 3, 6, 0);
	put(&g, b, 3, 2, 0);
	put(&g, c, 2, 2, 0);
	put(&g, d, 1, 10, 0);
	ingest(&g, S);
	assert_int_equal(top(&g, 0, HOT_BY_TOTAL, S, out, 8), 4);
	assert_int_equal(out[0].frames[0], 0xd);
	assert_true(out[0].self_pct == 50.0 && out[0].total_pct == 50.0);
	assert_int_equal(out[1].frames[0], 0xa);
	assert_true(out[1].self_pct == 30.0 && out[1].total_pct == 30.0);
	/* c (2) and b (2) tie on both weights: stack id (b came first). */
	assert_int_equal(out[2].frames[0], 0xc);
	assert_true(out[2].self_pct == 10.0 && out[2].total_pct == 10.0);
	assert_int_equal(out[3].frames[0], 0xb);
	assert_true(out[3].self_pct == 10.0);
	assert_true(out[3].total_pct == 50.0); /* 2 + 6 + 2 of 20 */
	/* A bounded list still has the percentages of the whole set. */
	assert_int_equal(top(&g, 0, HOT_BY_WINDOW, S, out, 1), 1);
	assert_true(out[0].self_pct == 50.0);
	rig_close(&g);
}

static void test_new_frames_once(void **state)
{
	struct hot_frame f[8];
	uint64_t a[3] = {0xa, 0xb, TAGT(1)}, b[1] = {0xc};
	struct rig g;

	(void)state;
	rig_open(&g, 30, 0, 64, 64);
	put(&g, a, 3, 1, 0);
	put(&g, b, 1, 1, 0);
	ingest(&g, S);
	assert_int_equal(hotstacks_new_frames(g.h, f, 2), 2);
	assert_int_equal(f[0].addr, 0xa);
	assert_true(f[0].leaf);
	assert_int_equal(f[1].addr, 0xb);
	assert_false(f[1].leaf);
	assert_int_equal(hotstacks_new_frames(g.h, f, 8), 1);
	assert_int_equal(f[0].addr, 0xc);
	assert_true(f[0].leaf);
	assert_int_equal(hotstacks_new_frames(g.h, f, 8), 0);
	/* Known stacks are not new again. */
	put(&g, a, 3, 1, 0);
	ingest(&g, 2 * S);
	assert_int_equal(hotstacks_new_frames(g.h, f, 8), 0);
	rig_close(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decay_arithmetic),
		cmocka_unit_test(test_window_without_decay),
		cmocka_unit_test(test_zero),
		cmocka_unit_test(test_tags_merge_and_split),
		cmocka_unit_test(test_eviction_bound),
		cmocka_unit_test(test_percentages),
		cmocka_unit_test(test_new_frames_once),
		cmocka_unit_test(test_keep_cuts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
