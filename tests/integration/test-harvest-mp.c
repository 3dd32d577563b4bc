/*
 * test-harvest-mp: the engine harvesting a real traced process.
 *
 * Concept.  Two processes share one cTP region exactly as in production: the
 * engine (in this process, launch mode) creates it and starts the writer
 * (writer.c, linked against the real probe) with the CTP_* environment.  The
 * writer's payload names the writer's own coroutine and event index
 * (addr = IT_ADDR(c, e), probe_id = IT_PROBE_ID(c)), so every event the
 * engine hands to config.event_hook can be checked against what was
 * written: nothing missing, nothing twice, nothing out of order, nothing
 * attributed to the wrong coroutine.  No ring can overflow whatever the
 * machine does (deep rings that hold every event, at most 8 events per
 * coroutine, or writers paced by the harvester's acks), so "lost == 0" is a
 * real assertion.
 *
 *   seq    16 coroutines x 500 events, then all closed: every event exactly
 *          once, per-station n strictly increasing, addr sequence exact,
 *          lost == 0, total == K*M, and every coroutine dead in the snapshot.
 *   churn  2000 short-lived coroutines through 64 stations (16 alive at a
 *          time): stations must be recycled, nothing may go untraced, and
 *          no history may mix (each event's probe_id, as the engine
 *          attributes it, is the coroutine encoded in its addr).
 *   mixed  probe, SDK-seqlock and spec-literal writers in one region
 *          (mixed_writer.c), paced to the harvester by an ack per round:
 *          every style exactly once, in order, lost == 0.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "engine/ctp/harvest.h"
#include "engine/engine.h"
#include "../common/itest.h"

#include <fcntl.h>
#include <unistd.h>

#ifndef ITEST_WRITER
#error "ITEST_WRITER must name the writer program"
#endif

/*
 * Check the harvested stream of `ncoro` coroutines of `k` events each.
 * Returns the number of distinct stations used.
 */
static unsigned check_streams(struct it_events *col, unsigned ncoro, unsigned k,
			      pid_t writer, uint32_t nstations, uint64_t t0,
			      uint64_t t1)
{
	unsigned *next_e = calloc(ncoro, sizeof(*next_e));
	uint32_t *station = calloc(ncoro, sizeof(*station));
	uint64_t *first_n = calloc(ncoro, sizeof(*first_n));
	uint64_t *last_ts = calloc(ncoro, sizeof(*last_ts));
	uint64_t *last_n = calloc(nstations, sizeof(*last_n));
	bool *used = calloc(nstations, sizeof(*used));
	unsigned distinct = 0;

	assert_non_null(next_e);
	assert_non_null(station);
	assert_non_null(first_n);
	assert_non_null(last_ts);
	assert_non_null(last_n);
	assert_non_null(used);
	for (size_t i = 0; i < col->n; i++) {
		const struct harvest_event *ev = &col->ev[i];
		uint64_t c = IT_ADDR_CORO(ev->addr);
		uint64_t e = IT_ADDR_EVENT(ev->addr);

		if (c >= ncoro || e != next_e[c] || ev->station >= nstations ||
		    ev->probe_id != IT_PROBE_ID(c))
			print_error("event %zu: station %u n %llu addr 0x%llx "
				    "probe_id 0x%llx; expected event %u of "
				    "coroutine %llu\n",
				    i, ev->station, (unsigned long long)ev->n,
				    (unsigned long long)ev->addr,
				    (unsigned long long)ev->probe_id,
				    c < ncoro ? next_e[c] : 0,
				    (unsigned long long)c);
		assert_true(c < ncoro);
		assert_true(ev->station < nstations);
		/* Exactly once and in order: no gap, no duplicate. */
		assert_int_equal(e, next_e[c]);
		/* No history mixing: the engine's attribution agrees. */
		assert_int_equal(ev->probe_id, IT_PROBE_ID(c));
		assert_int_equal(ev->is_active, e & 1);
		assert_int_equal(ev->tid, (uint64_t)writer);
		assert_true(ev->ts >= t0 && ev->ts <= t1);
		if (e == 0) {
			station[c] = ev->station;
			first_n[c] = ev->n;
		} else {
			/* A coroutine stays on its station... */
			assert_int_equal(ev->station, station[c]);
			/* ...and its events are consecutive numbers there. */
			assert_int_equal(ev->n, first_n[c] + e);
			assert_true(ev->ts >= last_ts[c]);
		}
		last_ts[c] = ev->ts;
		/* Per station, n strictly increasing across occupants. */
		if (used[ev->station])
			assert_true(ev->n > last_n[ev->station]);
		else
			distinct++;
		used[ev->station] = true;
		last_n[ev->station] = ev->n;
		next_e[c]++;
	}
	for (unsigned c = 0; c < ncoro; c++) {
		if (next_e[c] != k)
			print_error("coroutine %u: %u of %u events\n", c,
				    next_e[c], k);
		assert_int_equal(next_e[c], k);
	}
	free(next_e);
	free(station);
	free(first_n);
	free(last_ts);
	free(last_n);
	free(used);
	return distinct;
}

