/*
 * test-e2e: the corotop binary, run the way people run it.
 *
 * Concept.  Everything here goes through fork/exec of the real program and
 * looks only at what a user or a script can see: stdout, stderr, the exit
 * status and the file system.  Every run gets its own private
 * XDG_RUNTIME_DIR (0700, ours), which is where corotop puts its private
 * region directory; after every run that directory must be empty again, so
 * any leaked region file or socket fails the test that leaked it.
 *
 *   - `corotop -b -n 3 -f json -- writer` prints exactly 3 lines, each a
 *     strict JSON object (tests/common/json-check.h) with the documented
 *     keys and types, and exits 0 (also with the bundled demo when it was
 *     built); read as they come, the snapshots come to hold the writer's 8
 *     coroutines (the demo's lost wakeups, named by file and line) -- waited
 *     for with a deadline, never assumed by the Nth snapshot;
 *   - the target's exit status passes through (exit 3 -> 3, killed by
 *     SIGTERM -> 128+15), with a final snapshot that says so;
 *   - `corotop -- /nonexistent` exits 1 and says why;
 *   - usage errors exit 2 with a one-line message and no output: unknown
 *     flag, missing command, non-number, missing value, --shm on a file that
 *     is not a cTP region;
 *   - hot stacks: test-e2e-hot.c;
 *   - the region file and its directory are gone after a normal exit, after
 *     SIGTERM (exit 143) and after SIGINT (exit 130), and the target with
 *     them.  The target reports its CTP_SHM_PATH through a file.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <dirent.h>

#include "../common/itest.h"
#include "json-check.h"

#ifndef ITEST_WRITER
#error "ITEST_WRITER must name the writer program"
#endif

#include "e2e.h"

/* The demo's lost wakeups, named by the symbolizer from its debug info:
 * function, offset, file and line. */
static bool stuck_named(const struct jv *v, const char *line)
{
	if (!parked_at(v, "stuck_wait_for_reply+0x"))
		return false;
	assert_non_null(strstr(line, "(workload.c:"));
	return true;
}

/* Our writer's 8 coroutines, and never another. */
static bool eight_of_ours(const struct jv *v)
{
	const struct jv *co = json_get(v, "coroutines");

	assert_true(co->n <= 8);
	for (size_t c = 0; c < co->n; c++) {
		double id = json_get(&co->items[c], "probe_id")->num;

		assert_true(id >= (double)IT_PROBE_ID(0) &&
			    id <= (double)IT_PROBE_ID(7));
	}
	return co->n == 8 && json_u64(v, "events.harvested") > 0;
}

/*
 * `-n 3`: exactly 3 strict JSON lines, one target whose pid never changes,
 * harvested never going back, exit 0, the target gone with corotop.  What
 * the snapshots hold depends on how far the target got by then, so it is
 * not asserted here: see wait_for_content.
 */
static void three_json_snapshots(char *const argv[])
{
	struct proc p;
	char *lines[8];
	double last_harvested = -1, pid = -1;
	int rc;

	rc = run(&p, argv, 60000);
	if (rc != 0)
		fail_msg("corotop exit %d; stderr: %s", rc, p.ebuf);
	assert_int_equal(split_lines(p.obuf, lines, 8), 3);
	for (int i = 0; i < 3; i++) {
		struct jv v;
		size_t n = check_snapshot(lines[i], false, &v);
		double h = json_need(&v, "events.harvested", J_NUM)->num;

		print_message("snapshot %d: %zu coroutines, %.0f events\n", i,
			      n, h);
		assert_true(h >= last_harvested);
		last_harvested = h;
		if (pid < 0)
			pid = json_need(&v, "target.pid", J_NUM)->num;
		assert_true(json_need(&v, "target.pid", J_NUM)->num == pid);
		json_free(&v);
	}
	/* The target was stopped with corotop. */
	assert_true(kill((pid_t)pid, 0) < 0 && errno == ESRCH);
	assert_xdg_empty();
	proc_free(&p);
}

/*
 * What the snapshots hold: read them as they come until one has it (our
 * writer: its 8 coroutines and events; the demo: a lost wakeup parked at
 * a named line), with a deadline; every snapshot on the way has the
 * documented shape.  Then SIGINT: exit 130.
 */
