/*
 * chan: buffered values and parked receivers (see chan.h for the concept).
 *
 * The receive path is split around the park so that no wakeup is lost:
 *
 *   chan_recv (coroutine)        lock; buffer empty? unlock; park(commit)
 *   chan_commit_wait (worker)    lock; a value arrived meanwhile? take it
 *                                and make ready; else join the waiters
 *   chan_send (anyone)           lock; a waiter? hand it the value (via
 *                                coro.value) and make it ready; else buffer
 *
 * Everything under one mutex per channel; the waiter list links through
 * coro.next, which is free while a coroutine is parked here.
 */
#define _GNU_SOURCE
#include "demo/chan.h"

#include <pthread.h>
#include <stdlib.h>

#include "demo/coro.h"
#include "demo/scheduler.h"

struct chan {
	struct scheduler *sched;
	pthread_mutex_t lock;
	uint64_t *buf; /* ring of cap values */
	size_t cap;
	size_t head;
	size_t len;
	struct coro *wait_head; /* parked receivers, oldest first */
	struct coro *wait_tail;
};

struct chan *chan_create(struct scheduler *s, size_t cap)
{
	struct chan *ch;

	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return NULL;
	ch->cap = cap ? cap : 1;
	ch->buf = calloc(ch->cap, sizeof(*ch->buf));
	if (!ch->buf) {
		free(ch);
		return NULL;
	}
	ch->sched = s;
	pthread_mutex_init(&ch->lock, NULL);
	return ch;
}

void chan_destroy(struct chan *ch)
{
	if (!ch)
		return;
	pthread_mutex_destroy(&ch->lock);
	free(ch->buf);
	free(ch);
}

/* Caller holds ch->lock and checked len > 0. */
static uint64_t chan_take_locked(struct chan *ch)
{
	uint64_t v = ch->buf[ch->head];

	ch->head = (ch->head + 1) % ch->cap;
	ch->len--;
	return v;
}

bool chan_send(struct chan *ch, uint64_t v)
{
	struct coro *waiter;

	pthread_mutex_lock(&ch->lock);
	waiter = ch->wait_head;
	if (waiter) {
		ch->wait_head = waiter->next;
		if (!ch->wait_head)
			ch->wait_tail = NULL;
		waiter->next = NULL;
		waiter->value = v;
		pthread_mutex_unlock(&ch->lock);
		scheduler_ready(ch->sched, waiter);
		return true;
	}
	if (ch->len == ch->cap) {
		pthread_mutex_unlock(&ch->lock);
		return false;
	}
	ch->buf[(ch->head + ch->len) % ch->cap] = v;
	ch->len++;
	pthread_mutex_unlock(&ch->lock);
	return true;
}

/* Worker side of chan_recv: the coroutine has switched out. */
static void chan_commit_wait(struct coro *co, void *arg)
{
	struct chan *ch = arg;

	pthread_mutex_lock(&ch->lock);
	if (ch->len) {
		/* A send slipped in between the check and the park. */
		co->value = chan_take_locked(ch);
		pthread_mutex_unlock(&ch->lock);
		scheduler_ready(ch->sched, co);
		return;
	}
	co->next = NULL;
	if (ch->wait_tail)
		ch->wait_tail->next = co;
	else
		ch->wait_head = co;
	ch->wait_tail = co;
	pthread_mutex_unlock(&ch->lock);
}

DEMO_NOINLINE uint64_t chan_recv(struct chan *ch)
{
	struct coro *self = scheduler_self();
	uint64_t v;

	pthread_mutex_lock(&ch->lock);
	if (ch->len) {
		v = chan_take_locked(ch);
		pthread_mutex_unlock(&ch->lock);
		return v;
	}
	pthread_mutex_unlock(&ch->lock);
	scheduler_park(chan_commit_wait, ch, DEMO_CALLER_ADDR());
	/* self is a local: valid on whichever thread woke us. */
	return self->value;
}
