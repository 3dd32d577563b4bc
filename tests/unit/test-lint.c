/*
 * lint: the per-coroutine warnings (src/engine/model/lint.c), their evaluation
 * over a snapshot (snapshot_lint) and inside the engine (engine_snapshot,
 * engine_set_lints, the recycled flag set by its close callback).
 *
 * Every lint is checked at its boundary: a value equal to the threshold does
 * not trip, one nanosecond (or a hair of a switch/s) more does.  Disabled
 * lints never trip; dead-station trips only for a station that was not
 * recycled.  The engine test writes a real region by hand: a corotop-style
 * station (recycled when its coroutine dies), an upstream-style one (never
 * recycled) and a live suspended one, then drains it with engine_stop.
 *
 * A dispatcher or a root (record kind) trips none of the lints meant for
 * coroutines, only dead-station (issue 28).
 *
 * Long waits (issue 16): a suspended record whose suspend the program
 * marked long (long_wait) is never a lost wakeup, however long it waits;
 * the other lints are unchanged.  Through the engine: the mark is read from
 * a corotop station's event flags byte (CTP_EPF_LONG_WAIT), ended by the
 * next transition, and ignored on an upstream station (whose reserved
 * bytes are another writer's payload).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "engine/model/lint.h"
#include "engine/model/snapshot.h"

#define SEC 1000000000ull
#define T0 (100 * SEC)

static const uint32_t WAKE = 1u << LINT_LOST_WAKEUP;
static const uint32_t STALL = 1u << LINT_STALL;
static const uint32_t STORM = 1u << LINT_STORM;
static const uint32_t DEAD = 1u << LINT_DEAD_STATION;

static struct model_coro coro(uint8_t state, uint64_t since)
{
	struct model_coro c;

	memset(&c, 0, sizeof(c));
	c.in_use = 1;
	c.state = state;
	c.birth_ts = since > SEC ? since - SEC : 0;
	c.state_ts = since;
	if (state == MODEL_DEAD)
		c.dead_ts = since;
	return c;
}

static void test_defaults(void **state)
{
	struct lint_config c;

	(void)state;
	memset(&c, 0xA5, sizeof(c));
	lint_config_defaults(&c);
	for (int k = 0; k < LINT_COUNT; k++)
		assert_true(c.enabled[k]);
	assert_true(c.suspended_ns == 5 * SEC);
	assert_true(c.running_ns == 1 * SEC);
	assert_true(c.storm_per_sec == 10000.0);
	assert_true(c.dead_ns == 1 * SEC);
}

static void test_lost_wakeup_boundary(void **state)
{
	struct lint_config cfg;
	struct model_coro c = coro(MODEL_SUSPENDED, T0);

	(void)state;
	lint_config_defaults(&cfg);
	assert_int_equal(lint_check(&cfg, &c, T0), 0);
	assert_int_equal(lint_check(&cfg, &c, T0 + 5 * SEC - 1), 0);
	assert_int_equal(lint_check(&cfg, &c, T0 + 5 * SEC), 0);
	assert_int_equal(lint_check(&cfg, &c, T0 + 5 * SEC + 1), WAKE);
	assert_int_equal(lint_check(&cfg, &c, T0 + 3600 * SEC), WAKE);
	/* A state that began "after" now (a late event) is 0 long. */
	assert_int_equal(lint_check(&cfg, &c, T0 - 10 * SEC), 0);
	/* Only suspended coroutines: the same times running or dead are
	 * other lints (or none). */
	c.state = MODEL_RUNNING;
	assert_int_equal(lint_check(&cfg, &c, T0 + 5 * SEC + 1) & WAKE, 0);
	c = coro(MODEL_DEAD, T0);
	c.recycled = 1;
	assert_int_equal(lint_check(&cfg, &c, T0 + 3600 * SEC), 0);
	/* A threshold of 0: any time at all. */
	cfg.suspended_ns = 0;
	c = coro(MODEL_SUSPENDED, T0);
	assert_int_equal(lint_check(&cfg, &c, T0), 0);
	assert_int_equal(lint_check(&cfg, &c, T0 + 1), WAKE);
}

