/*
 * Integration: corotop -p PID against processes it did not start.
 *
 * The targets (ppt_target.c through the probe's client API, ppt_gentarget.c
 * the way the shipped generator's code behaves) are started alone and
 * driven line by line; corotop runs as people run it, and what it prints is
 * parsed as strict JSON.  No run ends after a fixed number of snapshots:
 * the tests read snapshots as they come until they show what the test
 * saved (deadline), then end corotop with a signal.  Checked:
 *   - frames saved before the attach are not seen, every frame saved after
 *     is, exactly once, with exact values (static layout, two types,
 *     intervals as durations), also when corotop was stopped (SIGSTOP)
 *     while they were saved;
 *   - after corotop exits, _hmem and _stat are 0 in the target and no SysV
 *     segment corotop created is left once the client lets go;
 *   - a busy _stat is an error naming the pid (running or not);
 *     --force-attach takes over, and the corotop it displaced says it
 *     lost the buffer; an ABI mismatch names both versions;
 *   - --list-buffers; counters (-c); the target exiting ends corotop, seen
 *     through the pidfd (also an exit over before a stopped corotop runs
 *     again);
 *   - a SIGKILLed corotop: its segments are already marked for removal;
 *     a probe it traced through the rendezvous goes back to untraced;
 *   - resize of a dynamic block loses nothing (engine API; the stream is
 *     paced by the reader's acknowledgements, never by a clock);
 *   - late attach: the bundled demo, started without corotop, shows its
 *     coroutines through `corotop -b -f json -p PID`.
 */
#define _GNU_SOURCE
#include "engine/engine.h"
#include "engine/ppt/pptdesc.h"
#include "e2e.h"

#include "ppt-it.h"

/* Agent `agent` detached from t's buffer: both words back to 0, and once
 * the client lets go (at its next save) none of the agent's segments is
 * left. */
static void assert_let_go(struct target *t, pid_t agent)
{
	size_t unmarked;
	char r[160];
	int hmem, stat;

	target_state(t, &hmem, &stat);
	assert_int_equal(hmem, 0);
	assert_int_equal(stat, 0);
	target_cmd(t, "tick 1", r, sizeof(r));
	assert_int_equal(segments_of(agent, &unmarked), 0);
}

/* ---- the tests ---- */

/* Every frame saved after the attach, exactly once.  stopped: corotop is
 * held (SIGSTOP) from the publish until all of them were saved, so its
 * reader and its snapshots can only come after the target's saves. */
static void attach_exact(bool stopped)
{
	struct target t;
	struct proc p;
	struct seen s;
	char r[160];
	size_t ticks = 0, ios = 0;

	target_start(&t, PPT_TARGET);
	target_cmd(&t, "tick 5", r, sizeof(r)); /* before: never seen */
	{
		char *argv[] = {ITEST_COROTOP,
				"-b",
				"-f",
				"json",
				"-d",
				"2",
				"-p",
				(char *)pid_arg(t.pid),
				"--buffer",
				"demo",
				"--ppt-frames",
				"1000",
				NULL};

		proc_start(&p, argv);
	}
	wait_published(&t);
	if (stopped)
		kill(p.pid, SIGSTOP);
	target_cmd(&t, "tick 50", r, sizeof(r));
	/* A forked child forgets the attachment: its 20 saves go nowhere
	 * (it exits 0 when it found itself detached), the parent's go on. */
	target_cmd(&t, "fork 20", r, sizeof(r));
	assert_string_equal(r, "ok child=0");
	target_cmd(&t, "tick 50", r, sizeof(r));
	target_cmd(&t, "io 3", r, sizeof(r));
	if (stopped)
		kill(p.pid, SIGCONT);
	/* Until all 103 are shown, however long the machine takes. */
	frames_then_sigint(&p, "demo", 103, &s);
	assert_string_equal(json_need(s.last_buffer, "state", J_STR)->s,
			    "attached");
	assert_int_equal(json_u64(s.last_buffer, "lost"), 0);
	assert_int_equal(json_u64(s.last_buffer, "torn"), 0);
	assert_int_equal(
		json_need(s.last_buffer, "attach_latency_ns", J_NUM)->t, J_NUM);
	for (size_t i = 0; i < s.n; i++) {
		const struct jv *f = s.frames[i];
		const char *type = json_need(f, "type", J_STR)->s;

		if (!strcmp(type, "tick")) {
			uint64_t k = json_u64(f, "values.count");

			/* Frames 1..5 came before the attach. */
			assert_int_equal(k, 6 + ticks);
			assert_true(json_need(f, "values.load", J_NUM)->num ==
				    (double)k / 4.0);
			assert_int_equal(json_u64(f, "values.work"), k * 1000);
			ticks++;
		} else {
			assert_string_equal(type, "io");
			assert_true(json_need(f, "values.fd", J_NUM)->num ==
				    -(double)(++ios));
		}
	}
	assert_int_equal(ticks, 100);
	assert_int_equal(ios, 3);
	seen_free(&s);
	assert_let_go(&t, p.pid);
	proc_free(&p);
	target_stop(&t);
	assert_xdg_empty();
}

