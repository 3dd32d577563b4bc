/*
 * test-doorbell: corotop -p reaches a program in which nothing transitions
 * -- the probe's doorbell (src/probe/doorbell.c, src/engine/attach/doorbell.c)
 * -- over and over, in one process so that TSan sees every side: the
 * engine's threads, the doorbell's thread running the attach check, the
 * census thread walking the coroutines, and the retire at the detach.
 *
 * The process opens NCORO coroutines and parks each (resume, then
 * suspend) before any agent exists; after that nothing records anything.
 * Then, CYCLES times: an in-process engine attaches to the process's own
 * "corotop" buffer (engine_create with attach_pid = getpid()).  With no
 * transition to run the attach check, only the ring can bring the probe
 * live; the census must then publish every parked coroutine, which the
 * engine's snapshot shows suspended.  engine_destroy detaches and rings
 * again: the probe must retire the region without a transition.  Every
 * wait has a deadline; none assumes a speed.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "../common/itest.h"
#include "corotop/ppt.h"
#include "corotop/probe.h"
#include "engine/engine.h"
#include "probe/probe_internal.h"

#define NCORO 8
#define CYCLES 12
#define DEADLINE_MS 20000u

static struct corotop_coro coros[NCORO];

static int live_now(void)
{
	/* acquire: pairs with the probe's release when it attaches. */
	return __atomic_load_n(&corotop_probe_live_, __ATOMIC_ACQUIRE);
}

static bool wait_live(int want)
{
	uint64_t deadline = it_now() + DEADLINE_MS * 1000000ull;

	while (live_now() != want && it_now() < deadline)
		it_sleep_ms(1);
	return live_now() == want;
}

/* Suspended coroutines in the engine's snapshot. */
static size_t suspended(struct engine *e)
{
	struct snapshot s;
	size_t n = 0;

	snapshot_init(&s);
	engine_snapshot(e, &s);
	for (size_t i = 0; i < s.count; i++)
		n += s.coro[i].state == MODEL_SUSPENDED;
	snapshot_finish(&s);
	return n;
}

static void test_attach_with_nothing_moving(void **state)
{
	(void)state;
	for (unsigned i = 0; i < NCORO; i++) {
		corotop_coro_open(&coros[i], 0xd00 + i);
		corotop_coro_resume(&coros[i], 0x1000 + i);
		corotop_coro_suspend(&coros[i], 0x2000 + i);
	}
	assert_int_equal(live_now(), 0);
	for (unsigned k = 0; k < CYCLES; k++) {
		struct engine_config cfg;
		struct engine *e;
		char err[512];
		uint64_t deadline;
		size_t seen = 0;

		engine_config_defaults(&cfg);
		cfg.attach_pid = getpid();
		cfg.ppt_buffer = COROTOP_PPT_BUFFER_NAME;
		cfg.stations = 64;
		e = engine_create(&cfg, err, sizeof(err));
		if (!e)
			fail_msg("engine_create (cycle %u): %s", k, err);
		if (!engine_start(e, err, sizeof(err)))
			fail_msg("engine_start (cycle %u): %s", k, err);
		if (!wait_live(1))
			fail_msg("cycle %u: not attached: no ring heard", k);
		deadline = it_now() + DEADLINE_MS * 1000000ull;
		while ((seen = suspended(e)) < NCORO && it_now() < deadline)
			it_sleep_ms(2);
		if (seen != NCORO)
			fail_msg("cycle %u: %zu of %d parked coroutines shown",
				 k, seen, NCORO);
		assert_true(engine_destroy(e));
		if (!wait_live(0))
			fail_msg("cycle %u: not detached: no ring heard", k);
		assert_int_equal(
			__atomic_load_n(&_ppt_hmem_corotop, __ATOMIC_RELAXED),
			0);
	}
	print_message("%d attaches and detaches with no transition\n", CYCLES);
	for (unsigned i = 0; i < NCORO; i++)
		corotop_coro_close(&coros[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attach_with_nothing_moving),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
