/*
 * test-tscclock: the probe's timestamp (src/probe/tscclock.h).
 *
 * - the decision: the kernel's clocksource, and COROTOP_PROBE_CLOCK over
 *   it;
 * - forced on (COROTOP_PROBE_CLOCK=tsc, as this suite's machines may run
 *   another clocksource): it calibrates, and every read falls within
 *   1 us of a clock_gettime bracket around it;
 * - a forced re-anchor step (the hook moves the line 50 us ahead, as a
 *   drifted line would be): the next re-anchor lands below, and the
 *   thread's time holds still instead of going back;
 * - a thread moved between CPUs: the same bound, never backwards;
 * - off (the hook, and the "gettime" setting): plain clock_gettime;
 * - a stress: readers on two threads while a third withdraws the line
 *   over and over, so every read races a writer: a torn read (one line's
 *   base with another's count) would land microseconds away.
 * Waits have deadlines; no assertion depends on timing but the error
 * bound, which a sample's own bracket bounds (tscclock.c).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "probe/tscclock.h"

#define BOUND_NS 1000u

static uint64_t gettime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* How far t falls outside [c1, c2]. */
static uint64_t outside(uint64_t c1, uint64_t t, uint64_t c2)
{
	return t < c1 ? c1 - t : t > c2 ? t - c2 : 0;
}

/* Reads for up to 5 s until the line is on; false if it never is. */
static bool wait_on(void)
{
	struct tscclock_stats st;
	uint64_t end = gettime_ns() + 5000000000ull;

	do {
		(void)tscclock_now();
		tscclock_stats(&st);
		if (st.on)
			return true;
	} while (gettime_ns() < end);
	return false;
}

static void force(const char *mode)
{
	if (mode)
		setenv("COROTOP_PROBE_CLOCK", mode, 1);
	else
		unsetenv("COROTOP_PROBE_CLOCK");
	tscclock_init();
}

/* The TSC forced on, and calibrated (skipped where there is no TSC). */
static void force_on(void)
{
#if !defined(__x86_64__)
	skip();
#endif
	force("tsc");
	assert_true(wait_on());
}

/* n reads bracketed: the largest error; fails on one that went back. */
static uint64_t bracketed(int n)
{
	uint64_t worst = 0, last = 0;

	for (int i = 0; i < n; i++) {
		uint64_t c1 = gettime_ns();
		uint64_t t = tscclock_now();
		uint64_t c2 = gettime_ns();
		uint64_t e = outside(c1, t, c2);

		assert_true(t >= last);
		last = t;
		if (e > worst)
			worst = e;
	}
	return worst;
}

static void test_decide(void **state)
{
	(void)state;
	assert_true(tscclock_decide("tsc\n", NULL));
	assert_true(tscclock_decide("tsc", NULL));
	assert_false(tscclock_decide("kvm-clock\n", NULL));
	assert_false(tscclock_decide("hpet\n", NULL));
	assert_false(tscclock_decide("tscx\n", NULL));
	assert_false(tscclock_decide("", NULL));
	assert_false(tscclock_decide(NULL, NULL));
	/* The setting over the kernel's verdict, both ways. */
	assert_false(tscclock_decide("tsc\n", "gettime"));
	assert_false(tscclock_decide("tsc\n", ""));
	assert_false(tscclock_decide("tsc\n", "TSC"));
	assert_true(tscclock_decide("hpet\n", "tsc"));
	assert_true(tscclock_decide(NULL, "tsc"));
}

static void test_on(void **state)
{
	struct tscclock_stats st;

	(void)state;
	force_on();
	tscclock_stats(&st);
	assert_true(st.anchors >= 1);
	/* A slope between 0.1 and 10 GHz. */
	assert_true(st.mult > (1ull << 32) / 10 && st.mult < (10ull << 32));
	assert_true(bracketed(200000) <= BOUND_NS);
	/* Past the first span: re-anchored, still within the bound. */
	{
		uint64_t end = gettime_ns() + 250000000ull;
		uint64_t before = st.anchors;

		while (gettime_ns() < end)
			assert_true(bracketed(1000) <= BOUND_NS);
		tscclock_stats(&st);
		assert_true(st.anchors > before);
		assert_true(st.on);
	}
}

