/*
 * test-calltrace: the engine's CallTrace side with a real launched target
 * (ct-target, real shared probe) in another process.
 *
 *   hot       known stacks put over several rotations (rotation period
 *             100 ms, phases 400 ms apart): totals summed across rotations
 *             and exact; the tag frame merged away globally, split per
 *             coroutine by station and generation, a wrong generation
 *             credited to nobody; the tree of the window; the folded
 *             export of all and of one coroutine;
 *   liveness  a coroutine parked at a trace (the id in its suspend event)
 *             keeps that id across at least three rotations: the engine
 *             shows its parked stack by model id all along, and the target
 *             putting the same stack again gets the same id back;
 *   junk      stored stacks with data among their frames: the hot and
 *             the parked stack end before the first frame outside the
 *             target's code, the weight whole, each cut counted once;
 *   truncate  the target truncates the CallTrace file: the engine's next
 *             look at it faults, is caught (SIGBUS guard), reports it, and
 *             harvesting goes on.
 *   truncate-snap  the same for the snapshot ring (--sample): the drain
 *             faults, is caught, says so in calltrace.snapshots and the
 *             warning; the CallTrace region and harvesting go on.
 *
 *   In these four the target waits for the test, never for a clock: it
 *   stays parked, or keeps switching, until the test has checked what it
 *   needs and writes a byte on the target's control pipe (release_target),
 *   so a test or target descheduled for seconds only makes the run longer.
 *
 *   readers   every call the UI will make (top, tree, names, parked,
 *             stats, export, zero), in a loop while the harvest thread
 *             rotates every 20 ms and the target puts.
 *
 * Also in the 'concurrency' suite (TSan), for those concurrent reads.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "../common/itest.h"

#ifndef CT_TARGET
#error "CT_TARGET must name the ct-target program"
#endif

static void cfg_for(struct engine_config *cfg, char **argv)
{
	engine_config_defaults(cfg);
	cfg->argv = argv;
	cfg->stations = 64;
	cfg->ct_traces = 4096;
	cfg->ct_rotate_ms = 100;
	cfg->ct_idle_rotate_ms = 300;
	cfg->sleep_max_ms = 200;
}

/* Do frames f[0..n) (innermost first; f[0] a leaf when `leaf`) name the
 * target's functions want[0..nwant)? */
static bool names_are(struct engine *e, const uint64_t *f, size_t n, bool leaf,
		      const char *const *want, size_t nwant)
{
	char name[256];

	if (n != nwant) {
		print_message("%zu frames, not %zu\n", n, nwant);
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		engine_frame_name(e, f[i], leaf && i == 0, false, name,
				  sizeof(name));
		if (strcmp(name, want[i]) != 0) {
			print_message("frame %zu is %s, not %s\n", i, name,
				      want[i]);
			return false;
		}
	}
	return true;
}

/* ct-target's stacks (ct_target.c): functions of its own. */
static const char *const A[3] = {"ct_a1", "ct_a2", "ct_a3"};
static const char *const B[2] = {"ct_b1", "ct_b2"};
static const char *const P[3] = {"ct_c1", "ct_c2", "ct_c3"};

