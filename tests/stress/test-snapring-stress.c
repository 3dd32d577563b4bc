/*
 * test-snapring-stress: three writers storing samples in a small snapshot
 * ring (corotop/snapring.h) through snap_writer_put (src/wire/snapwriter.h)
 * while a snapreader (src/engine/calltrace/snapreader.c) drains it on a
 * thread of its own, with exact accounting.
 *
 * Concept.  The reader must never deliver a record that raced a write: a
 * copy mixing two samples, or a sample's words with another's counts.  It
 * must deliver each ticket at most once and in order, and account for
 * every ticket exactly once: taken + lapped + torn + skipped + bad == the
 * writers' head.  The writers' own books must close as well: every put is
 * stored or busy (stored + busy == head), and the reader can not take more
 * than was stored.
 *
 * Each writer thread owns an "interrupted stack" (a buffer it points sp
 * at) and rewrites it before every put, its words a function of the put:
 * tag = writer << 56 | the writer's put count, every other field, each
 * frame and each stack word derived from tag, and `check` a checksum over
 * all of them as the record will hold them (nframes and ncopy after the
 * writer's truncation; some puts ask for more than SNAP_FP_MAX frames or
 * SNAP_COPY_MAX bytes, or an ncopy not a multiple of 8).  The reader
 * recomputes the checksum of every sample delivered: a torn copy fails it.
 * A writer's puts take increasing tickets, so among the samples delivered
 * each writer's put counts increase too.
 *
 * Lapping is forced, not left to the scheduler: the reader holds itself
 * (the test owns that side) until the head is more than four rings past
 * its tail, then drains with small max until it reaches the head it saw,
 * polls SS_CHASE times more, and again, SS_ROUNDS times; each pause costs
 * at least 3 * records + 1 tickets lapped at the next poll, asserted.
 * Then the reader chases the writers, three polls in four a ring behind
 * them, so that its first copy is of the record the next put takes (copies
 * racing puts: torn, or whole and delivered); the writers go on until it
 * made SS_CHASE_POLLS such polls and SS_SECONDS passed (the length of a
 * run, SNAPRING_STRESS_SECONDS; nothing is asserted on time).  Every wait has a
 * deadline (SS_DEADLINE_S), never a duration: on a loaded machine the test only
 * takes longer.  A writer preempted in its put holds its record odd; the reader
 * waits SS_GRACE_NS (real time) for it, then skips it.
 *
 * After the writers are joined and the reader stopped, the main thread,
 * which owns the reader then, puts one ring of samples itself (each must
 * be stored: no writer is left) and drains with a clock it steps past the
 * grace period, so that the tail reaches the head and the books close.
 * Two rings: 8 records, and 2 (the smallest: busy writers are likely).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <sched.h>

#include "engine/calltrace/snapreader.h"
#include "wire/snapwriter.h"
#include "../common/itest.h"

#define SS_WRITERS 3u
#define SS_ROUNDS 100u /* reader pauses, each a forced lap */
#define SS_CHASE 50u   /* polls after each round's drain */
/* Then the chase: polls a ring behind, and seconds (at least each). */
#define SS_CHASE_POLLS 300u
#define SS_SECONDS 0.5 /* SNAPRING_STRESS_SECONDS */
#define SS_GRACE_NS 1000000ull
#define SS_DEADLINE_S 60u
#define SS_TAG_N ((1ull << 56) - 1) /* the put count in a tag */

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The checksum of a sample as the ring holds it. */
static uint64_t ss_check(uint64_t tag, uint64_t pc, uint64_t sp, uint64_t fp,
			 uint64_t weight, uint32_t nf, uint32_t nc,
			 const uint64_t *frames, const uint64_t *stack)
{
	uint64_t h = mix64(tag);

	h = mix64(h ^ pc);
	h = mix64(h ^ sp);
	h = mix64(h ^ fp);
	h = mix64(h ^ weight);
	h = mix64(h ^ ((uint64_t)nf | (uint64_t)nc << 32));
	for (uint32_t i = 0; i < nf; i++)
		h = mix64(h ^ frames[i]);
	for (uint32_t i = 0; i < nc / 8; i++)
		h = mix64(h ^ stack[i]);
	return h;
}

