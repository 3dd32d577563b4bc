/*
 * test-preload-same: programs that are legal but hostile to an
 * interposer, each run three ways -- natively, with libcorotop-preload in
 * LD_PRELOAD, and under `corotop --` (which preloads it and traces) --
 * must print the same and end with the same status.  The preload never
 * changes what a program does (issue 25).
 *
 * The programs (tests/targets):
 *   mkctx-args      makecontext with 1, 6, 7, 20, 32 and 40 pointer
 *                   arguments (over 32: glibc's makecontext reached
 *                   untouched, that context untraced, one note);
 *   boost-ucfiber   boost::context::fiber on Boost's ucontext backend,
 *                   which passes its record to makecontext as a pointer;
 *   fctx-host       two plugins loaded RTLD_LOCAL by a host that does not
 *                   link Boost, one on Debian's libboost_context, one on
 *                   another build of the interface (fcontext_b.S);
 *   fctx-return     an fcontext entry that returns (Boost: _exit(0));
 *   many-ctx        100,000 contexts alive at once: under corotop all of
 *                   them appear (the old table held 65,536 and said
 *                   nothing), and with COROTOP_CONTEXTS=50000 the rest are
 *                   counted in contexts.untracked;
 *   sh -c           a program wrapped in a shell: its coroutines carry its
 *                   own pid, both processes are listed, and a child that
 *                   links the probe is not traced a second time through
 *                   the LD_PRELOAD it inherited (the demo's coroutines
 *                   showed up twice);
 *   fork-ctx        contexts across fork (the child's coroutines on
 *                   stations of its own: the old probe went on writing
 *                   its parent's), exec and posix_spawn (the contexts of
 *                   an image that is gone end dead);
 *   sh -c demo      ended by the user: the shell's child goes too;
 *   sig-ctx         switches made from a signal handler, at a timer's
 *                   whim and forced (a test build of the preload raises
 *                   the signal inside its own switch): the same output,
 *                   and the right states at exit.
 *
 * The program's own output is compared: stdout and stderr together, less
 * the lines the preload or corotop add ("corotop: ..."), which are checked
 * on their own where a case expects one.  Under corotop the output goes to
 * --output FILE and corotop's exit status is the program's.  A sanitizer
 * build skips (the preload steps aside under ASan).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "e2e.h"

#ifndef ITEST_PRELOAD_LIB
#error "ITEST_PRELOAD_LIB must name libcorotop-preload"
#endif

/* The preload the LD_PRELOAD runs use: ITEST_PRELOAD_LIB, or its test
 * build with test points (ITEST_PRELOAD_HOOKED, given to corotop as
 * COROTOP_PRELOAD too) while a test forces an interleaving. */
static const char *preload_lib = ITEST_PRELOAD_LIB;

/* How a run ended, as one number: an exit code, or 128 + a signal (what
 * corotop exits with for a program killed by one). */
