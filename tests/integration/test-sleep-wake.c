/*
 * test-sleep-wake: the sleep contract between a real traced process and the
 * engine, and the target's independence from the engine.
 *
 * Concept.  An idle target must let the engine sleep (it should cost no CPU)
 * and a write after a long idle stretch must still be seen promptly, which
 * only works if the probe's wake reaches the sleeping engine.  The writer
 * (writer.c, real probe) is driven one command at a time over a pipe, so the
 * test knows when it is idle and when it writes; the event's own timestamp
 * (taken by the probe) against the moment event_hook runs is the wake
 * latency.  The engine's sleep bound is set far above the latency bound, so
 * a missed wake cannot hide behind the bound.
 *
 *   (a) idle target: tracer_sleeping (read from our own mapping of the
 *       region, and the snapshot's .sleeping) becomes 1;
 *   (b) a later write, made once the engine is asleep (past its last scan:
 *       the snapshot says so), is harvested by a wake, never by the sleep
 *       bound: over the futex wake and over the socket-only wake (no_futex,
 *       what upstream-style engines get).  The bound is 30 s and each event
 *       must come within 20 s, so a missed wake can not hide behind it, and
 *       no sleep may time out.
 *   (c) the engine is SIGKILLed, once as a forked process running the engine
 *       library (socket wakes: the probe's send() meets a dead peer) and once
 *       as the real corotop binary (futex wakes): the target keeps writing,
 *       a wake attempt (we set tracer_sleeping = 1 through a mapping, the
 *       probe must CAS it back to 0) does not block it, and it exits 0 when
 *       told to, not by SIGPIPE.  This process is a child subreaper, so the
 *       orphaned target is ours to wait for.
 *
 * Nothing here bounds how fast: every wait is for a condition, with a
 * deadline far beyond any scheduling delay (WAIT_MS).  The latencies are
 * printed; bench/wake_latency measures them (wake, and idle -> asleep).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <sys/mman.h>
#include <sys/prctl.h>

#include "engine/ctp/harvest.h"
#include "engine/engine.h"
#include "../common/itest.h"

#ifndef ITEST_WRITER
#error "ITEST_WRITER must name the writer program"
#endif

#define WAKE_ROUNDS 7
#define WAKE_SLEEP_BOUND_MS 30000u /* engine's own sleep bound (timeout) */
#define WAKE_WAIT_MS 20000u	   /* an event after a wake: well below it */
#define WAIT_MS 30000u		   /* deadline of every other wait */

/* Processes and files to clean up if an assertion fails half way. */
static pid_t kill_pid[2];
static char leftover_shm[512];

/* The in-process engine of a wake test, for the same reason. */
static struct engine *wake_engine;
static struct snapshot *wake_snap;

static int teardown_kill(void **state)
{
	(void)state;
	if (wake_engine) {
		engine_terminate_target(wake_engine, 1000);
		engine_destroy(wake_engine);
		wake_engine = NULL;
	}
	if (wake_snap)
		snapshot_finish(wake_snap);
	wake_snap = NULL;
	it_teardown_run(state);
	for (int i = 0; i < 2; i++) {
		if (kill_pid[i] > 0) {
			kill(kill_pid[i], SIGKILL);
			waitpid(kill_pid[i], NULL, 0);
		}
		kill_pid[i] = 0;
	}
	if (leftover_shm[0])
		it_remove_region_dir(leftover_shm);
	leftover_shm[0] = '\0';
	return 0;
}

/* A pipe whose `child` end survives exec; ours is close-on-exec. */
static void pipe_for_child(int p[2], int child)
{
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(fcntl(p[child], F_SETFD, 0), 0);
}

static void send_cmd(int ctl, int ack, char cmd)
{
	struct pollfd p = {.fd = ack, .events = POLLIN};
	char k = 0;

	assert_int_equal(write(ctl, &cmd, 1), 1);
	assert_int_equal(poll(&p, 1, (int)WAIT_MS), 1);
	assert_int_equal(read(ack, &k, 1), 1);
	assert_int_equal(k, 'k');
}

static bool wait_sleeping(struct ctp_header *hdr, unsigned timeout_ms)
{
	uint64_t end = it_now() + (uint64_t)timeout_ms * 1000000u;

	while (it_now() < end) {
		if (atomic_load_explicit(&hdr->tracer_sleeping,
					 memory_order_relaxed) == 1)
			return true;
		it_sleep_us(200);
	}
	return false;
}

/* Asleep past its last scan: the flag is set and the snapshot says so
 * (engine_idle sets the latter after the scan that found nothing), so a
 * write now can only be harvested by a wake (or the bound). */
static bool wait_asleep(struct engine *e, struct ctp_header *hdr,
			struct snapshot *snap, unsigned timeout_ms)
{
	uint64_t end = it_now() + (uint64_t)timeout_ms * 1000000u;