/* A context a memory scan found is judged only when its runtime's lists
 * prove it waits (engine/scan/fiberwalk.c) or its stack's accessed bits
 * prove it did not run (idle): an unchanged saved state is no proof. */
static void test_scanned_needs_proof(void **state)
{
	struct lint_config cfg;
	struct model_coro c = coro(MODEL_SUSPENDED, T0);

	(void)state;
	lint_config_defaults(&cfg);
	c.scanned = 1;
	assert_int_equal(lint_check(&cfg, &c, T0 + 3600 * SEC), 0);
	c.waiting = 1;
	assert_int_equal(lint_check(&cfg, &c, T0 + 5 * SEC), 0);
	assert_int_equal(lint_check(&cfg, &c, T0 + 5 * SEC + 1), WAKE);
	/* Proven idle by its untouched stack (scanner_idle.c): judged
	 * too, from its state_ts. */
	c.waiting = 0;
	c.idle = 1;
	assert_int_equal(lint_check(&cfg, &c, T0 + 5 * SEC), 0);
	assert_int_equal(lint_check(&cfg, &c, T0 + 5 * SEC + 1), WAKE);
	/* A dispatcher or a root is not judged, proven or not. */
	c.kind = MODEL_DISPATCHER;
	assert_int_equal(lint_check(&cfg, &c, T0 + 3600 * SEC), 0);
	/* Running, found by a scan (a thread's row): never a stall, memory
	 * does not say when it last switched; the same row told by events
	 * is one. */
	c = coro(MODEL_RUNNING, T0);
	assert_int_equal(lint_check(&cfg, &c, T0 + 3600 * SEC), STALL);
	c.scanned = 1;
	assert_int_equal(lint_check(&cfg, &c, T0 + 3600 * SEC), 0);
}

static void test_long_wait_not_lost_wakeup(void **state)
{
	struct lint_config cfg;
	struct model_coro plain = coro(MODEL_SUSPENDED, T0);
	struct model_coro marked = coro(MODEL_SUSPENDED, T0);
	uint64_t late = T0 + 3600 * SEC;

	(void)state;
	lint_config_defaults(&cfg);
	marked.long_wait = 1;
	/* Past the threshold: the plain one trips, the marked one never. */
	assert_int_equal(lint_check(&cfg, &plain, T0 + 5 * SEC + 1), WAKE);
	assert_int_equal(lint_check(&cfg, &marked, T0 + 5 * SEC + 1), 0);
	assert_int_equal(lint_check(&cfg, &plain, late), WAKE);
	assert_int_equal(lint_check(&cfg, &marked, late), 0);
	cfg.suspended_ns = 0;
	assert_int_equal(lint_check(&cfg, &marked, late), 0);
	/* The other lints do not look at it. */
	marked.sw_per_sec = 1e6;
	assert_int_equal(lint_check(&cfg, &marked, late), STORM);
	marked.sw_per_sec = 0;
	marked.state = MODEL_RUNNING;
	assert_int_equal(lint_check(&cfg, &marked, T0 + SEC + 1), STALL);
	marked = coro(MODEL_DEAD, T0);
	marked.long_wait = 1;
	assert_int_equal(lint_check(&cfg, &marked, T0 + SEC + 1), DEAD);
	/* The flag shares the record's last byte with recycled: each one
	 * reads back alone. */
	marked = coro(MODEL_DEAD, T0);
	marked.recycled = 1;
	assert_int_equal(marked.long_wait, 0);
	marked.long_wait = 1;
	marked.recycled = 0;
	assert_int_equal(marked.long_wait, 1);
	assert_int_equal(marked.recycled, 0);
}

