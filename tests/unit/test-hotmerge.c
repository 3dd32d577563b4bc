/*
 * hotmerge: hot stacks merged by a key per frame
 * (src/engine/calltrace/hotmerge.c).  The key function here stands in for
 * the symbolizer: a "function" is a 256-byte block of addresses (its start
 * is addr & ~0xff), an "address" is itself.
 *
 *   granularity  stacks that differ only in the leaf pc within a function
 *                are one row by function, two by address;
 *   inclusive    %total of a row: every stack with its leaf function
 *                anywhere, summed, each stack once however deep it
 *                recurses; %self <= %total;
 *   basis        by window or by total; the sum counts stacks not listed;
 *   memo         the key function runs once per distinct frame;
 *   hotstacks    hotstacks_heaviest hands hotmerge the heaviest stacks in
 *                order, and every stack's weight in the sum.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/calltrace/hotmerge.h"

#define S 1000000000ull

struct set {
	struct hotmerge_stack s[64];
	uint64_t frames[1024];
	size_t ns, nframes;
	unsigned calls; /* of the key function */
};

/* One stack, innermost first, of window weight and total w. */
static void add(struct set *t, uint64_t w, uint32_t n, ...)
{
	va_list ap;

	va_start(ap, n);
	t->s[t->ns] = (struct hotmerge_stack){
		.stack_id = t->ns + 1,
		.trace_id = 0x100 + t->ns,
		.total = w,
		.weight = (double)w,
		.first = (uint32_t)t->nframes,
		.nframes = n,
	};
	for (uint32_t k = 0; k < n; k++)
		t->frames[t->nframes++] = va_arg(ap, uint64_t);
	va_end(ap);
	t->ns++;
}

static uint64_t by_function(void *ctx, uint64_t addr, bool leaf)
{
	(void)leaf;
	((struct set *)ctx)->calls++;
	return addr & ~0xffull;
}

static uint64_t by_address(void *ctx, uint64_t addr, bool leaf)
{
	((struct set *)ctx)->calls++;
	return addr << 1 | leaf;
}

/* Merge t (already heaviest first) by its stacks' summed weight. */
static size_t merge(struct set *t, hotmerge_key_fn fn, enum hot_order o,
		    struct hot_stack *out, size_t max)
{
	struct hotmerge_in in = {
		.s = t->s,
		.n = t->ns,
		.frames = t->frames,
		.order = o,
	};

	for (size_t i = 0; i < t->ns; i++)
		in.sum += t->s[i].weight;
	t->calls = 0;
	return hotmerge(&in, fn, t, out, max);
}

static void test_leaf_pcs_merge_by_function(void **state)
{
	static struct set t;
	static struct hot_stack out[8];
	size_t n;

	(void)state;
	memset(&t, 0, sizeof(t));
	/* burn_compress_block+0x90 and +0x51, called from one place. */
	add(&t, 4, 3, 0x1190ull, 0x2010ull, 0x3010ull);
	add(&t, 3, 3, 0x1151ull, 0x2010ull, 0x3010ull);
	add(&t, 3, 2, 0x4000ull, 0x3010ull);

	n = merge(&t, by_function, HOT_BY_WINDOW, out, 8);
	assert_int_equal(n, 2);
	assert_int_equal(out[0].merged, 2);
	assert_true(out[0].self_pct == 70.0 && out[0].total_pct == 70.0);
	assert_true(out[0].weight == 7.0 && out[0].total == 7);
	/* The heaviest stack stands for the row. */
	assert_int_equal(out[0].stack_id, 1);
	assert_int_equal(out[0].nframes, 3);
	assert_true(out[0].frames[0] == 0x1190ull);
	assert_int_equal(out[1].merged, 1);
	assert_true(out[1].self_pct == 30.0);

	n = merge(&t, by_address, HOT_BY_WINDOW, out, 8);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(out[i].merged, 1);
		/* No other stack holds either leaf pc. */
		assert_true(out[i].self_pct == out[i].total_pct);
	}
	assert_true(out[0].self_pct == 40.0 && out[0].frames[0] == 0x1190ull);
}

/* A row's key is stable: the same merge twice, and the address rows
 * differ from the function row. */
