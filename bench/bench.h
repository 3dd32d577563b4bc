/*
 * bench: the few helpers every benchmark program shares -- clocks, the
 * time-stamp counter, order statistics, an in-process engine with the probe
 * attached to it, and a fatal-error exit.  Header-only and static, so each
 * benchmark stays one self-contained program.
 *
 * Output convention: every result line starts with the program name and a
 * case name followed by key=value pairs, so scripts/bench output can be
 * grepped and diffed between runs.
 */
#ifndef COROTOP_BENCH_H
#define COROTOP_BENCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define BENCH_HAVE_TSC 1
#else
#define BENCH_HAVE_TSC 0
#endif

#include "corotop/ctp.h"
#include "corotop/probe.h"
#include "engine/ctp/harvest.h"
#include "engine/engine.h"
#include "common/clock.h"

/* Keep the compiler from merging or hoisting work across this point. */
#define BENCH_CLOBBER() __asm__ __volatile__("" ::: "memory")

__attribute__((format(printf, 1, 2), noreturn)) static inline void
bench_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static inline void bench_sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u),
			      (long)(ns % 1000000000u)};

	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Online CPUs (not this thread's affinity, which bench_pin narrows). */
static inline int bench_ncpu(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int)n : 1;
}

/*
 * Pin the calling thread to CPU `cpu` (threads it creates inherit that).
 * Best effort: a failure only makes the numbers noisier, so say so and go on.
 */
static inline void bench_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		fprintf(stderr, "bench: cannot pin to CPU %d; unpinned\n", cpu);
}

/*
 * CPU used by everything else on the machine during a window, in cores:
 * busy time of all CPUs from /proc/stat minus this process's own CPU time.
 * This VM is shared, so every result line carries it; anything well above
 * 0.05 means the numbers were disturbed.  Resolution is one USER_HZ tick.
 */
struct bench_load {
	uint64_t busy_ticks, own_ns, wall_ns;
};

static inline uint64_t bench_busy_ticks(void)
{
	unsigned long long v[10] = {0};
	FILE *f = fopen("/proc/stat", "r");
	uint64_t busy = 0;

	if (!f)
		return 0;
	/* user nice system idle iowait irq softirq steal ... */
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
		   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8)
		busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
	fclose(f);
	return busy;
}

static inline void bench_load_start(struct bench_load *l)
{
	l->busy_ticks = bench_busy_ticks();
	l->own_ns = clock_now_ns(CLOCK_PROCESS_CPUTIME_ID);
	l->wall_ns = clock_now_ns(CLOCK_MONOTONIC);
}

/* Cores used by other processes since bench_load_start. */
static inline double bench_load_others(const struct bench_load *l)
{
	double tick_ns = 1e9 / (double)sysconf(_SC_CLK_TCK);
	double busy = (double)(bench_busy_ticks() - l->busy_ticks) * tick_ns;
	double own =
		(double)(clock_now_ns(CLOCK_PROCESS_CPUTIME_ID) - l->own_ns);
	double wall = (double)(clock_now_ns(CLOCK_MONOTONIC) - l->wall_ns);
	double o = (busy - own) / wall;

	return o > 0 ? o : 0;
}

/*
 * Function-call IPIs (the "CAL" row of /proc/interrupts) received so far by
 * CPU `cpu`; membarrier(GLOBAL_EXPEDITED) is delivered this way.  0 when the
 * row is missing.
 */
static inline uint64_t bench_ipis(int cpu)
{
	char line[4096];
	uint64_t v = 0;
	FILE *f = fopen("/proc/interrupts", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;

		while (*p == ' ')
			p++;
		if (strncmp(p, "CAL:", 4))
			continue;
		p += 4;
		for (int c = 0; c <= cpu; c++) {
			v = strtoull(p, &end, 10);
			if (end == p) {
				v = 0;
				break;
			}
			p = end;
		}
		break;
	}
	fclose(f);
	return v;
}

/* ---- time-stamp counter: serialized reads around one short call ---- */

static inline uint64_t bench_tsc_begin(void)
{
#if BENCH_HAVE_TSC
	_mm_lfence();
	return __rdtsc();
#else
	return clock_now_ns(CLOCK_MONOTONIC);
#endif
}

static inline uint64_t bench_tsc_end(void)
{
#if BENCH_HAVE_TSC
	unsigned aux;
	uint64_t t = __rdtscp(&aux);

	_mm_lfence();
	return t;
#else
	return clock_now_ns(CLOCK_MONOTONIC);
#endif
}

