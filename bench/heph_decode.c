/*
 * heph_decode: reading a Heph trace as corotop's replay does -- the index
 * built on open, a full decode, seeks and the first screen.
 *
 * The trace is made here, like corotop's recordings: an epoch, then N
 * events of 4 OS threads (streams) and 1,000 coroutines (substreams), each
 * `running` or `suspended`, with attributes addr (u64), seq (u64), symbol
 * (a ~40-byte string) and, on every fourth, a 16-frame `stack` (u64 array);
 * written as intervals end, so start times are not in file order and the
 * index has to sort them.  It goes to a file in $TMPDIR (or /tmp), removed
 * at the end; the reads below find it in the page cache (a warm file, as
 * right after recording).
 *
 *   open       heph_file_open: map, walk and check every packet, index,
 *              sort by start (REPS times; best and median);
 *   decode     heph_file_event of every event in file order, every attribute
 *              walked with the accessors (u64 values summed, strings
 *              touched): events/s;
 *   seek       heph_file_seek to random times, then decode the event found;
 *   first      open + seek to the start + decode the first 200 events by
 *              start time: what stands between `corotop --replay FILE` and
 *              its first screen (the UI's own drawing not included).
 *
 *   heph_decode [N [REPS [GAP]]]
 *
 * Defaults: 1,000,000 events, 3 reps, events ending GAP = 500 ns apart on
 * average (10 M events then span 5 s; a GAP of 10000 makes them span 100 s,
 * past the 2^36 ns a single round of the index's sort covers).
 *
 * Targets (issue 6): decoding >= 5 M events/s; a 10-million-event file
 * shows its first screen in <= 1 s (run with N = 10000000).
 */
#include "bench.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "engine/heph/hephfile.h"
#include "common/hash.h"

#define STREAMS 4u
#define COROS 1000u
#define SEEKS 100000u
#define FIRST_SCREEN 200u
#define MAX_REPS 20u

static uint64_t rng = HASH_GOLDEN;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* One event like corotop's recorder writes. */
static bool encode_one(struct heph_enc *e, uint64_t i, uint64_t t,
		       const char *symbol)
{
	uint32_t stream = (uint32_t)(i % STREAMS);
	uint64_t sub = 1 + (i * 7919) % COROS;
	uint64_t start = t - next_rand() % 200000; /* up to 200 us long */
	uint64_t stack[16];

	if (!heph_enc_event_begin(e, stream, (uint32_t)(i / STREAMS), sub,
				  start, t, i & 1 ? "suspended" : "running"))
		return false;
	heph_enc_u64(e, "addr", 0x7f0000001000ull + sub * 4096);
	heph_enc_u64(e, "seq", i);
	heph_enc_str(e, "symbol", symbol);
	if (i % 4 == 0) {
		for (unsigned k = 0; k < 16; k++)
			stack[k] = 0x555555554000ull + (sub * 31 + k) * 0x40;
		heph_enc_u64_array(e, "stack", stack, 16);
	}
	return heph_enc_event_end(e) > 0;
}

static void write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k <= 0)
			bench_die("write of the trace failed");
		p += k;
		n -= (size_t)k;
	}
}

static uint64_t make_trace(const char *path, uint64_t n, uint64_t gap)
{
	static uint8_t buf[1 << 20];
	static const char symbol[] = "http_server::connection::handle_request";
	struct heph_enc e;
	uint64_t t = 1000000000ull, bytes = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		bench_die("cannot create %s", path);
	heph_enc_init(&e, buf, sizeof(buf));
	heph_enc_epoch(&e, 1610113734118010000ull);
	for (uint64_t i = 0; i < n; i++) {
		t += 1 + next_rand() % (2 * gap);
		while (!encode_one(&e, i, t, symbol)) {
			if (!e.overflow || !e.len)
				bench_die("event %llu does not encode",
					  (unsigned long long)i);
			write_all(fd, buf, e.len);
			bytes += e.len;
			heph_enc_init(&e, buf, sizeof(buf));
		}
	}
	write_all(fd, buf, e.len);
	bytes += e.len;
	close(fd);
	return bytes;
}