static void test_seq_exactly_once(void **state)
{
	enum { M = 16, K = 500 };
	char *argv[] = {ITEST_WRITER, "seq", "16", "500", "16", "2000", NULL};
	struct engine_config cfg;
	/* static: a failed test's teardown still reaches them */
	static struct it_events col;
	static struct it_run r;
	unsigned stations;

	(void)state;
	it_events_init(&col);
	engine_config_defaults(&cfg);
	cfg.argv = argv;
	cfg.stations = 256;
	/* Every coroutine's K events fit its deep ring: lost == 0 holds
	 * however long the harvester is kept off the CPU. */
	cfg.ring_depth = 1024;
	cfg.linger_ns = 600ull * 1000000000u;
	cfg.event_hook = it_events_hook;
	cfg.hook_ctx = &col;
	if (!it_run_target(&cfg, 60000, &r))
		fail_msg("engine: %s", r.err);
	if (!r.exited || r.exit_code != 0) /* 77: the probe did not attach */
		fail_msg("writer: exit %d %s", r.exit_code, r.err);

	print_message("seq: harvested %zu events, lost %llu, untraced %llu, "
		      "torn %llu, sleeps %llu, scans %llu\n",
		      col.n, (unsigned long long)r.snap.t.lost,
		      (unsigned long long)r.snap.t.untraced,
		      (unsigned long long)r.snap.t.torn,
		      (unsigned long long)r.stats.sleeps,
		      (unsigned long long)r.stats.scans);
	assert_int_equal(col.n, M * K);
	assert_int_equal(r.snap.t.events, M * K);
	assert_int_equal(r.snap.t.lost, 0);
	assert_int_equal(r.snap.t.untraced, 0);
	stations =
		check_streams(&col, M, K, r.snap.target.pid, 256, r.t0, r.t1);
	assert_int_equal(stations, M);
	/* And the writer's process station (docs/WIRE.md, "Processes"). */
	assert_int_equal(r.snap.t.stations_allocated, M + 1);

	/* Every coroutine was closed before exit: all dead, all complete. */
	for (unsigned c = 0; c < M; c++) {
		const struct model_coro *mc =
			it_find_coro(&r.snap, IT_PROBE_ID(c));

		assert_non_null(mc);
		assert_int_equal(mc->state, MODEL_DEAD);
		assert_int_equal(mc->switches, K);
		assert_int_equal(mc->lost, 0);
		assert_int_equal(mc->last_addr, IT_ADDR(c, K - 1));
	}
	assert_int_equal(r.snap.t.dead, M);
	assert_int_equal(r.snap.t.running + r.snap.t.suspended, 0);
	assert_int_equal(r.snap.t.coroutines_seen, M);
	it_run_finish(&r);
	it_events_free(&col);
}

