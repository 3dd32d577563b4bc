/*
 * e2e_latency: how long the corotop binary takes, end to end, to show what
 * the e2e tests wait for.  The tests assert only that it comes (with a
 * deadline); how soon is measured here.
 *
 * Per run: `corotop -b -f json -d 1 -- DEMO` (a snapshot every 0.1 s) is
 * started with its stdout on a pipe, and each snapshot line is read as it
 * comes, timed from the fork with CLOCK_MONOTONIC:
 *   first      the first snapshot;
 *   coros      the first snapshot with at least 100 coroutines;
 *   parked     the first snapshot where a coroutine is parked at
 *              stuck_wait_for_reply (the demo's lost wakeup), named by file
 *              and line -- what test-e2e once required within 1.5 s.
 * Then SIGINT, and the next run.  Each case prints its distribution over
 * the runs; a run that never shows a case within 60 s counts as missed.
 *
 * Usage: e2e_latency COROTOP DEMO [runs]   (default 10)
 */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/wait.h>

#define MAX_RUNS 100
#define RUN_DEADLINE_NS 60000000000ull
#define LINE_MAX_BYTES (8u << 20)

enum { C_FIRST, C_COROS, C_PARKED, C_N };

static const char *const case_name[C_N] = {"first", "coros", "parked"};

/* Coroutine objects in a snapshot line: its "probe_id" keys. */
static size_t count_coros(const char *line)
{
	size_t n = 0;

	for (const char *p = line; (p = strstr(p, "\"probe_id\":")); p++)
		n++;
	return n;
}

static bool parked_named(const char *line)
{
	const char *p = strstr(line, "stuck_wait_for_reply+0x");

	return p && strstr(p, "(workload.c:");
}

/* One run: times (ns after the fork) of each case, 0 when missed. */
static void one_run(const char *corotop, const char *demo, uint64_t *t)
{
	char *argv[] = {(char *)corotop, "-b", "-f", "json", "-d", "1", "--",
			(char *)demo,	 NULL};
	char *buf = malloc(LINE_MAX_BYTES);
	size_t len = 0;
	uint64_t t0, end;
	int out[2], status;
	pid_t pid;

	if (!buf)
		bench_die("out of memory");
	memset(t, 0, C_N * sizeof(*t));
	if (pipe2(out, O_CLOEXEC))
		bench_die("pipe: %s", strerror(errno));
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	pid = fork();
	if (pid < 0)
		bench_die("fork: %s", strerror(errno));
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		if (dup2(out[1], 1) < 0 || devnull < 0 || dup2(devnull, 2) < 0)
			_exit(126);
		execv(corotop, argv);
		_exit(127);
	}
	close(out[1]);
	end = t0 + RUN_DEADLINE_NS;
	while (!t[C_PARKED] || !t[C_COROS]) {
		uint64_t now = clock_now_ns(CLOCK_MONOTONIC);
		struct pollfd p = {.fd = out[0], .events = POLLIN};
		char *nl;
		ssize_t r;

		if (now >= end)
			break;
		if (poll(&p, 1, (int)((end - now) / 1000000u) + 1) <= 0)
			continue;
		r = read(out[0], buf + len, LINE_MAX_BYTES - 1 - len);
		if (r <= 0)
			break;
		len += (size_t)r;
		buf[len] = '\0';
		now = clock_now_ns(CLOCK_MONOTONIC) - t0;
		while ((nl = strchr(buf, '\n'))) {
			*nl = '\0';
			if (!t[C_FIRST])
				t[C_FIRST] = now;
			if (!t[C_COROS] && count_coros(buf) >= 100)
				t[C_COROS] = now;
			if (!t[C_PARKED] && parked_named(buf))
				t[C_PARKED] = now;
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len + 1);
		}
		if (len == LINE_MAX_BYTES - 1)
			len = 0; /* a line too long to keep: dropped */
	}
	kill(pid, SIGINT);
	waitpid(pid, &status, 0);
	close(out[0]);
	free(buf);
}

int main(int argc, char **argv)
{
	static double v[C_N][MAX_RUNS];
	unsigned runs = argc > 3 ? (unsigned)atoi(argv[3]) : 10;
	unsigned got[C_N] = {0};

	if (argc < 3 || runs == 0 || runs > MAX_RUNS)
		bench_die("usage: e2e_latency COROTOP DEMO [runs, 1..%d]",
			  MAX_RUNS);
	signal(SIGPIPE, SIG_IGN);
	for (unsigned i = 0; i < runs; i++) {
		uint64_t t[C_N];

		one_run(argv[1], argv[2], t);
		printf("e2e_latency run %u:", i);
		for (int c = 0; c < C_N; c++) {
			printf(" %s_ms=%.1f", case_name[c],
			       t[c] ? (double)t[c] / 1e6 : -1.0);
			if (t[c])
				v[c][got[c]++] = (double)t[c];
		}
		printf("\n");
		fflush(stdout);
	}
	for (int c = 0; c < C_N; c++) {
		struct bench_dist d = bench_dist(v[c], got[c]);

		printf("e2e_latency %-6s runs=%u missed=%u p50_ms=%.1f "
		       "max_ms=%.1f min_ms=%.1f\n",
		       case_name[c], runs, runs - got[c],
		       got[c] ? d.p50 / 1e6 : -1.0, got[c] ? d.max / 1e6 : -1.0,
		       got[c] ? d.min / 1e6 : -1.0);
	}
	return 0;
}