/* Every attribute of event i, walked; returns a checksum. */
static uint64_t decode_one(const struct heph_file *f, size_t i)
{
	struct heph_packet p;
	struct heph_attr a;
	uint32_t pos = 0;
	uint64_t sum = 0;

	if (!heph_file_event(f, i, &p))
		bench_die("event %zu does not decode", i);
	sum += p.start + p.desc_len;
	while (heph_attr_next(&p, &pos, &a)) {
		if ((a.type & ~HEPH_ARRAY) == HEPH_STR) {
			uint16_t len;
			const char *s = heph_attr_str(&a, 0, &len);

			sum += len ? (uint8_t)s[len - 1] : 0;
			continue;
		}
		for (uint16_t k = 0; k < a.count; k++)
			sum += heph_attr_u64(&a, k);
	}
	return sum;
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	unsigned reps = argc > 2 ? (unsigned)atoi(argv[2]) : 3;
	uint64_t gap = argc > 3 ? strtoull(argv[3], NULL, 10) : 500;
	const char *dir = getenv("TMPDIR");
	double open_ms[MAX_REPS], first_ms[MAX_REPS];
	struct bench_load l;
	struct heph_file f;
	struct bench_dist d;
	char path[512], err[256];
	uint64_t t0, bytes, sum = 0;

	if (!n)
		bench_die("N wants a positive count of events");
	if (reps < 1 || reps > MAX_REPS)
		bench_die("REPS wants 1..%u", MAX_REPS);
	snprintf(path, sizeof(path), "%s/corotop-heph-bench-%d.heph",
		 dir && *dir ? dir : "/tmp", (int)getpid());
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	if (!gap)
		bench_die("GAP wants a positive count of ns");
	bytes = make_trace(path, n, gap);
	printf("heph_decode write events=%llu gap_ns=%llu bytes=%llu "
	       "bytes_per_event=%.1f ms=%.0f\n",
	       (unsigned long long)n, (unsigned long long)gap,
	       (unsigned long long)bytes, (double)bytes / (double)n,
	       ms(clock_now_ns(CLOCK_MONOTONIC) - t0));
	fflush(stdout);

	/* open = the index; first = open + seek + the first screen. */
	bench_load_start(&l);
	for (unsigned r = 0; r < reps; r++) {
		uint64_t t1;

		t0 = clock_now_ns(CLOCK_MONOTONIC);
		if (!heph_file_open(&f, path, err, sizeof(err)))
			bench_die("%s", err);
		t1 = clock_now_ns(CLOCK_MONOTONIC);
		for (size_t k = heph_file_seek(&f, f.first_start);
		     k < f.nev && k < FIRST_SCREEN; k++)
			sum += decode_one(&f, f.by_start[k]);
		first_ms[r] = ms(clock_now_ns(CLOCK_MONOTONIC) - t0);
		open_ms[r] = ms(t1 - t0);
		if (f.nev != n || f.problems_total)
			bench_die("indexed %zu events of %llu, %zu problems",
				  f.nev, (unsigned long long)n,
				  f.problems_total);
		if (r + 1 < reps)
			heph_file_close(&f);
	}
	printf("heph_decode open_each_ms=");
	for (unsigned r = 0; r < reps; r++)
		printf("%s%.0f", r ? "," : "", open_ms[r]);
	printf("\n");
	d = bench_dist(open_ms, reps);
	printf("heph_decode open events=%zu reps=%u min_ms=%.1f p50_ms=%.1f "
	       "max_ms=%.1f index_Mev_s=%.2f others_cores=%.2f\n",
	       f.nev, reps, d.min, d.p50, d.max, (double)n / d.p50 / 1e3,
	       bench_load_others(&l));
	d = bench_dist(first_ms, reps);
	printf("heph_decode first events=%zu min_ms=%.1f p50_ms=%.1f "
	       "max_ms=%.1f target_ms=1000\n",
	       f.nev, d.min, d.p50, d.max);
	fflush(stdout);

	/* The full decode, in file order. */
	bench_load_start(&l);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	for (size_t i = 0; i < f.nev; i++)
		sum += decode_one(&f, i);
	{
		uint64_t dt = clock_now_ns(CLOCK_MONOTONIC) - t0;

		printf("heph_decode decode events=%zu ms=%.1f Mev_s=%.2f "
		       "ns_per_event=%.1f target_Mev_s=5 others_cores=%.2f\n",
		       f.nev, ms(dt), (double)f.nev / (double)dt * 1e3,
		       (double)dt / (double)f.nev, bench_load_others(&l));
	}

	/* Seeks to random times (and the event there decoded). */
	bench_load_start(&l);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	for (unsigned s = 0; s < SEEKS; s++) {
		uint64_t span = f.last_end - f.first_start + 1;
		size_t k =
			heph_file_seek(&f, f.first_start + next_rand() % span);

		if (k < f.nev)
			sum += decode_one(&f, f.by_start[k]);
	}
	printf("heph_decode seek seeks=%u ns_per_seek=%.0f others_cores=%.2f "
	       "checksum=%llx\n",
	       SEEKS, (double)(clock_now_ns(CLOCK_MONOTONIC) - t0) / SEEKS,
	       bench_load_others(&l), (unsigned long long)sum);
	heph_file_close(&f);
	unlink(path);
	return 0;
}
