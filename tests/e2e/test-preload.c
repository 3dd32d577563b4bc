/*
 * test-preload: `corotop -- CMD` traces programs that never call the probe,
 * through libcorotop-preload (src/preload): a ucontext scheduler and tasks
 * on Boost.Context's raw fcontext, both knowing nothing of corotop
 * (tests/targets/uctx_target.c, fctx_target.c).
 *
 * Exact accounting comes from --jsonl, which holds every transition: each
 * context's count against what the program's shape implies, and the total
 * against the program's own count of its switches (printed on stdout).
 * The final snapshot must show no finished context as suspended or
 * running; the program's output and exit status pass through unchanged.
 * A program held alive (--hold) shows its stuck context by name; a
 * Boost.Fiber program that hung before corotop -p attached shows its stuck
 * fiber flagged, parked in the program's own function.  The
 * preload steps aside, with a one-line note, for what the loader would
 * not honour (a static or set-user-ID program), with --no-auto, and for a
 * program that links the probe itself.  A sanitizer build of corotop never
 * preloads (engine/target/autotrace.c): there the whole file skips.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "e2e.h"

/* Small enough that no station takes more transitions than its ring
 * holds (64 epochs: the root's are 2 * NCORO * (ROUNDS + 1) + 1): the
 * program runs flat out, and a ring may be lapped before the engine
 * wakes.  Each run asserts that nothing was lost. */
#define ROUNDS 5
#define NCORO 4

/* Per probe id: transitions, and the tid of the first and the last. */
struct tally {
	uint64_t id[64];
	unsigned n[64];
	long first_tid[64], last_tid[64];
	size_t ids;
	unsigned total;
};

static void tally_jsonl(const char *path, struct tally *t)
{
	FILE *f = fopen(path, "r");
	char line[512];

	memset(t, 0, sizeof(*t));
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		struct jv v;
		uint64_t id;
		long tid;
		size_t k;

		json_must_parse(line, &v);
		id = json_u64(&v, "probe_id");
		tid = (long)json_u64(&v, "tid");
		json_free(&v);
		for (k = 0; k < t->ids && t->id[k] != id; k++)
			;
		if (k == t->ids) {
			assert_true(t->ids < 64);
			t->id[t->ids++] = id;
			t->first_tid[k] = tid;
		}
		t->n[k]++;
		t->last_tid[k] = tid;
		t->total++;
	}
	fclose(f);
}

/* corotop's own messages among the lines of its stderr, which in batch
 * mode also carries the target's output. */
static int corotop_lines(const char *err)
{
	int n = 0;

	for (const char *p = err; p && *p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		n += !strncmp(p, "corotop: ", 9);
	}
	return n;
}

/* corotop's stdout in batch JSON mode: JSON lines only, whatever the
 * target prints. */
static void assert_json_only(const char *out)
{
	for (const char *p = out; p && *p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (*p && *p != '{')
			fail_msg("not JSON on corotop's stdout: %.60s", p);
	}
}

/* The program's own line ("KEY=N ...") from corotop's stderr, where batch
 * mode sends the target's stdout. */
static long target_value(const char *out, const char *key)
{
	const char *p = strstr(out, key);

	if (!p)
		fail_msg("no %s in the output: %s", key, out);
	return strtol(p + strlen(key), NULL, 10);
}

/* The last JSON snapshot line of the output, parsed. */
static void last_snapshot(const char *out, struct jv *v)
{
	const char *last = NULL;

	for (const char *p = out; p && *p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (*p == '{')
			last = p;
	}
	assert_non_null(last);
	{
		char *line = strndup(last, strcspn(last, "\n"));

		json_must_parse(line, v);
		free(line);
	}
}

/*
 * Run a traced program to its end with --jsonl (argv holds jsonl's
 * buffer, named here after `tag`): the program's status 0 and no message
 * on stderr, every transition tallied from the log, the last snapshot
 * parsed, and the snapshot's harvested count equal to the log's.
 */
static void run_traced(char *const argv[], char *jsonl, size_t n,
		       const char *tag, struct proc *p, struct tally *t,
		       struct jv *snap)
{
	snprintf(jsonl, n, "%s.%s.jsonl", xdg, tag);
	assert_int_equal(run(p, argv, 60000), 0); /* the program's status */
	assert_int_equal(corotop_lines(p->ebuf), 0);
	assert_json_only(p->obuf);
	tally_jsonl(jsonl, t);
	last_snapshot(p->obuf, snap);
	assert_int_equal(json_u64(snap, "events.harvested"), t->total);
}

/* What run_traced left. */
static void traced_done(struct proc *p, struct jv *snap, const char *jsonl)
{
	json_free(snap);
	unlink(jsonl);
	proc_free(p);
	assert_xdg_empty();
}

/* After the exit (docs/TRACING.md, "After the program exits") nothing
 * is running: finished contexts are dead; only the `alive` ones (roots,
 * the stuck one) carry the state at the exit -- dead for one that was
 * running, suspended for one still parked. */
static void check_final(const struct jv *snap, unsigned alive)
{
	const struct jv *co = json_need(snap, "coroutines", J_ARR);
	unsigned live = 0;

	for (size_t i = 0; i < co->n; i++) {
		const char *st = json_need(&co->items[i], "state", J_STR)->s;
		bool at_exit = json_need(&co->items[i], "at_exit", J_BOOL)->b;

		assert_string_not_equal(st, "running");
		if (!at_exit)
			assert_string_equal(st, "dead");
		live += at_exit;
	}
	assert_int_equal(live, alive);
}

