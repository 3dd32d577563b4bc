/*
 * record_cost: what --record costs the harvest loop (issue 6, target:
 * recording keeps >= 90% of the harvest's throughput), and whether the
 * recorder loses anything silently.
 *
 * The workload is harvest_throughput's: an in-process engine that owns the
 * region harvests flat out (scan_interval_us = 0) while W writer threads,
 * attached through the real probe, record round-robin into their K/W
 * coroutines with no pause.  Each case runs the same workload with
 * cfg.record_path unset ("off") and set to a file under /tmp ("on"),
 * alternating which goes first from round to round, so drift on this
 * shared VM hits both alike.  The file is deleted after each run.
 *
 * For "on" the recorder's own books are printed (engine_record_stats:
 * items handed over, dropped because its ring was full, intervals, "lost"
 * packets and bytes written) and the file is read back: the "lost" events
 * corotop writes for itself (stream 0, substream 0) must add up to the
 * dropped count, and the interval packets to the intervals written --
 * so a drop is always in the trace, never silent.
 *
 * Where the time goes: the engine's threads are told apart by when they
 * appear in /proc/self/task (the recorder's writer thread during
 * engine_create, the harvest thread and its helpers during engine_start)
 * and their CPU clocks are read over the window.  harvest_ns_per_event is
 * the harvest thread's CPU per event delivered (the hand-over to the
 * recorder is in it), harvest_on_cpu its share of the window, and
 * rec_ns_per_item the recorder's writer thread's CPU per item.
 *
 * The last cases pace one writer at 1, 4 and 8 M events/s: what recording
 * costs in CPU when the recorder can follow, and where it stops keeping
 * up (cpu_cores is the whole process: writers, harvest, recorder's writer
 * thread).
 *
 * Usage: record_cost [seconds-per-run] [rounds] [case]   (default 1.0 3 all;
 * case: 1x1024, 1x16384, 2x1024, paced, paced4m or paced8m, to run one
 * case alone)
 */
#define _GNU_SOURCE
#include "bench.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "engine/heph/hephfile.h"
#include "engine/record/recorder.h"

#define MAX_WRITERS 4
#define MAX_ROUNDS 32

struct writer {
	pthread_t th;
	unsigned coros;
	uint64_t rate; /* events/s, 0: flat out */
	uint64_t written;
	atomic_bool *go, *stop;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct corotop_coro *c = calloc(w->coros, sizeof(*c));
	uint64_t n = 0, t0;

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
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	/* relaxed: the flag only ends the loop; join orders the rest. */
	while (!atomic_load_explicit(w->stop, memory_order_relaxed)) {
		for (unsigned k = 0; k < 256; k++) {
			unsigned i = (unsigned)(n % w->coros);

			corotop_coro_record(&c[i], (int)((n / w->coros) & 1),
					    n);
			n++;
		}
		if (w->rate) {
			/* Paced: wait until n events are due. */
			uint64_t due = t0 + n * 1000000000u / w->rate;
			uint64_t now = clock_now_ns(CLOCK_MONOTONIC);

			if (due > now)
				bench_sleep_ns(due - now);
		}
	}
	w->written = n;
	for (unsigned i = 0; i < w->coros; i++)
		corotop_coro_close(&c[i]);
	free(c);
	return NULL;
}

/* ---- the engine's threads and their CPU ---- */

#define MAX_TIDS 64

struct tids {
	pid_t v[MAX_TIDS];
	size_t n;
};

static void tids_list(struct tids *t)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;

	t->n = 0;
	if (!d)
		return;
	while ((de = readdir(d)) && t->n < MAX_TIDS)
		if (de->d_name[0] != '.')
			t->v[t->n++] = (pid_t)atoi(de->d_name);
	closedir(d);
}

static bool tids_has(const struct tids *t, pid_t tid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i] == tid)
			return true;
	return false;
}

/* The threads of `now` that are not in `before`. */
static void tids_new(const struct tids *before, const struct tids *now,
		     struct tids *out)
{
	out->n = 0;
	for (size_t i = 0; i < now->n; i++)
		if (!tids_has(before, now->v[i]))
			out->v[out->n++] = now->v[i];
}

/* CPU ns of thread tid of this process (the clock glibc's
 * pthread_getcpuclockid builds: ~tid << 3 | per-thread | sched). */
