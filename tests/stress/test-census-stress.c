/*
 * test-census-stress: the census walk (src/probe/census.c) against writers
 * that record, open and close the very coroutines it walks -- every late
 * attach must publish each live coroutine exactly once, in its true state,
 * and lose none.  All in one process (the probe linked static with
 * CENSUS_TEST_HOOKS, an in-process engine attached to the process's own
 * "corotop" buffer), so that TSan and ASan see every side.
 *
 * Concept.  Three writer threads own 32 coroutine slots each.  A slot's
 * struct corotop_coro lives in a page of its own, mapped at open and
 * unmapped at close, so a walker that read a closed coroutine through a
 * pointer would fault: the census must only read it through its checked
 * copy.  Each writer step takes one of its slots (under the slot's mutex)
 * and opens it, records a transition (resume and suspend alternate, at an
 * address that counts) or, one step in 48, closes it.  Each cycle the main
 * thread attaches an engine while the writers run, so the walk races them
 * naturally, and the walk's hook forces each race at each step of the walk
 * on a share of the coroutines it visits -- the hook takes the slot's
 * mutex, like the owner, and then:
 *   pinned  closes it and makes its page PROT_NONE (the copy must fail:
 *           counted unreadable, the pin dropped, the slot freed);
 *   copied  records a transition (the owner claims it: the hand-over must
 *           fail, counted raced; the owner's own event is the first);
 *   filled  records a transition, or closes it (the hand-over must fail,
 *           the prepared station never published, reused).
 * The hook acts on every fourth coroutine it visits, cycling through the
 * four; the others are handed over.
 *
 * Exact books, once the walk is over and the writers are paused between
 * two steps (a gate), after the engine drained:
 *   - per walk: visited == published + raced + unreadable + no_station,
 *     and every forced race was counted where it must be (unreadable >=
 *     forced closes at the pin, raced >= forced records and closes);
 *   - every open coroutine appears in the engine exactly once, alive,
 *     with its probe id, its birth time, and its last transition exactly
 *     as the probe kept it in its struct (state, time, thread, address):
 *     no coroutine lost, none stale;
 *   - no other live coroutine appears (none published twice, no ghost of
 *     a coroutine closed while the walk held it);
 *   - stations: allocated minus the free list == open coroutines (the
 *     walk gave back the station it prepared last), no pin left, and the
 *     registry holds exactly the open coroutines;
 *   - no transition went untraced while attached.
 * Then the engine detaches, the writers run untraced for a while, and the
 * next cycle attaches again: the coroutines keep their births and their
 * last transitions across attachments.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "../common/itest.h"
#include "corotop/ppt.h"
#include "corotop/probe.h"
#include "engine/model/snapshot.h"
#include "engine/engine.h"
#include "probe/census.h"
#include "probe/probe_internal.h"
#include "probe/registry.h"
#include "wire/freelist.h"

#define WORKERS 3
#define PER_WORKER 32
#define SLOTS (WORKERS * PER_WORKER)
#define STATIONS 65536
#define WAIT_MS 30000 /* bound on every wait for the other side */
#define PAGE 4096

/* One coroutine slot: its struct in a page of its own while open. */
struct slot {
	pthread_mutex_t mu;
	struct corotop_coro *c;	 /* NULL: closed (under mu) */
	_Atomic uintptr_t c_pub; /* c, for the hook's lookup */
	uint64_t probe_id;	 /* under mu */
	uint64_t addr;		 /* next transition's address */
	bool active;		 /* the next transition resumes when false */
};

