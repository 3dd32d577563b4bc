/*
 * test-recorder-stress: the recorder's hand-over ring (harvest thread ->
 * writer thread) lapped on purpose, with exact accounting.
 *
 * One producer thread plays the harvest: it opens 64 stations, then pushes
 * events round-robin as fast as it can (rounds of a few thousand with a
 * short pause now and then, so that the writer may fall behind and also
 * runs dry and sleeps), calling recorder_publish after every "pass" as the
 * engine does.  Every event carries a checksum: seq counts per station and
 * addr = mix(station, seq).  Whether the writer keeps up on its own depends
 * on the machine, so the lap is forced: half way, the producer holds the
 * writer (recorder.c is compiled here with RECORDER_TEST_HOOKS, and the
 * hook before each drain waits at a gate), pushes until LAP_DROPS items
 * more than the ring holds were dropped, and lets it go.
 *
 * After recorder_destroy the file is read back packet by packet:
 *   - intervals + the "lost" counts on stream 0 == events pushed, exactly
 *     (nothing vanishes: what the ring could not take is a "lost" event);
 *   - the recorder's statistics say the same (items, dropped, intervals);
 *   - per station, seqs strictly increase and every addr matches its seq;
 *   - each stream's counter counts up by one; the file is whole packets.
 * And with 10,000 threads (more than the recorder's first table of
 * stream counters holds), every stream still counts its own events from 0.
 * And when a write fails (RLIMIT_FSIZE) the books stop where the file
 * stops: what is handed over afterwards is counted nowhere, and the
 * statistics match the file packet for packet.
 * Runs in the concurrency suite, so TSan sees both sides of the ring.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/heph/heph.h"
#include "engine/record/recorder.h"

#define STATIONS 64
#define TARGET_EVENTS 3000000u
#define LAP_DROPS 1000u /* dropped on purpose while the writer is held */
#define GATE_WAIT_S 30	/* deadline for the writer to reach the gate */
#define FAIL_WAIT_NS 30000000000ull /* ... and for a write to fail */

static uint64_t mix(uint64_t station, uint64_t seq)
{
	uint64_t h = (station << 40 ^ seq) * 0x9E3779B97F4A7C15ull;

	return (h ^ h >> 29) | 1; /* never 0: 0 means "no address" */
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The gate in the writer's way (recorder_test_before_drain): while `hold`
 * is set the writer waits in it, and says so with `held`.  A mutex and a
 * condition variable, so TSan sees the hand-over.
 */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool hold; /* the test wants the writer held */
	bool held; /* the writer waits at the gate */
} gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false};

static void gate_hook(struct recorder *r)
{
	(void)r;
	pthread_mutex_lock(&gate.mu);
	while (gate.hold) {
		gate.held = true;
		pthread_cond_broadcast(&gate.cv);
		pthread_cond_wait(&gate.cv, &gate.mu);
	}
	gate.held = false;
	pthread_mutex_unlock(&gate.mu);
}

/* Hold the writer at its next drain; false if it never got there within
 * GATE_WAIT_S (it sleeps at most 100 ms between drains). */
static bool gate_close(void)
{
	struct timespec end;
	bool held;

	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += GATE_WAIT_S;
	pthread_mutex_lock(&gate.mu);
	gate.hold = true;
	while (!gate.held &&
	       pthread_cond_timedwait(&gate.cv, &gate.mu, &end) != ETIMEDOUT)
		;
	held = gate.held;
	pthread_mutex_unlock(&gate.mu);
	return held;
}

static void gate_open(void)
{
	pthread_mutex_lock(&gate.mu);
	gate.hold = false;
	pthread_cond_broadcast(&gate.cv);
	pthread_mutex_unlock(&gate.mu);
}

struct producer {
	struct recorder *r;
	uint64_t pushed;
	uint64_t seq[STATIONS];
	uint64_t forced; /* dropped while the writer was held */
	bool held;	 /* the writer did reach the gate */
};

