/*
 * test-ppt-reader-stress: three writers lapping a 256-frame ppt ring while
 * a pptreader (src/engine/ppt/pptreader.c) polls it, with exact accounting.
 *
 * Concept.  The reader must never deliver a frame that raced a write (a
 * torn copy), must deliver each index at most once and in order, and must
 * account for every index exactly once: delivered + lost + torn == written.
 * Writer threads follow the multithreaded protocol of corotop/ppt.h (D) to
 * the letter: the index from an atomic fetch_add on a shared counter (which
 * starts 20000 below 2^32, so it wraps during the run and skips 0), seqnos
 * zeroed, release fence, front, release fence, body, release fence, back.
 * Every shared word is written with a relaxed atomic store, so the only
 * ordering is the protocol's fences and ThreadSanitizer sees no plain race.
 *
 * A frame is 32 bytes: front @0, writer tag @4, payload @8 (a function of
 * the index), check @16 (a checksum of index, tag, payload and pad), pad @24
 * (~index), back @28.  A copy that mixes two writes fails the checksum or
 * the payload comparison.
 *
 * The reader thread polls with a tiny max (1..4) and now and then sleeps,
 * so that the writers lap it many times; its stall_ns is short (1 ms), so
 * a writer preempted mid-frame gets its frame counted torn or lost while
 * the others go on.  After the writers stop, the main thread writes one
 * more lap of frames alone (so that no slot is left holding a frame a slow
 * writer put back over a newer one) and drains the reader to the writers'
 * counter.  Three runs:
 *   full speed  writers lap the reader constantly (losses);
 *   yield       sched_yield() inside writes widens the race windows;
 *   paced       writers sleep between frames, so the reader keeps up, and
 *               now and then one sleeps 3 ms in the middle of a frame: the
 *               reader may wait on it, give up after stall_ns (torn) while
 *               the others go on, and the frame completes after that --
 *               and must not be delivered then.
 * PPT_STRESS_SECONDS sets a run's length (at least: the writers also go on
 * until the counter wrapped and the reader delivered more than a ring).
 *
 * One thing the protocol can not protect, and no reader can detect: a
 * writer lapped by the others in the middle of its frame (the scheduler
 * stopped it while a whole ring of newer frames was taken) stores the rest
 * of its body and its back over a newer frame, and a copy made meanwhile
 * matches front and back of the newer frame with the old body.  Each
 * writer checks, once its frame is complete, whether the counter went a
 * ring past its index; a bad copy is only allowed when that happened (at
 * most two per such frame), and never otherwise.
 *
 * What the runs must show is forced, not left to the scheduler: the extra
 * lap overwrites the writers' last index before the drain reads it (a loss
 * in every run), and after the drain the main thread, which owns the
 * reader then, writes one frame halfway and the next one whole and polls
 * with a clock it chooses: the reader waits on the half frame, gives it up
 * as torn after stall_ns, and never delivers it once completed.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <sched.h>

#include "engine/ppt/pptreader.h"
#include "../common/itest.h"

#define PS_FRAMES 256u
#define PS_FS 32u
#define PS_WRITERS 3u
#define PS_SECONDS 1.2
/* Paced run: each writer sleeps between frames and, one frame in
 * PS_PAUSE_EVERY, for PS_PAUSE_US in the middle of it. */
#define PS_PAUSE_EVERY 256u
#define PS_PAUSE_US 3000u
#define PS_PACE_US 20u

enum ps_mode { PS_FULL, PS_YIELD, PS_PACED };
#define PS_START (UINT32_MAX - 20000u) /* wraps early in a run */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t ps_check(uint32_t i, uint32_t tag, uint64_t payload,
			 uint32_t pad)
{
	return mix64(payload ^ mix64(((uint64_t)tag << 32 | i) ^ pad));
}

struct ps {
	unsigned char *block;
	enum ps_mode mode;
	uint64_t end;		  /* it_now() deadline of the writers */
	_Atomic uint32_t next;	  /* the writers' index counter */
	_Atomic uint64_t written; /* indexes taken, all writers */
	_Atomic bool stop_reader;
	_Atomic uint64_t delivered; /* the reader's, published for writers */
	_Atomic uint64_t overrun;   /* frames whose writer was lapped */
	/* Owned by whoever reads (the reader thread, then main, joined). */
	struct pptreader r;
	uint32_t last; /* last index delivered, 0: none */
	uint64_t polls;
	uint64_t bad_check, bad_order, bad_accounting;
};

