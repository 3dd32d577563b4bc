/*
 * learned: the program frame last found per (coroutine, switch address)
 * (src/engine/model/learned.c).
 *
 *   get/put   a pair found is the frame last put for it; another
 *             coroutine at the same switch, or the same one at another
 *             switch, is not; zero keys and frames are never kept;
 *   bound     past the slots' room every pair put is found right after
 *             its put, old ones are replaced (counted), never mixed up:
 *             whatever a lookup answers is the frame put for that pair;
 *   replaced  a put that replaced another coroutine's pair names its
 *             record, whose lookup answers 0 from then on (a snapshot
 *             copy's learned WHERE changes with it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine/model/learned.h"

static void count_stack(void *ctx, uint64_t stack)
{
	assert_int_equal(stack, 0x77);
	(*(unsigned *)ctx)++;
}

static void test_get_put(void **state)
{
	struct learned l;
	uint64_t stack = 1;
	unsigned nstacks = 0;

	(void)state;
	assert_true(learned_init(&l, 100));
	assert_int_equal(learned_get(&l, 7, 0x1000, NULL), 0);
	learned_put(&l, 7, 7, 0x1000, 0x4242, 0);
	learned_put(&l, 8, 8, 0x1000, 0x4343, 0);
	learned_put(&l, 7, 7, 0x2000, 0x4444, 0);
	assert_int_equal(learned_get(&l, 7, 0x1000, NULL), 0x4242);
	assert_int_equal(learned_get(&l, 8, 0x1000, NULL), 0x4343);
	assert_int_equal(learned_get(&l, 7, 0x2000, NULL), 0x4444);
	assert_int_equal(learned_get(&l, 9, 0x1000, NULL), 0);
	/* The last walk wins, its stack with it. */
	learned_put(&l, 7, 7, 0x1000, 0x5555, 0x77);
	assert_int_equal(learned_get(&l, 7, 0x1000, &stack), 0x5555);
	/* Its own pair again: nobody else's replaced. */
	assert_int_equal(learned_put(&l, 7, 7, 0x1000, 0x5555, 0x77),
			 LEARNED_NONE);
	assert_int_equal(stack, 0x77);
	learned_stacks(&l, count_stack, &nstacks);
	assert_int_equal(nstacks, 1); /* only 7's has one */
	assert_int_equal(learned_get(&l, 9, 0x1000, &stack), 0);
	assert_int_equal(stack, 0);
	learned_put(&l, 0, 0, 0x1000, 1, 0);
	learned_put(&l, 10, 10, 0, 1, 0);
	learned_put(&l, 11, 11, 0x1000, 0, 0);
	assert_int_equal(learned_get(&l, 11, 0x1000, NULL), 0);
	assert_int_equal(l.puts, 5);
	assert_int_equal(l.replaced, 0);
	learned_finish(&l);
	/* Finished (or never initialised): answers 0, keeps nothing. */
	learned_put(&l, 7, 7, 0x1000, 1, 0);
	assert_int_equal(learned_get(&l, 7, 0x1000, NULL), 0);
}

static void test_bound(void **state)
{
	struct learned l;
	uint64_t found = 0, named = 0;

	(void)state;
	assert_true(learned_init(&l, 64));
	for (uint64_t id = 1; id <= 10000; id++) {
		uint32_t was = learned_put(&l, id, (uint32_t)id + 5,
					   0x1000 + id % 3, id * 16, 0);

		assert_int_equal(learned_get(&l, id, 0x1000 + id % 3, NULL),
				 id * 16);
		if (was == LEARNED_NONE)
			continue;
		/* Record id + 5 had pair id: an older one, gone now. */
		assert_true(was >= 6 && was < id + 5);
		assert_int_equal(
			learned_get(&l, was - 5, 0x1000 + (was - 5) % 3, NULL),
			0);
		named++;
	}
	/* Every pair is another coroutine's: each replacement named one. */
	assert_int_equal(named, l.replaced);
	for (uint64_t id = 1; id <= 10000; id++) {
		uint64_t f = learned_get(&l, id, 0x1000 + id % 3, NULL);

		assert_true(f == 0 || f == id * 16);
		found += f != 0;
	}
	assert_true(found <= 64);
	assert_true(found > 0);
	assert_int_equal(l.puts, 10000);
	assert_true(l.replaced >= 10000 - 64);
	learned_finish(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_put),
		cmocka_unit_test(test_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