static void test_stall_boundary(void **state)
{
	struct lint_config cfg;
	struct model_coro c = coro(MODEL_RUNNING, T0);

	(void)state;
	lint_config_defaults(&cfg);
	assert_int_equal(lint_check(&cfg, &c, T0 + SEC - 1), 0);
	assert_int_equal(lint_check(&cfg, &c, T0 + SEC), 0);
	assert_int_equal(lint_check(&cfg, &c, T0 + SEC + 1), STALL);
	cfg.running_ns = 250000000ull;
	assert_int_equal(lint_check(&cfg, &c, T0 + 250000000ull), 0);
	assert_int_equal(lint_check(&cfg, &c, T0 + 250000001ull), STALL);
	/* Running on a thread that waits in the kernel (an event loop in
	 * epoll_wait) is not a stall. */
	c.in_kernel = 1;
	assert_int_equal(lint_check(&cfg, &c, T0 + 10 * SEC), 0);
	c.in_kernel = 0;
	/* Suspended for as long is not a stall. */
	c.state = MODEL_SUSPENDED;
	assert_int_equal(lint_check(&cfg, &c, T0 + SEC + 1) & STALL, 0);
}

static void test_storm_boundary(void **state)
{
	struct lint_config cfg;
	struct model_coro c = coro(MODEL_SUSPENDED, T0);

	(void)state;
	lint_config_defaults(&cfg);
	c.sw_per_sec = 9999.9;
	assert_int_equal(lint_check(&cfg, &c, T0), 0);
	c.sw_per_sec = 10000.0;
	assert_int_equal(lint_check(&cfg, &c, T0), 0);
	c.sw_per_sec = 10000.000001;
	assert_int_equal(lint_check(&cfg, &c, T0), STORM);
	/* In any state, and together with the state's own lint. */
	c.sw_per_sec = 20000.0;
	c.state = MODEL_RUNNING;
	assert_int_equal(lint_check(&cfg, &c, T0), STORM);
	assert_int_equal(lint_check(&cfg, &c, T0 + 2 * SEC), STORM | STALL);
	c.state = MODEL_SUSPENDED;
	assert_int_equal(lint_check(&cfg, &c, T0 + 6 * SEC), STORM | WAKE);
	c.state = MODEL_DEAD;
	c.dead_ts = T0;
	assert_int_equal(lint_check(&cfg, &c, T0 + 2 * SEC), STORM | DEAD);
	cfg.storm_per_sec = 0.5;
	c = coro(MODEL_SUSPENDED, T0);
	c.sw_per_sec = 0.5;
	assert_int_equal(lint_check(&cfg, &c, T0), 0);
	c.sw_per_sec = 0.51;
	assert_int_equal(lint_check(&cfg, &c, T0), STORM);
}

/* A dispatcher or a root (kind) is not judged by the lints meant for
 * coroutines -- an idle dispatcher runs while it waits, a root waits in
 * main, both switch the most -- but a station it leaks still is. */
static void test_kinds_not_judged(void **state)
{
	static const uint8_t kinds[] = {MODEL_DISPATCHER, MODEL_ROOT};
	struct lint_config cfg;

	(void)state;
	lint_config_defaults(&cfg);
	for (size_t i = 0; i < sizeof(kinds); i++) {
		struct model_coro c = coro(MODEL_RUNNING, T0);

		c.kind = kinds[i];
		c.sw_per_sec = 1e6;
		assert_int_equal(lint_check(&cfg, &c, T0 + 3600 * SEC), 0);
		c.state = MODEL_SUSPENDED;
		assert_int_equal(lint_check(&cfg, &c, T0 + 3600 * SEC), 0);
		c = coro(MODEL_DEAD, T0);
		c.kind = kinds[i];
		assert_int_equal(lint_check(&cfg, &c, T0 + SEC + 1), DEAD);
		/* The same record as a coroutine trips all three. */
		c = coro(MODEL_RUNNING, T0);
		c.sw_per_sec = 1e6;
		assert_int_equal(lint_check(&cfg, &c, T0 + 3600 * SEC),
				 STALL | STORM);
		c.state = MODEL_SUSPENDED;
		assert_int_equal(lint_check(&cfg, &c, T0 + 3600 * SEC),
				 WAKE | STORM);
	}
	assert_string_equal(snapshot_kind_name(MODEL_COROUTINE), "coroutine");
	assert_string_equal(snapshot_kind_name(MODEL_DISPATCHER), "dispatcher");
	assert_string_equal(snapshot_kind_name(MODEL_ROOT), "root");
}

