/*
 * itest: helpers shared by the integration and stress tests.
 *
 * The writer programs (writer.c through the probe, upstream_writer.c by hand)
 * and the tests agree on one payload encoding so that every harvested event
 * can be checked against what was written, without any side channel:
 *
 *   probe_id = IT_PROBE_ID(c)          coroutine c (0-based, in birth order)
 *   addr     = IT_ADDR(c, e)           event e (0-based) of coroutine c
 *   is_active = e & 1
 *
 * Also: a monotonic clock, bounded sleeps, a mutex-guarded event collector
 * for engine_config.event_hook, and small process helpers (spawn with pipes,
 * wait with a deadline, read lines with a deadline).
 */
#ifndef COROTOP_ITEST_H
#define COROTOP_ITEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define IT_PROBE_ID(c) (0x5000000000ull + (uint64_t)(c))
#define IT_ADDR(c, e) ((((uint64_t)(c) + 1) << 32) | (uint32_t)(e))
#define IT_ADDR_CORO(a) (((uint64_t)(a) >> 32) - 1)
#define IT_ADDR_EVENT(a) ((uint64_t)(a)&0xffffffffu)

/* Whether this is a sanitizer build (ASan or TSan): its corotop never
 * preloads (engine/target/autotrace.c). */
static inline bool it_sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
	return true;
#endif
#endif
	return false;
}

static inline uint64_t it_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void it_sleep_us(unsigned us)
{
	struct timespec ts = {(time_t)(us / 1000000u),
			      (long)(us % 1000000u) * 1000};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static inline void it_sleep_ms(unsigned ms)
{
	it_sleep_us(ms * 1000u);
}

/* ---- event collector for engine_config.event_hook ---- */

/* Writer side: one ack byte, or false after a 60 s deadline. */
static inline bool it_await_ack(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char c;

	if (poll(&p, 1, 60000) != 1 || read(fd, &c, 1) != 1) {
		fprintf(stderr, "no ack from the test\n");
		return false;
	}
	return true;
}

#ifdef COROTOP_HARVEST_H
struct it_events {
	pthread_mutex_t mu;
	struct harvest_event *ev;
	size_t n, cap;
	uint64_t *seen_at; /* it_now() when the hook ran, per event */
	/* Bumped after every append; polled by the test thread. */
	_Atomic size_t count;
};

/* The collector in use, so a failed test's teardown can free it. */
static struct it_events *it_cur_events __attribute__((unused));

static inline void it_events_init(struct it_events *c)
{
	memset(c, 0, sizeof(*c));
	pthread_mutex_init(&c->mu, NULL);
	it_cur_events = c;
}

static inline void it_events_free(struct it_events *c)
{
	free(c->ev);
	free(c->seen_at);
	pthread_mutex_destroy(&c->mu);
	if (it_cur_events == c)
		it_cur_events = NULL;
}

static inline void it_events_hook(void *ctx, const struct harvest_event *ev)
{
	struct it_events *c = ctx;
	uint64_t now = it_now();

	pthread_mutex_lock(&c->mu);
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 4096;
		struct harvest_event *e = realloc(c->ev, cap * sizeof(*e));
		uint64_t *s = realloc(c->seen_at, cap * sizeof(*s));

		if (!e || !s)
			abort();
		c->ev = e;
		c->seen_at = s;
		c->cap = cap;
	}
	c->ev[c->n] = *ev;
	c->seen_at[c->n] = now;
	c->n++;
	pthread_mutex_unlock(&c->mu);
	atomic_fetch_add_explicit(&c->count, 1, memory_order_release);
}

/*
 * A writer paced to the harvester, never to a clock: the collector, plus one
 * ack byte written to ack_w for every per_round events delivered.  The
 * writer reads one byte per round (it_await_ack), so it is never more than a
 * round ahead of the harvest and no ring can lap, however slow the machine.
 */
struct it_pace {
	struct it_events col;
	int ack_w;
	size_t per_round, delivered; /* harvest thread only */
};

static inline void it_pace_hook(void *ctx, const struct harvest_event *ev)
{
	struct it_pace *p = ctx;

	it_events_hook(&p->col, ev);
	if (++p->delivered % p->per_round == 0 && write(p->ack_w, "k", 1) != 1)
		fprintf(stderr, "it_pace: ack write failed\n");
}

static inline size_t it_events_count(struct it_events *c)
{
	return atomic_load_explicit(&c->count, memory_order_acquire);
}

/* Copy event i (under the lock: the harvest thread may be appending). */
static inline struct harvest_event it_events_get(struct it_events *c, size_t i,
						 uint64_t *seen_at)
{
	struct harvest_event ev;

	pthread_mutex_lock(&c->mu);
	ev = c->ev[i];
	if (seen_at)
		*seen_at = c->seen_at[i];
	pthread_mutex_unlock(&c->mu);
	return ev;
}
#endif

