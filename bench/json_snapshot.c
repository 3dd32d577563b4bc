/*
 * json_snapshot: what one batch JSON snapshot (corotop -b -f json) costs
 * with N coroutines, nine in ten of them suspended.
 *
 * The engine runs in this process with the probe attached (bench.h).  N
 * coroutines are opened the way bench/many_coros does (every tenth resumes,
 * the others suspend at a distinct address), the harvest is waited for
 * until the model holds all N, then one snapshot is taken (engine_snapshot)
 * and printed (batch_print_json into /dev/null) as main.c prints it: each
 * suspended row asks for its parked stack.
 *
 *   case=by_row  the row's own slot finds its record (engine_parked_stack_of,
 *                what corotop does);
 *   case=by_id   the model is searched by id for every row
 *                (engine_parked_stack, what corotop did: quadratic), run
 *                only up to 50k coroutines (3 s there, 14 s at 100k).
 *
 * Usage: json_snapshot [coroutines ...]   (default 1000000)
 */
#define _GNU_SOURCE
#include "bench.h"

#include <sys/wait.h>

#include "ui/batch/batch.h"

static const char *js_name(void *ctx, uint64_t addr, bool leaf, bool full,
			   char *buf, size_t len)
{
	return engine_frame_name(ctx, addr, leaf, full, buf, len);
}

static size_t js_by_row(void *ctx, const struct model_coro *c, uint64_t *frames,
			size_t max, uint64_t *trace_id)
{
	return engine_parked_stack_of(ctx, c, frames, max, trace_id);
}

static size_t js_by_id(void *ctx, const struct model_coro *c, uint64_t *frames,
		       size_t max, uint64_t *trace_id)
{
	return engine_parked_stack(ctx, c->id, frames, max, trace_id);
}

static void js_case(struct engine *e, struct snapshot *snap, const char *name,
		    size_t (*parked)(void *, const struct model_coro *,
				     uint64_t *, size_t, uint64_t *),
		    long n)
{
	struct engine_calltrace_stats ct;
	struct batch_hot hot = {
		.ct = &ct, .name = js_name, .parked = parked, .ctx = e};
	FILE *out = fopen("/dev/null", "w");
	uint64_t t0, t1, t2;

	if (!out)
		bench_die("cannot open /dev/null");
	/* A whole copy, as a first frame makes (a copy made again copies
	 * only what changed since: engine/model/snapcopy.c), into the arrays
	 * the harvest's wait made. */
	snap->copy_of = 0;
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	engine_snapshot(e, snap);
	engine_calltrace_stats(e, &ct);
	t1 = clock_now_ns(CLOCK_MONOTONIC);
	batch_print_json(out, snap, NULL, 0, &hot, NULL);
	fflush(out);
	t2 = clock_now_ns(CLOCK_MONOTONIC);
	fclose(out);
	printf("json_snapshot case=%s coroutines=%ld rows=%zu snapshot_ms=%.1f "
	       "print_ms=%.1f total_ms=%.1f\n",
	       name, n, snap->count, (double)(t1 - t0) / 1e6,
	       (double)(t2 - t1) / 1e6, (double)(t2 - t0) / 1e6);
	fflush(stdout);
}

static void js_run(long n)
{
	struct engine_config cfg;
	struct corotop_coro *c;
	struct snapshot snap;
	struct engine *e;

	engine_config_defaults(&cfg);
	cfg.stations = (uint32_t)n + 1024;
	e = bench_engine_create(&cfg);
	bench_engine_start(e);
	bench_probe_attach();
	c = bench_open_coros(n);
	snapshot_init(&snap);
	bench_wait_harvested(e, &snap, n);
	js_case(e, &snap, "by_row", js_by_row, n);
	if (n <= 50000)
		js_case(e, &snap, "by_id", js_by_id, n);
	snapshot_finish(&snap);
	bench_close_coros(c, n);
	corotop_probe_shutdown();
	engine_destroy(e);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		js_run(1000000);
		return 0;
	}
	/* One engine per process: the probe attaches once. */
	for (int i = 1; i < argc; i++) {
		long n = atol(argv[i]);
		pid_t pid;
		int status;

		if (n < 1 || n > (long)CTP_MAX_STATIONS_LIMIT - 1024)
			bench_die("coroutines: 1 to %u, got '%s'",
				  CTP_MAX_STATIONS_LIMIT - 1024, argv[i]);
		fflush(stdout);
		pid = fork();
		if (pid < 0)
			bench_die("fork failed");
		if (pid == 0) {
			js_run(n);
			_exit(0);
		}
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			bench_die("the run with %ld coroutines failed", n);
	}
	return 0;
}
