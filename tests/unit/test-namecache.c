/*
 * test-namecache: the engine's names of code addresses (namecache.c), and
 * how a snapshot shows them (snapshot_where).
 *
 * The resolver here is the test's: it counts its calls, names an address
 * "fn_<hex>+0x4" (brief) or "fn_<hex>+0x4 (f.c:GEN)" (full), gives no name
 * to addresses from 0xdead0000 up, and can be held at a gate, so that "not
 * resolved yet" is a state the test holds, not a race it hopes to win.
 * Every wait for the names thread is for a condition, with a deadline.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "engine/model/snapshot.h"
#include "engine/names/namecache.h"

struct fake {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool held;	   /* resolves wait while this is true */
	unsigned waiting;  /* resolves waiting at the gate now */
	unsigned calls;	   /* resolves made */
	uint32_t gen;	   /* the generation returned */
	atomic_uint notes; /* notify calls (relaxed: a count the test reads
			      after joining the thread) */
};

static bool fake_resolve(void *ctx, uint64_t addr, char *full, char *brief,
			 uint32_t *genp)
{
	struct fake *f = ctx;
	uint32_t gen;

	/* A where's key (SNAPSHOT_WHERE_KEY) names its address. */
	addr &= ~SNAPSHOT_WHERE_TAG;
	pthread_mutex_lock(&f->lock);
	f->waiting++;
	pthread_cond_broadcast(&f->cond);
	while (f->held)
		pthread_cond_wait(&f->cond, &f->lock);
	f->waiting--;
	f->calls++;
	gen = f->gen;
	pthread_mutex_unlock(&f->lock);
	snprintf(full, NAMECACHE_NAME_MAX, "fn_%llx+0x4 (f.c:%u)",
		 (unsigned long long)addr, gen);
	snprintf(brief, NAMECACHE_NAME_MAX, "fn_%llx+0x4",
		 (unsigned long long)addr);
	*genp = gen;
	return addr < 0xdead0000u;
}

static void fake_notify(void *ctx)
{
	struct fake *f = ctx;

	atomic_fetch_add_explicit(&f->notes, 1, memory_order_relaxed);
}

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
}

