/*
 * harvest_cost: what the engine's harvest costs per event, with no writer
 * racing it -- the engine's side of harvest_throughput, alone.
 *
 * One thread, no harvest thread: an engine that owns the region (created,
 * never started), the real probe attached to it, K coroutines opened.  Each
 * round every coroutine records E events (E <= 8: a station's slots hold
 * them all, so nothing is lost), then one engine_scan harvests them: the
 * full pass the harvest thread makes, into the model, under the engine's
 * lock.  Nothing here depends on scheduling, so the count of instructions
 * engine_scan executes is the same on every run of the same binary:
 *
 *   valgrind --tool=callgrind --toggle-collect=engine_scan \
 *       build/bench/harvest_cost
 *
 * then (callgrind's "totals") / the events printed is the engine's
 * instructions per event -- a number two builds can be compared by on a
 * machine whose clock speed moves (bench/harvest_ir.sh does exactly that).
 * Natively, ns_per_event is the scans' median wall time per event.
 *
 * Cases: K = 16, 1024 and 16384 coroutines, E = 4 (two resumes, two
 * suspends, each at its own address: as a scheduler's switches).
 *
 * Usage: harvest_cost [rounds]   (default 64)
 */
#define _GNU_SOURCE
#include "bench.h"

#include "engine/engine_internal.h"

#define HC_EVENTS 4 /* per coroutine per round (<= CTP_SLOTS) */

static void hc_case(unsigned k, unsigned rounds)
{
	struct engine_config cfg;
	struct corotop_coro *c;
	struct snapshot snap;
	struct engine *e;
	double *ns = calloc(rounds, sizeof(*ns));
	uint64_t events = 0, n = 0;

	if (!ns)
		bench_die("out of memory");
	engine_config_defaults(&cfg);
	/* One more: the probe's process station takes the first. */
	cfg.stations = k + 1;
	e = bench_engine_create(&cfg);
	bench_probe_attach();
	c = calloc(k, sizeof(*c));
	if (!c)
		bench_die("out of memory");
	for (unsigned i = 0; i < k; i++) {
		corotop_coro_open(&c[i], 0);
		if (!c[i].station)
			bench_die("coroutine %u got no station", i);
	}
	(void)engine_scan(e); /* opens every coroutine (not counted) */
	for (unsigned r = 0; r < rounds; r++) {
		uint64_t t0, got;

		for (unsigned i = 0; i < k; i++)
			for (unsigned j = 0; j < HC_EVENTS; j++, n++)
				corotop_coro_record(&c[i], (int)(j & 1) ^ 1,
						    0x401000u +
							    (n % 4096) * 16);
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		got = engine_scan(e);
		ns[r] = (double)(clock_now_ns(CLOCK_MONOTONIC) - t0) /
			(double)(k * HC_EVENTS);
		events += got;
	}
	snapshot_init(&snap);
	engine_snapshot(e, &snap);
	qsort(ns, rounds, sizeof(*ns), bench_cmp_double);
	printf("harvest_cost coroutines=%u rounds=%u events=%llu "
	       "ns_per_event=%.1f lost=%llu accounting=%s\n",
	       k, rounds, (unsigned long long)events, ns[rounds / 2],
	       (unsigned long long)snap.t.lost,
	       events == (uint64_t)k * HC_EVENTS * rounds && !snap.t.lost
		       ? "exact"
		       : "MISMATCH");
	fflush(stdout);
	snapshot_finish(&snap);
	for (unsigned i = 0; i < k; i++)
		corotop_coro_close(&c[i]);
	free(c);
	free(ns);
	corotop_probe_shutdown();
	engine_destroy(e);
}

int main(int argc, char **argv)
{
	static const unsigned coros[] = {16, 1024, 16384};
	long rounds = argc > 1 ? atol(argv[1]) : 64;

	if (rounds < 1 || rounds > 1000000)
		bench_die("usage: harvest_cost [rounds]");
	if (corotop_probe_live_)
		bench_die("unset the CTP_* environment first");
	for (size_t i = 0; i < sizeof(coros) / sizeof(*coros); i++)
		hc_case(coros[i], (unsigned)rounds);
	return 0;
}
