/*
 * cacheray: how fast `corotop --cacheray FILE -b` analyzes a Cacheray
 * trace, in records per second (the target is >= 50 M/s from a file).
 *
 *   cacheray [MRECORDS] [RUNS]     (defaults: 100 M records, 3 runs)
 *
 * A synthetic trace of MRECORDS million records is written to /tmp (18
 * bytes per access; deleted at the end), with the locality of a real
 * program: 8 long-lived arrays of structs of different sizes (4 B to
 * 256 B elements, 40 k lines in all) swept element by element by 4
 * threads in bursts, random accesses into a hot subset, stack (untyped)
 * traffic, 1,024 small heap objects that are freed and reallocated with
 * changing types (RTTA remove + add every ~16 bursts), 1 % atomic
 * read-modify-write pairs on a shared counter array (the false-sharing
 * suspects), 0.5 % unaligned accesses, 30 % writes.
 *
 * Cases:
 *   file     batch_cacheray_run on the file, text report to /dev/null:
 *            open, read(2) in 256 KiB chunks from the page cache, analyze,
 *            select and print -- what the user runs.
 *   memory   the same trace fed from memory (mmap), no report: the
 *            reader alone.
 *   random   10 M accesses uniformly spread over a 32 MiB array (512 k
 *            lines, every line lookup a cache miss): the worst case.
 *
 * CACHERAY_BENCH_KEEP=1 in the environment keeps both trace files (for
 * profiling); their names are printed.
 *
 * Each result line carries others_cores (CPU used by other processes
 * meanwhile): the machine is shared, numbers well above 0.05 are disturbed.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "cacheray/cacheray.h"
#include "ui/batch/batch_cacheray.h"

#define GEN_BUF (1u << 20)

struct gen {
	uint8_t buf[GEN_BUF];
	size_t n;
	int fd;
	uint64_t rng, records, bytes;
};

static uint64_t gen_rnd(struct gen *g)
{
	g->rng ^= g->rng >> 12;
	g->rng ^= g->rng << 25;
	g->rng ^= g->rng >> 27;
	return g->rng * 2685821657736338717ull;
}

static void gen_flush(struct gen *g)
{
	size_t off = 0;

	while (off < g->n) {
		ssize_t w = write(g->fd, g->buf + off, g->n - off);

		if (w < 0)
			bench_die("write trace: %s", strerror(errno));
		off += (size_t)w;
	}
	g->bytes += g->n;
	g->n = 0;
}

static void gen_put(struct gen *g, const void *p, size_t n)
{
	if (g->n + n > GEN_BUF)
		gen_flush(g);
	memcpy(g->buf + g->n, p, n);
	g->n += n;
}

static void gen_access(struct gen *g, uint8_t type, uint64_t addr, uint8_t size,
		       uint64_t tid)
{
	uint8_t r[CACHERAY_ACCESS_SIZE];

	r[0] = type;
	memcpy(r + 1, &addr, 8);
	r[9] = size;
	memcpy(r + 10, &tid, 8);
	gen_put(g, r, sizeof(r));
	g->records++;
}

static void gen_add(struct gen *g, uint64_t addr, uint32_t elemsize,
		    uint32_t count, const char *name)
{
	uint8_t r[CACHERAY_ADD_FIXED];
	uint32_t len = (uint32_t)strlen(name);
	uint64_t tid = 0;

	r[0] = CACHERAY_EVENT_RTTA_ADD;
	memcpy(r + 1, &addr, 8);
	memcpy(r + 9, &tid, 8);
	memcpy(r + 17, &elemsize, 4);
	memcpy(r + 21, &count, 4);
	memcpy(r + 25, &len, 4);
	gen_put(g, r, sizeof(r));
	gen_put(g, name, len);
	g->records++;
}

static void gen_remove(struct gen *g, uint64_t addr)
{
	uint8_t r[CACHERAY_REMOVE_SIZE];
	uint64_t tid = 0;

	r[0] = CACHERAY_EVENT_RTTA_REMOVE;
	memcpy(r + 1, &addr, 8);
	memcpy(r + 9, &tid, 8);
	gen_put(g, r, sizeof(r));
	g->records++;
}

static const struct {
	uint64_t base;
	uint32_t elemsize, count;
	const char *name;
} arrays[8] = {
	{0x555500010000ull, 16, 20000, "struct vec2"},
	{0x555500100000ull, 24, 10000, "struct item"},
	{0x555500200000ull, 40, 8000, "struct conn"},
	{0x555500300000ull, 64, 6000, "struct entry"},
	{0x555500400000ull, 100, 4000, "struct request"},
	{0x555500500000ull, 4, 100000, "int"},
	{0x555500600000ull, 256, 1000, "struct session"},
	{0x555500700000ull, 8, 64, "atomic_long"}, /* shared counters */
};