static void test_attach_exact(void **state)
{
	(void)state;
	attach_exact(false);
}

static void test_attach_exact_stopped(void **state)
{
	(void)state;
	attach_exact(true);
}

static void test_busy_and_force(void **state)
{
	struct target t;
	struct proc p;
	char r[160], cmd[64];
	int hmem, stat;

	(void)state;
	target_start(&t, PPT_TARGET);
	/* An agent that died: its pid is in _stat, nothing runs there. */
	target_cmd(&t, "busy 4194000", r, sizeof(r));
	{
		char *argv[] = {ITEST_COROTOP, "-b",   "-n",
				"1",	       "-p",   (char *)pid_arg(t.pid),
				"--buffer",    "demo", NULL};

		assert_int_equal(run(&p, argv, 60000), 1);
		assert_non_null(strstr(p.ebuf, "4194000"));
		assert_non_null(strstr(p.ebuf, "not running"));
		assert_non_null(strstr(p.ebuf, "--force-attach"));
		proc_free(&p);
	}
	/* A live one: us. */
	snprintf(cmd, sizeof(cmd), "busy %d", (int)getpid());
	target_cmd(&t, cmd, r, sizeof(r));
	{
		char *argv[] = {ITEST_COROTOP, "-b",   "-n",
				"1",	       "-p",   (char *)pid_arg(t.pid),
				"--buffer",    "demo", NULL};

		assert_int_equal(run(&p, argv, 60000), 1);
		snprintf(cmd, sizeof(cmd), "%d", (int)getpid());
		assert_non_null(strstr(p.ebuf, cmd));
		assert_non_null(strstr(p.ebuf, "still running"));
		proc_free(&p);
	}
	/* Nothing was written: the busy pid is still there. */
	target_state(&t, &hmem, &stat);
	assert_int_equal(stat, (int)getpid());
	assert_int_equal(hmem, 0);
	{
		char *argv[] = {ITEST_COROTOP,
				"-b",
				"-f",
				"json",
				"-n",
				"2",
				"-d",
				"2",
				"-p",
				(char *)pid_arg(t.pid),
				"--buffer",
				"demo",
				"--force-attach",
				NULL};

		assert_int_equal(run(&p, argv, 60000), 0);
		assert_non_null(strstr(p.obuf, "\"name\":\"demo\""));
		proc_free(&p);
	}
	target_state(&t, &hmem, &stat);
	assert_int_equal(stat, 0);
	assert_int_equal(hmem, 0);
	target_stop(&t);
	assert_xdg_empty();
}

/* Wait (deadline) until corotop's output holds `needle`. */
static bool out_has(struct proc *p, const char *needle, unsigned timeout_ms)
{
	uint64_t end = it_now() + (uint64_t)timeout_ms * 1000000u;

	while (!(p->obuf && strstr(p->obuf, needle)) && it_now() < end &&
	       p->out >= 0)
		proc_pump(p, 50);
	return p->obuf && strstr(p->obuf, needle);
}

/* Another corotop's --force-attach over a live one: the displaced one
 * notices (its _stat is not its pid any more) and says it lost the
 * buffer, in JSON and for people, instead of "attached" at 0/s. */