static void wait_for_content(char *const argv[], bool our_writer)
{
	uint64_t end = it_now() + 60ull * 1000000000u;
	size_t off = 0, n = 0;
	bool found = false;
	struct proc p;
	char *line;

	proc_start(&p, argv);
	while (!found && it_now() < end &&
	       (line = proc_line_by(&p, &off, end)) != NULL) {
		struct jv v;

		check_snapshot(line, false, &v);
		found = our_writer ? eight_of_ours(&v) : stuck_named(&v, line);
		json_free(&v);
		free(line);
		n++;
	}
	kill(p.pid, SIGINT);
	assert_int_equal(exit_code(proc_finish(&p, 30000)), 130);
	print_message("%s after %zu snapshots\n", found ? "found" : "NOT found",
		      n);
	if (!found)
		fail_msg("%s: no snapshot within 60 s; stderr: %s",
			 our_writer ? "the writer's 8 coroutines"
				    : "a lost wakeup named at workload.c",
			 p.ebuf);
	assert_xdg_empty();
	proc_free(&p);
}

static void test_json_three_snapshots(void **state)
{
	char *argv[] = {ITEST_COROTOP, "-b",	     "-n",  "3",  "-f", "json",
			"--",	       ITEST_WRITER, "run", "60", "8",	NULL};
	char *live[] = {ITEST_COROTOP, "-b",	     "-d",  "2",  "-f", "json",
			"--",	       ITEST_WRITER, "run", "60", "8",	NULL};

	(void)state;
	three_json_snapshots(argv);
	wait_for_content(live, true);
}

static void test_json_three_snapshots_demo(void **state)
{
#ifdef ITEST_DEMO
	char *argv[] = {ITEST_COROTOP, "-b",   "-n", "3",	 "-d", "5",
			"-f",	       "json", "--", ITEST_DEMO, NULL};
	char *live[] = {ITEST_COROTOP, "-b", "-d",	 "5", "-f",
			"json",	       "--", ITEST_DEMO, NULL};

	(void)state;
	three_json_snapshots(argv);
	wait_for_content(live, false);
#else
	(void)state;
	skip();
#endif
}

static void test_exit_status_passes_through(void **state)
{
	char *argv3[] = {ITEST_COROTOP, "-b",	"-f", "json", "--",
			 ITEST_WRITER,	"exit", "3",  NULL};
	char *argv0[] = {ITEST_COROTOP, "-b",	"-f", "json", "--",
			 ITEST_WRITER,	"exit", "0",  NULL};
	char *argvs[] = {ITEST_COROTOP, "-b",	  "-f", "json", "--",
			 ITEST_WRITER,	"signal", "15", NULL};
	char *lines[4];
	struct proc p;
	struct jv v;

	(void)state;
	assert_int_equal(run(&p, argv3, 30000), 3);
	/* One final snapshot that reports the exit. */
	assert_int_equal(split_lines(p.obuf, lines, 4), 1);
	check_snapshot(lines[0], true, &v);
	assert_int_equal(json_need(&v, "target.exit_status", J_NUM)->num, 3);
	json_free(&v);
	assert_xdg_empty();
	proc_free(&p);

	assert_int_equal(run(&p, argv0, 30000), 0);
	assert_xdg_empty();
	proc_free(&p);

	assert_int_equal(run(&p, argvs, 30000), 128 + SIGTERM);
	assert_int_equal(split_lines(p.obuf, lines, 4), 1);
	check_snapshot(lines[0], true, &v);
	assert_int_equal(json_get(&v, "target.exit_status")->t, J_NULL);
	assert_int_equal(json_need(&v, "target.term_signal", J_NUM)->num,
			 SIGTERM);
	json_free(&v);
	assert_xdg_empty();
	proc_free(&p);
}

static void test_nonexistent_command(void **state)
{
	char *argv[] = {ITEST_COROTOP, "-b", "--", "/nonexistent/itest-prog",
			NULL};
	struct proc p;

	(void)state;
	assert_int_equal(run(&p, argv, 30000), 1);
	print_message("stderr: %s", p.ebuf);
	assert_non_null(strstr(p.ebuf, "/nonexistent/itest-prog"));
	assert_non_null(strstr(p.ebuf, "No such file"));
	assert_int_equal(p.olen, 0);
	assert_xdg_empty();
	proc_free(&p);
}

static void usage_error(char *const argv[], const char *what)
{
	struct proc p;
	char *nl;
	int rc;

	rc = run(&p, argv, 30000);
	print_message("%s: exit %d: %s", what, rc, p.ebuf);
	assert_int_equal(rc, 2);
	/* One line that names the problem; nothing on stdout. */
	assert_true(p.elen > 0);
	nl = strchr(p.ebuf, '\n');
	assert_non_null(nl);
	assert_int_equal(nl[1], '\0');
	assert_non_null(strstr(p.ebuf, "corotop"));
	assert_int_equal(p.olen, 0);
	assert_xdg_empty();
	proc_free(&p);
}

/* Batch mode honours --sort and -F: rows in the column's order (ties by
 * id), and only the rows the filter keeps.  How many of the writer's 8
 * coroutines a snapshot holds depends on how far it got: the filter's
 * case reads snapshots until the counts say all 8 are there (deadline). */
