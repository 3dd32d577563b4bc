/*
 * End to end: the full state on attach (issue 15) -- coroutines that parked
 * before corotop looked, and never switch again, must show at once as they
 * are: suspended since they parked (so past the lost-wakeup threshold:
 * WAKE?), born when they were born, with their parked stacks.
 *
 *   - census-target parks three coroutines on stacks of their own and
 *     says what the probe kept of each; the test waits until they have
 *     been parked longer than the threshold (a clock passing a known time,
 *     the condition is not a guess), then runs `corotop -b -f json -p PID`:
 *     each coroutine's first appearance is WAKE?, with exactly the probe
 *     id, birth, park time, thread and address the target reported, no
 *     switch, and a parked stack that names the three functions it parked
 *     through (census_target_wait <- census_target_serve <-
 *     census_target_entry);
 *   - the bundled demo, started alone: a first `corotop -p` finds its three
 *     stuck coroutines (parked in stuck_wait_for_reply) and detaches; once
 *     they have been parked past the threshold, a second `corotop -p`
 *     shows each of them, at its first appearance, WAKE?, parked there,
 *     with the same birth and park time to the nanosecond: the attach made
 *     well after the start sees the truth, not the attach time;
 *   - a late --shm observer: the demo launched by one corotop, and once
 *     its stuck ones have been parked past the threshold, a second corotop
 *     observing the region shows them at its first look, WAKE?, with the
 *     same birth and park time.
 *   - a junked stack (issue 27: a stack freed and reused since its
 *     coroutine parked): census-target parks two coroutines and fills the
 *     second one's stack with junk words; `corotop -p` walks both at the
 *     attach: the first shows its three frames, the second's WHERE, NAME,
 *     addr and parked stack hold none of the junk (each frame a return
 *     address into code: src/engine/target/framecheck.c), and the stop is
 *     counted in frames.not_code.
 * The threshold is 1 s here (lint.lost-wakeup.threshold in a config file
 * of the test's own), so the waits are short; nothing depends on speed.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <sys/stat.h>

#include "e2e.h"

#include "ppt-it.h"

#define THRESHOLD_NS 1000000000ull /* lint.lost-wakeup.threshold = 1 */
#define DEADLINE_NS 60000000000ull
#define NPARKED 3

/* A config of the test's own: the lost-wakeup threshold at 1 s. */
static int setup(void **state)
{
	return setup_conf(state, "lint.lost-wakeup.threshold = 1\n");
}

static int teardown(void **state)
{
	teardown_conf(NULL);
	return teardown_xdg(state);
}

/* What a coroutine is, as the target (or a first corotop) saw it. */
struct truth {
	uint64_t id, birth, state_ts, tid, addr;
	bool have_tid; /* tid and addr known (census-target) */
	bool seen;
};

