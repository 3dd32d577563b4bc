/*
 * test-freelist-stress: the station free list (src/wire/freelist.h) under
 * concurrent pops and pushes.
 *
 * Concept.  The free list is a tagged Treiber stack in shared memory: probe
 * threads pop stations for new coroutines, the engine pushes back stations
 * whose coroutine died.  Its failure modes are all about ownership: a
 * station handed to two owners at once (the classic ABA pop), a station that
 * falls out of the list for good, or a list that loops.  So every station
 * carries an ownership word checked with atomic exchanges:
 *
 *   FREE  -> OWNED  by the popper that got it (must have been FREE)
 *   OWNED -> DEAD   by that owner when its "coroutine" ends
 *   DEAD  -> FREE   by the engine thread, which then pushes it
 *
 * Any other transition is a double ownership and fails the test.  Owners
 * also stamp the station's probe_id and verify it before letting go, so a
 * second owner writing the same station is seen too.  Few stations and more
 * poppers than cores make the ABA window (pop reads head and next, is
 * preempted, others pop/push the same head) happen constantly.  At the end
 * the list is walked single-threaded: every station exactly once, nothing
 * lost, no cycle, and pops == pushes.
 *
 * The protocol has a single pusher (the engine).  A second run lets owners
 * push their own stations back, many pushers at once, which the CAS loop
 * must survive as well.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <sched.h>

#include "wire/freelist.h"
#include "../common/itest.h"

#define FL_STATIONS 6
#define FL_POPPERS 3
#define FL_SECONDS 1.0

enum { FL_FREE = 0, FL_OWNED = 1, FL_DEAD = 2 };

struct fl {
	struct ctp_header *hdr;
	struct ctp_station *st;
	bool self_push; /* owners push back themselves (many pushers) */
	_Atomic uint32_t state[FL_STATIONS];
	_Atomic bool stop_poppers;
	_Atomic bool stop_engine;
	_Atomic uint64_t pops, pushes, empty;
	_Atomic uint64_t double_owned, bad_index, stamp_clobbered;
};

struct fl_popper {
	struct fl *fl;
	uint64_t token;
};

static bool fl_transition(struct fl *f, uint32_t i, uint32_t from, uint32_t to)
{
	uint32_t want = from;

	return atomic_compare_exchange_strong(&f->state[i], &want, to);
}

static void fl_push(struct fl *f, uint32_t i)
{
	freelist_push(f->hdr, f->st, i);
	atomic_fetch_add(&f->pushes, 1);
}

static void *fl_popper_main(void *arg)
{
	struct fl_popper *p = arg;
	struct fl *f = p->fl;
	uint64_t n = 0;

	while (!atomic_load(&f->stop_poppers)) {
		uint32_t i = freelist_pop(f->hdr, f->st, FL_STATIONS);

		if (i == FREELIST_EMPTY) {
			atomic_fetch_add(&f->empty, 1);
			sched_yield();
			continue;
		}
		atomic_fetch_add(&f->pops, 1);
		if (i >= FL_STATIONS) {
			atomic_fetch_add(&f->bad_index, 1);
			continue;
		}
		if (!fl_transition(f, i, FL_FREE, FL_OWNED)) {
			atomic_fetch_add(&f->double_owned, 1);
			continue;
		}
		/* The "coroutine": stamp the station, live a little. */
		__atomic_store_n(&f->st[i].probe_id, p->token + n,
				 __ATOMIC_RELAXED);
		if (++n % 3 == 0)
			sched_yield();
		if (__atomic_load_n(&f->st[i].probe_id, __ATOMIC_RELAXED) !=
		    p->token + n - 1)
			atomic_fetch_add(&f->stamp_clobbered, 1);
		if (f->self_push) {
			if (!fl_transition(f, i, FL_OWNED, FL_FREE))
				atomic_fetch_add(&f->double_owned, 1);
			fl_push(f, i);
		} else if (!fl_transition(f, i, FL_OWNED, FL_DEAD)) {
			atomic_fetch_add(&f->double_owned, 1);
		}
	}
	return NULL;
}