static void test_row_keys(void **state)
{
	static struct set t;
	static struct hot_stack a[4], b[4];

	(void)state;
	memset(&t, 0, sizeof(t));
	add(&t, 4, 2, 0x1190ull, 0x3010ull);
	add(&t, 3, 2, 0x1151ull, 0x3010ull);
	assert_int_equal(merge(&t, by_function, HOT_BY_WINDOW, a, 4), 1);
	assert_int_equal(merge(&t, by_function, HOT_BY_WINDOW, b, 4), 1);
	assert_true(a[0].key && a[0].key == b[0].key);
	assert_int_equal(merge(&t, by_address, HOT_BY_WINDOW, b, 4), 2);
	assert_true(b[0].key != b[1].key);
}

static void test_total_sums_every_stack(void **state)
{
	static struct set t;
	static struct hot_stack out[8];
	size_t n;

	(void)state;
	memset(&t, 0, sizeof(t));
	/* f = 0x1000, g = 0x2000, h = 0x5000, main = 0x3000 */
	add(&t, 5, 2, 0x2000ull, 0x3000ull);		/* g <- main */
	add(&t, 3, 3, 0x1000ull, 0x5000ull, 0x3000ull); /* f <- h <- main */
	add(&t, 2, 3, 0x1010ull, 0x2040ull, 0x3000ull); /* f <- g <- main */
	n = merge(&t, by_function, HOT_BY_WINDOW, out, 8);
	assert_int_equal(n, 3);
	/* g: its own 5, and the 2 where it calls f. */
	assert_true(out[0].frames[0] == 0x2000ull);
	assert_true(out[0].self_pct == 50.0 && out[0].total_pct == 70.0);
	/* f under h: f's time under h and under g. */
	assert_true(out[1].frames[0] == 0x1000ull);
	assert_true(out[1].self_pct == 30.0 && out[1].total_pct == 50.0);
	assert_true(out[2].frames[0] == 0x1010ull);
	assert_true(out[2].self_pct == 20.0 && out[2].total_pct == 50.0);
}

static void test_recursion_counts_once(void **state)
{
	static struct set t;
	static struct hot_stack out[8];
	size_t n;

	(void)state;
	memset(&t, 0, sizeof(t));
	/* f recursing under main, main alone, f called from g. */
	add(&t, 4, 4, 0x1000ull, 0x1020ull, 0x1020ull, 0x3000ull);
	add(&t, 3, 1, 0x3040ull);
	add(&t, 1, 3, 0x1000ull, 0x2000ull, 0x3000ull);
	n = merge(&t, by_function, HOT_BY_WINDOW, out, 8);
	assert_int_equal(n, 3);
	assert_true(out[0].self_pct == 50.0);
	assert_true(out[0].total_pct == 62.5); /* 4 + 1, not 4 * 3 + 1 */
	/* main: on every stack, once each. */
	assert_true(out[1].frames[0] == 0x3040ull);
	assert_true(out[1].self_pct == 37.5 && out[1].total_pct == 100.0);
	assert_true(out[2].self_pct == 12.5 && out[2].total_pct == 62.5);
}

/* Every row: self <= total <= 100; the selves sum to 100. */
static void test_self_within_total(void **state)
{
	static struct set t;
	static struct hot_stack out[64];
	uint64_t x = 12345;
	double selves = 0.0;
	size_t n;

	(void)state;
	memset(&t, 0, sizeof(t));
	for (size_t i = 0; i < 40; i++) {
		uint64_t f[6];

		for (size_t k = 0; k < 6; k++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			f[k] = 0x1000ull * (1 + (x >> 60) % 5) + (x >> 40) % 64;
		}
		add(&t, 40 - i, 1 + (uint32_t)(i % 6), f[0], f[1], f[2], f[3],
		    f[4], f[5]);
	}
	n = merge(&t, by_function, HOT_BY_WINDOW, out, 64);
	assert_true(n > 0 && n < 40);
	for (size_t i = 0; i < n; i++) {
		assert_true(out[i].self_pct <= out[i].total_pct);
		assert_true(out[i].total_pct <= 100.0);
		if (i)
			assert_true(out[i].self_pct <= out[i - 1].self_pct);
		selves += out[i].self_pct;
	}
	assert_true(selves > 99.999 && selves < 100.001);
}

/* By total, the basis is the raw total; the sum may hold unlisted
 * stacks; max bounds the rows; the key function runs once per frame. */