static void test_ucontext_exact(void **state)
{
	char jsonl[512];
	char *argv[] = {
		ITEST_COROTOP, "-b",	  "-f",	 "json", "-d",
		"50",	       "--jsonl", jsonl, "--",	 ITEST_UCTX_TARGET,
		"4",	       "5",	  NULL};
	unsigned workers = 0;
	struct tally t;
	struct proc p;
	struct jv snap;
	long swaps;

	(void)state;
	run_traced(argv, jsonl, sizeof(jsonl), "uctx", &p, &t, &snap);
	swaps = target_value(p.ebuf, "swaps=");
	assert_int_equal(target_value(p.ebuf, "coroutines="), NCORO);
	/* Each worker: ROUNDS + 1 resumes, ROUNDS yields; plus the root.
	 * Every swap is two transitions; the root's first sight is one
	 * resume, and each worker's return resumes the root once. */
	assert_int_equal(t.ids, NCORO + 1);
	for (size_t k = 0; k < t.ids; k++)
		workers += t.n[k] == 2 * ROUNDS + 1;
	assert_int_equal(workers, NCORO);
	assert_int_equal(t.total, 2 * swaps + 1 + NCORO);
	assert_int_equal(json_u64(&snap, "events.lost"), 0);
	assert_int_equal(json_u64(&snap, "counts.seen"), NCORO + 1);
	check_final(&snap, 1); /* the root, running at exit */
	traced_done(&p, &snap, jsonl);
}

/* Alive, the stuck context shows by name (the program's own function),
 * parked; the others finished and are not shown as live. */
static void test_ucontext_stuck_named(void **state)
{
	char *argv[] = {
		ITEST_COROTOP,	   "-b", "-f", "json",	  "-d",	    "2", "--",
		ITEST_UCTX_TARGET, "2",	 "3",  "--stuck", "--hold", NULL};
	uint64_t end = it_now() + 60ull * 1000000000u;
	bool found = false;
	struct proc p;
	struct jv v;
	size_t off = 0;

	(void)state;
	proc_start(&p, argv);
	while (!found && snapshot_by(&p, &off, end, &v)) {
		const struct jv *co;

		co = json_need(&v, "coroutines", J_ARR);
		for (size_t i = 0; i < co->n; i++) {
			const struct jv *c = &co->items[i];

			if (!strcmp(json_need(c, "state", J_STR)->s,
				    "suspended") &&
			    json_u64(c, "switches") == 2 &&
			    strstr(json_need(c, "where", J_STR)->s,
				   "stuck_wait"))
				found = true;
		}
		json_free(&v);
	}
	assert_true(found);
	kill(p.pid, SIGINT);
	assert_int_equal(exit_code(proc_finish(&p, 30000)), 130);
	proc_free(&p);
	assert_xdg_empty();
}

#ifdef ITEST_FCTX_TARGET
/* Tasks started on thread A and finished on thread B: every transition
 * counted, each task's first on A and last on B; the stuck task parked on
 * A; finished tasks (freed through ontop_fcontext) dead. */
static void test_fcontext_migration(void **state)
{
	char jsonl[512];
	char *argv[] = {
		ITEST_COROTOP, "-b",	  "-f",	     "json", "-d",
		"50",	       "--jsonl", jsonl,     "--",   ITEST_FCTX_TARGET,
		"4",	       "5",	  "--stuck", NULL};
	unsigned tasks = 0, stuck = 0;
	long jumps, tid_a, tid_b;
	struct tally t;
	struct proc p;
	struct jv snap;

	(void)state;
	run_traced(argv, jsonl, sizeof(jsonl), "fctx", &p, &t, &snap);
	jumps = target_value(p.ebuf, "jumps=");
	tid_a = target_value(p.ebuf, "tid_a=");
	tid_b = target_value(p.ebuf, "tid_b=");
	for (size_t k = 0; k < t.ids; k++) {
		/* ROUNDS + 1 resumes, ROUNDS yields, and the switch out
		 * through ontop_fcontext that ended it. */
		if (t.n[k] == 2 * ROUNDS + 2) {
			tasks++;
			assert_int_equal(t.first_tid[k], tid_a);
			assert_int_equal(t.last_tid[k], tid_b);
		} else if (t.n[k] == 2) {
			stuck++;
			assert_int_equal(t.last_tid[k], tid_a);
		}
	}
	assert_int_equal(tasks, NCORO);
	assert_int_equal(stuck, 1);
	assert_int_equal(t.ids, NCORO + 1 + 2); /* and the two roots */
	/* Every jump or ontop is two transitions; each root's first sight
	 * one more. */
	assert_int_equal(t.total, 2 * jumps + 2);
	assert_int_equal(json_u64(&snap, "events.lost"), 0);
	/* At exit: the stuck task parked; the roots of the threads, which
	 * ended, are dead like the tasks. */
	check_final(&snap, 1);
	traced_done(&p, &snap, jsonl);
}
#endif

#ifdef ITEST_FIBER_TARGET
/* Boost.Fiber: every fiber the program made appears and has ended at exit
 * (dead, not suspended); besides them, each of the two threads has its
 * root and the dispatcher context Boost.Fiber makes for its scheduler.
 * The program's own result and status pass through. */
