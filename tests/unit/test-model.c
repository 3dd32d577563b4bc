/*
 * model: the per-coroutine records built from harvested events
 * (src/engine/model/model.c).  Driven directly with open/event/lost/close calls
 * at chosen timestamps: time is charged to the state being left, a watched
 * record keeps its transitions oldest first after its seed, losses attach
 * to the next transition, dead records linger and are then reused, rates come
 * from model_tick, and a recycled station always starts a fresh record.  The
 * `recycled` flag of model_close is kept on the dead record (the dead-station
 * lint reads it) and never leaks into the station's next record.  A census
 * event sets the state since its time without a switch or an interval.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/model/model.h"

#define LINGER 500

static int setup(void **state)
{
	struct model *m = calloc(1, sizeof(*m));

	assert_true(model_init(m, 8, LINGER));
	*state = m;
	return 0;
}

static int teardown(void **state)
{
	model_finish(*state);
	free(*state);
	return 0;
}

static struct model_coro *rec(struct model *m, uint32_t station)
{
	uint32_t r = m->by_station[station];

	return r == MODEL_NONE ? NULL : &m->coro[r];
}

static void ev(struct model *m, uint32_t st, uint64_t ts, uint64_t n,
	       bool active)
{
	model_event(m, st, ts, 100 + n, 0x1000 + n, 2 * n + 2, n, n % 8,
		    active);
}

static void test_open_event_close(void **state)
{
	struct model *m = *state;
	struct model_coro *c;
	uint32_t r;

	assert_null(rec(m, 0));
	model_open(m, 0, 0xABC, 100);
	c = rec(m, 0);
	assert_non_null(c);
	r = m->by_station[0];
	assert_true(c->id == 1);
	assert_true(c->probe_id == 0xABC);
	assert_true(c->birth_ts == 100);
	assert_int_equal(c->state, MODEL_SUSPENDED);
	assert_int_equal(c->station, 0);
	assert_int_equal(c->in_use, 1);
	ev(m, 0, 200, 0, true);
	assert_int_equal(c->state, MODEL_RUNNING);
	assert_true(c->last_tid == 100 && c->last_addr == 0x1000);
	assert_true(c->last_seq == 2);
	assert_true(c->switches == 1);
	model_close(m, 0, 700, true);
	assert_null(rec(m, 0));
	assert_int_equal(m->coro[r].state, MODEL_DEAD);
	assert_true(m->coro[r].dead_ts == 700);
	/* Events for a station without a record are counted, not kept. */
	ev(m, 0, 800, 1, false);
	assert_true(m->coro[r].switches == 1);
	assert_true(m->t.events == 2);
	assert_true(m->t.coroutines_seen == 1);
	/* Out-of-range stations are ignored safely. */
	model_open(m, 8, 1, 1);
	model_event(m, 99, 1, 1, 1, 1, 1, 0, true);
	model_lost(m, 99, 5);
	model_close(m, 99, 1, true);
	assert_true(m->t.coroutines_seen == 1);
	assert_true(m->t.lost == 5);
}

/* A scanned record proven idle (engine/scan/scanner_idle.c): suspended
 * since the proof's start; no longer proven, since now; a record that
 * is not scanned, or not suspended, is left as it was. */
static void test_idle(void **state)
{
	struct model *m = *state;
	struct model_coro *c;

	model_open(m, 1, 0x10, 1000);
	c = rec(m, 1);
	model_idle(m, 1, true, 500, 2000); /* not scanned: as it was */
	assert_int_equal(c->idle, 0);
	assert_true(c->state_ts == 1000);
	model_found(m, 1, false, false);
	model_idle(m, 1, true, 500, 2000);
	assert_int_equal(c->idle, 1);
	assert_true(c->state_ts == 500);
	model_idle(m, 1, false, 2000, 3000);
	assert_int_equal(c->idle, 0);
	assert_true(c->state_ts == 3000);
	ev(m, 1, 4000, 1, true); /* running: not proven idle */
	model_idle(m, 1, true, 500, 5000);
	assert_int_equal(c->idle, 0);
	assert_true(c->state_ts == 4000);
	model_idle(m, 7, true, 500, 5000); /* no record: nothing */
}

