/*
 * scheduler: workers, run queues and the park protocol of the demo's M:N
 * scheduler (see scheduler.h for the concept and the probe contract).
 *
 * Ownership of a coroutine moves strictly hand to hand:
 *
 *   run queue --pop--> worker --switch_in--> coroutine runs
 *   coroutine --scheduler_park(commit)--> switch_out --> worker again
 *   worker --commit--> run queue | sleep queue | channel waiter list
 *   sleep queue / channel --scheduler_ready--> run queue
 *
 * Every hand-off goes through a mutex (run queue, sleep queue or channel),
 * which orders all accesses to the coroutine and to its probe state; the only
 * atomics here are statistics and the stop flag.  Finished coroutines are
 * reaped by the worker that saw them finish.  A registry of all live
 * coroutines lets scheduler_destroy free the ones left parked at shutdown.
 */
#define _GNU_SOURCE
#include "demo/scheduler.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "demo/sleepq.h"

/* How long an idle worker sleeps before it looks for work to steal. */
#define SCHEDULER_IDLE_NS (10u * 1000u * 1000u)

struct worker {
	struct scheduler *sched;
	pthread_t thread;
	bool started;
	struct coro_host host;
	pthread_mutex_t lock; /* guards the run queue below */
	pthread_cond_t cond;  /* CLOCK_MONOTONIC; signalled on push */
	struct coro *head;
	struct coro *tail;
	/* Written by this worker only; relaxed, read by scheduler_stats. */
	_Atomic uint64_t switches;
	_Atomic uint64_t finished;
};

struct scheduler {
	struct worker *workers;
	unsigned nworkers;
	size_t stack_size;
	struct sleepq *sleepq;
	/* relaxed everywhere: a hint; workers re-read it under their queue
	 * lock, which scheduler_stop takes before it broadcasts. */
	atomic_bool stopping;
	/* relaxed: only spreads new work over the workers. */
	_Atomic unsigned rr;
	/* relaxed: a statistic. */
	_Atomic uint64_t spawned;
	pthread_mutex_t all_lock; /* guards the registry */
	struct coro *all_head;
	uint64_t alive;
};

/* The coroutine the calling worker is running; NULL outside of one.  Read
 * only before a switch: a coroutine may wake up on another thread. */
static __thread struct coro *scheduler_current;

static void runq_push(struct worker *w, struct coro *co)
{
	co->next = NULL;
	pthread_mutex_lock(&w->lock);
	if (w->tail)
		w->tail->next = co;
	else
		w->head = co;
	w->tail = co;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Caller holds w->lock. */
static struct coro *runq_pop_locked(struct worker *w)
{
	struct coro *co = w->head;

	if (co) {
		w->head = co->next;
		if (!w->head)
			w->tail = NULL;
		co->next = NULL;
	}
	return co;
}

static struct coro *runq_pop(struct worker *w)
{
	struct coro *co;

	pthread_mutex_lock(&w->lock);
	co = runq_pop_locked(w);
	pthread_mutex_unlock(&w->lock);
	return co;
}

static void registry_add(struct scheduler *s, struct coro *co)
{
	pthread_mutex_lock(&s->all_lock);
	co->all_prev = NULL;
	co->all_next = s->all_head;
	if (s->all_head)
		s->all_head->all_prev = co;
	s->all_head = co;
	s->alive++;
	pthread_mutex_unlock(&s->all_lock);
}

static void registry_remove(struct scheduler *s, struct coro *co)
{
	pthread_mutex_lock(&s->all_lock);
	if (co->all_prev)
		co->all_prev->all_next = co->all_next;
	else
		s->all_head = co->all_next;
	if (co->all_next)
		co->all_next->all_prev = co->all_prev;
	s->alive--;
	pthread_mutex_unlock(&s->all_lock);
}

static struct timespec scheduler_deadline(uint64_t from_now_ns)
{
	uint64_t ns = sleepq_now_ns() + from_now_ns;
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000u),
		.tv_nsec = (long)(ns % 1000000000u),
	};

	return ts;
}

/* Own queue, then steal, then sleep a little.  NULL: look again. */
static struct coro *worker_next(struct worker *w)
{
	struct scheduler *s = w->sched;
	struct timespec until;
	struct coro *co;
	unsigned i;

