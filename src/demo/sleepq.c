/*
 * sleepq: min-heap of sleeping coroutines and the timer thread that wakes
 * them (see sleepq.h for the concept).
 *
 * The heap and the stop flag live under one mutex.  The timer thread waits
 * on a CLOCK_MONOTONIC condition variable until the earliest deadline (or
 * forever when the heap is empty); sleepq_add signals it only when the new
 * coroutine became the earliest.  Due coroutines are popped as one batch and
 * fired with the lock dropped, so the scheduler's locks never nest inside
 * ours.
 */
#define _GNU_SOURCE
#include "demo/sleepq.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "demo/coro.h"

struct sleepq {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	struct coro **heap;  /* min-heap on wake_ns */
	size_t len;
	size_t cap;
	bool stopping;
	bool running;
	pthread_t thread;
	sleepq_fire_fn *fire;
	void *ctx;
};

static bool sleepq_before(const struct coro *a, const struct coro *b)
{
	return a->wake_ns < b->wake_ns;
}

static void sleepq_sift_up(struct sleepq *q, size_t i)
{
	struct coro *co = q->heap[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!sleepq_before(co, q->heap[parent]))
			break;
		q->heap[i] = q->heap[parent];
		i = parent;
	}
	q->heap[i] = co;
}

static void sleepq_sift_down(struct sleepq *q, size_t i)
{
	struct coro *co = q->heap[i];

	for (;;) {
		size_t child = 2 * i + 1;

		if (child >= q->len)
			break;
		if (child + 1 < q->len &&
		    sleepq_before(q->heap[child + 1], q->heap[child]))
			child++;
		if (!sleepq_before(q->heap[child], co))
			break;
		q->heap[i] = q->heap[child];
		i = child;
	}
	q->heap[i] = co;
}

static struct coro *sleepq_pop(struct sleepq *q)
{
	struct coro *top = q->heap[0];

	q->len--;
	if (q->len) {
		q->heap[0] = q->heap[q->len];
		sleepq_sift_down(q, 0);
	}
	return top;
}

static bool sleepq_grow(struct sleepq *q)
{
	size_t cap = q->cap ? q->cap * 2 : 1024;
	struct coro **heap;

	heap = realloc(q->heap, cap * sizeof(*heap));
	if (!heap)
		return false;
	q->heap = heap;
	q->cap = cap;
	return true;
}

static struct timespec sleepq_timespec(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000u),
		.tv_nsec = (long)(ns % 1000000000u),
	};

	return ts;
}

static void *sleepq_thread(void *arg)
{
	struct sleepq *q = arg;

	pthread_mutex_lock(&q->lock);
	while (!q->stopping) {
		struct coro *batch = NULL;
		uint64_t now;

		if (!q->len) {
			pthread_cond_wait(&q->cond, &q->lock);
			continue;
		}
		now = sleepq_now_ns();
		if (q->heap[0]->wake_ns > now) {
			struct timespec until =
				sleepq_timespec(q->heap[0]->wake_ns);

			pthread_cond_timedwait(&q->cond, &q->lock, &until);
			continue;
		}
		while (q->len && q->heap[0]->wake_ns <= now) {
			struct coro *co = sleepq_pop(q);

			co->next = batch;
			batch = co;
		}
		pthread_mutex_unlock(&q->lock);
		while (batch) {
			struct coro *co = batch;

			/* Read the link first: once fired, co belongs to the
			 * scheduler and may run (and re-link) at once. */
			batch = co->next;
			co->next = NULL;
			q->fire(q->ctx, co);
		}
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

struct sleepq *sleepq_create(sleepq_fire_fn *fire, void *ctx)
{
	pthread_condattr_t attr;
	struct sleepq *q;
	int err;

	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->fire = fire;
	q->ctx = ctx;
	err = pthread_condattr_init(&attr);
	if (!err) {
		err = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		if (!err)
			err = pthread_cond_init(&q->cond, &attr);
		pthread_condattr_destroy(&attr);
	}
	if (err) {
		free(q);
		errno = err;
		return NULL;
	}
	pthread_mutex_init(&q->lock, NULL);
	return q;
}

int sleepq_start(struct sleepq *q)
{
	int err;

	err = pthread_create(&q->thread, NULL, sleepq_thread, q);
	if (err)
		return -err;
	q->running = true;
	return 0;
}

void sleepq_stop(struct sleepq *q)
{
	if (!q->running)
		return;
	pthread_mutex_lock(&q->lock);
	q->stopping = true;
	pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->thread, NULL);
	q->running = false;
}

void sleepq_destroy(struct sleepq *q)
{
	if (!q)
		return;
	sleepq_stop(q);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
	free(q->heap);
	free(q);
}

void sleepq_add(struct sleepq *q, struct coro *co)
{
	bool earliest;

	pthread_mutex_lock(&q->lock);
	if (q->len == q->cap && !sleepq_grow(q)) {
		pthread_mutex_unlock(&q->lock);
		/* Out of memory: wake it early rather than lose it. */
		q->fire(q->ctx, co);
		return;
	}
	q->heap[q->len] = co;
	sleepq_sift_up(q, q->len++);
	earliest = q->heap[0] == co;
	/* Only a new earliest deadline shortens the thread's wait. */
	if (earliest)
		pthread_cond_signal(&q->cond);
	pthread_mutex_unlock(&q->lock);
}