static void test_time_accounting(void **state)
{
	struct model *m = *state;
	struct model_coro *c;
	uint32_t r;

	model_open(m, 1, 7, 1000);
	c = rec(m, 1);
	r = m->by_station[1];
	ev(m, 1, 1100, 0, true);  /* suspended 1000..1100 */
	ev(m, 1, 1400, 1, false); /* running 1100..1400 */
	ev(m, 1, 1450, 2, true);  /* suspended 1400..1450 */
	assert_true(c->susp_ns == 150);
	assert_true(c->run_ns == 300);
	assert_true(c->state_ts == 1450);
	/* A late (older) timestamp charges nothing and does not rewind. */
	ev(m, 1, 1420, 3, true);
	assert_true(c->run_ns == 300 && c->susp_ns == 150);
	assert_true(c->state_ts == 1450);
	model_close(m, 1, 1600, true); /* running 1450..1600 */
	assert_true(m->coro[r].run_ns == 450);
	assert_true(m->coro[r].susp_ns == 150);
	assert_int_equal(m->coro[r].state, MODEL_DEAD);
}

/* A watched record's transitions keep their order and fields; the seed
 * comes first. */
static void test_watch_order_and_seed(void **state)
{
	struct model *m = *state;
	struct model_transition seed[2] = {
		{.n = 3, .ts = 7, .addr = 0x77, .from_ring = 1},
		{.n = 4,
		 .ts = 8,
		 .addr = 0x78,
		 .lost_before = 0,
		 .from_ring = 1},
	};
	struct model_coro *c;

	model_open(m, 2, 1, 0);
	c = rec(m, 2);
	assert_true(model_watch(m, c->id, seed, 2));
	for (uint64_t n = 5; n < 19; n++)
		ev(m, 2, 10 + n, n, n & 1);
	assert_int_equal(m->watch.count, 16);
	assert_true(model_watch_at(m, 0)->n == 3 &&
		    model_watch_at(m, 0)->from_ring);
	assert_true(model_watch_at(m, 1)->addr == 0x78);
	for (unsigned i = 2; i < 16; i++) {
		const struct model_transition *t = model_watch_at(m, i);

		assert_true(t->n == 3 + i);
		assert_true(t->ts == 13 + i);
		assert_true(t->addr == 0x1000 + 3 + i);
		assert_int_equal(t->is_active, (3 + i) & 1);
		assert_int_equal(t->from_ring, 0);
	}
	assert_true(c->switches == 14);
}

static void test_lost_before_next_transition(void **state)
{
	struct model *m = *state;
	struct model_coro *c;

	model_open(m, 3, 1, 0);
	c = rec(m, 3);
	assert_true(model_watch(m, c->id, NULL, 0));
	ev(m, 3, 10, 0, true);
	model_lost(m, 3, 3);
	model_lost(m, 3, 2);
	assert_true(c->lost == 5 && c->pending_lost == 5);
	ev(m, 3, 20, 6, false);
	ev(m, 3, 30, 7, true);
	assert_int_equal(m->watch.count, 3);
	assert_true(model_watch_at(m, 0)->lost_before == 0);
	assert_true(model_watch_at(m, 1)->lost_before == 5);
	assert_true(model_watch_at(m, 2)->lost_before == 0);
	assert_true(c->pending_lost == 0);
	assert_true(c->lost == 5);
	assert_true(m->t.lost == 5);
}

/*
 * One running context per thread, with a forced loss: A runs on thread 7,
 * its suspend is lost, B resumes on 7 -- A was suspended by then: shown
 * so, marked inferred until its next harvested transition, with its time
 * charged as the events say.  A resume on another thread changes nothing
 * on 7.  An older resume harvested after a newer one on the same thread
 * (stations are harvested one after the other): the older is the one
 * suspended.  A dead one stays dead.
 */