	co = runq_pop(w);
	if (co)
		return co;
	for (i = 1; i < s->nworkers; i++) {
		struct worker *victim =
			&s->workers[(w - s->workers + i) % s->nworkers];

		co = runq_pop(victim);
		if (co)
			return co;
	}
	until = scheduler_deadline(SCHEDULER_IDLE_NS);
	pthread_mutex_lock(&w->lock);
	/* relaxed: see struct scheduler; this read is under w->lock. */
	if (!w->head &&
	    !atomic_load_explicit(&s->stopping, memory_order_relaxed))
		pthread_cond_timedwait(&w->cond, &w->lock, &until);
	co = runq_pop_locked(w);
	pthread_mutex_unlock(&w->lock);
	return co;
}

static void worker_reap(struct worker *w, struct coro *co)
{
	corotop_coro_close(&co->probe);
	registry_remove(w->sched, co);
	coro_destroy(co);
	/* relaxed: a statistic, single writer. */
	atomic_fetch_add_explicit(&w->finished, 1, memory_order_relaxed);
}

static void worker_run(struct worker *w, struct coro *co)
{
	co->worker = w;
	scheduler_current = co;
	corotop_coro_resume(&co->probe, co->resume_addr);
	coro_switch_in(co, &w->host);
	scheduler_current = NULL;
	/* A park recorded its suspend on the coroutine's stack
	 * (scheduler_park); a finished coroutine's is recorded here. */
	if (co->finished)
		corotop_coro_suspend_pc(&co->probe,
					(uint64_t)(uintptr_t)co->fn);
	/* relaxed: a statistic, single writer. */
	atomic_fetch_add_explicit(&w->switches, 1, memory_order_relaxed);
	if (co->finished) {
		worker_reap(w, co);
		return;
	}
	/* The commit hands co over: do not touch it afterwards. */
	co->commit(co, co->commit_arg);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct scheduler *s = w->sched;

	coro_host_init(&w->host);
	/* relaxed: see struct scheduler. */
	while (!atomic_load_explicit(&s->stopping, memory_order_relaxed)) {
		struct coro *co = worker_next(w);

		if (co)
			worker_run(w, co);
	}
	return NULL;
}

static void scheduler_fire(void *ctx, struct coro *co)
{
	scheduler_ready(ctx, co);
}

struct scheduler *scheduler_create(unsigned threads, size_t stack_size)
{
	pthread_condattr_t attr;
	struct scheduler *s;
	unsigned i;
	int err;

