/*
 * test-recstacks: the stacks a recording waits for (recstacks.c): an id
 * waited for once however often it is named, asked at every retry until
 * answered, written once, never asked again; 0 is no id; the set bounded.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/record/recstacks.h"

static uint64_t known; /* the one id the "engine" has frames for */
static unsigned asked, emitted;
static uint64_t last_id, last_frame;

static size_t ask(void *ctx, uint64_t id, uint64_t *frames, size_t max)
{
	(void)ctx;
	asked++;
	if (id != known || max < 2)
		return 0;
	frames[0] = id + 1;
	frames[1] = id + 2;
	return 2;
}

static void emit(void *ctx, uint64_t id, const uint64_t *frames, size_t n)
{
	(void)ctx;
	assert_int_equal(n, 2);
	emitted++;
	last_id = id;
	last_frame = frames[1];
}

static void test_wait_retry(void **state)
{
	struct recstacks s;
	struct recstacks_io io = {ask, emit, NULL};

	(void)state;
	recstacks_init(&s);
	assert_false(recstacks_wait(&s, 0));
	assert_true(recstacks_wait(&s, 5));
	assert_true(recstacks_wait(&s, 5)); /* still waiting: once */
	assert_true(recstacks_wait(&s, 9));
	assert_int_equal(s.waiting, 2);
	known = 0;
	recstacks_retry(&s, &io);
	assert_int_equal(asked, 2);
	assert_int_equal(emitted, 0);
	known = 9;
	recstacks_retry(&s, &io);
	assert_int_equal(emitted, 1);
	assert_int_equal(last_id, 9);
	assert_int_equal(last_frame, 11);
	assert_int_equal(s.waiting, 1);
	assert_false(recstacks_wait(&s, 9)); /* written: not again */
	asked = 0;
	recstacks_retry(&s, &io);
	assert_int_equal(asked, 1); /* only 5 */
	recstacks_finish(&s);
}

static void test_bounded(void **state)
{
	struct recstacks s;
	unsigned taken = 0;

	(void)state;
	recstacks_init(&s);
	for (uint64_t id = 1; id <= 70000; id++)
		taken += recstacks_wait(&s, id);
	assert_int_equal(taken, 49152); /* 3/4 of 65536 */
	assert_int_equal(s.dropped, 70000 - 49152);
	recstacks_finish(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wait_retry),
		cmocka_unit_test(test_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