static void test_one_running_per_thread(void **state)
{
	struct model *m = *state;
	struct model_coro *a, *b, *c, *d;

	model_open(m, 1, 1, 0);
	model_open(m, 2, 2, 0);
	model_open(m, 3, 3, 0);
	model_open(m, 4, 4, 0);
	a = rec(m, 1);
	b = rec(m, 2);
	c = rec(m, 3);
	d = rec(m, 4);
	for (uint32_t st = 1; st <= 4; st++)
		model_context(m, st);
	model_event(m, 1, 100, 7, 0x10, 2, 0, 0, true);
	model_lost(m, 1, 1);
	model_event(m, 2, 150, 7, 0x20, 2, 0, 0, true);
	assert_int_equal(a->state, MODEL_SUSPENDED);
	assert_true(a->inferred);
	/* Only the state is implied: no time is charged for it. */
	assert_int_equal(a->state_ts, 100);
	assert_int_equal(a->run_ns, 0);
	assert_int_equal(b->state, MODEL_RUNNING);
	assert_false(b->inferred);
	assert_int_equal(m->t.inferred, 1);
	/* Thread 8: nothing changes on 7. */
	model_event(m, 3, 160, 8, 0x30, 2, 0, 0, true);
	assert_int_equal(b->state, MODEL_RUNNING);
	assert_int_equal(c->state, MODEL_RUNNING);
	/* D's resume on 7 at 120, harvested after B's at 150: D is the one
	 * suspended, at B's resume; B still runs. */
	model_event(m, 4, 120, 7, 0x40, 2, 0, 0, true);
	assert_int_equal(d->state, MODEL_SUSPENDED);
	assert_true(d->inferred);
	assert_int_equal(d->state_ts, 120);
	assert_int_equal(b->state, MODEL_RUNNING);
	assert_int_equal(m->t.inferred, 2);
	/* A's next harvested transition says what it is. */
	model_event(m, 1, 200, 7, 0x11, 4, 1, 1, true);
	assert_false(a->inferred);
	assert_int_equal(a->run_ns, 100); /* as harvested: running since 100 */
	assert_int_equal(a->state, MODEL_RUNNING);
	assert_int_equal(b->state, MODEL_SUSPENDED);
	assert_true(b->inferred);
	/* A dead coroutine is never suspended by implication. */
	model_close(m, 1, 210, true);
	model_event(m, 3, 240, 7, 0x31, 4, 1, 1, true);
	assert_int_equal(a->state, MODEL_DEAD);
	/* Implied now: B and D (A's own transition cleared its mark). */
	assert_int_equal(m->t.inferred, 2);
	model_close(m, 4, 250, true);
	assert_false(d->inferred);
	assert_int_equal(m->t.inferred, 1);
	/* Coroutines that are not contexts of their own may nest on a
	 * thread (stackless ones): nothing is implied. */
	model_open(m, 5, 5, 300);
	model_open(m, 6, 6, 300);
	model_event(m, 5, 310, 11, 0x60, 2, 0, 0, true);
	model_event(m, 6, 320, 11, 0x70, 2, 0, 0, true);
	assert_int_equal(rec(m, 5)->state, MODEL_RUNNING);
	assert_int_equal(rec(m, 6)->state, MODEL_RUNNING);
	assert_int_equal(m->t.inferred, 1);
}

/* Counts a lying region names near 2^64 saturate; they never wrap to a
 * small (or, printed, a nonsense 18446744073709551480) total. */
static void test_lost_saturates(void **state)
{
	struct model *m = *state;

	model_open(m, 1, 1, 0);
	model_open(m, 2, 2, 0);
	model_lost(m, 1, UINT64_MAX - 10);
	model_lost(m, 2, 100);
	assert_true(m->t.lost == UINT64_MAX);
	model_lost(m, 1, 20);
	assert_true(rec(m, 1)->lost == UINT64_MAX);
	assert_true(rec(m, 2)->lost == 100);
}