struct ps_writer {
	struct ps *ps;
	uint32_t tag;
};

static uint32_t *ps_word(struct ps *p, uint32_t i, uint32_t off)
{
	return (uint32_t *)(void *)(p->block + (size_t)(i % PS_FRAMES) * PS_FS +
				    off);
}

static uint64_t *ps_dword(struct ps *p, uint32_t i, uint32_t off)
{
	return (uint64_t *)(void *)(p->block + (size_t)(i % PS_FRAMES) * PS_FS +
				    off);
}

/* Take an index. */
static uint32_t ps_take(struct ps *p)
{
	/* Relaxed: the index only has to be unique. */
	uint32_t i =
		atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);

	if (i == 0) /* the counter wrapped: 0 is not an index */
		i = atomic_fetch_add_explicit(&p->next, 1,
					      memory_order_relaxed);
	return i;
}

/* Front half of frame i: seqnos zeroed, front, tag and payload. */
static void ps_write_front(struct ps *p, uint32_t i, uint32_t tag)
{
	__atomic_store_n(ps_word(p, i, 0), 0, __ATOMIC_RELAXED);
	__atomic_store_n(ps_word(p, i, 28), 0, __ATOMIC_RELAXED);
	/* Release: pairs with the reader's acquire fence before it loads
	 * front, which then sees 0 (or this i) if its copy saw the body. */
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(ps_word(p, i, 0), i, __ATOMIC_RELAXED);
	/* Release: front is stored before any of the body. */
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(ps_word(p, i, 4), tag, __ATOMIC_RELAXED);
	__atomic_store_n(ps_dword(p, i, 8), mix64(i), __ATOMIC_RELAXED);
}

/* Back half of frame i: pad, check, back. */
static void ps_write_back(struct ps *p, uint32_t i, uint32_t tag)
{
	__atomic_store_n(ps_word(p, i, 24), ~i, __ATOMIC_RELAXED);
	__atomic_store_n(ps_dword(p, i, 16), ps_check(i, tag, mix64(i), ~i),
			 __ATOMIC_RELAXED);
	/* Release: pairs with the reader's acquire load of back. */
	atomic_thread_fence(memory_order_release);
	__atomic_store_n(ps_word(p, i, 28), i, __ATOMIC_RELAXED);
}

/* Take an index and write its frame: corotop/ppt.h (D). */
static void ps_write(struct ps *p, uint32_t tag, enum ps_mode mode)
{
	uint32_t i = ps_take(p);

	ps_write_front(p, i, tag);
	if (mode == PS_YIELD && i % 32 == 0)
		sched_yield(); /* a torn slot is now likely: widen it */
	if (mode == PS_PACED && i % PS_PAUSE_EVERY == 0)
		it_sleep_us(PS_PAUSE_US); /* may stall the reader: torn */
	ps_write_back(p, i, tag);
	/* Lapped mid-frame: index i + PS_FRAMES (same slot) was taken before
	 * our back was stored.  relaxed: a count, read after the joins. */
	if ((uint32_t)(atomic_load_explicit(&p->next, memory_order_relaxed) -
		       i) > PS_FRAMES)
		atomic_fetch_add_explicit(&p->overrun, 1, memory_order_relaxed);
}

static void *ps_writer_main(void *arg)
{
	struct ps_writer *w = arg;
	struct ps *p = w->ps;
	uint64_t n = 0;

	for (;;) {
		/* Past the time, and what the run is for was done: the
		 * counter wrapped (it counts up from PS_START; relaxed: a
		 * progress check) and the reader delivered more than a ring
		 * (relaxed: pairs with its relaxed publication; a count). */
		if ((n & 255) == 0 && it_now() > p->end &&
		    atomic_load_explicit(&p->next, memory_order_relaxed) <
			    PS_START &&
		    atomic_load_explicit(&p->delivered, memory_order_relaxed) >
			    PS_FRAMES)
			break;
		ps_write(p, w->tag, p->mode);
		n++;
		if (p->mode == PS_PACED)
			it_sleep_us(PS_PACE_US);
	}
	atomic_fetch_add_explicit(&p->written, n, memory_order_relaxed);
	return NULL;
}

