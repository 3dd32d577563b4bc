/*
 * calltrace: the cost of CallTrace storage, through the real probe library.
 *
 *   put_existing  corotop_calltrace_put of a 16-frame stack that is already
 *                 in the ACTIVE table (the common case: a hot stack sampled
 *                 again).  Target: median <= 150 ns.
 *   put_new       the same for 16-frame stacks seen for the first time
 *                 (hash, probe to an empty bucket, pool reservation, CAS),
 *                 into a table filled up to 60000 of 65536 traces.
 *                 Target: median <= 500 ns.
 *   rotate_65k    rotor_rotate with 65536 distinct 16-frame stacks in
 *                 ACTIVE: clear STANDBY, swap, scan the 8192 slots, collect
 *                 65536 traces (1M frames) into the traceset, seal it,
 *                 clear the new STANDBY.  Target: <= 5 ms.
 *
 *   calltrace [BATCHES]
 *
 * Puts are timed in batches of 1000 calls (the clock costs more than a
 * put); the distribution is of per-batch means.  One writer thread, pinned
 * to CPU 0; the region lives in this process (engine and target share the
 * mapping exactly as two processes would, through MAP_SHARED).
 */
#include "bench.h"

#include "engine/ctp/region.h"
#include "engine/calltrace/rotor.h"
#include "common/hash.h"

#define BATCH 1000
#define FRAMES 16
#define TRACES 65536

static void make_stack(uint64_t *f, uint64_t seed)
{
	for (unsigned i = 0; i < FRAMES; i++) {
		uint64_t x = seed * HASH_GOLDEN + i * 0x100000001b3ull;

		x ^= x >> 29;
		f[i] = (x * 0xbf58476d1ce4e5b9ull) | 1;
	}
}

static void report(const char *name, double *v, size_t n, double target,
		   const struct bench_load *l, const char *unit)
{
	struct bench_dist d = bench_dist(v, n);

	printf("calltrace %s frames=%d samples=%zu p50_%s=%.1f p90_%s=%.1f "
	       "p99_%s=%.1f max_%s=%.1f target_%s=%.0f %s others_cores=%.2f\n",
	       name, FRAMES, n, unit, d.p50, unit, d.p90, unit, d.p99, unit,
	       d.max, unit, target, d.p50 <= target ? "MET" : "MISSED",
	       bench_load_others(l));
}

int main(int argc, char **argv)
{
	size_t batches = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000;
	struct rotor_config cfg;
	struct region reg;
	struct rotor *r;
	struct bench_load l;
	char err[512];
	uint64_t f[FRAMES], sink = 0;
	uint64_t *stacks;
	double *v;
	size_t nv;

	if (batches < 10)
		batches = 10;
	bench_pin(0);
	if (!region_create(&reg, 64, CTP_HX_FREELIST, err, sizeof(err)))
		bench_die("region_create: %s", err);
	rotor_config_defaults(&cfg);
	cfg.max_traces = TRACES;
	cfg.pool_frames = TRACES * FRAMES;
	r = rotor_create(reg.dir, reg.hdr, &cfg, err, sizeof(err));
	if (!r)
		bench_die("rotor_create: %s", err);
	bench_probe_env(reg.shm_path, reg.sock_path, reg.stations);
	bench_probe_attach();
	v = malloc((batches + 1000) * sizeof(*v));
	stacks = malloc((size_t)TRACES * FRAMES * sizeof(*stacks));
	if (!v || !stacks)
		bench_die("out of memory");
	for (size_t k = 0; k < TRACES; k++)
		make_stack(stacks + k * FRAMES, k + 1);

	/* ---- put_existing ---- */
	make_stack(f, 0xabcdef);
	if (corotop_calltrace_put(f, FRAMES, 1) <= COROTOP_CALLTRACE_DROPPED)
		bench_die("put failed: no calltrace region attached?");
	for (int i = 0; i < 100000; i++) /* warm up */
		sink += corotop_calltrace_put(f, FRAMES, 1);
	bench_load_start(&l);
	for (size_t b = 0; b < batches; b++) {
		uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);

		for (int i = 0; i < BATCH; i++) {
			sink += corotop_calltrace_put(f, FRAMES, 1);
			BENCH_CLOBBER();
		}
		v[b] = (double)(clock_now_ns(CLOCK_MONOTONIC) - t0) / BATCH;
	}
	report("put_existing", v, batches, 150, &l, "ns");

	/* ---- put_new: 60 batches per table fill, rotate in between ---- */
	nv = 0;
	bench_load_start(&l);
	for (int fill = 0; fill < 5; fill++) {
		rotor_rotate(r, NULL, 0); /* a fresh, empty ACTIVE */
		for (size_t b = 0; b < 60; b++) {
			uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);

			for (int i = 0; i < BATCH; i++) {
				sink += corotop_calltrace_put(
					stacks + (b * BATCH + i) * FRAMES,
					FRAMES, 1);
				BENCH_CLOBBER();
			}
			v[nv++] = (double)(clock_now_ns(CLOCK_MONOTONIC) - t0) /
				  BATCH;
		}
	}
	report("put_new", v, nv, 500, &l, "ns");

	/* ---- rotate_65k ---- */
	nv = 0;
	bench_load_start(&l);
	for (int rep = 0; rep < 12; rep++) {
		uint64_t t0;
		size_t got;

		rotor_rotate(r, NULL, 0);
		rotor_rotate(r, NULL, 0);
		for (size_t k = 0; k < TRACES; k++)
			if (corotop_calltrace_put(stacks + k * FRAMES, FRAMES,
						  1) ==
			    COROTOP_CALLTRACE_DROPPED)
				bench_die("put dropped while filling (%zu)", k);
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		rotor_rotate(r, NULL, 0);
		v[nv++] = (double)(clock_now_ns(CLOCK_MONOTONIC) - t0) / 1e6;
		got = rotor_traces(r)->n;
		if (got != TRACES)
			bench_die("collected %zu traces, wanted %d", got,
				  TRACES);
	}
	report("rotate_65k", v, nv, 5, &l, "ms");

	if (sink == 42)
		printf("\n");
	corotop_probe_shutdown();
	rotor_destroy(r);
	region_finish(&reg);
	free(v);
	free(stacks);
	return 0;
}
