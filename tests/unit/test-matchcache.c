/*
 * matchcache: the filter's per-value result cache (src/ui/rows/matchcache.c).
 * Every stored key reads back its own result, including keys that share a
 * home bucket; reset and growth forget everything; a generation counter
 * that wraps does not bring old entries back; and a cache filled past
 * half starts over instead of probing forever.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ui/rows/matchcache.h"

static void test_put_get(void **state)
{
	struct matchcache mc;

	(void)state;
	matchcache_init(&mc);
	assert_int_equal(matchcache_get(&mc, 42), -1); /* no memory yet */
	matchcache_put(&mc, 42, true);		       /* ignored, no crash */
	assert_true(matchcache_reserve(&mc, 5000));
	assert_true(mc.cap >= 10000);
	/* Addresses 16 apart, thread-id-like small numbers and keys that
	 * differ only above bit 32 (the hash's input is the whole key). */
	for (uint64_t k = 0; k < 5000; k++) {
		uint64_t key = k % 3 == 0   ? 0x401000 + k * 16
			       : k % 3 == 1 ? k
					    : k << 33;

		matchcache_put(&mc, key, (k * 7) % 3 == 0);
	}
	for (uint64_t k = 0; k < 5000; k++) {
		uint64_t key = k % 3 == 0   ? 0x401000 + k * 16
			       : k % 3 == 1 ? k
					    : k << 33;

		assert_int_equal(matchcache_get(&mc, key), (k * 7) % 3 == 0);
	}
	assert_int_equal(matchcache_get(&mc, 0xdeadbeef), -1);
	/* Overwrite keeps one entry. */
	matchcache_put(&mc, 1, true);
	matchcache_put(&mc, 1, false);
	assert_int_equal(matchcache_get(&mc, 1), 0);
	assert_int_equal(mc.used, 5000);
	matchcache_finish(&mc);
}

static void test_reset_and_grow(void **state)
{
	struct matchcache mc;

	(void)state;
	matchcache_init(&mc);
	assert_true(matchcache_reserve(&mc, 10));
	matchcache_put(&mc, 7, true);
	matchcache_reset(&mc);
	assert_int_equal(matchcache_get(&mc, 7), -1);
	matchcache_put(&mc, 7, false);
	assert_int_equal(matchcache_get(&mc, 7), 0);
	/* Reserving no more than there is keeps the results... */
	assert_true(matchcache_reserve(&mc, 10));
	assert_int_equal(matchcache_get(&mc, 7), 0);
	/* ...growing forgets them. */
	assert_true(matchcache_reserve(&mc, 100000));
	assert_int_equal(matchcache_get(&mc, 7), -1);
	matchcache_finish(&mc);
}

static void test_gen_wrap(void **state)
{
	struct matchcache mc;

	(void)state;
	matchcache_init(&mc);
	assert_true(matchcache_reserve(&mc, 10));
	matchcache_put(&mc, 9, true); /* stored in generation 1 */
	mc.gen = UINT32_MAX;
	mc.last.gen = 1; /* as if 9 had been the last key of generation 1 */
	mc.last.key = 9;
	matchcache_put(&mc, 5, true);
	matchcache_reset(&mc); /* wraps to 0: back to 1 */
	assert_int_equal(mc.gen, 1);
	assert_int_equal(matchcache_get(&mc, 9), -1);
	assert_int_equal(matchcache_get(&mc, 5), -1);
	/* The front entry follows the same rule. */
	matchcache_put(&mc, 3, true);
	assert_int_equal(matchcache_get(&mc, 3), 1);
	matchcache_reset(&mc);
	assert_int_equal(matchcache_get(&mc, 3), -1);
	matchcache_finish(&mc);
}

static void test_overfill(void **state)
{
	struct matchcache mc;

	(void)state;
	matchcache_init(&mc);
	assert_true(matchcache_reserve(&mc, 10));
	for (uint64_t k = 1; k <= 100 * mc.cap; k++) {
		matchcache_put(&mc, k * 0x1000, k & 1);
		assert_true(mc.used * 2 <= mc.cap);
		assert_int_equal(matchcache_get(&mc, k * 0x1000), (int)(k & 1));
	}
	assert_int_equal(matchcache_get(&mc, 0x7), -1); /* terminates */
	matchcache_finish(&mc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_put_get),
		cmocka_unit_test(test_reset_and_grow),
		cmocka_unit_test(test_gen_wrap),
		cmocka_unit_test(test_overfill),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