static void test_boost_fiber(void **state)
{
	char jsonl[512];
	char *argv[] = {
		ITEST_COROTOP, "-b",	  "-f",	     "json", "-d",
		"50",	       "--jsonl", jsonl,     "--",   ITEST_FIBER_TARGET,
		"2",	       "50",	  "--stuck", NULL};
	struct tally t;
	struct proc p;
	struct jv snap;
	long fibers;

	(void)state;
	run_traced(argv, jsonl, sizeof(jsonl), "fiber", &p, &t, &snap);
	fibers = target_value(p.ebuf, "fibers=");
	assert_int_equal(fibers, 5); /* the stuck one, 2 + 2 */
	assert_int_equal(target_value(p.ebuf, "sum="), 100 * 101 / 2);
	/* How often Boost's dispatchers switch depends on the threads'
	 * timing (one took 77 transitions in some runs, more than a ring
	 * holds), so a loss is possible here and not asserted against;
	 * every harvested transition is in the log all the same. */
	assert_int_equal(json_u64(&snap, "counts.seen"), fibers + 4);
	assert_int_equal(t.ids, fibers + 4);
	check_final(&snap, 1); /* the main thread's root */
	traced_done(&p, &snap, jsonl);
}
#endif

#ifdef ITEST_FIBER_TARGET
/* The first frame of the coroutine's parked stack, or "". */
static const char *stack_top(const struct jv *c)
{
	const struct jv *f = json_get(c, "parked_stack.frames");

	return f && f->t == J_ARR && f->n
		       ? json_need(&f->items[0], "symbol", J_STR)->s
		       : "";
}

/* The name of the coroutine, or "". */
static const char *coro_name(const struct jv *c)
{
	const struct jv *n = json_get(c, "name");

	return n && n->t == J_STR ? n->s : "";
}

/*
 * Names and WHERE while watching a running Boost.Fiber program (launch
 * mode): each fiber is named after the program's code it runs -- the
 * producers' and consumers' lambdas, inlined into Boost's worker_context,
 * by the lambda; the stuck fiber by its function, where it also waits --,
 * each thread's own stack is "root".  With --parked-stacks the stuck
 * fiber's stack is the walked one.  Fibers are seen on both threads
 * (work sharing).  Boost's dispatchers are named ("boost.fiber
 * dispatcher") only once a walk caught one parked: counted, not required.
 * Every suspended fiber's WHERE becomes the program's (the lambda's:
 * inlined into Boost's worker_context<F>::run_), though most of their
 * parks last microseconds: walked, or learned at an earlier park.  Walks
 * start from the registers Boost's jump_fcontext saved (Debian's 1.74, a
 * layout corotop checks: JSON's frames.walk_from.saved), and their WHERE
 * is still the program's.
 */
static void test_fiber_live_names(void **state)
{
	char *argv[] = {ITEST_COROTOP,
			"-b",
			"-f",
			"json",
			"-d",
			"3",
			"--parked-stacks",
			"--",
			ITEST_FIBER_TARGET,
			"4",
			"1000000",
			"--stuck",
			"--pace",
			NULL};
	uint64_t end = it_now() + 60ull * 1000000000u;
	bool stuck = false, stacked = false, done = false;
	unsigned prod = 0, cons = 0, roots = 0, disp = 0, fibers = 0, progw = 0,
		 learned = 0, nostack = 0;
	uint64_t saved = 0, probe = 0, refused = 0;
	long tids[2] = {0, 0};
	struct proc p;
	struct jv v;
	size_t off = 0;

	(void)state;
	proc_start(&p, argv);
	while (!done && snapshot_by(&p, &off, end, &v)) {
		const struct jv *co;

		co = json_need(&v, "coroutines", J_ARR);
		prod = cons = roots = disp = fibers = progw = learned = 0;
		nostack = 0;
		stuck = stacked = false;
		for (size_t i = 0; i < co->n; i++) {
			const struct jv *c = &co->items[i];
			const char *name = coro_name(c);
			long tid = (long)json_u64(c, "tid");

			prod += !strcmp(name, "main::{lambda()#2}");
			cons += !strcmp(name, "main::{lambda()#3}");
			roots += !strcmp(name, "root");
			disp += !strcmp(name, "boost.fiber dispatcher");
			/* In the program's line, not that of Boost's header
			 * inlined there (condition_variable.hpp). */
			if (!strncmp(name, "stuck_wait_for_signal", 21) &&
			    !strncmp(json_need(c, "where", J_STR)->s,
				     "stuck_wait_for_signal", 21) &&
			    strstr(json_need(c, "where", J_STR)->s,
				   "(fiber_target.cpp:"))
				stuck = true;
			/* The engine's CFI walk: the probe's own frame-pointer
			 * capture stops inside Boost (no frame pointers),
			 * before the program's frames.  It starts in Boost:
			 * corotop's own frames at its top (the preload's
			 * wrapper, where the park was taken) are dropped. */
			if (!strncmp(name, "stuck_wait_for_signal", 21))
				stacked =
					stack_has(c, "stuck_wait_for_signal") &&
					!strncmp(stack_top(c), "boost::", 7);
			if (strncmp(name, "main::", 6))
				continue;
			/* A suspended fiber's WHERE is the program's, however
			 * short its park: walked, or learned from its last
			 * walk at the same switch. */
			if (!strcmp(json_need(c, "state", J_STR)->s,
				    "suspended")) {
				fibers++;
				const char *w = json_need(c, "where", J_STR)->s;

				progw += !strncmp(w, "main::", 6) &&
					 strstr(w, "(fiber_target.cpp:");
				learned += json_need(c, "where_learned", J_BOOL)
						   ->b;
				/* Learned or walked: the stack it was found
				 * at (a frame at least). */
				nostack += !stack_has(c, "");
			}
			if (!tids[0])
				tids[0] = tid;
			else if (tid != tids[0])
				tids[1] = tid;
		}
		/* Parked fibers walked from the registers Boost's
		 * jump_fcontext saved (Debian's 1.74: a checked layout,
		 * engine/target/fcsave.c), not only from the probe's. */
		saved = json_u64(&v, "frames.walk_from.saved");
		probe = json_u64(&v, "frames.walk_from.probe");
		refused = json_u64(&v, "frames.walk_from.saved_refused");
		json_free(&v);
		done = stuck && stacked && prod == 4 && cons == 4 &&
		       roots == 2 && tids[1] && fibers && progw == fibers &&
		       !nostack && saved > 0;
	}
	print_message("producers %u, consumers %u, roots %u, dispatchers %u, "
		      "stuck %d (stack walked %d), fibers on threads %ld and "
		      "%ld; %u of %u suspended with the program's WHERE (%u "
		      "learned, %u without a parked stack); walks from the "
		      "saved fcontext %" PRIu64
		      ", from the probe's registers %" PRIu64
		      " (saved ones refused %" PRIu64 ")\n",
		      prod, cons, roots, disp, stuck, stacked, tids[0], tids[1],
		      progw, fibers, learned, nostack, saved, probe, refused);
	/* Stopped before any assertion: a failure leaves nothing running. */
	kill(p.pid, SIGINT);
	assert_int_equal(exit_code(proc_finish(&p, 30000)), 130);
	assert_true(done);
	proc_free(&p);
	assert_xdg_empty();
}
#endif

