/*
 * test-e2e-hot: hot stacks through the corotop binary, as a user gets them.
 *
 *   - the final JSON snapshot holds the stacks ct-target put (summed over
 *     rotations, tag frames merged away), --folded and --speedscope files
 *     are written on exit, and the text output has its section;
 *   - real frames are still named after the target exited (the target
 *     held alive until a snapshot shows them named, then ended);
 *   - the bundled demo under --sample: its CPU burners (burn_*) show, by
 *     name, among the hot stacks (their share printed: it depends on the
 *     machine's load);
 *   - the demo with --parked-stacks: at least 90% of its suspended
 *     coroutines have a parked_stack, and its lost wakeups are parked in
 *     chan_recv under stuck_wait_for_reply;
 *   - a C++20 coroutine's names demangled in the JSON snapshot, the
 *     folded file, speedscope and a recording's Chrome trace (cxx-target);
 *   - a sampled stack deeper than the probe's 8 KiB copy: the CFI walk of
 *     the copy ends inside it, and the frame walk of the live stack is
 *     joined on, up to the function 8 KiB above (sampler-target coro).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "e2e.h"

/* Hot stacks end to end: ct-target puts known stacks (tagged per
 * coroutine, one tag with a wrong generation) in 3 phases 1.2 s apart, so
 * the default 1 s rotation collects them over two rotations at least (the
 * in-process test checks one rotation per phase).  The final snapshot's
 * hot_stacks hold the sums, the profiles are written on exit, and the text
 * output has its section. */
static void test_hot_stacks_and_profiles(void **state)
{
	char folded[300], speed[300], *lines[64];
	char *json[] = {ITEST_COROTOP,	"-b",  "-f",	   "json",
			"-d",		"5",   "--folded", folded,
			"--speedscope", speed, "--",	   CT_TARGET,
			"hot",		"3",   "1200",	   NULL};
	char *text[] = {ITEST_COROTOP,	"-b", "-d",  "5",
			"--hot-stacks", "1",  "--",  CT_TARGET,
			"hot",		"1",  "300", NULL};
	const struct jv *hot, *fr;
	struct proc p;
	struct jv v, sv;
	size_t n;
	char *buf;
	FILE *f;
	long len;
	int rc;

	(void)state;
	snprintf(folded, sizeof(folded), "%s.folded", xdg);
	snprintf(speed, sizeof(speed), "%s.speedscope.json", xdg);
	rc = run(&p, json, 60000);
	if (rc == 77)
		skip();
	if (rc != 0)
		fail_msg("corotop exit %d; stderr: %s", rc, p.ebuf);
	n = split_lines(p.obuf, lines, 64);
	assert_true(n >= 2 && n <= 64);
	check_snapshot(lines[n - 1], true, &v);
	assert_true(json_u64(&v, "calltrace.rotations") >= 2);
	assert_int_equal(json_u64(&v, "calltrace.collected"), 78);
	assert_int_equal(json_u64(&v, "calltrace.attributed"), 36);
	assert_int_equal(json_need(&v, "calltrace.error", J_NULL)->t, J_NULL);
	hot = json_need(&v, "hot_stacks", J_ARR);
	assert_int_equal(hot->n, 2);
	assert_int_equal(json_u64(&hot->items[0], "weight"), 69);
	assert_true(json_u64(&hot->items[0], "id") >> 32 != 0);
	fr = json_need(&hot->items[0], "frames", J_ARR);
	assert_int_equal(fr->n, 3); /* the tag frame is gone */
	/* Innermost first: ct-target's own ct_a1, an address in its code. */
	assert_true(!strncmp(json_need(&fr->items[0], "symbol", J_STR)->s,
			     "ct_a1+", 6));
	assert_true(!strncmp(json_need(&fr->items[0], "addr", J_STR)->s,
			     "0x0000", 6));
	assert_int_equal(json_u64(&hot->items[1], "weight"), 9);
	json_free(&v);
	proc_free(&p);

	f = fopen(folded, "r");
	assert_non_null(f);
	buf = calloc(1, 65536);
	len = (long)fread(buf, 1, 65535, f);
	fclose(f);
	assert_string_equal(buf, "ct_a3;ct_a2;ct_a1 69\nct_b2;ct_b1 9\n");
	f = fopen(speed, "r");
	assert_non_null(f);
	len = (long)fread(buf, 1, 65535, f);
	buf[len] = '\0';
	fclose(f);
	json_must_parse(buf, &sv);
	assert_int_equal(
		json_u64(json_need(&sv, "profiles", J_ARR)->items, "endValue"),
		78);
	json_free(&sv);
	free(buf);
	unlink(folded);
	unlink(speed);
	assert_xdg_empty();

	rc = run(&p, text, 60000);
	if (rc != 0)
		fail_msg("corotop exit %d; stderr: %s", rc, p.ebuf);
	assert_non_null(
		strstr(p.obuf, "Hot stacks by function: 2 kept, weight 26"));
	assert_non_null(strstr(p.obuf, "ct_a1 <- ct_a2 <- ct_a3\n"));
	assert_null(strstr(p.obuf, "ct_b1 <- ct_b2")); /* --hot-stacks 1 */
	assert_xdg_empty();
	proc_free(&p);
}