static void test_basis_and_bounds(void **state)
{
	static struct set t;
	static struct hot_stack out[8];
	struct hotmerge_in in;

	(void)state;
	memset(&t, 0, sizeof(t));
	add(&t, 6, 2, 0x1190ull, 0x3010ull);
	add(&t, 2, 2, 0x1151ull, 0x3010ull);
	add(&t, 2, 2, 0x4000ull, 0x3010ull);
	t.s[2].weight = 0.0; /* left the window, total stays */
	in = (struct hotmerge_in){
		.s = t.s,
		.n = t.ns,
		.frames = t.frames,
		.order = HOT_BY_TOTAL,
		.sum = 20.0, /* 10 more in stacks not handed in */
	};
	assert_int_equal(hotmerge(&in, by_function, &t, out, 8), 2);
	assert_true(out[0].self_pct == 40.0 && out[0].total_pct == 40.0);
	assert_true(out[1].self_pct == 10.0);
	/* 0x1190, 0x1151, 0x4000 and 0x3010 as a caller: four frames. */
	assert_int_equal(t.calls, 4);
	assert_int_equal(hotmerge(&in, by_function, &t, out, 1), 1);
	assert_int_equal(out[0].merged, 2);
	in.n = 0;
	assert_int_equal(hotmerge(&in, by_function, &t, out, 8), 0);
}

/* ---- through hotstacks ---- */

static void take(void *ctx, const struct hot_ref *r)
{
	struct set *t = ctx;

	t->s[t->ns] = (struct hotmerge_stack){
		.stack_id = r->stack_id,
		.trace_id = r->trace_id,
		.total = r->total,
		.weight = r->weight,
		.first = (uint32_t)t->nframes,
		.nframes = r->nframes,
	};
	memcpy(t->frames + t->nframes, r->frames,
	       r->nframes * sizeof(*r->frames));
	t->nframes += r->nframes;
	t->ns++;
}

static void test_through_hotstacks(void **state)
{
	static const uint64_t a[] = {0x1190, 0x2010, 0x3010};
	static const uint64_t b[] = {0x1151, 0x2010, 0x3010};
	static const uint64_t c[] = {0x4000, 0x3010};
	static const uint64_t d[] = {0x5000, 0x3010};
	static struct set t;
	static struct hot_stack out[8];
	struct hotstacks_config cfg;
	struct hotstacks *h;
	struct traceset u;
	struct hotmerge_in in;
	double sum = -1.0;

	(void)state;
	memset(&t, 0, sizeof(t));
	hotstacks_config_defaults(&cfg);
	h = hotstacks_create(&cfg);
	assert_non_null(h);
	traceset_init(&u, 64, 1 << 12);
	assert_true(traceset_add(&u, 1ull << 32, 4, 1, a, 3));
	assert_true(traceset_add(&u, (1ull << 32) + 1, 3, 1, b, 3));
	assert_true(traceset_add(&u, (1ull << 32) + 2, 2, 1, c, 2));
	assert_true(traceset_add(&u, (1ull << 32) + 3, 1, 1, d, 2));
	traceset_seal(&u);
	hotstacks_ingest(h, &u, NULL, 5 * S);

	/* The heaviest three, in order; all four in the sum. */
	assert_int_equal(hotstacks_heaviest(h, 0, HOT_BY_TOTAL, 5 * S, 3, take,
					    &t, &sum),
			 3);
	assert_true(sum == 10.0);
	assert_true(t.s[0].total == 4 && t.s[1].total == 3 &&
		    t.s[2].total == 2);
	assert_true(t.frames[t.s[1].first] == 0x1151);
	in = (struct hotmerge_in){
		.s = t.s,
		.n = t.ns,
		.frames = t.frames,
		.order = HOT_BY_TOTAL,
		.sum = sum,
	};
	assert_int_equal(hotmerge(&in, by_function, &t, out, 8), 2);
	assert_true(out[0].total == 7 && out[0].merged == 2);
	assert_true(out[0].self_pct == 70.0 && out[1].self_pct == 20.0);
	traceset_finish(&u);
	hotstacks_destroy(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_leaf_pcs_merge_by_function),
		cmocka_unit_test(test_row_keys),
		cmocka_unit_test(test_total_sums_every_stack),
		cmocka_unit_test(test_recursion_counts_once),
		cmocka_unit_test(test_self_within_total),
		cmocka_unit_test(test_basis_and_bounds),
		cmocka_unit_test(test_through_hotstacks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