static void fake_hold(struct fake *f, bool held)
{
	pthread_mutex_lock(&f->lock);
	f->held = held;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

static unsigned fake_calls(struct fake *f)
{
	unsigned n;

	pthread_mutex_lock(&f->lock);
	n = f->calls;
	pthread_mutex_unlock(&f->lock);
	return n;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Ask for addr until the thread holds it at the gate (30 s at most).  A
 * lookup that finds the cache busy answers "not yet" without queueing (the
 * UI asks again at its next draw), so one ask is not enough: the thread
 * may hold the lock at that moment, and under TSan it did.
 */
static void ask_until_gate(struct fake *f, struct namecache *nc, uint64_t addr)
{
	char buf[NAMECACHE_NAME_MAX];
	uint64_t end = now_ms() + 30000;

	for (;;) {
		unsigned w;

		assert_false(
			namecache_name(nc, addr, true, buf, sizeof(buf), NULL));
		pthread_mutex_lock(&f->lock);
		w = f->waiting;
		pthread_mutex_unlock(&f->lock);
		if (w >= 1)
			return;
		assert_true(now_ms() < end);
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
}

/* Until addr is named, 30 s at most. */
static void wait_named(struct namecache *nc, uint64_t addr, char *buf, size_t n)
{
	uint64_t end = now_ms() + 30000;

	while (!namecache_name(nc, addr, true, buf, n, NULL)) {
		assert_true(now_ms() < end);
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
}

static struct namecache *make(struct fake *f, bool later, uint32_t max_names)
{
	struct namecache_config c = {
		.resolve = fake_resolve,
		.notify = fake_notify,
		.ctx = f,
		.later = later,
		.max_names = max_names,
		.max_queued = 8,
	};
	struct namecache *nc = namecache_create(&c);

	assert_non_null(nc);
	return nc;
}

/* Without the thread: a lookup never resolves (false until ensured);
 * ensure resolves once; both forms; no name; address 0. */
static void test_now(void **state)
{
	struct fake f;
	struct namecache *nc;
	char buf[NAMECACHE_NAME_MAX];
	uint32_t g0, g1;
	bool st;

	(void)state;
	fake_init(&f);
	nc = make(&f, false, 64);
	g0 = namecache_gen(nc);
	assert_false(namecache_name(nc, 0x1234, true, buf, sizeof(buf), &st));
	assert_true(st); /* nothing will come without ensure */
	assert_int_equal(f.calls, 0);
	namecache_ensure(nc, 0x1234);
	namecache_ensure(nc, 0x1234);
	namecache_ensure(nc, 0);
	assert_int_equal(f.calls, 1);
	g1 = namecache_gen(nc);
	assert_int_equal(g0, g1); /* a first name forgets nothing */
	assert_true(namecache_name(nc, 0x1234, true, buf, sizeof(buf), NULL));
	assert_string_equal(buf, "fn_1234+0x4 (f.c:0)");
	assert_true(namecache_name(nc, 0x1234, false, buf, sizeof(buf), NULL));
	assert_string_equal(buf, "fn_1234+0x4");
	assert_int_equal(namecache_gen(nc), g1); /* lookups add nothing */
	namecache_ensure(nc, 0xdead0001);
	assert_false(
		namecache_name(nc, 0xdead0001, true, buf, sizeof(buf), NULL));
	namecache_ensure(nc, 0xdead0001); /* no name is an answer too */
	assert_int_equal(f.calls, 2);
	namecache_destroy(nc);
}

/* With the thread: a miss returns at once and queues the address once,
 * however often it is asked for; the name comes with a notify and a new
 * generation; a lookup never waits for the resolver. */
static void test_later(void **state)
{
	struct fake f;
	struct namecache *nc;
	struct namecache_stats st;
	char buf[NAMECACHE_NAME_MAX];
	uint32_t g0;
	bool settled;

	(void)state;
	fake_init(&f);
	fake_hold(&f, true);
	nc = make(&f, true, 64);
	for (int i = 0; i < 100; i++)
		assert_false(namecache_name(nc, 0xabc, true, buf, sizeof(buf),
					    NULL));
	/* The thread took the one miss and is held resolving it: lookups
	 * still answer (hex for now), without waiting. */
	ask_until_gate(&f, nc, 0xabc);
	assert_false(
		namecache_name(nc, 0xabc, false, buf, sizeof(buf), &settled));
	assert_false(settled); /* a name may still come */
	g0 = namecache_gen(nc);
	namecache_stats(nc, &st);
	assert_int_equal(st.queued, 0);
	assert_int_equal(st.resolves, 0);
	assert_int_equal(atomic_load(&f.notes), 0);
	fake_hold(&f, false);
	wait_named(nc, 0xabc, buf, sizeof(buf));
	assert_string_equal(buf, "fn_abc+0x4 (f.c:0)");
	assert_true(
		namecache_name(nc, 0xabc, false, buf, sizeof(buf), &settled));
	assert_true(settled);
	assert_string_equal(buf, "fn_abc+0x4");
	assert_int_equal(namecache_gen(nc), g0); /* nothing forgotten */
	assert_int_equal(fake_calls(&f), 1);	 /* queued once for 101 asks */
	namecache_destroy(nc);
	assert_true(atomic_load(&f.notes) >= 1);
}

/* Misses past max_queued are not queued (a later lookup asks again), and
 * none is lost: every address is named in the end. */
static void test_queue_bound(void **state)
{
	struct fake f;
	struct namecache *nc;
	struct namecache_stats st;
	char buf[NAMECACHE_NAME_MAX];

	(void)state;
	fake_init(&f);
	fake_hold(&f, true);
	nc = make(&f, true, 64);
	ask_until_gate(&f, nc, 1); /* the thread holds address 1 */
	for (uint64_t a = 2; a < 20; a++)
		assert_false(
			namecache_name(nc, a, true, buf, sizeof(buf), NULL));
	namecache_stats(nc, &st);
	assert_int_equal(st.queued, 8);
	fake_hold(&f, false);
	for (uint64_t a = 1; a < 20; a++)
		wait_named(nc, a, buf, sizeof(buf));
	namecache_stats(nc, &st);
	assert_int_equal(st.names, 19);
	assert_int_equal(st.resolves, 19);
	namecache_destroy(nc);
}

/* The resolver's generation moving forgets every earlier name; the bound
 * on names forgets them all too; so does clear. */
static void test_forget(void **state)
{
	struct fake f;
	struct namecache *nc;
	struct namecache_stats st;
	char buf[NAMECACHE_NAME_MAX];
	uint32_t g;

	(void)state;
	fake_init(&f);
	nc = make(&f, false, 4);
	for (uint64_t a = 1; a <= 4; a++)
		namecache_ensure(nc, a);
	namecache_stats(nc, &st);
	assert_int_equal(st.names, 4);
	g = namecache_gen(nc);
	namecache_ensure(nc, 5); /* past the bound */
	assert_int_not_equal(namecache_gen(nc), g);
	namecache_stats(nc, &st);
	assert_int_equal(st.names, 1);
	assert_false(namecache_name(nc, 1, true, buf, sizeof(buf), NULL));
	f.gen = 7; /* libraries came or went */
	namecache_ensure(nc, 6);
	assert_true(namecache_name(nc, 6, true, buf, sizeof(buf), NULL));
	assert_string_equal(buf, "fn_6+0x4 (f.c:7)");
	namecache_stats(nc, &st);
	assert_int_equal(st.names, 1);
	namecache_ensure(nc, 5); /* asked again */
	assert_true(namecache_name(nc, 5, true, buf, sizeof(buf), NULL));
	assert_string_equal(buf, "fn_5+0x4 (f.c:7)");
	assert_int_equal(f.calls, 7);
	namecache_clear(nc);
	namecache_stats(nc, &st);
	assert_int_equal(st.names, 0);
	namecache_destroy(nc);
}

/* Past the first table (1024 slots): every name kept and found. */
static void test_many(void **state)
{
	struct fake f;
	struct namecache *nc;
	char buf[NAMECACHE_NAME_MAX], want[64];

	(void)state;
	fake_init(&f);
	nc = make(&f, false, 1u << 16);
	for (uint64_t a = 1; a <= 5000; a++)
		namecache_ensure(nc, a << 4);
	for (uint64_t a = 1; a <= 5000; a++) {
		snprintf(want, sizeof(want), "fn_%llx+0x4",
			 (unsigned long long)(a << 4));
		assert_true(namecache_name(nc, a << 4, false, buf, sizeof(buf),
					   NULL));
		assert_string_equal(buf, want);
	}
	assert_int_equal(f.calls, 5000);
	namecache_destroy(nc);
}

/* A resolve in flight across a clear (the process named changed) is
 * dropped, not stored as the new process's name. */
static void test_clear_in_flight(void **state)
{
	struct fake f;
	struct namecache *nc;
	struct namecache_stats st;
	char buf[NAMECACHE_NAME_MAX];

	(void)state;
	fake_init(&f);
	fake_hold(&f, true);
	nc = make(&f, true, 64);
	ask_until_gate(&f, nc, 0x99);
	namecache_clear(nc);
	fake_hold(&f, false);
	/* The thread takes misses in order: once 0x98, asked after the
	 * clear, is named, the resolve of 0x99 is over. */
	assert_false(namecache_name(nc, 0x98, true, buf, sizeof(buf), NULL));
	wait_named(nc, 0x98, buf, sizeof(buf));
	namecache_stats(nc, &st);
	assert_int_equal(st.resolves, 1); /* 0x98's only */
	assert_int_equal(st.names, 1);
	assert_false(namecache_name(nc, 0x99, true, buf, sizeof(buf), NULL));
	namecache_destroy(nc);
}

/* A snapshot shows the engine's names, or hex: without names, for an
 * address not named, and in a buffer too small. */
static void test_snapshot_where(void **state)
{
	struct fake f;
	struct snapshot s;
	char buf[64], small[4];
	bool settled;

	(void)state;
	fake_init(&f);
	snapshot_init(&s);
	assert_string_equal(snapshot_where(&s, 0x7f01, true, buf, sizeof(buf)),
			    "0x7f01");
	s.names = make(&f, false, 64);
	namecache_ensure(s.names, SNAPSHOT_WHERE_KEY(0x7f01));
	namecache_ensure(s.names, SNAPSHOT_WHERE_KEY(0xdead0002));
	/* An exact address (a coroutine's entry) is another key. */
	assert_false(
		namecache_name(s.names, 0x7f01, true, buf, sizeof(buf), NULL));
	assert_string_equal(snapshot_where(&s, 0x7f01, true, buf, sizeof(buf)),
			    "fn_7f01+0x4 (f.c:0)");
	assert_string_equal(snapshot_where(&s, 0x7f01, false, buf, sizeof(buf)),
			    "fn_7f01+0x4");
	assert_string_equal(
		snapshot_where(&s, 0xdead0002, true, buf, sizeof(buf)),
		"0xdead0002");
	assert_string_equal(snapshot_where(&s, 0x7f03, true, buf, sizeof(buf)),
			    "0x7f03");
	snapshot_where_settled(&s, 0x7f03, true, buf, sizeof(buf), &settled);
	assert_true(settled); /* no thread: nothing will come */
	assert_string_equal(snapshot_where(&s, 0x7f01, true, small, 4), "fn_");
	namecache_destroy(s.names);
	s.names = NULL;
	snapshot_finish(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_now),
		cmocka_unit_test(test_later),
		cmocka_unit_test(test_queue_bound),
		cmocka_unit_test(test_forget),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_clear_in_flight),
		cmocka_unit_test(test_snapshot_where),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
