/*
 * test-lap: writers lapping 8-slot rings at full speed while a harvester
 * scans them, with exact accounting.
 *
 * Concept.  A seqlock reader is only correct if it never accepts a copy that
 * raced a write (a torn event) and a loss count is only useful if it is
 * exact.  Both are checked here under the worst load: writer threads write
 * their stations as fast as they can, lapping the ring many times between
 * two reads, while a harvester thread scans concurrently.
 *
 *   checksum runs   A hand-written writer follows the probe's protocol to
 *                   the letter (odd seq relaxed + release fence, payload as
 *                   relaxed atomics, even seq release) and stores a checksum
 *                   of (timestamp, tid, addr, is_active, n) in the epoch's
 *                   reserved bytes (CTP_EPOCH_CHECK_OFFSET), which the
 *                   harvester copies into harvest_event.check.  Every field
 *                   is a different function of (station, n), so a copy that
 *                   mixes two writes fails the checksum and the payload
 *                   comparison.  Required: zero bad events; per station, the
 *                   delivered numbers plus the reported losses walk n = 0, 1,
 *                   2, ... with no gap and no overlap; harvested + lost ==
 *                   written exactly, per station and in total.  Run once at
 *                   full speed and once with sched_yield() inside the write
 *                   to widen the race windows.  The lap is forced, not
 *                   hoped for: the harvester makes its first scan only once
 *                   every station has been written LAP_PRIME times (more
 *                   than a ring holds), and each writer writes that many
 *                   before it looks at the clock; so losses are > 0 on any
 *                   machine.
 *
 *   probe run       The real probe API (corotop_coro_record, statically
 *                   linked) in this process, attached to a region of a real
 *                   engine (engine_create, its own harvest thread and pacing).
 *                   No checksum there, but addr encodes n: order and exact
 *                   accounting per coroutine (snapshot switches + lost ==
 *                   written) and in total.
 *
 * Runs are bounded by time (LAP_SECONDS) and by event count.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <sched.h>

#include "corotop/probe.h"
#include "engine/engine.h"
#include "engine/ctp/harvest.h"
#include "../common/itest.h"

#define LAP_STATIONS 4
#define LAP_WRITERS 2
#define LAP_SECONDS 1.5
#define LAP_MAX_EVENTS (40ull * 1000000u) /* per station */
#define LAP_PRIME (2 * CTP_SLOTS + 1)	  /* writes before the first scan */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

struct lap_payload {
	uint64_t ts, tid, addr, check;
	uint8_t active;
};

static uint64_t lap_check(uint64_t ts, uint64_t tid, uint64_t addr,
			  uint8_t active, uint64_t n)
{
	return mix64(ts ^ mix64(tid ^ mix64(addr ^ mix64(active ^ mix64(n)))));
}

static struct lap_payload lap_payload(uint32_t s, uint64_t n)
{
	struct lap_payload p;
	uint64_t k = n * 8 + ((uint64_t)s << 56);

	p.ts = mix64(k + 1);
	p.tid = mix64(k + 2);
	p.addr = ((uint64_t)s << 48) | n;
	p.active = (uint8_t)(mix64(k + 3) & 1);
	p.check = lap_check(p.ts, p.tid, p.addr, p.active, n);
	return p;
}

struct lap {
	struct ctp_header *hdr;
	struct ctp_station *st;
	size_t size;
	struct harvest h;
	bool yield;
	uint64_t end; /* it_now() deadline shared by the writers */
	_Atomic bool stop_writers;
	_Atomic bool stop_harvest;
	_Atomic unsigned primed;	/* stations written LAP_PRIME times */
	uint64_t written[LAP_STATIONS]; /* owned by the writer threads */
	/* Owned by whoever scans (one thread at a time, joined). */
	uint64_t got[LAP_STATIONS], lost[LAP_STATIONS];
	uint64_t next[LAP_STATIONS]; /* next n owed: delivered or lost */
	uint64_t bad_check, bad_payload, bad_order, bad_other;
};

struct lap_writer {
	struct lap *lap;
	unsigned first; /* stations first, first + LAP_WRITERS, ... */
};

