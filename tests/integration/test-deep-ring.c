/*
 * test-deep-ring: corotop's own probe loses nothing while the harvester is
 * held still for longer than the spec's eight slots last.
 *
 * Concept.  The engine's pass_hook (engine_config) holds the harvest thread
 * at the top of its loop; this process's probe, attached to the engine's
 * region like any target, then writes 60 events on one coroutine -- more
 * than eight slots hold, fewer than the deep ring's 64.  Released, the
 * engine must deliver every one of them (switches 61, lost 0).  The same
 * run with ring_depth 0 (the spec's slots only) must lose exactly the 52
 * events the eight slots could not keep: the deep ring is what saved them,
 * not luck.  A hub (COROTOP_CORO_HUB, an event loop's root) rides out 600
 * in its longer ring, where any other coroutine loses all but 64.  No timing is
 * involved: the writer runs only while the harvester is provably parked, and
 * every wait has a deadline.
 *
 * Also against this process's probe: the header's "asleep" agrees with the
 * rate, and a late observer counts what it never saw as before_start.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <pthread.h>

#include "corotop/probe.h"
#include "engine/engine.h"
#include "../common/itest.h"

/* The pass hook's gate: the test closes it, waits for the harvest thread to
 * arrive, writes, then opens it again. */
struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool closed;
	bool parked; /* the harvest thread waits in the hook */
};

static void gate_hook(void *ctx)
{
	struct gate *g = ctx;

	pthread_mutex_lock(&g->mu);
	while (g->closed) {
		g->parked = true;
		pthread_cond_broadcast(&g->cv);
		pthread_cond_wait(&g->cv, &g->mu);
	}
	g->parked = false;
	pthread_mutex_unlock(&g->mu);
}

/* Close the gate and wait until the harvest thread is held by it. */
static void gate_close(struct gate *g)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 30;
	pthread_mutex_lock(&g->mu);
	g->closed = true;
	while (!g->parked)
		if (pthread_cond_timedwait(&g->cv, &g->mu, &dl) != 0)
			break;
	assert_true(g->parked);
	pthread_mutex_unlock(&g->mu);
}