static void test_batch_sort_and_filter(void **state)
{
	char *sorted[] = {ITEST_COROTOP, "-b",	       "-n",	 "2",
			  "-f",		 "json",       "--sort", "switches",
			  "--",		 ITEST_WRITER, "run",	 "60",
			  "8",		 NULL};
	char *filtered[] = {
		ITEST_COROTOP,	 "-b", "-d",	     "2",   "-f", "json", "-F",
		"id=5000000003", "--", ITEST_WRITER, "run", "60", "8",	  NULL};
	uint64_t end;
	char *lines[4], *line;
	size_t off = 0;
	bool all = false;
	struct proc p;
	int rc;

	(void)state;
	rc = run(&p, sorted, 60000);
	if (rc != 0)
		fail_msg("corotop exit %d; stderr: %s", rc, p.ebuf);
	assert_int_equal(split_lines(p.obuf, lines, 4), 2);
	for (int i = 0; i < 2; i++) {
		struct jv v;
		const struct jv *co;

		check_snapshot(lines[i], false, &v);
		co = json_need(&v, "coroutines", J_ARR);
		assert_true(co->n <= 8);
		for (size_t c = 1; c < co->n; c++) {
			double s0 =
				json_need(&co->items[c - 1], "switches", J_NUM)
					->num;
			double s1 = json_need(&co->items[c], "switches", J_NUM)
					    ->num;

			assert_true(
				s0 < s1 ||
				(s0 == s1 &&
				 json_need(&co->items[c - 1], "id", J_NUM)
						 ->num <
					 json_need(&co->items[c], "id", J_NUM)
						 ->num));
		}
		json_free(&v);
	}
	proc_free(&p);

	proc_start(&p, filtered);
	end = it_now() + 60ull * 1000000000u;
	while (!all && it_now() < end &&
	       (line = proc_line_by(&p, &off, end)) != NULL) {
		struct jv v;
		const struct jv *co;

		check_snapshot(line, false, &v);
		co = json_need(&v, "coroutines", J_ARR);
		assert_true(co->n <= 1);
		if (co->n)
			assert_true(json_need(&co->items[0], "probe_id", J_NUM)
					    ->num == (double)IT_PROBE_ID(3));
		/* The counts still describe every coroutine. */
		all = json_need(&v, "counts.running", J_NUM)->num +
			      json_need(&v, "counts.suspended", J_NUM)->num ==
		      8;
		if (all)
			assert_int_equal(co->n, 1);
		json_free(&v);
		free(line);
	}
	kill(p.pid, SIGINT);
	assert_int_equal(exit_code(proc_finish(&p, 30000)), 130);
	if (!all)
		fail_msg("no snapshot counted the writer's 8 coroutines within "
			 "60 s; stderr: %s",
			 p.ebuf);
	assert_xdg_empty();
	proc_free(&p);
}

static void test_usage_errors(void **state)
{
	char junk[300];
	char *unknown[] = {ITEST_COROTOP, "--bogus", "--", ITEST_WRITER,
			   "exit",	  "0",	     NULL};
	char *nocmd[] = {ITEST_COROTOP, "-b", NULL};
	char *nonum[] = {ITEST_COROTOP, "-b",	"-n", "abc", "--",
			 ITEST_WRITER,	"exit", "0",  NULL};
	char *novalue[] = {ITEST_COROTOP, "-b", "-n", NULL};
	char *badshm[] = {ITEST_COROTOP, "-b", "--shm", junk, NULL};
	char *badfilter[] = {ITEST_COROTOP, "-b",   "-F", "colour=red", "--",
			     ITEST_WRITER,  "exit", "0",  NULL};
	FILE *f;

	(void)state;
	usage_error(unknown, "unknown flag");
	usage_error(nocmd, "missing command");
	usage_error(nonum, "non-number");
	usage_error(novalue, "missing value");
	usage_error(badfilter, "-F with an unknown column");
	/* A regular file of ours, big enough, but not a cTP region. */
	snprintf(junk, sizeof(junk), "%s.not-a-region", xdg);
	f = fopen(junk, "w");
	assert_non_null(f);
	for (int i = 0; i < 4096; i++)
		fputc('x', f);
	fclose(f);
	usage_error(badshm, "--shm on a non-cTP file");
	unlink(junk);
}

/*
 * --sample HZ and --parked-stacks: the target finds COROTOP_SAMPLE_HZ=HZ and
 * COROTOP_PARKED_STACKS=1 in its environment (its probe switches them on);
 * without them, neither is set.  Out of range is a usage error.
 */
#define SAMPLE_ECHO                                                            \
	"echo \"sample=[$COROTOP_SAMPLE_HZ] parked=[$COROTOP_PARKED_STACKS]\""