static struct {
	struct slot s[SLOTS];
	pthread_t th[WORKERS];
	uint64_t rnd[WORKERS];
	/* the gate: writers stop between two steps while asked */
	pthread_mutex_t mu;
	pthread_cond_t wake, parked;
	_Atomic bool pause;
	bool paused_req;
	unsigned paused;
	_Atomic bool stop;
	_Atomic uint64_t serial;
	/* PROT_NONE pages of coroutines the hook closed at a pin: unmapped
	 * at the end of the cycle (under mu) */
	void *none[4096];
	unsigned nnone;
	/* The main thread's own coroutine: its transition attaches while
	 * the writers are paused. */
	struct corotop_coro mine;
	bool mine_active;
	/* hook books: visits and cur are the census threads' (walks run one
	 * at a time, under the census's lock); the forced counts are read
	 * by the main thread at any time (relaxed atomics: what they count
	 * is ordered by census_running()'s acquire) */
	unsigned visits, cur;
	_Atomic uint64_t forced_unreadable, forced_raced;
} S;

static uint64_t rnd_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* relaxed: a count; what it counts is ordered by census_running(). */
static uint64_t forced_n(_Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

/* ---- a slot's coroutine (slot mutex held) ---- */

static void slot_open(struct slot *sl)
{
	void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	sl->c = p;
	/* relaxed: a counter. */
	sl->probe_id =
		atomic_fetch_add_explicit(&S.serial, 1, memory_order_relaxed) +
		0x10000;
	corotop_coro_open(sl->c, sl->probe_id);
	sl->active = false;
	/* release: the hook's acquire lookup finds it (it then takes mu). */
	atomic_store_explicit(&sl->c_pub, (uintptr_t)sl->c,
			      memory_order_release);
}

static void slot_record(struct slot *sl)
{
	sl->active = !sl->active;
	corotop_coro_record(sl->c, sl->active, 0x100000 + sl->addr++);
}

/* Close; the page is unmapped, or made PROT_NONE and kept (none). */
static void slot_close(struct slot *sl, bool none)
{
	corotop_coro_close(sl->c);
	atomic_store_explicit(&sl->c_pub, 0, memory_order_release);
	if (none) {
		assert_int_equal(mprotect(sl->c, PAGE, PROT_NONE), 0);
		pthread_mutex_lock(&S.mu);
		assert_true(S.nnone < sizeof(S.none) / sizeof(S.none[0]));
		S.none[S.nnone++] = sl->c;
		pthread_mutex_unlock(&S.mu);
	} else {
		munmap(sl->c, PAGE);
	}
	sl->c = NULL;
}

/* ---- the walk's hook: force each race (census thread) ---- */

static struct slot *slot_of(const struct corotop_coro *c)
{
	for (unsigned i = 0; i < SLOTS; i++)
		/* acquire: pairs with slot_open's release. */
		if (atomic_load_explicit(&S.s[i].c_pub, memory_order_acquire) ==
		    (uintptr_t)c)
			return &S.s[i];
	return NULL;
}

static void census_hook(enum census_step step, uint32_t reg_slot,
			struct corotop_coro *c)
{
	unsigned v, want;
	struct slot *sl;

	(void)reg_slot;
	if (step == CENSUS_PINNED)
		S.cur = S.visits++;
	v = S.cur;
	/* Every fourth coroutine visited: one race, cycling through four. */
	if (v % 4 != 0)
		return;
	want = (v / 4) % 4;
	if (!((want == 0 && step == CENSUS_PINNED) ||
	      (want == 1 && step == CENSUS_COPIED) ||
	      (want >= 2 && step == CENSUS_FILLED)))
		return;
	sl = slot_of(c);
	if (!sl)
		return; /* not ours, or closed meanwhile */
	pthread_mutex_lock(&sl->mu);
	if (sl->c == c) {
		if (want == 0) {
			slot_close(sl, true);
			atomic_fetch_add_explicit(&S.forced_unreadable, 1,
						  memory_order_relaxed);
		} else if (want == 3) {
			slot_close(sl, false);
			atomic_fetch_add_explicit(&S.forced_raced, 1,
						  memory_order_relaxed);
		} else {
			slot_record(sl);
			atomic_fetch_add_explicit(&S.forced_raced, 1,
						  memory_order_relaxed);
		}
	}
	pthread_mutex_unlock(&sl->mu);
}

/* ---- the writers ---- */

static void gate(void)
{
	/* relaxed: a hint; the mutex orders everything. */
	if (!atomic_load_explicit(&S.pause, memory_order_relaxed))
		return;
	pthread_mutex_lock(&S.mu);
	S.paused++;
	pthread_cond_signal(&S.parked);
	while (S.paused_req)
		pthread_cond_wait(&S.wake, &S.mu);
	S.paused--;
	pthread_mutex_unlock(&S.mu);
}

static void pause_all(void)
{
	uint64_t deadline = it_now() + WAIT_MS * 1000000ull;

	pthread_mutex_lock(&S.mu);
	S.paused_req = true;
	atomic_store_explicit(&S.pause, true, memory_order_relaxed);
	while (S.paused < WORKERS && it_now() < deadline) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&S.parked, &S.mu, &ts);
	}
	assert_int_equal(S.paused, WORKERS);
	pthread_mutex_unlock(&S.mu);
}