static void gate_open(struct gate *g)
{
	pthread_mutex_lock(&g->mu);
	g->closed = false;
	pthread_cond_broadcast(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/* An engine that owns a region, with this process's probe attached to it
 * as a launched target's would be. */
static struct engine *inproc_start(struct engine_config *cfg)
{
	char err[512], max[16];
	struct engine *e = engine_create(cfg, err, sizeof(err));

	if (!e || !engine_start(e, err, sizeof(err)))
		fail_msg("engine: %s", err);
	snprintf(max, sizeof(max), "%u", cfg->stations);
	setenv(CTP_ENV_SHM, engine_shm_path(e), 1);
	setenv(CTP_ENV_SOCK, engine_sock_path(e), 1);
	setenv(CTP_ENV_MAX, max, 1);
	if (!corotop_probe_init())
		fail_msg("probe: %s", corotop_probe_status());
	return e;
}

static void inproc_finish(struct engine *e)
{
	corotop_probe_shutdown();
	engine_stop(e);
	engine_destroy(e);
	unsetenv(CTP_ENV_SHM);
	unsetenv(CTP_ENV_SOCK);
	unsetenv(CTP_ENV_MAX);
}

/* The coroutine as the engine sees it once it has `switches`, or NULL
 * after a 30 s deadline. */
static const struct model_coro *
wait_switches(struct engine *e, struct snapshot *snap, uint64_t switches)
{
	uint64_t end = it_now() + 30000000000ull;

	for (;;) {
		const struct model_coro *mc;

		engine_snapshot(e, snap);
		mc = it_find_coro(snap, IT_PROBE_ID(0));
		if (mc && mc->switches + mc->lost >= switches)
			return mc;
		if (it_now() > end)
			return mc;
		it_sleep_ms(5);
	}
}

/* Hold the harvester, write `burst` events on a coroutine opened with
 * `flags` (COROTOP_CORO_HUB or 0), release; returns the coroutine's lost
 * count once everything written is accounted for. */
static uint64_t held_burst(unsigned depth, unsigned burst, unsigned flags)
{
	static struct gate g = {PTHREAD_MUTEX_INITIALIZER,
				PTHREAD_COND_INITIALIZER, false, false};
	const struct model_coro *mc;
	struct engine_config cfg;
	struct corotop_coro c;
	struct snapshot snap;
	struct engine *e;
	uint64_t lost;

	engine_config_defaults(&cfg);
	cfg.stations = 16;
	cfg.ring_depth = depth;
	cfg.linger_ns = 600ull * 1000000000u;
	cfg.pass_hook = gate_hook;
	cfg.hook_ctx = &g;
	e = inproc_start(&cfg);
	snapshot_init(&snap);

	corotop_coro_open_named(&c, IT_PROBE_ID(0), NULL, flags);
	corotop_coro_resume(&c, IT_ADDR(0, 0));
	mc = wait_switches(e, &snap, 1);
	assert_non_null(mc);

	gate_close(&g);
	for (unsigned i = 1; i <= burst; i++)
		corotop_coro_suspend(&c, IT_ADDR(0, i));
	gate_open(&g);

	mc = wait_switches(e, &snap, 1 + burst);
	assert_non_null(mc);
	assert_int_equal(mc->switches + mc->lost, 1 + burst);
	lost = mc->lost;
	print_message("depth %u%s: %u events while the harvester was held: "
		      "%llu delivered, %llu lost\n",
		      depth, flags & COROTOP_CORO_HUB ? " (a hub)" : "", burst,
		      (unsigned long long)mc->switches - 1,
		      (unsigned long long)lost);
	if (!lost)
		assert_int_equal(mc->last_addr, IT_ADDR(0, burst));

	corotop_coro_close(&c);
	inproc_finish(e);
	snapshot_finish(&snap);
	return lost;
}

static void test_deep_ring_rides_out_a_held_harvester(void **state)
{
	(void)state;
	assert_int_equal(held_burst(64, 60, 0), 0);
}

/* A hub (an event loop's root: COROTOP_CORO_HUB) has the region's longer
 * ring (REGION_HUB_DEPTH, 1024 here): 600 events held are all delivered,
 * where a coroutine that is not one keeps the last 64 and loses 536. */
static void test_hub_ring_rides_out_longer(void **state)
{
	(void)state;
	assert_int_equal(held_burst(64, 600, COROTOP_CORO_HUB), 0);
	assert_int_equal(held_burst(64, 600, 0), 600 - 64);
}

static void test_spec_slots_lose_what_they_cannot_hold(void **state)
{
	(void)state;
	/* 60 events into 8 slots: the oldest 52 were overwritten. */
	assert_int_equal(held_burst(0, 60, 0), 52);
	/* Without a deep area there are no hubs either. */
	assert_int_equal(held_burst(0, 60, COROTOP_CORO_HUB), 52);
}

/*
 * The header's state word is true when drawn: an engine that harvested in
 * the last rate window says "harvesting", even while it naps between two
 * bursts.  (It used to say "asleep" next to ~24,000 events/s.)
 */
static void test_asleep_only_when_the_rate_agrees(void **state)
{
	struct engine_config cfg;
	struct engine_stats st;
	struct corotop_coro c;
	struct snapshot snap;
	struct engine *e;
	uint64_t end;
	bool checked = false;

	(void)state;
	engine_config_defaults(&cfg);
	cfg.stations = 16;
	e = inproc_start(&cfg);
	snapshot_init(&snap);
	corotop_coro_open(&c, IT_PROBE_ID(0));
	for (unsigned i = 0; i < 20; i++)
		corotop_coro_resume(&c, IT_ADDR(0, i));
	/* Wait (deadline) for a rate window that saw the events and an
	 * engine asleep because nothing more comes. */
	for (end = it_now() + 30000000000ull; it_now() < end; it_sleep_ms(2)) {
		engine_stats(e, &st);
		engine_snapshot(e, &snap);
		if (snap.t.events_per_sec > 0 && st.asleep) {
			engine_snapshot(e, &snap);
			if (snap.t.events_per_sec == 0)
				continue; /* the window moved on meanwhile */
			assert_false(snap.sleeping);
			checked = true;
			break;
		}
	}
	corotop_coro_close(&c);
	inproc_finish(e);
	snapshot_finish(&snap);
	if (!checked)
		skip(); /* never saw both at once within the deadline */
}

/*
 * An observer (--shm) that starts after the target wrote: the history its
 * first look no longer finds is "before start", never lost; what it misses
 * after that is loss as usual.
 */
static void test_late_observer_history_is_before_start(void **state)
{
	struct engine_config cfg, ocfg;
	struct corotop_coro c;
	struct snapshot snap;
	struct engine *e, *o;
	char err[512];
	const struct model_coro *mc;
	uint64_t end;

	(void)state;
	engine_config_defaults(&cfg);
	cfg.stations = 16;
	e = inproc_start(&cfg);
	snapshot_init(&snap);
	corotop_coro_open(&c, IT_PROBE_ID(0));
	/* Four bursts the owner reads one by one (deadline): 100 events,
	 * more than the ring holds, none lost by the owner. */
	for (unsigned b = 0; b < 4; b++) {
		for (unsigned i = 0; i < 25; i++)
			corotop_coro_resume(&c, IT_ADDR(0, 25 * b + i));
		mc = wait_switches(e, &snap, 25 * (b + 1));
		assert_non_null(mc);
	}
	assert_int_equal(mc->switches, 100);
	/* ...then an observer looks: 64 events are still in the ring. */
	engine_config_defaults(&ocfg);
	ocfg.shm_path = engine_shm_path(e);
	o = engine_create(&ocfg, err, sizeof(err));
	if (!o || !engine_start(o, err, sizeof(err)))
		fail_msg("observer: %s", err);
	for (end = it_now() + 30000000000ull; it_now() < end; it_sleep_ms(5)) {
		engine_snapshot(o, &snap);
		if (snap.t.events + snap.t.before_start >= 100)
			break;
	}
	print_message("observer: %llu delivered, %llu before start, %llu "
		      "lost\n",
		      (unsigned long long)snap.t.events,
		      (unsigned long long)snap.t.before_start,
		      (unsigned long long)snap.t.lost);
	assert_int_equal(snap.t.events, 64);
	assert_int_equal(snap.t.before_start, 36);
	assert_int_equal(snap.t.lost, 0);
	engine_stop(o);
	engine_destroy(o);
	corotop_coro_close(&c);
	inproc_finish(e);
	snapshot_finish(&snap);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deep_ring_rides_out_a_held_harvester),
		cmocka_unit_test(test_hub_ring_rides_out_longer),
		cmocka_unit_test(test_spec_slots_lose_what_they_cannot_hold),
		cmocka_unit_test(test_asleep_only_when_the_rate_agrees),
		cmocka_unit_test(test_late_observer_history_is_before_start),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