static int ended(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

/* Run argv with stdout and stderr on one pipe, LD_PRELOAD set or not;
 * returns how it ended, its output in *out (to free). */
static int run_direct(char *const argv[], bool preload, char **out)
{
	struct proc p;
	int o[2], status;

	memset(&p, 0, sizeof(p));
	assert_int_equal(pipe2(o, O_CLOEXEC), 0);
	p.pid = fork();
	assert_true(p.pid >= 0);
	if (p.pid == 0) {
		if (dup2(o[1], 1) < 0 || dup2(o[1], 2) < 0)
			_exit(126);
		unsetenv("CTP_SHM_PATH");
		unsetenv("CTP_SOCK_PATH");
		unsetenv("CTP_MAX_STATIONS");
		if (preload)
			setenv("LD_PRELOAD", preload_lib, 1);
		else
			unsetenv("LD_PRELOAD");
		execv(argv[0], argv);
		_exit(127);
	}
	close(o[1]);
	p.out = o[0];
	p.err = -1;
	status = proc_finish(&p, 120000);
	*out = p.obuf;
	free(p.ebuf);
	return ended(status);
}

/* Run argv under corotop (batch, its output to a file); returns corotop's
 * exit status, the program's output in *out (to free). */
static int run_corotop(char *const argv[], char **out)
{
	char path[512], *cv[64];
	struct proc p;
	size_t n = 0, len;
	int rc;
	FILE *f;

	snprintf(path, sizeof(path), "%s.same-output", xdg);
	unlink(path);
	cv[n++] = ITEST_COROTOP;
	cv[n++] = "-b";
	cv[n++] = "-d";
	cv[n++] = "10";
	cv[n++] = "--output";
	cv[n++] = path;
	cv[n++] = "--";
	for (size_t i = 0; argv[i] && n < 63; i++)
		cv[n++] = argv[i];
	cv[n] = NULL;
	proc_start(&p, cv);
	rc = ended(proc_finish(&p, 120000));
	proc_free(&p);
	f = fopen(path, "r");
	assert_non_null(f);
	*out = NULL;
	len = 0;
	assert_true(getdelim(out, &len, '\0', f) >= 0 || feof(f));
	if (!*out)
		*out = calloc(1, 1);
	fclose(f);
	unlink(path);
	return rc;
}

/* out without the lines that start with "corotop: " (in place); how many
 * of those contained `note` (NULL: any). */
static unsigned strip_notes(char *out, const char *note)
{
	char *r = out, *w = out;
	unsigned found = 0;

	while (*r) {
		char *nl = strchr(r, '\n');
		size_t len = nl ? (size_t)(nl - r) + 1 : strlen(r);

		if (!strncmp(r, "corotop: ", 9)) {
			char save = r[len - 1];

			r[len - 1] = '\0';
			found += !note || strstr(r, note) != NULL;
			r[len - 1] = save;
		} else {
			memmove(w, r, len);
			w += len;
		}
		r += len;
	}
	*w = '\0';
	return found;
}

/*
 * The three runs of argv: the same output (less notes) and the same end,
 * which must be `want`; `note`, when set, is a note the preload must print
 * once in each of the two preloaded runs.
 */
static void same_three_ways(char *const argv[], int want, const char *note)
{
	char *native, *pre, *traced;
	int a = run_direct(argv, false, &native);
	int b = run_direct(argv, true, &pre);
	int c = run_corotop(argv, &traced);
	unsigned nb = strip_notes(pre, note), nc = strip_notes(traced, note);

	print_message("%s: native %d, LD_PRELOAD %d, corotop %d\n", argv[0], a,
		      b, c);
	strip_notes(native, NULL);
	if (strcmp(native, pre) || strcmp(native, traced))
		fail_msg(
			"%s: the output differs\n-- native:\n%s-- LD_PRELOAD:\n"
			"%s-- corotop:\n%s",
			argv[0], native, pre, traced);
	assert_int_equal(a, want);
	assert_int_equal(b, want);
	assert_int_equal(c, want);
	if (note) {
		assert_int_equal(nb, 1);
		assert_int_equal(nc, 1);
	}
	free(native);
	free(pre);
	free(traced);
	assert_xdg_empty();
}

static void test_makecontext_pointer_arguments(void **state)
{
	char *argv[] = {ITEST_MKCTX_ARGS, NULL};

	(void)state;
	if (it_sanitized())
		skip();
	same_three_ways(argv, 0, "makecontext with 40 arguments (over 32)");
}

static void test_boost_ucontext_fiber(void **state)
{
#ifdef ITEST_BOOST_UCFIBER
	char *argv[] = {ITEST_BOOST_UCFIBER, NULL};

	(void)state;
	if (it_sanitized())
		skip();
	same_three_ways(argv, 0, NULL);
#else
	(void)state;
	skip();
#endif
}

static void test_rtld_local_plugins(void **state)
{
#if defined(ITEST_FCTX_HOST) && defined(ITEST_FCTX_PLUGIN_B)
	char *argv[] = {ITEST_FCTX_HOST, "2000", ITEST_FCTX_PLUGIN_A,
			ITEST_FCTX_PLUGIN_B, NULL};

	(void)state;
	if (it_sanitized())
		skip();
	same_three_ways(argv, 0, NULL);
#else
	(void)state;
	skip();
#endif
}

static void test_fcontext_entry_returns(void **state)
{
#ifdef ITEST_FCTX_RETURN
	char *argv[] = {ITEST_FCTX_RETURN, NULL};

	(void)state;
	if (it_sanitized())
		skip();
	same_three_ways(argv, 0, NULL);
#else
	(void)state;
	skip();
#endif
}

/* The last JSON snapshot in p's output, parsed into snap. */
static void last_json(struct proc *p, struct jv *snap)
{
	char *line = NULL;

	for (char *l = p->obuf; l && *l;) {
		char *nl = strchr(l, '\n');

		if (nl)
			*nl = '\0';
		if (*l == '{')
			line = l;
		l = nl ? nl + 1 : NULL;
	}
	if (!line)
		fail_msg("no JSON snapshot: %s", p->obuf ? p->obuf : "");
	json_must_parse(line, snap);
}

/* The final snapshot of `corotop -b -f json` over argv (its delay longer
 * than the run: the one snapshot it prints is the one after the exit),
 * COROTOP_CONTEXTS set to `contexts` and the rows filtered by `filter`
 * when not NULL (the counts are all coroutines').  The program's own
 * output goes to a file and is dropped. */
static void final_json(char *const argv[], const char *contexts,
		       const char *filter, struct jv *snap)
{
	char path[512], *cv[64];
	struct proc p;
	size_t n = 0;
	int status;

	snprintf(path, sizeof(path), "%s.final-output", xdg);
	cv[n++] = ITEST_COROTOP;
	cv[n++] = "-b";
	cv[n++] = "-f";
	cv[n++] = "json";
	cv[n++] = "-d";
	cv[n++] = "36000";
	cv[n++] = "--stations";
	cv[n++] = "131072";
	cv[n++] = "--output";
	cv[n++] = path;
	if (filter) {
		cv[n++] = "-F";
		cv[n++] = (char *)filter;
	}
	cv[n++] = "--";
	for (size_t i = 0; argv[i] && n < 63; i++)
		cv[n++] = argv[i];
	cv[n] = NULL;
	if (contexts)
		setenv("COROTOP_CONTEXTS", contexts, 1);
	proc_start(&p, cv);
	unsetenv("COROTOP_CONTEXTS");
	status = proc_finish(&p, 180000);
	unlink(path);
	assert_int_equal(ended(status), 0);
	last_json(&p, snap);
	proc_free(&p);
}

static void test_many_live_contexts(void **state)
{
	char *argv[] = {ITEST_MANY_CTX, "100000", NULL};
	struct jv v;

	(void)state;
	if (it_sanitized())
		skip();
	same_three_ways(argv, 0, NULL);

	/* All of them, and the thread's root; nothing untracked. */
	final_json(argv, NULL, "state=R", &v);
	print_message("100000 live: seen %llu, untracked %llu\n",
		      (unsigned long long)json_u64(&v, "counts.seen"),
		      (unsigned long long)json_u64(&v, "contexts.untracked"));
	assert_int_equal(json_u64(&v, "counts.seen"), 100001);
	assert_int_equal(json_u64(&v, "contexts.untracked"), 0);
	json_free(&v);

	/* A table of 50,000 records: the root and 49,999 contexts tracked,
	 * the other 50,001 counted. */
	final_json(argv, "50000", "state=R", &v);
	print_message("COROTOP_CONTEXTS=50000: seen %llu, untracked %llu\n",
		      (unsigned long long)json_u64(&v, "counts.seen"),
		      (unsigned long long)json_u64(&v, "contexts.untracked"));
	assert_int_equal(json_u64(&v, "counts.seen"), 50000);
	assert_int_equal(json_u64(&v, "contexts.untracked"), 50001);
	{
		const struct jv *l = json_need(&v, "processes.list", J_ARR);

		assert_int_equal(l->n, 1);
		assert_int_equal(json_u64(&l->items[0], "contexts_untracked"),
				 50001);
	}
	json_free(&v);
	assert_xdg_empty();
}

/* The pid of the process named `name` in snap's processes, or 0. */
static uint64_t proc_pid(const struct jv *snap, const char *name)
{
	const struct jv *l = json_need(snap, "processes.list", J_ARR);

	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(json_need(&l->items[i], "name", J_STR)->s, name))
			return json_u64(&l->items[i], "pid");
	return 0;
}

