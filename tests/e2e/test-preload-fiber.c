/*
 * e2e-preload-fiber: a Boost.Fiber program that lives a few milliseconds
 * (tests/targets/fiber_examples.cpp, in the shapes of Boost's own
 * examples: ping-pong over channels, fibers of a function object and of a
 * lambda joined by main), run under `corotop -b -f json`: its final
 * snapshot -- printed after the program exited, before any periodic one
 * -- names every fiber in the program's words, from the entry the preload
 * sent with each context (ctp_station_ext.entry: Boost's fiber_entry
 * template, made for the program's lambda or function object), and shows
 * no WHERE in hex (issue 28).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "e2e.h"

static const char *coro_str(const struct jv *c, const char *key)
{
	const struct jv *n = json_get(c, key);

	return n && n->t == J_STR ? n->s : "";
}

static void test_short_program_named(void **state)
{
	/* -d 600: one minute between snapshots; the only one printed is
	 * the final one, at the program's exit. */
	char *argv[] = {ITEST_COROTOP, "-b",  "-f", "json",
			"-d",	       "600", "--", ITEST_FIBER_EXAMPLES,
			NULL};
	uint64_t end = it_now() + 60ull * 1000000000u;
	unsigned lambdas = 0, objects = 0, snapshots = 0;
	struct proc p;
	struct jv v, last = {0};
	size_t off = 0;

	(void)state;
	proc_start(&p, argv);
	while (snapshot_by(&p, &off, end, &v)) {
		if (snapshots++)
			json_free(&last);
		last = v;
	}
	assert_int_equal(exit_code(proc_finish(&p, 60000)), 0);
	if (!snapshots)
		fail_msg("no snapshot: %s", p.ebuf);
	{
		const struct jv *co = json_need(&last, "coroutines", J_ARR);

		for (size_t i = 0; i < co->n; i++) {
			const struct jv *c = &co->items[i];
			const char *name = coro_str(c, "name");
			const char *where = coro_str(c, "where");

			if (!strncmp(where, "0x", 2))
				fail_msg("%s: WHERE in hex: %s", name, where);
			if (strcmp(coro_str(c, "kind"), "coroutine"))
				continue;
			if (!strncmp(name, "main::{lambda()#", 16))
				lambdas++;
			else if (!strcmp(name, "counter"))
				objects++;
			else
				fail_msg("a fiber named '%s' (where %s)", name,
					 where);
		}
	}
	/* pinger, ponger, two lambda workers; three counters. */
	assert_int_equal(lambdas, 4);
	assert_int_equal(objects, 3);
	json_free(&last);
	proc_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_program_named),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