static void test_dead_station_only_when_not_recycled(void **state)
{
	struct lint_config cfg;
	struct model_coro c = coro(MODEL_DEAD, T0);

	(void)state;
	lint_config_defaults(&cfg);
	c.recycled = 0;
	assert_int_equal(lint_check(&cfg, &c, T0 + SEC - 1), 0);
	assert_int_equal(lint_check(&cfg, &c, T0 + SEC), 0);
	assert_int_equal(lint_check(&cfg, &c, T0 + SEC + 1), DEAD);
	c.recycled = 1;
	assert_int_equal(lint_check(&cfg, &c, T0 + SEC + 1), 0);
	assert_int_equal(lint_check(&cfg, &c, T0 + 3600 * SEC), 0);
	/* Time dead counts from dead_ts, not from state_ts. */
	c.recycled = 0;
	c.state_ts = T0 - 100 * SEC;
	assert_int_equal(lint_check(&cfg, &c, T0 + SEC), 0);
	assert_int_equal(lint_check(&cfg, &c, T0 + SEC + 1), DEAD);
}

static void test_disabled_never_trip(void **state)
{
	struct model_coro c[4] = {
		coro(MODEL_SUSPENDED, T0),
		coro(MODEL_RUNNING, T0),
		coro(MODEL_DEAD, T0),
		coro(MODEL_DEAD, T0),
	};
	/* What each trips with every lint on and every threshold at 0. */
	const uint32_t all[4] = {WAKE | STORM, STALL | STORM, DEAD | STORM,
				 STORM};
	uint64_t late = T0 + 3600 * SEC;
	struct lint_config cfg;

	(void)state;
	c[3].recycled = 1;
	for (int i = 0; i < 4; i++)
		c[i].sw_per_sec = 1e9;
	lint_config_defaults(&cfg);
	cfg.suspended_ns = cfg.running_ns = cfg.dead_ns = 0;
	cfg.storm_per_sec = 0;
	for (int i = 0; i < 4; i++)
		assert_int_equal(lint_check(&cfg, &c[i], late), all[i]);
	for (int off = 0; off < LINT_COUNT; off++) {
		uint32_t bit = 1u << off;

		cfg.enabled[off] = false;
		/* That one bit goes, the others stay. */
		for (int i = 0; i < 4; i++)
			assert_int_equal(lint_check(&cfg, &c[i], late),
					 all[i] & ~bit);
		cfg.enabled[off] = true;
	}
	memset(cfg.enabled, 0, sizeof(cfg.enabled));
	for (int i = 0; i < 4; i++)
		assert_int_equal(lint_check(&cfg, &c[i], late), 0);
}

static void test_names_tags_help(void **state)
{
	static const char *names[] = {"lost-wakeup", "stall", "storm",
				      "dead-station"};
	static const char *tags[] = {"WAKE?", "STALL", "STORM", "DEAD"};

	(void)state;
	for (int k = 0; k < LINT_COUNT; k++) {
		assert_string_equal(lint_name(k), names[k]);
		assert_string_equal(lint_tag(k), tags[k]);
		assert_true(strlen(lint_tag(k)) <= 5);
		assert_true(strlen(lint_help(k)) > 20);
		assert_int_equal(lint_help(k)[strlen(lint_help(k)) - 1], '.');
		assert_int_equal(lint_find(names[k]), k);
		assert_string_equal(lint_unit(k), k == LINT_STORM ? "/s" : "s");
	}
	assert_int_equal(lint_find("Stall"), -1);
	assert_int_equal(lint_find("stal"), -1);
	assert_int_equal(lint_find(""), -1);
	assert_string_equal(lint_name(LINT_COUNT), "?");
	assert_string_equal(lint_tag((enum lint_kind) - 1), "?");
	assert_string_equal(lint_help(LINT_COUNT), "");
}