static void resume_all(void)
{
	pthread_mutex_lock(&S.mu);
	S.paused_req = false;
	atomic_store_explicit(&S.pause, false, memory_order_relaxed);
	pthread_cond_broadcast(&S.wake);
	pthread_mutex_unlock(&S.mu);
}

static void *writer_main(void *arg)
{
	unsigned w = (unsigned)(uintptr_t)arg;
	uint64_t *rnd = &S.rnd[w];

	while (!atomic_load_explicit(&S.stop, memory_order_relaxed)) {
		struct slot *sl =
			&S.s[w * PER_WORKER + rnd_next(rnd) % PER_WORKER];

		gate();
		pthread_mutex_lock(&sl->mu);
		if (!sl->c)
			slot_open(sl);
		else if (rnd_next(rnd) % 48 == 0)
			slot_close(sl, false);
		else
			slot_record(sl);
		pthread_mutex_unlock(&sl->mu);
	}
	return NULL;
}

/* ---- the engine ---- */

static struct engine *attach_self(unsigned k)
{
	struct engine_config cfg;
	struct engine *e;
	char err[512];

	engine_config_defaults(&cfg);
	cfg.attach_pid = getpid();
	cfg.ppt_buffer = COROTOP_PPT_BUFFER_NAME;
	cfg.stations = STATIONS;
	cfg.ct_traces = 4096;
	/* Short lingering: dead stations go back to the free list soon. */
	cfg.linger_ns = 1000000;
	e = engine_create(&cfg, err, sizeof(err));
	if (!e)
		fail_msg("engine_create (cycle %u): %s", k, err);
	if (!engine_start(e, err, sizeof(err)))
		fail_msg("engine_start (cycle %u): %s", k, err);
	return e;
}

static int live_now(void)
{
	/* acquire: pairs with the probe's release stores of live. */
	return __atomic_load_n(&corotop_probe_live_, __ATOMIC_ACQUIRE);
}

/* The walk of attachment `walks` is over (the census thread finished). */
static void wait_walked(unsigned k, uint64_t walks)
{
	uint64_t deadline = it_now() + WAIT_MS * 1000000ull;
	struct census_stats cs;

	for (;;) {
		census_stats(&cs);
		if (cs.walks >= walks && census_running() == 0)
			return;
		if (it_now() > deadline)
			fail_msg("cycle %u: the census walk did not end (%llu "
				 "walks, %u running)",
				 k, (unsigned long long)cs.walks,
				 census_running());
		it_sleep_ms(2);
	}
}

/* The region's free list, counted (writers paused, engine drained). */
static uint32_t free_stations(const struct probe_region *r)
{
	/* acquire: pairs with the engine's release pushes (K). */
	uint64_t head = atomic_load_explicit(&r->hdr->ext.free_head,
					     memory_order_acquire);
	uint32_t n = 0, top = (uint32_t)head;

	while (top && top <= r->max && n <= r->max) {
		n++;
		/* relaxed: the list is still (engine drained). */
		top = (uint32_t)atomic_load_explicit(
			&r->stations[top - 1].ext.next_free,
			memory_order_relaxed);
	}
	return n;
}