static char *slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n;

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void test_hot_stacks_summed(void **state)
{
	static struct engine_hot_stack hs[8];
	static struct hot_node tree[16];
	char *argv[] = {CT_TARGET, "hot", "3", "400", NULL};
	struct engine_calltrace_stats st;
	const struct model_coro *c0, *c1;
	struct engine_config cfg;
	static struct it_run r; /* the teardown's, if a check fails */
	char path[] = "/tmp/test-calltrace.XXXXXX", err[512];
	int fd;

	(void)state;
	cfg_for(&cfg, argv);
	assert_true(it_run_target(&cfg, 60000, &r));
	if (r.exit_code == 77)
		skip();
	assert_true(r.exited);
	assert_int_equal(r.exit_code, 0);
	engine_calltrace_stats(r.e, &st);
	assert_true(st.enabled);
	assert_false(st.failed);
	/* Each phase normally goes into a rotation of its own (4 traces
	 * each; phases 400 ms apart, rotations every 100 ms), but a harvest
	 * thread delayed past a gap puts two in one: the sums below must
	 * hold either way, so the split is printed, not asserted. */
	print_message("%llu rotations, %llu traces%s\n",
		      (unsigned long long)st.rotor.rotations,
		      (unsigned long long)st.rotor.traces,
		      st.rotor.rotations >= 3 && st.rotor.traces >= 12
			      ? ""
			      : " (phases shared a rotation this run)");
	assert_int_equal(st.rotor.dropped, 0);
	assert_int_equal(st.rotor.weight, 3 * 26);
	assert_int_equal(st.hot.weight, 3 * 26);
	assert_int_equal(st.hot.attributed, 3 * 12);
	assert_int_equal(st.hot.unattributed, 3 * 11);

	/* Global: the tags are gone, A's three variants are one stack. */
	assert_int_equal(engine_hot_stacks(r.e, 0, ENGINE_HOT_BY_TOTAL, hs, 8),
			 2);
	assert_true(names_are(r.e, hs[0].frames, hs[0].nframes, true, A, 3));
	assert_int_equal(hs[0].total, 3 * 23);
	assert_true(names_are(r.e, hs[1].frames, hs[1].nframes, true, B, 2));
	assert_int_equal(hs[1].total, 3 * 3);
	assert_true(hs[0].trace_id >> 32 != 0);
	assert_true(hs[0].self_pct > 88.4 && hs[0].self_pct < 88.5);

	/* Per coroutine, by model id. */
	c0 = it_find_coro(&r.snap, IT_PROBE_ID(0));
	c1 = it_find_coro(&r.snap, IT_PROBE_ID(1));
	assert_non_null(c0);
	assert_non_null(c1);
	assert_int_equal(
		engine_hot_stacks(r.e, c0->id, ENGINE_HOT_BY_TOTAL, hs, 8), 1);
	assert_int_equal(hs[0].total, 3 * 5);
	assert_true(names_are(r.e, hs[0].frames, hs[0].nframes, true, A, 3));
	assert_int_equal(
		engine_hot_stacks(r.e, c1->id, ENGINE_HOT_BY_WINDOW, hs, 8), 1);
	assert_int_equal(hs[0].total, 3 * 7);

	/* The window's tree: a3 -> a2 -> a1, then b2 -> b1; every phase put
	 * A and B together, so their shares are exact despite decay. */
	assert_int_equal(engine_hot_tree(r.e, 0, false, tree, 16), 5);
	assert_true(!strncmp(tree[0].name, "ct_a3+", 6));
	assert_int_equal(tree[0].subtree, 3);
	assert_true(!strncmp(tree[2].name, "ct_a1+", 6));
	assert_int_equal(tree[2].depth, 2);
	assert_true(tree[2].leaf);
	assert_true(tree[2].self_pct > 88.4 && tree[2].self_pct < 88.5);
	assert_true(!strncmp(tree[3].name, "ct_b2+", 6));
	assert_true(tree[3].total_pct > 11.5 && tree[3].total_pct < 11.6);

	/* Exports: everything, and one coroutine. */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_true(engine_export(r.e, ENGINE_EXPORT_FOLDED, path, 0, err,
				  sizeof(err)));
	assert_string_equal(slurp(path),
			    "ct_a3;ct_a2;ct_a1 69\nct_b2;ct_b1 9\n");
	assert_true(engine_export(r.e, ENGINE_EXPORT_FOLDED, path, c1->id, err,
				  sizeof(err)));
	assert_string_equal(slurp(path), "ct_a3;ct_a2;ct_a1 21\n");
	unlink(path);

	/* z: every weight forgotten. */
	engine_hot_zero(r.e);
	assert_int_equal(engine_hot_stacks(r.e, 0, ENGINE_HOT_BY_TOTAL, hs, 8),
			 0);
	it_run_finish(&r);
}

/* The next "WORD N" line from the target, N returned. */
static uint64_t read_word(int fd, const char *word)
{
	char line[128];
	size_t len = strlen(word);

	assert_true(it_read_line(fd, line, sizeof(line), 30000) > 0);
	if (strncmp(line, word, len) != 0)
		fail_msg("expected '%s ...', got '%s'", word, line);
	return strtoull(line + len, NULL, 10);
}