static void test_thresholds_in_units(void **state)
{
	struct lint_config c;

	(void)state;
	lint_config_defaults(&c);
	assert_true(lint_threshold(&c, LINT_LOST_WAKEUP) == 5.0);
	assert_true(lint_threshold(&c, LINT_STALL) == 1.0);
	assert_true(lint_threshold(&c, LINT_STORM) == 10000.0);
	assert_true(lint_threshold(&c, LINT_DEAD_STATION) == 1.0);
	assert_true(lint_set_threshold(&c, LINT_LOST_WAKEUP, 0.1));
	assert_true(c.suspended_ns == 100000000ull);
	assert_true(lint_set_threshold(&c, LINT_STALL, 2.5));
	assert_true(c.running_ns == 2500000000ull);
	assert_true(lint_set_threshold(&c, LINT_DEAD_STATION, 0));
	assert_true(c.dead_ns == 0);
	assert_true(lint_set_threshold(&c, LINT_STORM, 123.5));
	assert_true(c.storm_per_sec == 123.5);
	assert_true(lint_threshold(&c, LINT_STALL) == 2.5);
	/* Refused, and nothing changes. */
	assert_false(lint_set_threshold(&c, LINT_STALL, -1));
	assert_false(lint_set_threshold(&c, LINT_STALL, NAN));
	assert_false(lint_set_threshold(&c, LINT_STALL, INFINITY));
	assert_false(lint_set_threshold(&c, LINT_STALL, 1e10));
	assert_false(lint_set_threshold(&c, LINT_STORM, 1e13));
	assert_false(lint_set_threshold(&c, LINT_COUNT, 1));
	assert_true(c.running_ns == 2500000000ull);
	assert_true(c.storm_per_sec == 123.5);
}

static void test_format(void **state)
{
	char buf[64], small[12];

	(void)state;
	memset(buf, 'x', sizeof(buf));
	lint_format(0, buf, sizeof(buf));
	assert_string_equal(buf, "");
	lint_format(WAKE, buf, sizeof(buf));
	assert_string_equal(buf, "WAKE?");
	lint_format(STORM | WAKE, buf, sizeof(buf));
	assert_string_equal(buf, "WAKE?,STORM");
	lint_format(DEAD | STALL, buf, sizeof(buf));
	assert_string_equal(buf, "STALL,DEAD");
	lint_format(WAKE | STALL | STORM | DEAD, buf, sizeof(buf));
	assert_string_equal(buf, "WAKE?,STALL,STORM,DEAD");
	/* Bits past the known lints are ignored. */
	lint_format(0xFFFFFFF0u | DEAD, buf, sizeof(buf));
	assert_string_equal(buf, "DEAD");
	/* Too small: whole tags only, always terminated. */
	lint_format(WAKE | STALL | STORM, small, sizeof(small));
	assert_string_equal(small, "WAKE?,STALL");
	lint_format(WAKE, small, 5);
	assert_string_equal(small, "");
	lint_format(WAKE, small, 1);
	assert_string_equal(small, "");
	small[0] = 'x';
	lint_format(WAKE, small, 0);
	assert_int_equal(small[0], 'x');
}