/* One open coroutine against the engine's record of it: NULL when they
 * agree, else what differs. */
static const char *coro_mismatch(const struct corotop_coro *c,
				 const struct model_coro *m)
{
	if (m->birth_ts != c->birth_ts)
		return "birth";
	if (!c->last_ts)
		return m->state == MODEL_SUSPENDED && m->state_ts == c->birth_ts
			       ? NULL
			       : "state before any transition";
	if (m->state != (c->last_active ? MODEL_RUNNING : MODEL_SUSPENDED))
		return "state";
	if (m->state_ts != c->last_ts)
		return "state time";
	if (m->last_tid != c->last_tid)
		return "thread";
	if (m->last_addr != c->last_addr)
		return "address";
	return NULL;
}

/*
 * Writers paused: the engine shows exactly the open coroutines, each once,
 * each as its struct says.  Waits (with a deadline) for the engine to
 * drain; returns the number of open coroutines, the main thread's
 * included.
 */
static unsigned check_model(struct engine *e, unsigned k)
{
	uint64_t deadline = it_now() + WAIT_MS * 1000000ull;
	char why[256];

	for (;;) {
		struct snapshot snap;
		unsigned open = 0, seen = 0;

		why[0] = '\0';
		snapshot_init(&snap);
		engine_snapshot(e, &snap);
		/* The writers' coroutines, then the main thread's. */
		for (unsigned i = 0; i <= SLOTS && !why[0]; i++) {
			const struct corotop_coro *c =
				i < SLOTS ? S.s[i].c : &S.mine;
			uint64_t id =
				i < SLOTS ? S.s[i].probe_id : S.mine.probe_id;
			unsigned found = 0;

			if (!c)
				continue;
			open++;
			for (size_t j = 0; j < snap.count; j++) {
				const struct model_coro *m = &snap.coro[j];
				const char *bad;

				if (m->state == MODEL_DEAD || m->probe_id != id)
					continue;
				found++;
				bad = coro_mismatch(c, m);
				if (bad)
					snprintf(why, sizeof(why),
						 "coroutine %#llx: %s differs",
						 (unsigned long long)id, bad);
			}
			if (found != 1 && !why[0])
				snprintf(why, sizeof(why),
					 "coroutine %#llx is shown %u times",
					 (unsigned long long)id, found);
		}
		for (size_t j = 0; j < snap.count; j++)
			seen += snap.coro[j].state != MODEL_DEAD;
		if (!why[0] && seen != open)
			snprintf(why, sizeof(why),
				 "%u live coroutines shown, %u open", seen,
				 open);
		snapshot_finish(&snap);
		if (!why[0])
			return open;
		if (it_now() > deadline)
			fail_msg("cycle %u: %s", k, why);
		it_sleep_ms(5);
	}
}