static void test_sample_sets_env(void **state)
{
	char *with[] = {
		ITEST_COROTOP,	   "-b", "-f",	    "json", "--sample",	 "250",
		"--parked-stacks", "--", "/bin/sh", "-c",   SAMPLE_ECHO, NULL};
	char *without[] = {ITEST_COROTOP, "-b", "-f",	     "json", "--",
			   "/bin/sh",	  "-c", SAMPLE_ECHO, NULL};
	char *bad[] = {ITEST_COROTOP, "-b",   "--sample", "10001", "--",
		       ITEST_WRITER,  "exit", "0",	  NULL};
	struct proc p;

	(void)state;
	unsetenv("COROTOP_SAMPLE_HZ");
	unsetenv("COROTOP_PARKED_STACKS");
	assert_int_equal(run(&p, with, 30000), 0);
	/* The target's stdout goes to our stderr in batch mode: our stdout
	 * is JSON only. */
	if (!strstr(p.ebuf, "sample=[250] parked=[1]"))
		fail_msg("target did not see COROTOP_SAMPLE_HZ=250 and "
			 "COROTOP_PARKED_STACKS=1: %s",
			 p.ebuf);
	assert_null(strstr(p.obuf, "sample="));
	proc_free(&p);
	assert_int_equal(run(&p, without, 30000), 0);
	assert_non_null(strstr(p.ebuf, "sample=[] parked=[]"));
	assert_null(strstr(p.obuf, "sample="));
	proc_free(&p);
	usage_error(bad, "--sample out of range");
	assert_xdg_empty();
}

/* ---- cleanup on every way out ---- */

static bool wait_file(const char *path, unsigned ms)
{
	uint64_t end = it_now() + (uint64_t)ms * 1000000u;

	while (it_now() < end) {
		if (it_path_exists(path))
			return true;
		it_sleep_ms(10);
	}
	return false;
}

/*
 * Start `corotop ... -- writer shmpath FILE 60`, learn the region path from
 * the target, then end corotop with `sig` (0: let -n end it) and check that
 * the exit code is `want` and that the region, its directory and the target
 * are gone.
 */
static void cleanup_case(int sig, int want)
{
	char file[300], shm[512], dir[512];
	char *argv[] = {ITEST_COROTOP,	    "-b", "-d",	  "2",	"-n",
			sig ? "1000" : "3", "-f", "json", "--", ITEST_WRITER,
			"shmpath",	    file, "60",	  NULL};
	struct proc p;
	int target = 0, rc;
	FILE *f;

	snprintf(file, sizeof(file), "%s.shmpath-%d", xdg, sig);
	unlink(file);
	proc_start(&p, argv);
	if (!wait_file(file, 60000)) {
		kill(p.pid, SIGKILL);
		fail_msg("the target never reported its region");
	}
	f = fopen(file, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%511s %d", shm, &target), 2);
	fclose(f);
	unlink(file);
	print_message("region %s, target %d\n", shm, target);
	/* The region lives in our private runtime dir while corotop runs. */
	assert_int_equal(strncmp(shm, xdg, strlen(xdg)), 0);
	assert_true(it_path_exists(shm));
	snprintf(dir, sizeof(dir), "%s", shm);
	*strrchr(dir, '/') = '\0';
	if (sig) {
		proc_pump(&p, 300); /* past its setup: a snapshot or two */
		assert_int_equal(kill(p.pid, sig), 0);
	}
	rc = exit_code(proc_finish(&p, 30000));
	print_message("%s: exit %d\n", sig ? strsignal(sig) : "-n", rc);
	assert_int_equal(rc, want);
	assert_false(it_path_exists(shm));
	assert_false(it_path_exists(dir));
	assert_xdg_empty();
	assert_true(kill(target, 0) < 0 && errno == ESRCH);
	proc_free(&p);
}

static void test_cleanup_after_normal_exit(void **state)
{
	(void)state;
	cleanup_case(0, 0);
}

static void test_cleanup_after_sigterm(void **state)
{
	(void)state;
	cleanup_case(SIGTERM, 128 + SIGTERM);
}

static void test_cleanup_after_sigint(void **state)
{
	(void)state;
	cleanup_case(SIGINT, 128 + SIGINT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_three_snapshots),
		cmocka_unit_test(test_json_three_snapshots_demo),
		cmocka_unit_test(test_batch_sort_and_filter),
		cmocka_unit_test(test_exit_status_passes_through),
		cmocka_unit_test(test_nonexistent_command),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_sample_sets_env),
		cmocka_unit_test(test_cleanup_after_normal_exit),
		cmocka_unit_test(test_cleanup_after_sigterm),
		cmocka_unit_test(test_cleanup_after_sigint),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup_xdg, teardown_xdg);
}
