/*
 * idle_cpu: what the engine costs while the traced program does nothing.
 *
 * One process: an engine that owns the region (harvest and waker threads)
 * and the probe attached to it.  The main thread opens C coroutines, records
 * one event on each so they are live in the model, lets the engine settle
 * for one second and then sits idle in nanosleep for the measured window.
 * Engine CPU is the on-CPU time of the threads engine_start created, read
 * from /proc/self/task/<tid>/schedstat (nanoseconds, not ticks); the whole
 * process's CLOCK_PROCESS_CPUTIME_ID is printed as a cross-check.
 *
 * The idle engine wakes every sleep_timeout_ms (100 ms by default) for a
 * few passes over every allocated station before it sleeps again, so the
 * idle cost grows with the number of allocated stations; the cases cover 1,
 * 4096 (the default region) and 65536 coroutines.  Target: <= 1% of one
 * core.
 *
 * Usage: idle_cpu [seconds-per-case]   (default 5)
 */
#define _GNU_SOURCE
#include "bench.h"

#include <dirent.h>
#include <stdbool.h>
#include <sys/types.h>

#define MAX_TASKS 64

struct tasks {
	int n;
	pid_t tid[MAX_TASKS];
};

static void tasks_list(struct tasks *t)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;

	if (!d)
		bench_die("cannot list /proc/self/task");
	t->n = 0;
	while ((de = readdir(d)) && t->n < MAX_TASKS)
		if (de->d_name[0] != '.')
			t->tid[t->n++] = (pid_t)atoi(de->d_name);
	closedir(d);
}

static bool tasks_has(const struct tasks *t, pid_t tid)
{
	for (int i = 0; i < t->n; i++)
		if (t->tid[i] == tid)
			return true;
	return false;
}

/* On-CPU ns of one thread of this process. */
static uint64_t task_cpu_ns(pid_t tid)
{
	char path[64];
	unsigned long long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
	f = fopen(path, "r");
	if (!f)
		bench_die("cannot read %s (kernel without schedstat?)", path);
	if (fscanf(f, "%llu", &ns) != 1)
		bench_die("cannot parse %s", path);
	fclose(f);
	return ns;
}

static uint64_t engine_cpu_ns(const struct tasks *eng)
{
	uint64_t sum = 0;

	for (int i = 0; i < eng->n; i++)
		sum += task_cpu_ns(eng->tid[i]);
	return sum;
}

static void run_case(unsigned coros, bool no_futex, double seconds)
{
	struct engine_config cfg;
	struct corotop_coro *c = calloc(coros, sizeof(*c));
	struct tasks before, after, eng = {0};
	struct engine_stats s0, s1;
	uint64_t t0, t1, e0, e1, p0, p1;
	struct bench_load load;
	double others;
	struct engine *e;

	if (!c)
		bench_die("out of memory");
	engine_config_defaults(&cfg);
	cfg.stations = coros < 16 ? 16 : coros;
	cfg.no_futex = no_futex;
	e = bench_engine_create(&cfg);
	bench_probe_attach();
	tasks_list(&before);
	bench_engine_start(e);
	tasks_list(&after);
	for (int i = 0; i < after.n; i++)
		if (!tasks_has(&before, after.tid[i]))
			eng.tid[eng.n++] = after.tid[i];
	for (unsigned i = 0; i < coros; i++) {
		corotop_coro_open(&c[i], 0);
		corotop_coro_resume(&c[i], 0);
		corotop_coro_suspend(&c[i], 0x1000 + i);
	}
	bench_sleep_ns(1000000000u); /* harvest, then fall asleep */

	engine_stats(e, &s0);
	bench_load_start(&load);
	e0 = engine_cpu_ns(&eng);
	p0 = clock_now_ns(CLOCK_PROCESS_CPUTIME_ID);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	bench_sleep_ns((uint64_t)(seconds * 1e9));
	t1 = clock_now_ns(CLOCK_MONOTONIC);
	p1 = clock_now_ns(CLOCK_PROCESS_CPUTIME_ID);
	e1 = engine_cpu_ns(&eng);
	engine_stats(e, &s1);
	others = bench_load_others(&load);

	double wall = (double)(t1 - t0);
	double pct = 100.0 * (double)(e1 - e0) / wall;

	printf("idle_cpu coroutines=%u wake=%s secs=%.1f engine_threads=%d "
	       "engine_cpu_pct=%.3f process_cpu_pct=%.3f sleeps_per_s=%.1f "
	       "timeouts_per_s=%.1f scans_per_s=%.1f us_per_wakeup=%.1f "
	       "others_cores=%.2f target_pct=1 %s\n",
	       coros, no_futex ? "uds" : "futex", wall / 1e9, eng.n, pct,
	       100.0 * (double)(p1 - p0) / wall,
	       (double)(s1.sleeps - s0.sleeps) * 1e9 / wall,
	       (double)(s1.timeouts - s0.timeouts) * 1e9 / wall,
	       (double)(s1.scans - s0.scans) * 1e9 / wall,
	       s1.sleeps > s0.sleeps ? (double)(e1 - e0) / 1e3 /
					       (double)(s1.sleeps - s0.sleeps)
				     : 0.0,
	       others, pct <= 1.0 ? "PASS" : "MISS");
	fflush(stdout);
	for (unsigned i = 0; i < coros; i++)
		corotop_coro_close(&c[i]);
	corotop_probe_shutdown();
	engine_destroy(e);
	free(c);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5.0;

	if (seconds <= 0)
		bench_die("usage: idle_cpu [seconds-per-case]");
	if (corotop_probe_live_)
		bench_die("unset the CTP_* environment first");
	run_case(1, false, seconds);
	run_case(1, true, seconds);
	run_case(4096, false, seconds);
	run_case(65536, false, seconds);
	return 0;
}