static void run_cycles(unsigned cycles)
{
	struct census_stats c0, c1;
	struct corotop_probe_stats p0, p1;
	struct registry_stats rs;
	uint64_t forced_u0, forced_r0;

	for (unsigned k = 0; k < cycles; k++) {
		struct engine *e;
		struct probe_region *r;
		unsigned open;
		uint32_t alloc, nfree;

		bool paused = k % 2 == 1;
		unsigned open0 = 0;

		census_stats(&c0);
		corotop_probe_stats(&p0);
		forced_u0 = forced_n(&S.forced_unreadable);
		forced_r0 = forced_n(&S.forced_raced);
		if (paused) {
			/* Attach with the writers paused: the walk meets
			 * every open coroutine, and races only the hook's. */
			pause_all();
			for (unsigned i = 0; i < SLOTS; i++)
				open0 += S.s[i].c != NULL;
		}
		e = attach_self(k);
		if (paused) {
			/* The main thread's transition attaches. */
			uint64_t end = it_now() + WAIT_MS * 1000000ull;

			while (!live_now() && it_now() < end) {
				S.mine_active = !S.mine_active;
				corotop_coro_record(&S.mine, S.mine_active,
						    0x4d00);
				it_sleep_ms(1);
			}
			assert_int_equal(live_now(), 1);
		}
		wait_walked(k, c0.walks + 1);
		if (paused) {
			census_stats(&c1);
			/* Exact but for the main thread's own coroutine,
			 * which its transition claims itself or the walk
			 * hands over (the attach starts the walk). */
			assert_true(c1.visited - c0.visited >= open0 &&
				    c1.visited - c0.visited <= open0 + 1);
			assert_int_equal(c1.unreadable - c0.unreadable,
					 forced_n(&S.forced_unreadable) -
						 forced_u0);
			assert_true(c1.raced - c0.raced >=
					    forced_n(&S.forced_raced) -
						    forced_r0 &&
				    c1.raced - c0.raced <=
					    forced_n(&S.forced_raced) -
						    forced_r0 + 1);
			resume_all();
		}
		/* Some traced time after the walk, then the books. */
		it_sleep_ms(20 + 10 * (k % 4));
		pause_all();
		census_stats(&c1);
		open = check_model(e, k);
		r = probe_region();
		assert_non_null(r);
		/* acquire: the cursor (the engine drained, writers paused). */
		alloc = atomic_load_explicit(&r->hdr->allocated_count,
					     memory_order_acquire);
		/* Dead stations go back once the engine saw them dead (the
		 * process station stays while the attach lasts). */
		for (uint64_t end = it_now() + WAIT_MS * 1000000ull;;) {
			nfree = free_stations(r);
			if (alloc - nfree == open + 1 || it_now() > end)
				break;
			it_sleep_ms(2);
		}
		registry_stats(&rs);
		corotop_probe_stats(&p1);
		printf("census-stress: cycle %2u (%s attach): %u open, walk "
		       "visited %llu: "
		       "%llu published (%llu with an event), %llu raced, %llu "
		       "unreadable, %llu without a station in %.3f ms; forced "
		       "%llu unreadable, %llu raced; stations %u - %u free\n",
		       k, paused ? "paused" : "running", open,
		       (unsigned long long)(c1.visited - c0.visited),
		       (unsigned long long)(c1.published - c0.published),
		       (unsigned long long)(c1.events - c0.events),
		       (unsigned long long)(c1.raced - c0.raced),
		       (unsigned long long)(c1.unreadable - c0.unreadable),
		       (unsigned long long)(c1.no_station - c0.no_station),
		       (double)(c1.walk_ns - c0.walk_ns) / 1e6,
		       (unsigned long long)(forced_n(&S.forced_unreadable) -
					    forced_u0),
		       (unsigned long long)(forced_n(&S.forced_raced) -
					    forced_r0),
		       alloc, nfree);
		fflush(stdout);
		assert_int_equal(c1.visited - c0.visited,
				 (c1.published - c0.published) +
					 (c1.raced - c0.raced) +
					 (c1.unreadable - c0.unreadable) +
					 (c1.no_station - c0.no_station));
		assert_int_equal(c1.no_station - c0.no_station, 0);
		assert_true(c1.unreadable - c0.unreadable >=
			    forced_n(&S.forced_unreadable) - forced_u0);
		assert_true(c1.raced - c0.raced >=
			    forced_n(&S.forced_raced) - forced_r0);
		assert_int_equal(c1.aborted, c0.aborted);
		/* One station per open coroutine, and the process station
		 * this attach published (docs/WIRE.md, "Processes"). */
		assert_int_equal(alloc - nfree, open + 1);
		assert_int_equal(rs.live, open);
		assert_int_equal(rs.pins, 0);
		assert_int_equal(p1.untraced - p0.untraced, 0);
		/* Detach; the writers go on untraced a while. */
		engine_destroy(e);
		resume_all();
		{
			uint64_t deadline = it_now() + WAIT_MS * 1000000ull;

			while (live_now() && it_now() < deadline)
				it_sleep_ms(1);
			assert_int_equal(live_now(), 0);
		}
		it_sleep_ms(10 + 7 * (k % 3));
		pthread_mutex_lock(&S.mu);
		for (unsigned i = 0; i < S.nnone; i++)
			munmap(S.none[i], PAGE);
		S.nnone = 0;
		pthread_mutex_unlock(&S.mu);
	}
}