static void test_force_displaces(void **state)
{
	struct target t;
	struct proc a, b;
	struct seen s;
	char r[160];
	int status;

	(void)state;
	target_start(&t, PPT_TARGET);
	{
		/* No -n: it runs until the SIGTERM below, however long the
		 * displacement takes to come. */
		char *argv[] = {
			ITEST_COROTOP, "-b",   "-f", "json",
			"-d",	       "1",    "-p", (char *)pid_arg(t.pid),
			"--buffer",    "demo", NULL};

		proc_start(&a, argv);
	}
	wait_published(&t);
	target_cmd(&t, "tick 3", r, sizeof(r));
	if (!out_has(&a, "\"state\":\"attached\"", 60000))
		fail_msg("the first corotop never attached: %s", a.ebuf);
	{
		char *argv[] = {ITEST_COROTOP,
				"-b",
				"-f",
				"json",
				"-n",
				"2",
				"-d",
				"1",
				"-p",
				(char *)pid_arg(t.pid),
				"--buffer",
				"demo",
				"--force-attach",
				NULL};

		proc_start(&b, argv);
	}
	if (!out_has(&a, "\"state\":\"lost\"", 60000))
		fail_msg("the displaced corotop never said it lost the buffer");
	target_cmd(&t, "tick 3", r, sizeof(r));
	status = proc_finish(&b, 60000);
	assert_int_equal(exit_code(status), 0);
	kill(a.pid, SIGTERM);
	status = proc_finish(&a, 30000);
	assert_int_equal(exit_code(status), 128 + SIGTERM);
	/* As many snapshots as a lived for: the last one says "lost". */
	collect(a.obuf, "demo", &s);
	assert_string_equal(json_need(s.last_buffer, "state", J_STR)->s,
			    "lost");
	assert_non_null(strstr(json_need(s.last_buffer, "warning", J_STR)->s,
			       "lost the buffer"));
	seen_free(&s);
	proc_free(&a);
	proc_free(&b);
	target_stop(&t);
	assert_xdg_empty();
}

static void test_abi_mismatch(void **state)
{
	struct target t;
	struct proc p;
	char *argv[] = {ITEST_COROTOP, "-b",	   "-n",  "1", "-p",
			NULL,	       "--buffer", "bad", NULL};

	(void)state;
	target_start(&t, PPT_TARGET);
	argv[5] = (char *)pid_arg(t.pid);
	assert_int_equal(run(&p, argv, 60000), 1);
	assert_non_null(strstr(p.ebuf, "2.0.0"));
	assert_non_null(strstr(p.ebuf, "1.0.0"));
	proc_free(&p);
	target_stop(&t);
	assert_xdg_empty();
}

static void test_list_buffers(void **state)
{
	struct target t;
	struct proc p;
	struct jv v;
	const struct jv *b;
	char *argv[] = {ITEST_COROTOP, "-p",   NULL, "--list-buffers",
			"-f",	       "json", NULL};
	bool demo = false, grow = false, bad = false, probe = false;

	(void)state;
	target_start(&t, PPT_TARGET);
	argv[2] = (char *)pid_arg(t.pid);
	assert_int_equal(run(&p, argv, 60000), 0);
	json_must_parse(p.obuf, &v);
	b = json_need(&v, "buffers", J_ARR);
	for (size_t i = 0; i < b->n; i++) {
		const char *name = json_need(&b->items[i], "name", J_STR)->s;

		assert_int_equal(json_u64(&b->items[i], "agent_pid"), 0);
		if (!strcmp(name, "demo")) {
			demo = true;
			assert_int_equal(json_u64(&b->items[i], "frame_size"),
					 64);
			assert_non_null(strstr(
				json_need(&b->items[i], "types", J_STR)->s,
				"tick(work load count)"));
		}
		grow |= !strcmp(name, "grow");
		probe |= !strcmp(name, "corotop");
		if (!strcmp(name, "bad")) {
			bad = true;
			assert_string_equal(
				json_need(&b->items[i], "abi", J_STR)->s,
				"2.0.0");
		}
	}
	assert_true(demo && grow && bad && probe);
	json_free(&v);
	proc_free(&p);
	/* Text, for people. */
	argv[4] = NULL;
	assert_int_equal(run(&p, argv, 60000), 0);
	assert_non_null(strstr(p.obuf, "demo"));
	assert_non_null(strstr(p.obuf, "free"));
	proc_free(&p);
	target_stop(&t);
}