static void test_step(void **state)
{
	struct tscclock_stats st;
	uint64_t t1, t2, t3, c1, c2, before;

	(void)state;
	force_on();
	/* On the shifted line: 5 ms ahead.  Unless the line ran out of
	 * span between the shift and the read (a thread preempted there on
	 * a busy machine) and the read re-anchored it: shift again, for up
	 * to 5 s. */
	for (uint64_t end = gettime_ns() + 5000000000ull;;) {
		(void)tscclock_now();
		tscclock_test_shift(5000000);
		c1 = gettime_ns();
		t1 = tscclock_now();
		if (t1 >= c1 + 4000000 || gettime_ns() > end)
			break;
	}
	assert_true(t1 >= c1 + 4000000);
	tscclock_stats(&st);
	before = st.anchors;
	tscclock_test_reanchor();
	/* New lines, at the clock, land below t1: held there, not back.
	 * (A sample refused as too wide answers with the clock: held the
	 * same.)  Until one is published, or 5 s. */
	for (uint64_t end = gettime_ns() + 5000000000ull;;) {
		c1 = gettime_ns();
		t2 = tscclock_now();
		c2 = gettime_ns();
		assert_true(t2 >= t1);
		if (c2 + BOUND_NS < t1)
			assert_int_equal(t2, t1);
		tscclock_stats(&st);
		if (st.anchors > before || c2 > end)
			break;
	}
	assert_true(st.anchors > before);
	/* Once the clock passes t1, time moves on, at the clock again. */
	while (gettime_ns() < t1 + 1000)
		;
	c1 = gettime_ns();
	t3 = tscclock_now();
	c2 = gettime_ns();
	assert_true(t3 > t1);
	assert_true(outside(c1, t3, c2) <= BOUND_NS);
}

static void test_migrate(void **state)
{
	cpu_set_t was, one;
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t worst = 0;

	(void)state;
	if (ncpu < 2)
		skip();
	force_on();
	assert_int_equal(sched_getaffinity(0, sizeof(was), &was), 0);
	for (int round = 0; round < 40; round++) {
		uint64_t e;

		CPU_ZERO(&one);
		CPU_SET(round % 2, &one);
		if (sched_setaffinity(0, sizeof(one), &one) != 0)
			continue; /* that CPU not ours to use */
		assert_int_equal(sched_getcpu(), round % 2);
		e = bracketed(5000);
		if (e > worst)
			worst = e;
	}
	assert_int_equal(sched_setaffinity(0, sizeof(was), &was), 0);
	assert_true(worst <= BOUND_NS);
}

static void test_off(void **state)
{
	struct tscclock_stats st;

	(void)state;
	force("tsc");
	(void)wait_on();
	tscclock_test_off();
	tscclock_stats(&st);
	assert_false(st.on);
	assert_int_equal(bracketed(10000), 0);
	force("gettime");
	tscclock_stats(&st);
	assert_false(st.on);
	assert_int_equal(bracketed(10000), 0);
	/* The kernel's verdict alone: on only where it is tsc. */
	force(NULL);
	(void)tscclock_now();
	assert_int_equal(bracketed(10000) <= BOUND_NS, 1);
}

struct racer {
	_Atomic bool *stop;
	uint64_t reads, worst;
	bool back;
};

static void *reader(void *arg)
{
	struct racer *r = arg;
	uint64_t last = 0;

	/* relaxed: a flag that orders nothing else. */
	while (!atomic_load_explicit(r->stop, memory_order_relaxed)) {
		uint64_t c1 = gettime_ns();
		uint64_t t = tscclock_now();
		uint64_t c2 = gettime_ns();
		uint64_t e = outside(c1, t, c2);

		r->back |= t < last;
		last = t;
		if (e > r->worst)
			r->worst = e;
		r->reads++;
	}
	return NULL;
}

static void test_stress(void **state)
{
	_Atomic bool stop = false;
	struct racer r[2] = {{&stop, 0, 0, false}, {&stop, 0, 0, false}};
	pthread_t th[2];
	struct tscclock_stats st;
	uint64_t before, end;
	long withdrawn = 0;

	(void)state;
	force_on();
	tscclock_stats(&st);
	before = st.anchors;
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, reader, &r[i]),
				 0);
	end = gettime_ns() + 300000000ull;
	while (gettime_ns() < end) {
		tscclock_test_reanchor();
		withdrawn++;
	}
	/* relaxed: the joins order the readers' results. */
	atomic_store_explicit(&stop, true, memory_order_relaxed);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_false(r[i].back);
		assert_true(r[i].reads > 0);
		assert_true(r[i].worst <= BOUND_NS);
	}
	tscclock_stats(&st);
	assert_true(withdrawn > 0);
	/* The readers re-anchored after the withdrawals (each re-anchor
	 * publishes a line). */
	assert_true(st.anchors > before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide), cmocka_unit_test(test_on),
		cmocka_unit_test(test_step),   cmocka_unit_test(test_migrate),
		cmocka_unit_test(test_off),    cmocka_unit_test(test_stress),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