struct ss {
	void *base;
	uint32_t records;
	struct snap_view v;
	uint64_t deadline; /* it_now() past which a wait fails */
	/* Each writer's stack, for the reader's check of sp (set before
	 * the threads start). */
	uint64_t *stacks[SS_WRITERS + 1];
	/* main -> writers: stop. */
	_Atomic bool stop_writers;
	/* main -> reader: stop. */
	_Atomic bool stop_reader;
	/* reader -> main: rounds done, then polls a ring behind. */
	_Atomic uint32_t rounds, chased;
	_Atomic bool timed_out;
	/* Owned by whoever reads: the reader thread, then main (joined). */
	struct snapreader r;
	bool any;
	uint64_t last;		       /* the last ticket delivered */
	uint64_t next[SS_WRITERS + 1]; /* per writer: put count + 1 */
	uint64_t delivered, bad_check, bad_order, min_bulk;
};

struct ss_writer {
	struct ss *ss;
	uint32_t id;
	uint64_t n; /* puts */
	uint64_t stored, busy;
	uint64_t frames[SNAP_FP_MAX + 3];
};

/* The header as snapring_create writes it. */
static void ss_header(struct snap_header *h, uint32_t records, uint64_t size)
{
	snap_header_init(h, records, size, (uint32_t)getpid());
}

static bool ss_late(struct ss *p)
{
	if (it_now() <= p->deadline)
		return false;
	/* relaxed: read after the joins. */
	atomic_store_explicit(&p->timed_out, true, memory_order_relaxed);
	return true;
}

/* Writer `id`'s put number n: the stack rewritten, then snap_writer_put. */
static bool ss_put(struct ss *p, struct ss_writer *w)
{
	uint64_t *stack = p->stacks[w->id];
	uint64_t tag = (uint64_t)w->id << 56 | (w->n & SS_TAG_N);
	uint64_t r = mix64(tag);
	/* Asked: up to 2 frames too many; mostly the whole 8 KiB and more
	 * (as the sampler asks: long writes and long copies, so that they
	 * overlap), one put in 4 less, some not a multiple of 8. */
	uint32_t nframes = (uint32_t)(r % (SNAP_FP_MAX + 3));
	uint32_t ncopy = (r >> 8) % 4 ? SNAP_COPY_MAX + 5
				      : (uint32_t)((r >> 16) % SNAP_COPY_MAX);
	uint32_t nf = nframes < SNAP_FP_MAX ? nframes : SNAP_FP_MAX;
	uint32_t nc = (ncopy < SNAP_COPY_MAX ? ncopy : SNAP_COPY_MAX) & ~7u;
	struct snap_sample_in in = {
		.tag = tag,
		.pc = mix64(tag ^ 1),
		.sp = (uintptr_t)stack,
		.fp = mix64(tag ^ 2),
		.weight = 1 + w->n % 5,
		.frames = w->frames,
		.nframes = nframes,
		.ncopy = ncopy,
	};

	for (uint32_t i = 0; i < nframes; i++)
		w->frames[i] = mix64(tag + 3 + i);
	for (uint32_t i = 0; i < nc / 8; i++)
		stack[i] = mix64(tag ^ (uint64_t)(i + 1) << 40);
	in.check = ss_check(in.tag, in.pc, in.sp, in.fp, in.weight, nf, nc,
			    w->frames, stack);
	w->n++;
	if (snap_writer_put(&p->v, &in)) {
		w->stored++;
		return true;
	}
	w->busy++;
	return false;
}

static void *ss_writer_main(void *arg)
{
	struct ss_writer *w = arg;
	struct ss *p = w->ss;

	/* acquire: pairs with main's release store of stop_writers (only
	 * a flag; nothing is handed over). */
	while (!atomic_load_explicit(&p->stop_writers, memory_order_acquire)) {
		if ((w->n & 255) == 0 && ss_late(p))
			break;
		(void)ss_put(p, w);
		if (w->n % 64 == 0)
			sched_yield(); /* now and then, let the reader in */
	}
	return NULL;
}

/* The checks on one delivered sample. */
static void ss_got(void *ctx, const struct snap_sample *s)
{
	struct ss *p = ctx;
	uint32_t id = (uint32_t)(s->tag >> 56);
	uint64_t n = s->tag & SS_TAG_N;

	p->delivered++;
	if (id > SS_WRITERS || s->nframes > SNAP_FP_MAX ||
	    s->ncopy > SNAP_COPY_MAX || s->ncopy % 8 ||
	    s->sp != (uintptr_t)p->stacks[id] ||
	    s->check != ss_check(s->tag, s->pc, s->sp, s->fp, s->weight,
				 s->nframes, s->ncopy, s->frames, s->stack) ||
	    s->pc != mix64(s->tag ^ 1) || s->fp != mix64(s->tag ^ 2)) {
		p->bad_check++;
		return;
	}
	if ((p->any && s->ticket <= p->last) || n + 1 <= p->next[id])
		p->bad_order++;
	p->any = true;
	p->last = s->ticket;
	p->next[id] = n + 1;
}