static void test_counters(void **state)
{
	struct target t;
	struct proc p;
	struct seen s;
	char r[160];
	bool task_clock = false;
	const struct jv *c, *w;
	char *argv[] = {ITEST_COROTOP, "-b",   "-f", "json",
			"-d",	       "2",    "-p", NULL,
			"--buffer",    "demo", "-c", "task-clock,cycles",
			NULL};

	(void)state;
	target_start(&t, PPT_TARGET);
	argv[7] = (char *)pid_arg(t.pid);
	proc_start(&p, argv);
	wait_published(&t);
	target_cmd(&t, "io 2", r, sizeof(r));
	frames_then_sigint(&p, "demo", 2, &s);
	c = json_need(s.last_doc, "ppt.counters", J_ARR);
	w = json_need(s.last_doc, "ppt.warning", J_STR);
	for (size_t i = 0; i < c->n; i++)
		task_clock |= !strcmp(c->items[i].s, "task-clock");
	/* cycles: counted, or refused with its name and a reason. */
	if (!(c->n == 2 || strstr(w->s, "counter cycles refused")))
		fail_msg("cycles neither counted nor refused: %s", w->s);
	if (!task_clock) {
		/* No perf events at all here (perf_event_paranoid 3, or no
		 * PMU support): the refusal was checked above. */
		seen_free(&s);
		proc_free(&p);
		target_stop(&t);
		skip();
	}
	assert_true(json_need(s.last_buffer, "counters_setup", J_BOOL)->b);
	assert_int_equal(s.n, 2);
	/* cost[0] is task-clock around a read() of the counters: the
	 * thread's CPU time moved forward between its start and end.  The
	 * first frame's were read before its own save attached the client
	 * (zeros); the second's count. */
	assert_int_equal(json_u64(s.frames[0], "values.cost[0]"), 0);
	assert_true(json_need(s.frames[1], "values.cost[0]", J_NUM)->num > 0);
	seen_free(&s);
	proc_free(&p);
	target_stop(&t);
	assert_xdg_empty();
}

/* The target exiting ends corotop -p.  No -n and a snapshot every 60 s:
 * corotop ends only when it sees the exit (the engine's pidfd wakes its
 * ppt thread, which raises SIGCHLD) and prints a snapshot then, while its
 * first periodic one is a minute away; so an exit within proc_finish's
 * 30 s, with a snapshot saying the target is gone, came through the
 * pidfd, not a poll.  How soon is not asserted.  stopped: corotop is held
 * (SIGSTOP) until the target was reaped, so it meets an exit that is
 * already over when it runs again. */
static void target_exits(bool stopped)
{
	struct target t;
	struct proc p;
	struct seen s;
	int status;
	char *argv[] = {ITEST_COROTOP, "-b", "-f",	 "json", "-d", "600",
			"-p",	       NULL, "--buffer", "demo", NULL};

	target_start(&t, PPT_TARGET);
	argv[7] = (char *)pid_arg(t.pid);
	proc_start(&p, argv);
	wait_published(&t);
	if (stopped)
		kill(p.pid, SIGSTOP);
	target_stop(&t);
	if (stopped)
		kill(p.pid, SIGCONT);
	status = proc_finish(&p, 30000);
	assert_int_equal(exit_code(status), 0);
	collect(p.obuf, "demo", &s);
	assert_true(json_need(s.last_doc, "ppt.target_gone", J_BOOL)->b);
	assert_false(json_need(s.last_doc, "target.running", J_BOOL)->b);
	seen_free(&s);
	proc_free(&p);
	assert_xdg_empty();
}

static void test_target_exits(void **state)
{
	(void)state;
	target_exits(false);
}

static void test_target_exits_stopped(void **state)
{
	(void)state;
	target_exits(true);
}

