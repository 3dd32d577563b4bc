/*
 * testpoint: places inside the preload's own switch where a test forces a
 * signal to land (a forced interleaving instead of a lucky timer).  Only
 * the test build of the library (libcorotop-preload-hooked, never
 * installed) has them; in the real one they are nothing.
 *
 *   PRELOAD_POINT_RECORDED  the switch is in the probe, but this thread's
 *                           current context is not updated yet;
 *   PRELOAD_POINT_SWITCH    all recorded, the real switch not made yet.
 */
#ifndef COROTOP_PRELOAD_TESTPOINT_H
#define COROTOP_PRELOAD_TESTPOINT_H

enum preload_point {
	PRELOAD_POINT_RECORDED = 1,
	PRELOAD_POINT_SWITCH = 2,
};

#ifdef PRELOAD_TEST_HOOKS
/* Raises SIGUSR1 at `point` when COROTOP_TEST_RAISE names it (not from a
 * handler that one raised). */
void preload_test_point(enum preload_point point);
#define PRELOAD_TEST_POINT(p) preload_test_point(p)
#else
#define PRELOAD_TEST_POINT(p) ((void)0)
#endif

#endif
