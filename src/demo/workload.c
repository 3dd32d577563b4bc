/*
 * workload: the coroutine bodies of corotop-demo (see workload.h for the
 * cast of characters).
 *
 * Every function a coroutine can be parked in, or burn CPU in, is noinline
 * and named for what it pretends to do, so that corotop's symbolized park
 * addresses read like a real server: conn_wait_readable, burn_compress_block,
 * stuck_wait_for_reply.  CPU burners work in time slices (checked against the
 * clock, so sanitizer builds burn the same CPU share) and yield between
 * slices.  Each coroutine draws from its own xorshift generator, seeded from
 * --seed and a spawn counter.
 *
 * Budget at the defaults (2000 coroutines, 200 requests/s): about 10k
 * switches/s (20k probe transitions/s) and 0.6 of a core, most of it in the
 * burners.
 */
#define _GNU_SOURCE
#include "demo/workload.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo/chan.h"
#include "demo/scheduler.h"
#include "demo/sleepq.h"

#define WORKLOAD_MAX_BURNERS 5u
#define WORKLOAD_MAX_PIPES 4u
/* Connections (re)spawned per spawner tick at most, to smooth bursts. */
#define WORKLOAD_CONN_BURST 64u
#define WORKLOAD_TICK_MS 10u

struct pipe_pair {
	struct workload *w;
	struct chan *ch;
};

struct workload {
	struct scheduler *sched;
	struct workload_config cfg;
	struct workload_roles roles;
	struct chan *orphan; /* nobody ever sends here */
	struct pipe_pair pipes[WORKLOAD_MAX_PIPES];
	/* relaxed: only makes seeds distinct. */
	_Atomic uint64_t seeds;
	/* relaxed: a head count the spawner tops up; slack is harmless. */
	_Atomic unsigned conns_alive;
	/* relaxed: keeps the burners' arithmetic observable; never read for
	 * ordering. */
	_Atomic uint64_t sink;
};

/* ---- random numbers ---- */