static uint64_t tid_cpu_ns(pid_t tid)
{
	return clock_now_ns((clockid_t)((~(unsigned)tid << 3) | 6u));
}

static void tids_cpu(const struct tids *t, uint64_t *ns)
{
	for (size_t i = 0; i < t->n; i++)
		ns[i] = tid_cpu_ns(t->v[i]);
}

/* The busiest thread of t over the window: its CPU ns. */
static uint64_t tids_busiest(const struct tids *t, const uint64_t *a,
			     const uint64_t *b)
{
	uint64_t best = 0;

	for (size_t i = 0; i < t->n; i++)
		if (b[i] >= a[i] && b[i] - a[i] > best)
			best = b[i] - a[i];
	return best;
}

/* What the recording holds, read back. */
struct readback {
	bool ok;
	uint64_t events, own_lost_pkts, own_lost_sum, station_lost_pkts;
	uint64_t intervals;
};

static struct readback read_back(const char *path)
{
	struct readback rb = {0};
	struct heph_file f;
	char err[256];

	if (!heph_file_open(&f, path, err, sizeof(err))) {
		fprintf(stderr, "record_cost: reading back: %s\n", err);
		return rb;
	}
	rb.ok = !f.nproblems;
	rb.events = f.nev;
	for (size_t i = 0; i < f.nev; i++) {
		struct heph_packet p;
		struct heph_attr a;
		uint32_t pos = 0;
		uint64_t count = 0;

		if (!heph_file_event(&f, i, &p)) {
			rb.ok = false;
			continue;
		}
		if (p.desc_len != 4 || memcmp(p.desc, "lost", 4)) {
			rb.intervals++;
			continue;
		}
		while (heph_attr_next(&p, &pos, &a))
			if (a.name_len == 5 && !memcmp(a.name, "count", 5))
				count = heph_attr_u64(&a, 0);
		if (p.stream == 0 && p.substream == 0) {
			rb.own_lost_pkts++;
			rb.own_lost_sum += count;
		} else {
			rb.station_lost_pkts++;
		}
	}
	heph_file_close(&f);
	return rb;
}

/* "flat", or the paced rate ("4M/s"). */
static const char *rate_text(uint64_t rate)
{
	static char buf[32];

	if (!rate)
		return "flat";
	snprintf(buf, sizeof(buf), "%lluM/s",
		 (unsigned long long)(rate / 1000000u));
	return buf;
}

struct result {
	double harvested_per_s, cpu_cores, harvest_ns_per_event;
	uint64_t harvest_ns;
	uint64_t dropped;
	bool books_ok;
};

