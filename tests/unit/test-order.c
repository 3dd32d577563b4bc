/*
 * order: the table's row sort (src/ui/rows/order.c) against a reference. Random
 * snapshots (records in shuffled id order, keys that vary in every byte,
 * duplicates to exercise ties, negative and special doubles) are sorted by
 * every column, ascending and inverted, flat and grouped by thread, and the
 * result must equal qsort with the obvious comparator: thread first when
 * grouping, then the column's key (reversed when inverted), then model id.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ui/rows/column.h"
#include "ui/rows/order.h"

#define N 3000

static struct snapshot snap;
static struct model_coro coro[N];
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Few distinct values (ties) or full 64-bit ones, by the caller's pick. */
static uint64_t pick(int spread)
{
	return spread ? next() : next() % 4;
}

static void fill(int spread)
{
	memset(coro, 0, sizeof(coro));
	snap.ts = 1ull << 62;
	for (uint32_t i = 0; i < N; i++) {
		struct model_coro *c = &coro[i];

		c->id = i + 1;
		c->slot = i;
		c->probe_id = pick(spread);
		c->state = "RSD"[next() % 3];
		c->last_tid = pick(spread) % 5;
		c->birth_ts = pick(spread) >> 2;
		c->state_ts = c->birth_ts + (pick(spread) >> 3);
		c->dead_ts = c->state_ts;
		c->switches = pick(spread);
		c->last_seq = pick(spread);
		c->lost = pick(spread);
		c->last_addr = pick(spread);
		c->run_ns = pick(spread) >> 4;
		c->susp_ns = pick(spread) >> 4;
		c->warn = (uint32_t)(next() % 16);
		c->sw_per_sec = (double)(int64_t)pick(spread) / 3.0;
	}
	/* Shuffle: rows do not come in id order. */
	for (uint32_t i = N - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(next() % (i + 1));
		struct model_coro t = coro[i];

		coro[i] = coro[j];
		coro[j] = t;
	}
	snap.coro = coro;
	snap.count = snap.cap = N;
}

static int ref_col;
static bool ref_invert, ref_group;

static int ref_cmp(const void *pa, const void *pb)
{
	const struct model_coro *a = &coro[*(const uint32_t *)pa];
	const struct model_coro *b = &coro[*(const uint32_t *)pb];

	if (ref_group && a->last_tid != b->last_tid)
		return a->last_tid < b->last_tid ? -1 : 1;
	if (ref_col >= 0) {
		uint64_t x = column_table[ref_col].key(&snap, a);
		uint64_t y = column_table[ref_col].key(&snap, b);

		/* A rate (busiest_first) sorts descending unless inverted. */
		bool down = ref_invert != column_table[ref_col].busiest_first;

		if (x != y)
			return (x < y) != down ? -1 : 1;
	}
	return a->id < b->id ? -1 : a->id > b->id;
}

static void check_all(void)
{
	static uint32_t got[N], want[N];
	struct order o;

	order_init(&o);
	for (int col = -1; col < COL_COUNT; col++)
		for (int inv = 0; inv < 2; inv++)
			for (int grp = 0; grp < 2; grp++) {
				for (uint32_t i = 0; i < N; i++)
					got[i] = want[i] = i;
				assert_true(order_sort(&o, &snap, got, N, col,
						       inv, grp));
				ref_col = col;
				ref_invert = inv;
				ref_group = grp;
				qsort(want, N, sizeof(*want), ref_cmp);
				if (memcmp(got, want, sizeof(got)))
					fail_msg("column %d invert %d group %d "
						 "differs from the reference",
						 col, inv, grp);
			}
	order_finish(&o);
}

static void test_ties(void **state)
{
	(void)state;
	fill(0);
	check_all();
}

static void test_full_keys(void **state)
{
	(void)state;
	fill(1);
	check_all();
}

/* Rows already in id order skip the id pass; the result is the same. */
static void test_presorted_and_small(void **state)
{
	static uint32_t idx[N];
	struct order o;

	(void)state;
	fill(0);
	for (uint32_t i = 0; i < N; i++)
		coro[i].id = i + 1;
	check_all();
	order_init(&o);
	assert_true(order_sort(&o, &snap, idx, 0, COL_AGE, false, false));
	idx[0] = 7;
	assert_true(order_sort(&o, &snap, idx, 1, COL_AGE, true, true));
	assert_int_equal(idx[0], 7);
	assert_false(order_sort(&o, &snap, idx, 2, COL_COUNT, false, false));
	order_finish(&o);
}

/* Doubles order numerically, negatives first (the key is not the raw
 * bit pattern); SW/s is a rate, busiest first, so inverted is
 * ascending. */
static void test_double_keys(void **state)
{
	static const double v[] = {-1e300, -2.5, -0.0, 0.0,
				   1e-300, 0.5,	 3.0,  1e300};
	uint32_t idx[8];
	struct order o;

	(void)state;
	memset(coro, 0, sizeof(coro));
	for (uint32_t i = 0; i < 8; i++) {
		coro[i].id = 8 - i; /* reversed ids: ties would show */
		coro[i].sw_per_sec = v[7 - i];
		idx[i] = i;
	}
	snap.coro = coro;
	snap.count = snap.cap = 8;
	order_init(&o);
	assert_true(order_sort(&o, &snap, idx, 8, COL_SWPS, true, false));
	for (uint32_t i = 0; i < 8; i++)
		assert_true(coro[idx[i]].sw_per_sec == v[i]);
	assert_true(order_sort(&o, &snap, idx, 8, COL_SWPS, false, false));
	for (uint32_t i = 0; i < 8; i++)
		assert_true(coro[idx[i]].sw_per_sec == v[7 - i]);
	order_finish(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ties),
		cmocka_unit_test(test_full_keys),
		cmocka_unit_test(test_presorted_and_small),
		cmocka_unit_test(test_double_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