static uint64_t wait_rotations(struct engine *e, uint64_t at_least)
{
	struct engine_calltrace_stats st;
	uint64_t end = it_now() + 30000000000ull;

	do {
		engine_calltrace_stats(e, &st);
		if (st.rotor.rotations >= at_least)
			return st.rotor.rotations;
		it_sleep_ms(20);
	} while (it_now() < end);
	fail_msg("only %llu rotations", (unsigned long long)st.rotor.rotations);
	return 0;
}

/* The test's end of the running target's CTLFD pipe (-1: none). */
static int ctl_w = -1;

/* Tell the target to go on (park) or to stop switching (truncate*): one
 * byte on its CTLFD.  Closing it says the same, so a failed test's
 * teardown lets the target end too. */
static void release_target(void)
{
	assert_true(ctl_w >= 0);
	assert_int_equal(write(ctl_w, "g", 1), 1);
	close(ctl_w);
	ctl_w = -1;
}

static int teardown_ct(void **state)
{
	if (ctl_w >= 0)
		close(ctl_w);
	ctl_w = -1;
	return it_teardown_run(state);
}

/*
 * Start an engine on `ct-target MODE OUTFD CTLFD`: OUTFD the write end of a
 * pipe whose read end is returned, CTLFD the read end of one whose write
 * end is left in ctl_w (release_target).  The run is left for the caller
 * (and the teardown) to finish.
 */
static int start_with_pipe(struct it_run *r, const char *mode,
			   const struct engine_config *base)
{
	static char outarg[16], ctlarg[16];
	static char *argv[5];
	struct engine_config cfg;
	int p[2], c[2];

	memset(r, 0, sizeof(*r));
	snapshot_init(&r->snap);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(pipe(c), 0);
	/* The target keeps p[1] and c[0] only (EOF on c[0] once we close
	 * c[1] or die). */
	fcntl(p[0], F_SETFD, FD_CLOEXEC);
	fcntl(c[1], F_SETFD, FD_CLOEXEC);
	snprintf(outarg, sizeof(outarg), "%d", p[1]);
	snprintf(ctlarg, sizeof(ctlarg), "%d", c[0]);
	argv[0] = CT_TARGET;
	argv[1] = (char *)mode;
	argv[2] = outarg;
	argv[3] = ctlarg;
	argv[4] = NULL;
	if (base)
		cfg = *base;
	else
		cfg_for(&cfg, NULL);
	cfg.argv = argv;
	ctl_w = c[1];
	r->e = engine_create(&cfg, r->err, sizeof(r->err));
	assert_non_null(r->e);
	it_cur_run = r;
	assert_true(engine_start(r->e, r->err, sizeof(r->err)));
	close(p[1]);
	close(c[0]);
	return p[0];
}

/* The target ends (30 s at most), the engine stops, the run is over. */
static void end_run(struct it_run *r)
{
	for (uint64_t end = it_now() + 30000000000ull; !engine_reap(r->e);
	     it_sleep_ms(5))
		assert_true(it_now() < end);
	engine_stop(r->e);
	it_run_finish(r);
}

/* Wait (30 s at most) until coroutine IT_PROBE_ID(0) -- suspended, when
 * `suspended` -- shows a parked stack of n frames (into f, its trace id
 * into *seen); its record in r's snapshot.  what: the stack, for the
 * failure's words. */
static const struct model_coro *wait_parked(struct it_run *r, bool suspended,
					    size_t n, uint64_t *f,
					    uint64_t *seen, const char *what)
{
	const struct model_coro *c;

	for (uint64_t end = it_now() + 30000000000ull;; it_sleep_ms(20)) {
		engine_snapshot(r->e, &r->snap);
		c = it_find_coro(&r->snap, IT_PROBE_ID(0));
		if (c && (!suspended || c->state == MODEL_SUSPENDED) &&
		    engine_parked_stack(r->e, c->id, f, 8, seen) == n)
			return c;
		if (it_now() > end)
			fail_msg("%s never showed up", what);
	}
}