/* The hot stack of snapshot v is ct-target real's, named: real_leaf
 * (func+off (file:line)), then real_mid. */
static bool real_named(const struct jv *v)
{
	const struct jv *hot = json_need(v, "hot_stacks", J_ARR), *fr;

	if (hot->n == 0)
		return false;
	fr = json_need(&hot->items[0], "frames", J_ARR);
	return fr->n == 3 &&
	       !strncmp(json_need(&fr->items[0], "symbol", J_STR)->s,
			"real_leaf+0x0 (ct_target.c:", 27) &&
	       !strncmp(json_need(&fr->items[1], "symbol", J_STR)->s,
			"real_mid", 8);
}

/*
 * A stack of real frames is named while the target lives, and still named
 * in the final snapshot and the profile written after it exited:
 * functions for the folded file, func+off (file:line) in JSON.  The target
 * (ct-target real, which sleeps 120 s after its put) is held alive until a
 * snapshot shows the stack named -- the engine names frames with a look at
 * the live process, however late a loaded machine lets it look -- then
 * ended by the test (SIGTERM: corotop exits 128 + 15 with it).  A fixed
 * sleep in the target raced that look: frames came out as hex.
 */
static void test_hot_stacks_named_after_exit(void **state)
{
	char folded[300], *lines[64];
	char *argv[] = {ITEST_COROTOP, "-b",	   "-f",   "json", "-d",
			"5",	       "--folded", folded, "--",   CT_TARGET,
			"real",	       "120000",   NULL};
	uint64_t end = it_now() + 60ull * 1000000000u;
	const struct jv *fr;
	bool found = false;
	size_t off = 0, snaps = 0;
	pid_t target = 0;
	struct proc p;
	char buf[512] = {0};
	struct jv v;
	char *line;
	size_t n;
	FILE *f;
	int rc;

	(void)state;
	snprintf(folded, sizeof(folded), "%s.real.folded", xdg);
	proc_start(&p, argv);
	while (!found && it_now() < end &&
	       (line = proc_line_by(&p, &off, end)) != NULL) {
		bool running;

		json_must_parse(line, &v);
		running = json_need(&v, "target.running", J_BOOL)->b;
		json_free(&v);
		if (!running) { /* ended by itself (77: no probe) */
			off -= strlen(line) + 1; /* the final, read below */
			free(line);
			break;
		}
		check_snapshot(line, false, &v);
		target = (pid_t)json_u64(&v, "target.pid");
		found = real_named(&v);
		json_free(&v);
		free(line);
		snaps++;
	}
	/* The target's end, which corotop reports and reaps. */
	if (target > 0)
		kill(target, SIGTERM);
	rc = exit_code(proc_finish(&p, 60000));
	if (rc == 77)
		skip();
	if (!found)
		fail_msg("no snapshot with real_leaf named within 60 s (%zu "
			 "read); exit %d; stderr: %s",
			 snaps, rc, p.ebuf);
	if (rc != 128 + SIGTERM)
		fail_msg("corotop exit %d; stderr: %s", rc, p.ebuf);
	n = split_lines(p.obuf + off, lines, 64);
	assert_true(n >= 1 && n <= 64);
	check_snapshot(lines[n - 1], true, &v);
	assert_false(json_need(&v, "target.running", J_BOOL)->b);
	assert_int_equal(json_u64(&v, "target.term_signal"), SIGTERM);
	fr = json_need(&json_need(&v, "hot_stacks", J_ARR)->items[0], "frames",
		       J_ARR);
	assert_int_equal(fr->n, 3);
	assert_true(!strncmp(json_need(&fr->items[0], "symbol", J_STR)->s,
			     "real_leaf+0x0 (ct_target.c:", 27));
	assert_true(!strncmp(json_need(&fr->items[1], "symbol", J_STR)->s,
			     "real_mid", 8));
	json_free(&v);
	f = fopen(folded, "r");
	assert_non_null(f);
	assert_true(fread(buf, 1, sizeof(buf) - 1, f) > 0);
	fclose(f);
	unlink(folded);
	/* GCC may clone real_mid (real_mid.isra.0): match the ends. */
	assert_true(!strncmp(buf, "target_real;real_mid", 20));
	assert_non_null(strstr(buf, ";real_leaf 4\n"));
	assert_xdg_empty();
	proc_free(&p);
}