	if (!threads) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->workers = calloc(threads, sizeof(*s->workers));
	if (!s->workers) {
		free(s);
		return NULL;
	}
	s->sleepq = sleepq_create(scheduler_fire, s);
	if (!s->sleepq) {
		err = errno;
		free(s->workers);
		free(s);
		errno = err;
		return NULL;
	}
	s->nworkers = threads;
	s->stack_size = stack_size ? stack_size : CORO_STACK_SIZE;
	atomic_init(&s->stopping, false);
	atomic_init(&s->rr, 0);
	atomic_init(&s->spawned, 0);
	pthread_mutex_init(&s->all_lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	for (i = 0; i < threads; i++) {
		struct worker *w = &s->workers[i];

		w->sched = s;
		pthread_mutex_init(&w->lock, NULL);
		pthread_cond_init(&w->cond, &attr);
		atomic_init(&w->switches, 0);
		atomic_init(&w->finished, 0);
	}
	pthread_condattr_destroy(&attr);
	return s;
}

int scheduler_start(struct scheduler *s)
{
	unsigned i;
	int err;

	err = sleepq_start(s->sleepq);
	if (err)
		return err;
	for (i = 0; i < s->nworkers; i++) {
		struct worker *w = &s->workers[i];

		err = pthread_create(&w->thread, NULL, worker_main, w);
		if (err) {
			scheduler_stop(s);
			return -err;
		}
		w->started = true;
	}
	return 0;
}

void scheduler_stop(struct scheduler *s)
{
	unsigned i;

	/* relaxed: see struct scheduler; the locks below order the wakeup. */
	atomic_store_explicit(&s->stopping, true, memory_order_relaxed);
	for (i = 0; i < s->nworkers; i++) {
		struct worker *w = &s->workers[i];

		pthread_mutex_lock(&w->lock);
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
	}
	for (i = 0; i < s->nworkers; i++) {
		struct worker *w = &s->workers[i];

		if (w->started)
			pthread_join(w->thread, NULL);
		w->started = false;
	}
	sleepq_stop(s->sleepq);
}

bool scheduler_stopping(struct scheduler *s)
{
	/* relaxed: see struct scheduler. */
	return atomic_load_explicit(&s->stopping, memory_order_relaxed);
}

void scheduler_destroy(struct scheduler *s)
{
	unsigned i;

	if (!s)
		return;
	scheduler_stop(s);
	/* No thread runs now: every coroutine left is parked somewhere. */
	while (s->all_head) {
		struct coro *co = s->all_head;

		s->all_head = co->all_next;
		corotop_coro_close(&co->probe);
		coro_destroy(co);
	}
	sleepq_destroy(s->sleepq);
	for (i = 0; i < s->nworkers; i++) {
		pthread_cond_destroy(&s->workers[i].cond);
		pthread_mutex_destroy(&s->workers[i].lock);
	}
	pthread_mutex_destroy(&s->all_lock);
	free(s->workers);
	free(s);
}

int scheduler_spawn(struct scheduler *s, coro_fn *fn, void *arg)
{
	return scheduler_spawn_named(s, fn, arg, NULL, COROTOP_NAME_COPY);
}

int scheduler_spawn_named(struct scheduler *s, coro_fn *fn, void *arg,
			  const char *name, unsigned flags)
{
	struct coro *co;
	unsigned home;

	co = coro_create(fn, arg, s->stack_size);
	if (!co)
		return -errno;
	corotop_coro_open_named(&co->probe, (uint64_t)(uintptr_t)co, name,
				flags);
	corotop_coro_set_stack(&co->probe, co->stack,
			       (char *)co->stack + co->stack_size);
	/* The first run "continues" at the entry function: an exact
	 * address, kept as pc + 1 (corotop_coro_resume_pc's form), since a
	 * where is read as a return address (corotop/probe.h). */
	co->resume_addr = (uint64_t)(uintptr_t)fn + 1;
	co->park_addr = co->resume_addr;
	/* relaxed: spreading only. */
	home = atomic_fetch_add_explicit(&s->rr, 1, memory_order_relaxed);
	co->worker = &s->workers[home % s->nworkers];
	registry_add(s, co);
	/* relaxed: a statistic. */
	atomic_fetch_add_explicit(&s->spawned, 1, memory_order_relaxed);
	runq_push(co->worker, co);
	return 0;
}

void scheduler_ready(struct scheduler *s, struct coro *co)
{
	unsigned i;

	/* relaxed: spreading only.  Spreading wakeups over all workers is
	 * what makes coroutines migrate between threads. */
	i = atomic_fetch_add_explicit(&s->rr, 1, memory_order_relaxed);
	runq_push(&s->workers[i % s->nworkers], co);
}

void scheduler_stats(struct scheduler *s, struct scheduler_stats *out)
{
	unsigned i;

	out->spawned = atomic_load_explicit(&s->spawned, memory_order_relaxed);
	out->finished = 0;
	out->switches = 0;
	for (i = 0; i < s->nworkers; i++) {
		struct worker *w = &s->workers[i];

		out->finished += atomic_load_explicit(&w->finished,
						      memory_order_relaxed);
		out->switches += atomic_load_explicit(&w->switches,
						      memory_order_relaxed);
	}
	pthread_mutex_lock(&s->all_lock);
	out->alive = s->alive;
	pthread_mutex_unlock(&s->all_lock);
}

struct coro *scheduler_self(void)
{
	return scheduler_current;
}

void scheduler_park(coro_commit_fn *commit, void *arg, uint64_t addr)
{
	struct coro *co = scheduler_current;

	co->commit = commit;
	co->commit_arg = arg;
	co->park_addr = addr;
	co->resume_addr = addr;
	/* Still on our own stack: the probe's parked stack is ours.  The
	 * worker hands us over (commit) only after the switch. */
	corotop_coro_suspend(&co->probe, addr);
	coro_switch_out(co);
}

static void scheduler_commit_yield(struct coro *co, void *arg)
{
	(void)arg;
	/* Back of the same worker's queue: the others go first. */
	runq_push(co->worker, co);
}

static void scheduler_commit_sleep(struct coro *co, void *arg)
{
	sleepq_add(arg, co);
}

DEMO_NOINLINE void demo_yield(void)
{
	scheduler_park(scheduler_commit_yield, NULL, DEMO_CALLER_ADDR());
}

DEMO_NOINLINE void demo_sleep(unsigned ms)
{
	struct coro *co = scheduler_current;

	co->wake_ns = sleepq_now_ns() + (uint64_t)ms * 1000000u;
	scheduler_park(scheduler_commit_sleep, co->worker->sched->sleepq,
		       DEMO_CALLER_ADDR());
}
