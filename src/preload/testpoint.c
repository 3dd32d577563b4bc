/*
 * testpoint: the test build's hook (testpoint.h).  COROTOP_TEST_RAISE=P
 * makes every switch raise SIGUSR1 at point P, on the switching thread, so
 * the program's handler runs there: the interleaving a timer would find
 * one time in many, every time.  COROTOP_TEST_RAISE=P:N raises at the
 * N-th time point P is passed only (1-based, the process's count).
 *
 * A switch the handler itself makes does not raise again (the handler
 * would never end), nor does one where SIGUSR1 is blocked (it would be
 * pending there and land at the handler's end, whose switches would raise
 * it again, for ever).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "preload/testpoint.h"

static __thread int testpoint_raising;

void preload_test_point(enum preload_point point)
{
	static _Atomic long want = -1, nth, passed;
	/* relaxed: every thread computes the same values from the
	 * environment; whichever store lands is right (want is stored
	 * last and read first, but nth read early is only 0: all). */
	long w = atomic_load_explicit(&want, memory_order_relaxed);
	sigset_t now;
	long n;

	if (w < 0) {
		const char *env = secure_getenv("COROTOP_TEST_RAISE");
		char *end = NULL;

		w = env ? strtol(env, &end, 10) : 0;
		atomic_store_explicit(
			&nth,
			end && *end == ':' ? strtol(end + 1, NULL, 10) : 0,
			memory_order_relaxed);
		atomic_store_explicit(&want, w, memory_order_relaxed);
	}
	if ((long)point != w || testpoint_raising)
		return;
	/* relaxed: a count, read by nothing else. */
	n = atomic_fetch_add_explicit(&passed, 1, memory_order_relaxed) + 1;
	if (atomic_load_explicit(&nth, memory_order_relaxed) > 0 &&
	    n != atomic_load_explicit(&nth, memory_order_relaxed))
		return;
	if (pthread_sigmask(SIG_BLOCK, NULL, &now) != 0 ||
	    sigismember(&now, SIGUSR1))
		return;
	testpoint_raising = 1;
	(void)raise(SIGUSR1);
	testpoint_raising = 0;
}