#ifdef ITEST_DEMO
/* Weight per leaf function ("burn_compress_block+0x106 (...)" counts for
 * burn_compress_block): stacks are kept per exact pc, so one function's
 * samples are spread over many stacks. */
#define DEMO_FUNCS 64
struct demo_func {
	char name[96];
	double weight;
};

static void demo_func_add(struct demo_func *fn, size_t *n, const char *sym,
			  double w)
{
	size_t len = strcspn(sym, "+ ");
	size_t i;

	if (len >= sizeof(fn[0].name))
		len = sizeof(fn[0].name) - 1;
	for (i = 0; i < *n; i++)
		if (strlen(fn[i].name) == len && !strncmp(fn[i].name, sym, len))
			break;
	if (i == *n) {
		if (*n == DEMO_FUNCS)
			return;
		memcpy(fn[i].name, sym, len);
		fn[i].name[len] = '\0';
		fn[i].weight = 0;
		(*n)++;
	}
	fn[i].weight += w;
}
#endif

/* "KEY LO HI" of sampler-target's report, [lo, hi). */
static void report_range(const char *path, const char *key, uint64_t *lo,
			 uint64_t *hi)
{
	char line[256], k[32];
	unsigned long long a, b;
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	*lo = *hi = 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%31s %llx %llx", k, &a, &b) == 3 &&
		    !strcmp(k, key))
			*lo = a, *hi = b;
	fclose(f);
	assert_true(*lo && *hi > *lo);
}

/* The frame's address (0x + 16 hex digits). */
static uint64_t frame_addr(const struct jv *fr, size_t k)
{
	return strtoull(json_need(&fr->items[k], "addr", J_STR)->s, NULL, 16);
}

/*
 * sampler-target coro burns in target_burn_coro, called through
 * target_deep, whose 8 KiB of locals put its caller's return address
 * beyond the probe's stack copy.  The samples of the burner must still
 * reach that caller ("outer"): the CFI walk of the copy ends in
 * target_deep, and the handler's frame walk (the target keeps frame
 * pointers) is spliced on.  calltrace.snapshots says so.
 */