#ifdef ITEST_FIBER_TARGET
/* Weight of the hot stacks whose leaf is in burn_compare (*leaf) and, of
 * those, of the ones that go on through frames of glibc's qsort (at least
 * one, none of the program's) to burn_sort_rounds, the function that
 * called qsort. */
static uint64_t burn_through(const struct jv *snap, uint64_t *leaf)
{
	const struct jv *hs = json_need(snap, "hot_stacks", J_ARR);
	uint64_t through = 0;

	*leaf = 0;
	for (size_t i = 0; i < hs->n; i++) {
		const struct jv *f = json_need(&hs->items[i], "frames", J_ARR);
		uint64_t w = json_u64(&hs->items[i], "weight");
		size_t k;

		if (!f->n ||
		    strncmp(json_need(&f->items[0], "symbol", J_STR)->s,
			    "burn_compare", 12))
			continue;
		*leaf += w;
		for (k = 1; k < f->n; k++)
			if (!strncmp(
				    json_need(&f->items[k], "symbol", J_STR)->s,
				    "burn_", 5))
				break;
		if (k >= 2 && k < f->n &&
		    !strncmp(json_need(&f->items[k], "symbol", J_STR)->s,
			     "burn_sort_rounds", 16))
			through += w;
	}
	return through;
}

/*
 * Read the snapshots of `corotop argv` (COROTOP_SNAPSHOTS=copies) as they
 * come until, with the copies, burn_compare was sampled and walked through
 * to burn_sort_rounds by CFI, or, without them, sampled 10 times at least
 * (its sort burns far more CPU than that), 60 s at most; then SIGINT.
 * *leaf, *through, *cfi and *taken are the last snapshot's.  Without the
 * copies no snapshot on the way may get through.
 */
static void fiber_sample_until(char *const argv[], bool copies, uint64_t *leaf,
			       uint64_t *through, uint64_t *cfi,
			       uint64_t *taken)
{
	uint64_t end = it_now() + 60ull * 1000000000u;
	size_t off = 0, snaps = 0;
	bool done = false, ended = false;
	struct proc p;
	char *line;
	int code;

	*leaf = *through = *cfi = *taken = 0;
	setenv("COROTOP_SNAPSHOTS", copies ? "1" : "0", 1);
	proc_start(&p, argv);
	unsetenv("COROTOP_SNAPSHOTS");
	while (!done && !ended && it_now() < end &&
	       (line = proc_line_by(&p, &off, end)) != NULL) {
		struct jv v;

		json_must_parse(line, &v);
		free(line);
		snaps++;
		ended = !json_need(&v, "target.running", J_BOOL)->b;
		*through = burn_through(&v, leaf);
		if (copies) {
			*cfi = json_u64(&v, "calltrace.snapshots.cfi");
			*taken = json_u64(&v, "calltrace.snapshots.taken");
		} else {
			assert_null(json_get(&v, "calltrace.snapshots.taken"));
			assert_int_equal(*through, 0);
		}
		json_free(&v);
		done = copies ? *leaf > 0 && *through > 0 && *cfi > 0
			      : *leaf >= 10;
	}
	kill(p.pid, SIGINT);
	/* 130; 0 when the program ended by itself (its pace keeps it 4 s
	 * at least) before the SIGINT came. */
	code = exit_code(proc_finish(&p, 30000));
	if (code != 130 && code != 0)
		fail_msg("corotop exit %d; stderr: %s", code, p.ebuf);
	assert_int_equal(corotop_lines(p.ebuf), 0);
	if (!done)
		fail_msg("%s: after %zu snapshots (60 s or the program's end) "
			 "burn_compare sampled %" PRIu64 ", %" PRIu64
			 " walked through; stderr: %s",
			 copies ? "with the copies" : "without", snaps, *leaf,
			 *through, p.ebuf);
	proc_free(&p);
}

