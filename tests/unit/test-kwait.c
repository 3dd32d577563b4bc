/*
 * test-kwait: a thread waiting in the kernel, from procfs
 * (src/engine/target/kwait.c).
 *
 *   parse   stat's state after the last ')' (a comm may hold blanks and
 *           parentheses); syscall's first field, or -1 for "running",
 *           "-1 ..." and garbage;
 *   names   the blocking calls by this architecture's numbers;
 *   live    a thread of ours blocked in read() on a pipe reads as waiting
 *           (S) in read, within a deadline; this thread, running, as R.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/target/kwait.h"

static void test_parse(void **state)
{
	(void)state;
	assert_int_equal(kwait_parse_state("1234 (sh) S 1 2 3"), 'S');
	assert_int_equal(kwait_parse_state("7 (a) b (c)) D 0"), 'D');
	assert_int_equal(kwait_parse_state("7 (x) R"), 'R');
	assert_int_equal(kwait_parse_state("no paren S"), 0);
	assert_int_equal(kwait_parse_state("7 (x)"), 0);
	assert_int_equal(kwait_parse_state("7 (x)  S"), 0);
	assert_int_equal(kwait_parse_syscall("232 0x3 0x7ffc 0x80 0 0 0 "
					     "0x7ffc 0x7f12\n"),
			 232);
	assert_int_equal(kwait_parse_syscall("running\n"), -1);
	assert_int_equal(kwait_parse_syscall("-1 0x7ffc 0x7f12\n"), -1);
	assert_int_equal(kwait_parse_syscall("12x 0x1"), -1);
	assert_int_equal(kwait_parse_syscall("99999 0x1"), -1);
	assert_int_equal(kwait_parse_syscall(""), -1);
}

static void test_names(void **state)
{
	(void)state;
#ifdef SYS_epoll_wait
	assert_string_equal(kwait_syscall_name(SYS_epoll_wait), "epoll_wait");
#endif
	assert_string_equal(kwait_syscall_name(SYS_epoll_pwait), "epoll_pwait");
	assert_string_equal(kwait_syscall_name(SYS_futex), "futex");
	assert_string_equal(kwait_syscall_name(SYS_read), "read");
	assert_null(kwait_syscall_name(SYS_getpid));
	assert_null(kwait_syscall_name(-1));
}

static int pipefd[2];
/* The blocker's tid: stored by it (release), loaded by the test's wait
 * loop (acquire). */
static _Atomic int blocked_tid;

static void *blocker(void *arg)
{
	char c;

	(void)arg;
	atomic_store_explicit(&blocked_tid, (int)syscall(SYS_gettid),
			      memory_order_release);
	(void)!read(pipefd[0], &c, 1);
	return NULL;
}

static void test_live(void **state)
{
	struct timespec ms = {0, 1000000};
	struct kwait w = {0};
	pthread_t t;
	int i;

	(void)state;
	assert_int_equal(pipe(pipefd), 0);
	assert_int_equal(pthread_create(&t, NULL, blocker, NULL), 0);
	/* Until it sleeps in read (60 s at most: a busy machine may take a
	 * while to run it that far). */
	for (i = 0; i < 60000; i++) {
		int tid = atomic_load_explicit(&blocked_tid,
					       memory_order_acquire);

		if (tid && kwait_read(getpid(), (uint64_t)tid, &w) &&
		    kwait_waiting(&w) && w.nr == SYS_read)
			break;
		nanosleep(&ms, NULL);
	}
	assert_true(kwait_waiting(&w));
	assert_int_equal(w.state, 'S');
	assert_int_equal(w.nr, SYS_read);
	/* This thread runs while it reads its own stat. */
	assert_true(kwait_read(getpid(), (uint64_t)syscall(SYS_gettid), &w));
	assert_int_equal(w.state, 'R');
	assert_false(kwait_waiting(&w));
	assert_int_equal(w.nr, -1);
	/* Gone or never there. */
	assert_false(kwait_read(getpid(), 0, &w));
	assert_false(kwait_read(0, 1, &w));
	assert_int_equal(write(pipefd[1], "x", 1), 1);
	pthread_join(t, NULL);
	close(pipefd[0]);
	close(pipefd[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