static void push_one(struct producer *p)
{
	uint32_t s = (uint32_t)(p->pushed % STATIONS);
	uint64_t q = ++p->seq[s];
	struct harvest_event ev = {
		.station = s,
		.probe_id = 1000 + s,
		.ts = now_ns(),
		.tid = 100 + s % 4,
		.addr = mix(s, q),
		.seq = q,
		.is_active = (uint8_t)(q & 1),
	};

	recorder_event(p->r, &ev);
	p->pushed++;
}

/* The forced lap: hold the writer, push until LAP_DROPS more items were
 * dropped than before (the ring is full and stays full), let it go. */
static void lap(struct producer *p)
{
	struct recorder_stats rs;
	uint64_t d0;

	p->held = gate_close();
	if (!p->held) {
		gate_open();
		return;
	}
	recorder_stats(p->r, &rs);
	d0 = rs.dropped;
	do {
		push_one(p);
		recorder_stats(p->r, &rs);
	} while (rs.dropped - d0 < LAP_DROPS);
	p->forced = rs.dropped - d0;
	recorder_publish(p->r);
	gate_open();
}

static void *produce(void *arg)
{
	struct producer *p = arg;
	unsigned round = 0;

	for (uint32_t s = 0; s < STATIONS; s++)
		recorder_open(p->r, s, 1000 + s, now_ns(), s + 1, NULL, 0);
	recorder_publish(p->r);
	while (p->pushed < TARGET_EVENTS) {
		/* A pass: some thousands of events, then publish. */
		unsigned n = 1000 + (round * 7919u) % 6000;

		for (unsigned k = 0; k < n; k++)
			push_one(p);
		recorder_publish(p->r);
		/* Half way: the writer falls behind, on purpose. */
		if (!p->forced && !p->held && p->pushed >= TARGET_EVENTS / 2)
			lap(p);
		/* Now and then let the writer catch up and fall asleep. */
		if (++round % 64 == 0)
			usleep(2000);
	}
	return NULL;
}

/* The recording at path, whole (then removed); *len its size. */
static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	buf = malloc(*len ? *len : 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, *len, f), *len);
	fclose(f);
	unlink(path);
	return buf;
}

static bool attr(const struct heph_packet *p, const char *name, uint64_t *v)
{
	struct heph_attr a;
	uint32_t pos = 0;

	while (heph_attr_next(p, &pos, &a))
		if (a.name_len == strlen(name) &&
		    !memcmp(a.name, name, a.name_len) && a.type == HEPH_U64) {
			*v = heph_attr_u64(&a, 0);
			return true;
		}
	return false;
}

