/*
 * sleepq: the demo's sleep queue, where coroutines wait for a deadline.
 *
 * A min-heap of parked coroutines ordered by coro.wake_ns, served by one
 * dedicated timer thread.  When a deadline passes, the thread hands the
 * coroutine to the fire callback (the scheduler's "make runnable").  This is
 * the demo's stand-in for I/O readiness: to the observer a coroutine asleep
 * here looks exactly like one waiting for a socket.
 */
#ifndef COROTOP_DEMO_SLEEPQ_H
#define COROTOP_DEMO_SLEEPQ_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

struct coro;
struct sleepq;

typedef void sleepq_fire_fn(void *ctx, struct coro *co);

/* CLOCK_MONOTONIC in nanoseconds, the clock of coro.wake_ns. */
static inline uint64_t sleepq_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* NULL with errno on failure.  The thread starts with sleepq_start(). */
struct sleepq *sleepq_create(sleepq_fire_fn *fire, void *ctx);
/* Stops the thread if running.  Coroutines still queued are not touched. */
void sleepq_destroy(struct sleepq *q);
/* 0 or negative errno. */
int sleepq_start(struct sleepq *q);
/* Stop and join the timer thread; idempotent. */
void sleepq_stop(struct sleepq *q);
/* Queue co until co->wake_ns.  Never fails: without memory it fires now. */
void sleepq_add(struct sleepq *q, struct coro *co);

#endif