/*
 * --sample on a preloaded Boost.Fiber program (a fiber sorting with
 * glibc's qsort and a comparator that burns CPU): its stacks are the
 * engine's CFI walks of the sampler's stack copies, from the comparator
 * through qsort's frames (glibc keeps no frame pointers) to
 * burn_sort_rounds, which called qsort.  The same run with
 * COROTOP_SNAPSHOTS=0 -- the signal handler's frame-pointer walk alone --
 * samples the comparator as well, and never gets from it to
 * burn_sort_rounds: what the copies are for.  Each run's snapshots are
 * read as they come until they show that (how soon depends on the
 * machine), then corotop is stopped.
 */
static void test_fiber_sample_cfi(void **state)
{
	/* Every stack (--hot-stacks): a busy dispatcher's many one-frame
	 * stacks may outweigh the comparator's in a top list. */
	char *argv[] = {ITEST_COROTOP, "-b",   "-f",
			"json",	       "-d",   "5",
			"--sample",    "997",  "--hot-stacks",
			"10000",       "--",   ITEST_FIBER_TARGET,
			"2",	       "2000", "--pace",
			"--burn",      NULL};
	uint64_t through[2], leaf[2], cfi = 0, taken = 0, after_exit = 0;
	uint64_t unused_cfi, unused_taken;

	(void)state;
	fiber_sample_until(argv, false, &leaf[0], &through[0], &unused_cfi,
			   &unused_taken);
	fiber_sample_until(argv, true, &leaf[1], &through[1], &cfi, &taken);
	/* A program that ends first (no --pace, the snapshot after its
	 * exit): the last rotation still names the stacks it collected then
	 * (frame walks: those all come from the final rotation's tables). */
	{
		char *early[] = {
			ITEST_COROTOP, "-b",  "-f",	"json",
			"-n",	       "1",   "-d",	"600",
			"--sample",    "997", "--",	ITEST_FIBER_TARGET,
			"2",	       "10",  "--burn", NULL};
		struct proc p;
		struct jv v;

		setenv("COROTOP_SNAPSHOTS", "0", 1);
		assert_int_equal(run(&p, early, 60000), 0);
		unsetenv("COROTOP_SNAPSHOTS");
		assert_non_null(strstr(p.ebuf, "fibers=5 "));
		last_snapshot(p.obuf, &v);
		(void)burn_through(&v, &after_exit);
		json_free(&v);
		proc_free(&p);
	}
	print_message("after the program's exit, burn_compare named in "
		      "%" PRIu64 " samples\n",
		      after_exit);
	assert_true(after_exit > 0);
	print_message("burn_compare sampled: %" PRIu64 " (walked to "
		      "burn_sort_rounds %" PRIu64 ") with the copies, %" PRIu64
		      " (%" PRIu64 ") without; %" PRIu64 " of %" PRIu64
		      " walked with CFI\n",
		      leaf[1], through[1], leaf[0], through[0], cfi, taken);
	assert_true(leaf[0] > 0);
	assert_int_equal(through[0], 0);
	assert_true(through[1] > 0);
	assert_true(cfi > 0);
	assert_xdg_empty();
}
#endif

#ifdef ITEST_FIBER_TARGET
/* Lints at thresholds an idle dispatcher and a waiting root pass at once
 * (a dispatcher runs while it waits for work, a root waits in main, both
 * switch the most): only the kind keeps them from being judged. */
static int setup_kinds(void **state)
{
	(void)state;
	return write_conf("lint.lost-wakeup.threshold = 1\n"
			  "lint.stall.threshold = 0.001\n"
			  "lint.storm.threshold = 10\n");
}

static int teardown_kinds(void **state)
{
	(void)state;
	teardown_conf(NULL);
	unsetenv("XDG_CONFIG_HOME");
	return 0;
}

/*
 * The scheduler's contexts say what they are: on an unmodified Boost.Fiber
 * program (two threads, fibers on channels, one stuck), JSON's "kind" is
 * "dispatcher" for Boost.Fiber's dispatchers, named "boost.fiber
 * dispatcher", one per thread; "root" for each thread's own stack, named
 * "root"; "coroutine" for every fiber.  With every lint at a threshold
 * they pass, no dispatcher or root is flagged, while the stuck fiber is
 * (WAKE?): the lints are on.  Snapshots are read until one shows all of
 * that, with a deadline.
 */
