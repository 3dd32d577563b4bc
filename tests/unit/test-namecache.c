/*
 * test-namecache: the engine's names of code addresses (namecache.c) and
 * the copy a snapshot carries (snapshot.c's names).
 *
 * The resolver here is the test's: it counts its calls, names an address
 * "fn_<hex>" with a brief form "fn_<hex>" and a full one with a file, and
 * can be held at a gate, so that "not resolved yet" is a state the test
 * holds, not a race it hopes to win.  Every wait for the names thread is
 * for a condition, with a deadline.
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

#include "engine/ctp/snapshot.h"
#include "engine/symbols/namecache.h"

struct fake {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool held;	   /* resolves wait while this is true */
	unsigned waiting;  /* resolves waiting at the gate now */
	unsigned calls;	   /* resolves made */
	uint32_t gen;	   /* the generation returned */
	atomic_uint notes; /* notify calls (relaxed: a count the test polls
			      with a deadline; the names are read under
			      the cache's lock) */
};

static uint32_t fake_resolve(void *ctx, uint64_t addr, char *full, char *brief)
{
	struct fake *f = ctx;
	uint32_t gen;

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
	return gen;
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

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wait (30 s at most) until resolves are waiting at the gate. */
static void fake_wait_gate(struct fake *f, unsigned n)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	pthread_mutex_lock(&f->lock);
	while (f->waiting < n)
		if (pthread_cond_timedwait(&f->cond, &f->lock, &until))
			break;
	assert_true(f->waiting >= n);
	pthread_mutex_unlock(&f->lock);
}

/* Look addr up in one pass; its full form into buf, or false. */
static bool find(struct namecache *nc, uint64_t addr, char *buf, size_t n,
		 uint32_t *gen)
{
	const char *full = NULL, *brief = NULL;
	bool ok;

	namecache_begin(nc);
	ok = namecache_find(nc, addr, &full, &brief);
	if (ok)
		snprintf(buf, n, "%s", full);
	*gen = namecache_end(nc);
	return ok;
}

