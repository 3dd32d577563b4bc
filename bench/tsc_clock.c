/*
 * tsc_clock: the probe's timestamp (src/probe/tscclock.h, issue 31) against
 * clock_gettime: what a read costs, and how far its time is from the
 * clock's.
 *
 *   tsc_clock [SECONDS [MODE]]     (2, auto)
 *
 * MODE is COROTOP_PROBE_CLOCK's value: auto (unset: the TSC when the
 * kernel's clocksource is tsc), tsc, or gettime.  Cases:
 *  - cost: ns per read of clock_gettime(CLOCK_MONOTONIC), of a bare
 *    rdtsc and of the probe's clock, medians of 15 rounds of 1M reads,
 *    interleaved;
 *  - error: for SECONDS, each of 2 threads brackets probe reads between
 *    two clock_gettimes; the error of one read is how far it falls
 *    outside its bracket.  Max, p99.99, and reads that went backwards
 *    (must be 0);
 *  - migrate: the same on one thread moved between the CPUs every 2 ms.
 * The probe's own counters follow: lines published (anchors), samples
 * refused as too wide, reads answered by clock_gettime meanwhile.
 */
#include "bench.h"

#include <stdatomic.h>

#include "probe/tscclock.h"

#define ROUNDS 15
#define READS 1000000

static uint64_t gettime_ns(void)
{
	return clock_now_ns(CLOCK_MONOTONIC);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double per_read(int which)
{
	volatile uint64_t sink = 0;
	uint64_t t0 = gettime_ns();

	for (int i = 0; i < READS; i++) {
		if (which == 0)
			sink += gettime_ns();
		else if (which == 1)
#if BENCH_HAVE_TSC
			sink += __rdtsc();
#else
			sink += 0;
#endif
		else
			sink += tscclock_now();
	}
	(void)sink;
	return (double)(gettime_ns() - t0) / READS;
}

static void cost(void)
{
	double r[3][ROUNDS];

	for (int k = 0; k < ROUNDS; k++)
		for (int w = 0; w < 3; w++)
			r[w][k] = per_read(w);
	printf("tsc_clock cost clock_gettime_ns=%.2f rdtsc_ns=%.2f "
	       "probe_clock_ns=%.2f\n",
	       bench_quantile(r[0], ROUNDS, 0.5),
	       bench_quantile(r[1], ROUNDS, 0.5),
	       bench_quantile(r[2], ROUNDS, 0.5));
}

struct errrun {
	double seconds;
	bool migrate;
	uint64_t reads, backwards, max_err;
	uint64_t *hist; /* errors, one per 64 reads, for the percentile */
	size_t nhist, caphist;
};

static void *error_thread(void *arg)
{
	struct errrun *e = arg;
	uint64_t end = gettime_ns() + (uint64_t)(e->seconds * 1e9);
	uint64_t last = 0, next_move = 0;
	int cpu = 0, ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);

	for (;;) {
		uint64_t c1 = gettime_ns();
		uint64_t t = tscclock_now();
		uint64_t c2 = gettime_ns();
		uint64_t err = t < c1 ? c1 - t : t > c2 ? t - c2 : 0;

		if (t < last)
			e->backwards++;
		last = t;
		if (err > e->max_err)
			e->max_err = err;
		if ((e->reads++ & 63) == 0 && e->nhist < e->caphist)
			e->hist[e->nhist++] = err;
		if (c2 >= end)
			break;
		if (e->migrate && c2 >= next_move && ncpu > 1) {
			cpu_set_t one;

			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			cpu = (cpu + 1) % ncpu;
			(void)sched_setaffinity(0, sizeof(one), &one);
			next_move = c2 + 2000000;
		}
	}
	return NULL;
}

static void error_case(const char *name, int threads, double seconds,
		       bool migrate)
{
	struct errrun e[2] = {0};
	pthread_t th[2];
	uint64_t reads = 0, back = 0, maxe = 0;
	size_t n = 0;
	uint64_t *all;

	for (int i = 0; i < threads; i++) {
		e[i].seconds = seconds;
		e[i].migrate = migrate;
		e[i].caphist = 4000000;
		e[i].hist = malloc(e[i].caphist * sizeof(uint64_t));
		if (!e[i].hist)
			bench_die("out of memory");
		pthread_create(&th[i], NULL, error_thread, &e[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		reads += e[i].reads;
		back += e[i].backwards;
		if (e[i].max_err > maxe)
			maxe = e[i].max_err;
		n += e[i].nhist;
	}
	all = malloc((n ? n : 1) * sizeof(uint64_t));
	if (!all)
		bench_die("out of memory");
	n = 0;
	for (int i = 0; i < threads; i++) {
		memcpy(all + n, e[i].hist, e[i].nhist * sizeof(uint64_t));
		n += e[i].nhist;
		free(e[i].hist);
	}
	qsort(all, n, sizeof(uint64_t), cmp_u64);
	printf("tsc_clock %s threads=%d seconds=%.1f reads=%llu "
	       "max_err_ns=%llu p9999_err_ns=%llu backwards=%llu\n",
	       name, threads, seconds, (unsigned long long)reads,
	       (unsigned long long)maxe,
	       (unsigned long long)(n ? all[(size_t)(n * 0.9999)] : 0),
	       (unsigned long long)back);
	free(all);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	const char *mode = argc > 2 ? argv[2] : "auto";
	struct tscclock_stats st;
	char src[64] = "?";
	FILE *f;

	if (strcmp(mode, "auto") != 0)
		setenv("COROTOP_PROBE_CLOCK", mode, 1);
	else
		unsetenv("COROTOP_PROBE_CLOCK");
	tscclock_init(); /* again, with the mode given */
	f = fopen("/sys/devices/system/clocksource/clocksource0/"
		  "current_clocksource",
		  "r");
	if (f) {
		if (fgets(src, sizeof(src), f))
			src[strcspn(src, "\n")] = '\0';
		fclose(f);
	}
	/* Let the calibration happen before the cost is read. */
	for (uint64_t end = gettime_ns() + 50000000; gettime_ns() < end;)
		(void)tscclock_now();
	cost();
	error_case("error", 2, seconds, false);
	error_case("migrate", 1, seconds, true);
	tscclock_stats(&st);
	printf("tsc_clock probe mode=%s clocksource=%s on=%d anchors=%llu "
	       "wide=%llu fallbacks=%llu ghz=%.6f\n",
	       mode, src, st.on, (unsigned long long)st.anchors,
	       (unsigned long long)st.wide, (unsigned long long)st.fallbacks,
	       st.mult ? 4294967296.0 / (double)st.mult : 0.0);
	return 0;
}