static void test_fiber_kinds(void **state)
{
	char *argv[] = {ITEST_COROTOP, "-b",	  "-f",	     "json",
			"-d",	       "3",	  "--",	     ITEST_FIBER_TARGET,
			"4",	       "1000000", "--stuck", "--pace",
			NULL};
	uint64_t end = it_now() + 60ull * 1000000000u;
	unsigned roots = 0, disp = 0, fibers = 0, flagged = 0, wrong = 0;
	bool stuck_flagged = false, done = false;
	char bad[256] = "";
	struct proc p;
	struct jv v;
	size_t off = 0;

	(void)state;
	proc_start(&p, argv);
	while (!done && snapshot_by(&p, &off, end, &v)) {
		const struct jv *co;

		co = json_need(&v, "coroutines", J_ARR);
		roots = disp = fibers = flagged = wrong = 0;
		stuck_flagged = false;
		for (size_t i = 0; i < co->n; i++) {
			const struct jv *c = &co->items[i];
			const char *name = coro_name(c);
			const char *kind = json_need(c, "kind", J_STR)->s;
			const struct jv *warn = json_need(c, "warn", J_ARR);

			if (!strcmp(kind, "dispatcher")) {
				disp++;
				wrong += strcmp(name,
						"boost.fiber dispatcher") != 0;
				flagged += warn->n != 0;
			} else if (!strcmp(kind, "root")) {
				roots++;
				wrong += strcmp(name, "root") != 0;
				flagged += warn->n != 0;
			} else if (!strcmp(kind, "coroutine")) {
				fibers++;
				/* Only the scheduler's contexts have those
				 * names. */
				wrong +=
					!strcmp(name, "root") ||
					!strcmp(name, "boost.fiber dispatcher");
				if (!strncmp(name, "stuck_wait_for_signal", 21))
					for (size_t k = 0; k < warn->n; k++)
						stuck_flagged |= !strcmp(
							warn->items[k].s,
							"lost-wakeup");
			} else {
				wrong++;
			}
			if (wrong && !bad[0])
				snprintf(bad, sizeof(bad), "%s: kind %s", name,
					 kind);
		}
		json_free(&v);
		/* 4 producers, 4 consumers and the stuck one. */
		done = disp == 2 && roots == 2 && fibers == 9 && stuck_flagged;
		if (flagged || wrong)
			break;
	}
	print_message("dispatchers %u, roots %u, fibers %u, flagged %u, "
		      "wrong %u %s, stuck flagged %d\n",
		      disp, roots, fibers, flagged, wrong, bad, stuck_flagged);
	kill(p.pid, SIGINT);
	assert_int_equal(exit_code(proc_finish(&p, 30000)), 130);
	assert_int_equal(flagged, 0);
	assert_int_equal(wrong, 0);
	assert_true(done);
	proc_free(&p);
	assert_xdg_empty();
}
#endif

#if defined(ITEST_FIBER_TARGET) && defined(ITEST_PRELOAD_LIB)
/*
 * The case late attach is for: a Boost.Fiber program, preloaded but
 * started without corotop, in which nothing moves any more -- its fibers
 * finished but one, blocked forever on a condition variable, and its main
 * thread in pause().  corotop -p must still see it (the doorbell: no
 * transition will ever run the attach check), flag it WAKE? at first sight
 * (it has been parked past the threshold), and name the program's
 * function it waits in, not Boost's (its stack walked with Boost's CFI:
 * Debian's Boost has no frame pointers).
 */
static void test_fiber_attach_hung(void **state)
{
	char *tgt[] = {ITEST_FIBER_TARGET, "2",	     "20",
		       "--stuck",	   "--hold", NULL};
	char *att[] = {ITEST_COROTOP, "-b", "-d", "2", "-f",
		       "json",	      "-p", NULL, NULL};
	char pid_s[16], where[128] = "", state_s[16] = "";
	uint64_t sw = UINT64_MAX, in_state = 0, wakes = 0;
	struct proc t, c;
	bool seen = false, printed;
	struct jv v;
	size_t off = 0;
	char *line;
	int code;

	(void)state;
	setenv("LD_PRELOAD", ITEST_PRELOAD_LIB, 1);
	proc_start(&t, tgt);
	unsetenv("LD_PRELOAD");
	/* Every fiber but the stuck one has finished when it prints. */
	line = proc_next_line(&t, &off, 60000);
	printed = line && strstr(line, "fibers=5");
	free(line);
	if (!printed) {
		kill(t.pid, SIGKILL);
		proc_finish(&t, 30000);
		proc_free(&t);
		fail_msg("fiber-target did not print its line");
	}
	/* The stuck fiber parked before that: past the 5 s threshold now. */
	sleep(6);
	snprintf(pid_s, sizeof(pid_s), "%d", (int)t.pid);
	att[7] = pid_s;
	proc_start(&c, att);
	off = 0;
	/* Read until the first snapshot that shows it; no assertion before
	 * both processes are stopped (a failure must leave none behind: the
	 * target holds forever). */
	while (!seen && (line = proc_next_line(&c, &off, 30000))) {
		const struct jv *stuck;

		json_must_parse(line, &v);
		free(line);
		stuck = coro_where(&v, "stuck_wait_for_signal");
		if (stuck) {
			seen = true;
			snprintf(where, sizeof(where), "%s",
				 json_need(stuck, "where", J_STR)->s);
			snprintf(state_s, sizeof(state_s), "%s",
				 json_need(stuck, "state", J_STR)->s);
			sw = json_u64(stuck, "switches");
			in_state = json_u64(stuck, "in_state_ns");
			wakes = json_u64(&v, "warnings.lost-wakeup");
			print_message("stuck fiber: where %s, age %.1f s, in "
				      "state %.1f s\n",
				      where,
				      (double)json_u64(stuck, "age_ns") / 1e9,
				      (double)in_state / 1e9);
		}
		json_free(&v);
	}
	kill(c.pid, SIGINT);
	code = exit_code(proc_finish(&c, 30000));
	kill(t.pid, SIGTERM);
	proc_finish(&t, 30000);
	proc_free(&c);
	proc_free(&t);
	assert_true(seen);
	assert_int_equal(code, 130);
	assert_string_equal(state_s, "suspended");
	assert_int_equal(sw, 0);
	assert_true(in_state > 5000000000ull);
	assert_true(wakes >= 1);
	assert_xdg_empty();
}
#endif