#define OBJS 1024
#define OBJ_BASE 0x555600000000ull
static const char *const obj_types[3] = {"struct node", "struct msg", "char"};
static const uint32_t obj_sizes[3] = {48, 32, 1};

static void gen_burst(struct gen *g, uint64_t cursor[5][8], uint8_t *objt)
{
	uint64_t tid = 1 + gen_rnd(g) % 4, r = gen_rnd(g);
	unsigned len = 16 + (unsigned)(r % 112),
		 kind = (unsigned)(r >> 8) % 100;
	unsigned a = (unsigned)(r >> 16) % 7;

	for (unsigned i = 0; i < len; i++) {
		uint64_t x = gen_rnd(g), addr;
		uint8_t w = (x % 10) < 3, sz = 8;

		if (kind < 60) {
			/* Sweep: two members of each element in turn. */
			uint64_t e = cursor[tid][a]++ / 2 % arrays[a].count;

			addr = arrays[a].base + e * arrays[a].elemsize;
			if (cursor[tid][a] & 1)
				addr += arrays[a].elemsize / 2 & ~3u;
			sz = arrays[a].elemsize < 8 ? 4 : 8;
		} else if (kind < 80) {
			/* Hot random lookups in the first 2,048 items. */
			addr = arrays[1].base + (x >> 8) % 2048 * 24 +
			       (x >> 40) % 3 * 8;
		} else if (kind < 90) {
			/* The thread's stack: untyped. */
			addr = 0x7ffc00000000ull - tid * 0x100000 -
			       (x >> 8) % 512 * 8;
		} else {
			unsigned o = (unsigned)(x >> 8) % OBJS;

			addr = OBJ_BASE + o * 64ull +
			       (x >> 20) % obj_sizes[objt[o]];
			sz = objt[o] == 2 ? 1 : 4;
		}
		if (x % 1000 < 10) {
			/* A read-modify-write atomic on a shared counter. */
			uint64_t c = arrays[7].base + (x >> 30) % 64 * 8;

			gen_access(g,
				   CACHERAY_EVENT_READ |
					   CACHERAY_EVENT_MASK_ATOMIC,
				   c, 8, tid);
			gen_access(g,
				   CACHERAY_EVENT_WRITE |
					   CACHERAY_EVENT_MASK_ATOMIC,
				   c, 8, tid);
			continue;
		}
		if (x % 1000 >= 995)
			gen_access(g, w | CACHERAY_EVENT_MASK_UNALIGNED,
				   addr + 3, sz, tid);
		else
			gen_access(g, w, addr, sz, tid);
	}
	if (gen_rnd(g) % 16 == 0) {
		/* realloc of a small object, maybe to another type. */
		unsigned o = (unsigned)(gen_rnd(g) % OBJS);
		uint8_t t = (uint8_t)(gen_rnd(g) % 3);

		gen_remove(g, OBJ_BASE + o * 64ull);
		gen_add(g, OBJ_BASE + o * 64ull, obj_sizes[t], t == 2 ? 40 : 1,
			obj_types[t]);
		objt[o] = t;
	}
}

static uint64_t gen_trace(const char *path, uint64_t records, bool random)
{
	static struct gen g;
	static uint64_t cursor[5][8];
	static uint8_t objt[OBJS];

	g.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (g.fd < 0)
		bench_die("create %s: %s", path, strerror(errno));
	g.n = 0;
	g.rng = 0x2545f4914f6cdd1dull;
	g.records = g.bytes = 0;
	if (random) {
		gen_add(&g, 0x10000000, 24, (32u << 20) / 24, "struct item");
		while (g.records < records) {
			uint64_t x = gen_rnd(&g);

			gen_access(&g, (x >> 60) < 4,
				   0x10000000 + (x >> 8) % (32u << 20) / 8 * 8,
				   8, 1 + (x >> 40) % 4);
		}
	} else {
		for (unsigned a = 0; a < 8; a++)
			gen_add(&g, arrays[a].base, arrays[a].elemsize,
				arrays[a].count, arrays[a].name);
		for (unsigned o = 0; o < OBJS; o++)
			gen_add(&g, OBJ_BASE + o * 64ull, 48, 1, obj_types[0]);
		while (g.records < records)
			gen_burst(&g, cursor, objt);
	}
	gen_flush(&g);
	close(g.fd);
	return g.records;
}