/* Until addr is named (the thread's notify and the name both), 30 s. */
static void wait_named(struct namecache *nc, uint64_t addr, char *buf, size_t n)
{
	uint64_t end = now_ms() + 30000;
	uint32_t gen;

	while (!find(nc, addr, buf, n, &gen)) {
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

/* Resolving now: the first lookup names at once, the second costs no
 * resolve; address 0 is never named. */
static void test_now(void **state)
{
	struct fake f;
	struct namecache *nc;
	char buf[NAMECACHE_NAME_MAX];
	uint32_t g0, g1, g2;

	(void)state;
	fake_init(&f);
	nc = make(&f, false, 64);
	assert_false(find(nc, 0, buf, sizeof(buf), &g0));
	assert_true(find(nc, 0x1234, buf, sizeof(buf), &g1));
	assert_string_equal(buf, "fn_1234+0x4 (f.c:0)");
	assert_int_not_equal(g0, g1);
	assert_true(find(nc, 0x1234, buf, sizeof(buf), &g2));
	assert_int_equal(g1, g2); /* nothing new */
	assert_int_equal(f.calls, 1);
	namecache_destroy(nc);
}

/* Resolving later: a miss returns at once and queues the address once,
 * however often it is asked for; the name comes with a notify and a new
 * generation; a lookup never waits for the resolver. */
static void test_later(void **state)
{
	struct fake f;
	struct namecache *nc;
	struct namecache_stats st;
	char buf[NAMECACHE_NAME_MAX];
	uint32_t g0, g1;

	(void)state;
	fake_init(&f);
	fake_hold(&f, true);
	nc = make(&f, true, 64);
	for (int i = 0; i < 100; i++)
		assert_false(find(nc, 0xabc, buf, sizeof(buf), &g0));
	/* The thread took the one miss and is held resolving it: the
	 * lookups still answer (hex for now), without waiting. */
	fake_wait_gate(&f, 1);
	assert_false(find(nc, 0xabc, buf, sizeof(buf), &g0));
	namecache_stats(nc, &st);
	assert_int_equal(st.queued, 0);
	assert_int_equal(st.resolves, 0);
	assert_int_equal(atomic_load(&f.notes), 0);
	fake_hold(&f, false);
	wait_named(nc, 0xabc, buf, sizeof(buf));
	assert_string_equal(buf, "fn_abc+0x4 (f.c:0)");
	assert_true(find(nc, 0xabc, buf, sizeof(buf), &g1));
	assert_int_not_equal(g0, g1);
	assert_int_equal(f.calls, 1); /* queued once for 101 asks */
	namecache_destroy(nc);
	assert_true(atomic_load(&f.notes) >= 1);
}

/* Misses past max_queued are not queued (a later pass asks again), and
 * none is lost: every address is named in the end. */
static void test_queue_bound(void **state)
{
	struct fake f;
	struct namecache *nc;
	struct namecache_stats st;
	char buf[NAMECACHE_NAME_MAX];
	uint32_t g;

	(void)state;
	fake_init(&f);
	fake_hold(&f, true);
	nc = make(&f, true, 64);
	assert_false(find(nc, 1, buf, sizeof(buf), &g));
	fake_wait_gate(&f, 1); /* the thread holds address 1 */
	for (uint64_t a = 2; a < 20; a++)
		assert_false(find(nc, a, buf, sizeof(buf), &g));
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
 * on names forgets them all too; clear does. */
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
		assert_true(find(nc, a, buf, sizeof(buf), &g));
	namecache_stats(nc, &st);
	assert_int_equal(st.names, 4);
	assert_true(find(nc, 5, buf, sizeof(buf), &g)); /* past the bound */
	namecache_stats(nc, &st);
	assert_int_equal(st.names, 1);
	f.gen = 7; /* libraries came or went */
	assert_true(find(nc, 6, buf, sizeof(buf), &g));
	assert_string_equal(buf, "fn_6+0x4 (f.c:7)");
	namecache_stats(nc, &st);
	assert_int_equal(st.names, 1);
	assert_true(find(nc, 5, buf, sizeof(buf), &g)); /* asked again */
	assert_string_equal(buf, "fn_5+0x4 (f.c:7)");
	assert_int_equal(f.calls, 7);
	namecache_clear(nc);
	namecache_stats(nc, &st);
	assert_int_equal(st.names, 0);
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
	uint32_t g;

	(void)state;
	fake_init(&f);
	fake_hold(&f, true);
	nc = make(&f, true, 64);
	assert_false(find(nc, 0x99, buf, sizeof(buf), &g));
	fake_wait_gate(&f, 1);
	namecache_clear(nc);
	fake_hold(&f, false);
	/* The thread takes misses in order: once 0x98, asked after the
	 * clear, is named, the resolve of 0x99 is over. */
	assert_false(find(nc, 0x98, buf, sizeof(buf), &g));
	wait_named(nc, 0x98, buf, sizeof(buf));
	namecache_stats(nc, &st);
	assert_int_equal(st.resolves, 1); /* 0x98's only */
	assert_int_equal(st.names, 1);
	assert_false(find(nc, 0x99, buf, sizeof(buf), &g)); /* asked again */
	namecache_destroy(nc);
}

/* A snapshot's names: named, known without a name (hex), unknown (hex),
 * both forms, growth past the first table, and reset. */
static void test_snapshot_names(void **state)
{
	struct snapshot s;
	char buf[64], small[4];

	(void)state;
	snapshot_init(&s);
	assert_string_equal(snapshot_where(&s, 0x7f01, true, buf, sizeof(buf)),
			    "0x7f01");
	assert_true(
		snapshot_name_put(&s, 0x7f01, "main+0x1 (m.c:3)", "main+0x1"));
	assert_true(snapshot_name_put(&s, 0x7f02, NULL, NULL));
	assert_false(snapshot_name_put(&s, 0, "zero", "zero"));
	assert_true(snapshot_name_known(&s, 0x7f01));
	assert_true(snapshot_name_known(&s, 0x7f02));
	assert_false(snapshot_name_known(&s, 0x7f03));
	assert_string_equal(snapshot_where(&s, 0x7f01, true, buf, sizeof(buf)),
			    "main+0x1 (m.c:3)");
	assert_string_equal(snapshot_where(&s, 0x7f01, false, buf, sizeof(buf)),
			    "main+0x1");
	assert_string_equal(snapshot_where(&s, 0x7f02, true, buf, sizeof(buf)),
			    "0x7f02");
	assert_string_equal(snapshot_where(&s, 0x7f01, true, small, 4), "mai");
	for (uint64_t a = 1; a <= 1000; a++) {
		char n[32];

		snprintf(n, sizeof(n), "f%llu", (unsigned long long)a);
		assert_true(snapshot_name_put(&s, a << 12, n, n));
	}
	for (uint64_t a = 1; a <= 1000; a++) {
		char n[32];

		snprintf(n, sizeof(n), "f%llu", (unsigned long long)a);
		assert_string_equal(
			snapshot_where(&s, a << 12, false, buf, sizeof(buf)),
			n);
	}
	assert_string_equal(snapshot_where(&s, 0x7f01, false, buf, sizeof(buf)),
			    "main+0x1");
	snapshot_names_reset(&s);
	assert_false(snapshot_name_known(&s, 0x7f01));
	assert_string_equal(snapshot_where(&s, 0x7f01, true, buf, sizeof(buf)),
			    "0x7f01");
	snapshot_finish(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_now),
		cmocka_unit_test(test_later),
		cmocka_unit_test(test_queue_bound),
		cmocka_unit_test(test_forget),
		cmocka_unit_test(test_clear_in_flight),
		cmocka_unit_test(test_snapshot_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