static void test_parked_keeps_its_id(void **state)
{
	struct engine_calltrace_stats st;
	const struct model_coro *c;
	uint64_t id, again, seen, first, mid, f[8];
	static struct it_run r; /* the teardown's, if a check fails */
	int fd;

	(void)state;
	fd = start_with_pipe(&r, "park", NULL);
	id = read_word(fd, "parked ");
	assert_true(id >> 32 != 0);
	/* Once harvested, the coroutine is parked at id. */
	first = wait_rotations(r.e, 1);
	c = wait_parked(&r, false, 3, f, &seen, "the parked stack");
	assert_int_equal(seen, id);
	assert_true(names_are(r.e, f, 3, false, P, 3));
	assert_int_equal(c->state, MODEL_SUSPENDED);
	mid = c->id;
	/* Three more rotations: still there, same id. */
	for (uint64_t k = 1; k <= 3; k++) {
		wait_rotations(r.e, first + k + 1);
		assert_int_equal(engine_parked_stack(r.e, mid, f, 8, &seen), 3);
		assert_int_equal(seen, id);
		assert_true(names_are(r.e, f, 3, false, P, 3));
	}
	engine_calltrace_stats(r.e, &st);
	assert_true(st.rotor.preserved >= 3);
	assert_int_equal(st.parked.kept, 1);
	/* Only now may it go on: it puts P again, and the id survived in
	 * ACTIVE. */
	release_target();
	again = read_word(fd, "again ");
	assert_int_equal(again, id);
	close(fd);
	for (uint64_t end = it_now() + 30000000000ull; !engine_reap(r.e);
	     it_sleep_ms(5))
		assert_true(it_now() < end);
	engine_stop(r.e);
	/* Resumed and dead: parked nowhere. */
	assert_int_equal(engine_parked_stack(r.e, mid, f, 8, &seen), 0);
	assert_int_equal(seen, 0);
	it_run_finish(&r);
}

/*
 * The park harvested after the rotation that collected its stack (forced:
 * the target puts P, the test waits for that rotation, only then lets the
 * target write the suspend).  That rotation listed no parked id, so it
 * kept nothing; nothing moves afterwards (no put, no preserved id), so
 * only the park itself can ask for the next rotation, which still reads P
 * in its previous union.  Before the fix it never showed up.
 */
static void test_parked_after_rotation(void **state)
{
	const struct model_coro *c;
	uint64_t id, seen = 0, mid, f[8];
	static struct it_run r; /* the teardown's, if a check fails */
	int fd;

	(void)state;
	fd = start_with_pipe(&r, "park-late", NULL);
	id = read_word(fd, "put ");
	assert_true(id >> 32 != 0);
	/* Nothing else puts: the first rotation comes after P's put. */
	wait_rotations(r.e, 1);
	assert_int_equal(write(ctl_w, "p", 1), 1);
	assert_int_equal(read_word(fd, "parked "), id);
	c = wait_parked(&r, true, 3, f, &seen,
			"the stack parked after its rotation");
	assert_int_equal(seen, id);
	assert_true(names_are(r.e, f, 3, false, P, 3));
	mid = c->id;
	/* Kept from then on, and preserved: the next put keeps its id. */
	wait_rotations(r.e, 4);
	assert_int_equal(engine_parked_stack(r.e, mid, f, 8, &seen), 3);
	assert_int_equal(seen, id);
	release_target();
	assert_int_equal(read_word(fd, "again "), id);
	close(fd);
	end_run(&r);
}