static struct result run_once(unsigned writers, unsigned stations,
			      uint64_t rate, bool record, double seconds,
			      const char *tag)
{
	struct engine_config cfg;
	struct writer w[MAX_WRITERS];
	atomic_bool go = false, stop = false;
	struct snapshot snap;
	struct recorder_stats rs, rs0, rs1;
	struct readback rb = {0};
	uint64_t written = 0, t0, t1, in_window, cpu0, cpu1;
	struct bench_load load;
	struct result res = {0};
	char path[64];
	double others;
	struct engine *e;
	struct tids before, created, started, rec_t, harv_t;
	uint64_t hcpu0[MAX_TIDS], hcpu1[MAX_TIDS], rcpu0[MAX_TIDS],
		rcpu1[MAX_TIDS];

	snprintf(path, sizeof(path), "/tmp/record_cost.%d.heph", (int)getpid());
	engine_config_defaults(&cfg);
	cfg.stations = stations;
	cfg.scan_interval_us = 0;
	if (record)
		cfg.record_path = path;
	tids_list(&before);
	e = bench_engine_create(&cfg);
	tids_list(&created);
	tids_new(&before, &created, &rec_t);
	bench_probe_attach();
	bench_engine_start(e);
	tids_list(&started);
	tids_new(&created, &started, &harv_t);
	for (unsigned i = 0; i < writers; i++) {
		w[i] = (struct writer){.coros = stations / writers,
				       .rate = rate / writers,
				       .go = &go,
				       .stop = &stop};
		if (pthread_create(&w[i].th, NULL, writer_main, &w[i]))
			bench_die("cannot start a writer thread");
	}
	bench_sleep_ns(50000000u); /* writers open their stations */
	snapshot_init(&snap);
	engine_snapshot(e, &snap);
	uint64_t events0 = snap.t.events, lost0 = snap.t.lost;
	engine_record_stats(e, &rs0);
	bench_load_start(&load);
	tids_cpu(&harv_t, hcpu0);
	tids_cpu(&rec_t, rcpu0);
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
	tids_cpu(&harv_t, hcpu1);
	tids_cpu(&rec_t, rcpu1);
	engine_record_stats(e, &rs1);
	others = bench_load_others(&load);
	engine_snapshot(e, &snap);
	in_window = snap.t.events - events0;
	engine_stop(e); /* final drain; the recorder finishes its file */
	engine_snapshot(e, &snap);
	engine_record_stats(e, &rs);

	uint64_t total_events = snap.t.events;
	uint64_t harvested = snap.t.events - events0;
	uint64_t lost = snap.t.lost - lost0;
	double secs = (double)(t1 - t0) / 1e9;

	res.harvested_per_s = (double)in_window / secs;
	res.cpu_cores = (double)(cpu1 - cpu0) / (double)(t1 - t0);
	res.books_ok = harvested + lost == written;
	res.harvest_ns = tids_busiest(&harv_t, hcpu0, hcpu1);
	res.harvest_ns_per_event =
		in_window ? (double)res.harvest_ns / (double)in_window : 0;
	printf("record_cost %-6s %-3s writers=%u stations=%u rate=%s "
	       "secs=%.2f written=%llu harvested=%llu lost=%llu "
	       "loss_pct=%.2f harvested_per_s=%.4g cpu_cores=%.2f "
	       "harvest_on_cpu=%.2f harvest_ns_per_event=%.1f "
	       "others_cores=%.2f accounting=%s",
	       tag, record ? "on" : "off", writers, stations, rate_text(rate),
	       secs, (unsigned long long)written, (unsigned long long)harvested,
	       (unsigned long long)lost,
	       written ? 100.0 * (double)lost / (double)written : 0.0,
	       res.harvested_per_s, res.cpu_cores,
	       (double)res.harvest_ns / (double)(t1 - t0),
	       res.harvest_ns_per_event, others,
	       res.books_ok ? "exact" : "MISMATCH");
	if (record) {
		uint64_t rec_ns = tids_busiest(&rec_t, rcpu0, rcpu1);
		uint64_t items = rs1.items - rs0.items;

		printf(" rec_on_cpu=%.2f rec_ns_per_item=%.1f",
		       (double)rec_ns / (double)(t1 - t0),
		       items ? (double)rec_ns / (double)items : 0.0);
	}
	snapshot_finish(&snap);
	corotop_probe_shutdown();
	if (!engine_destroy(e))
		bench_die("engine_destroy: %s", engine_output_error());
	if (record) {
		struct stat st;

		rb = read_back(path);
		res.dropped = rs.dropped;
		/* Every event the engine harvested was handed over or
		 * dropped (the rest of the items: opens, closes, losses). */
		bool handed = rs.items + rs.dropped >= total_events;
		bool traced =
			rb.ok && rb.own_lost_sum == rs.dropped &&
			rb.intervals == rs.intervals &&
			rb.own_lost_pkts + rb.station_lost_pkts == rs.lost;

		res.books_ok = res.books_ok && handed && traced && !rs.failed;
		printf(" rec_items=%llu rec_dropped=%llu rec_intervals=%llu "
		       "rec_lost_pkts=%llu rec_bytes=%llu rec_failed=%s "
		       "file_size=%lld file_intervals=%llu "
		       "file_own_lost_sum=%llu dropped=%s drops_in_trace=%s",
		       (unsigned long long)rs.items,
		       (unsigned long long)rs.dropped,
		       (unsigned long long)rs.intervals,
		       (unsigned long long)rs.lost,
		       (unsigned long long)rs.bytes, rs.failed ? "yes" : "no",
		       stat(path, &st) ? -1LL : (long long)st.st_size,
		       (unsigned long long)rb.intervals,
		       (unsigned long long)rb.own_lost_sum,
		       rs.dropped ? "YES" : "no",
		       traced ? "exact" : "MISMATCH");
		if (rs.failed)
			printf(" rec_error=\"%s\"", rs.error);
		unlink(path);
	}
	printf("\n");
	fflush(stdout);
	return res;
}