/* The record is what snapshots copy 100k at a time: keep it small. */
static void test_record_size(void **state)
{
	(void)state;
	assert_true(sizeof(struct model_coro) <= 128);
}

static void test_linger_expiry_and_reuse(void **state)
{
	struct model *m = *state;
	uint32_t r, nfree;
	uint64_t old_id;

	model_open(m, 0, 1, 100);
	r = m->by_station[0];
	old_id = m->coro[r].id;
	model_close(m, 0, 1000, true);
	nfree = m->nfree;
	model_tick(m, 1400);
	assert_int_equal(m->coro[r].in_use, 1); /* lingering */
	assert_int_equal(m->t.dead, 1);
	model_tick(m, 1000 + LINGER); /* exactly linger: still visible */
	assert_int_equal(m->coro[r].in_use, 1);
	model_tick(m, 1000 + LINGER + 1);
	assert_int_equal(m->coro[r].in_use, 0);
	assert_int_equal(m->nfree, nfree + 1);
	assert_int_equal(m->t.dead, 0);
	/* The freed record is the next one used, with a new id. */
	model_open(m, 5, 2, 2000);
	assert_int_equal(m->by_station[5], r);
	assert_true(m->coro[r].id > old_id);
	assert_true(m->coro[r].switches == 0);
	assert_int_equal(m->coro[r].state, MODEL_SUSPENDED);
	assert_int_equal(m->coro[r].station, 5);
	/* Live records never expire. */
	model_tick(m, 1000000);
	assert_int_equal(m->coro[r].in_use, 1);
	/* A row's (id, slot) finds its record, and not the slot's next
	 * occupant once it is gone. */
	assert_int_equal(model_find_at(m, m->coro[r].id, r), r);
	assert_int_equal(model_find_at(m, old_id, r), MODEL_NONE);
	assert_int_equal(model_find_at(m, m->coro[r].id, r + 1), MODEL_NONE);
	assert_int_equal(model_find_at(m, m->coro[r].id, UINT32_MAX),
			 MODEL_NONE);
	assert_int_equal(model_find_at(m, 0, r), MODEL_NONE);
}

static void test_tick_rates_and_counts(void **state)
{
	struct model *m = *state;

	model_open(m, 0, 1, 0);
	model_open(m, 1, 2, 0);
	model_open(m, 2, 3, 0);
	model_tick(m, 1000000000ull); /* first tick: sets the base only */
	assert_true(m->t.events_per_sec == 0.0);
	for (uint64_t n = 0; n < 10; n++)
		ev(m, 0, 1000000000ull + n, n, true);
	for (uint64_t n = 0; n < 4; n++)
		ev(m, 1, 1000000000ull + n, n, false);
	/* Within linger at the tick. */
	model_close(m, 2, 1500000000ull - 100, true);
	model_tick(m, 1500000000ull); /* 0.5 s later */
	assert_true(m->t.events_per_sec == 28.0);
	assert_true(m->coro[m->by_station[0]].sw_per_sec == 20.0);
	assert_true(m->coro[m->by_station[1]].sw_per_sec == 8.0);
	assert_int_equal(m->t.running, 1);
	assert_int_equal(m->t.suspended, 1);
	assert_int_equal(m->t.dead, 1);
	/* A tick that does not move forward, or moves less than
	 * MODEL_RATE_MIN_NS, keeps the previous rates: one switch in 10 µs is
	 * not 100k switches/s.  Its events count in the next interval. */
	ev(m, 0, 1500000000ull, 10, true);
	model_tick(m, 1500000000ull);
	assert_true(m->t.events_per_sec == 28.0);
	assert_true(m->coro[m->by_station[0]].sw_per_sec == 20.0);
	model_tick(m, 1500010000ull);
	assert_true(m->t.events_per_sec == 28.0);
	assert_true(m->coro[m->by_station[0]].sw_per_sec == 20.0);
	model_tick(m, 2500000000ull);
	assert_true(m->t.events_per_sec == 1.0);
	assert_true(m->coro[m->by_station[0]].sw_per_sec == 1.0);
	/* No events in the next interval: rates fall to zero. */
	model_tick(m, 3500000000ull);
	assert_true(m->t.events_per_sec == 0.0);
	assert_true(m->coro[m->by_station[0]].sw_per_sec == 0.0);
}

