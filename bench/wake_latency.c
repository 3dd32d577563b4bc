/*
 * wake_latency: how long an event written while the engine sleeps waits
 * before the engine harvests it.
 *
 * The engine owns the region in this process; the writer is a forked child
 * that attaches the real probe, so the wake crosses a process boundary the
 * way it does in use.  Per sample:
 *   1. wait until the engine has set tracer_sleeping = 1, then 2 ms more so
 *      it is blocked in its futex wait (and the waker thread in poll);
 *   2. tell the child (one byte on a pipe) to record one event;
 *   3. the engine's event_hook takes CLOCK_MONOTONIC when the event reaches
 *      the model; latency = that - the event's own timestamp (the probe's
 *      clock read inside corotop_coro_record).  CLOCK_MONOTONIC is one clock
 *      for every process on the machine.
 * A sample counts as a wake when the engine's own counters moved (futex_wakes
 * for the futex path, uds_bytes for the socket path) and no sleep timed out
 * meanwhile.  Every harvested sample is also in the "all" distribution, so
 * a wake path that never fires shows up as samples ended by the 100 ms
 * sleep bound; after 30 attempts with most of them like that, the mode
 * stops early instead of spending a timeout on each remaining sample.
 *
 * Also per sample, "asleep": from the previous event reaching event_hook
 * to the first time tracer_sleeping = 1 is seen (50 us polls) -- how soon
 * an idle engine goes to sleep (test-sleep-wake once bounded it at 2 s).
 *
 * Modes: futex (the default engine) and uds (config no_futex: the probe
 * sends one byte on the Unix socket, the engine's waker thread turns it into
 * a futex wake of the harvest thread).  Target: p50 <= 50 us.
 *
 * Usage: wake_latency [samples-per-mode]   (default 300)
 */
#define _GNU_SOURCE
#include "bench.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_SAMPLES 5000

static double lat_ns[MAX_SAMPLES];
static double all_ns[MAX_SAMPLES];
static double asleep_ns[MAX_SAMPLES];
static _Atomic uint64_t hook_count;
static _Atomic uint64_t hook_last_ns;
static _Atomic uint64_t hook_at_ns; /* CLOCK_MONOTONIC of the last hook */

static void on_event(void *ctx, const struct harvest_event *ev)
{
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC);

	(void)ctx;
	/* release: pairs with the main thread's acquire of hook_count. */
	atomic_store_explicit(&hook_last_ns, now - ev->ts,
			      memory_order_relaxed);
	/* relaxed: ordered by hook_count's release below, as hook_last_ns. */
	atomic_store_explicit(&hook_at_ns, now, memory_order_relaxed);
	atomic_fetch_add_explicit(&hook_count, 1, memory_order_release);
}

/* The writer: attach, open one coroutine, record one event per byte. */
static void child_main(int cmd_fd, int ack_fd)
{
	struct corotop_coro c;
	uint64_t n = 0;
	char b;

	if (!corotop_probe_init())
		_exit(3);
	corotop_coro_open(&c, 42);
	if (!c.station)
		_exit(4);
	if (write(ack_fd, "k", 1) != 1)
		_exit(5);
	while (read(cmd_fd, &b, 1) == 1) {
		corotop_coro_record(&c, (int)(n & 1), n);
		n++;
	}
	corotop_coro_close(&c);
	_exit(0);
}