static void test_sigkill(void **state)
{
	struct target t;
	struct proc p;
	char r[160];
	size_t unmarked;
	char *argv[] = {ITEST_COROTOP, "-b",	   "-d",   "5", "-p",
			NULL,	       "--buffer", "demo", NULL};

	(void)state;
	target_start(&t, PPT_TARGET);
	argv[5] = (char *)pid_arg(t.pid);
	proc_start(&p, argv);
	wait_published(&t);
	target_cmd(&t, "tick 3", r, sizeof(r));
	/* Both of corotop's segments exist, already marked for removal. */
	assert_true(segments_of(p.pid, &unmarked) >= 1);
	assert_int_equal(unmarked, 0);
	kill(p.pid, SIGKILL);
	proc_finish(&p, 30000);
	/* The next corotop says the holder is gone, and can take over. */
	{
		struct proc q;
		char *a2[] = {ITEST_COROTOP, "-b",   "-n",
			      "1",	     "-p",   (char *)pid_arg(t.pid),
			      "--buffer",    "demo", NULL};

		assert_int_equal(run(&q, a2, 60000), 1);
		assert_non_null(strstr(q.ebuf, "not running any more"));
		proc_free(&q);
	}
	target_stop(&t);
	/* The target let go by exiting: nothing of corotop's is left. */
	assert_int_equal(segments_of(p.pid, &unmarked), 0);
	proc_free(&p);
	/* The SIGKILLed corotop could not remove its region directory. */
	teardown_xdg(NULL);
	setup_xdg(NULL);
}

/* The late target's probe: live, _hmem, _stat of its "corotop" buffer,
 * and its mappings of corotop's region files. */
static void late_state(struct target *t, int *live, int *hmem, int *stat,
		       int *maps)
{
	char r[160];

	target_cmd(t, "live", r, sizeof(r));
	assert_int_equal(sscanf(r, "ok live=%d hmem=%d stat=%d maps=%d", live,
				hmem, stat, maps),
			 4);
}

/* Wait (deadline) for the late target's probe to be live (want 1, with
 * the region mapped) or untraced with nothing mapped and its words back
 * to 0 (want 0). */
static bool late_wait(struct target *t, int want, unsigned timeout_ms)
{
	uint64_t end = it_now() + (uint64_t)timeout_ms * 1000000u;
	int live, hmem, stat, maps;

	while (it_now() < end) {
		late_state(t, &live, &hmem, &stat, &maps);
		if (want && live && maps > 0)
			return true;
		if (!want && !live && !maps && !hmem && !stat)
			return true;
		it_sleep_ms(10);
	}
	print_error("probe: live=%d hmem=%d stat=%d maps=%d\n", live, hmem,
		    stat, maps);
	return false;
}

/* corotop -p killed with SIGKILL while the probe is traced through the
 * rendezvous: the probe notices the agent is gone (rendezvous.c's watch), goes
 * back to untraced, clears _hmem and _stat as a detach would, and retires
 * the region's mappings to zero pages: no ctp.shm nor calltrace.shm stays
 * mapped, and the program keeps running. */
static void test_sigkill_untraces(void **state)
{
	struct target t;
	struct proc p;
	int status;
	char *argv[] = {ITEST_COROTOP, "-b",	   "-d", "1", "-p",
			NULL,	       "--sample", "97", NULL};

	(void)state;
	target_start(&t, LATE_TARGET);
	argv[5] = (char *)pid_arg(t.pid);
	proc_start(&p, argv);
	if (!late_wait(&t, 1, 60000))
		fail_msg("the probe never got traced: %s",
			 p.ebuf ? p.ebuf : "");
	kill(p.pid, SIGKILL);
	proc_finish(&p, 30000);
	if (!late_wait(&t, 0, 60000))
		fail_msg("the probe stayed traced after its agent was killed");
	assert_int_equal(waitpid(t.pid, &status, WNOHANG), 0);
	target_stop(&t);
	proc_free(&p);
	/* The SIGKILLed corotop could not remove its region directory. */
	teardown_xdg(NULL);
	setup_xdg(NULL);
}

/* SIGINT, SIGTERM and SIGHUP end corotop -p the way they end a launched
 * run: it detaches first (_hmem and _stat back to 0), and its segments go
 * once the client lets go. */
