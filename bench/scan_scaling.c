/*
 * scan_scaling: what one harvest pass costs as the number of allocated
 * stations grows, when only 1% of them changed since the previous pass.
 *
 * No engine, no probe, no threads: the harvester (harvest_init/harvest_scan)
 * runs directly on a region in private memory (aligned_alloc, 1 KiB
 * aligned).  Every station is set up the way a corotop probe leaves it after
 * corotop_coro_open (station extension, generation 1), and an untimed first
 * pass opens them all.  Then, per round, 1% of the stations (a different,
 * evenly spread 1% each round) get one new event written with the probe's
 * seqlock sequence, and the next pass is timed.
 *
 * The writes happen on the harvesting thread, so the changed lines are warm
 * in its cache; in real use they come from another core and cost a little
 * more.  The numbers are therefore a floor for the changed stations and an
 * honest figure for the 99% unchanged ones, which dominate.
 *
 * Usage: scan_scaling [seconds-per-size]   (default 1.0)
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdatomic.h>

#include "engine/ctp/harvest.h"

enum mode {
	MODE_FULL,	    /* harvest_scan: every allocated station */
	MODE_DIRTY_SPREAD,  /* dirty hint, changed stations spread evenly */
	MODE_DIRTY_CLUSTER, /* dirty hint, changed stations contiguous */
};

static const char *const mode_name[] = {"full", "dirty-spread",
					"dirty-cluster"};

static uint64_t delivered;

static void on_event(void *ctx, const struct harvest_event *ev)
{
	(void)ctx;
	(void)ev;
	delivered++;
}

/* One event on station i, as corotop_coro_record writes it (A, B, C),
 * followed by the dirty mark (P) when the region has the hint. */