/* relaxed: the head only says how far the writers got. */
static uint64_t ss_head(struct ss *p)
{
	return atomic_load_explicit(&p->v.hdr->head, memory_order_relaxed);
}

/* The reader held until head reaches want.  false: stopped, or out of
 * time. */
static bool ss_wait_head(struct ss *p, uint64_t want)
{
	while (ss_head(p) < want) {
		/* acquire: pairs with main's release store of stop_reader
		 * (a flag). */
		if (atomic_load_explicit(&p->stop_reader,
					 memory_order_acquire) ||
		    ss_late(p))
			return false;
		sched_yield();
	}
	return true;
}

static void ss_poll(struct ss *p, uint64_t now, size_t max)
{
	(void)snapreader_poll(&p->r, now, ss_got, p, max);
}

static void *ss_reader_main(void *arg)
{
	struct ss *p = arg;
	uint64_t rng = 0x2545f4914f6cdd1dull;
	uint32_t rounds = 0, chased = 0;

	/* The forced laps. */
	while (rounds < SS_ROUNDS) {
		/* Held: until the writers are more than four rings ahead. */
		uint64_t want = p->r.st.tail + 4 * (uint64_t)p->records + 1;
		uint64_t lapped = p->r.st.lapped, h;

		if (!ss_wait_head(p, want))
			return NULL;
		/* Drain to the head seen now; the writers go on. */
		h = ss_head(p);
		ss_poll(p, it_now(), 1 + rng % 4);
		/* The lap the pause forced, counted at that first poll. */
		if (p->r.st.lapped - lapped < 3 * (uint64_t)p->records + 1)
			p->min_bulk++;
		while (p->r.st.tail < h) {
			rng = mix64(rng);
			ss_poll(p, it_now(), 1 + rng % 4);
			if (ss_late(p))
				return NULL;
		}
		/* Then chase the writers for a while: copies racing puts
		 * (torn, or whole and delivered). */
		for (uint32_t k = 0; k < SS_CHASE; k++) {
			rng = mix64(rng);
			ss_poll(p, it_now(), 1 + rng % 4);
		}
		/* relaxed: a count for main's wait (nothing handed over). */
		atomic_store_explicit(&p->rounds, ++rounds,
				      memory_order_relaxed);
	}
	/* Then chase the writers until they are done, three polls in four
	 * a ring behind them: the poll laps in bulk and copies first the
	 * oldest record, the very one the next put takes -- a copy racing
	 * a write.  acquire: pairs with main's release store of stop_reader
	 * (a flag). */
	while (!atomic_load_explicit(&p->stop_reader, memory_order_acquire)) {
		rng = mix64(rng);
		if (rng % 4) {
			if (!ss_wait_head(p, p->r.st.tail + p->records + 1))
				return NULL;
			/* relaxed: a count for main's wait. */
			atomic_store_explicit(&p->chased, ++chased,
					      memory_order_relaxed);
		}
		ss_poll(p, it_now(), 1 + (rng >> 8) % 4);
	}
	return NULL;
}

static double ss_seconds(void)
{
	const char *e = getenv("SNAPRING_STRESS_SECONDS");
	double s = e ? atof(e) : 0;

	return s > 0 && s < 600 ? s : SS_SECONDS;
}