static void test_signals_detach(void **state)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct target t;
	char r[160];

	(void)state;
	target_start(&t, PPT_TARGET);
	for (size_t i = 0; i < 3; i++) {
		struct proc p;
		int status;
		char *argv[] = {ITEST_COROTOP, "-b",   "-d",
				"5",	       "-p",   (char *)pid_arg(t.pid),
				"--buffer",    "demo", NULL};

		proc_start(&p, argv);
		wait_published(&t);
		target_cmd(&t, "tick 3", r, sizeof(r));
		kill(p.pid, sigs[i]);
		status = proc_finish(&p, 30000);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 128 + sigs[i]);
		assert_let_go(&t, p.pid);
		proc_free(&p);
	}
	target_stop(&t);
	assert_xdg_empty();
}

/* Resize through the engine API: a dynamic block grows while frames
 * stream in; every frame that fit in either block arrives.  The stream is
 * paced by the reader, not by a clock: the target saves frame k only once
 * the test acknowledged k - STREAM_WINDOW delivered frames, and the window
 * is smaller than the 64-frame block, so no stall of the engine's reader,
 * however long, can lap it.  The test waits for deliveries (deadline),
 * not for fixed times. */
#define STREAM_WINDOW 40

/* Wait (deadline) until at least `at_least` frames were delivered,
 * acknowledging each new count to t's stream as it comes. */
static void wait_delivered(struct engine *e, struct engine_ppt_buffer *b,
			   uint64_t at_least, struct target *t)
{
	uint64_t end = it_now() + 30000000000ull, acked = 0;
	char cmd[64], r[160];

	do {
		assert_int_equal(engine_ppt_buffers(e, b, 1), 1);
		if (b->delivered > acked) {
			acked = b->delivered;
			snprintf(cmd, sizeof(cmd), "ack %llu",
				 (unsigned long long)acked);
			target_cmd(t, cmd, r, sizeof(r));
		}
		if (b->delivered >= at_least)
			return;
		it_sleep_ms(10);
	} while (it_now() < end);
	fail_msg("%llu frames delivered in 30 s, want %llu",
		 (unsigned long long)b->delivered,
		 (unsigned long long)at_least);
}

static void test_resize_lossless(void **state)
{
	struct engine_config cfg;
	struct engine_ppt_buffer b;
	struct engine *e;
	struct target t;
	char r[160], err[512], cmd[64];
	unsigned long saved = 0;
	uint64_t end;

	(void)state;
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	target_start(&t, PPT_TARGET);
	engine_config_defaults(&cfg);
	cfg.attach_pid = t.pid;
	cfg.ppt_buffer = "grow";
	cfg.ppt_block_frames = 64;
	e = engine_create(&cfg, err, sizeof(err));
	if (!e)
		fail_msg("%s", err);
	if (!engine_start(e, err, sizeof(err)))
		fail_msg("%s", err);
	snprintf(cmd, sizeof(cmd), "stream 2000 %d", STREAM_WINDOW);
	target_cmd(&t, cmd, r, sizeof(r));
	wait_delivered(e, &b, 20, &t);
	assert_true(engine_ppt_resize(e, 0, 4096, err, sizeof(err)));
	wait_delivered(e, &b, 120, &t);
	target_cmd(&t, "stop", r, sizeof(r));
	assert_int_equal(sscanf(r, "ok %lu", &saved), 1);
	assert_true(saved > 100);
	end = it_now() + 30000000000ull;
	do {
		it_sleep_ms(10);
		assert_int_equal(engine_ppt_buffers(e, &b, 1), 1);
	} while (b.delivered + b.lost + b.torn < saved && it_now() < end);
	assert_int_equal(b.resizes, 1);
	assert_int_equal(b.nframes, 4096);
	assert_int_equal(b.lost, 0);
	assert_int_equal(b.torn, 0);
	assert_int_equal(b.delivered, saved);
	{
		const struct ppt_desc *d = engine_ppt_desc(e, 0);
		unsigned char *bytes = malloc(saved * d->frame_size);
		struct engine_ppt_frame *meta = malloc(saved * sizeof(*meta));
		uint64_t next, skipped;
		size_t n = engine_ppt_frames(e, 0, 0, bytes, meta, saved, &next,
					     &skipped);

		uint32_t off = UINT32_MAX;

		assert_int_equal(n, saved);
		for (uint32_t m = 0; m < d->types[0].nmembers; m++)
			if (!strcmp(d->types[0].members[m].name, "n"))
				off = d->types[0].members[m].offset;
		assert_int_not_equal(off, UINT32_MAX);
		for (size_t i = 0; i < n; i++) {
			int32_t v;

			memcpy(&v, bytes + i * d->frame_size + off, sizeof(v));
			assert_int_equal(v, (int32_t)(i + 1));
		}
		free(bytes);
		free(meta);
	}
	engine_destroy(e);
	target_stop(&t);
	assert_xdg_empty();
}

