/*
 * test-where-names: the engine names the addresses a snapshot carries, and the
 * snapshot carries the names as text (engine_query.c, namecache.c).
 *
 * The target is the bundled demo: its switch sites are its own functions,
 * so every WHERE has a name.  An engine that names later (the TUI's) gives
 * snapshots at once, in hex where a name has not come yet, and names them
 * in a later snapshot; one that names now (batch) names the first
 * snapshot that has the records.  Every wait is for a condition, with a
 * deadline; no assertion depends on how fast the names thread is.
 */
#include "itest.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "engine/engine.h"

#define NAMES_CORO 20 /* the demo's long-lived coroutines (-c) */

static atomic_uint publishes;

static void count_publish(void *ctx)
{
	(void)ctx;
	/* relaxed: a count the test reads after the engine is stopped */
	atomic_fetch_add_explicit(&publishes, 1, memory_order_relaxed);
}

/* Records of s with an address: how many, and how many show in hex. */
static size_t where_counts(const struct snapshot *s, size_t *hex, bool *stuck)
{
	size_t n = 0;

	*hex = 0;
	*stuck = false;
	for (size_t i = 0; i < s->count; i++) {
		char buf[256];

		if (!s->coro[i].last_addr || s->coro[i].state == MODEL_DEAD)
			continue;
		n++;
		snapshot_where(s, s->coro[i].last_addr, true, buf, sizeof(buf));
		if (!strncmp(buf, "0x", 2))
			(*hex)++;
		if (strstr(buf, "stuck_wait_for_reply"))
			*stuck = true;
	}
	return n;
}

static struct engine *start(bool later)
{
	static char *argv[] = {ITEST_DEMO, "-d", "60", "-c", "20", NULL};
	struct engine_config cfg;
	struct engine *e;
	char err[512];

	engine_config_defaults(&cfg);
	cfg.argv = argv;
	cfg.names_later = later;
	cfg.publish_hook = count_publish;
	e = engine_create(&cfg, err, sizeof(err));
	if (!e)
		fail_msg("engine_create: %s", err);
	if (!engine_start(e, err, sizeof(err)))
		fail_msg("engine_start: %s", err);
	return e;
}

/* Names later: snapshots come whatever the names thread does, and in the
 * end every WHERE is a name, the stuck coroutines' included. */
static void test_later(void **state)
{
	struct engine *e = start(true);
	struct snapshot s;
	uint64_t end = it_now() + 30ull * 1000000000u;
	bool saw_hex = false, stuck = false;
	size_t n = 0, hex = 1;

	(void)state;
	snapshot_init(&s);
	while (it_now() < end) {
		engine_snapshot(e, &s);
		n = where_counts(&s, &hex, &stuck);
		if (hex)
			saw_hex = true;
		if (n >= NAMES_CORO && !hex && stuck)
			break;
		it_sleep_ms(20);
	}
	print_message("later: %zu records, %zu in hex, stuck named: %d; "
		      "a snapshot showed hex first: %d\n",
		      n, hex, stuck, saw_hex);
	assert_true(n >= NAMES_CORO);
	assert_int_equal(hex, 0);
	assert_true(stuck);
	engine_terminate_target(e, 2000);
	engine_destroy(e);
	assert_true(atomic_load_explicit(&publishes, memory_order_relaxed) > 0);
	snapshot_finish(&s);
}

/* Names now: the first snapshot with the records has every name. */
static void test_now(void **state)
{
	struct engine *e = start(false);
	struct snapshot s;
	uint64_t end = it_now() + 30ull * 1000000000u;
	bool stuck = false;
	size_t n = 0, hex = 0;

	(void)state;
	snapshot_init(&s);
	while (it_now() < end) {
		engine_snapshot(e, &s);
		n = where_counts(&s, &hex, &stuck);
		assert_int_equal(hex, 0); /* every snapshot, the first too */
		if (n >= NAMES_CORO && stuck)
			break;
		it_sleep_ms(20);
	}
	assert_true(n >= NAMES_CORO);
	assert_true(stuck);
	engine_terminate_target(e, 2000);
	engine_destroy(e);
	snapshot_finish(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_later),
		cmocka_unit_test(test_now),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