/* argv recorded (--record), then the recording's end replayed: each
 * coroutine carries the pid of the process it lived in, `child`; and in
 * chrome's JSON its track is in that process, which is named. */
static void recorded_pids(char *const argv[], const char *child_name)
{
	char rec[512], chrome[512], proc_name[64], *cv[64];
	uint64_t child, target;
	const struct jv *co;
	struct proc p;
	struct jv v;
	size_t n = 0;
	FILE *f;
	char *text = NULL;
	size_t len = 0;

	snprintf(rec, sizeof(rec), "%s.pids.heph", xdg);
	snprintf(chrome, sizeof(chrome), "%s.pids.json", xdg);
	cv[n++] = ITEST_COROTOP;
	cv[n++] = "-b";
	cv[n++] = "-f";
	cv[n++] = "json";
	cv[n++] = "-d";
	cv[n++] = "36000";
	cv[n++] = "--output";
	cv[n++] = "/dev/null";
	cv[n++] = "--record";
	cv[n++] = rec;
	cv[n++] = "--";
	for (size_t i = 0; argv[i] && n < 63; i++)
		cv[n++] = argv[i];
	cv[n] = NULL;
	assert_int_equal(run(&p, cv, 180000), 0);
	last_json(&p, &v);
	child = proc_pid(&v, child_name);
	target = json_u64(&v, "target.pid");
	assert_true(child > 0 && child != target);
	json_free(&v);
	proc_free(&p);

	{
		char *rv[] = {ITEST_COROTOP, "--replay", rec, "-b",
			      "-f",	     "json",	 NULL};

		assert_int_equal(run(&p, rv, 60000), 0);
	}
	last_json(&p, &v);
	assert_int_equal(json_u64(&v, "target.pid"), target);
	co = json_need(&v, "coroutines", J_ARR);
	print_message("replay: %zu coroutines, of pid %llu (target %llu)\n",
		      co->n, (unsigned long long)child,
		      (unsigned long long)target);
	assert_true(co->n > 0);
	for (size_t i = 0; i < co->n; i++)
		assert_int_equal(json_u64(&co->items[i], "pid"), child);
	json_free(&v);
	proc_free(&p);

	{
		char *xv[] = {ITEST_COROTOP, "convert", "--to", "chrome",
			      rec,	     "-o",	chrome, NULL};

		assert_int_equal(run(&p, xv, 60000), 0);
		proc_free(&p);
	}
	f = fopen(chrome, "r");
	assert_non_null(f);
	assert_true(getdelim(&text, &len, '\0', f) > 0);
	fclose(f);
	snprintf(proc_name, sizeof(proc_name),
		 "\"pid\":%llu,\"tid\":0,\"args\":{\"name\":\"process %llu\"}",
		 (unsigned long long)child, (unsigned long long)child);
	assert_non_null(strstr(text, proc_name));
	free(text);
	unlink(rec);
	unlink(chrome);
}