static void test_truncated_snapshots_survive(void **state)
{
	struct engine_calltrace_stats st;
	struct engine_config cfg;
	const struct model_coro *c;
	uint64_t before = 0, end;
	static struct it_run r; /* the teardown's, if a check fails */
	char line[64];
	int fd;

	(void)state;
	cfg_for(&cfg, NULL);
	cfg.sample_hz = 997;
	fd = start_with_pipe(&r, "truncate-snap", &cfg);
	assert_true(it_read_line(fd, line, sizeof(line), 30000) > 0);
	assert_string_equal(line, "truncated");
	close(fd);
	/* The drain looks at the ring on every pass: it faults at once. */
	end = it_now() + 30000000000ull;
	do {
		engine_calltrace_stats(r.e, &st);
		if (st.snapshots.failed)
			break;
		it_sleep_ms(20);
	} while (it_now() < end);
	assert_true(st.snapshots.enabled);
	assert_true(st.snapshots.failed);
	assert_non_null(strstr(st.warning, "snapshots"));
	assert_false(st.failed); /* the CallTrace region is fine */
	/* Harvesting goes on (deadline, not a sleep). */
	for (end = it_now() + 30000000000ull;; it_sleep_ms(20)) {
		engine_snapshot(r.e, &r.snap);
		c = it_find_coro(&r.snap, IT_PROBE_ID(0));
		if (c && !before)
			before = c->switches;
		if ((c && before && c->switches > before) || it_now() > end)
			break;
	}
	assert_non_null(c);
	assert_true(c->switches > before);
	assert_null(r.snap.error);
	/* It switched until now; now it may stop. */
	release_target();
	for (end = it_now() + 30000000000ull; !engine_reap(r.e); it_sleep_ms(5))
		assert_true(it_now() < end);
	it_run_finish(&r);
}

static void test_truncated_region_survives(void **state)
{
	struct engine_calltrace_stats st;
	const struct model_coro *c;
	static struct engine_hot_stack hs[4];
	uint64_t before, end;
	static struct it_run r; /* the teardown's, if a check fails */
	char line[64];
	int fd;

	(void)state;
	fd = start_with_pipe(&r, "truncate", NULL);
	assert_true(it_read_line(fd, line, sizeof(line), 30000) > 0);
	assert_string_equal(line, "truncated");
	close(fd);
	/* The next peek or rotation faults, and says so. */
	end = it_now() + 30000000000ull;
	do {
		engine_calltrace_stats(r.e, &st);
		if (st.failed || strstr(st.warning, "truncated"))
			break;
		it_sleep_ms(20);
	} while (it_now() < end);
	assert_true(st.failed || strstr(st.warning, "truncated"));
	assert_non_null(strstr(st.warning, "truncated"));
	/* Harvesting goes on. */
	engine_snapshot(r.e, &r.snap);
	c = it_find_coro(&r.snap, IT_PROBE_ID(0));
	assert_non_null(c);
	before = c->switches;
	/* Waited for, not slept on: more switches come (deadline). */
	for (end = it_now() + 30000000000ull;; it_sleep_ms(20)) {
		engine_snapshot(r.e, &r.snap);
		c = it_find_coro(&r.snap, IT_PROBE_ID(0));
		assert_non_null(c);
		if (c->switches > before || it_now() > end)
			break;
	}
	assert_true(c->switches > before);
	assert_null(r.snap.error);
	/* What was collected before stays readable. */
	engine_hot_stacks(r.e, 0, ENGINE_HOT_BY_TOTAL, hs, 4);
	/* It switched until now; now it may stop. */
	release_target();
	for (end = it_now() + 30000000000ull; !engine_reap(r.e); it_sleep_ms(5))
		assert_true(it_now() < end);
	assert_int_equal(r.snap.target.pid, engine_target_pid(r.e));
	engine_stop(r.e); /* the final rotation is skipped, not faulted */
	it_run_finish(&r);
}

/*
 * Stored stacks with junk in them (a frame-pointer walk through code built
 * without frame pointers reads data as frames): the hot stack and the
 * parked stack end before their first frame outside the target's code,
 * the weight stays whole, and each cut counts once as a walk stopped
 * "not code".
 */