/* ---- a station reused after a failed hand-over ---- */

/*
 * The walk fills its spare station for a coroutine that ran -- header and
 * census event -- and the owner's record makes the hand-over fail.  The
 * station was never published; the walk reuses it for the next coroutine
 * it visits, or gives it back to the free list after the last one, and
 * its next occupant starts at the same event number.  That occupant must
 * not show the failed one's census event as its own:
 *   - `fresh`, next in registry order after `ran`, never ran: the walk
 *     reuses the spare for it;
 *   - `last`, the last one visited, fails too: the spare goes back to the
 *     free list, and `late`, opened after the walk, takes it.
 * Both are shown suspended since their births.  Forced: the hook records
 * `ran` and `last` at their CENSUS_FILLED; the registry holds only these
 * four when this test runs (first), in this order.
 */
static struct {
	struct corotop_coro lead, ran, fresh, last, late;
	unsigned forced;
} R;

static void reuse_hook(enum census_step step, uint32_t reg_slot,
		       struct corotop_coro *c)
{
	(void)reg_slot;
	if (step != CENSUS_FILLED || (c != &R.ran && c != &R.last))
		return;
	R.forced++;
	/* Its owner's transition claims it: the hand-over fails. */
	corotop_coro_record(c, 1, c == &R.ran ? 0x5252 : 0x4c4c);
}

/* The engine's record of the coroutine probe_id, NULL while it has none. */
static const struct model_coro *shown(const struct snapshot *snap,
				      uint64_t probe_id)
{
	for (size_t j = 0; j < snap->count; j++)
		if (snap->coro[j].state != MODEL_DEAD &&
		    snap->coro[j].probe_id == probe_id)
			return &snap->coro[j];
	return NULL;
}

/* Never ran, and shown so: suspended since its birth, no transition. */
static void assert_unran(const struct model_coro *m,
			 const struct corotop_coro *c, const char *what)
{
	print_message("%s: state %c since %llu (birth %llu), addr %#llx, "
		      "%llu switches\n",
		      what, (int)m->state, (unsigned long long)m->state_ts,
		      (unsigned long long)c->birth_ts,
		      (unsigned long long)m->last_addr,
		      (unsigned long long)m->switches);
	assert_int_equal(m->state, MODEL_SUSPENDED);
	assert_int_equal(m->state_ts, c->birth_ts);
	assert_int_equal(m->last_addr, 0);
	assert_int_equal(m->switches, 0);
}