static void test_deep_sample_spliced(void **state)
{
	char report[4200], *argv[] = {ITEST_COROTOP,  "-b",
				      "-f",	      "json",
				      "-n",	      "1",
				      "-d",	      "600",
				      "--sample",     "997",
				      "--hot-stacks", "10000",
				      "--",	      ITEST_SAMPLER_TARGET,
				      "coro",	      "1.0",
				      report,	      NULL};
	uint64_t burn_lo, burn_hi, out_lo, out_hi, leaf = 0, outer = 0;
	const struct jv *hot;
	const char *last = NULL;
	struct proc p;
	struct jv v;

	(void)state;
	snprintf(report, sizeof(report), "%s/sampler-report", xdg);
	assert_int_equal(run(&p, argv, 60000), 0);
	for (const char *q = p.obuf; q && *q; q = strchr(q, '\n')) {
		if (*q == '\n')
			q++;
		if (*q == '{')
			last = q;
	}
	assert_non_null(last);
	{
		char *line = strndup(last, strcspn(last, "\n"));

		json_must_parse(line, &v);
		free(line);
	}
	report_range(report, "burn", &burn_lo, &burn_hi);
	report_range(report, "outer", &out_lo, &out_hi);
	unlink(report);
	hot = json_need(&v, "hot_stacks", J_ARR);
	for (size_t i = 0; i < hot->n; i++) {
		const struct jv *fr =
			json_need(&hot->items[i], "frames", J_ARR);
		uint64_t w = json_u64(&hot->items[i], "weight");
		uint64_t pc = fr->n ? frame_addr(fr, 0) : 0;

		if (pc < burn_lo || pc >= burn_hi)
			continue;
		leaf += w;
		for (size_t k = 1; k < fr->n; k++) {
			uint64_t ra = frame_addr(fr, k);

			/* A return address into outer: after its call. */
			if (ra > out_lo && ra <= out_hi) {
				outer += w;
				break;
			}
		}
	}
	print_message("burner sampled %" PRIu64 ", %" PRIu64
		      " reaching outer; snapshots: cfi %" PRIu64
		      " spliced %" PRIu64 " fp %" PRIu64 "\n",
		      leaf, outer, json_u64(&v, "calltrace.snapshots.cfi"),
		      json_u64(&v, "calltrace.snapshots.spliced"),
		      json_u64(&v, "calltrace.snapshots.fp"));
	assert_true(leaf > 0);
	assert_true(outer > 0);
	assert_true(json_u64(&v, "calltrace.snapshots.spliced") > 0);
	json_free(&v);
	proc_free(&p);
	assert_xdg_empty();
}

/*
 * The demo sampled at 997 Hz: snapshots are read as they come until the
 * hot stacks hold samples whose leaf is one of its burn_* functions, named
 * (60 s at most), then SIGINT.  Every stack on the way has frames.
 *
 * How heavy the burners are is printed, not asserted: they burn in slices
 * of wall time (checked against the clock) while the rest of the demo --
 * the scheduler, channels, spawns, the probe -- costs a fixed amount of
 * CPU per event, at a rate set by the clock too.  A loaded machine that
 * takes the CPU away mid-slice, or a sanitizer build that makes every
 * event dearer, shrinks the burners' share of the samples with corotop
 * working as it should: about 77% on a quiet machine, 58-61% in an
 * ASan+UBSan build beside 8 CPU hogs, 45-50% beside 14 (2 vCPUs), where
 * "more than half" failed.  Which function is heaviest is as open.
 */
#ifdef ITEST_DEMO
/* Weight of the snapshot's hot stacks in all and of those whose leaf is a
 * burn_* function; per leaf function into fn (*nfn of them). */
static void demo_weights(const struct jv *v, double *all, double *burn,
			 struct demo_func *fn, size_t *nfn)
{
	const struct jv *hot = json_need(v, "hot_stacks", J_ARR), *fr;