static void test_recycled_station_fresh_record(void **state)
{
	struct model *m = *state;
	uint32_t r1, r2;

	model_open(m, 4, 0xAAA, 10);
	r1 = m->by_station[4];
	ev(m, 4, 20, 0, true);
	model_lost(m, 4, 2);
	model_close(m, 4, 30, true);
	/* The same station, next occupant (same probe_id even). */
	model_open(m, 4, 0xAAA, 40);
	r2 = m->by_station[4];
	assert_int_not_equal(r1, r2);
	assert_true(m->coro[r2].id > m->coro[r1].id);
	assert_true(m->coro[r2].switches == 0);
	assert_true(m->coro[r2].lost == 0);
	assert_true(m->coro[r2].pending_lost == 0);
	assert_true(m->coro[r2].birth_ts == 40);
	ev(m, 4, 50, 1, false);
	/* The old record keeps its own history. */
	assert_true(m->coro[r1].switches == 1);
	assert_true(m->coro[r1].lost == 2);
	assert_int_equal(m->coro[r1].state, MODEL_DEAD);
	assert_true(m->coro[r2].switches == 1);
	assert_true(m->t.coroutines_seen == 2);
}

static void test_open_over_live_record_closes_it(void **state)
{
	struct model *m = *state;
	uint32_t r1;

	model_open(m, 6, 1, 100);
	r1 = m->by_station[6];
	ev(m, 6, 150, 0, true);
	model_open(m, 6, 2, 400); /* missed close: a new generation */
	assert_int_equal(m->coro[r1].state, MODEL_DEAD);
	assert_true(m->coro[r1].dead_ts == 400);
	assert_true(m->coro[r1].run_ns == 250);
	assert_int_not_equal(m->by_station[6], r1);
	assert_true(rec(m, 6)->probe_id == 2);
}

static void test_grows_past_initial_capacity(void **state)
{
	struct model m;
	uint64_t ids = 0;

	(void)state;
	assert_true(model_init(&m, 3000, 0));
	for (uint32_t i = 0; i < 3000; i++) {
		model_open(&m, i, i, i);
		assert_non_null(rec(&m, i));
		ids += rec(&m, i)->id;
	}
	assert_true(m.cap >= 3000);
	assert_true(ids == 3000ull * 3001 / 2); /* ids 1..3000, distinct */
	for (uint32_t i = 0; i < 3000; i++)
		assert_true(rec(&m, i)->probe_id == i);
	model_finish(&m);
}

static void test_close_records_recycled(void **state)
{
	struct model *m = *state;
	uint32_t r0, r1, r2;

	model_open(m, 0, 1, 10);
	r0 = m->by_station[0];
	assert_int_equal(m->coro[r0].recycled, 0);
	model_close(m, 0, 20, false); /* e.g. an upstream station */
	assert_int_equal(m->coro[r0].state, MODEL_DEAD);
	assert_int_equal(m->coro[r0].recycled, 0);

	model_open(m, 1, 2, 10);
	r1 = m->by_station[1];
	model_close(m, 1, 20, true);
	assert_int_equal(m->coro[r1].recycled, 1);

	/* A missed close: the next occupant took the station, so the old
	 * record's station was recycled by definition. */
	model_open(m, 2, 3, 10);
	r2 = m->by_station[2];
	model_open(m, 2, 4, 30);
	assert_int_equal(m->coro[r2].recycled, 1);
	assert_int_equal(m->coro[r2].state, MODEL_DEAD);
	/* The new record starts clean, and the model never sets warn. */
	assert_int_equal(rec(m, 2)->recycled, 0);
	assert_int_equal(rec(m, 2)->warn, 0);
	assert_int_equal(m->coro[r0].warn, 0);
}