/* Unserialized read, for measuring the counter itself. */
static inline uint64_t bench_tsc_raw(void)
{
#if BENCH_HAVE_TSC
	return __rdtsc();
#else
	return clock_now_ns(CLOCK_MONOTONIC);
#endif
}

/* TSC ticks per nanosecond, against CLOCK_MONOTONIC over ~100 ms. */
static inline double bench_tsc_per_ns(void)
{
#if BENCH_HAVE_TSC
	uint64_t n0 = clock_now_ns(CLOCK_MONOTONIC), t0 = bench_tsc_begin();
	uint64_t n1, t1;

	bench_sleep_ns(100000000u);
	n1 = clock_now_ns(CLOCK_MONOTONIC);
	t1 = bench_tsc_end();
	return (double)(t1 - t0) / (double)(n1 - n0);
#else
	return 1.0;
#endif
}

/* ---- order statistics ---- */

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sorts v in place; returns the p-quantile (0..1), nearest rank. */
static inline double bench_quantile(double *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), bench_cmp_double);
	i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

/* Median, p99 and max of v (sorted in place). */
struct bench_dist {
	double min, p50, p90, p99, max, mean;
};

static inline struct bench_dist bench_dist(double *v, size_t n)
{
	struct bench_dist d = {0};
	double sum = 0;

	if (!n)
		return d;
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	d.mean = sum / (double)n;
	d.p50 = bench_quantile(v, n, 0.50);
	d.p90 = v[(size_t)(0.90 * (double)(n - 1) + 0.5)];
	d.p99 = v[(size_t)(0.99 * (double)(n - 1) + 0.5)];
	d.min = v[0];
	d.max = v[n - 1];
	return d;
}

/* ---- an in-process engine with this process's probe attached ---- */

/*
 * Create an engine that owns a fresh region of `stations` stations (no
 * target is launched), then point the CTP_* environment at it.  The caller
 * attaches the probe (corotop_probe_init here, or in a forked child) and
 * starts the harvest with bench_engine_start.
 */
/* Point the CTP_* environment at a region, as corotop does for a target. */
static inline void bench_probe_env(const char *shm, const char *sock,
				   unsigned stations)
{
	char max[16];

	snprintf(max, sizeof(max), "%u", stations);
	if (setenv(CTP_ENV_SHM, shm, 1) || setenv(CTP_ENV_SOCK, sock, 1) ||
	    setenv(CTP_ENV_MAX, max, 1))
		bench_die("setenv failed");
}

static inline struct engine *
bench_engine_create(const struct engine_config *cfg)
{
	char err[256];
	struct engine *e = engine_create(cfg, err, sizeof(err));

	if (!e)
		bench_die("engine_create: %s", err);
	bench_probe_env(engine_shm_path(e), engine_sock_path(e), cfg->stations);
	return e;
}

static inline void bench_engine_start(struct engine *e)
{
	char err[256];

	if (!engine_start(e, err, sizeof(err)))
		bench_die("engine_start: %s", err);
}

static inline void bench_probe_attach(void)
{
	if (!corotop_probe_init())
		bench_die("probe did not attach: %s", corotop_probe_status());
}

/* n coroutines opened through the probe, every tenth running and the
 * others suspended each at its own address (the worst case for a table of
 * WHERE locations): the "many coroutines" workload of several benches.
 * The caller frees the array. */
static inline struct corotop_coro *bench_open_coros(long n)
{
	struct corotop_coro *c = calloc((size_t)n, sizeof(*c));

	if (!c)
		bench_die("out of memory for %ld coroutines", n);
	for (long i = 0; i < n; i++) {
		corotop_coro_open(&c[i], 0x7f0000000000u + (uint64_t)i * 64);
		if (i % 10 == 0)
			corotop_coro_resume(&c[i], 0);
		else
			corotop_coro_suspend(&c[i],
					     0x401000u + (uint64_t)i * 16);
	}
	return c;
}

/* Snapshot e into snap until it holds n coroutines, within 120 s. */
static inline void bench_wait_harvested(struct engine *e, struct snapshot *snap,
					long n)
{
	uint64_t end = clock_now_ns(CLOCK_MONOTONIC) + 120ull * 1000000000u;

	do {
		engine_snapshot(e, snap);
		if (snap->count >= (size_t)n)
			return;
		usleep(50000);
	} while (clock_now_ns(CLOCK_MONOTONIC) < end);
	bench_die("only %zu of %ld coroutines harvested in 120 s", snap->count,
		  n);
}

/* Close and free what bench_open_coros opened. */
static inline void bench_close_coros(struct corotop_coro *c, long n)
{
	for (long i = 0; i < n; i++)
		corotop_coro_close(&c[i]);
	free(c);
}

#endif
