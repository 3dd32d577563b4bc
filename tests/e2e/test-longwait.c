/*
 * End to end: long waits (issue 16).  A suspend the program marks as
 * expected to last -- corotop_coro_suspend_long for one suspend,
 * corotop_coro_set_long_waits for every suspend of a coroutine -- is not a
 * lost wakeup, however long it lasts; an unmarked one is.
 *
 * `corotop -b -f json -d 1 -- longwait-target` with the lost-wakeup
 * threshold at 1 s (lint.lost-wakeup.threshold in a config file of the
 * test's own): the target's four coroutines park at once, two marked
 * ("idle-conn", "keepalive"), two not ("once", whose mark ended with its
 * resume, and "stuck").  Snapshots are read as they come until one shows
 * all four suspended for longer than the threshold (the condition the lint
 * itself compares, read from the snapshot: no guess about timing), within
 * a 60 s deadline, then SIGINT ends the run (no -n: a snapshot count
 * would end it a fixed time after the start, before a slow start had
 * parked all four).  That snapshot must flag exactly the unmarked two, say
 * "long_wait" true for the marked two and false for the others, and count
 * 2 lost-wakeups.
 *
 * The run is recorded (--record), and the recording replayed in batch
 * mode: its last snapshot, the recording's end, when all four had been
 * parked past the threshold, flags the same two and says long_wait for
 * the same two (the recorder writes the mark as a `long_wait` attribute of
 * the suspended interval).
 */
#define _GNU_SOURCE
#include <sys/stat.h>

#include "e2e.h"

#ifndef LONGWAIT_TARGET
#error "LONGWAIT_TARGET must name the target program"
#endif

#define THRESHOLD_NS 1000000000ull /* lint.lost-wakeup.threshold = 1 */
#define DEADLINE_NS 60000000000ull
#define LONGWAIT_ID(k) (0x4c570000ull + (k))

/* What coroutine k must show: name, marked or not. */
static const struct {
	const char *name;
	bool marked;
} want[4] = {
	{"idle-conn", true},
	{"keepalive", true},
	{"once", false},
	{"stuck", false},
};

/* A config of the test's own: the lost-wakeup threshold at 1 s. */
static int setup(void **state)
{
	return setup_conf(state, "lint.lost-wakeup.threshold = 1\n");
}

static int teardown(void **state)
{
	teardown_conf("longwait.heph");
	return teardown_xdg(state);
}

/* Coroutine k of the target in snapshot v, or NULL. */
static const struct jv *coro_of(const struct jv *v, unsigned k)
{
	const struct jv *co = json_need(v, "coroutines", J_ARR);

	for (size_t i = 0; i < co->n; i++)
		if (json_u64(&co->items[i], "probe_id") == LONGWAIT_ID(k))
			return &co->items[i];
	return NULL;
}

static bool warned(const struct jv *c, const char *lint)
{
	const struct jv *w = json_need(c, "warn", J_ARR);

	for (size_t i = 0; i < w->n; i++)
		if (w->items[i].t == J_STR && !strcmp(w->items[i].s, lint))
			return true;
	return false;
}

/* All four parked longer than the threshold in v. */
static bool all_past_threshold(const struct jv *v)
{
	for (unsigned k = 0; k < 4; k++) {
		const struct jv *c = coro_of(v, k);

		if (!c ||
		    strcmp(json_need(c, "state", J_STR)->s, "suspended") ||
		    json_u64(c, "in_state_ns") <= THRESHOLD_NS)
			return false;
	}
	return true;
}

/* Every snapshot on the way: a marked coroutine is never flagged. */
static void check_marked_never_flagged(const struct jv *v)
{
	for (unsigned k = 0; k < 4; k++) {
		const struct jv *c = coro_of(v, k);

		if (!c || !want[k].marked ||
		    strcmp(json_need(c, "state", J_STR)->s, "suspended"))
			continue;
		if (warned(c, "lost-wakeup"))
			fail_msg("%s (marked long) flagged lost-wakeup",
				 want[k].name);
	}
}

/* Snapshot v flags exactly the unmarked two and says long_wait for the
 * marked two. */
static void check_flags(const struct jv *v, const char *what)
{
	for (unsigned k = 0; k < 4; k++) {
		const struct jv *c = coro_of(v, k);

		if (!c)
			fail_msg("%s: coroutine %s missing", what,
				 want[k].name);
		assert_string_equal(json_need(c, "name", J_STR)->s,
				    want[k].name);
		if (warned(c, "lost-wakeup") == want[k].marked)
			fail_msg("%s: %s: lost-wakeup %s, expected %s", what,
				 want[k].name,
				 want[k].marked ? "flagged" : "not flagged",
				 want[k].marked ? "none" : "flagged");
		if (json_need(c, "long_wait", J_BOOL)->b != want[k].marked)
			fail_msg("%s: %s: long_wait %s", what, want[k].name,
				 want[k].marked ? "false" : "true");
	}
	assert_int_equal(json_u64(v, "warnings.lost-wakeup"), 2);
}

static void test_long_waits_not_flagged(void **state)
{
	char rec[400];
	char *argv[] = {ITEST_COROTOP, "-b",	   "-d", "1",  "-f",
			"json",	       "--record", rec,	 "--", LONGWAIT_TARGET,
			"120",	       NULL};
	char *replay[] = {ITEST_COROTOP, "--replay", rec,   "-b", "-f",
			  "json",	 "-d",	     "600", NULL};
	char *lines[64];
	struct proc rp;
	size_t nl;
	uint64_t end = it_now() + DEADLINE_NS;
	char *line, *found = NULL;
	size_t off = 0;
	struct proc p;
	struct jv v;
	int code;

	(void)state;
	snprintf(rec, sizeof(rec), "%s/longwait.heph", conf_dir);
	proc_start(&p, argv);
	while (!found && it_now() < end &&
	       (line = proc_line_by(&p, &off, end)) != NULL) {
		check_snapshot(line, false, &v);
		check_marked_never_flagged(&v);
		if (all_past_threshold(&v))
			found = line;
		else
			free(line);
		json_free(&v);
	}
	kill(p.pid, SIGINT);
	code = exit_code(proc_finish(&p, 30000));
	assert_int_equal(code, 130);
	if (!found)
		fail_msg("no snapshot with all four parked past %llu ns within "
			 "60 s; stderr: %s",
			 (unsigned long long)THRESHOLD_NS, p.ebuf);
	check_snapshot(found, false, &v);
	check_flags(&v, "live");
	json_free(&v);
	free(found);
	proc_free(&p);

	/* The recording, replayed: its end is later than that snapshot. */
	code = run(&rp, replay, 60000);
	if (code)
		fail_msg("replay exit %d; stderr: %s", code, rp.ebuf);
	nl = split_lines(rp.obuf, lines, 64);
	assert_true(nl >= 1);
	json_must_parse(lines[nl - 1], &v);
	check_flags(&v, "replay");
	json_free(&v);
	proc_free(&rp);
	unlink(rec);
	assert_xdg_empty();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_long_waits_not_flagged),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