/* The engine: recycle dead stations (the single pusher). */
static void *fl_engine_main(void *arg)
{
	struct fl *f = arg;

	for (;;) {
		bool stopping = atomic_load(&f->stop_engine);
		unsigned dead = 0;

		for (uint32_t i = 0; i < FL_STATIONS; i++) {
			if (atomic_load(&f->state[i]) != FL_DEAD)
				continue;
			dead++;
			/* FREE before it is reachable again. */
			if (!fl_transition(f, i, FL_DEAD, FL_FREE)) {
				atomic_fetch_add(&f->double_owned, 1);
				continue;
			}
			fl_push(f, i);
		}
		if (stopping && !dead)
			break;
		if (!dead)
			sched_yield();
	}
	return NULL;
}

static void fl_run(bool self_push)
{
	struct fl *f = calloc(1, sizeof(*f));
	size_t size = (size_t)ctp_region_size(FL_STATIONS);
	struct fl_popper pp[FL_POPPERS];
	pthread_t pt[FL_POPPERS], et;
	bool seen[FL_STATIONS] = {false};
	uint64_t head, walked = 0;
	uint32_t i;

	assert_non_null(f);
	f->self_push = self_push;
	f->hdr = aligned_alloc(CTP_HEADER_SIZE, size);
	assert_non_null(f->hdr);
	memset(f->hdr, 0, size);
	f->st = (struct ctp_station *)((char *)f->hdr + CTP_HEADER_SIZE);
	for (i = 0; i < FL_STATIONS; i++)
		freelist_push(f->hdr, f->st, i);

	assert_int_equal(pthread_create(&et, NULL, fl_engine_main, f), 0);
	for (unsigned k = 0; k < FL_POPPERS; k++) {
		pp[k] = (struct fl_popper){.fl = f,
					   .token = (uint64_t)(k + 1) << 40};
		assert_int_equal(
			pthread_create(&pt[k], NULL, fl_popper_main, &pp[k]),
			0);
	}
	it_sleep_us((unsigned)(FL_SECONDS * 1e6));
	atomic_store(&f->stop_poppers, true);
	for (unsigned k = 0; k < FL_POPPERS; k++)
		pthread_join(pt[k], NULL);
	/* Owners finished their last station; the engine recycles it. */
	atomic_store(&f->stop_engine, true);
	pthread_join(et, NULL);

	print_message("%s: pops %llu, pushes %llu, empty pops %llu, tag %u; "
		      "double-owned %llu, bad index %llu, clobbered %llu\n",
		      self_push ? "many pushers" : "single pusher",
		      (unsigned long long)atomic_load(&f->pops),
		      (unsigned long long)atomic_load(&f->pushes),
		      (unsigned long long)atomic_load(&f->empty),
		      (unsigned)(atomic_load(&f->hdr->ext.free_head) >> 32),
		      (unsigned long long)atomic_load(&f->double_owned),
		      (unsigned long long)atomic_load(&f->bad_index),
		      (unsigned long long)atomic_load(&f->stamp_clobbered));
	assert_int_equal(atomic_load(&f->double_owned), 0);
	assert_int_equal(atomic_load(&f->bad_index), 0);
	assert_int_equal(atomic_load(&f->stamp_clobbered), 0);
	assert_true(atomic_load(&f->pops) > 1000);
	/* Every pop was matched by a push... */
	assert_int_equal(atomic_load(&f->pops), atomic_load(&f->pushes));
	/* ...and the list holds each station exactly once, no cycle. */
	head = atomic_load(&f->hdr->ext.free_head);
	for (i = (uint32_t)head; i != 0; walked++) {
		assert_true(walked <= FL_STATIONS);
		assert_true(i <= FL_STATIONS);
		assert_false(seen[i - 1]);
		seen[i - 1] = true;
		assert_int_equal(atomic_load(&f->state[i - 1]), FL_FREE);
		i = (uint32_t)atomic_load(&f->st[i - 1].ext.next_free);
	}
	assert_int_equal(walked, FL_STATIONS);
	/* Single-threaded pops drain it in the same order, then empty. */
	for (unsigned k = 0; k < FL_STATIONS; k++)
		assert_true(freelist_pop(f->hdr, f->st, FL_STATIONS) <
			    FL_STATIONS);
	assert_int_equal(freelist_pop(f->hdr, f->st, FL_STATIONS),
			 FREELIST_EMPTY);
	free(f->hdr);
	free(f);
}

static void test_freelist_single_pusher(void **state)
{
	(void)state;
	fl_run(false);
}

static void test_freelist_many_pushers(void **state)
{
	(void)state;
	fl_run(true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_freelist_single_pusher),
		cmocka_unit_test(test_freelist_many_pushers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
