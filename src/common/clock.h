/*
 * clock: a clock read as one number of nanoseconds, the unit every time
 * in corotop is kept in (timestamps, deadlines, rates, the record's
 * ticks).  Mostly CLOCK_MONOTONIC; CLOCK_REALTIME for a snapshot's wall
 * time, a thread's CPU clock for the benchmarks.  A clock that can not be
 * read (an id that names no clock) reads 0.
 *
 * The probe keeps its own copy (probe_now, probe/probe_internal.h): it is
 * loaded into the traced program and may include only src/wire.
 */
#ifndef COROTOP_CLOCK_H
#define COROTOP_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_now_ns(clockid_t clk)
{
	struct timespec ts;

	if (clock_gettime(clk, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