static void test_sh_c_wrapping(void **state)
{
	char cmd[1024];
	char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	struct jv v;
	uint64_t child;

	(void)state;
	if (it_sanitized())
		skip();
	/* A traced child of the shell (through the preload). */
	snprintf(cmd, sizeof(cmd), "%s 1000; echo after $?", ITEST_MANY_CTX);
	same_three_ways(argv, 0, NULL);
	final_json(argv, NULL, NULL, &v);
	assert_int_equal(json_u64(&v, "processes.seen"), 2);
	child = proc_pid(&v, "many-ctx");
	assert_true(child > 0);
	assert_true(proc_pid(&v, "sh") > 0);
	assert_true(child != json_u64(&v, "target.pid"));
	assert_int_equal(json_u64(&v, "counts.seen"), 1001);
	{
		const struct jv *co = json_need(&v, "coroutines", J_ARR);

		assert_true(co->n > 0);
		for (size_t i = 0; i < co->n; i++)
			assert_int_equal(json_u64(&co->items[i], "pid"), child);
	}
	json_free(&v);
	/* The same in a recording: replayed, and converted. */
	recorded_pids(argv, "many-ctx");
#ifdef ITEST_DEMO
	/* A child that links the probe: traced once, by its own calls --
	 * as many coroutines as when corotop starts it, not twice as many. */
	{
		char *demo[] = {ITEST_DEMO, "-d",      "1", "-c",
				"40",	    "--stuck", "0", "--spawn-rate",
				"0",	    NULL};
		uint64_t direct;

		final_json(demo, NULL, NULL, &v);
		direct = json_u64(&v, "counts.seen");
		json_free(&v);
		snprintf(cmd, sizeof(cmd),
			 "%s -d 1 -c 40 --stuck 0 --spawn-rate 0", ITEST_DEMO);
		final_json(argv, NULL, NULL, &v);
		child = proc_pid(&v, "corotop-demo");
		print_message("demo: seen %llu; sh -c demo: seen %llu\n",
			      (unsigned long long)direct,
			      (unsigned long long)json_u64(&v, "counts.seen"));
		assert_true(child > 0);
		assert_true(direct >= 40);
		assert_int_equal(json_u64(&v, "counts.seen"), direct);
		json_free(&v);

		/* A child that links the probe statically, stripped: only
		 * its ELF note says so, to corotop and to the preload. */
		demo[0] = ITEST_DEMO_STATIC;
		final_json(demo, NULL, NULL, &v);
		print_message("static demo: seen %llu\n",
			      (unsigned long long)json_u64(&v, "counts.seen"));
		assert_int_equal(json_u64(&v, "counts.seen"), direct);
		json_free(&v);
		snprintf(cmd, sizeof(cmd),
			 "%s -d 1 -c 40 --stuck 0 --spawn-rate 0",
			 ITEST_DEMO_STATIC);
		final_json(argv, NULL, NULL, &v);
		print_message("sh -c static demo: seen %llu\n",
			      (unsigned long long)json_u64(&v, "counts.seen"));
		assert_int_equal(json_u64(&v, "counts.seen"), direct);
		json_free(&v);
	}
#endif
	assert_xdg_empty();
}

/* Every coroutine in snap on the thread of its own process (the
 * programs are single-threaded: tid == pid), and how many carry `pid`;
 * with `dead`, each of those must be dead. */
static size_t coros_of(const struct jv *snap, uint64_t pid, bool dead)
{
	const struct jv *co = json_need(snap, "coroutines", J_ARR);
	size_t n = 0;

	for (size_t i = 0; i < co->n; i++) {
		const struct jv *c = &co->items[i];
		uint64_t p = json_u64(c, "pid"), tid = json_u64(c, "tid");

		if (tid && tid != p)
			fail_msg("coroutine %llu of pid %llu last ran on tid "
				 "%llu (another process wrote its station)",
				 (unsigned long long)json_u64(c, "id"),
				 (unsigned long long)p,
				 (unsigned long long)tid);
		if (p != pid)
			continue;
		n++;
		if (dead)
			assert_string_equal(json_need(c, "state", J_STR)->s,
					    "dead");
	}
	return n;
}