static uint64_t rng_mix(uint64_t x)
{
	/* splitmix64 finalizer */
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64* */
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* Uniform-ish in [lo, hi]. */
static unsigned rng_range(uint64_t *s, unsigned lo, unsigned hi)
{
	return lo + (unsigned)(rng_next(s) % ((uint64_t)hi - lo + 1));
}

static uint64_t workload_seed(struct workload *w)
{
	uint64_t n =
		atomic_fetch_add_explicit(&w->seeds, 1, memory_order_relaxed);
	uint64_t s = rng_mix(w->cfg.seed ^ rng_mix(n));

	return s ? s : 1; /* xorshift must not start at 0 */
}

static void workload_sink(struct workload *w, uint64_t v)
{
	atomic_fetch_xor_explicit(&w->sink, v, memory_order_relaxed);
}

/* ---- CPU burners: real arithmetic in time slices ---- */

/* Tokenize synthetic request lines and hash the tokens. */
DEMO_NOINLINE static uint64_t burn_parse_request(uint64_t *rng, unsigned slices,
						 unsigned slice_us)
{
	static const char alphabet[32] = "GET /index.htmlHost:\r\n abcxyz09";
	uint64_t h = 1469598103934665603ull; /* FNV-1a offset basis */
	unsigned s;

	for (s = 0; s < slices; s++) {
		uint64_t until = sleepq_now_ns() + (uint64_t)slice_us * 1000u;

		do {
			char line[256];
			uint64_t tok = 0;
			size_t i;

			for (i = 0; i < sizeof(line); i++)
				line[i] = alphabet[rng_next(rng) & 31];
			for (i = 0; i < sizeof(line); i++) {
				char c = line[i];

				if (c == ' ' || c == ':' || c == '\n') {
					h = (h ^ tok) * 1099511628211ull;
					tok = 0;
				} else {
					tok = tok * 31 + (unsigned char)c;
				}
			}
			h ^= tok;
		} while (sleepq_now_ns() < until);
		if (s + 1 < slices)
			demo_yield();
	}
	return h;
}

/* Run-length encode a low-entropy block and checksum it (Adler-32). */
DEMO_NOINLINE static uint64_t
burn_compress_block(uint64_t *rng, unsigned slices, unsigned slice_us)
{
	uint32_t a = 1, b = 0;
	uint64_t runs = 0;
	unsigned s;

	for (s = 0; s < slices; s++) {
		uint64_t until = sleepq_now_ns() + (uint64_t)slice_us * 1000u;

		do {
			unsigned char block[1024];
			size_t i, run = 1;

			for (i = 0; i < sizeof(block); i++)
				block[i] = (unsigned char)(rng_next(rng) % 3);
			for (i = 1; i < sizeof(block); i++) {
				if (block[i] == block[i - 1] && run < 255) {
					run++;
					continue;
				}
				a = (a + block[i - 1] + (uint32_t)run) % 65521u;
				b = (b + a) % 65521u;
				runs++;
				run = 1;
			}
		} while (sleepq_now_ns() < until);
		if (s + 1 < slices)
			demo_yield();
	}
	return ((uint64_t)b << 16 | a) ^ (runs << 32);
}

/* Fill an open-addressing table, then rehash it with a new multiplier. */
DEMO_NOINLINE static uint64_t
burn_hash_table_rehash(uint64_t *rng, unsigned slices, unsigned slice_us)
{
	uint64_t probes = 0;
	unsigned s;

	for (s = 0; s < slices; s++) {
		uint64_t until = sleepq_now_ns() + (uint64_t)slice_us * 1000u;

		do {
			uint64_t old[256], neu[512];
			uint64_t mul = rng_next(rng) | 1;
			size_t i;

			memset(old, 0, sizeof(old));
			memset(neu, 0, sizeof(neu));
			for (i = 0; i < 192; i++) {
				uint64_t key = rng_next(rng) | 1;
				size_t j = (size_t)((key *
						     0x9e3779b97f4a7c15ull) >>
						    56);

				while (old[j]) {
					j = (j + 1) & 255;
					probes++;
				}
				old[j] = key;
			}
			for (i = 0; i < 256; i++) {
				size_t j;

				if (!old[i])
					continue;
				j = (size_t)((old[i] * mul) >> 55);
				while (neu[j]) {
					j = (j + 1) & 511;
					probes++;
				}
				neu[j] = old[i];
			}
			probes += neu[rng_next(rng) & 511] & 7;
		} while (sleepq_now_ns() < until);
		if (s + 1 < slices)
			demo_yield();
	}
	return probes;
}

/* ---- long-lived connections ---- */

/* I/O-like wait: "the socket becomes readable" after a while. */
DEMO_NOINLINE static unsigned conn_wait_readable(uint64_t *rng)
{
	unsigned ms = rng_range(rng, 100, 900);

	demo_sleep(ms);
	DEMO_NO_TAILCALL();
	return ms;
}

DEMO_NOINLINE static unsigned conn_write_response(uint64_t *rng)
{
	unsigned ms = rng_range(rng, 1, 4);

	demo_sleep(ms);
	DEMO_NO_TAILCALL();
	return ms;
}

static void conn_main(void *arg)
{
	struct workload *w = arg;
	uint64_t rng = workload_seed(w);
	uint64_t end = sleepq_now_ns() +
		       (uint64_t)rng_range(&rng, 20, 120) * 1000000000u;
	uint64_t h = 0;

	while (sleepq_now_ns() < end) {
		h += conn_wait_readable(&rng);
		h ^= burn_parse_request(&rng, 1, 15);
		h += conn_write_response(&rng);
	}
	workload_sink(w, h);
	/* relaxed: see struct workload. */
	atomic_fetch_sub_explicit(&w->conns_alive, 1, memory_order_relaxed);
}

/* ---- long-lived CPU burners ---- */

static void cpu_compress_main(void *arg)
{
	struct workload *w = arg;
	uint64_t rng = workload_seed(w);

	for (;;) {
		/* The hot one: ~10 ms of work per ~35 ms, 1 ms slices. */
		workload_sink(w, burn_compress_block(
					 &rng, rng_range(&rng, 6, 14), 1000));
		demo_sleep(rng_range(&rng, 15, 35));
	}
}

static void cpu_rehash_main(void *arg)
{
	struct workload *w = arg;
	uint64_t rng = workload_seed(w);

	for (;;) {
		workload_sink(w, burn_hash_table_rehash(
					 &rng, rng_range(&rng, 2, 6), 1000));
		demo_sleep(rng_range(&rng, 40, 80));
	}
}

static void cpu_parse_main(void *arg)
{
	struct workload *w = arg;
	uint64_t rng = workload_seed(w);

	for (;;) {
		workload_sink(w, burn_parse_request(&rng, rng_range(&rng, 2, 6),
						    500));
		demo_sleep(rng_range(&rng, 30, 90));
	}
}

/* ---- producer/consumer pairs ---- */

static void pipe_produce_main(void *arg)
{
	struct pipe_pair *p = arg;
	uint64_t rng = workload_seed(p->w);
	uint64_t seq = 0;

	for (;;) {
		demo_sleep(rng_range(&rng, 5, 15));
		/* A full channel drops the message, like a lossy feed. */
		(void)chan_send(p->ch, seq++);
	}
}

static void pipe_consume_main(void *arg)
{
	struct pipe_pair *p = arg;
	uint64_t rng = workload_seed(p->w);

	for (;;) {
		uint64_t v = chan_recv(p->ch);

		workload_sink(p->w, v ^ burn_parse_request(&rng, 1, 20));
	}
}

/* ---- short-lived requests ---- */

DEMO_NOINLINE static unsigned request_call_backend(uint64_t *rng)
{
	unsigned ms = rng_range(rng, 2, 20);

	demo_sleep(ms);
	DEMO_NO_TAILCALL();
	return ms;
}

static void request_main(void *arg)
{
	struct workload *w = arg;
	uint64_t rng = workload_seed(w);
	uint64_t h;

	h = burn_parse_request(&rng, 2, 20);
	h += request_call_backend(&rng);
	demo_yield(); /* "send the reply" */
	workload_sink(w, h);
}

/* ---- the stuck ones ---- */

/* Waits for a reply that was never sent: nobody holds the other end. */
DEMO_NOINLINE static uint64_t stuck_wait_for_reply(struct workload *w)
{
	uint64_t v = chan_recv(w->orphan);

	DEMO_NO_TAILCALL();
	return v;
}

static void stuck_session_main(void *arg)
{
	struct workload *w = arg;
	uint64_t rng = workload_seed(w);
	unsigned i;

	/* Behave normally for a moment, then lose the wakeup for good. */
	for (i = 0; i < 3; i++) {
		demo_sleep(rng_range(&rng, 5, 50));
		workload_sink(w, burn_parse_request(&rng, 1, 20));
	}
	workload_sink(w, stuck_wait_for_reply(w));
}

/* ---- the spawner ---- */

static void spawner_main(void *arg)
{
	struct workload *w = arg;
	uint64_t last = sleepq_now_ns();
	uint64_t owed = 0; /* request spawns owed, in 1e-9 units */

	/* Returns (and finishes) once shutdown began: nothing to pace. */
	while (!scheduler_stopping(w->sched)) {
		uint64_t now, n, burst;
		unsigned alive;

		demo_sleep(WORKLOAD_TICK_MS);
		now = sleepq_now_ns();
		owed += (uint64_t)w->cfg.spawn_rate * (now - last);
		last = now;
		n = owed / 1000000000u;
		owed %= 1000000000u;
		/* After a long stall, do not make up for more than 1 s. */
		if (n > w->cfg.spawn_rate)
			n = w->cfg.spawn_rate;
		while (n--)
			(void)scheduler_spawn_named(w->sched, request_main, w,
						    "request",
						    COROTOP_NAME_STATIC);

		/* relaxed, here and below: see struct workload. */
		alive = atomic_load_explicit(&w->conns_alive,
					     memory_order_relaxed);
		for (burst = 0;
		     alive < w->roles.conns && burst < WORKLOAD_CONN_BURST;
		     burst++, alive++) {
			atomic_fetch_add_explicit(&w->conns_alive, 1,
						  memory_order_relaxed);
			if (scheduler_spawn_named(w->sched, conn_main, w,
						  "conn",
						  COROTOP_NAME_STATIC) < 0) {
				atomic_fetch_sub_explicit(&w->conns_alive, 1,
							  memory_order_relaxed);
				break;
			}
		}
	}
}

/* ---- setup ---- */

static unsigned workload_take(unsigned *budget, unsigned want)
{
	unsigned got = want < *budget ? want : *budget;

	*budget -= got;
	return got;
}

static unsigned workload_pipe_pairs(unsigned pairs)
{
	return pairs < WORKLOAD_MAX_PIPES ? pairs : WORKLOAD_MAX_PIPES;
}

struct workload *workload_create(struct scheduler *s,
				 const struct workload_config *cfg)
{
	struct workload *w;
	unsigned budget, i;

	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->sched = s;
	w->cfg = *cfg;
	atomic_init(&w->seeds, 0);
	atomic_init(&w->conns_alive, 0);
	atomic_init(&w->sink, 0);

	/* The stuck ones and the spawner first, then burners and pipes while
	 * the budget lasts; connections take the rest. */
	budget = cfg->coroutines;
	w->roles.stuck = cfg->stuck;
	(void)workload_take(&budget, cfg->stuck);
	(void)workload_take(&budget, 1);
	w->roles.burners = workload_take(&budget, WORKLOAD_MAX_BURNERS);
	w->roles.pipe_pairs =
		workload_take(&budget, 2 * workload_pipe_pairs(budget / 2)) / 2;
	w->roles.conns = budget;

	w->orphan = chan_create(s, 1);
	if (!w->orphan)
		goto fail;
	for (i = 0; i < w->roles.pipe_pairs; i++) {
		w->pipes[i].w = w;
		w->pipes[i].ch = chan_create(s, 16);
		if (!w->pipes[i].ch)
			goto fail;
	}
	return w;
fail:
	workload_destroy(w);
	errno = ENOMEM;
	return NULL;
}

/* Burners by kind: one hot compressor, then rehash and parse. */
static coro_fn *const workload_burners[WORKLOAD_MAX_BURNERS] = {
	cpu_compress_main, cpu_rehash_main, cpu_parse_main,
	cpu_rehash_main,   cpu_parse_main,
};
static const char *const workload_burner_names[WORKLOAD_MAX_BURNERS] = {
	"burn-compress", "burn-rehash", "burn-parse",
	"burn-rehash",	 "burn-parse",
};

int workload_start(struct workload *w)
{
	struct scheduler *s = w->sched;
	char name[32];
	unsigned i;
	int err = 0;

	/* Names for corotop's NAME column: a role's is a literal (kept as a
	 * pointer), one with a number is built here (copied at open). */
	for (i = 0; !err && i < w->roles.stuck; i++) {
		snprintf(name, sizeof(name), "session-%u", i + 1);
		err = scheduler_spawn_named(s, stuck_session_main, w, name,
					    COROTOP_NAME_COPY);
	}
	if (!err)
		err = scheduler_spawn_named(s, spawner_main, w, "spawner",
					    COROTOP_NAME_STATIC);
	for (i = 0; !err && i < w->roles.burners; i++)
		err = scheduler_spawn_named(s, workload_burners[i], w,
					    workload_burner_names[i],
					    COROTOP_NAME_STATIC);
	for (i = 0; !err && i < w->roles.pipe_pairs; i++) {
		snprintf(name, sizeof(name), "pipe-%u-recv", i + 1);
		err = scheduler_spawn_named(s, pipe_consume_main, &w->pipes[i],
					    name, COROTOP_NAME_COPY);
		snprintf(name, sizeof(name), "pipe-%u-send", i + 1);
		if (!err)
			err = scheduler_spawn_named(s, pipe_produce_main,
						    &w->pipes[i], name,
						    COROTOP_NAME_COPY);
	}
	for (i = 0; !err && i < w->roles.conns; i++) {
		/* relaxed: see struct workload. */
		atomic_fetch_add_explicit(&w->conns_alive, 1,
					  memory_order_relaxed);
		err = scheduler_spawn_named(s, conn_main, w, "conn",
					    COROTOP_NAME_STATIC);
		if (err)
			atomic_fetch_sub_explicit(&w->conns_alive, 1,
						  memory_order_relaxed);
	}
	return err;
}

void workload_destroy(struct workload *w)
{
	unsigned i;

	if (!w)
		return;
	for (i = 0; i < WORKLOAD_MAX_PIPES; i++)
		chan_destroy(w->pipes[i].ch);
	chan_destroy(w->orphan);
	free(w);
}

void workload_roles(const struct workload *w, struct workload_roles *out)
{
	*out = w->roles;
}