	*all = *burn = 0;
	*nfn = 0;
	for (size_t i = 0; i < hot->n; i++) {
		double w = json_need(&hot->items[i], "weight", J_NUM)->num;
		const char *leaf;

		fr = json_need(&hot->items[i], "frames", J_ARR);
		assert_true(fr->n > 0);
		leaf = json_need(&fr->items[0], "symbol", J_STR)->s;
		*all += w;
		if (!strncmp(leaf, "burn_", 5))
			*burn += w;
		demo_func_add(fn, nfn, leaf, w);
	}
}
#endif

static void test_demo_burners_on_top(void **state)
{
#ifdef ITEST_DEMO
	char *argv[] = {
		ITEST_COROTOP, "-b",	   "-d",  "10",		  "-f",
		"json",	       "--sample", "997", "--hot-stacks", "10000",
		"--",	       ITEST_DEMO, NULL};
	uint64_t end = it_now() + 60ull * 1000000000u;
	struct demo_func fn[DEMO_FUNCS];
	double burn = 0, all = 0;
	size_t nfn = 0, top = 0, off = 0, snaps = 0;
	struct proc p;
	char *line;

	(void)state;
	proc_start(&p, argv);
	while (burn == 0 && it_now() < end &&
	       (line = proc_line_by(&p, &off, end)) != NULL) {
		struct jv v;

		check_snapshot(line, false, &v);
		demo_weights(&v, &all, &burn, fn, &nfn);
		json_free(&v);
		free(line);
		snaps++;
	}
	kill(p.pid, SIGINT);
	assert_int_equal(exit_code(proc_finish(&p, 30000)), 130);
	for (size_t i = 0; i < nfn; i++) {
		print_message("%6.0f %s\n", fn[i].weight, fn[i].name);
		if (fn[i].weight > fn[top].weight)
			top = i;
	}
	print_message("snapshot %zu: burn_* leaves %.0f of %.0f (%.0f%%), "
		      "heaviest leaf function %s\n",
		      snaps, burn, all, all > 0 ? 100 * burn / all : 0.0,
		      nfn ? fn[top].name : "(none)");
	if (burn == 0)
		fail_msg("no hot stack with a burn_* leaf within 60 s (%zu "
			 "snapshots); stderr: %s",
			 snaps, p.ebuf);
	assert_xdg_empty();
	proc_free(&p);
#else
	(void)state;
	skip();
#endif
}

/* The demo with --parked-stacks: nearly every suspended coroutine has a
 * parked_stack in JSON (those that parked a moment ago may not have been
 * collected yet), including the ones that park again and again (the
 * connections: an id must survive the rotations), and the lost wakeups'
 * stacks run through chan_recv in stuck_wait_for_reply.  Every snapshot
 * must have the shape; the proportions are waited for, snapshot by
 * snapshot (deadline 60 s): how soon stacks are collected depends on the
 * machine. */
#ifdef ITEST_DEMO
struct parked_counts {
	size_t suspended, parked, stuck;
};

static struct parked_counts parked_check(const struct jv *v)
{
	const struct jv *co = json_need(v, "coroutines", J_ARR);
	struct parked_counts n = {0};

	for (size_t i = 0; i < co->n; i++) {
		const struct jv *c = &co->items[i], *ps, *fr;
		char joined[2048] = "";

		if (strcmp(json_need(c, "state", J_STR)->s, "suspended"))
			continue;
		n.suspended++;
		ps = json_get(c, "parked_stack");
		if (!ps)
			continue;
		n.parked++;
		assert_true(json_need(ps, "id", J_NUM)->num >= 4294967296.0);
		fr = json_need(ps, "frames", J_ARR);
		assert_true(fr->n > 0);
		for (size_t k = 0; k < fr->n; k++) {
			strncat(joined,
				json_need(&fr->items[k], "symbol", J_STR)->s,
				sizeof(joined) - strlen(joined) - 2);
			strncat(joined, ";",
				sizeof(joined) - strlen(joined) - 1);
		}
		if (!strncmp(json_need(c, "where", J_STR)->s,
			     "stuck_wait_for_reply", 20)) {
			assert_non_null(strstr(joined, "chan_recv"));
			assert_non_null(strstr(joined, "stuck_wait_for_reply"));
			n.stuck++;
		}
	}
	return n;
}
#endif