	while (it_now() < end) {
		if (atomic_load_explicit(&hdr->tracer_sleeping,
					 memory_order_relaxed) == 1) {
			engine_snapshot(e, snap);
			if (snap->sleeping &&
			    atomic_load_explicit(&hdr->tracer_sleeping,
						 memory_order_relaxed) == 1)
				return true;
		}
		it_sleep_us(200);
	}
	return false;
}

static bool wait_count(struct it_events *col, size_t n, unsigned timeout_ms)
{
	uint64_t end = it_now() + (uint64_t)timeout_ms * 1000000u;

	while (it_events_count(col) < n) {
		if (it_now() > end)
			return false;
		it_sleep_us(200);
	}
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void sleep_then_wake(bool no_futex)
{
	struct engine_config cfg;
	struct engine_stats st0, st1;
	/* static: a failed test's teardown still reaches them */
	static struct it_events col;
	static struct snapshot snap;
	struct ctp_header *hdr;
	struct engine *e;
	uint64_t lat[WAKE_ROUNDS], t_idle, seen0;
	char err[512], cfd[16], afd[16];
	int ctl[2], ack[2], fd, rounds = 0;
	bool snap_sleeping = false;
	char *argv[] = {ITEST_WRITER, "ctl", cfd, afd, NULL};

	it_events_init(&col);
	snapshot_init(&snap);
	pipe_for_child(ctl, 0);
	pipe_for_child(ack, 1);
	snprintf(cfd, sizeof(cfd), "%d", ctl[0]);
	snprintf(afd, sizeof(afd), "%d", ack[1]);
	engine_config_defaults(&cfg);
	cfg.argv = argv;
	cfg.stations = 16;
	cfg.sleep_timeout_ms = WAKE_SLEEP_BOUND_MS;
	cfg.sleep_max_ms = WAKE_SLEEP_BOUND_MS;
	cfg.no_futex = no_futex;
	cfg.event_hook = it_events_hook;
	cfg.hook_ctx = &col;
	wake_snap = &snap;
	e = engine_create(&cfg, err, sizeof(err));
	if (!e)
		fail_msg("engine_create: %s", err);
	wake_engine = e;
	if (!engine_start(e, err, sizeof(err)))
		fail_msg("engine_start: %s", err);
	close(ctl[0]);
	close(ack[1]);
	fd = open(engine_shm_path(e), O_RDONLY);
	assert_true(fd >= 0);
	hdr = mmap(NULL, CTP_HEADER_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(hdr != MAP_FAILED);

	send_cmd(ctl[1], ack[0], 'o');
	send_cmd(ctl[1], ack[0], 'w');
	assert_true(wait_count(&col, 1, WAIT_MS));
	it_events_get(&col, 0, &seen0);

	/* (a) Idle: the engine goes to sleep. */
	assert_true(wait_sleeping(hdr, WAIT_MS));
	t_idle = it_now() - seen0;
	snap_sleeping = wait_asleep(e, hdr, &snap, WAIT_MS);
	print_message("%s: asleep %.1f ms after the last event\n",
		      no_futex ? "socket" : "futex", (double)t_idle / 1e6);
	assert_true(snap_sleeping);

	/* (b) A write while it sleeps is harvested through a wake. */
	engine_stats(e, &st0);
	for (rounds = 0; rounds < WAKE_ROUNDS; rounds++) {
		size_t n = it_events_count(&col);
		struct harvest_event ev;
		uint64_t seen;

		assert_true(wait_asleep(e, hdr, &snap, WAIT_MS));
		send_cmd(ctl[1], ack[0], 'w');
		if (!wait_count(&col, n + 1, WAKE_WAIT_MS))
			fail_msg("%s: round %d: the write was not harvested "
				 "within %u ms (engine sleep bound %u ms): a "
				 "missed wake",
				 no_futex ? "socket" : "futex", rounds,
				 WAKE_WAIT_MS, WAKE_SLEEP_BOUND_MS);
		ev = it_events_get(&col, n, &seen);
		assert_int_equal(IT_ADDR_EVENT(ev.addr), rounds + 1);
		lat[rounds] = seen > ev.ts ? seen - ev.ts : 0;
		print_message(
			"%s: wake round %d: write -> event_hook %.3f ms\n",
			no_futex ? "socket" : "futex", rounds,
			(double)lat[rounds] / 1e6);
	}
	/* The socket path harvests on the waker thread before it wakes the
	 * harvest thread, so the last round's event can reach us before its
	 * wake is counted: wait for the count (deadline), then print. */
	for (uint64_t end = it_now() + WAIT_MS * 1000000ull;;) {
		engine_stats(e, &st1);
		if (st1.futex_wakes - st0.futex_wakes >= WAKE_ROUNDS ||
		    it_now() > end)
			break;
		it_sleep_ms(1);
	}
	print_message("%s: sleeps %llu, wakes %llu, socket bytes %llu, "
		      "timeouts %llu\n",
		      no_futex ? "socket" : "futex",
		      (unsigned long long)(st1.sleeps - st0.sleeps),
		      (unsigned long long)(st1.futex_wakes - st0.futex_wakes),
		      (unsigned long long)(st1.uds_bytes - st0.uds_bytes),
		      (unsigned long long)(st1.timeouts - st0.timeouts));

	send_cmd(ctl[1], ack[0], 'c');
	assert_int_equal(write(ctl[1], "q", 1), 1);
	for (uint64_t end = it_now() + WAIT_MS * 1000000ull;
	     !engine_reap(e) && it_now() < end;)
		it_sleep_ms(1);
	assert_true(engine_reap(e));
	engine_snapshot(e, &snap);
	assert_int_equal(snap.target.exit_code, 0);
	assert_int_equal(snap.t.lost, 0);

	{
		uint64_t sorted[WAKE_ROUNDS], worst = 0;

		memcpy(sorted, lat, sizeof(lat[0]) * (size_t)rounds);
		qsort(sorted, (size_t)rounds, sizeof(sorted[0]), cmp_u64);
		for (int i = 0; i < rounds; i++)
			worst = lat[i] > worst ? lat[i] : worst;
		/* Printed, not asserted: how fast is bench/wake_latency's. */
		print_message("%s: wake latency median %.3f ms, worst %.3f ms "
			      "(engine sleep bound %u ms)\n",
			      no_futex ? "socket" : "futex",
			      (double)sorted[rounds / 2] / 1e6,
			      (double)worst / 1e6, WAKE_SLEEP_BOUND_MS);
		assert_int_equal(rounds, WAKE_ROUNDS);
	}
	/* Each write found the flag set (we waited for it), so the probe
	 * took it and woke the engine: one socket byte per round. */
	if (no_futex)
		assert_true(st1.uds_bytes - st0.uds_bytes >= WAKE_ROUNDS);
	/* No round waited out the sleep bound.  Every round wrote after the
	 * engine's last scan before its wait (wait_asleep), so every round
	 * ended a sleep by a wake: the wait either blocked and was woken or
	 * found the flag already taken back. */
	assert_int_equal(st1.timeouts - st0.timeouts, 0);
	assert_true(st1.futex_wakes - st0.futex_wakes >= WAKE_ROUNDS);

	munmap(hdr, CTP_HEADER_SIZE);
	close(ctl[1]);
	close(ack[0]);
	engine_destroy(e);
	wake_engine = NULL;
	snapshot_finish(&snap);
	wake_snap = NULL;
	it_events_free(&col);
}

static void test_sleep_and_futex_wake(void **state)
{
	(void)state;
	sleep_then_wake(false);
}

static void test_sleep_and_socket_wake(void **state)
{
	(void)state;
	sleep_then_wake(true);
}

/* ---- (c) the engine dies, the target lives on ---- */

/* Read lines until one starting with `prefix`; returns false on timeout. */
static bool read_until(int fd, const char *prefix, char *line, size_t len,
		       unsigned timeout_ms)
{
	uint64_t end = it_now() + (uint64_t)timeout_ms * 1000000u;

	while (it_now() < end) {
		uint64_t left = (end - it_now()) / 1000000u + 1;

		if (it_read_line(fd, line, len, (unsigned)left) < 0)
			return false;
		if (!strncmp(line, prefix, strlen(prefix)))
			return true;
	}
	return false;
}

/* `n` more tick lines within the bound: the target is still writing. */
static bool more_ticks(int fd, int n, unsigned timeout_ms)
{
	char line[256];

	for (int i = 0; i < n; i++)
		if (!read_until(fd, "tick ", line, sizeof(line), timeout_ms))
			return false;
	return true;
}

/*
 * Common part once the engine process `engine_pid` is running the spin
 * writer whose output arrives on `out` and which obeys `ctl`.
 */
static void kill_engine_target_survives(pid_t engine_pid, int out, int ctl)
{
	char line[1024], shm[512];
	struct ctp_header *hdr;
	unsigned long wakes;
	int target, status, fd, sets = 0;

	kill_pid[0] = engine_pid;
	assert_true(read_until(out, "shm ", line, sizeof(line), WAIT_MS));
	assert_int_equal(sscanf(line, "shm %511s %d", shm, &target), 2);
	kill_pid[1] = target;
	snprintf(leftover_shm, sizeof(leftover_shm), "%s", shm);
	assert_true(more_ticks(out, 3, WAIT_MS));
	fd = open(shm, O_RDWR);
	assert_true(fd >= 0);
	hdr = mmap(NULL, CTP_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fd, 0);
	close(fd);
	assert_true(hdr != MAP_FAILED);

	/* The engine dies without any cleanup. */
	assert_int_equal(kill(engine_pid, SIGKILL), 0);
	assert_int_equal(it_wait_pid(engine_pid, WAIT_MS, &status), 0);
	kill_pid[0] = 0;
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	/* The target goes on writing. */
	assert_true(more_ticks(out, 10, WAIT_MS));
	/* Pretend a dead engine had gone to sleep: every write now tries to
	 * wake it (socket or futex).  The probe must take the flag back and
	 * carry on, never block or die. */
	for (sets = 0; sets < 10; sets++) {
		uint64_t end = it_now() + WAIT_MS * 1000000ull;

		atomic_store(&hdr->tracer_sleeping, 1);
		while (atomic_load(&hdr->tracer_sleeping) == 1 &&
		       it_now() < end)
			it_sleep_us(200);
		assert_int_equal(atomic_load(&hdr->tracer_sleeping), 0);
		assert_true(more_ticks(out, 2, WAIT_MS));
	}
	/* Told to stop, it stops by itself: exit 0, not SIGPIPE. */
	assert_int_equal(write(ctl, "q", 1), 1);
	assert_true(read_until(out, "stats ", line, sizeof(line), WAIT_MS));
	wakes = strtoul(strstr(line, "wakes=") + 6, NULL, 10);
	print_message("target after the engine's death: %d wake attempts, "
		      "probe counted %lu, %s\n",
		      sets, wakes, line);
	assert_true(wakes >= (unsigned long)sets);
	/* Orphaned, then re-parented to us (child subreaper). */
	for (uint64_t end = it_now() + WAIT_MS * 1000000ull;;) {
		pid_t r = waitpid(target, &status, WNOHANG);

		if (r == target)
			break;
		assert_true(r == 0 || (r < 0 && errno == ECHILD));
		status = -1;
		if (it_now() > end)
			break;
		it_sleep_ms(1);
	}
	kill_pid[1] = 0;
	if (WIFSIGNALED(status))
		fail_msg("target killed by signal %d", WTERMSIG(status));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	munmap(hdr, CTP_HEADER_SIZE);
	it_remove_region_dir(shm);
	leftover_shm[0] = '\0';
	assert_false(it_path_exists(shm));
}

static void test_engine_lib_sigkilled_target_survives(void **state)
{
	int out[2], ctl[2];
	pid_t p;

	(void)state;
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	pipe_for_child(out, 1);
	pipe_for_child(ctl, 0);
	p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		/* The engine process: socket wakes only, so the probe's wake
		 * attempt is a send() to a peer that will be dead. */
		struct engine_config cfg;
		struct engine *e;
		char err[512], cfd[16], ofd[16];
		char *argv[] = {ITEST_WRITER, "spin", cfd, ofd, NULL};

		snprintf(cfd, sizeof(cfd), "%d", ctl[0]);
		snprintf(ofd, sizeof(ofd), "%d", out[1]);
		engine_config_defaults(&cfg);
		cfg.argv = argv;
		cfg.stations = 16;
		cfg.no_futex = true;
		e = engine_create(&cfg, err, sizeof(err));
		if (!e || !engine_start(e, err, sizeof(err))) {
			fprintf(stderr, "engine: %s\n", err);
			_exit(1);
		}
		for (;;)
			pause();
	}
	close(out[1]);
	close(ctl[0]);
	kill_engine_target_survives(p, out[0], ctl[1]);
	close(out[0]);
	close(ctl[1]);
}

static void test_corotop_sigkilled_target_survives(void **state)
{
	int out[2], ctl[2];
	char cfd[16], ofd[16];
	pid_t p;

	(void)state;
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
	pipe_for_child(out, 1);
	pipe_for_child(ctl, 0);
	snprintf(cfd, sizeof(cfd), "%d", ctl[0]);
	snprintf(ofd, sizeof(ofd), "%d", out[1]);
	p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		char *argv[] = {ITEST_COROTOP, "-b",   "-d", "5", "--",
				ITEST_WRITER,  "spin", cfd,  ofd, NULL};
		int devnull = open("/dev/null", O_WRONLY);

		if (devnull < 0 || dup2(devnull, 1) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(out[1]);
	close(ctl[0]);
	kill_engine_target_survives(p, out[0], ctl[1]);
	close(out[0]);
	close(ctl[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(
			test_engine_lib_sigkilled_target_survives,
			teardown_kill),
		cmocka_unit_test_teardown(
			test_corotop_sigkilled_target_survives, teardown_kill),
		cmocka_unit_test_teardown(test_sleep_and_futex_wake,
					  teardown_kill),
		cmocka_unit_test_teardown(test_sleep_and_socket_wake,
					  teardown_kill),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
