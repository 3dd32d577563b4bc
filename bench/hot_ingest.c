/*
 * hot_ingest: what one CallTrace rotation costs the engine's harvest
 * thread, from the swap to the hot-stacks aggregate (engine/stacks/rotation.c
 * does exactly these calls; the tag -> coroutine resolution between them
 * is one array pass and is left out).
 *
 *   rotate_empty         rotor_rotate with nothing put: what an idle target
 *                        pays every ct_idle_rotate_ms (10 s).
 *   rotate_65k_tagged    rotor_rotate with 65,536 sampled traces in ACTIVE
 *                        (4,096 stacks of 15 frames + a tag, x 16 coroutines).
 *   ingest_65k_new       hotstacks_ingest + parked_update of that union
 *                        into an empty aggregate: 4,096 stacks and 65,536
 *                        (stack, coroutine) pairs created.
 *   ingest_65k_steady    the same union again: every stack and pair known.
 *   ingest_65k_evicting  65,536 distinct untagged stacks into an aggregate
 *                        already full (16,384 stacks): the worst case, each
 *                        batch of 2,048 new stacks evicts the lightest
 *                        2,048 first.
 *
 *   hot_ingest [REPS]
 *
 * Default engine configuration (65,536 traces per table, hotstacks
 * defaults).  One thread, pinned to CPU 0; puts go through ctwriter on the
 * real mapping, as the probe's do.
 */
#include "bench.h"

#include <sys/syscall.h>

#include "wire/ctwriter.h"
#include "engine/calltrace/hotstacks.h"
#include "engine/calltrace/parked.h"
#include "engine/ctp/region.h"
#include "engine/calltrace/rotor.h"

#define FRAMES 15 /* + the tag: 16, the pool's average */
#define TRACES 65536
#define STACKS 4096
#define COROS 16

static void make_stack(uint64_t *f, uint64_t seed)
{
	for (unsigned i = 0; i < FRAMES; i++)
		f[i] = (ct_mix64(seed * 7919 + i) | 1) & 0x7fffffffffffull;
}

static void report(const char *name, double *v, size_t n,
		   const struct bench_load *l)
{
	struct bench_dist d = bench_dist(v, n);

	printf("hot_ingest %s samples=%zu p50_ms=%.2f p90_ms=%.2f "
	       "max_ms=%.2f others_cores=%.2f\n",
	       name, n, d.p50, d.p90, d.max, bench_load_others(l));
}

/* ACTIVE gets STACKS x COROS tagged traces (or TRACES untagged ones). */
static void fill(const struct ct_view *v, uint64_t me, bool tagged,
		 uint64_t seed)
{
	uint64_t f[FRAMES + 1];

	for (uint64_t k = 0; k < TRACES; k++) {
		uint64_t s = tagged ? k % STACKS : seed + k;

		make_stack(f, s + 1);
		f[FRAMES] = CT_TAG_CORO | (k / STACKS);
		if (ct_writer_put(v, me, f, tagged ? FRAMES + 1 : FRAMES, 1) ==
		    CT_DROPPED_TRACE_ID)
			bench_die("put %llu dropped", (unsigned long long)k);
	}
}

static double ms_since(uint64_t t0)
{
	return (double)(clock_now_ns(CLOCK_MONOTONIC) - t0) / 1e6;
}

int main(int argc, char **argv)
{
	size_t reps = argc > 1 ? strtoul(argv[1], NULL, 10) : 12;
	struct hotstacks_config hc;
	struct rotor_config rc;
	struct region reg;
	struct rotor *r;
	struct hotstacks *h;
	struct parked *p;
	struct bench_load l;
	struct ct_view view;
	uint64_t *owner, me, t0, now = 1000000000ull;
	double *v[5];
	char err[512];

	if (reps < 3)
		reps = 3;
	bench_pin(0);
	if (!region_create(&reg, 64, CTP_HX_FREELIST, err, sizeof(err)))
		bench_die("region_create: %s", err);
	rotor_config_defaults(&rc);
	r = rotor_create(reg.dir, reg.hdr, &rc, err, sizeof(err));
	if (!r || !ct_view_init(&view, rotor_base(r), rotor_size(r)))
		bench_die("rotor_create: %s", err);
	hotstacks_config_defaults(&hc);
	h = hotstacks_create(&hc);
	p = parked_create(hc.max_stacks, NULL, NULL);
	owner = malloc(TRACES * sizeof(*owner));
	for (int i = 0; i < 5; i++)
		v[i] = malloc(reps * sizeof(*v[i]));
	if (!h || !p || !owner || !v[4])
		bench_die("out of memory");
	me = ((uint64_t)getpid() << 32) | (uint64_t)syscall(SYS_gettid);

	bench_load_start(&l);
	for (size_t i = 0; i < reps; i++) {
		rotor_rotate(r, NULL, 0);
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		rotor_rotate(r, NULL, 0);
		v[0][i] = ms_since(t0);
	}
	report("rotate_empty", v[0], reps, &l);

	bench_load_start(&l);
	for (size_t i = 0; i < reps; i++) {
		const struct traceset *u;

		hotstacks_zero(h, now);
		rotor_rotate(r, NULL, 0);
		fill(&view, me, true, 0);
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		rotor_rotate(r, NULL, 0);
		v[1][i] = ms_since(t0);
		u = rotor_traces(r);
		if (u->n != TRACES)
			bench_die("collected %zu traces", u->n);
		/* The engine's resolution: tag -> model id. */
		for (size_t k = 0; k < u->n; k++)
			owner[k] =
				CT_TAG_CORO_INDEX(
					u->e[k].frames[u->e[k].nframes - 1]) +
				1;
		now += 1000000000ull;
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		hotstacks_ingest(h, u, owner, now);
		parked_update(p, u, NULL, NULL, 0);
		v[2][i] = ms_since(t0);
		now += 1000000000ull;
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		hotstacks_ingest(h, u, owner, now);
		parked_update(p, u, NULL, NULL, 0);
		v[3][i] = ms_since(t0);
	}
	report("rotate_65k_tagged", v[1], reps, &l);
	report("ingest_65k_new", v[2], reps, &l);
	report("ingest_65k_steady", v[3], reps, &l);

	bench_load_start(&l);
	for (size_t i = 0; i < reps; i++) {
		rotor_rotate(r, NULL, 0);
		fill(&view, me, false, (uint64_t)(i + 1) * TRACES * 4);
		rotor_rotate(r, NULL, 0);
		now += 1000000000ull;
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		hotstacks_ingest(h, rotor_traces(r), NULL, now);
		v[4][i] = ms_since(t0);
	}
	report("ingest_65k_evicting", v[4], reps, &l);
	{
		struct hotstacks_stats st;

		hotstacks_stats(h, &st);
		printf("hot_ingest totals stacks=%llu pairs=%llu "
		       "evicted=%llu\n",
		       (unsigned long long)st.stacks,
		       (unsigned long long)st.coro_entries,
		       (unsigned long long)st.evicted);
	}
	hotstacks_destroy(h);
	parked_destroy(p);
	rotor_destroy(r);
	region_finish(&reg);
	free(owner);
	for (int i = 0; i < 5; i++)
		free(v[i]);
	return 0;
}