static void test_stored_junk_is_cut(void **state)
{
	static const char *const kept_a[2] = {"ct_a1", "ct_a2"};
	static const char *const kept_p[1] = {"ct_c1"};
	static struct engine_hot_stack hs[8];
	uint64_t id, seen = 0, f[8];
	static struct it_run r; /* the teardown's, if a check fails */
	size_t n = 0;
	int fd;

	(void)state;
	fd = start_with_pipe(&r, "junk", NULL);
	id = read_word(fd, "parked ");
	assert_true(id >> 32 != 0);
	wait_parked(&r, true, 1, f, &seen, "the parked stack, cut");
	assert_int_equal(seen, id);
	assert_true(names_are(r.e, f, 1, false, kept_p, 1));
	for (uint64_t end = it_now() + 30000000000ull; !n; it_sleep_ms(20)) {
		n = engine_hot_stacks(r.e, 0, ENGINE_HOT_BY_TOTAL, hs, 8);
		assert_true(it_now() < end);
	}
	assert_int_equal(n, 1);
	assert_int_equal(hs[0].total, 5);
	assert_true(
		names_are(r.e, hs[0].frames, hs[0].nframes, true, kept_a, 2));
	engine_snapshot(r.e, &r.snap);
	assert_int_equal(r.snap.frames_not_code, 2);
	assert_int_equal(r.snap.frames_not_after_call, 0);
	release_target();
	close(fd);
	end_run(&r);
}

/* The UI thread's calls, in a loop, while the harvest thread rotates and
 * the target puts (for TSan: every answer is a copy under the hot lock). */
static void test_readers_while_rotating(void **state)
{
	char *argv[] = {CT_TARGET, "hot", "8", "120", NULL};
	static struct engine_hot_stack hs[8];
	static struct hot_node tree[32];
	struct engine_calltrace_stats st;
	struct engine_config cfg;
	char path[] = "/tmp/test-calltrace-rd.XXXXXX", err[512], name[128];
	uint64_t f[8], reads = 0, end;
	static struct it_run r; /* the teardown's, if a check fails */
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	memset(&r, 0, sizeof(r));
	snapshot_init(&r.snap);
	cfg_for(&cfg, argv);
	cfg.ct_rotate_ms = 20;
	r.e = engine_create(&cfg, r.err, sizeof(r.err));
	assert_non_null(r.e);
	it_cur_run = &r;
	assert_true(engine_start(r.e, r.err, sizeof(r.err)));
	/* Until the target is gone and the loop did what it is for: reads,
	 * and rotations under them (waited for, whatever the speed). */
	end = it_now() + 60000000000ull;
	st.rotor.rotations = 0;
	while (!engine_reap(r.e) || reads <= 10 || st.rotor.rotations < 2) {
		size_t n =
			engine_hot_stacks(r.e, 0, ENGINE_HOT_BY_WINDOW, hs, 8);

		for (size_t i = 0; i < n && i < 2; i++)
			engine_frame_name(r.e, hs[i].frames[0], true, true,
					  name, sizeof(name));
		engine_hot_tree(r.e, 0, reads & 1, tree, 32);
		engine_calltrace_stats(r.e, &st);
		engine_snapshot(r.e, &r.snap);
		if (r.snap.count)
			engine_parked_stack(r.e, r.snap.coro[0].id, f, 8, NULL);
		if (reads % 16 == 0)
			assert_true(engine_export(r.e, ENGINE_EXPORT_SPEEDSCOPE,
						  path, 0, err, sizeof(err)));
		if (reads % 64 == 63)
			engine_hot_zero(r.e);
		reads++;
		assert_true(it_now() < end);
		it_sleep_ms(2);
	}
	engine_stop(r.e);
	engine_calltrace_stats(r.e, &st);
	assert_true(st.rotor.rotations >= 2);
	assert_int_equal(st.hot.weight, 8 * 26); /* zero keeps this one */
	assert_true(reads > 10);
	unlink(path);
	it_run_finish(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_hot_stacks_summed,
					  it_teardown_run),
		cmocka_unit_test_teardown(test_parked_keeps_its_id,
					  teardown_ct),
		cmocka_unit_test_teardown(test_parked_after_rotation,
					  teardown_ct),
		cmocka_unit_test_teardown(test_stored_junk_is_cut, teardown_ct),
		cmocka_unit_test_teardown(test_truncated_region_survives,
					  teardown_ct),
		cmocka_unit_test_teardown(test_truncated_snapshots_survive,
					  teardown_ct),
		cmocka_unit_test_teardown(test_readers_while_rotating,
					  it_teardown_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
