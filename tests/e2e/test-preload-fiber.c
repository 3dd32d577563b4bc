/*
 * e2e-preload-fiber: a Boost.Fiber program that lives a few milliseconds
 * (tests/targets/fiber_examples.cpp, in the shapes of Boost's own
 * examples: ping-pong over channels, fibers of a function object, of a
 * lambda and of a plain function joined by main), run under
 * `corotop -b -f json --record`: its final snapshot -- printed after the
 * program exited, before any periodic one -- names every fiber in the
 * program's words, from the entry the preload sent with each context
 * (ctp_station_ext.entry: Boost's fiber_entry template, made for the
 * program's lambda or function object) or, for a plain function, which
 * the entry names only by type, from the function the preload found in
 * the fiber's worker_context (ctp_station_ext.made_for); and shows no
 * WHERE in hex (issue 28).  The recording, replayed at its end, names
 * them the same.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"

struct fiber_names {
	unsigned lambdas, objects, functions, contexts;
};

static const char *coro_str(const struct jv *c, const char *key)
{
	const struct jv *n = json_get(c, key);

	return n && n->t == J_STR ? n->s : "";
}

/* The fibers of a snapshot by name; any other name, or a WHERE in hex,
 * fails the test. */
static struct fiber_names count_names(const struct jv *snap, const char *what)
{
	const struct jv *co = json_need(snap, "coroutines", J_ARR);
	struct fiber_names n = {0};

	for (size_t i = 0; i < co->n; i++) {
		const struct jv *c = &co->items[i];
		const char *name = coro_str(c, "name");
		const char *where = coro_str(c, "where");

		if (!strncmp(where, "0x", 2))
			fail_msg("%s: %s: WHERE in hex: %s", what, name, where);
		if (strcmp(coro_str(c, "kind"), "coroutine"))
			continue;
		if (!strncmp(name, "main::{lambda()#", 16))
			n.lambdas++;
		else if (!strcmp(name, "counter"))
			n.objects++;
		else if (!strcmp(name, "count_by(int*, int)"))
			n.functions++;
		else if (!strcmp(name, "step(boost::context::fiber&&)"))
			n.contexts++;
		else
			fail_msg("%s: a fiber named '%s' (where %s)", what,
				 name, where);
	}
	return n;
}

/* pinger, ponger, two lambda workers; three counters; two of a plain
 * function, named after it (made_for); Boost.Context's fiber of a plain
 * function, the same way. */
static void expect_all(struct fiber_names n)
{
	assert_int_equal(n.lambdas, 4);
	assert_int_equal(n.objects, 3);
	assert_int_equal(n.functions, 2);
	assert_int_equal(n.contexts, 1);
}

/* The last snapshot argv prints, in *last; exit 0. */
static void last_snapshot(char *const argv[], struct jv *last)
{
	uint64_t end = it_now() + 60ull * 1000000000u;
	unsigned snapshots = 0;
	struct proc p;
	struct jv v;
	size_t off = 0;

	proc_start(&p, argv);
	while (snapshot_by(&p, &off, end, &v)) {
		if (snapshots++)
			json_free(last);
		*last = v;
	}
	assert_int_equal(exit_code(proc_finish(&p, 60000)), 0);
	if (!snapshots)
		fail_msg("no snapshot: %s", p.ebuf);
	proc_free(&p);
}

static void test_short_program_named(void **state)
{
	char rec[] = "/tmp/corotop-e2e-fiber-XXXXXX";
	int fd = mkstemp(rec);
	/* -d 600: one minute between snapshots; the only one printed is
	 * the final one, at the program's exit. */
	char *live[] = {
		ITEST_COROTOP, "-b",	   "-f", "json", "-d",
		"600",	       "--record", rec,	 "--",	 ITEST_FIBER_EXAMPLES,
		NULL};
	char *replay[] = {ITEST_COROTOP, "--replay", rec,   "-b", "-f",
			  "json",	 "--at",     "end", NULL};
	struct jv last = {0};

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	last_snapshot(live, &last);
	expect_all(count_names(&last, "live"));
	json_free(&last);

	/* The recording, at the last moment the program ran: the same. */
	memset(&last, 0, sizeof(last));
	last_snapshot(replay, &last);
	expect_all(count_names(&last, "replay"));
	json_free(&last);
	unlink(rec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_program_named),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
