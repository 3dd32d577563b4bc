/*
 * serve_scrape: what corotop serve costs with N coroutines (default
 * 100000, nine in ten suspended, each at its own address: the worst case
 * for the WHERE table), engine in this process with the probe attached
 * (bench.h), as bench/json_snapshot sets it up.
 *
 *   lock_ms     the model lock held by one snapshot copy (the engine's
 *               snapshot operation, engine_live_snapshot, whose body runs
 *               under the lock), min / median / max of 21;
 *   snapshot    engine_snapshot alone (the copy and the names);
 *   refresh     serve_refresh: what serve does once per refresh period
 *               (engine_snapshot with names, statistics, hot stacks, both
 *               formats rendered, published), wall and CPU of this thread;
 *   scrape      GET /metrics over loopback against the real server,
 *               OpenMetrics, sequential from a child process; CPU is this
 *               process's (every server thread) per scrape, wall is the
 *               child's round trip, both over SCRAPES scrapes.
 *
 * Usage: serve_scrape [coroutines [scrapes]]   (100000 2000)
 */
#define _GNU_SOURCE
#include "bench.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "engine/engine_internal.h"
#include "ui/serve/serve.h"

static uint64_t ss_cpu_ns(clockid_t c)
{
	struct timespec t;

	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t ss_rusage_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) *
		       1000000000u +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) *
		       1000u;
}

static int ss_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The child: scrapes GETs of /metrics; prints the median round trip and
 * the bytes of the last reply. */
static void ss_client(uint16_t port, long scrapes)
{
	static char buf[1 << 20];
	const char req[] = "GET /metrics HTTP/1.0\r\nAccept: "
			   "application/openmetrics-text\r\n\r\n";
	uint64_t *rt = calloc((size_t)scrapes, sizeof(*rt));
	size_t got = 0;

	for (long i = 0; i < scrapes; i++) {
		struct sockaddr_in a = {.sin_family = AF_INET,
					.sin_port = htons(port),
					.sin_addr.s_addr =
						htonl(INADDR_LOOPBACK)};
		uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		ssize_t r;

		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
		    write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1)
			bench_die("scrape %ld failed", i);
		got = 0;
		while ((r = read(fd, buf + got, sizeof(buf) - got)) > 0)
			got += (size_t)r;
		close(fd);
		rt[i] = clock_now_ns(CLOCK_MONOTONIC) - t0;
		if (got < 12 || memcmp(buf, "HTTP/1.1 200", 12))
			bench_die("scrape %ld: %.40s", i, buf);
	}
	qsort(rt, (size_t)scrapes, sizeof(*rt), ss_cmp);
	printf("serve_scrape scrape_wall_ms_p50=%.3f p99=%.3f "
	       "reply_bytes=%zu\n",
	       (double)rt[scrapes / 2] / 1e6,
	       (double)rt[scrapes * 99 / 100] / 1e6, got);
	fflush(stdout);
}

static void ss_run(long n, long scrapes)
{
	struct engine_config cfg;
	struct corotop_coro *c;
	struct snapshot snap, scratch;
	struct serve_options o = {.listen = "127.0.0.1:0",
				  .top_where = 20,
				  .delay_tenths = 10,
				  .hot_stacks = 50,
				  .sort_column = -1};
	struct serve *sv;
	struct engine *e;
	uint64_t lock[21], t0, c0, w, cpu, r0;
	char err[256];
	bool usage;
	pid_t pid;
	int status;

	engine_config_defaults(&cfg);
	cfg.stations = (uint32_t)n + 1024;
	e = bench_engine_create(&cfg);
	bench_engine_start(e);
	bench_probe_attach();
	c = bench_open_coros(n);
	snapshot_init(&snap);
	snapshot_init(&scratch);
	bench_wait_harvested(e, &snap, n);
	/* The lock: the mode's snapshot copy, the harvest thread running;
	 * once first, so that the copy's array is allocated (serve reuses
	 * its states' arrays). */
	e->mode->snapshot(e, &scratch);
	for (int i = 0; i < 21; i++) {
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		e->mode->snapshot(e, &scratch);
		lock[i] = clock_now_ns(CLOCK_MONOTONIC) - t0;
	}
	qsort(lock, 21, sizeof(*lock), ss_cmp);
	printf("serve_scrape coroutines=%ld rows=%zu lock_ms_min=%.3f "
	       "p50=%.3f max=%.3f\n",
	       n, scratch.count, (double)lock[0] / 1e6, (double)lock[10] / 1e6,
	       (double)lock[20] / 1e6);
	w = cpu = 0;
	for (int i = 0; i < 5; i++) {
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		c0 = ss_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
		engine_snapshot(e, &snap);
		cpu += ss_cpu_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
		w += clock_now_ns(CLOCK_MONOTONIC) - t0;
	}
	printf("serve_scrape engine_snapshot_wall_ms=%.2f cpu_ms=%.2f (mean of "
	       "5, names included)\n",
	       (double)w / 5e6, (double)cpu / 5e6);
	sv = serve_create(&o, &usage, err, sizeof(err));
	if (!sv)
		bench_die("serve_create: %s", err);
	/* The first refresh names every address; time the steady ones. */
	serve_refresh(sv, e);
	w = cpu = 0;
	for (int i = 0; i < 5; i++) {
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		c0 = ss_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
		serve_refresh(sv, e);
		cpu += ss_cpu_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
		w += clock_now_ns(CLOCK_MONOTONIC) - t0;
	}
	printf("serve_scrape refresh_wall_ms=%.2f refresh_cpu_ms=%.2f "
	       "(mean of 5)\n",
	       (double)w / 5e6, (double)cpu / 5e6);
	fflush(stdout);
	r0 = ss_rusage_ns();
	c0 = ss_cpu_ns(CLOCK_THREAD_CPUTIME_ID);
	pid = fork();
	if (pid < 0)
		bench_die("fork failed");
	if (pid == 0) {
		ss_client((uint16_t)atoi(strrchr(serve_address(sv), ':') + 1),
			  scrapes);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		bench_die("the scraping child failed");
	/* Every thread of ours but this one (which only waited) and the
	 * harvest thread's share, which idles: an upper bound. */
	cpu = ss_rusage_ns() - r0 - (ss_cpu_ns(CLOCK_THREAD_CPUTIME_ID) - c0);
	printf("serve_scrape scrapes=%ld scrape_cpu_ms=%.3f (process CPU per "
	       "scrape, harvest thread included)\n",
	       scrapes, (double)cpu / (double)scrapes / 1e6);
	serve_destroy(sv);
	snapshot_finish(&snap);
	snapshot_finish(&scratch);
	bench_close_coros(c, n);
	corotop_probe_shutdown();
	engine_destroy(e);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	long scrapes = argc > 2 ? atol(argv[2]) : 2000;
	sigset_t sigs;

	if (n < 1 || n > (long)CTP_MAX_STATIONS_LIMIT - 1024 || scrapes < 1)
		bench_die("usage: serve_scrape [coroutines [scrapes]]");
	/* As corotop does: the server's threads never take these. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGCHLD);
	sigaddset(&sigs, SIGPIPE);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	ss_run(n, scrapes);
	return 0;
}
