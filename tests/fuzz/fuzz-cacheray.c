/*
 * fuzz-cacheray: the Cacheray reader against arbitrary bytes, fed in
 * arbitrary chunks -- what a corrupt file, a truncated FIFO or something
 * that is not a Cacheray trace at all looks like.
 *
 * Input byte 0 picks the mode (a multiple of 4: raw), byte 1 seeds the
 * chunk sizes.  Mode "raw" feeds the rest as it is (mostly an early
 * "unknown record type").  Mode "built" reads the rest 4 bytes at a time as
 * instructions for a trace writer -- accesses with any flags in a small
 * address space and a few thread ids, RTTA adds (sometimes with element
 * size 0, a wrapping region, a bad name length) and removes, a rare raw
 * byte -- so random inputs reach the map, the caps and the reports, not
 * only the first record.
 *
 * Every chunk is fed from a copy of exactly its size (a read past it is a
 * sanitizer error).  The reader runs with small caps.  It must not crash or
 * leak, and:
 *   - it consumed no more than it was given, all of it (but a pending last
 *     record) unless it stopped on an error;
 *   - every count stays within its cap (memory bounded);
 *   - feeding in random chunks gives the same report, byte for byte, as
 *     feeding everything at once, the error offset included.
 *
 * Built as a libFuzzer target with clang (-Dfuzz=true) and, always, with
 * tests/fuzz/driver.c, which replays a seeded pseudo-random corpus.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cacheray/cacheray.h"
#include "ui/batch/batch_cacheray.h"

#define FUZZ_TRACE_MAX (1u << 16)

static const struct cacheray_config fuzz_cfg = {
	.max_lines = 64,
	.max_regions = 16,
	.max_threads = 4,
	.max_types = 8,
	.max_member_offsets = 64,
	.max_name_bytes = 64,
};

struct fuzz_out {
	uint8_t b[FUZZ_TRACE_MAX];
	size_t n;
};

static void fuzz_put(struct fuzz_out *o, const void *p, size_t n)
{
	if (n <= sizeof(o->b) - o->n) {
		memcpy(&o->b[o->n], p, n);
		o->n += n;
	}
}

static void fuzz_build(struct fuzz_out *o, const uint8_t *d, size_t n)
{
	static const char *const names[] = {"int", "struct s", "", "long"};

	for (size_t i = 0; i + 4 <= n; i += 4) {
		const uint8_t g0 = d[i], g1 = d[i + 1], g2 = d[i + 2],
			      g3 = d[i + 3];
		uint64_t addr = 0x1000 + ((uint64_t)g1 << 2 | (g2 & 3));
		uint64_t tid = g3 % 6;
		uint32_t es = g1 ? 1 + g1 % 24 : 0, cnt = g2 % 9, len;
		uint8_t t = (uint8_t)((g0 & 1) | (g0 & 0xc0)), sz = g2 % 17;

		if (g0 == 0x3f) {
			fuzz_put(o, &g1, 1); /* raw: often corrupt */
			continue;
		}
		switch (g0 % 8) {
		case 0:
		case 1:
		case 2:
		case 3:
		case 4:
		case 7:
			fuzz_put(o, &t, 1);
			fuzz_put(o, &addr, 8);
			fuzz_put(o, &sz, 1);
			fuzz_put(o, &tid, 8);
			break;
		case 5:
			t = CACHERAY_EVENT_RTTA_ADD;
			if (g3 == 0xff)
				addr = UINT64_MAX - g1; /* may wrap */
			len = (uint32_t)strlen(names[g3 % 4]);
			fuzz_put(o, &t, 1);
			fuzz_put(o, &addr, 8);
			fuzz_put(o, &tid, 8);
			fuzz_put(o, &es, 4);
			fuzz_put(o, &cnt, 4);
			if (g3 == 0xfe)
				len = CACHERAY_NAME_MAX + g1;
			fuzz_put(o, &len, 4);
			fuzz_put(o, names[g3 % 4], strlen(names[g3 % 4]));
			break;
		default:
			t = CACHERAY_EVENT_RTTA_REMOVE;
			fuzz_put(o, &t, 1);
			fuzz_put(o, &addr, 8);
			fuzz_put(o, &tid, 8);
			break;
		}
	}
}

static char *fuzz_report(struct cacheray *c, size_t fed)
{
	struct cacheray_totals t;
	char *s = NULL;
	size_t len = 0;
	FILE *f;
	uint64_t off = 0;
	const char *err = cacheray_error(c, &off);

	cacheray_totals(c, &t);
	if (t.bytes_read + cacheray_pending(c) > fed ||
	    (!err && t.bytes_read + cacheray_pending(c) != fed) ||
	    (err && off != t.bytes_read) ||
	    cacheray_pending(c) > CACHERAY_RECORD_MAX)
		abort();
	if (t.lines > fuzz_cfg.max_lines ||
	    t.rtta_live > fuzz_cfg.max_regions ||
	    cacheray_nthreads(c) > fuzz_cfg.max_threads ||
	    cacheray_ntypes(c) > fuzz_cfg.max_types ||
	    t.reads + t.writes != t.accesses)
		abort();
	f = open_memstream(&s, &len);
	if (!f)
		abort();
	batch_cacheray_print_json(f, c, "fuzz");
	batch_cacheray_print_text(f, c, "fuzz");
	fclose(f);
	return s;
}

/* Feed from a copy of exactly n bytes, so that a sanitizer sees any read
 * past the chunk. */
static bool fuzz_feed(struct cacheray *c, const uint8_t *b, size_t n)
{
	uint8_t *copy = malloc(n ? n : 1);
	bool ok;

	if (!copy)
		abort();
	memcpy(copy, b, n);
	ok = cacheray_feed(c, copy, n);
	free(copy);
	return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fuzz_out o;
	struct cacheray *whole, *chunked;
	uint64_t rng;
	char *a, *b;

	if (size < 2)
		return 0;
	o.n = 0;
	if (data[0] % 4)
		fuzz_build(&o, data + 2, size - 2);
	else
		fuzz_put(&o, data + 2, size - 2);
	rng = data[1] * 0x9e3779b97f4a7c15ull | 1;

	whole = cacheray_create(&fuzz_cfg);
	chunked = cacheray_create(&fuzz_cfg);
	if (!whole || !chunked)
		abort();
	fuzz_feed(whole, o.b, o.n);
	for (size_t pos = 0; pos < o.n;) {
		size_t k;

		rng ^= rng >> 12;
		rng ^= rng << 25;
		rng ^= rng >> 27;
		k = 1 + (rng * 2685821657736338717ull >> 33) % 48;
		if (k > o.n - pos)
			k = o.n - pos;
		if (!fuzz_feed(chunked, o.b + pos, k))
			break;
		pos += k;
	}
	a = fuzz_report(whole, o.n);
	b = fuzz_report(chunked, o.n);
	if (strcmp(a, b))
		abort();
	free(a);
	free(b);
	cacheray_destroy(whole);
	cacheray_destroy(chunked);
	return 0;
}