static void test_fork_exec_spawn(void **state)
{
	char *fork_argv[] = {ITEST_FORK_CTX, "fork", NULL};
	char *exec_argv[] = {ITEST_FORK_CTX, "exec", ITEST_MANY_CTX, "10",
			     NULL};
	char *spawn_argv[] = {ITEST_FORK_CTX, "spawn", ITEST_MANY_CTX, "10",
			      NULL};
	struct jv v;
	uint64_t target, child;

	(void)state;
	if (it_sanitized())
		skip();
	same_three_ways(fork_argv, 0, NULL);
	same_three_ways(exec_argv, 0, NULL);
	same_three_ways(spawn_argv, 0, NULL);

	/* fork: the child's coroutines (its copies of the two contexts and
	 * its root) on stations of its own; the parent's untouched. */
	final_json(fork_argv, NULL, NULL, &v);
	target = json_u64(&v, "target.pid");
	assert_int_equal(json_u64(&v, "processes.seen"), 2);
	assert_int_equal(coros_of(&v, target, false), 3);
	/* The final state: the parent's root ran until the exit (dead, at
	 * exit); its two contexts had ended before. */
	{
		const struct jv *co = json_need(&v, "coroutines", J_ARR);
		unsigned at_exit = 0;

		for (size_t i = 0; i < co->n; i++) {
			const struct jv *c = &co->items[i];

			assert_string_equal(json_need(c, "state", J_STR)->s,
					    "dead");
			at_exit += json_need(c, "at_exit", J_BOOL)->b;
		}
		assert_int_equal(at_exit, 1);
	}
	{
		const struct jv *l = json_need(&v, "processes.list", J_ARR);

		assert_int_equal(l->n, 2);
		child = json_u64(&l->items[1], "pid");
		assert_true(child != target);
		assert_true(json_need(&l->items[1], "gone", J_BOOL)->b);
	}
	assert_int_equal(coros_of(&v, child, true), 3);
	json_free(&v);

	/* exec: the forked image (gone before it switched: no coroutine)
	 * and the program it became, its coroutines dead. */
	final_json(exec_argv, NULL, NULL, &v);
	assert_int_equal(json_u64(&v, "processes.seen"), 3);
	child = proc_pid(&v, "many-ctx");
	assert_true(child > 0);
	assert_int_equal(coros_of(&v, child, true), 11);
	json_free(&v);

	/* posix_spawn: the spawned program alone, its coroutines dead. */
	final_json(spawn_argv, NULL, NULL, &v);
	assert_int_equal(json_u64(&v, "processes.seen"), 2);
	child = proc_pid(&v, "many-ctx");
	assert_true(child > 0);
	assert_int_equal(coros_of(&v, child, true), 11);
	json_free(&v);
	assert_xdg_empty();
}

/* The hooked preload in use for the runs that follow, raising SIGUSR1 at
 * `raise` (COROTOP_TEST_RAISE, testpoint.c); NULL: back to the real one. */
static void use_hooked(const char *raise)
{
	if (raise) {
		preload_lib = ITEST_PRELOAD_HOOKED;
		setenv("COROTOP_PRELOAD", ITEST_PRELOAD_HOOKED, 1);
		setenv("COROTOP_TEST_RAISE", raise, 1);
	} else {
		preload_lib = ITEST_PRELOAD_LIB;
		unsetenv("COROTOP_PRELOAD");
		unsetenv("COROTOP_TEST_RAISE");
	}
}

/* A handler that switches to a monitor and back, wherever a timer lands
 * it, and where the hooked preload lands it: in the middle of its own
 * switch (1: the probe written, the thread's current context not yet; 2:
 * all recorded, the real switch not yet made), at every switch. */
static void test_signal_handler_switches(void **state)
{
	char *timer[] = {ITEST_SIG_CTX, "timer", NULL};
	char *raised[] = {ITEST_SIG_CTX, "raise", NULL};

	(void)state;
	if (it_sanitized())
		skip();
	same_three_ways(timer, 0, NULL);
	use_hooked("1");
	same_three_ways(raised, 0, NULL);
	use_hooked("2");
	same_three_ways(raised, 0, NULL);
	use_hooked(NULL);
}

/* The state at exit when the last switch (the worker's 20,000th hand-over
 * to the root: switch 40,000) is interrupted by the handler's round trip
 * at point `raise`: the root, running at the exit, is dead; the worker and
 * the monitor are parked, frozen at exit.  Before the preload kept a
 * handler out of its bookkeeping, point 1 left the worker running (then
 * shown dead): the handler took the worker for the one running. */
static void signal_final_state(const char *raise)
{
	char *argv[] = {ITEST_SIG_CTX, "raise", NULL};
	const struct jv *co;
	struct jv v;
	size_t parked = 0;

	use_hooked(raise);
	final_json(argv, NULL, NULL, &v);
	use_hooked(NULL);
	co = json_need(&v, "coroutines", J_ARR);
	for (size_t i = 0; i < co->n; i++) {
		const struct jv *c = &co->items[i];
		const char *name = json_need(c, "name", J_STR)->s;
		const char *st = json_need(c, "state", J_STR)->s;

		print_message("COROTOP_TEST_RAISE=%s: id %llu \"%s\" %s\n",
			      raise, (unsigned long long)json_u64(c, "id"),
			      name, st);
		assert_true(json_need(c, "at_exit", J_BOOL)->b);
		if (!strcmp(name, "root")) {
			assert_string_equal(st, "dead");
		} else {
			assert_string_equal(st, "suspended");
			parked++;
		}
	}
	assert_int_equal(parked, 2);
	json_free(&v);
}