static void test_census_reused_station(void **state)
{
	uint64_t end = it_now() + WAIT_MS * 1000000ull;
	const struct model_coro *f, *r, *l, *t;
	struct census_stats c0, c1;
	struct registry_stats rs;
	struct snapshot snap;
	struct engine *e;
	bool active = false;

	(void)state;
	assert_int_equal(live_now(), 0);
	corotop_coro_open(&R.lead, 0x4c454144);
	corotop_coro_open(&R.ran, 0x52414e);
	corotop_coro_record(&R.ran, 0, 0x5253); /* untraced: noted */
	corotop_coro_open(&R.fresh, 0x465245);	/* never runs */
	corotop_coro_open(&R.last, 0x4c415354);
	corotop_coro_record(&R.last, 0, 0x4c53);
	registry_stats(&rs);
	assert_int_equal(rs.live, 4);
	assert_true(R.lead.reg < R.ran.reg && R.ran.reg < R.fresh.reg &&
		    R.fresh.reg < R.last.reg);
	census_stats(&c0);
	census_test_hook = reuse_hook;
	e = attach_self(0);
	while (!live_now() && it_now() < end) {
		active = !active;
		corotop_coro_record(&R.lead, active, 0x4c00);
		it_sleep_ms(1);
	}
	assert_int_equal(live_now(), 1);
	wait_walked(0, c0.walks + 1);
	census_test_hook = NULL;
	census_stats(&c1);
	assert_int_equal(R.forced, 2);
	assert_true(c1.raced - c0.raced >= 2);
	/* Opened after the walk: the spare it gave back is the free list's
	 * top (nothing died since). */
	corotop_coro_open(&R.late, 0x4c415445);
	/* All shown, the two that raced with their own transitions: what
	 * the engine harvested of these is all there is to harvest. */
	snapshot_init(&snap);
	for (;;) {
		engine_snapshot(e, &snap);
		f = shown(&snap, R.fresh.probe_id);
		r = shown(&snap, R.ran.probe_id);
		l = shown(&snap, R.last.probe_id);
		t = shown(&snap, R.late.probe_id);
		if (f && r && l && t && r->last_addr == 0x5252 &&
		    l->last_addr == 0x4c4c)
			break;
		if (it_now() > end)
			fail_msg("the engine did not show all four");
		snapshot_finish(&snap);
		snapshot_init(&snap);
		it_sleep_ms(2);
	}
	assert_unran(f, &R.fresh, "fresh (the spare reused)");
	assert_unran(t, &R.late, "late (the spare given back)");
	snapshot_finish(&snap);
	engine_destroy(e);
	while (live_now() && it_now() < end)
		it_sleep_ms(1);
	assert_int_equal(live_now(), 0);
	corotop_coro_close(&R.late);
	corotop_coro_close(&R.last);
	corotop_coro_close(&R.fresh);
	corotop_coro_close(&R.ran);
	corotop_coro_close(&R.lead);
}

static void test_census_races(void **state)
{
	const char *env = getenv("CENSUS_STRESS_CYCLES");
	unsigned cycles = env ? (unsigned)atoi(env) : 10;
	struct census_stats cs;

	(void)state;
	pthread_mutex_init(&S.mu, NULL);
	pthread_cond_init(&S.wake, NULL);
	pthread_cond_init(&S.parked, NULL);
	for (unsigned i = 0; i < SLOTS; i++)
		pthread_mutex_init(&S.s[i].mu, NULL);
	census_test_hook = census_hook;
	/* Untraced from the start: no CTP_* here. */
	assert_int_equal(live_now(), 0);
	corotop_coro_open(&S.mine, 0x4d494e45);
	for (unsigned w = 0; w < WORKERS; w++) {
		S.rnd[w] = 0x9e3779b97f4a7c15ull * (w + 1);
		assert_int_equal(pthread_create(&S.th[w], NULL, writer_main,
						(void *)(uintptr_t)w),
				 0);
	}
	run_cycles(cycles ? cycles : 1);
	atomic_store_explicit(&S.stop, true, memory_order_relaxed);
	for (unsigned w = 0; w < WORKERS; w++)
		pthread_join(S.th[w], NULL);
	census_stats(&cs);
	/* Every race was forced at least once over the run (the hook acts
	 * on every fourth coroutine a walk visits). */
	assert_true(forced_n(&S.forced_unreadable) > 0);
	assert_true(forced_n(&S.forced_raced) > 0);
	assert_true(cs.published > 0);
	census_test_hook = NULL;
	for (unsigned i = 0; i < SLOTS; i++)
		if (S.s[i].c)
			slot_close(&S.s[i], false);
	corotop_coro_close(&S.mine);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* First: it needs a registry of its own three. */
		cmocka_unit_test(test_census_reused_station),
		cmocka_unit_test(test_census_races),
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
