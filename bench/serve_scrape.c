/*
 * serve_scrape: what corotop serve costs with N coroutines (default
 * 100000, nine in ten suspended, each at its own address: the worst case
 * for the WHERE table), engine in this process with the probe attached
 * (bench.h), as bench/json_snapshot sets it up.
 *
 *   lock_ms     the model lock held by one snapshot copy (the engine's
 *               books, snapshot_lock_ns), min / median / max of 21, a
 *               snapshot copied again with nothing changed; then (ss_lock)
 *               a whole copy's, a plain memcpy of the records, and a copy
 *               after 1 in 100 coroutines switched, in the same run;
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

#define SS_RUNS 21

/* The median of SS_RUNS values (sorts them). */
static double ss_p50_ms(uint64_t *v)
{
	qsort(v, SS_RUNS, sizeof(*v), ss_cmp);
	return (double)v[SS_RUNS / 2] / 1e6;
}

/*
 * The model's lock as a snapshot holds it (the engine's books:
 * snapshot_lock_ns), the harvest thread running, against a plain memcpy
 * of the records it copies, in the same run:
 *   whole    a snapshot that holds no copy (every record copied);
 *   steady   the same snapshot again, nothing changed (the first line,
 *            lock_ms_min/p50/max, as before).
 * Returns the memcpy's median (ms).
 */
static double ss_lock(struct engine *e, struct snapshot *s, long n)
{
	uint64_t whole[SS_RUNS], mem[SS_RUNS], steady[SS_RUNS], t0;
	size_t bytes;
	void *dst;

	e->mode->snapshot(e, s); /* the arrays allocated */
	bytes = s->count * sizeof(*s->coro);
	dst = malloc(bytes ? bytes : 1);
	if (!dst)
		bench_die("out of memory");
	memcpy(dst, s->coro, bytes); /* its pages mapped */
	for (int i = 0; i < SS_RUNS; i++) {
		s->copy_of = 0; /* no copy to build on */
		e->mode->snapshot(e, s);
		whole[i] = e->snapshot_lock_ns;
		t0 = clock_now_ns(CLOCK_MONOTONIC);
		memcpy(dst, s->coro, bytes);
		mem[i] = clock_now_ns(CLOCK_MONOTONIC) - t0;
		/* The compiler must not drop the copy. */
		__asm__ volatile("" : : "r"(dst) : "memory");
	}
	for (int i = 0; i < SS_RUNS; i++) {
		e->mode->snapshot(e, s);
		steady[i] = e->snapshot_lock_ns;
	}
	free(dst);
	qsort(steady, SS_RUNS, sizeof(*steady), ss_cmp);
	printf("serve_scrape coroutines=%ld rows=%zu lock_ms_min=%.3f "
	       "p50=%.3f max=%.3f (steady copies)\n",
	       n, s->count, (double)steady[0] / 1e6,
	       (double)steady[SS_RUNS / 2] / 1e6,
	       (double)steady[SS_RUNS - 1] / 1e6);
	{
		double wm = ss_p50_ms(whole), mm = ss_p50_ms(mem),
		       sm = (double)steady[SS_RUNS / 2] / 1e6;

		printf("serve_scrape copy record_bytes=%zu "
		       "whole_lock_ms_p50=%.3f "
		       "memcpy_ms_p50=%.3f steady_lock_ms_p50=%.3f "
		       "steady_vs_memcpy=%.3f (medians of %d)\n",
		       sizeof(*s->coro), wm, mm, sm, mm > 0 ? sm / mm : 0,
		       SS_RUNS);
		return mm;
	}
}

/*
 * Last (its switches leave parks for the walker, which would run during
 * the measures after it): the lock of a copy after `changed` coroutines
 * (1 in 100, others each time) switched twice and were harvested, against
 * ss_lock's memcpy.
 */
static void ss_changed(struct engine *e, struct snapshot *s,
		       struct corotop_coro *c, long n, double mm)
{
	uint64_t changed[SS_RUNS], copied[SS_RUNS], want;
	long nchanged = n / 100 ? n / 100 : 1, next = 0;
	double cm;

	for (int i = 0; i < SS_RUNS; i++) {
		uint64_t end = clock_now_ns(CLOCK_MONOTONIC) + 60000000000ull;

		/* Harvested: every switch in the model (under its lock). */
		pthread_mutex_lock(&e->lock);
		want = e->model.t.events + 2 * (uint64_t)nchanged;
		pthread_mutex_unlock(&e->lock);
		for (long k = 0; k < nchanged; k++, next = (next + 97) % n) {
			corotop_coro_resume(&c[next], 0);
			corotop_coro_suspend(&c[next],
					     0x401000u + (uint64_t)next * 16);
		}
		for (;;) {
			uint64_t got;

			pthread_mutex_lock(&e->lock);
			got = e->model.t.events;
			pthread_mutex_unlock(&e->lock);
			if (got >= want)
				break;
			if (clock_now_ns(CLOCK_MONOTONIC) > end)
				bench_die("switches not harvested in 60 s");
			usleep(1000);
		}
		e->mode->snapshot(e, s);
		changed[i] = e->snapshot_lock_ns;
		copied[i] = s->ncopied;
	}
	cm = ss_p50_ms(changed);
	qsort(copied, SS_RUNS, sizeof(*copied), ss_cmp);
	printf("serve_scrape changed=%ld changed_lock_ms_p50=%.3f "
	       "changed_copied_p50=%llu changed_vs_memcpy=%.3f (medians of "
	       "%d)\n",
	       nchanged, cm, (unsigned long long)copied[SS_RUNS / 2],
	       mm > 0 ? cm / mm : 0, SS_RUNS);
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
	uint64_t lock[5], t0, c0, w, cpu, r0;
	double mm;
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
	mm = ss_lock(e, &scratch, n);
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
		lock[i] = e->snapshot_lock_ns;
	}
	qsort(lock, 5, sizeof(*lock), ss_cmp);
	printf("serve_scrape refresh_wall_ms=%.2f refresh_cpu_ms=%.2f "
	       "(mean of 5) refresh_lock_ms_p50=%.3f max=%.3f\n",
	       (double)w / 5e6, (double)cpu / 5e6, (double)lock[2] / 1e6,
	       (double)lock[4] / 1e6);
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
	ss_changed(e, &scratch, c, n, mm);
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