static void test_signal_switch_final_state(void **state)
{
	(void)state;
	if (it_sanitized())
		skip();
	signal_final_state("1:40000");
	signal_final_state("2:40000");
	assert_xdg_empty();
}

/*
 * Contexts that end with a plain jump (they never return from their
 * entry), their stacks given back after: free()d or munmap()ed
 * (free-ctx).  The interposed free and munmap change nothing the program
 * sees, and every one of the contexts ends dead before the exit; before
 * the preload watched the give-back, all 1000 stayed suspended to the end.
 */
static void freed_stacks_end(const char *how)
{
	char *argv[] = {ITEST_FREE_CTX, (char *)how, "1000", NULL};
	const struct jv *co;
	size_t dead = 0;
	struct jv v;

	same_three_ways(argv, 0, NULL);
	final_json(argv, NULL, NULL, &v);
	co = json_need(&v, "coroutines", J_ARR);
	for (size_t i = 0; i < co->n; i++) {
		const struct jv *c = &co->items[i];
		const char *st = json_need(c, "state", J_STR)->s;

		if (!strcmp(json_need(c, "name", J_STR)->s, "root"))
			continue;
		if (strcmp(st, "dead") || json_need(c, "at_exit", J_BOOL)->b)
			fail_msg("%s: id %llu is %s%s", how,
				 (unsigned long long)json_u64(c, "id"), st,
				 json_need(c, "at_exit", J_BOOL)->b
					 ? " at the exit"
					 : "");
		dead++;
	}
	assert_int_equal(dead, 1000);
	json_free(&v);
}

static void test_freed_stacks_end(void **state)
{
	(void)state;
	if (it_sanitized())
		skip();
	freed_stacks_end("free");
	freed_stacks_end("munmap");
	assert_xdg_empty();
}

/* A final snapshot of sjlj-ctx 8 500: its unseen switches, the root's
 * transitions, and the other coroutines' (each checked to be `each`, and
 * dead), which must be 8. */
static uint64_t sjlj_final(uint64_t each, uint64_t *root)
{
	char *argv[] = {ITEST_SJLJ_CTX, "8", "500", NULL};
	const struct jv *co;
	size_t made = 0;
	uint64_t unseen;
	struct jv v;

	final_json(argv, NULL, NULL, &v);
	co = json_need(&v, "coroutines", J_ARR);
	for (size_t i = 0; i < co->n; i++) {
		const struct jv *c = &co->items[i];
		uint64_t t = json_u64(c, "switches") + json_u64(c, "lost");

		if (!strcmp(json_need(c, "name", J_STR)->s, "root")) {
			*root = t;
			continue;
		}
		if (t != each ||
		    strcmp(json_need(c, "state", J_STR)->s, "dead"))
			fail_msg("id %llu: %llu transitions, %s (want %llu, "
				 "dead)",
				 (unsigned long long)json_u64(c, "id"),
				 (unsigned long long)t,
				 json_need(c, "state", J_STR)->s,
				 (unsigned long long)each);
		made++;
	}
	assert_int_equal(made, 8);
	unseen = json_u64(&v, "contexts.switches_unseen");
	json_free(&v);
	return unseen;
}

/*
 * Coroutines switched with sigsetjmp/siglongjmp, in QEMU's shape
 * (sjlj-ctx): each is started with swapcontext, then every switch is a
 * jump.  The jumps are switches: each of the 8 coroutines is resumed
 * 500 + 2 times and suspends as often (1,004 transitions, harvested or
 * counted lost; the root takes part in all 8,032), none is unseen, and
 * each ends dead when its stack is unmapped.
 * With COROTOP_LONGJMP=0 the jumps are not traced, and that is said: each
 * swapcontext that starts a coroutine after the first finds the thread
 * back on the root's stack without a switch seen -- 7 unseen switches.
 * Before jumps were traced, the table showed each coroutine with its one
 * start, as if nothing else had happened.
 */
static void test_sjlj_switches(void **state)
{
	char *argv[] = {ITEST_SJLJ_CTX, "8", "500", NULL};
	uint64_t root = 0;

	(void)state;
	if (it_sanitized())
		skip();
	same_three_ways(argv, 0, NULL);
	assert_int_equal(sjlj_final(1004, &root), 0);
	assert_int_equal(root, 1 + 8 * 1004);
	setenv("COROTOP_LONGJMP", "0", 1);
	same_three_ways(argv, 0, NULL);
	assert_int_equal(sjlj_final(1, &root), 7);
	unsetenv("COROTOP_LONGJMP");
	/* Its start's resume, then the root suspends at each start. */
	assert_int_equal(root, 1 + 8);
	assert_xdg_empty();
}

