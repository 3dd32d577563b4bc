/*
 * census_walk: what the census (src/probe/census.c) costs at a late attach
 * -- N coroutines opened and parked while untraced, then an in-process
 * engine attaches to this process's own "corotop" buffer (attach mode on
 * getpid(), as tests/stress/test-census-stress.c does), and the probe's
 * census thread publishes all N.  Printed per N:
 *
 *   walk_ms       the census thread's walk, wall clock (census_stats)
 *   walk_us_per   the same per coroutine
 *   shown_ms      from the engine's creation until a snapshot shows all N
 *                 coroutines (the engine's harvest of the census events;
 *                 snapshots taken every 20 ms, so within 20 ms)
 *
 * The coroutines declare no stacks, so the engine walks none (its stack
 * walk is one or two process_vm_readv per parked coroutine on a declared
 * stack: see unit-stackwalk).  A thread switches one more coroutine every
 * millisecond: the rendezvous runs on a transition.  The first touch of
 * each station's pages in the region's file is part of the walk's time
 * (the file lives in XDG_RUNTIME_DIR, else /tmp).
 *
 * Usage: census_walk [N ...]   (default 1000 10000 100000)
 * Links the static probe: census_stats is the probe's own.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdatomic.h>

#include "engine/model/snapshot.h"
#include "probe/census.h"

static _Atomic bool stop;

static void *switcher(void *arg)
{
	struct corotop_coro c;
	struct timespec ms = {0, 1000000};

	(void)arg;
	corotop_coro_open(&c, 1);
	/* relaxed: a flag; the join orders the rest. */
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		corotop_coro_resume(&c, 1);
		corotop_coro_suspend(&c, 2);
		nanosleep(&ms, NULL);
	}
	corotop_coro_close(&c);
	return NULL;
}

static size_t live_shown(struct engine *e)
{
	struct snapshot s;
	size_t n = 0;

	snapshot_init(&s);
	engine_snapshot(e, &s);
	for (size_t i = 0; i < s.count; i++)
		n += s.coro[i].state != MODEL_DEAD;
	snapshot_finish(&s);
	return n;
}

static void one(long n)
{
	struct corotop_coro *c = calloc((size_t)n, sizeof(*c));
	struct census_stats c0, c1;
	struct engine_config cfg;
	struct engine *e;
	uint64_t t0, shown = 0;
	char err[512];

	if (!c)
		bench_die("out of memory");
	for (long i = 0; i < n; i++) {
		corotop_coro_open(&c[i], 0x7f0000000000u + (uint64_t)i * 64);
		corotop_coro_resume(&c[i], 0x10);
		corotop_coro_suspend(&c[i], 0x20 + (uint64_t)i);
	}
	census_stats(&c0);
	engine_config_defaults(&cfg);
	cfg.attach_pid = getpid();
	cfg.ppt_buffer = COROTOP_PPT_BUFFER_NAME;
	cfg.stations = (uint32_t)(n + 1024 > 4096 ? n + 1024 : 4096);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	e = engine_create(&cfg, err, sizeof(err));
	if (!e || !engine_start(e, err, sizeof(err)))
		bench_die("engine: %s", err);
	for (;;) {
		census_stats(&c1);
		if (!shown && live_shown(e) >= (size_t)n)
			shown = clock_now_ns(CLOCK_MONOTONIC) - t0;
		if (shown && c1.walks > c0.walks && !census_running())
			break;
		if (clock_now_ns(CLOCK_MONOTONIC) - t0 > 300000000000ull)
			bench_die("no census in 300 s");
		usleep(20000);
	}
	printf("census_walk n=%ld walk_ms=%.1f walk_us_per=%.2f published=%llu "
	       "shown_ms=%.1f\n",
	       n, (double)(c1.walk_ns - c0.walk_ns) / 1e6,
	       (double)(c1.walk_ns - c0.walk_ns) / 1e3 / (double)n,
	       (unsigned long long)(c1.published - c0.published),
	       (double)shown / 1e6);
	fflush(stdout);
	engine_destroy(e);
	for (long i = 0; i < n; i++)
		corotop_coro_close(&c[i]);
	free(c);
}

int main(int argc, char **argv)
{
	static const long def[] = {1000, 10000, 100000};
	pthread_t th;

	if (pthread_create(&th, NULL, switcher, NULL))
		bench_die("pthread_create");
	if (argc > 1)
		for (int i = 1; i < argc; i++)
			one(atol(argv[i]));
	else
		for (size_t i = 0; i < sizeof(def) / sizeof(def[0]); i++)
			one(def[i]);
	atomic_store_explicit(&stop, true, memory_order_relaxed);
	pthread_join(th, NULL);
	return 0;
}