static void test_lapped_ring_books(void **state)
{
	char path[] = "/tmp/recorder-stress.XXXXXX", err[256];
	struct producer p = {0};
	struct recorder_stats rs;
	uint64_t last_seq[STATIONS] = {0}, intervals = 0, lost = 0;
	uint32_t next_counter[5] = {0}; /* streams 0 and 100..103 */
	struct heph_packet pk;
	pthread_t th;
	size_t len, off = 0;
	uint8_t *buf;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	recorder_test_before_drain = gate_hook;
	p.r = recorder_create(path, STATIONS, NULL, "stress", err, sizeof(err));
	assert_non_null(p.r);
	assert_int_equal(pthread_create(&th, NULL, produce, &p), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	recorder_stop(p.r, now_ns());
	recorder_stats(p.r, &rs);
	assert_false(rs.failed);
	assert_true(recorder_destroy(p.r, err, sizeof(err)));
	recorder_test_before_drain = NULL;
	if (!p.held)
		fail_msg("the writer never reached the gate in %d s",
			 GATE_WAIT_S);

	buf = slurp(path, &len);
	while (off < len) {
		uint64_t seq, addr, count;
		uint32_t k;

		if (heph_decode(buf + off, len - off, &pk, err, sizeof(err)) !=
		    HEPH_OK)
			fail_msg("packet at byte %zu: %s", off, err);
		off += pk.size;
		if (pk.kind != HEPH_EVENT)
			continue;
		k = pk.stream ? pk.stream - 99 : 0;
		assert_true(k < 5);
		assert_int_equal(pk.counter, next_counter[k]++);
		if (pk.desc_len == 4 && !memcmp(pk.desc, "lost", 4)) {
			assert_true(attr(&pk, "count", &count));
			assert_int_equal(pk.stream, 0); /* the ring's drops */
			lost += count;
			continue;
		}
		intervals++;
		assert_true(pk.substream >= 1000 &&
			    pk.substream < 1000 + STATIONS);
		assert_true(attr(&pk, "seq", &seq));
		assert_true(attr(&pk, "addr", &addr));
		k = (uint32_t)(pk.substream - 1000);
		assert_true(seq > last_seq[k]);
		assert_int_equal(addr, mix(k, seq));
		last_seq[k] = seq;
	}
	assert_int_equal(off, len);
	free(buf);
	print_message("pushed %llu, intervals %llu, dropped %llu (%llu while "
		      "the writer was held)\n",
		      (unsigned long long)p.pushed,
		      (unsigned long long)intervals, (unsigned long long)lost,
		      (unsigned long long)p.forced);
	/* The ring was lapped: forced, so on any machine. */
	assert_int_equal(p.forced, LAP_DROPS);
	assert_true(lost >= p.forced);
	/* The books: everything pushed is an interval or a counted loss. */
	assert_int_equal(intervals + lost, p.pushed);
	assert_int_equal(rs.items, p.pushed + STATIONS); /* + the opens */
	assert_int_equal(rs.dropped, lost);
	assert_int_equal(rs.intervals, intervals);
	/* The last seq of every station made it, or was dropped: never more
	 * than was pushed. */
	for (unsigned s = 0; s < STATIONS; s++)
		assert_true(last_seq[s] <= p.seq[s]);
}

static void test_many_streams(void **state)
{
	enum { THREADS = 10000, EACH = 3, TID0 = 5000 };
	static uint32_t next[THREADS];
	char path[] = "/tmp/recorder-streams.XXXXXX", err[256];
	struct recorder_stats rs;
	struct heph_packet pk;
	struct recorder *r;
	size_t len, off = 0, n = 0;
	uint8_t *buf;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	r = recorder_create(path, 1, NULL, "streams", err, sizeof(err));
	assert_non_null(r);
	recorder_open(r, 0, 7, now_ns(), 1, NULL, 0);
	for (uint32_t i = 0; i < THREADS * EACH; i++) {
		struct harvest_event ev = {.probe_id = 7,
					   .ts = now_ns(),
					   .tid = TID0 + i % THREADS,
					   .addr = 0x1000,
					   .seq = i + 1,
					   .is_active = (uint8_t)(i & 1)};

		recorder_event(r, &ev);
		if (i % 1000 == 999)
			recorder_publish(r);
	}
	recorder_stop(r, now_ns());
	recorder_stats(r, &rs);
	assert_int_equal(rs.dropped, 0);
	assert_true(recorder_destroy(r, err, sizeof(err)));
	buf = slurp(path, &len);
	while (off < len) {
		assert_int_equal(heph_decode(buf + off, len - off, &pk, err,
					     sizeof(err)),
				 HEPH_OK);
		off += pk.size;
		if (pk.kind != HEPH_EVENT)
			continue;
		assert_true(pk.stream >= TID0 && pk.stream < TID0 + THREADS);
		assert_int_equal(pk.counter, next[pk.stream - TID0]++);
		n++;
	}
	free(buf);
	assert_int_equal(n, THREADS * EACH);
	for (uint32_t t = 0; t < THREADS; t++)
		assert_int_equal(next[t], EACH);
}

/* The file's event packets: intervals and "lost" ones; false at the first
 * packet that is not whole. */
static bool count_packets(const uint8_t *buf, size_t len, uint64_t *intervals,
			  uint64_t *lost)
{
	struct heph_packet pk;
	char err[160];
	size_t off = 0;

	*intervals = *lost = 0;
	while (off < len) {
		if (heph_decode(buf + off, len - off, &pk, err, sizeof(err)) !=
		    HEPH_OK)
			return false;
		off += pk.size;
		if (pk.kind != HEPH_EVENT)
			continue;
		if (pk.desc_len == 4 && !memcmp(pk.desc, "lost", 4))
			(*lost)++;
		else
			(*intervals)++;
	}
	return true;
}

/*
 * A write fails (RLIMIT_FSIZE, as on a full disk): recording stops, and so
 * do the books.  Events handed over afterwards are neither intervals nor
 * drops, and after recorder_stop (the writer has drained everything) the
 * statistics equal the first ones that said "failed", and the file.
 */
static void test_books_stop_with_the_file(void **state)
{
	enum { LIMIT = 512 << 10, MORE = 200000 };
	char path[] = "/tmp/recorder-full.XXXXXX", err[256];
	struct recorder_stats at_fail, end;
	struct producer p = {0};
	struct rlimit old, lim;
	uint64_t deadline, intervals, lost;
	void (*xfsz)(int);
	size_t len;
	uint8_t *buf;
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	p.r = recorder_create(path, STATIONS, NULL, "full", err, sizeof(err));
	assert_non_null(p.r);
	/* The limit is the process's: ours to restore, SIGXFSZ ignored so a
	 * write past it fails with EFBIG instead of killing us. */
	xfsz = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = (struct rlimit){LIMIT, old.rlim_max};
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (uint32_t s = 0; s < STATIONS; s++)
		recorder_open(p.r, s, 1000 + s, now_ns(), s + 1, NULL, 0);
	deadline = now_ns() + FAIL_WAIT_NS;
	do {
		for (int k = 0; k < 1000; k++)
			push_one(&p);
		recorder_publish(p.r);
		recorder_stats(p.r, &at_fail);
	} while (!at_fail.failed && now_ns() < deadline);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, xfsz);
	if (!at_fail.failed)
		fail_msg("no write failed within %llu s (%llu bytes written)",
			 FAIL_WAIT_NS / 1000000000ull,
			 (unsigned long long)at_fail.bytes);
	assert_non_null(strstr(at_fail.error, "File too large"));
	/* Handed over after the failure: counted nowhere. */
	for (int k = 0; k < MORE; k++) {
		push_one(&p);
		if (k % 1000 == 999)
			recorder_publish(p.r);
	}
	recorder_stop(p.r, now_ns());
	recorder_stats(p.r, &end);
	print_message("failed at %llu bytes, %llu intervals; after %d more "
		      "events and the stop: %llu bytes, %llu intervals, %llu "
		      "items, %llu dropped\n",
		      (unsigned long long)at_fail.bytes,
		      (unsigned long long)at_fail.intervals, MORE,
		      (unsigned long long)end.bytes,
		      (unsigned long long)end.intervals,
		      (unsigned long long)end.items,
		      (unsigned long long)end.dropped);
	assert_true(end.failed);
	assert_int_equal(end.intervals, at_fail.intervals);
	assert_int_equal(end.lost, at_fail.lost);
	assert_int_equal(end.bytes, at_fail.bytes);
	assert_int_equal(end.dropped, at_fail.dropped);
	assert_true(end.items < p.pushed + STATIONS);
	assert_false(recorder_destroy(p.r, err, sizeof(err)));
	assert_non_null(strstr(err, "File too large"));
	/* The books are the file's: whole packets, counted exactly. */
	buf = slurp(path, &len);
	assert_int_equal(len, end.bytes);
	assert_true(len <= LIMIT);
	assert_true(count_packets(buf, len, &intervals, &lost));
	assert_int_equal(intervals, end.intervals);
	assert_int_equal(lost, end.lost);
	assert_true(intervals > 0);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lapped_ring_books),
		cmocka_unit_test(test_many_streams),
		cmocka_unit_test(test_books_stop_with_the_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