static void test_demo_parked_stacks(void **state)
{
#ifdef ITEST_DEMO
	char *args[] = {ITEST_COROTOP,	   "-b", "-d",	     "10", "-f", "json",
			"--parked-stacks", "--", ITEST_DEMO, NULL};
	uint64_t end = it_now() + 60ull * 1000000000u;
	struct parked_counts n = {0};
	size_t off = 0, snaps = 0;
	bool ok = false;
	struct proc p;
	char *line;

	(void)state;
	proc_start(&p, args);
	while (!ok && it_now() < end &&
	       (line = proc_line_by(&p, &off, end)) != NULL) {
		struct jv v;

		check_snapshot(line, false, &v);
		n = parked_check(&v);
		snaps++;
		print_message("snapshot %zu: %zu of %zu suspended coroutines "
			      "have a parked stack, %zu lost wakeups\n",
			      snaps, n.parked, n.suspended, n.stuck);
		ok = n.suspended > 100 && n.parked * 10 >= n.suspended * 9 &&
		     n.stuck > 0;
		json_free(&v);
		free(line);
	}
	kill(p.pid, SIGINT);
	assert_int_equal(exit_code(proc_finish(&p, 30000)), 130);
	if (!ok)
		fail_msg("no snapshot within 60 s with > 100 suspended, 90%% "
			 "of them parked and a lost wakeup (last: %zu of %zu, "
			 "%zu); stderr: %s",
			 n.parked, n.suspended, n.stuck, p.ebuf);
	assert_xdg_empty();
	proc_free(&p);
#else
	(void)state;
	skip();
#endif
}

/*
 * C++ names through every output (cxx-target): its coroutine ct::worker(int)
 * puts its own stack from its body and parks at a co_await.  Snapshots
 * are read as they come until one shows, demangled, the coroutine's WHERE
 * and the stack's two frames -- the body, GCC's "....Frame.actor" or
 * Clang's ".resume", as the coroutine itself; then the target is released
 * (a file it waits for), and the folded and speedscope files written on
 * exit carry the same names, as does the recording (--record) converted
 * to a Chrome trace.  Nothing mangled anywhere.
 */
#ifdef CXX_TARGET
static bool cxx_named(const struct jv *v)
{
	const struct jv *co = json_need(v, "coroutines", J_ARR);
	const struct jv *hot = json_need(v, "hot_stacks", J_ARR), *fr;
	bool where = false;

	for (size_t i = 0; i < co->n; i++)
		where |= !strncmp(json_need(&co->items[i], "where", J_STR)->s,
				  "ct::worker(int)+0x", 18);
	if (!where || hot->n != 1)
		return false;
	fr = json_need(&hot->items[0], "frames", J_ARR);
	return fr->n == 2 &&
	       !strncmp(json_need(&fr->items[0], "symbol", J_STR)->s,
			"ct::leaf(unsigned long*)+0x0", 28) &&
	       !strncmp(json_need(&fr->items[1], "symbol", J_STR)->s,
			"ct::worker(int)+0x", 18);
}
#endif

