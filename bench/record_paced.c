/*
 * record_paced: what one corotop_coro_record() costs while the engine keeps
 * up -- the case where nothing needs waking -- as opposed to probe_record's
 * single coroutine recording flat out, which laps the engine all the time.
 *
 * The writer owns CORO coroutines and records one event on each in turn, a
 * batch of CORO records timed with clock_gettime around it, then pauses
 * PAUSE_US (not timed) so the in-process engine (defaults: dirty hint,
 * 500 us pacing, deep rings) harvests them; each coroutine therefore writes
 * one event per pause, far from a lap of its ring.  The same loop with only
 * a clock_gettime per step gives the floor in the same run, and the
 * difference is the record's cost above its own clock read.
 *
 *   record_paced [BATCHES [DEPTH]]   (default 4000, the engine's depth)
 *
 * Prints "record_paced clock|traced batch_median_ns=... lost=N" and a target
 * line.  Run against another build's probe with LD_LIBRARY_PATH pointing at
 * its libcorotop-probe.so (struct corotop_coro only grew), to compare two
 * probes under the same engine: docs/PERFORMANCE.md section 15.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <time.h>

#define CORO 256u
#define PAUSE_US 250u
#define MAX_BATCHES 20000u

static double batch_ns[MAX_BATCHES];
static struct corotop_coro coro[CORO];
static volatile uint64_t sink;

static void pause_between(void)
{
	struct timespec ts = {0, PAUSE_US * 1000};

	nanosleep(&ts, NULL);
}

static double report(const char *name, unsigned batches, uint64_t lost)
{
	struct bench_dist d = bench_dist(batch_ns, batches);

	printf("record_paced %-6s batch_median_ns=%.2f batch_p90_ns=%.2f "
	       "batch_min_ns=%.2f lost=%llu\n",
	       name, d.p50, d.p90, d.min, (unsigned long long)lost);
	return d.p50;
}

int main(int argc, char **argv)
{
	unsigned batches = argc > 1 ? (unsigned)atoi(argv[1]) : 4000u;
	struct engine_config cfg;
	struct snapshot snap;
	struct engine *e;
	uint64_t k = 0;
	double clock_med, traced_med;

	if (!batches || batches > MAX_BATCHES)
		bench_die("batches: 1..%u", MAX_BATCHES);
	engine_config_defaults(&cfg);
	cfg.stations = CORO * 2;
	if (argc > 2)
		cfg.ring_depth = (unsigned)atoi(argv[2]);
	e = bench_engine_create(&cfg);
	bench_probe_attach();
	bench_pin(bench_ncpu() - 1);
	bench_engine_start(e);
	bench_pin(0);
	for (unsigned c = 0; c < CORO; c++)
		corotop_coro_open(&coro[c], c + 1);

	/* The floor: a clock read per step, same loop, same pauses. */
	for (unsigned b = 0; b < batches; b++) {
		uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);

		for (unsigned c = 0; c < CORO; c++) {
			sink += clock_now_ns(CLOCK_MONOTONIC);
			BENCH_CLOBBER();
		}
		batch_ns[b] =
			(double)(clock_now_ns(CLOCK_MONOTONIC) - t0) / CORO;
		pause_between();
	}
	clock_med = report("clock", batches, 0);

	for (unsigned b = 0; b < batches; b++) {
		uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);

		for (unsigned c = 0; c < CORO; c++) {
			corotop_coro_record(&coro[c], (int)(k & 1), k);
			BENCH_CLOBBER();
		}
		k++;
		batch_ns[b] =
			(double)(clock_now_ns(CLOCK_MONOTONIC) - t0) / CORO;
		pause_between();
	}
	for (unsigned c = 0; c < CORO; c++)
		corotop_coro_close(&coro[c]);
	engine_stop(e);
	snapshot_init(&snap);
	engine_snapshot(e, &snap);
	traced_med = report("traced", batches, snap.t.lost);
	printf("record_paced target depth=%u traced_median=%.2f "
	       "clock_median=%.2f overhead_ns=%.2f limit_ns=5.00 %s\n",
	       cfg.ring_depth, traced_med, clock_med, traced_med - clock_med,
	       traced_med - clock_med <= 5.0 ? "PASS" : "MISS");
	snapshot_finish(&snap);
	corotop_probe_shutdown();
	engine_destroy(e);
	return 0;
}
