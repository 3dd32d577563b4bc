/*
 * symbolize: what the symbolizer costs, on this very process.
 *
 * 10,000 unique addresses, evenly spread over the text of libc and of this
 * program (5,000 each), are symbolized in our own pid:
 *
 *   cold      a fresh symbolizer each run: symbolizer_create (one read of
 *             /proc/self/maps) plus the 10,000 lookups, during which every
 *             module's ELF file is opened, its symbols indexed and its line
 *             tables decoded.  The target is <= 200 ms for the total.
 *   uncached  one symbolizer kept across runs, each run with 10,000
 *             addresses it has not seen: the lookup cache is cold, libdw's
 *             state is warm.
 *   warm      the last run's addresses again: every lookup is a cache hit;
 *             ns per lookup.
 *
 * Usage: symbolize [runs] (default 21).  Files come from the page cache
 * after the first run, so "cold" is cold for the symbolizer, not the disk.
 */
#include "bench.h"

#include <inttypes.h>

#include "engine/symbols/symbolizer.h"

#define SYMB_PER_REGION 5000
#define SYMB_N (2 * SYMB_PER_REGION)
#define SYMB_WARM_ROUNDS 20

struct symb_region {
	uint64_t lo, hi;
};

/* The first executable mapping whose path ends in `suffix`. */
static struct symb_region symb_text(const char *suffix)
{
	struct symb_region r = {0, 0};
	size_t sl = strlen(suffix);
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		bench_die("cannot read /proc/self/maps");
	while (fgets(line, sizeof(line), f)) {
		size_t n = strcspn(line, "\n");
		unsigned long long lo, hi;
		char perms[8];

		line[n] = '\0';
		if (n < sl || strcmp(line + n - sl, suffix) ||
		    sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) != 3 ||
		    perms[2] != 'x')
			continue;
		r.lo = lo;
		r.hi = hi;
		break;
	}
	fclose(f);
	if (r.hi - r.lo < SYMB_PER_REGION)
		bench_die("no executable mapping of %s", suffix);
	return r;
}

/* Run `shift` of the evenly spaced addresses: unique within a run and
 * across runs while shift is below the spacing (>= 1 byte). */
static void symb_addresses(const struct symb_region *reg, uint64_t shift,
			   uint64_t *out)
{
	for (int k = 0; k < 2; k++) {
		uint64_t span = reg[k].hi - reg[k].lo;
		uint64_t step = span / SYMB_PER_REGION;

		for (uint64_t i = 0; i < SYMB_PER_REGION; i++)
			out[k * SYMB_PER_REGION + i] =
				reg[k].lo + i * step + shift % step;
	}
}

static struct symbolizer *symb_create(void)
{
	char err[256];
	struct symbolizer *s = symbolizer_create(getpid(), err, sizeof(err));

	if (!s)
		bench_die("symbolizer_create: %s", err);
	return s;
}

/* Look every address up; count the named ones and those with a line. */
static void symb_lookup_all(struct symbolizer *s, const uint64_t *a, int *named,
			    int *lined)
{
	*named = *lined = 0;
	for (int i = 0; i < SYMB_N; i++) {
		struct symbol y;

		if (symbolizer_lookup(s, a[i], &y) && y.function)
			(*named)++;
		if (y.file)
			(*lined)++;
	}
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 21;
	static uint64_t addr[SYMB_N];
	struct symb_region reg[2];
	double *total, *create, *uncached;
	struct symbolizer *kept;
	struct bench_load load;
	struct bench_dist d;
	char self[4096];
	ssize_t n;
	int named = 0, lined = 0;

	if (runs < 1 || runs > 10000)
		bench_die("usage: symbolize [runs 1..10000]");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		bench_die("readlink /proc/self/exe failed");
	self[n] = '\0';
	reg[0] = symb_text("/libc.so.6");
	reg[1] = symb_text(self);
	total = calloc((size_t)runs, sizeof(*total));
	create = calloc((size_t)runs, sizeof(*create));
	uncached = calloc((size_t)runs, sizeof(*uncached));
	if (!total || !create || !uncached)
		bench_die("out of memory");
	printf("symbolize setup addresses=%d libc_text=%" PRIu64
	       "KiB self_text=%" PRIu64 "KiB runs=%d\n",
	       SYMB_N, (reg[0].hi - reg[0].lo) >> 10,
	       (reg[1].hi - reg[1].lo) >> 10, runs);

	bench_load_start(&load);
	symb_addresses(reg, 0, addr);
	for (int r = 0; r < runs; r++) {
		uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC), t1, t2;
		struct symbolizer *s = symb_create();

		t1 = clock_now_ns(CLOCK_MONOTONIC);
		symb_lookup_all(s, addr, &named, &lined);
		t2 = clock_now_ns(CLOCK_MONOTONIC);
		symbolizer_destroy(s);
		total[r] = (double)(t2 - t0) / 1e6;
		create[r] = (double)(t1 - t0) / 1e6;
	}
	d = bench_dist(total, (size_t)runs);
	printf("symbolize cold total_ms_p50=%.1f total_ms_p99=%.1f "
	       "total_ms_min=%.1f target_ms=200 %s named=%d with_line=%d "
	       "others_cores=%.2f\n",
	       d.p50, d.p99, d.min, d.p99 <= 200 ? "met" : "MISSED", named,
	       lined, bench_load_others(&load));
	d = bench_dist(create, (size_t)runs);
	printf("symbolize cold create_ms_p50=%.2f create_ms_p99=%.2f\n", d.p50,
	       d.p99);

	bench_load_start(&load);
	kept = symb_create();
	symb_lookup_all(kept, addr, &named, &lined); /* warm libdw up */
	for (int r = 0; r < runs; r++) {
		uint64_t t0;

		symb_addresses(reg, (uint64_t)r + 1, addr);
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		symb_lookup_all(kept, addr, &named, &lined);
		uncached[r] =
			(double)(clock_now_ns(CLOCK_MONOTONIC) - t0) / 1e6;
	}
	d = bench_dist(uncached, (size_t)runs);
	printf("symbolize uncached total_ms_p50=%.1f total_ms_p99=%.1f "
	       "us_per_lookup_p50=%.2f others_cores=%.2f\n",
	       d.p50, d.p99, d.p50 * 1e3 / SYMB_N, bench_load_others(&load));

	/* The last run's addresses are all in the cache (10,000 < its
	 * capacity), so every lookup below is a hit. */
	bench_load_start(&load);
	{
		struct symbolizer_stats st0, st1;
		double per[SYMB_WARM_ROUNDS];

		symbolizer_stats(kept, &st0);
		for (int r = 0; r < SYMB_WARM_ROUNDS; r++) {
			uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);

			symb_lookup_all(kept, addr, &named, &lined);
			per[r] = (double)(clock_now_ns(CLOCK_MONOTONIC) - t0) /
				 SYMB_N;
		}
		symbolizer_stats(kept, &st1);
		d = bench_dist(per, SYMB_WARM_ROUNDS);
		printf("symbolize warm ns_per_lookup_p50=%.1f "
		       "ns_per_lookup_p99=%.1f hit_ratio=%.3f "
		       "others_cores=%.2f\n",
		       d.p50, d.p99,
		       (double)(st1.hits - st0.hits) /
			       (double)(st1.lookups - st0.lookups),
		       bench_load_others(&load));
	}
	symbolizer_destroy(kept);
	free(total);
	free(create);
	free(uncached);
	return 0;
}
