/*
 * harvest_throughput: how many events per second the engine harvests, and
 * how many it loses, when the target records as fast as it can.
 *
 * One process: an engine that owns the region harvests on its own thread
 * while W writer threads, attached through the real probe, each open K/W
 * coroutines (one station each) and record into them round-robin with no
 * pause.  Each writer counts what it wrote; the engine's model counts what
 * it harvested and what it counted lost, and because harvest accounting is
 * exact, harvested + lost must equal written once the engine has drained.
 *
 * Rates are over the writing window: "harvested" there is what the engine
 * had delivered when the writers stopped; the final drain (at most 8 events
 * per station) is only used for the accounting check.
 *
 * Flat-out engine: scan_interval_us = 0, otherwise the shipped defaults
 * (dirty hint, asymmetric fence).  Three extra cases on 1 writer x 1024
 * stations change one thing each: no membarrier (the probe fences), no
 * dirty hint (full scans only), default pacing (500 us after a busy scan
 * that lost nothing).  cpu_cores is the whole process (writers + engine).
 *
 * Usage: harvest_throughput [seconds-per-case]   (default 1.0)
 */
#define _GNU_SOURCE
#include "bench.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define MAX_WRITERS 4

struct writer {
	pthread_t th;
	unsigned coros;
	uint64_t written;
	atomic_bool *go, *stop;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct corotop_coro *c = calloc(w->coros, sizeof(*c));
	uint64_t n = 0;

	if (!c)
		bench_die("out of memory");
	for (unsigned i = 0; i < w->coros; i++) {
		corotop_coro_open(&c[i], 0);
		if (!c[i].station)
			bench_die("coroutine %u got no station", i);
	}
	/* acquire: pairs with main's release; start together. */
	while (!atomic_load_explicit(w->go, memory_order_acquire))
		;
	/* relaxed: the flag only ends the loop; join orders the rest. */
	while (!atomic_load_explicit(w->stop, memory_order_relaxed)) {
		for (unsigned k = 0; k < 256; k++) {
			unsigned i = (unsigned)(n % w->coros);

			corotop_coro_record(&c[i], (int)((n / w->coros) & 1),
					    n);
			n++;
		}
	}
	w->written = n;
	for (unsigned i = 0; i < w->coros; i++)
		corotop_coro_close(&c[i]);
	free(c);
	return NULL;
}

struct variant {
	const char *name;
	unsigned scan_interval_us;
	bool no_membarrier;
	bool advertise_dirty;
};

static const struct variant v_flat = {"flat", 0, false, true};
static const struct variant v_nomb = {"flat-nomb", 0, true, true};
static const struct variant v_nodirty = {"flat-nodirty", 0, false, false};
static const struct variant v_paced = {"paced-500us", 500, false, true};

static void run_case(unsigned writers, unsigned stations,
		     const struct variant *v, double seconds)
{
	struct engine_config cfg;
	struct writer w[MAX_WRITERS];
	atomic_bool go = false, stop = false;
	struct engine_stats st0, st1;
	struct snapshot snap;
	uint64_t written = 0, t0, t1, in_window, cpu0, cpu1;
	struct bench_load load;
	double others;
	struct engine *e;

	engine_config_defaults(&cfg);
	/* One more: the probe's process station takes the first
	 * (probe_process_station, issue 25); the coroutines get `stations`. */
	cfg.stations = stations + 1;
	cfg.scan_interval_us = v->scan_interval_us;
	cfg.no_membarrier = v->no_membarrier;
	cfg.advertise_dirty = v->advertise_dirty;
	e = bench_engine_create(&cfg);
	bench_probe_attach();
	bench_engine_start(e);
	for (unsigned i = 0; i < writers; i++) {
		w[i] = (struct writer){
			.coros = stations / writers, .go = &go, .stop = &stop};
		if (pthread_create(&w[i].th, NULL, writer_main, &w[i]))
			bench_die("cannot start a writer thread");
	}
	bench_sleep_ns(50000000u); /* writers open their stations */
	snapshot_init(&snap);
	engine_snapshot(e, &snap);
	engine_stats(e, &st0);
	uint64_t events0 = snap.t.events, lost0 = snap.t.lost;
	bench_load_start(&load);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	cpu0 = clock_now_ns(CLOCK_PROCESS_CPUTIME_ID);
	atomic_store_explicit(&go, true, memory_order_release);
	bench_sleep_ns((uint64_t)(seconds * 1e9));
	atomic_store_explicit(&stop, true, memory_order_relaxed);
	for (unsigned i = 0; i < writers; i++) {
		pthread_join(w[i].th, NULL);
		written += w[i].written;
	}
	t1 = clock_now_ns(CLOCK_MONOTONIC);
	cpu1 = clock_now_ns(CLOCK_PROCESS_CPUTIME_ID);
	others = bench_load_others(&load);
	engine_snapshot(e, &snap);
	engine_stats(e, &st1);
	in_window = snap.t.events - events0;
	engine_stop(e); /* final drain */
	engine_snapshot(e, &snap);

	uint64_t harvested = snap.t.events - events0;
	uint64_t lost = snap.t.lost - lost0;
	double secs = (double)(t1 - t0) / 1e9;
	uint64_t scans = st1.scans - st0.scans;

	printf("harvest_throughput %-12s writers=%u stations=%u "
	       "secs=%.2f written=%llu harvested=%llu lost=%llu "
	       "loss_pct=%.2f written_per_s=%.3g harvested_per_s=%.3g "
	       "scans=%llu ns_per_scan=%.0f sleeps=%llu wakes=%llu "
	       "timeouts=%llu cpu_cores=%.2f others_cores=%.2f "
	       "accounting=%s\n",
	       v->name, writers, stations, secs, (unsigned long long)written,
	       (unsigned long long)harvested, (unsigned long long)lost,
	       written ? 100.0 * (double)lost / (double)written : 0.0,
	       (double)written / secs, (double)in_window / secs,
	       (unsigned long long)scans,
	       scans ? (double)(t1 - t0) / (double)scans : 0.0,
	       (unsigned long long)(st1.sleeps - st0.sleeps),
	       (unsigned long long)(st1.futex_wakes - st0.futex_wakes),
	       (unsigned long long)(st1.timeouts - st0.timeouts),
	       (double)(cpu1 - cpu0) / (double)(t1 - t0), others,
	       harvested + lost == written ? "exact" : "MISMATCH");
	fflush(stdout);
	snapshot_finish(&snap);
	corotop_probe_shutdown();
	engine_destroy(e);
}

int main(int argc, char **argv)
{
	static const unsigned stations[] = {1, 16, 1024, 16384};
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;

	if (seconds <= 0)
		bench_die("usage: harvest_throughput [seconds-per-case]");
	if (corotop_probe_live_)
		bench_die("unset the CTP_* environment first");
	for (unsigned wr = 1; wr <= 2; wr++)
		for (size_t s = 0; s < sizeof(stations) / sizeof(*stations);
		     s++)
			if (stations[s] >= wr)
				run_case(wr, stations[s], &v_flat, seconds);
	/* What the asymmetric fence, the dirty hint and the default pacing
	 * each change, on the 1-writer, 1024-station case. */
	run_case(1, 1024, &v_nomb, seconds);
	run_case(1, 1024, &v_nodirty, seconds);
	run_case(1, 1024, &v_paced, seconds);
	return 0;
}