#ifdef ITEST_ASIO_ECHO
/* One client of the echo server: connect, send a line, read it back
 * (with a deadline), close. */
static void echo_once(int port, unsigned k)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port)};
	char msg[64], back[64];
	size_t len, got = 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	len = (size_t)snprintf(msg, sizeof(msg), "hello %u\n", k);
	assert_int_equal(write(fd, msg, len), (ssize_t)len);
	while (got < len) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t r;

		assert_int_equal(poll(&p, 1, 30000), 1);
		r = read(fd, back + got, len - got);
		assert_true(r > 0);
		got += (size_t)r;
	}
	assert_memory_equal(back, msg, len);
	close(fd);
}

/* Counts in a snapshot of the echo server's coroutines. */
struct echo_counts {
	size_t dead, suspended, hex, wake, doubled;
};

static struct echo_counts echo_count(const struct jv *snap)
{
	const struct jv *co = json_need(snap, "coroutines", J_ARR);
	struct echo_counts n = {0};

	for (size_t i = 0; i < co->n; i++) {
		const struct jv *c = &co->items[i];
		const struct jv *w = json_need(c, "warn", J_ARR);
		const char *st = json_need(c, "state", J_STR)->s;

		/* Two running on one thread: counted once per pair. */
		for (size_t k = 0; k < i && !strcmp(st, "running"); k++)
			n.doubled +=
				!strcmp(json_need(&co->items[k], "state", J_STR)
						->s,
					"running") &&
				json_u64(&co->items[k], "tid") ==
					json_u64(c, "tid");
		if (!strcmp(json_need(c, "name", J_STR)->s, "root"))
			continue;
		n.dead += !strcmp(st, "dead");
		n.suspended += !strcmp(st, "suspended");
		n.hex += !strncmp(json_need(c, "where", J_STR)->s, "0x", 2);
		for (size_t k = 0; k < w->n; k++)
			n.wake += !strcmp(w->items[k].s, "lost-wakeup");
	}
	return n;
}
/* The root's kernel wait into buf once it has run longer than the stall
 * threshold (1 s, with margin), and whether it was flagged a stall. */
static void echo_root(const struct jv *snap, char *buf, size_t len, bool *stall)
{
	const struct jv *co = json_need(snap, "coroutines", J_ARR);

	for (size_t i = 0; i < co->n; i++) {
		const struct jv *c = &co->items[i];
		const struct jv *k = json_get(c, "kernel");
		const struct jv *w = json_need(c, "warn", J_ARR);

		if (strcmp(json_need(c, "name", J_STR)->s, "root") ||
		    strcmp(json_need(c, "state", J_STR)->s, "running") ||
		    json_u64(c, "in_state_ns") < 1500000000ull)
			continue;
		snprintf(buf, len, "%s", k && k->t == J_STR ? k->s : "(null)");
		for (size_t j = 0; j < w->n; j++)
			*stall |= !strcmp(w->items[j].s, "stall");
	}
}
#endif

/*
 * boost::asio::spawn's echo server (Debian's Boost.Coroutine v1), as
 * Boost's own spawn echo_server: after 300 one-shot clients every
 * connection's coroutine is dead -- its stack was freed -- and only the
 * acceptor is left suspended, with no lost-wakeup flag and no hex WHERE,
 * and no snapshot ever shows two coroutines running on one thread.  Then
 * idle, the loop's root -- running, on a thread in epoll_wait -- is not a
 * stall, and says where it waits.
 * Before the preload watched free(), the leftovers of connections whose
 * stacks were not reused stayed suspended for ever.
 */