/* Write event n of station s exactly as the probe does (A, B, C). */
static void lap_write(struct lap *l, uint32_t s, uint64_t n)
{
	struct ctp_epoch *e = &l->st[s].slots[n % CTP_SLOTS];
	struct lap_payload p = lap_payload(s, n);

	/* (A) odd seq, relaxed, then a release fence. */
	atomic_store_explicit(&e->seq, 2 * n + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	/* (B) payload, relaxed atomics; checksum in the reserved bytes. */
	__atomic_store_n(&e->timestamp, p.ts, __ATOMIC_RELAXED);
	__atomic_store_n(&e->tid, p.tid, __ATOMIC_RELAXED);
	if (l->yield && n % 16 == 0)
		sched_yield(); /* a torn copy is now likely: widen it */
	__atomic_store_n(&e->addr, p.addr, __ATOMIC_RELAXED);
	__atomic_store_n(&e->is_active, p.active, __ATOMIC_RELAXED);
	__atomic_store_n(
		(uint64_t *)(void *)&e->reserved[CTP_EPOCH_CHECK_OFFSET],
		p.check, __ATOMIC_RELAXED);
	/* (C) even seq, release. */
	atomic_store_explicit(&e->seq, ctp_event_seq(n), memory_order_release);
}

static void *lap_writer_main(void *arg)
{
	struct lap_writer *w = arg;
	struct lap *l = w->lap;

	for (uint64_t i = 0;; i++) {
		if (i >= LAP_PRIME && (i & 255) == 0 &&
		    (atomic_load_explicit(&l->stop_writers,
					  memory_order_relaxed) ||
		     it_now() > l->end))
			break;
		for (unsigned s = w->first; s < LAP_STATIONS; s += LAP_WRITERS)
			if (l->written[s] < LAP_MAX_EVENTS)
				lap_write(l, s, l->written[s]++);
		if (i + 1 == LAP_PRIME)
			/* release: pairs with the harvester's acquire in
			 * lap_harvest_main: these writes come before its
			 * first scan. */
			atomic_fetch_add_explicit(
				&l->primed,
				(LAP_STATIONS - w->first + LAP_WRITERS - 1) /
					LAP_WRITERS,
				memory_order_release);
	}
	return NULL;
}

static void lap_on_open(void *ctx, uint32_t s, uint64_t probe_id,
			uint64_t birth_ts)
{
	struct lap *l = ctx;

	(void)birth_ts;
	if (s >= LAP_STATIONS || probe_id != IT_PROBE_ID(s))
		l->bad_other++;
}

static void lap_on_event(void *ctx, const struct harvest_event *ev)
{
	struct lap *l = ctx;
	uint32_t s = ev->station;
	struct lap_payload p;

	if (s >= LAP_STATIONS) {
		l->bad_other++;
		return;
	}
	/* The writer's own checksum over the copy the harvester accepted. */
	if (ev->check !=
	    lap_check(ev->ts, ev->tid, ev->addr, ev->is_active, ev->n))
		l->bad_check++;
	/* And the copy is exactly what was written as event n. */
	p = lap_payload(s, ev->n);
	if (ev->ts != p.ts || ev->tid != p.tid || ev->addr != p.addr ||
	    ev->is_active != p.active || ev->check != p.check ||
	    ev->seq != ctp_event_seq(ev->n) || ev->probe_id != IT_PROBE_ID(s))
		l->bad_payload++;
	/* In order, and the losses reported so far account for the gap. */
	if (ev->n != l->next[s])
		l->bad_order++;
	l->next[s] = ev->n + 1;
	l->got[s]++;
}

static void lap_on_lost(void *ctx, uint32_t s, uint64_t count)
{
	struct lap *l = ctx;

	if (s >= LAP_STATIONS) {
		l->bad_other++;
		return;
	}
	l->lost[s] += count;
	l->next[s] += count;
}

static const struct harvest_sink lap_sink_proto = {
	.open = lap_on_open,
	.event = lap_on_event,
	.lost = lap_on_lost,
};

static void *lap_harvest_main(void *arg)
{
	struct lap *l = arg;
	struct harvest_sink sink = lap_sink_proto;

	sink.ctx = l;
	/* The forced lap: no scan before every ring was lapped.  acquire:
	 * pairs with the writers' release of primed (and of stop_harvest,
	 * set only after they were joined, so this ends). */
	while (atomic_load_explicit(&l->primed, memory_order_acquire) <
		       LAP_STATIONS &&
	       !atomic_load_explicit(&l->stop_harvest, memory_order_acquire))
		sched_yield();
	while (!atomic_load_explicit(&l->stop_harvest, memory_order_acquire))
		harvest_scan(&l->h, &sink);
	return NULL;
}

static void lap_run(bool yield)
{
	struct lap *l = calloc(1, sizeof(*l));
	struct lap_writer w[LAP_WRITERS];
	pthread_t wt[LAP_WRITERS], ht;
	struct harvest_sink sink = lap_sink_proto;
	uint64_t written = 0, got = 0, lost = 0;

	assert_non_null(l);
	l->yield = yield;
	l->size = (size_t)ctp_region_size(LAP_STATIONS);
	l->hdr = aligned_alloc(CTP_HEADER_SIZE, l->size);
	assert_non_null(l->hdr);
	memset(l->hdr, 0, l->size);
	l->hdr->magic = CTP_MAGIC;
	l->hdr->version = CTP_VERSION;
	l->hdr->max_stations = LAP_STATIONS;
	l->st = (struct ctp_station *)((char *)l->hdr + CTP_HEADER_SIZE);
	/* Open the stations the way the probe does (G). */
	for (uint32_t s = 0; s < LAP_STATIONS; s++) {
		l->st[s].probe_id = IT_PROBE_ID(s);
		l->st[s].ext.magic = CTP_STX_MAGIC;
		l->st[s].ext.flags = CTP_STX_SEQ_STATION;
		l->st[s].ext.first_n = 0;
		atomic_store_explicit(&l->st[s].ext.gen, 1,
				      memory_order_release);
	}
	atomic_store_explicit(&l->hdr->allocated_count, LAP_STATIONS,
			      memory_order_release);
	assert_true(harvest_init(&l->h, l->hdr, LAP_STATIONS, false));
	/* Not an observer arriving late: the harvest knows these stations
	 * from their first write, so what its first scan misses is lost,
	 * not "before start" (harvest.h). */
	l->h.started = true;

	assert_int_equal(pthread_create(&ht, NULL, lap_harvest_main, l), 0);
	l->end = it_now() + (uint64_t)(LAP_SECONDS * 1e9);
	for (unsigned i = 0; i < LAP_WRITERS; i++) {
		w[i] = (struct lap_writer){.lap = l, .first = i};
		assert_int_equal(
			pthread_create(&wt[i], NULL, lap_writer_main, &w[i]),
			0);
	}
	for (unsigned i = 0; i < LAP_WRITERS; i++)
		pthread_join(wt[i], NULL);
	atomic_store_explicit(&l->stop_harvest, true, memory_order_release);
	pthread_join(ht, NULL);
	/* Writers done: one last scan delivers what is still in the rings. */
	sink.ctx = l;
	harvest_scan(&l->h, &sink);

	for (unsigned s = 0; s < LAP_STATIONS; s++) {
		print_message("%s station %u: written %llu = harvested %llu + "
			      "lost %llu\n",
			      yield ? "yield" : "full", s,
			      (unsigned long long)l->written[s],
			      (unsigned long long)l->got[s],
			      (unsigned long long)l->lost[s]);
		written += l->written[s];
		got += l->got[s];
		lost += l->lost[s];
	}
	print_message("%s: written %llu, harvested %llu, lost %llu, torn "
		      "copies discarded %llu, scans %llu; bad: checksum %llu "
		      "payload %llu order %llu other %llu\n",
		      yield ? "yield" : "full", (unsigned long long)written,
		      (unsigned long long)got, (unsigned long long)lost,
		      (unsigned long long)l->h.count.torn,
		      (unsigned long long)l->h.count.scans,
		      (unsigned long long)l->bad_check,
		      (unsigned long long)l->bad_payload,
		      (unsigned long long)l->bad_order,
		      (unsigned long long)l->bad_other);
	/* Zero torn events accepted. */
	assert_int_equal(l->bad_check, 0);
	assert_int_equal(l->bad_payload, 0);
	assert_int_equal(l->bad_order, 0);
	assert_int_equal(l->bad_other, 0);
	/* Exact accounting, per station and in total. */
	for (unsigned s = 0; s < LAP_STATIONS; s++) {
		assert_true(l->written[s] > CTP_SLOTS);
		assert_int_equal(l->got[s] + l->lost[s], l->written[s]);
		assert_int_equal(l->next[s], l->written[s]);
		assert_true(l->got[s] >= CTP_SLOTS);
	}
	assert_int_equal(got + lost, written);
	assert_int_equal(l->h.count.harvested, got);
	assert_int_equal(l->h.count.lost, lost);
	/* The rings really were lapped: forced (LAP_PRIME), on any
	 * machine, with yields or without. */
	for (unsigned s = 0; s < LAP_STATIONS; s++)
		assert_true(l->lost[s] >= LAP_PRIME - CTP_SLOTS);
	harvest_finish(&l->h);
	free(l->hdr);
	free(l);
}

static void test_lap_checksum_full_speed(void **state)
{
	(void)state;
	lap_run(false);
}

static void test_lap_checksum_with_yields(void **state)
{
	(void)state;
	lap_run(true);
}

/* ---- the real probe API against a real engine ---- */

#define PROBE_THREADS 2
#define PROBE_CORO_PER_THREAD 2
#define PROBE_COROS (PROBE_THREADS * PROBE_CORO_PER_THREAD)

struct probe_run {
	_Atomic bool stop;
	uint64_t written[PROBE_COROS];
	/* event_hook state: the hook runs under the engine's lock. */
	uint64_t got[PROBE_COROS];
	uint64_t last_n[PROBE_COROS];
	uint32_t station[PROBE_COROS];
	uint64_t bad;
};

struct probe_writer {
	struct probe_run *run;
	unsigned first;
};

static void *probe_writer_main(void *arg)
{
	struct probe_writer *w = arg;
	struct probe_run *r = w->run;
	struct corotop_coro co[PROBE_CORO_PER_THREAD];
	uint64_t end = it_now() + (uint64_t)(LAP_SECONDS * 1e9);

	for (unsigned i = 0; i < PROBE_CORO_PER_THREAD; i++)
		corotop_coro_open(&co[i], IT_PROBE_ID(w->first + i));
	/* At least 256 events each, however late this thread runs. */
	for (uint64_t k = 0;; k++) {
		if (k && (k & 255) == 0 &&
		    (atomic_load_explicit(&r->stop, memory_order_relaxed) ||
		     it_now() > end))
			break;
		for (unsigned i = 0; i < PROBE_CORO_PER_THREAD; i++) {
			unsigned c = w->first + i;
			uint64_t n = r->written[c]++;

			corotop_coro_record(&co[i], (int)(n & 1),
					    IT_ADDR(c, n));
		}
	}
	for (unsigned i = 0; i < PROBE_CORO_PER_THREAD; i++)
		corotop_coro_close(&co[i]);
	return NULL;
}

static void probe_hook(void *ctx, const struct harvest_event *ev)
{
	struct probe_run *r = ctx;
	uint64_t c = IT_ADDR_CORO(ev->addr);
	uint64_t n = IT_ADDR_EVENT(ev->addr);

	if (c >= PROBE_COROS || ev->probe_id != IT_PROBE_ID(c) ||
	    ev->is_active != (n & 1)) {
		r->bad++;
		return;
	}
	/* Fresh stations: the station's n is the coroutine's event index. */
	if (ev->n != n)
		r->bad++;
	if (r->got[c] &&
	    (ev->n <= r->last_n[c] || ev->station != r->station[c]))
		r->bad++;
	r->station[c] = ev->station;
	r->last_n[c] = ev->n;
	r->got[c]++;
}

/* Released by the teardown when an assertion ends the test early. */
static struct engine *probe_engine;

static int teardown_probe_engine(void **state)
{
	(void)state;
	corotop_probe_shutdown();
	if (probe_engine)
		engine_destroy(probe_engine); /* removes the region files */
	probe_engine = NULL;
	return 0;
}

static void test_lap_probe_api(void **state)
{
	struct probe_run *r = calloc(1, sizeof(*r));
	struct probe_writer w[PROBE_THREADS];
	pthread_t t[PROBE_THREADS];
	struct engine_config cfg;
	struct snapshot snap;
	struct engine *e;
	char err[512], max[16];
	uint64_t written = 0, got = 0;

	(void)state;
	assert_non_null(r);
	engine_config_defaults(&cfg);
	cfg.stations = 16;
	cfg.linger_ns = 600ull * 1000000000u;
	cfg.event_hook = probe_hook;
	cfg.hook_ctx = r;
	e = engine_create(&cfg, err, sizeof(err));
	if (!e)
		fail_msg("engine_create: %s", err);
	probe_engine = e;
	if (!engine_start(e, err, sizeof(err)))
		fail_msg("engine_start: %s", err);
	/* Attach the probe of this very process, as a target would. */
	snprintf(max, sizeof(max), "%u", cfg.stations);
	setenv(CTP_ENV_SHM, engine_shm_path(e), 1);
	setenv(CTP_ENV_SOCK, engine_sock_path(e), 1);
	setenv(CTP_ENV_MAX, max, 1);
	if (!corotop_probe_init())
		fail_msg("probe: %s", corotop_probe_status());

	for (unsigned i = 0; i < PROBE_THREADS; i++) {
		w[i] = (struct probe_writer){
			.run = r, .first = i * PROBE_CORO_PER_THREAD};
		assert_int_equal(
			pthread_create(&t[i], NULL, probe_writer_main, &w[i]),
			0);
	}
	for (unsigned i = 0; i < PROBE_THREADS; i++)
		pthread_join(t[i], NULL);
	engine_stop(e); /* joins the harvest thread, drains a last scan */
	snapshot_init(&snap);
	engine_snapshot(e, &snap);
	corotop_probe_shutdown();

	for (unsigned c = 0; c < PROBE_COROS; c++) {
		const struct model_coro *mc =
			it_find_coro(&snap, IT_PROBE_ID(c));

		print_message("probe coroutine %u: written %llu = harvested "
			      "%llu + lost %llu\n",
			      c, (unsigned long long)r->written[c],
			      (unsigned long long)r->got[c],
			      (unsigned long long)(mc ? mc->lost : 0));
		assert_non_null(mc);
		assert_int_equal(mc->state, MODEL_DEAD);
		assert_int_equal(mc->switches, r->got[c]);
		assert_int_equal(mc->switches + mc->lost, r->written[c]);
		assert_true(r->got[c] > 0);
		written += r->written[c];
		got += r->got[c];
	}
	print_message("probe API: written %llu, harvested %llu, lost %llu, "
		      "torn discarded %llu, untraced %llu\n",
		      (unsigned long long)written, (unsigned long long)got,
		      (unsigned long long)snap.t.lost,
		      (unsigned long long)snap.t.torn,
		      (unsigned long long)snap.t.untraced);
	assert_int_equal(r->bad, 0);
	assert_int_equal(snap.t.events, got);
	assert_int_equal(snap.t.events + snap.t.lost, written);
	assert_int_equal(snap.t.untraced, 0);
	engine_destroy(e);
	probe_engine = NULL;
	snapshot_finish(&snap);
	unsetenv(CTP_ENV_SHM);
	unsetenv(CTP_ENV_SOCK);
	unsetenv(CTP_ENV_MAX);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lap_checksum_full_speed),
		cmocka_unit_test(test_lap_checksum_with_yields),
		cmocka_unit_test_teardown(test_lap_probe_api,
					  teardown_probe_engine),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