static void write_event(struct ctp_header *hdr, struct ctp_station *st,
			uint32_t i, uint64_t n, uint64_t ts)
{
	struct ctp_epoch *e = &st[i].slots[n % CTP_SLOTS];

	atomic_store_explicit(&e->seq, 2 * n + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	e->timestamp = ts;
	e->tid = 1;
	e->addr = n;
	e->is_active = (uint8_t)(n & 1);
	atomic_store_explicit(&e->seq, ctp_event_seq(n), memory_order_release);
	if (hdr->ext.flags & CTP_HX_DIRTY) {
		uint32_t bit = i >> hdr->ext.dirty_shift;
		uint64_t m = 1ull << (bit % 64);
		_Atomic uint64_t *w = &hdr->ext.dirty[bit / 64];

		if (!(atomic_load_explicit(w, memory_order_relaxed) & m))
			atomic_fetch_or_explicit(w, m, memory_order_relaxed);
	}
}

/* The engine's dirty pass: collect, barrier (a fence here; the engine uses
 * membarrier when it can, see wake_latency/idle_cpu), scan marked groups. */
static void scan_dirty(struct harvest *h, const struct harvest_sink *sink)
{
	uint64_t marks[CTP_HX_DIRTY_WORDS];

	if (!harvest_dirty_collect(h, marks))
		return;
	atomic_thread_fence(memory_order_seq_cst);
	harvest_scan_marked(h, marks, sink);
}

static void run_size(uint32_t n, enum mode mode, double seconds)
{
	const struct harvest_sink sink = {.event = on_event};
	uint32_t active = n / 100 ? n / 100 : 1;
	uint32_t stride = mode == MODE_DIRTY_CLUSTER ? 1 : n / active;
	size_t cap = 4096, rounds = 0;
	double *ns = malloc(cap * sizeof(*ns));
	uint64_t *next = calloc(n, sizeof(*next));
	struct ctp_header *hdr = aligned_alloc(1024, ctp_region_size(n));
	struct ctp_station *st;
	struct harvest h;
	struct bench_load load;
	uint64_t deadline, bad = 0;

	if (!ns || !next || !hdr)
		bench_die("out of memory for %u stations", n);
	memset(hdr, 0, ctp_region_size(n));
	st = (struct ctp_station *)((char *)hdr + CTP_HEADER_SIZE);
	hdr->magic = CTP_MAGIC;
	hdr->version = CTP_VERSION;
	hdr->max_stations = n;
	hdr->ext.magic = CTP_HX_MAGIC;
	hdr->ext.version = CTP_HX_VERSION;
	hdr->ext.size = sizeof(hdr->ext);
	hdr->ext.flags = CTP_HX_FREELIST;
	if (mode != MODE_FULL) {
		/* Group size as region_create picks it. */
		hdr->ext.flags |= CTP_HX_DIRTY;
		while (((uint64_t)n + (1ull << hdr->ext.dirty_shift) - 1) >>
		       hdr->ext.dirty_shift > CTP_HX_DIRTY_WORDS * 64ull)
			hdr->ext.dirty_shift++;
	}
	for (uint32_t i = 0; i < n; i++) {
		st[i].probe_id = i + 1;
		st[i].birth_ts = 1;
		st[i].ext.magic = CTP_STX_MAGIC;
		st[i].ext.flags = CTP_STX_SEQ_STATION;
		st[i].ext.first_n = 0;
		atomic_store_explicit(&st[i].ext.gen, 1, memory_order_release);
	}
	atomic_store_explicit(&hdr->allocated_count, n, memory_order_release);
	if (!harvest_init(&h, hdr, n, false))
		bench_die("harvest_init failed for %u stations", n);
	harvest_scan(&h, &sink); /* opens every station; not timed */
	harvest_scan(&h, &sink); /* one idle pass to settle caches */

	bench_load_start(&load);
	deadline = clock_now_ns(CLOCK_MONOTONIC) + (uint64_t)(seconds * 1e9);
	while (rounds < 10 ||
	       (clock_now_ns(CLOCK_MONOTONIC) < deadline && rounds < cap)) {
		uint64_t t0, t1, before = delivered;
		/* A different 1% every round. */
		uint32_t off = mode == MODE_DIRTY_CLUSTER
				       ? (uint32_t)((rounds * active) % n)
				       : (uint32_t)(rounds % stride);

		for (uint32_t a = 0; a < active; a++) {
			uint32_t i = (off + a * stride) % n;

			write_event(hdr, st, i, next[i]++, rounds + 1);
		}
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		if (mode == MODE_FULL)
			harvest_scan(&h, &sink);
		else
			scan_dirty(&h, &sink);
		t1 = clock_now_ns(CLOCK_MONOTONIC);
		if (delivered - before != active)
			bad++;
		ns[rounds++] = (double)(t1 - t0);
	}

	struct bench_dist d = bench_dist(ns, rounds);

	printf("scan_scaling %-13s stations=%u active=%u group=%u rounds=%zu "
	       "scan_median_us=%.1f scan_p99_us=%.1f ns_per_station=%.2f "
	       "region_mib=%.1f lost=%llu short_rounds=%llu "
	       "others_cores=%.2f\n",
	       mode_name[mode], n, active,
	       mode == MODE_FULL ? 0u : 1u << hdr->ext.dirty_shift, rounds,
	       d.p50 / 1e3, d.p99 / 1e3, d.p50 / n,
	       (double)ctp_region_size(n) / (1 << 20),
	       (unsigned long long)h.count.lost, (unsigned long long)bad,
	       bench_load_others(&load));
	fflush(stdout);
	harvest_finish(&h);
	free(hdr);
	free(next);
	free(ns);
}

int main(int argc, char **argv)
{
	static const uint32_t sizes[] = {1024, 16384, 65536, 262144};
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;

	if (seconds <= 0)
		bench_die("usage: scan_scaling [seconds-per-case]");
	for (int m = MODE_FULL; m <= MODE_DIRTY_CLUSTER; m++)
		for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++)
			run_size(sizes[i], (enum mode)m, seconds);
	return 0;
}