static void test_snapshot_lint_counts(void **state)
{
	struct lint_config cfg;
	struct snapshot s;

	(void)state;
	snapshot_init(&s);
	s.ts = T0 + 10 * SEC;
	s.cap = s.count = 5;
	s.coro = calloc(s.cap, sizeof(*s.coro));
	assert_non_null(s.coro);
	s.coro[0] = coro(MODEL_SUSPENDED, T0); /* 10 s: WAKE */
	s.coro[1] = coro(MODEL_SUSPENDED, T0 + 9 * SEC);
	s.coro[2] = coro(MODEL_RUNNING, T0); /* STALL */
	s.coro[2].sw_per_sec = 1e6;	     /* STORM */
	s.coro[3] = coro(MODEL_DEAD, T0);    /* DEAD */
	s.coro[4] = coro(MODEL_DEAD, T0);
	s.coro[4].recycled = 1;
	s.coro[1].warn = 0xFF; /* stale: overwritten */
	lint_config_defaults(&cfg);
	snapshot_lint(&s, &cfg);
	assert_int_equal(s.coro[0].warn, WAKE);
	assert_int_equal(s.coro[1].warn, 0);
	assert_int_equal(s.coro[2].warn, STALL | STORM);
	assert_int_equal(s.coro[3].warn, DEAD);
	assert_int_equal(s.coro[4].warn, 0);
	assert_int_equal(s.warn_counts[LINT_LOST_WAKEUP], 1);
	assert_int_equal(s.warn_counts[LINT_STALL], 1);
	assert_int_equal(s.warn_counts[LINT_STORM], 1);
	assert_int_equal(s.warn_counts[LINT_DEAD_STATION], 1);
	/* New thresholds on the same snapshot: counts start over. */
	cfg.suspended_ns = 0;
	cfg.enabled[LINT_STORM] = false;
	snapshot_lint(&s, &cfg);
	assert_int_equal(s.coro[1].warn, WAKE);
	assert_int_equal(s.coro[2].warn, STALL);
	assert_int_equal(s.warn_counts[LINT_LOST_WAKEUP], 2);
	assert_int_equal(s.warn_counts[LINT_STORM], 0);
	/* Only the first count records are looked at. */
	s.count = 1;
	snapshot_lint(&s, &cfg);
	assert_int_equal(s.warn_counts[LINT_LOST_WAKEUP], 1);
	assert_int_equal(s.warn_counts[LINT_STALL], 0);
	snapshot_finish(&s);
}

/* ---- the engine: a hand-written region, drained by engine_stop ---- */