/* --no-auto: the same program, untraced. */
static void test_no_auto(void **state)
{
	char *argv[] = {ITEST_COROTOP, "-b", "-f",
			"json",	       "-d", "50",
			"--no-auto",   "--", ITEST_UCTX_TARGET,
			"2",	       "3",  NULL};
	struct proc p;
	struct jv snap;

	(void)state;
	assert_int_equal(run(&p, argv, 60000), 0);
	assert_int_equal(corotop_lines(p.ebuf), 0);
	assert_non_null(strstr(p.ebuf, "coroutines=2 rounds=3"));
	last_snapshot(p.obuf, &snap);
	assert_int_equal(json_u64(&snap, "counts.seen"), 0);
	json_free(&snap);
	proc_free(&p);
	assert_xdg_empty();
}

/*
 * No preload library where corotop looks (COROTOP_PRELOAD naming a file
 * that is not there): an error, exit 1, that says how to build it, and the
 * program is not run -- not an empty table and success.
 */
static void test_missing_preload(void **state)
{
	char *argv[] = {ITEST_COROTOP,	   "-b", "-f", "json", "-d", "50", "--",
			ITEST_UCTX_TARGET, "2",	 "3",  NULL};
	struct proc p;
	int rc;

	(void)state;
	setenv("COROTOP_PRELOAD", "/nonexistent/libcorotop-preload.so", 1);
	rc = run(&p, argv, 60000);
	unsetenv("COROTOP_PRELOAD");
	print_message("%s", p.ebuf);
	assert_int_equal(rc, 1);
	assert_int_equal(corotop_lines(p.ebuf), 1);
	assert_non_null(strstr(p.ebuf, "cannot be traced without a code"));
	assert_non_null(strstr(p.ebuf, "ninja -C " ITEST_BUILD_ROOT
				       " src/preload/libcorotop-preload.so"));
	assert_null(strstr(p.ebuf, "coroutines=2 rounds=3"));
	assert_true(p.olen == 0);
	proc_free(&p);
	assert_xdg_empty();
}

/* The cases that never preload need no library: with none to be found,
 * --no-auto and a set-user-ID program still run, with their one-line
 * note (the set-user-ID one) or none (--no-auto). */
static void test_missing_preload_steps_aside(void **state)
{
	char copy[512], cmd[1200];
	char *no_auto[] = {ITEST_COROTOP, "-b", "-f",
			   "json",	  "-d", "50",
			   "--no-auto",	  "--", ITEST_UCTX_TARGET,
			   "2",		  "3",	NULL};
	char *setuid[] = {ITEST_COROTOP, "-b", "-f", "json", "-d", "50",
			  "--",		 copy, "2",  "3",    NULL};
	struct proc p, q;
	int rc_auto, rc_uid;

	(void)state;
	snprintf(copy, sizeof(copy), "%s.setuid-missing", xdg);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", ITEST_UCTX_TARGET, copy);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(chmod(copy, 04755), 0);
	setenv("COROTOP_PRELOAD", "/nonexistent/libcorotop-preload.so", 1);
	rc_auto = run(&p, no_auto, 60000);
	rc_uid = run(&q, setuid, 60000);
	unsetenv("COROTOP_PRELOAD");
	unlink(copy);
	assert_int_equal(rc_auto, 0);
	assert_int_equal(corotop_lines(p.ebuf), 0);
	assert_non_null(strstr(p.ebuf, "coroutines=2 rounds=3"));
	assert_int_equal(rc_uid, 0);
	assert_int_equal(corotop_lines(q.ebuf), 1);
	assert_non_null(strstr(q.ebuf, "set-user/group-ID"));
	assert_non_null(strstr(q.ebuf, "coroutines=2 rounds=3"));
	proc_free(&p);
	proc_free(&q);
	assert_xdg_empty();
}

/*
 * corotop -p --no-scan on a process that publishes no ppt buffer (a
 * program that neither links the probe nor was started with the preload;
 * without --no-scan its memory is scanned: e2e-scan-attach): the error
 * names the LD_PRELOAD route, with the library's path.
 */
