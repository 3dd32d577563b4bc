/*
 * test-threadcpu: each thread's CPU share from procfs (threadcpu.c).
 *
 * The stat parser on texts the kernel writes, a comm with blanks and
 * parentheses among them, and texts that lie; then this process sampled
 * twice with one thread spinning and one asleep: the spinning one's share
 * is above 0 (it spins until its own CPU clock says it used 60 ms, so the
 * kernel has counted ticks), the sleeping one's is 0, a thread first seen
 * has none (-1), and the list is in tid order.  No assertion depends on
 * how fast the machine is.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine/target/threadcpu.h"

static void test_parse(void **state)
{
	char comm[16];
	uint64_t ticks = 0;

	(void)state;
	assert_true(threadcpu_parse_stat(
		"1234 (worker) S 1 1234 1234 0 -1 4194560 100 0 0 0 "
		"250 31 0 0 20 0 3 0 100 1000 10\n",
		comm, &ticks));
	assert_string_equal(comm, "worker");
	assert_int_equal(ticks, 281);
	/* A comm may hold blanks and ')': the last ')' ends it. */
	assert_true(threadcpu_parse_stat(
		"7 (a) b (c) R 1 7 7 0 -1 0 0 0 0 0 5 6 0 0\n", comm, &ticks));
	assert_string_equal(comm, "a) b (c");
	assert_int_equal(ticks, 11);
	/* Cut to 15 characters. */
	assert_true(threadcpu_parse_stat(
		"7 (0123456789abcdefXYZ) R 1 7 7 0 -1 0 0 0 0 0 1 1 0 0\n",
		comm, &ticks));
	assert_string_equal(comm, "0123456789abcde");
	/* Lies: no parentheses, fields missing, numbers that are not. */
	assert_false(threadcpu_parse_stat("1234 worker S 1 2 3", comm, &ticks));
	assert_false(threadcpu_parse_stat("1234 (w) S 1 2 3\n", comm, &ticks));
	assert_false(threadcpu_parse_stat(
		"1 (w) S 1 1 1 0 -1 0 0 0 0 0 x y 0 0\n", comm, &ticks));
	assert_false(threadcpu_parse_stat(") 1 (w", comm, &ticks));
}

static atomic_uint_fast64_t spin_tid, idle_tid;
static atomic_bool spin_stop;
static sem_t idle_go;

static void *spinner(void *p)
{
	(void)p;
	atomic_store_explicit(&spin_tid, (uint64_t)syscall(SYS_gettid),
			      memory_order_release); /* pairs: acquire load */
	while (!atomic_load_explicit(&spin_stop, memory_order_acquire))
		; /* pairs: the release store that ends it */
	return NULL;
}

static void *sleeper(void *p)
{
	(void)p;
	atomic_store_explicit(&idle_tid, (uint64_t)syscall(SYS_gettid),
			      memory_order_release); /* pairs: acquire load */
	while (sem_wait(&idle_go))
		;
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Thread tid's stat text in buf; its state letter, or 0. */
static char task_stat(uint64_t tid, char *buf, size_t n)
{
	char path[64];
	const char *close;
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%llu/stat",
		 (unsigned long long)tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	len = fread(buf, 1, n - 1, f);
	fclose(f);
	buf[len] = '\0';
	close = strrchr(buf, ')');
	return close && close[1] == ' ' ? close[2] : 0;
}

static const struct threadcpu_thread *find(const struct threadcpu_thread *t,
					   size_t n, uint64_t tid)
{
	for (size_t k = 0; k < n; k++)
		if (t[k].tid == tid)
			return &t[k];
	return NULL;
}

static void test_sample(void **state)
{
	struct threadcpu_thread th[THREADCPU_MAX];
	const struct threadcpu_thread *s, *i;
	struct threadcpu *tc;
	pthread_t a, b;
	uint64_t spin, idle, until;
	size_t n;

	(void)state;
	sem_init(&idle_go, 0, 0);
	assert_int_equal(pthread_create(&b, NULL, sleeper, NULL), 0);
	assert_int_equal(pthread_create(&a, NULL, spinner, NULL), 0);
	until = now_ns() + 30000000000ull;
	while ((!atomic_load_explicit(&spin_tid, memory_order_acquire) ||
		!atomic_load_explicit(&idle_tid, memory_order_acquire)) &&
	       now_ns() < until)
		usleep(1000);
	spin = atomic_load_explicit(&spin_tid, memory_order_acquire);
	idle = atomic_load_explicit(&idle_tid, memory_order_acquire);
	assert_true(spin && idle);
	/* The sleeper blocked in sem_wait before the first sample (not on
	 * its way there, charging CPU time between the two samples). */
	{
		char buf[1024];

		while (task_stat(idle, buf, sizeof(buf)) != 'S' &&
		       now_ns() < until)
			usleep(1000);
		assert_int_equal(task_stat(idle, buf, sizeof(buf)), 'S');
	}

	tc = threadcpu_create(getpid());
	assert_non_null(tc);
	n = threadcpu_sample(tc, now_ns(), th, THREADCPU_MAX);
	assert_true(n >= 3);
	s = find(th, n, spin);
	assert_non_null(s);
	assert_true(s->pct < 0); /* first sight: no share yet */
	for (size_t k = 1; k < n; k++)
		assert_true(th[k - 1].tid < th[k].tid);
	assert_non_null(find(th, n, (uint64_t)getpid()));

	/* The spinner's ticks: wait until its stat says it used 60 ms more
	 * (the kernel counts at 100 or more per second) -- a deadline, not a
	 * sleep.  Read directly, so tc's baseline stays. */
	{
		uint64_t first = 0;

		until = now_ns() + 60000000000ull;
		for (;;) {
			char buf[1024], comm[16];
			uint64_t ticks = 0;

			assert_true(task_stat(spin, buf, sizeof(buf)) != 0);
			assert_true(threadcpu_parse_stat(buf, comm, &ticks));
			if (!first)
				first = ticks + 1;
			if (ticks >= first + 6 || now_ns() > until)
				break;
			usleep(10000);
		}
	}
	n = threadcpu_sample(tc, now_ns(), th, THREADCPU_MAX);
	s = find(th, n, spin);
	i = find(th, n, idle);
	assert_non_null(s);
	assert_non_null(i);
	assert_true(s->pct > 0);
	assert_true(i->pct == 0);
	/* max bounds what is given. */
	assert_int_equal(threadcpu_sample(tc, now_ns(), th, 1), 1);

	atomic_store_explicit(&spin_stop, true, memory_order_release);
	sem_post(&idle_go);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	threadcpu_destroy(tc);
	/* Not ours, or gone: no sampler. */
	assert_null(threadcpu_create(0));
	assert_null(threadcpu_create(-5));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_sample),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