static void run_file(const char *path, uint64_t records, uint64_t bytes,
		     const char *name)
{
	FILE *null = fopen("/dev/null", "w");
	struct bench_load l;
	char err[512];
	uint64_t t0;
	double s;

	if (!null)
		bench_die("/dev/null: %s", strerror(errno));
	bench_load_start(&l);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	if (batch_cacheray_run(path, false, null, err, sizeof(err)))
		bench_die("batch_cacheray_run: %s", err);
	s = (double)(clock_now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
	fclose(null);
	printf("cacheray %s records=%" PRIu64 " bytes=%" PRIu64
	       " seconds=%.3f mrec_per_s=%.1f mb_per_s=%.0f "
	       "others_cores=%.2f\n",
	       name, records, bytes, s, (double)records / s / 1e6,
	       (double)bytes / s / 1e6, bench_load_others(&l));
	fflush(stdout);
}

static void run_memory(const char *path, uint64_t records, uint64_t bytes)
{
	int fd = open(path, O_RDONLY);
	const uint8_t *m;
	struct cacheray *c;
	struct cacheray_totals t;
	struct bench_load l;
	uint64_t t0;
	double s;

	if (fd < 0)
		bench_die("open %s: %s", path, strerror(errno));
	m = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	if (m == MAP_FAILED)
		bench_die("mmap %s: %s", path, strerror(errno));
	c = cacheray_create(NULL);
	if (!c)
		bench_die("cacheray_create: out of memory");
	bench_load_start(&l);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	for (uint64_t off = 0; off < bytes; off += 1u << 20)
		if (!cacheray_feed(c, m + off,
				   bytes - off < (1u << 20) ? bytes - off
							    : 1u << 20))
			bench_die("%s", cacheray_error(c, NULL));
	s = (double)(clock_now_ns(CLOCK_MONOTONIC) - t0) / 1e9;
	cacheray_totals(c, &t);
	if (t.records != records)
		bench_die("read %" PRIu64 " records of %" PRIu64, t.records,
			  records);
	printf("cacheray memory records=%" PRIu64 " seconds=%.3f "
	       "mrec_per_s=%.1f lines=%" PRIu64
	       " types=%zu live_regions=%" PRIu64 " atomic_rmw=%" PRIu64
	       " others_cores=%.2f\n",
	       records, s, (double)records / s / 1e6, t.lines,
	       cacheray_ntypes(c), t.rtta_live, t.atomic_rmw,
	       bench_load_others(&l));
	fflush(stdout);
	cacheray_destroy(c);
	munmap((void *)m, bytes);
	close(fd);
}

int main(int argc, char **argv)
{
	uint64_t mrec = argc > 1 ? strtoull(argv[1], NULL, 10) : 100;
	unsigned runs = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 3;
	char path[128];
	uint64_t records, t0;
	struct stat st;

	if (!mrec || !runs)
		bench_die("usage: cacheray [MRECORDS] [RUNS]");
	snprintf(path, sizeof(path), "/tmp/corotop-bench-cacheray-%d.bin",
		 (int)getpid());
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	records = gen_trace(path, mrec * 1000000, false);
	if (stat(path, &st))
		bench_die("stat %s: %s", path, strerror(errno));
	printf("cacheray generate records=%" PRIu64
	       " bytes=%lld seconds=%.2f\n",
	       records, (long long)st.st_size,
	       (double)(clock_now_ns(CLOCK_MONOTONIC) - t0) / 1e9);
	fflush(stdout);
	for (unsigned r = 0; r < runs; r++)
		run_file(path, records, (uint64_t)st.st_size, "file");
	run_memory(path, records, (uint64_t)st.st_size);

	if (getenv("CACHERAY_BENCH_KEEP"))
		printf("cacheray kept %s\n", path);
	else
		unlink(path);

	snprintf(path, sizeof(path),
		 "/tmp/corotop-bench-cacheray-%d-random.bin", (int)getpid());
	records = gen_trace(path, 10000000, true);
	if (stat(path, &st))
		bench_die("stat %s: %s", path, strerror(errno));
	run_file(path, records, (uint64_t)st.st_size, "random");
	if (getenv("CACHERAY_BENCH_KEEP"))
		printf("cacheray kept %s\n", path);
	else
		unlink(path);
	return 0;
}