static struct ctp_station *region_station(struct ctp_header *h, uint32_t i)
{
	return (struct ctp_station *)((char *)h + CTP_HEADER_SIZE) + i;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

static void write_slot_flags(struct ctp_epoch *e, uint64_t seq_done,
			     bool active, uint8_t flags)
{
	atomic_store(&e->seq, seq_done - 1);
	e->timestamp = now_ns();
	e->tid = 42;
	e->addr = 0x1000;
	e->is_active = active;
	e->reserved[CTP_EPOCH_FLAGS_OFFSET] = flags;
	atomic_store(&e->seq, seq_done);
}

static void write_slot(struct ctp_epoch *e, uint64_t seq_done, bool active)
{
	write_slot_flags(e, seq_done, active, 0);
}

/* A corotop probe's station: open (gen), one event n = 0, maybe dead. */
static void write_ours(struct ctp_header *h, uint32_t i, uint64_t pid,
		       bool dead)
{
	struct ctp_station *s = region_station(h, i);

	s->probe_id = pid;
	s->birth_ts = now_ns();
	s->ext.magic = CTP_STX_MAGIC;
	s->ext.flags = CTP_STX_SEQ_STATION;
	s->ext.first_n = 0;
	atomic_fetch_add(&s->ext.gen, 1);
	write_slot(&s->slots[0], ctp_event_seq(0), false);
	if (dead) {
		s->ext.next_n = 1;
		atomic_store(&s->is_dead, 1);
	}
}

/* An upstream SDK's station: per-slot seqs, no extension; then dead. */
static void write_upstream(struct ctp_header *h, uint32_t i, uint64_t pid)
{
	struct ctp_station *s = region_station(h, i);

	s->probe_id = pid;
	s->birth_ts = now_ns();
	write_slot(&s->slots[0], 2, false);
	atomic_store(&s->is_dead, 1);
}

static const struct model_coro *by_probe(const struct snapshot *s, uint64_t pid)
{
	for (size_t i = 0; i < s->count; i++)
		if (s->coro[i].probe_id == pid)
			return &s->coro[i];
	fail_msg("no coroutine with probe id %llu", (unsigned long long)pid);
	return NULL;
}

/* An engine over a region of `stations`, mapped writable here so the
 * test can play the writer: the region's header, its size in *size. */
static struct ctp_header *lint_engine(struct engine **e, uint32_t stations,
				      size_t *size)
{
	struct engine_config cfg;
	struct ctp_header *h;
	char err[256];
	int fd;

	engine_config_defaults(&cfg);
	cfg.stations = stations;
	*e = engine_create(&cfg, err, sizeof(err));
	if (!*e)
		fail_msg("engine_create: %s", err);
	*size = (size_t)ctp_region_size(stations);
	fd = open(engine_shm_path(*e), O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	h = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	assert_true(h != MAP_FAILED);
	return h;
}

static void test_engine_snapshot_lints(void **state)
{
	struct engine_config cfg;
	struct lint_config lints;
	struct snapshot snap;
	struct ctp_header *h;
	struct timespec ms = {0, 2000000};
	struct engine *e;
	size_t size;

	(void)state;
	engine_config_defaults(&cfg);
	lint_config_defaults(&lints);
	assert_memory_equal(&cfg.lints, &lints, sizeof(lints));
	h = lint_engine(&e, 4, &size);
	write_ours(h, 0, 1001, true);
	write_upstream(h, 1, 1002);
	write_ours(h, 2, 1003, false); /* alive, suspended */
	atomic_store(&h->allocated_count, 3);
	engine_stop(e); /* drains one last scan */
	nanosleep(&ms, NULL);

	/* Thresholds not reached: nothing flagged.  (An hour, not the
	 * default second: a slow machine may take a second to get here.) */
	lints.dead_ns = lints.suspended_ns = 3600ull * 1000000000u;
	engine_set_lints(e, &lints);
	snapshot_init(&snap);
	engine_snapshot(e, &snap);
	assert_int_equal(snap.count, 3);
	for (int k = 0; k < LINT_COUNT; k++)
		assert_int_equal(snap.warn_counts[k], 0);
	assert_int_equal(by_probe(&snap, 1001)->recycled, 1);
	assert_int_equal(by_probe(&snap, 1002)->recycled, 0);

	lints.dead_ns = 0;
	lints.suspended_ns = 0;
	engine_set_lints(e, &lints);
	engine_snapshot(e, &snap);
	assert_int_equal(by_probe(&snap, 1001)->state, MODEL_DEAD);
	assert_int_equal(by_probe(&snap, 1001)->warn, 0); /* recycled */
	assert_int_equal(by_probe(&snap, 1002)->state, MODEL_DEAD);
	assert_int_equal(by_probe(&snap, 1002)->warn, DEAD); /* upstream */
	assert_int_equal(by_probe(&snap, 1003)->state, MODEL_SUSPENDED);
	assert_int_equal(by_probe(&snap, 1003)->warn, WAKE);
	assert_int_equal(snap.warn_counts[LINT_DEAD_STATION], 1);
	assert_int_equal(snap.warn_counts[LINT_LOST_WAKEUP], 1);
	assert_int_equal(snap.warn_counts[LINT_STALL], 0);

	lints.enabled[LINT_DEAD_STATION] = false;
	engine_set_lints(e, &lints);
	engine_snapshot(e, &snap);
	assert_int_equal(by_probe(&snap, 1002)->warn, 0);
	assert_int_equal(snap.warn_counts[LINT_DEAD_STATION], 0);
	assert_int_equal(snap.warn_counts[LINT_LOST_WAKEUP], 1);

	snapshot_finish(&snap);
	munmap(h, size);
	assert_true(engine_destroy(e));
}

/* A corotop probe's live station: open, then events 0..n-1, suspends with
 * the event flags flags[k] (0: a resume). */
static void write_ours_events(struct ctp_header *h, uint32_t i, uint64_t pid,
			      const int *ev, unsigned n)
{
	struct ctp_station *s = region_station(h, i);

	s->probe_id = pid;
	s->birth_ts = now_ns();
	s->ext.magic = CTP_STX_MAGIC;
	s->ext.flags = CTP_STX_SEQ_STATION;
	s->ext.first_n = 0;
	atomic_fetch_add(&s->ext.gen, 1);
	for (unsigned k = 0; k < n; k++) {
		bool resume = ev[k] < 0;
		uint8_t flags = resume ? 0 : (uint8_t)ev[k];

		write_slot_flags(&s->slots[k], ctp_event_seq(k), resume, flags);
	}
}

static void test_engine_long_wait(void **state)
{
	/* Events: -1 a resume, 0 a plain suspend, CTP_EPF_LONG_WAIT a marked
	 * one (0xFF: every bit, the unknown ones ignored). */
	static const int marked[] = {-1, CTP_EPF_LONG_WAIT};
	static const int plain[] = {-1, 0};
	static const int ended[] = {-1, CTP_EPF_LONG_WAIT, -1, 0};
	static const int again[] = {-1, 0, -1, 0xFF};
	struct lint_config lints;
	struct snapshot snap;
	struct ctp_header *h;
	struct timespec ms = {0, 2000000};
	struct engine *e;
	size_t size;

	(void)state;
	h = lint_engine(&e, 8, &size);
	write_ours_events(h, 0, 2001, marked, 2);
	write_ours_events(h, 1, 2002, plain, 2);
	write_ours_events(h, 2, 2003, ended, 4);
	write_ours_events(h, 3, 2004, again, 4);
	/* An upstream SDK's live station whose reserved bytes hold the
	 * writer's own payload: not a mark. */
	region_station(h, 4)->probe_id = 2005;
	region_station(h, 4)->birth_ts = now_ns();
	write_slot_flags(&region_station(h, 4)->slots[0], 2, false, 0xFF);
	atomic_store(&h->allocated_count, 5);
	engine_stop(e); /* drains one last scan */
	nanosleep(&ms, NULL);

	/* Every threshold at 0: any time suspended is too long. */
	lint_config_defaults(&lints);
	lints.suspended_ns = 0;
	engine_set_lints(e, &lints);
	snapshot_init(&snap);
	engine_snapshot(e, &snap);
	assert_int_equal(snap.count, 5);
	for (uint64_t pid = 2001; pid <= 2005; pid++)
		assert_int_equal(by_probe(&snap, pid)->state, MODEL_SUSPENDED);
	assert_int_equal(by_probe(&snap, 2001)->long_wait, 1);
	assert_int_equal(by_probe(&snap, 2001)->warn, 0);
	assert_int_equal(by_probe(&snap, 2002)->long_wait, 0);
	assert_int_equal(by_probe(&snap, 2002)->warn, WAKE);
	/* Marked once, resumed, suspended plainly: flagged again. */
	assert_int_equal(by_probe(&snap, 2003)->long_wait, 0);
	assert_int_equal(by_probe(&snap, 2003)->warn, WAKE);
	assert_int_equal(by_probe(&snap, 2004)->long_wait, 1);
	assert_int_equal(by_probe(&snap, 2004)->warn, 0);
	assert_int_equal(by_probe(&snap, 2005)->long_wait, 0);
	assert_int_equal(by_probe(&snap, 2005)->warn, WAKE);
	assert_int_equal(snap.warn_counts[LINT_LOST_WAKEUP], 3);

	snapshot_finish(&snap);
	munmap(h, size);
	assert_true(engine_destroy(e));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_lost_wakeup_boundary),
		cmocka_unit_test(test_scanned_needs_proof),
		cmocka_unit_test(test_long_wait_not_lost_wakeup),
		cmocka_unit_test(test_stall_boundary),
		cmocka_unit_test(test_storm_boundary),
		cmocka_unit_test(test_dead_station_only_when_not_recycled),
		cmocka_unit_test(test_kinds_not_judged),
		cmocka_unit_test(test_disabled_never_trip),
		cmocka_unit_test(test_names_tags_help),
		cmocka_unit_test(test_thresholds_in_units),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_snapshot_lint_counts),
		cmocka_unit_test(test_engine_snapshot_lints),
		cmocka_unit_test(test_engine_long_wait),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