/* ---- processes ---- */

/* waitpid with a deadline; on timeout SIGKILL it and return -1. */
static inline int it_wait_pid(pid_t pid, unsigned timeout_ms, int *status)
{
	uint64_t end = it_now() + (uint64_t)timeout_ms * 1000000u;

	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
		if (it_now() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, status, 0);
			return -1;
		}
		it_sleep_ms(2);
	}
}

/*
 * Read one '\n'-terminated line from fd (blocking fd is fine: poll guards
 * every read) into buf, with a deadline.  Byte at a time: the fds are pipes
 * shared with nothing else, and the lines are short.  Returns the length, or
 * -1 on timeout/EOF.
 */
static inline ssize_t it_read_line(int fd, char *buf, size_t len,
				   unsigned timeout_ms)
{
	uint64_t end = it_now() + (uint64_t)timeout_ms * 1000000u;
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t now = it_now();
		int left = now >= end ? 0 : (int)((end - now) / 1000000u) + 1;
		char ch;
		ssize_t r;

		if (now >= end)
			return -1;
		r = poll(&p, 1, left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		r = read(fd, &ch, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (ch == '\n')
			break;
		buf[n++] = ch;
	}
	buf[n] = '\0';
	return (ssize_t)n;
}

/* Remove a region directory left behind by a SIGKILLed engine. */
static inline void it_remove_region_dir(const char *shm_path)
{
	char dir[1024], sock[1100];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", shm_path);
	slash = strrchr(dir, '/');
	if (!slash)
		return;
	*slash = '\0';
	snprintf(sock, sizeof(sock), "%s/ctp.sock", dir);
	unlink(shm_path);
	unlink(sock);
	rmdir(dir);
}

static inline bool it_path_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* ---- running a target under an in-process engine ---- */

#ifdef COROTOP_ENGINE_H
struct it_run {
	struct engine *e;
	struct snapshot snap;
	struct engine_stats stats;
	bool exited; /* the target exited by itself before the deadline */
	int exit_code;
	uint64_t t0, t1; /* around the run, it_now() */
	char err[512];
};

/*
 * Create and start an engine for cfg (launch mode), wait up to timeout_ms
 * for the target to exit, stop the engine (which drains a last scan) and
 * take a snapshot and the stats.  The engine is left for the caller to
 * destroy (it_run_finish), so its paths can still be inspected.
 */
/* The run in progress, so a failed test's teardown can finish it. */
static struct it_run *it_cur_run __attribute__((unused));

static inline bool it_run_target(const struct engine_config *cfg,
				 unsigned timeout_ms, struct it_run *r)
{
	uint64_t end;

	memset(r, 0, sizeof(*r));
	it_cur_run = r;
	snapshot_init(&r->snap);
	r->t0 = it_now();
	r->e = engine_create(cfg, r->err, sizeof(r->err));
	if (!r->e)
		return false;
	if (!engine_start(r->e, r->err, sizeof(r->err)))
		return false;
	end = it_now() + (uint64_t)timeout_ms * 1000000u;
	while (!engine_reap(r->e)) {
		if (it_now() > end) {
			snprintf(r->err, sizeof(r->err),
				 "target still running after %u ms",
				 timeout_ms);
			engine_terminate_target(r->e, 1000);
			break;
		}
		it_sleep_ms(2);
	}
	engine_stop(r->e);
	engine_snapshot(r->e, &r->snap);
	engine_stats(r->e, &r->stats);
	r->t1 = it_now();
	r->exited = !r->err[0] && r->snap.target.exited &&
		    !r->snap.target.term_signal;
	r->exit_code = r->snap.target.exit_code;
	return true;
}

static inline void it_run_finish(struct it_run *r)
{
	if (r->e) {
		engine_terminate_target(r->e, 1000);
		engine_destroy(r->e);
	}
	snapshot_finish(&r->snap);
	r->e = NULL;
	if (it_cur_run == r)
		it_cur_run = NULL;
}

/* cmocka teardown: release what a test that failed half way still holds
 * (the engine first: its thread may call into the collector). */
static inline int it_teardown_run(void **state)
{
	(void)state;
	if (it_cur_run)
		it_run_finish(it_cur_run);
#ifdef COROTOP_HARVEST_H
	if (it_cur_events)
		it_events_free(it_cur_events);
#endif
	return 0;
}

/* The snapshot record of the coroutine with this probe_id, or NULL. */
static inline const struct model_coro *it_find_coro(const struct snapshot *s,
						    uint64_t probe_id)
{
	for (size_t i = 0; i < s->count; i++)
		if (s->coro[i].probe_id == probe_id)
			return &s->coro[i];
	return NULL;
}
#endif

#endif