static double median(double *v, size_t n)
{
	double tmp[MAX_ROUNDS];

	memcpy(tmp, v, n * sizeof(*v));
	return bench_quantile(tmp, n, 0.5);
}

static void run_case(unsigned writers, unsigned stations, uint64_t rate,
		     double seconds, unsigned rounds)
{
	double off[MAX_ROUNDS], on[MAX_ROUNDS], ratio[MAX_ROUNDS];
	double cpu_off[MAX_ROUNDS], cpu_on[MAX_ROUNDS];
	double ns_off[MAX_ROUNDS], ns_on[MAX_ROUNDS];
	unsigned dropped_runs = 0, bad = 0;
	char tag[16];

	for (unsigned r = 0; r < rounds; r++) {
		struct result a, b;

		snprintf(tag, sizeof(tag), "r%u", r + 1);
		/* Alternate the order: drift hits both alike. */
		if (r % 2 == 0) {
			a = run_once(writers, stations, rate, false, seconds,
				     tag);
			b = run_once(writers, stations, rate, true, seconds,
				     tag);
		} else {
			b = run_once(writers, stations, rate, true, seconds,
				     tag);
			a = run_once(writers, stations, rate, false, seconds,
				     tag);
		}
		off[r] = a.harvested_per_s;
		on[r] = b.harvested_per_s;
		cpu_off[r] = a.cpu_cores;
		cpu_on[r] = b.cpu_cores;
		ns_off[r] = a.harvest_ns_per_event;
		ns_on[r] = b.harvest_ns_per_event;
		ratio[r] = off[r] > 0 ? on[r] / off[r] : 0;
		dropped_runs += b.dropped > 0;
		bad += !a.books_ok || !b.books_ok;
	}
	printf("record_cost summary writers=%u stations=%u rate=%s rounds=%u "
	       "off_median_per_s=%.4g on_median_per_s=%.4g "
	       "ratio_of_medians=%.3f ratio_per_round=",
	       writers, stations, rate_text(rate), rounds, median(off, rounds),
	       median(on, rounds), median(on, rounds) / median(off, rounds));
	for (unsigned r = 0; r < rounds; r++)
		printf("%s%.3f", r ? "," : "", ratio[r]);
	printf(" cpu_cores_off=%.2f cpu_cores_on=%.2f "
	       "harvest_ns_per_event_off=%.1f harvest_ns_per_event_on=%.1f "
	       "runs_with_drops=%u books=%s\n",
	       median(cpu_off, rounds), median(cpu_on, rounds),
	       median(ns_off, rounds), median(ns_on, rounds), dropped_runs,
	       bad ? "MISMATCH" : "exact");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		unsigned writers, stations;
		uint64_t rate;
	} cases[] = {
		{"1x1024", 1, 1024, 0},
		{"1x16384", 1, 16384, 0},
		{"2x1024", 2, 1024, 0},
		/* A rate the recorder follows: what recording costs in CPU. */
		{"paced", 1, 1024, 1000000},
		{"paced4m", 1, 1024, 4000000},
		{"paced8m", 1, 1024, 8000000},
	};
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	long rounds = argc > 2 ? atol(argv[2]) : 3;
	const char *only = argc > 3 ? argv[3] : "all";
	bool any = false;

	if (seconds <= 0 || rounds < 1 || rounds > MAX_ROUNDS)
		bench_die("usage: record_cost [seconds-per-run] [rounds 1..%d]",
			  MAX_ROUNDS);
	if (corotop_probe_live_)
		bench_die("unset the CTP_* environment first");
	printf("record_cost nproc=%d seconds=%.2f rounds=%ld\n", bench_ncpu(),
	       seconds, rounds);
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		if (strcmp(only, "all") && strcmp(only, cases[i].name))
			continue;
		any = true;
		run_case(cases[i].writers, cases[i].stations, cases[i].rate,
			 seconds, (unsigned)rounds);
	}
	if (!any)
		bench_die("no case '%s' (1x1024, 1x16384, 2x1024, paced, "
			  "paced4m, paced8m)",
			  only);
	return 0;
}