/* Indexes in [first, cursor), 0 excluded. */
static uint64_t ps_span(uint32_t first, uint32_t cursor)
{
	uint32_t d = cursor - first;

	return d - (first != 0 && (uint32_t)(0u - first) < d);
}

/* One poll and the checks on what it delivered. */
static size_t ps_poll(struct ps *p, uint64_t now, size_t max)
{
	unsigned char buf[64 * PS_FS];
	uint32_t idx[64];
	size_t n = pptreader_poll(&p->r, now, buf, idx, max);
	const struct pptreader_stats *s = &p->r.st;

	for (size_t j = 0; j < n; j++) {
		const unsigned char *f = buf + j * PS_FS;
		uint32_t i = idx[j], front, tag, pad, back;
		uint64_t payload, check;

		memcpy(&front, f, 4);
		memcpy(&tag, f + 4, 4);
		memcpy(&payload, f + 8, 8);
		memcpy(&check, f + 16, 8);
		memcpy(&pad, f + 24, 4);
		memcpy(&back, f + 28, 4);
		if (front != i || back != i || payload != mix64(i) ||
		    pad != ~i || tag > PS_WRITERS ||
		    check != ps_check(i, tag, payload, pad))
			p->bad_check++;
		if (i == 0 || (p->last && (int32_t)(i - p->last) <= 0))
			p->bad_order++;
		p->last = i;
	}
	if (s->delivered + s->lost + s->torn != ps_span(PS_START, p->r.cursor))
		p->bad_accounting++;
	p->polls++;
	return n;
}

static void *ps_reader_main(void *arg)
{
	struct ps *p = arg;
	uint64_t rng = 0x2545f4914f6cdd1dull;

	while (!atomic_load_explicit(&p->stop_reader, memory_order_acquire)) {
		rng = mix64(rng);
		ps_poll(p, it_now(), 1 + rng % 4);
		/* relaxed: a count for the writers' stop condition. */
		atomic_store_explicit(&p->delivered, p->r.st.delivered,
				      memory_order_relaxed);
		if (rng % 1024 == 0)
			it_sleep_us(50 + (unsigned)(rng >> 40) % 200);
	}
	return NULL;
}

static double ps_seconds(void)
{
	const char *e = getenv("PPT_STRESS_SECONDS");
	double s = e ? atof(e) : 0;

	return s > 0 && s < 600 ? s : PS_SECONDS;
}

/*
 * The torn frame, forced.  The reader is the main thread's now and has
 * drained everything (clock `t`, far ahead).  Frame i is written halfway
 * (front, no back) and frame i + 1 whole.  A poll at t stalls on i; a poll
 * stall_ns later gives i up as torn (a whole newer frame is ahead) and
 * delivers i + 1.  Completed afterwards, i is not delivered.  Returns the
 * indexes written (2).
 */
static uint64_t ps_forced_torn(struct ps *p, uint64_t t)
{
	const struct pptreader_stats *s = &p->r.st;
	uint64_t torn = s->torn, delivered = s->delivered, stalls = s->stalls;
	uint32_t i = ps_take(p);

	ps_write_front(p, i, PS_WRITERS);
	ps_write(p, PS_WRITERS, PS_FULL);
	assert_int_equal(ps_poll(p, t, 64), 0);
	assert_int_equal(s->stalls, stalls + 1);
	assert_int_equal(ps_poll(p, t + p->r.stall_ns, 64), 1);
	assert_int_equal(s->torn, torn + 1);
	assert_int_equal(s->delivered, delivered + 1);
	ps_write_back(p, i, PS_WRITERS);
	assert_int_equal(ps_poll(p, t + 2 * p->r.stall_ns, 64), 0);
	assert_int_equal(s->delivered, delivered + 1);
	assert_int_equal(s->torn, torn + 1);
	return 2;
}