static void test_asio_echo_connections_end(void **state)
{
#ifdef ITEST_ASIO_ECHO
	char out[512], line[128] = "";
	char *argv[] = {ITEST_COROTOP, "-b", "-f", "json",	    "-d", "2",
			"--output",    out,  "--", ITEST_ASIO_ECHO, NULL};
	uint64_t end = it_now() + 60000000000ull;
	struct echo_counts n = {0};
	char root_waits[64] = "";
	bool root_stall = false;
	size_t doubled = 0;
	struct proc p;
	size_t off = 0;
	char *l;
	int port = 0;

	(void)state;
	if (it_sanitized())
		skip();
	snprintf(out, sizeof(out), "%s.asio-output", xdg);
	unlink(out);
	proc_start(&p, argv);
	while (!port && it_now() < end) {
		FILE *f = fopen(out, "r");

		if (f) {
			if (fgets(line, sizeof(line), f) &&
			    sscanf(line, "listening %d", &port) != 1)
				port = 0;
			fclose(f);
		}
		if (!port)
			it_sleep_ms(10);
	}
	assert_true(port > 0);
	for (unsigned k = 0; k < 300; k++)
		echo_once(port, k);
	/* The snapshots catch up; the first that has them all dead. */
	while ((l = proc_line_by(&p, &off, end)) != NULL) {
		struct jv v;

		if (l[0] == '{') {
			json_must_parse(l, &v);
			n = echo_count(&v);
			doubled += n.doubled;
			json_free(&v);
		}
		free(l);
		if (n.dead >= 300)
			break;
	}
	/* Then idle: the root, running on a thread that waits in
	 * epoll_wait, once it ran past the stall threshold (1 s) -- not a
	 * stall, and the call is said. */
	while (n.dead >= 300 && !root_waits[0] &&
	       (l = proc_line_by(&p, &off, end)) != NULL) {
		struct jv v;

		if (l[0] == '{') {
			json_must_parse(l, &v);
			echo_root(&v, root_waits, sizeof(root_waits),
				  &root_stall);
			json_free(&v);
		}
		free(l);
	}
	print_message("dead %zu suspended %zu hex %zu lost-wakeup %zu; two "
		      "running on a thread: %zu times; the idle root: "
		      "kernel \"%s\"%s\n",
		      n.dead, n.suspended, n.hex, n.wake, doubled, root_waits,
		      root_stall ? ", STALL" : "");
	kill(p.pid, SIGINT);
	(void)proc_finish(&p, 60000);
	proc_free(&p);
	unlink(out);
	assert_int_equal(n.dead, 300);
	assert_true(n.suspended <= 1); /* the acceptor */
	assert_int_equal(n.hex, 0);
	assert_int_equal(n.wake, 0);
	assert_int_equal(doubled, 0);
	if (strcmp(root_waits, "epoll_wait") &&
	    strcmp(root_waits, "epoll_pwait"))
		fail_msg("the idle root waits in \"%s\"", root_waits);
	assert_false(root_stall);
	assert_xdg_empty();
#else
	(void)state;
	skip();
#endif
}

#ifdef ITEST_DEMO
/* How many of snap's coroutines live in process pid and have a WHERE
 * named by symbols (not hex). */
static size_t named_in(const struct jv *snap, uint64_t pid)
{
	const struct jv *co = json_need(snap, "coroutines", J_ARR);
	size_t n = 0;

	for (size_t i = 0; i < co->n; i++)
		n += json_u64(&co->items[i], "pid") == pid &&
		     strncmp(json_need(&co->items[i], "where", J_STR)->s, "0x",
			     2) != 0;
	return n;
}

/* corotop -- sh -c 'demo' ended by the user (SIGINT, as Ctrl-C): the demo,
 * a child of the shell, goes too.  It ran on, orphaned, before.  While it
 * runs, its coroutines' WHERE is named by its own symbols (the shell's
 * named nothing: hex). */
static void test_sh_c_child_ends_with_corotop(void **state)
{
	char cmd[1024];
	char *argv[] = {ITEST_COROTOP, "-b",	  "-f", "json", "-d", "2",
			"--",	       "/bin/sh", "-c", cmd,	NULL};
	uint64_t end = it_now() + 60000000000ull;
	struct proc p;
	size_t off = 0;
	char *line;
	pid_t demo = 0;
	size_t named = 0;

	(void)state;
	if (it_sanitized())
		skip();
	snprintf(cmd, sizeof(cmd), "%s -c 20 --stuck 0; echo after",
		 ITEST_DEMO);
	proc_start(&p, argv);
	while (!named && (line = proc_line_by(&p, &off, end)) != NULL) {
		struct jv v;

		if (line[0] == '{') {
			json_must_parse(line, &v);
			demo = (pid_t)proc_pid(&v, "corotop-demo");
			named = demo > 0 ? named_in(&v, (uint64_t)demo) : 0;
			json_free(&v);
		}
		free(line);
	}
	print_message("demo pid %d: %zu coroutines named\n", (int)demo, named);
	assert_true(demo > 0);
	assert_true(named > 0);
	assert_int_equal(kill(p.pid, SIGINT), 0);
	(void)proc_finish(&p, 60000);
	proc_free(&p);
	/* Reparented to init, which reaps it: gone within the deadline. */
	end = it_now() + 30000000000ull;
	while (kill(demo, 0) == 0 && it_now() < end)
		it_sleep_ms(20);
	if (kill(demo, 0) == 0) {
		kill(demo, SIGKILL);
		fail_msg("the demo (pid %d) outlived corotop", (int)demo);
	}
	assert_xdg_empty();
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_makecontext_pointer_arguments),
		cmocka_unit_test(test_boost_ucontext_fiber),
		cmocka_unit_test(test_rtld_local_plugins),
		cmocka_unit_test(test_fcontext_entry_returns),
		cmocka_unit_test(test_many_live_contexts),
		cmocka_unit_test(test_sh_c_wrapping),
		cmocka_unit_test(test_fork_exec_spawn),
		cmocka_unit_test(test_signal_handler_switches),
		cmocka_unit_test(test_signal_switch_final_state),
		cmocka_unit_test(test_freed_stacks_end),
		cmocka_unit_test(test_sjlj_switches),
		cmocka_unit_test(test_asio_echo_connections_end),
#ifdef ITEST_DEMO
		cmocka_unit_test(test_sh_c_child_ends_with_corotop),
#endif
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup_xdg, teardown_xdg);
}