static const struct ctp_header *map_header(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	void *m;

	if (fd < 0)
		bench_die("cannot open %s", path);
	m = mmap(NULL, CTP_HEADER_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		bench_die("cannot map %s", path);
	return m;
}

/* Wait until the engine sleeps; false after 5 s.  *first: when the flag
 * was first seen set. */
static bool wait_sleeping(const struct ctp_header *hdr, uint64_t *first)
{
	uint64_t end = clock_now_ns(CLOCK_MONOTONIC) + 5000000000u;

	*first = 0;
	for (;;) {
		/* relaxed: a hint; the engine's counters classify the sample.
		 */
		if (atomic_load_explicit(&hdr->tracer_sleeping,
					 memory_order_relaxed) == 1) {
			if (!*first)
				*first = clock_now_ns(CLOCK_MONOTONIC);
			bench_sleep_ns(2000000u);
			if (atomic_load_explicit(&hdr->tracer_sleeping,
						 memory_order_relaxed) == 1)
				return true;
		}
		if (clock_now_ns(CLOCK_MONOTONIC) > end)
			return false;
		bench_sleep_ns(50000u);
	}
}

static void print_dist(const char *mode, const char *kind, double *v,
		       unsigned n)
{
	struct bench_dist d = bench_dist(v, n);

	printf("wake_latency %-5s %-6s samples=%u p50_us=%.1f p90_us=%.1f "
	       "p99_us=%.1f min_us=%.1f max_us=%.1f\n",
	       mode, kind, n, d.p50 / 1e3, d.p90 / 1e3, d.p99 / 1e3,
	       d.min / 1e3, d.max / 1e3);
}

static void run_mode(const char *name, bool no_futex, unsigned samples)
{
	struct engine_config cfg;
	struct engine_stats s0, s1, stot;
	const struct ctp_header *hdr;
	int cmd[2], ack[2], status;
	unsigned got = 0, nall = 0, missed = 0, nasleep = 0, i;
	double p50 = 0, others;
	struct bench_load load;
	struct engine *e;
	pid_t pid;
	char b;

	engine_config_defaults(&cfg);
	cfg.stations = 16;
	cfg.no_futex = no_futex;
	cfg.event_hook = on_event;
	e = bench_engine_create(&cfg);
	hdr = map_header(engine_shm_path(e));
	if (pipe2(cmd, O_CLOEXEC) || pipe2(ack, O_CLOEXEC))
		bench_die("pipe failed");
	fflush(stdout);
	/* Fork before the engine has threads: the child may use anything. */
	pid = fork();
	if (pid < 0)
		bench_die("fork failed");
	if (pid == 0) {
		close(cmd[1]);
		close(ack[0]);
		child_main(cmd[0], ack[1]);
	}
	close(cmd[0]);
	close(ack[1]);
	if (read(ack[0], &b, 1) != 1)
		bench_die("the writer child did not attach");
	bench_engine_start(e);
	bench_load_start(&load);

	for (i = 0; i < samples; i++) {
		uint64_t before, t_end, first, last;
		double l;
		bool woke;

		/* A path that never wakes costs a timeout per sample: stop
		 * early once that is plain. */
		if (i >= 30 && (i - got) * 2 > i)
			break;
		if (!wait_sleeping(hdr, &first)) {
			missed++;
			continue;
		}
		/* acquire: pairs with the hook's release of hook_count, so
		 * hook_at_ns is that hook's. */
		if (atomic_load_explicit(&hook_count, memory_order_acquire) &&
		    (last = atomic_load_explicit(&hook_at_ns,
						 memory_order_relaxed)) &&
		    first > last)
			asleep_ns[nasleep++] = (double)(first - last);
		engine_stats(e, &s0);
		before =
			atomic_load_explicit(&hook_count, memory_order_acquire);
		if (write(cmd[1], "r", 1) != 1)
			bench_die("the writer child is gone");
		t_end = clock_now_ns(CLOCK_MONOTONIC) + 1000000000u;
		while (atomic_load_explicit(&hook_count,
					    memory_order_acquire) == before) {
			if (clock_now_ns(CLOCK_MONOTONIC) > t_end)
				break;
			bench_sleep_ns(20000u);
		}
		if (atomic_load_explicit(&hook_count, memory_order_acquire) ==
		    before) {
			missed++;
			continue;
		}
		engine_stats(e, &s1);
		l = (double)atomic_load_explicit(&hook_last_ns,
						 memory_order_relaxed);
		all_ns[nall++] = l;
		woke = no_futex ? s1.uds_bytes > s0.uds_bytes
				: s1.futex_wakes > s0.futex_wakes;
		if (woke && s1.timeouts == s0.timeouts)
			lat_ns[got++] = l;
	}
	engine_stats(e, &stot);
	others = bench_load_others(&load);
	close(cmd[1]);
	waitpid(pid, &status, 0);
	close(ack[0]);
	engine_destroy(e);
	munmap((void *)hdr, CTP_HEADER_SIZE);

	printf("wake_latency %-5s attempts=%u harvested=%u woken=%u "
	       "by_timeout_or_scan=%u missed=%u engine_sleeps=%llu "
	       "futex_wakes=%llu uds_bytes=%llu timeouts=%llu "
	       "others_cores=%.2f\n",
	       name, i, nall, got, nall - got, missed,
	       (unsigned long long)stot.sleeps,
	       (unsigned long long)stot.futex_wakes,
	       (unsigned long long)stot.uds_bytes,
	       (unsigned long long)stot.timeouts, others);
	if (got) {
		p50 = bench_quantile(lat_ns, got, 0.5);
		print_dist(name, "woken", lat_ns, got);
	}
	print_dist(name, "all", all_ns, nall);
	if (nasleep)
		print_dist(name, "asleep", asleep_ns, nasleep);
	printf("wake_latency %-5s target p50_us<=50 measured_p50_us=%.1f %s\n",
	       name, (got ? p50 : bench_quantile(all_ns, nall, 0.5)) / 1e3,
	       got * 2 > nall && p50 <= 50000 ? "PASS" : "MISS");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	unsigned samples = argc > 1 ? (unsigned)atoi(argv[1]) : 300;

	if (samples == 0 || samples > MAX_SAMPLES)
		bench_die("usage: wake_latency [samples-per-mode, 1..%d]",
			  MAX_SAMPLES);
	if (corotop_probe_live_)
		bench_die("unset the CTP_* environment first");
	run_mode("futex", false, samples);
	run_mode("uds", true, samples);
	return 0;
}