/* The watched record keeps every transition after its seed, the newest
 * MODEL_WATCH_MAX on overflow; other records add nothing. */
static void test_watch_history(void **state)
{
	struct model *m = *state;
	uint64_t id;

	model_open(m, 0, 0xA, 10);
	model_open(m, 1, 0xB, 10);
	for (uint64_t n = 0; n < 10; n++)
		model_event(m, 0, 100 + n, 1, n, 2 * n + 2, n, n % 8, n & 1);
	id = rec(m, 0)->id;
	assert_true(model_find(m, id) == m->by_station[0]);
	assert_true(model_find(m, 12345) == MODEL_NONE);
	assert_true(model_watch(m, id, NULL, 0));
	assert_int_equal(m->watch.count, 0);
	for (uint64_t n = 0; n < 8; n++)
		model_event(m, 0, 100 + n, 1, n, 2 * n + 2, n, n % 8, n & 1);
	assert_int_equal(m->watch.count, 8);
	assert_int_equal(model_watch_at(m, 0)->n, 0);
	/* Each keeps the slot and the raw seq it was read with. */
	assert_int_equal(model_watch_at(m, 5)->slot, 5);
	assert_int_equal(model_watch_at(m, 5)->seq, 12);
	model_event(m, 1, 500, 1, 0, 2, 0, 0, 1); /* not watched */
	assert_int_equal(m->watch.count, 8);
	for (uint64_t n = 10; n < 10 + MODEL_WATCH_MAX; n++)
		model_event(m, 0, 100 + n, 1, n, 2 * n + 2, n, n % 8, n & 1);
	assert_int_equal(m->watch.count, MODEL_WATCH_MAX);
	/* Oldest kept is the one MODEL_WATCH_MAX before the newest. */
	assert_int_equal(model_watch_at(m, 0)->n, 10);
	assert_int_equal(model_watch_at(m, MODEL_WATCH_MAX - 1)->n,
			 9 + MODEL_WATCH_MAX);
	assert_true(model_watch(m, 0, NULL, 0));
	assert_int_equal(m->watch.count, 0);
	model_event(m, 0, 99999, 1, 0, 2, 99999, 99999 % 8, 0);
	assert_int_equal(m->watch.count, 0);
}

/* The parked trace id lives in a side array by slot, set and cleared by
 * model_park, cleared at death, never inherited by a record reusing the
 * slot; the 128-byte record does not grow. */
static void test_parked_side_array(void **state)
{
	struct model *m = *state;
	struct model_coro *c;
	uint32_t slot;

	assert_true(sizeof(struct model_coro) <= 128);
	model_open(m, 0, 7, 100);
	c = rec(m, 0);
	slot = c->slot;
	ev(m, 0, 110, 0, false);
	model_park(m, 0, 5ull << 32 | 9);
	assert_true(m->parked[slot] == (5ull << 32 | 9));
	model_park(m, 1, 1ull << 32); /* no record on station 1: ignored */
	ev(m, 0, 120, 1, true);
	model_park(m, 0, 0);
	assert_int_equal(m->parked[slot], 0);
	model_park(m, 0, 6ull << 32);
	model_close(m, 0, 130, true);
	assert_int_equal(m->parked[slot], 0);
	model_tick(m, 130 + LINGER + 1); /* expire: the slot is free again */
	model_open(m, 0, 8, 200);
	assert_int_equal(rec(m, 0)->slot, slot);
	assert_int_equal(m->parked[slot], 0);
}

