/*
 * test-streammap: the (stream, substream) numbering replay and corotop
 * convert share (src/engine/heph/streammap.h) -- pairs are numbered 0, 1,
 * 2 ... in the order first seen, the same pair always gets its number
 * back, a lookup without `make` adds nothing, pairs that differ only in
 * the stream (or only in high bits of the substream) stay apart, and the
 * numbers survive the table's growth.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine/heph/streammap.h"

static void test_numbered_in_order(void **state)
{
	struct streammap m;

	(void)state;
	streammap_init(&m);
	assert_int_equal(streammap_get(&m, 7, 0, false), -1);
	assert_int_equal(streammap_get(&m, 7, 0, true), 0);
	assert_int_equal(streammap_get(&m, 7, 1, true), 1);
	assert_int_equal(streammap_get(&m, 8, 0, true), 2);
	assert_int_equal(streammap_get(&m, 7, 0, true), 0);
	assert_int_equal(streammap_get(&m, 7, 1, false), 1);
	assert_int_equal(streammap_get(&m, 9, 0, false), -1);
	assert_int_equal(m.n, 3);
	assert_int_equal(m.key[1].substream, 7);
	assert_int_equal(m.key[1].stream, 1);
	streammap_finish(&m);
}

/* 100k pairs, alike in their low bits: every number stays its pair's. */
static void test_growth_keeps_numbers(void **state)
{
	struct streammap m;
	const long n = 100000;

	(void)state;
	streammap_init(&m);
	for (long i = 0; i < n; i++)
		assert_int_equal(streammap_get(&m, (uint64_t)(i / 2) << 40,
					       (uint32_t)(i % 2), true),
				 i);
	for (long i = n - 1; i >= 0; i--)
		assert_int_equal(streammap_get(&m, (uint64_t)(i / 2) << 40,
					       (uint32_t)(i % 2), false),
				 i);
	assert_int_equal(m.n, (size_t)n);
	assert_true(m.nslot >= 2 * m.n);
	streammap_finish(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_numbered_in_order),
		cmocka_unit_test(test_growth_keeps_numbers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