static void test_cxx_names(void **state)
{
#ifdef CXX_TARGET
	char folded[300], speed[300], release[300], rec[300], chrome[300];
	char *argv[] = {ITEST_COROTOP, "-b",	   "-f",	   "json",
			"-d",	       "1",	   "--folded",	   folded,
			"--record",    rec,	   "--speedscope", speed,
			"--",	       CXX_TARGET, release,	   NULL};
	char *convert[] = {ITEST_COROTOP, "convert", "--to", "chrome",
			   rec,		  "-o",	     chrome, NULL};
	char *big;
	uint64_t end = it_now() + 60ull * 1000000000u;
	size_t off = 0, n = 0;
	bool found = false;
	char buf[4096] = {0};
	struct proc p;
	struct jv sv;
	char *line;
	FILE *f;
	int rc;

	(void)state;
	snprintf(folded, sizeof(folded), "%s.cxx.folded", xdg);
	snprintf(speed, sizeof(speed), "%s.cxx.speedscope.json", xdg);
	snprintf(release, sizeof(release), "%s.cxx.release", xdg);
	snprintf(rec, sizeof(rec), "%s.cxx.heph", xdg);
	snprintf(chrome, sizeof(chrome), "%s.cxx.chrome.json", xdg);
	proc_start(&p, argv);
	while (!found && it_now() < end &&
	       (line = proc_line_by(&p, &off, end)) != NULL) {
		struct jv v;

		check_snapshot(line, false, &v);
		assert_null(strstr(line, "_Z"));
		assert_null(strstr(line, "[clone"));
		found = cxx_named(&v);
		json_free(&v);
		free(line);
		n++;
	}
	f = fopen(release, "w");
	assert_non_null(f);
	fclose(f);
	rc = exit_code(proc_finish(&p, 60000));
	unlink(release);
	if (rc == 77)
		skip();
	if (!found)
		fail_msg("no snapshot named ct::worker and its stack within "
			 "60 s (%zu read); exit %d; stderr: %s",
			 n, rc, p.ebuf);
	assert_int_equal(rc, 0);

	f = fopen(folded, "r");
	assert_non_null(f);
	assert_true(fread(buf, 1, sizeof(buf) - 1, f) > 0);
	fclose(f);
	unlink(folded);
	assert_string_equal(buf,
			    "ct::worker(int);ct::leaf(unsigned long*) 4\n");

	f = fopen(speed, "r");
	assert_non_null(f);
	memset(buf, 0, sizeof(buf));
	assert_true(fread(buf, 1, sizeof(buf) - 1, f) > 0);
	fclose(f);
	unlink(speed);
	json_must_parse(buf, &sv);
	assert_non_null(strstr(buf, "\"ct::worker(int)\""));
	assert_non_null(strstr(buf, "\"ct::leaf(unsigned long*)\""));
	assert_null(strstr(buf, "_Z"));
	json_free(&sv);
	proc_free(&p);

	/* The recording's names, through corotop convert's Chrome trace. */
	rc = run(&p, convert, 60000);
	if (rc != 0)
		fail_msg("corotop convert exit %d; stderr: %s", rc, p.ebuf);
	proc_free(&p);
	f = fopen(chrome, "r");
	assert_non_null(f);
	big = calloc(1, 1 << 20);
	assert_non_null(big);
	assert_true(fread(big, 1, (1 << 20) - 1, f) > 0);
	fclose(f);
	json_must_parse(big, &sv);
	json_free(&sv);
	assert_non_null(strstr(big, "ct::worker(int)+0x"));
	assert_null(strstr(big, "_Z"));
	free(big);
	unlink(chrome);
	unlink(rec);
	assert_xdg_empty();
#else
	(void)state;
	skip(); /* no C++ compiler: cxx-target was not built */
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hot_stacks_and_profiles),
		cmocka_unit_test(test_hot_stacks_named_after_exit),
		cmocka_unit_test(test_demo_burners_on_top),
		cmocka_unit_test(test_demo_parked_stacks),
		cmocka_unit_test(test_cxx_names),
		cmocka_unit_test(test_deep_sample_spliced),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup_xdg, teardown_xdg);
}