static void ps_run(enum ps_mode mode)
{
	struct ps *p = calloc(1, sizeof(*p));
	struct ps_writer w[PS_WRITERS];
	pthread_t wt[PS_WRITERS], rt;
	uint64_t written, far, overrun;
	uint32_t next;
	const struct pptreader_stats *s;

	assert_non_null(p);
	p->block = aligned_alloc(64, PS_FRAMES * PS_FS);
	assert_non_null(p->block);
	memset(p->block, 0, PS_FRAMES * PS_FS);
	p->mode = mode;
	atomic_init(&p->next, PS_START);
	pptreader_init(&p->r, p->block, PS_FRAMES, PS_FS, 0, 28, PS_START);
	p->r.stall_ns = 1000000;

	p->end = it_now() + (uint64_t)(ps_seconds() * 1e9);
	assert_int_equal(pthread_create(&rt, NULL, ps_reader_main, p), 0);
	for (uint32_t k = 0; k < PS_WRITERS; k++) {
		w[k] = (struct ps_writer){.ps = p, .tag = k};
		assert_int_equal(
			pthread_create(&wt[k], NULL, ps_writer_main, &w[k]), 0);
	}
	for (uint32_t k = 0; k < PS_WRITERS; k++)
		pthread_join(wt[k], NULL);
	atomic_store_explicit(&p->stop_reader, true, memory_order_release);
	pthread_join(rt, NULL);

	/* One more lap, written alone: every slot now holds a frame newer
	 * than any a slow writer may have put back over a newer one. */
	for (uint32_t k = 0; k <= PS_FRAMES; k++)
		ps_write(p, PS_WRITERS, PS_FULL);
	written = atomic_load_explicit(&p->written, memory_order_relaxed) +
		  PS_FRAMES + 1;
	next = atomic_load_explicit(&p->next, memory_order_relaxed);
	if (next == 0)
		next = 1;
	/* Drain, with a clock far ahead: any stall left expires. */
	far = it_now() + 1000000000000ull;
	for (int k = 0; k < 100000 && p->r.cursor != next; k++)
		ps_poll(p, far, 64);
	assert_int_equal(p->r.cursor, next);
	written += ps_forced_torn(p, far + 1);
	next = atomic_load_explicit(&p->next, memory_order_relaxed);

	s = &p->r.st;
	overrun = atomic_load_explicit(&p->overrun, memory_order_relaxed);
	printf("ppt-reader-stress (%s): written %llu, delivered %llu, lost "
	       "%llu, torn %llu, stalls %llu, polls %llu; writers lapped "
	       "mid-frame %llu, bad copies %llu\n",
	       mode == PS_FULL	  ? "full speed"
	       : mode == PS_YIELD ? "yield"
				  : "paced",
	       (unsigned long long)written, (unsigned long long)s->delivered,
	       (unsigned long long)s->lost, (unsigned long long)s->torn,
	       (unsigned long long)s->stalls, (unsigned long long)p->polls,
	       (unsigned long long)overrun, (unsigned long long)p->bad_check);
	assert_int_equal(p->r.cursor, next);
	assert_true(s->delivered + s->lost + s->torn == written);
	assert_true(ps_span(PS_START, next) == written);
	/* No bad copy, unless a writer was lapped mid-frame (see above). */
	assert_true(p->bad_check <= 2 * overrun);
	assert_int_equal(p->bad_order, 0);
	assert_int_equal(p->bad_accounting, 0);
	/* The run did what it is for, on any machine: wrapped and delivered
	 * more than a ring (the writers went on until both were true), lost
	 * (the extra lap overwrote the writers' last index before the drain)
	 * and gave up on a frame half written (forced). */
	assert_true(s->delivered > PS_FRAMES);
	assert_true(written > 20001);
	assert_true(s->lost > 0);
	assert_true(s->torn > 0);
	free(p->block);
	free(p);
}

static void test_lapping_writers(void **state)
{
	(void)state;
	ps_run(PS_FULL);
}

static void test_lapping_writers_yield(void **state)
{
	(void)state;
	ps_run(PS_YIELD);
}

static void test_paced_writers_pausing(void **state)
{
	(void)state;
	ps_run(PS_PACED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lapping_writers),
		cmocka_unit_test(test_lapping_writers_yield),
		cmocka_unit_test(test_paced_writers_pausing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