/* The coroutine with probe id `id` in snapshot v, or NULL. */
static const struct jv *coro_of(const struct jv *v, uint64_t id)
{
	const struct jv *co = json_need(v, "coroutines", J_ARR);

	for (size_t i = 0; i < co->n; i++)
		if (json_u64(&co->items[i], "probe_id") == id)
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

/* Frame k of c's parked stack names a function starting with syms[k], for
 * each of the n (0: c has no parked stack). */
static bool stack_starts(const struct jv *c, const char *const *syms, size_t n)
{
	const struct jv *f = json_get(c, "parked_stack.frames");

	if (!f || f->t != J_ARR || f->n < n)
		return false;
	for (size_t k = 0; k < n; k++)
		if (strncmp(json_need(&f->items[k], "symbol", J_STR)->s,
			    syms[k], strlen(syms[k])))
			return false;
	return true;
}

/*
 * c at its first appearance: WAKE?, suspended, no switch since the
 * attach, born and parked exactly when `t` says; with the stack `syms`
 * (n frames from the innermost) or, n == 0, one that has `sym` (or, both
 * none, no stack check: an observer).
 */
static void check_first_sight(const struct jv *snap, const struct jv *c,
			      const struct truth *t, const char *const *syms,
			      size_t n, const char *sym)
{
	uint64_t ts = json_u64(snap, "ts");
	uint64_t birth = ts - json_u64(c, "age_ns");
	uint64_t since = ts - json_u64(c, "in_state_ns");

	print_message("coroutine %#llx: age %.3f s, in state %.3f s, "
		      "warn %s\n",
		      (unsigned long long)t->id,
		      (double)json_u64(c, "age_ns") / 1e9,
		      (double)json_u64(c, "in_state_ns") / 1e9,
		      warned(c, "lost-wakeup") ? "WAKE?" : "none");
	assert_string_equal(json_need(c, "state", J_STR)->s, "suspended");
	assert_true(warned(c, "lost-wakeup"));
	assert_true(json_u64(c, "in_state_ns") <= json_u64(c, "age_ns"));
	/* Attached: nothing switched since (an observer also delivers what
	 * the ring still holds of the coroutine's past). */
	if (n || sym)
		assert_int_equal(json_u64(c, "switches"), 0);
	if (birth != t->birth || since != t->state_ts)
		fail_msg("coroutine %#llx: born %llu, parked since %llu; "
			 "expected %llu and %llu",
			 (unsigned long long)t->id, (unsigned long long)birth,
			 (unsigned long long)since,
			 (unsigned long long)t->birth,
			 (unsigned long long)t->state_ts);
	if (t->have_tid) {
		char addr[32];

		assert_int_equal(json_u64(c, "tid"), t->tid);
		snprintf(addr, sizeof(addr), "0x%016llx",
			 (unsigned long long)t->addr);
		assert_string_equal(json_need(c, "addr", J_STR)->s, addr);
	}
	/* An observer walks no stacks (it has no process to read). */
	if (!n && !sym)
		return;
	if (n ? !stack_starts(c, syms, n) : !stack_has(c, sym))
		fail_msg("coroutine %#llx: not the parked stack expected "
			 "(%s)",
			 (unsigned long long)t->id,
			 json_get(c, "parked_stack") ? "another one" : "none");
}

/* Wait until every coroutine of `t` has been in its state longer than the
 * threshold: a clock passing a known time. */
static void wait_past_threshold(const struct truth *t, size_t n)
{
	uint64_t latest = 0;

	for (size_t i = 0; i < n; i++)
		if (t[i].state_ts > latest)
			latest = t[i].state_ts;
	while (it_now() <= latest + THRESHOLD_NS)
		it_sleep_ms(20);
}

/* The next snapshot line of p, waiting as long as it takes before `end`;
 * NULL when the output ended or the deadline passed. */
static char *next_snapshot(struct proc *p, size_t *off, uint64_t end)
{
	char *line = NULL;

	while (!line && it_now() < end) {
		line = proc_next_line(p, off, 1000);
		if (!line && p->out < 0)
			break;
	}
	return line;
}

/*
 * Read snapshots of p until every coroutine of t has been seen; check each
 * at its first appearance.  Fails at the deadline.
 */
static void read_until_seen(struct proc *p, struct truth *t, size_t n,
			    const char *const *syms, size_t nsyms,
			    const char *sym)
{
	uint64_t end = it_now() + DEADLINE_NS;
	size_t off = 0, seen = 0, snaps = 0;
	char *line;

	while (seen < n && (line = next_snapshot(p, &off, end)) != NULL) {
		struct jv v;

		json_must_parse(line, &v);
		snaps++;
		for (size_t i = 0; i < n; i++) {
			const struct jv *c;

			if (t[i].seen || !(c = coro_of(&v, t[i].id)))
				continue;
			check_first_sight(&v, c, &t[i], syms, nsyms, sym);
			t[i].seen = true;
			seen++;
		}
		if (seen == n)
			assert_true(json_u64(&v, "warnings.lost-wakeup") >= n);
		json_free(&v);
		free(line);
	}
	if (seen < n)
		fail_msg("%zu of %zu coroutines seen in %zu snapshots: %s",
			 seen, n, snaps, p->ebuf ? p->ebuf : "");
}

static void stop_corotop(struct proc *p)
{
	kill(p->pid, SIGINT);
	if (exit_code(proc_finish(p, 30000)) != 128 + SIGINT)
		fail_msg("corotop failed: %s", p->ebuf);
	proc_free(p);
}

static void test_attach_shows_parked(void **state)
{
	static const char *const syms[] = {"census_target_wait",
					   "census_target_serve",
					   "census_target_entry"};
	struct truth t[NPARKED] = {0};
	char *argv[] = {ITEST_COROTOP, "-b", "-d", "2", "-f",
			"json",	       "-p", NULL, NULL};
	struct target tg;
	struct proc p;
	char r[256];

	(void)state;
	target_start(&tg, CENSUS_TARGET);
	target_cmd(&tg, "park 3", r, sizeof(r));
	assert_string_equal(r, "ok parked 3");
	for (unsigned k = 0; k < NPARKED; k++) {
		char cmd[32];
		unsigned active;

		snprintf(cmd, sizeof(cmd), "coro %u", k);
		target_cmd(&tg, cmd, r, sizeof(r));
		assert_int_equal(sscanf(r,
					"ok id=%" SCNu64 " birth=%" SCNu64
					" last=%" SCNu64 " tid=%" SCNu64
					" addr=%" SCNu64 " active=%u",
					&t[k].id, &t[k].birth, &t[k].state_ts,
					&t[k].tid, &t[k].addr, &active),
				 6);
		assert_int_equal(active, 0);
		/* Parked after it was born (the probe keeps the coarse
		 * clock from reading earlier than the birth). */
		assert_true(t[k].state_ts >= t[k].birth);
		t[k].have_tid = true;
	}
	wait_past_threshold(t, NPARKED);
	argv[7] = (char *)pid_arg(tg.pid);
	proc_start(&p, argv);
	read_until_seen(&p, t, NPARKED, syms, 3, NULL);
	stop_corotop(&p);
	target_stop(&tg);
	assert_xdg_empty();
}

/* Does text hold one of the junk words census-target writes? */
static bool junk_text(const char *text)
{
	static const char *const junk[] = {"a0d0a", "74736574", "3000000010"};

	for (size_t k = 0; text && k < sizeof(junk) / sizeof(*junk); k++)
		if (strstr(text, junk[k]))
			return true;
	return false;
}

/* c shows no junk: WHERE, NAME, addr, every parked frame. */
static void check_no_junk(const struct jv *c)
{
	static const char *const keys[] = {"where", "name", "addr"};
	const struct jv *f = json_get(c, "parked_stack.frames");

	for (size_t k = 0; k < sizeof(keys) / sizeof(*keys); k++) {
		const struct jv *v = json_get(c, keys[k]);

		if (v && v->t == J_STR && junk_text(v->s))
			fail_msg("%s is junk: %s", keys[k], v->s);
	}
	for (size_t k = 0; f && f->t == J_ARR && k < f->n; k++) {
		const char *a = json_need(&f->items[k], "addr", J_STR)->s;
		const char *sym = json_need(&f->items[k], "symbol", J_STR)->s;

		if (junk_text(a) || junk_text(sym))
			fail_msg("parked frame %zu is junk: %s %s", k, a, sym);
	}
}

static void test_attach_junk_stack(void **state)
{
	static const char *const syms[] = {"census_target_wait",
					   "census_target_serve",
					   "census_target_entry"};
	char *argv[] = {ITEST_COROTOP, "-b", "-d", "1", "-f",
			"json",	       "-p", NULL, NULL};
	uint64_t id[2], end, rejected = 0;
	bool good = false, junked = false;
	struct target tg;
	struct proc p;
	size_t off = 0;
	char r[256], *line;

	(void)state;
	target_start(&tg, CENSUS_TARGET);
	target_cmd(&tg, "park 2", r, sizeof(r));
	assert_string_equal(r, "ok parked 2");
	for (unsigned k = 0; k < 2; k++) {
		char cmd[32];

		snprintf(cmd, sizeof(cmd), "coro %u", k);
		target_cmd(&tg, cmd, r, sizeof(r));
		assert_int_equal(sscanf(r, "ok id=%" SCNu64, &id[k]), 1);
	}
	target_cmd(&tg, "junk 1", r, sizeof(r));
	assert_string_equal(r, "ok junk 1");
	argv[7] = (char *)pid_arg(tg.pid);
	proc_start(&p, argv);
	/* Until both were seen walked and the junk's stop counted. */
	end = it_now() + DEADLINE_NS;
	while (!(good && junked && rejected) &&
	       (line = next_snapshot(&p, &off, end)) != NULL) {
		const struct jv *c;
		struct jv v;

		json_must_parse(line, &v);
		rejected = json_u64(&v, "frames.not_code");
		if ((c = coro_of(&v, id[0])) != NULL) {
			check_no_junk(c);
			good = good || stack_starts(c, syms, 3);
		}
		if ((c = coro_of(&v, id[1])) != NULL) {
			check_no_junk(c);
			junked = true;
		}
		json_free(&v);
		free(line);
	}
	if (!(good && junked && rejected))
		fail_msg("good %d, junked %d, frames.not_code %llu: %s", good,
			 junked, (unsigned long long)rejected,
			 p.ebuf ? p.ebuf : "");
	stop_corotop(&p);
	target_stop(&tg);
	assert_xdg_empty();
}

#ifdef ITEST_DEMO
static int demo_err = -1;

/* The demo alone, for two minutes; returns once it says it runs. */
static pid_t demo_start(void)
{
	return demo_spawn(ITEST_DEMO, "120", &demo_err);
}

static void demo_stop(pid_t pid)
{
	int status;

	kill(pid, SIGTERM);
	assert_int_equal(it_wait_pid(pid, 60000, &status), 0);
	close(demo_err);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the demo ended with status 0x%x", status);
}

/*
 * Snapshots of p until three coroutines are parked in stuck_wait_for_reply
 * (by `where`, or by parked stack); their ids, births and park times.
 */
static void find_stuck(struct proc *p, struct truth *t, bool by_where)
{
	uint64_t end = it_now() + DEADLINE_NS;
	size_t off = 0, n = 0, snaps = 0;
	char *line, seen[512] = "";

	while (n < NPARKED && (line = next_snapshot(p, &off, end)) != NULL) {
		const struct jv *co;
		struct jv v;
		uint64_t ts;

		json_must_parse(line, &v);
		snaps++;
		/* For the failure message: what the last snapshot showed of
		 * the stuck ones. */
		seen[0] = '\0';
		co = json_need(&v, "coroutines", J_ARR);
		for (size_t i = 0; i < co->n; i++) {
			const struct jv *c = &co->items[i];
			const struct jv *f = json_get(c, "parked_stack.frames");
			size_t len = strlen(seen);

			if (strncmp(json_need(c, "where", J_STR)->s,
				    "stuck_wait_for_reply", 20))
				continue;
			snprintf(seen + len, sizeof(seen) - len,
				 "%s [%s %s, %zu frames: %s] ",
				 json_need(c, "probe_id_hex", J_STR)->s,
				 json_need(c, "state", J_STR)->s,
				 json_need(c, "where", J_STR)->s,
				 f && f->t == J_ARR ? f->n : 0,
				 f && f->t == J_ARR && f->n
					 ? json_need(&f->items[0], "symbol",
						     J_STR)
						   ->s
					 : "-");
		}
		ts = json_u64(&v, "ts");
		co = json_need(&v, "coroutines", J_ARR);
		n = 0;
		for (size_t i = 0; i < co->n && n < NPARKED; i++) {
			const struct jv *c = &co->items[i];

			if (strcmp(json_need(c, "state", J_STR)->s,
				   "suspended") ||
			    !(by_where
				      ? !strncmp(
						json_need(c, "where", J_STR)->s,
						"stuck_wait_for_reply", 20)
				      : stack_has(c, "stuck_wait_for_reply")))
				continue;
			t[n] = (struct truth){
				.id = json_u64(c, "probe_id"),
				.birth = ts - json_u64(c, "age_ns"),
				.state_ts = ts - json_u64(c, "in_state_ns"),
			};
			print_message(
				"stuck %#llx: switches %llu, age %.3f "
				"s, in state %.3f s\n",
				(unsigned long long)t[n].id,
				(unsigned long long)json_u64(c, "switches"),
				(double)json_u64(c, "age_ns") / 1e9,
				(double)json_u64(c, "in_state_ns") / 1e9);
			n++;
		}
		json_free(&v);
		free(line);
	}
	if (n < NPARKED)
		fail_msg(
			"only %zu stuck coroutines found in %zu snapshots (the "
			"last showed, parked in stuck_wait_for_reply: %s); "
			"stderr: %s",
			n, snaps, seen[0] ? seen : "none",
			p->ebuf ? p->ebuf : "");
}
#endif

static void test_demo_attach_late(void **state)
{
#ifdef ITEST_DEMO
	char *first[] = {ITEST_COROTOP,	    "-b", "-d", "3", "-f", "json",
			 "--parked-stacks", "-p", NULL, NULL};
	char *second[] = {ITEST_COROTOP, "-b", "-d", "2", "-f",
			  "json",	 "-p", NULL, NULL};
	struct truth t[NPARKED] = {0};
	struct proc p;
	pid_t demo;

	(void)state;
	demo = demo_start();
	/* A first look finds the stuck ones (parked before it, or after it
	 * with --parked-stacks), then lets go. */
	first[8] = (char *)pid_arg(demo);
	proc_start(&p, first);
	find_stuck(&p, t, false);
	stop_corotop(&p);
	/* Parked past the threshold before the second attach: then its
	 * first sight of them must say so. */
	wait_past_threshold(t, NPARKED);
	second[7] = (char *)pid_arg(demo);
	proc_start(&p, second);
	read_until_seen(&p, t, NPARKED, NULL, 0, "stuck_wait_for_reply");
	stop_corotop(&p);
	demo_stop(demo);
	assert_xdg_empty();
#else
	(void)state;
	skip();
#endif
}

#ifdef ITEST_DEMO
/* The region the demo (pid) was given: CTP_SHM_PATH in its environment. */
static void region_of(pid_t pid, char *out, size_t n)
{
	char path[64], env[16384];
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	len = fread(env, 1, sizeof(env) - 1, f);
	fclose(f);
	env[len] = '\0';
	for (size_t i = 0; i < len; i += strlen(env + i) + 1)
		if (!strncmp(env + i, "CTP_SHM_PATH=", 13)) {
			snprintf(out, n, "%s", env + i + 13);
			return;
		}
	fail_msg("process %d has no CTP_SHM_PATH", (int)pid);
}
#endif

static void test_late_observer(void **state)
{
#ifdef ITEST_DEMO
	char *launch[] = {ITEST_COROTOP, "-b",	 "-d", "3",
			  "-f",		 "json", "--", ITEST_DEMO,
			  "--duration",	 "120",	 NULL};
	char shm[512];
	char *observe[] = {ITEST_COROTOP, "-b",	   "-d", "2", "-f",
			   "json",	  "--shm", shm,	 NULL};
	struct truth t[NPARKED] = {0};
	struct proc l, o;
	size_t off = 0;
	char *line;
	struct jv v;
	pid_t target;

	(void)state;
	proc_start(&l, launch);
	line = next_snapshot(&l, &off, it_now() + DEADLINE_NS);
	assert_non_null(line);
	json_must_parse(line, &v);
	target = (pid_t)json_u64(&v, "target.pid");
	json_free(&v);
	free(line);
	region_of(target, shm, sizeof(shm));
	find_stuck(&l, t, true);
	wait_past_threshold(t, NPARKED);
	proc_start(&o, observe);
	read_until_seen(&o, t, NPARKED, NULL, 0, NULL);
	stop_corotop(&o);
	stop_corotop(&l);
	assert_xdg_empty();
#else
	(void)state;
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attach_shows_parked),
		cmocka_unit_test(test_attach_junk_stack),
		cmocka_unit_test(test_demo_attach_late),
		cmocka_unit_test(test_late_observer),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, teardown);
}