static void test_attach_names_preload(void **state)
{
	char *tgt[] = {ITEST_UCTX_TARGET, "2", "3", "--hold", NULL};
	char *att[] = {ITEST_COROTOP, "-b", "--no-scan", "-p", NULL, NULL};
	char pid_s[16], want[600];
	struct proc t, c;
	size_t off = 0;
	char *line;
	int rc;

	(void)state;
	proc_start(&t, tgt);
	/* Attached once it is running its own code (its first line). */
	line = proc_next_line(&t, &off, 60000);
	free(line);
	snprintf(pid_s, sizeof(pid_s), "%d", (int)t.pid);
	att[4] = pid_s;
	rc = run(&c, att, 60000);
	kill(t.pid, SIGKILL);
	proc_finish(&t, 30000);
	proc_free(&t);
	print_message("%s", c.ebuf);
	snprintf(want, sizeof(want), "start it with LD_PRELOAD=%s",
		 ITEST_PRELOAD_LIB);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(c.ebuf, "publishes no ppt buffer"));
	assert_non_null(strstr(c.ebuf, want));
	proc_free(&c);
	assert_xdg_empty();
}

/* A set-user-ID program: a one-line note, no tracing, the program runs. */
static void test_setuid_note(void **state)
{
	char copy[512], cmd[1200];
	char *argv[] = {ITEST_COROTOP, "-b", "-f", "json", "-d", "50",
			"--",	       copy, "2",  "3",	   NULL};
	struct proc p;

	(void)state;
	snprintf(copy, sizeof(copy), "%s.setuid-target", xdg);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", ITEST_UCTX_TARGET, copy);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(chmod(copy, 04755), 0);
	assert_int_equal(run(&p, argv, 60000), 0);
	unlink(copy);
	assert_non_null(strstr(p.ebuf, "set-user/group-ID"));
	assert_int_equal(corotop_lines(p.ebuf), 1);
	assert_non_null(strstr(p.ebuf, "coroutines=2 rounds=3"));
	proc_free(&p);
	assert_xdg_empty();
}

#ifdef ITEST_STATIC_TARGET
/* A static program: a one-line note saying why it is not traced. */
static void test_static_note(void **state)
{
	char *argv[] = {ITEST_COROTOP, "-b", "-f", "json",
			"-d",	       "50", "--", ITEST_STATIC_TARGET,
			NULL};
	struct proc p;

	(void)state;
	assert_int_equal(run(&p, argv, 60000), 0);
	assert_non_null(strstr(p.ebuf, "statically linked"));
	assert_int_equal(corotop_lines(p.ebuf), 1);
	proc_free(&p);
	assert_xdg_empty();
}
#endif

#ifdef ITEST_DEMO
/* The demo links the probe: it is not preloaded (not traced twice). */
static void test_linked_not_preloaded(void **state)
{
	char *argv[] = {ITEST_COROTOP, "-b", "-f", "json", "-d", "2", "--",
			ITEST_DEMO,    "-d", "60", "-c",   "20", NULL};
	char path[64], env[65536];
	struct proc p;
	size_t off = 0, n;
	struct jv v;
	char *line;
	FILE *f;

	(void)state;
	proc_start(&p, argv);
	line = proc_next_line(&p, &off, 30000);
	assert_non_null(line);
	json_must_parse(line, &v);
	free(line);
	snprintf(path, sizeof(path), "/proc/%llu/environ",
		 (unsigned long long)json_u64(&v, "target.pid"));
	json_free(&v);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(env, 1, sizeof(env) - 1, f);
	fclose(f);
	for (size_t i = 0; i < n; i++)
		if (!env[i])
			env[i] = '\n';
	env[n] = '\0';
	assert_null(strstr(env, "libcorotop-preload"));
	assert_non_null(strstr(env, "CTP_SHM_PATH=")); /* it is ours */
	kill(p.pid, SIGINT);
	assert_int_equal(exit_code(proc_finish(&p, 30000)), 130);
	assert_null(strstr(p.ebuf, "corotop: ")); /* no note */
	proc_free(&p);
	assert_xdg_empty();
}
#endif

int main(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	/* This corotop is a sanitizer build: its preload library is
	 * instrumented too and could not be loaded into a program that is
	 * not, so it never preloads (engine/target/autotrace.c). */
	printf("skipped: corotop built with a sanitizer does not preload\n");
	return 77;
#endif
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ucontext_exact),
		cmocka_unit_test(test_ucontext_stuck_named),
#ifdef ITEST_FCTX_TARGET
		cmocka_unit_test(test_fcontext_migration),
#endif
#ifdef ITEST_FIBER_TARGET
		cmocka_unit_test(test_boost_fiber),
#endif
#ifdef ITEST_FIBER_TARGET
		cmocka_unit_test(test_fiber_live_names),
		cmocka_unit_test(test_fiber_sample_cfi),
		cmocka_unit_test_setup_teardown(test_fiber_kinds, setup_kinds,
						teardown_kinds),
#endif
#if defined(ITEST_FIBER_TARGET) && defined(ITEST_PRELOAD_LIB)
		cmocka_unit_test(test_fiber_attach_hung),
#endif
		cmocka_unit_test(test_no_auto),
		cmocka_unit_test(test_setuid_note),
		cmocka_unit_test(test_missing_preload),
		cmocka_unit_test(test_missing_preload_steps_aside),
#ifdef ITEST_PRELOAD_LIB
		cmocka_unit_test(test_attach_names_preload),
#endif
#ifdef ITEST_STATIC_TARGET
		cmocka_unit_test(test_static_note),
#endif
#ifdef ITEST_DEMO
		cmocka_unit_test(test_linked_not_preloaded),
#endif
	};

	return cmocka_run_group_tests(tests, setup_xdg, teardown_xdg);
}