/* A census event (a coroutine found at a late attach): its state since
 * its real time, no switch, no interval charged; the next transition then
 * charges from there. */
static void test_census(void **state)
{
	struct model *m = *state;
	struct model_coro *c;

	model_open(m, 0, 0xC0, 100);
	model_census(m, 0, 150, 7, 0x99, 2, false);
	c = rec(m, 0);
	assert_int_equal(c->state, MODEL_SUSPENDED);
	assert_int_equal(c->state_ts, 150);
	assert_int_equal(c->birth_ts, 100);
	assert_int_equal(c->last_tid, 7);
	assert_int_equal(c->last_addr, 0x99);
	assert_int_equal(c->last_seq, 2);
	assert_int_equal(c->switches, 0);
	assert_int_equal(c->run_ns + c->susp_ns, 0);
	assert_int_equal(m->t.census, 1);
	assert_int_equal(m->t.events, 1);
	ev(m, 0, 400, 1, true);
	assert_int_equal(c->switches, 1);
	assert_int_equal(c->susp_ns, 250);
	assert_int_equal(c->state, MODEL_RUNNING);
	/* Running since before the attach. */
	model_open(m, 1, 0xC1, 100);
	model_census(m, 1, 120, 8, 0x98, 2, true);
	assert_int_equal(rec(m, 1)->state, MODEL_RUNNING);
	assert_int_equal(rec(m, 1)->state_ts, 120);
	/* No record on the station: counted, nothing else. */
	model_census(m, 5, 130, 1, 1, 2, false);
	assert_int_equal(m->t.census, 3);
}

/* A long-wait mark (issue 16) holds only while the coroutine stays in the
 * suspend that carried it: any transition, a census event or the death
 * clears it, and a running coroutine never takes one. */
static void test_long_wait_mark(void **state)
{
	struct model *m = *state;
	struct model_coro *c;

	model_open(m, 0, 1, 100);
	c = rec(m, 0);
	ev(m, 0, 200, 0, true);
	model_long_wait(m, 0, true); /* running: ignored */
	assert_int_equal(c->long_wait, 0);
	ev(m, 0, 300, 1, false);
	model_long_wait(m, 0, true);
	assert_int_equal(c->long_wait, 1);
	ev(m, 0, 400, 2, true);
	assert_int_equal(c->long_wait, 0);
	ev(m, 0, 500, 3, false); /* a plain suspend */
	assert_int_equal(c->long_wait, 0);
	model_long_wait(m, 0, true);
	ev(m, 0, 600, 4, false); /* suspended again, unmarked */
	assert_int_equal(c->long_wait, 0);
	model_long_wait(m, 0, true);
	model_census(m, 0, 700, 1, 1, 12, false);
	assert_int_equal(c->long_wait, 0);
	model_long_wait(m, 0, true);
	model_close(m, 0, 800, true);
	assert_int_equal(c->long_wait, 0);
	assert_int_equal(c->recycled, 1);
	model_long_wait(m, 0, true);  /* no occupant: nothing */
	model_long_wait(m, 99, true); /* no such station */
}

/* The park marks: only suspends (and census suspends) mark; taking
 * clears, round robin from the cursor, at most max at a time, across
 * growth; a record marked again comes back. */