static void test_churn_recycles_without_mixing(void **state)
{
	enum { TOTAL = 2000, LIVE = 16, K = 8, STATIONS = 64 };
	char *argv[] = {ITEST_WRITER, "churn", "2000", "16", "8", "2000", NULL};
	struct engine_config cfg;
	/* static: a failed test's teardown still reaches them */
	static struct it_events col;
	static struct it_run r;
	unsigned dead = 0;

	(void)state;
	it_events_init(&col);
	engine_config_defaults(&cfg);
	cfg.argv = argv;
	cfg.stations = STATIONS;
	cfg.linger_ns = 600ull * 1000000000u;
	cfg.event_hook = it_events_hook;
	cfg.hook_ctx = &col;
	if (!it_run_target(&cfg, 90000, &r))
		fail_msg("engine: %s", r.err);
	if (!r.exited || r.exit_code != 0)
		fail_msg("writer: exit %d %s", r.exit_code, r.err);

	print_message("churn: %d coroutines on %d stations: harvested %zu, "
		      "lost %llu, untraced %llu, recycled %llu, seen %llu\n",
		      TOTAL, STATIONS, col.n, (unsigned long long)r.snap.t.lost,
		      (unsigned long long)r.snap.t.untraced,
		      (unsigned long long)r.snap.t.recycled,
		      (unsigned long long)r.snap.t.coroutines_seen);
	assert_int_equal(r.snap.t.untraced, 0);
	assert_int_equal(r.snap.t.lost, 0);
	assert_true(r.snap.t.recycled > 0);
	/* At most 64 fresh stations: every other birth reused one, and the
	 * engine recycled every station whose coroutine died. */
	assert_true(r.snap.t.stations_allocated <= STATIONS);
	assert_true(r.snap.t.stations_allocated >= LIVE);
	assert_int_equal(r.snap.t.recycled, TOTAL);
	assert_int_equal(r.snap.t.coroutines_seen, TOTAL);
	assert_int_equal(col.n, TOTAL * K);
	/* Every station but the writer's process station. */
	assert_int_equal(check_streams(&col, TOTAL, K, r.snap.target.pid,
				       STATIONS, r.t0, r.t1),
			 r.snap.t.stations_allocated - 1);

	/* Each coroutine is its own model record, dead, with its own events
	 * only: a recycled station never continued the previous history. */
	for (size_t i = 0; i < r.snap.count; i++) {
		const struct model_coro *mc = &r.snap.coro[i];
		uint64_t c = mc->probe_id - IT_PROBE_ID(0);

		assert_true(c < TOTAL);
		assert_int_equal(mc->state, MODEL_DEAD);
		assert_int_equal(mc->switches, K);
		assert_int_equal(mc->last_addr, IT_ADDR(c, K - 1));
		dead++;
	}
	assert_int_equal(dead, TOTAL);
	it_run_finish(&r);
	it_events_free(&col);
}

/*
 * One region, three writing styles at once (mixed_writer.c): corotop's
 * probe, the shipped SDKs' per-slot seqlock and a writer from the spec's
 * text alone (odd seqs complete).  Every event of every kind arrives exactly
 * once, in order, with its own payload; nothing is lost or counted twice.
 */
static void test_mixed_styles_exactly_once(void **state)
{
	enum { M = 8, K = 120 };
	static struct it_pace pace;
	static struct it_run r;
	struct engine_config cfg;
	char ackfd[16];
	char *argv[] = {ITEST_MIXED_WRITER, "8", "120", ackfd, NULL};
	int p[2];

	(void)state;
	memset(&pace, 0, sizeof(pace));
	it_events_init(&pace.col);
	assert_int_equal(pipe(p), 0);
	/* The writer keeps the read end; the write end stays here. */
	fcntl(p[1], F_SETFD, FD_CLOEXEC);
	snprintf(ackfd, sizeof(ackfd), "%d", p[0]);
	pace.ack_w = p[1];
	pace.per_round = 3 * M;
	engine_config_defaults(&cfg);
	cfg.argv = argv;
	cfg.stations = 256;
	cfg.linger_ns = 600ull * 1000000000u;
	cfg.event_hook = it_pace_hook;
	cfg.hook_ctx = &pace;
	if (!it_run_target(&cfg, 120000, &r))
		fail_msg("engine: %s", r.err);
	close(p[0]);
	close(p[1]);
	if (!r.exited || r.exit_code != 0)
		fail_msg("mixed writer: exit %d %s", r.exit_code, r.err);
	print_message("mixed: harvested %zu events, lost %llu, torn %llu, "
		      "untraced %llu\n",
		      pace.col.n, (unsigned long long)r.snap.t.lost,
		      (unsigned long long)r.snap.t.torn,
		      (unsigned long long)r.snap.t.untraced);
	assert_int_equal(pace.col.n, 3 * M * K);
	assert_int_equal(r.snap.t.events, 3 * M * K);
	assert_int_equal(r.snap.t.lost, 0);
	assert_int_equal(check_streams(&pace.col, 3 * M, K, r.snap.target.pid,
				       256, r.t0, r.t1),
			 3 * M);
	for (unsigned c = 0; c < 3 * M; c++) {
		const struct model_coro *mc =
			it_find_coro(&r.snap, IT_PROBE_ID(c));

		assert_non_null(mc);
		assert_int_equal(mc->state, MODEL_DEAD);
		assert_int_equal(mc->switches, K);
		assert_int_equal(mc->lost, 0);
	}
	it_run_finish(&r);
	it_events_free(&pace.col);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_seq_exactly_once,
					  it_teardown_run),
		cmocka_unit_test_teardown(test_churn_recycles_without_mixing,
					  it_teardown_run),
		cmocka_unit_test_teardown(test_mixed_styles_exactly_once,
					  it_teardown_run),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