static void ss_run(uint32_t records)
{
	struct ss *p = calloc(1, sizeof(*p));
	struct ss_writer w[SS_WRITERS + 1];
	pthread_t wt[SS_WRITERS], rt;
	const struct snapreader_stats *s;
	struct snapreader_stats st;
	uint64_t size = snap_region_size(records), stored = 0, busy = 0, head,
		 now, chase_end;

	assert_non_null(p);
	assert_true(size > 0);
	p->records = records;
	p->base = aligned_alloc(64, size);
	assert_non_null(p->base);
	memset(p->base, 0, size);
	ss_header(p->base, records, size);
	assert_true(snap_view_init(&p->v, p->base, size));
	snapreader_init(&p->r, p->base, records, SS_GRACE_NS);
	for (uint32_t k = 0; k <= SS_WRITERS; k++) {
		p->stacks[k] = calloc(SNAP_COPY_MAX / 8, sizeof(uint64_t));
		assert_non_null(p->stacks[k]);
		w[k] = (struct ss_writer){.ss = p, .id = k};
	}
	p->deadline = it_now() + SS_DEADLINE_S * 1000000000ull;

	assert_int_equal(pthread_create(&rt, NULL, ss_reader_main, p), 0);
	for (uint32_t k = 0; k < SS_WRITERS; k++)
		assert_int_equal(
			pthread_create(&wt[k], NULL, ss_writer_main, &w[k]), 0);
	/* relaxed, the loads below: counts and a flag, only waited for.
	 * The rounds first, then the chase: SS_CHASE_POLLS polls a ring
	 * behind, and for ss_seconds() at least. */
	while (atomic_load_explicit(&p->rounds, memory_order_relaxed) <
		       SS_ROUNDS &&
	       !atomic_load_explicit(&p->timed_out, memory_order_relaxed) &&
	       it_now() <= p->deadline)
		it_sleep_ms(1);
	chase_end = it_now() + (uint64_t)(ss_seconds() * 1e9);
	while ((atomic_load_explicit(&p->chased, memory_order_relaxed) <
			SS_CHASE_POLLS ||
		it_now() < chase_end) &&
	       !atomic_load_explicit(&p->timed_out, memory_order_relaxed) &&
	       it_now() <= p->deadline)
		it_sleep_ms(1);
	/* release: pairs with the writers' acquire load (a flag). */
	atomic_store_explicit(&p->stop_writers, true, memory_order_release);
	for (uint32_t k = 0; k < SS_WRITERS; k++)
		pthread_join(wt[k], NULL);
	/* release: pairs with the reader's acquire load (a flag). */
	atomic_store_explicit(&p->stop_reader, true, memory_order_release);
	pthread_join(rt, NULL);
	assert_false(atomic_load_explicit(&p->timed_out, memory_order_relaxed));
	assert_true(atomic_load_explicit(&p->rounds, memory_order_relaxed) ==
		    SS_ROUNDS);
	assert_true(atomic_load_explicit(&p->chased, memory_order_relaxed) >=
		    SS_CHASE_POLLS);

	/* One ring more, put by main alone: each stored (every writer has
	 * finished, no record is odd), each delivered below. */
	for (uint32_t k = 0; k < records; k++)
		assert_true(ss_put(p, &w[SS_WRITERS]));
	/* Drain with a clock far ahead, stepped a grace period each poll:
	 * a ticket left unfinished is waited for once, then skipped. */
	now = it_now() + 1000000000000ull;
	head = ss_head(p);
	for (uint64_t k = 0;
	     k < 4 * (uint64_t)records + 16 && p->r.st.tail != head; k++) {
		now += SS_GRACE_NS;
		ss_poll(p, now, 64);
	}

	snapreader_stats(&p->r, &st);
	s = &p->r.st;
	for (uint32_t k = 0; k <= SS_WRITERS; k++) {
		stored += w[k].stored;
		busy += w[k].busy;
	}
	printf("snapring-stress (%u records): head %llu, stored %llu, busy "
	       "%llu; taken %llu, lapped %llu, torn %llu, skipped %llu, bad "
	       "%llu, resyncs %llu\n",
	       records, (unsigned long long)st.head,
	       (unsigned long long)st.stored, (unsigned long long)st.busy,
	       (unsigned long long)s->taken, (unsigned long long)s->lapped,
	       (unsigned long long)s->torn, (unsigned long long)s->skipped,
	       (unsigned long long)s->bad, (unsigned long long)s->resyncs);
	/* No torn or mixed sample delivered, none out of order. */
	assert_int_equal(p->bad_check, 0);
	assert_int_equal(p->bad_order, 0);
	assert_true(p->delivered == s->taken);
	/* The reader's books: every ticket exactly once. */
	assert_true(head == st.head);
	assert_true(s->tail == head);
	assert_true(s->taken + s->lapped + s->torn + s->skipped + s->bad ==
		    head);
	assert_int_equal(s->bad, 0);
	assert_int_equal(s->resyncs, 0);
	/* The writers' books, theirs and the header's. */
	assert_true(st.stored == stored && st.busy == busy);
	assert_true(stored + busy == head);
	assert_true(s->taken <= stored);
	/* What the run is for, forced: each pause lapped the reader by at
	 * least 3 rings + 1 at once, and main's ring was delivered. */
	assert_int_equal(p->min_bulk, 0);
	assert_true(s->lapped >= SS_ROUNDS * (3 * (uint64_t)records + 1));
	assert_true(p->next[SS_WRITERS] == records);
	assert_true(s->taken >= records);
	for (uint32_t k = 0; k <= SS_WRITERS; k++)
		free(p->stacks[k]);
	free(p->base);
	free(p);
}

static void test_lapping_writers(void **state)
{
	(void)state;
	ss_run(8);
}

static void test_lapping_writers_tiny_ring(void **state)
{
	(void)state;
	ss_run(2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lapping_writers),
		cmocka_unit_test(test_lapping_writers_tiny_ring),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