static void test_park_marks(void **state)
{
	struct model m;
	uint32_t out[8], cur = 0, n, seen = 0;

	(void)state;
	assert_true(model_init(&m, 3000, 0));
	for (uint32_t i = 0; i < 3000; i++)
		model_open(&m, i, i, i);
	assert_int_equal(model_take_parks(&m, &cur, out, 8), 0);
	ev(&m, 5, 10, 1, true); /* a resume: no mark */
	assert_int_equal(model_take_parks(&m, &cur, out, 8), 0);
	ev(&m, 5, 20, 2, false);
	model_census(&m, 2999, 30, 7, 0x77, 9, false);
	model_census(&m, 70, 30, 7, 0x77, 9, true);
	for (uint32_t i = 100; i < 120; i++)
		ev(&m, i, 40, 3, false);
	/* 22 marks, 8 at a time, each once. */
	while ((n = model_take_parks(&m, &cur, out, 8)) > 0) {
		assert_true(n <= 8);
		for (uint32_t k = 0; k < n; k++) {
			uint32_t st = m.coro[out[k]].station;

			assert_true(st == 5 || st == 2999 ||
				    (st >= 100 && st < 120));
			seen++;
		}
	}
	assert_int_equal(seen, 22);
	model_mark_park(&m, rec(&m, 70)->slot);
	assert_int_equal(model_take_parks(&m, &cur, out, 8), 1);
	assert_int_equal(out[0], rec(&m, 70)->slot);
	assert_int_equal(model_take_parks(&m, &cur, out, 8), 0);
	model_finish(&m);
}

/* What a record is: as its probe said (model_kind), or a dispatcher by a
 * derived name that says what a runtime made it for; a derived name of
 * the program's leaves a coroutine; a new occupant starts a coroutine. */
static void test_kind(void **state)
{
	struct model *m = *state;

	model_open(m, 0, 1, 100);
	assert_int_equal(rec(m, 0)->kind, MODEL_COROUTINE);
	model_kind(m, 0, MODEL_ROOT);
	assert_int_equal(rec(m, 0)->kind, MODEL_ROOT);
	model_open(m, 1, 2, 100);
	model_name_text(m, 1, "main::{lambda()#2}");
	assert_int_equal(rec(m, 1)->kind, MODEL_COROUTINE);
	model_open(m, 2, 3, 100);
	model_name_text(m, 2, "boost.fiber dispatcher");
	assert_int_equal(rec(m, 2)->kind, MODEL_DISPATCHER);
	/* The probe's word stands. */
	model_name_text(m, 0, "boost.fiber dispatcher");
	assert_int_equal(rec(m, 0)->kind, MODEL_ROOT);
	model_close(m, 0, 200, true);
	model_open(m, 0, 4, 300);
	assert_int_equal(rec(m, 0)->kind, MODEL_COROUTINE);
	model_kind(m, 99, MODEL_ROOT); /* no such station */
}

/* Records that re-park at every tick keep no other waiting: the cursor
 * goes past the last record taken (64 a tick, 100 busy records and one
 * parked for good: it is taken by the second tick). */
static void test_park_marks_fair(void **state)
{
	struct model m;
	uint32_t out[64], cur = 0, n, stuck, tick;
	bool taken = false;

	(void)state;
	assert_true(model_init(&m, 600, 0));
	for (uint32_t i = 0; i < 600; i++)
		model_open(&m, i, i, i);
	stuck = rec(&m, 500)->slot;
	model_mark_park(&m, stuck);
	for (tick = 0; tick < 4 && !taken; tick++) {
		for (uint32_t i = 0; i < 100; i++)
			model_mark_park(&m, rec(&m, i)->slot);
		n = model_take_parks(&m, &cur, out, 64);
		assert_int_equal(n, 64);
		for (uint32_t k = 0; k < n; k++)
			taken |= out[k] == stuck;
	}
	assert_true(taken);
	assert_true(tick <= 2);
	model_finish(&m);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_long_wait_mark),
		T(test_open_event_close),
		T(test_idle),
		T(test_time_accounting),
		T(test_watch_order_and_seed),
		T(test_record_size),
		T(test_lost_before_next_transition),
		T(test_one_running_per_thread),
		T(test_lost_saturates),
		T(test_linger_expiry_and_reuse),
		T(test_tick_rates_and_counts),
		T(test_recycled_station_fresh_record),
		T(test_open_over_live_record_closes_it),
		T(test_grows_past_initial_capacity),
		T(test_close_records_recycled),
		T(test_watch_history),
		T(test_parked_side_array),
		T(test_census),
		T(test_park_marks),
		T(test_park_marks_fair),
		T(test_kind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