static void test_late_attach_demo(void **state)
{
#ifdef ITEST_DEMO
	struct target t;
	struct proc p;
	size_t off = 0;
	bool seen = false;
	uint64_t end;
	char *argv[] = {ITEST_COROTOP, "-b", "-d", "5", "-f",
			"json",	       "-p", NULL, NULL};
	int pipe_err, status;
	char line[512], *snap;

	(void)state;
	/* The demo, alone: no CTP_* in its environment; until a signal
	 * ends it (--duration 0), however slow the loop below is. */
	t.pid = demo_spawn(ITEST_DEMO, "0", &pipe_err);
	argv[7] = (char *)pid_arg(t.pid);
	proc_start(&p, argv);
	/* Snapshots as they come until one shows the demo traced with its
	 * coroutines (deadline): how soon depends on the machine. */
	end = it_now() + 60000000000ull;
	while (!seen && it_now() < end &&
	       (snap = proc_line_by(&p, &off, end)) != NULL) {
		struct jv v;

		json_must_parse(snap, &v);
		seen = json_need(&v, "ppt.traced", J_BOOL)->b &&
		       json_u64(&v, "ppt.probe_errno") == 0 &&
		       json_need(&v, "coroutines", J_ARR)->n > 100;
		json_free(&v);
		free(snap);
	}
	kill(p.pid, SIGINT);
	if (exit_code(proc_finish(&p, 30000)) != 128 + SIGINT)
		fail_msg("corotop failed: %s", p.ebuf);
	if (!seen)
		fail_msg("no snapshot showed the demo traced with > 100 "
			 "coroutines in 60 s: %s",
			 p.ebuf);
	proc_free(&p);
	/* corotop detached: the demo, untraced again, keeps running... */
	it_sleep_ms(1000);
	assert_int_equal(waitpid(t.pid, &status, WNOHANG), 0);
	/* ...and ends as it should, not of a fault in a retired region (a
	 * sanitizer build checks for leaks on the way out: 60 s).  Its
	 * stderr is read to the end meanwhile (a summary, a sanitizer's
	 * report), so a full pipe never holds it. */
	kill(t.pid, SIGTERM);
	/* Until it closes its stderr (it exits), or 60 s. */
	end = it_now() + 60000000000ull;
	for (uint64_t now = it_now(); now < end; now = it_now())
		if (it_read_line(pipe_err, line, sizeof(line),
				 (unsigned)((end - now) / 1000000u) + 1) < 0)
			break;
	assert_int_equal(it_wait_pid(t.pid, 60000, &status), 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("the demo ended with status 0x%x after the detach",
			 status);
	close(pipe_err);
	assert_xdg_empty();
#else
	(void)state;
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attach_exact),
		cmocka_unit_test(test_attach_exact_stopped),
		cmocka_unit_test(test_busy_and_force),
		cmocka_unit_test(test_force_displaces),
		cmocka_unit_test(test_abi_mismatch),
		cmocka_unit_test(test_list_buffers),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_target_exits),
		cmocka_unit_test(test_target_exits_stopped),
		cmocka_unit_test(test_sigkill),
		cmocka_unit_test(test_sigkill_untraces),
		cmocka_unit_test(test_signals_detach),
		cmocka_unit_test(test_resize_lossless),
		cmocka_unit_test(test_late_attach_demo),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup_xdg, teardown_xdg);
}
