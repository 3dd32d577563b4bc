/*
 * tscclock: the line's writer (tscclock.h has the concept).
 *
 * The line is published in three steps:
 *  - calibrating: the first slow read keeps a sample (its anchor) and
 *    answers with clock_gettime, as every read does until one comes
 *    TSCCLOCK_CALIBRATE_NS later; that one measures the slope over the
 *    time between, publishes the first line and the TSC is on;
 *  - re-anchoring: a read past the span takes a fresh sample and
 *    publishes a line based there; it measures the slope again from the
 *    anchor whenever the anchor is as old as the slope's baseline (up to
 *    TSCCLOCK_RANGE_NS; tracking the clock's own slew), and moves the
 *    anchor there once it is TSCCLOCK_MOVE_NS old (tscclock_write);
 *  - off: a slope more than TSCCLOCK_SLOPE_PPM from the last one, or
 *    counts that went backwards between samples, mean the TSC no longer
 *    tracks the clock (the kernel changed its clocksource, a VM moved):
 *    the line is withdrawn and every read is a clock_gettime.
 *
 * Whoever wins the CAS of the even seq to odd is the writer; the anchor
 * and the counters below are written only while holding it (the CAS's
 * acquire pairs with the previous writer's release of the even seq).
 */
#define _GNU_SOURCE
#include "probe/tscclock.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The slope is first measured over at least this long. */
#define TSCCLOCK_CALIBRATE_NS (10ull * 1000000ull)
/* Samples taken for one anchor; the narrowest bracket is kept. */
#define TSCCLOCK_TRIES 4
/* A bracket wider than this (preempted between the reads) is refused:
 * the line would be off by up to half of it. */
#define TSCCLOCK_WIDE_NS 500u
/* The anchor moves once this old: slopes are measured over 0.1-0.4 s. */
#define TSCCLOCK_MOVE_NS (4 * TSCCLOCK_RANGE_NS)
/* Two slopes further apart than this: the TSC is given up. */
#define TSCCLOCK_SLOPE_PPM 1000u
/* After a refused sample, reads are clock_gettimes for this long. */
#define TSCCLOCK_HOLD_NS (1000u * 1000u)

enum tscclock_mode { TSCCLOCK_OFF, TSCCLOCK_CALIBRATING, TSCCLOCK_ON };

struct tscclock_line tscclock_line;
__thread uint64_t tscclock_last __attribute__((tls_model("initial-exec")));

/* The writer's own state, in a line of its own (readers never look). */
static struct {
	/* relaxed: read without the seq by tscclock_slow's first test and
	 * by tscclock_stats; written by the writer (or at init). */
	_Atomic int mode;
	/* relaxed, read without the seq by tscclock_slow: until then, a
	 * read is a clock_gettime, no sample (calibrating, or after a
	 * refused sample); 0: none. */
	_Atomic uint64_t hold_until;
	uint64_t anchor_tsc, anchor_ns; /* 0: none yet */
	uint64_t baseline; /* ns the slope in use was measured over */
	/* relaxed counters, read by tscclock_stats */
	_Atomic uint64_t anchors, wide, fallbacks;
} tscclock_w __attribute__((aligned(64)));

static uint64_t tscclock_gettime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool tscclock_decide(const char *clocksource, const char *setting)
{
	/* "tsc": the TSC even where the kernel chose another clocksource
	 * (tests, and a guest whose kvm-clock reads the TSC itself); its
	 * slope is still checked at every anchor.  "gettime", or anything
	 * else set: never. */
	if (setting)
		return strcmp(setting, "tsc") == 0;
	return clocksource && strncmp(clocksource, "tsc", 3) == 0 &&
	       (clocksource[3] == '\n' || clocksource[3] == '\0');
}

void tscclock_init(void)
{
	char text[32] = "";
	int fd;
	ssize_t n = -1;

	/* No line, no anchor: calibrated from scratch (at load, or again
	 * in a test, no reader running). */
	atomic_store_explicit(&tscclock_line.span, 0, memory_order_relaxed);
	atomic_store_explicit(&tscclock_w.hold_until, 0, memory_order_relaxed);
	tscclock_w.anchor_tsc = tscclock_w.anchor_ns = 0;
	tscclock_w.baseline = 0;

#if defined(__x86_64__)
	fd = open("/sys/devices/system/clocksource/clocksource0/"
		  "current_clocksource",
		  O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, text, sizeof(text) - 1);
		close(fd);
	}
	text[n > 0 ? n : 0] = '\0';
	/* secure_getenv: a set-user-ID program's environment is not its
	 * user's to set. */
	if (tscclock_decide(text, secure_getenv("COROTOP_PROBE_CLOCK"))) {
		atomic_store_explicit(&tscclock_w.mode, TSCCLOCK_CALIBRATING,
				      memory_order_relaxed);
		return;
	}
#else
	(void)text;
	(void)fd;
	(void)n;
#endif
	atomic_store_explicit(&tscclock_w.mode, TSCCLOCK_OFF,
			      memory_order_relaxed);
}

void tscclock_atfork_child(void)
{
	uint32_t s =
		atomic_load_explicit(&tscclock_line.seq, memory_order_relaxed);

	/* Only this thread is left: a writer caught in the fork is gone,
	 * and its line half-written.  relaxed: nobody else reads yet. */
	if (s & 1) {
		atomic_store_explicit(&tscclock_line.span, 0,
				      memory_order_relaxed);
		atomic_store_explicit(&tscclock_line.seq, s + 1,
				      memory_order_relaxed);
	}
}

#if defined(__x86_64__)
/* A sample: the clock, and the count at the middle of the narrowest
 * bracket of TSCCLOCK_TRIES; its width in *width. */
static uint64_t tscclock_sample(uint64_t *tsc, uint64_t *width)
{
	uint64_t best_ns = 0;

	*width = UINT64_MAX;
	for (int i = 0; i < TSCCLOCK_TRIES; i++) {
		uint64_t t1 = __rdtsc();
		uint64_t ns = tscclock_gettime();
		uint64_t t2 = __rdtsc();

		if (t2 >= t1 && t2 - t1 < *width) {
			*width = t2 - t1;
			*tsc = t1 + (t2 - t1) / 2;
			best_ns = ns;
		}
	}
	return best_ns;
}

/* ns per count << 32 over (t0, n0) .. (t1, n1); 0 when not sane (counts
 * backwards, or a TSC slower than 100 MHz or faster than 100 GHz). */
static uint64_t tscclock_slope(uint64_t t0, uint64_t n0, uint64_t t1,
			       uint64_t n1)
{
	unsigned __int128 m;

	if (t1 <= t0 || n1 <= n0)
		return 0;
	m = ((unsigned __int128)(n1 - n0) << 32) / (t1 - t0);
	if (m > (10ull << 32) || m < (1ull << 32) / 100)
		return 0;
	return (uint64_t)m;
}

/* The writer gives the TSC up: no line any more. */
static void tscclock_give_up(void)
{
	atomic_store_explicit(&tscclock_w.mode, TSCCLOCK_OFF,
			      memory_order_relaxed);
	atomic_store_explicit(&tscclock_line.span, 0, memory_order_relaxed);
}

/*
 * Holding the odd seq: a new line, or none.  The time to answer with in
 * *now.  The slope is measured from the anchor over b = its age: first
 * at b >= TSCCLOCK_CALIBRATE_NS, then again whenever b reaches the
 * baseline the slope in use was measured over (up to TSCCLOCK_RANGE_NS),
 * and the anchor moves once b reaches TSCCLOCK_MOVE_NS.  A line spans no
 * longer than its slope's baseline: a sample is off by up to half
 * TSCCLOCK_WIDE_NS, so the slope by up to TSCCLOCK_WIDE_NS over the
 * baseline, and the line by at most 1.5 TSCCLOCK_WIDE_NS at its end.
 */
static void tscclock_write(uint64_t *now)
{
	uint64_t t = 0, width, ns = tscclock_sample(&t, &width);
	uint64_t mult =
		atomic_load_explicit(&tscclock_line.mult, memory_order_relaxed);
	uint64_t b, limit;

	*now = ns;
	atomic_store_explicit(&tscclock_w.hold_until, 0, memory_order_relaxed);
	/* Too wide a bracket: in counts, at the slope known (or a 1 GHz
	 * one before the first). */
	if (width >
	    ((uint64_t)TSCCLOCK_WIDE_NS << 32) / (mult ? mult : 1ull << 32)) {
		atomic_fetch_add_explicit(&tscclock_w.wide, 1,
					  memory_order_relaxed);
		atomic_store_explicit(&tscclock_w.hold_until,
				      ns + TSCCLOCK_HOLD_NS,
				      memory_order_relaxed);
		return;
	}
	if (!tscclock_w.anchor_ns || ns <= tscclock_w.anchor_ns) {
		tscclock_w.anchor_tsc = t;
		tscclock_w.anchor_ns = ns;
		tscclock_w.baseline = 0;
		atomic_store_explicit(&tscclock_w.hold_until,
				      ns + TSCCLOCK_CALIBRATE_NS,
				      memory_order_relaxed);
		return;
	}
	b = ns - tscclock_w.anchor_ns;
	limit = tscclock_w.baseline < TSCCLOCK_RANGE_NS ? tscclock_w.baseline
							: TSCCLOCK_RANGE_NS;
	if (b < TSCCLOCK_CALIBRATE_NS && !tscclock_w.baseline) {
		atomic_store_explicit(&tscclock_w.hold_until,
				      tscclock_w.anchor_ns +
					      TSCCLOCK_CALIBRATE_NS,
				      memory_order_relaxed);
		return;
	}
	if (b >= TSCCLOCK_CALIBRATE_NS && b >= limit) {
		uint64_t fresh = tscclock_slope(tscclock_w.anchor_tsc,
						tscclock_w.anchor_ns, t, ns);
		uint64_t room = mult / 1000000 * TSCCLOCK_SLOPE_PPM;

		if (!fresh ||
		    (mult && (fresh > mult + room || fresh < mult - room))) {
			tscclock_give_up();
			return;
		}
		mult = fresh;
		tscclock_w.baseline = b;
		atomic_store_explicit(&tscclock_w.mode, TSCCLOCK_ON,
				      memory_order_relaxed);
		if (b >= TSCCLOCK_MOVE_NS) {
			tscclock_w.anchor_tsc = t;
			tscclock_w.anchor_ns = ns;
		}
	}
	limit = tscclock_w.baseline < TSCCLOCK_RANGE_NS ? tscclock_w.baseline
							: TSCCLOCK_RANGE_NS;
	atomic_store_explicit(&tscclock_line.base_tsc, t, memory_order_relaxed);
	atomic_store_explicit(&tscclock_line.base_ns, ns, memory_order_relaxed);
	atomic_store_explicit(&tscclock_line.mult, mult, memory_order_relaxed);
	atomic_store_explicit(&tscclock_line.span, (limit << 32) / mult,
			      memory_order_relaxed);
	atomic_fetch_add_explicit(&tscclock_w.anchors, 1, memory_order_relaxed);
}
#endif

uint64_t tscclock_slow(void)
{
#if defined(__x86_64__)
	uint32_t s;
	uint64_t now, hold;

	if (atomic_load_explicit(&tscclock_w.mode, memory_order_relaxed) ==
	    TSCCLOCK_OFF)
		return tscclock_gettime();
	hold = atomic_load_explicit(&tscclock_w.hold_until,
				    memory_order_relaxed);
	if (hold && (now = tscclock_gettime()) < hold)
		return now; /* no sample yet: it would not be used */
	s = atomic_load_explicit(&tscclock_line.seq, memory_order_relaxed);
	/* acquire: pairs with the last writer's release of the even seq
	 * (its anchor and counters); relaxed on failure: nothing read. */
	if ((s & 1) || !atomic_compare_exchange_strong_explicit(
			       &tscclock_line.seq, &s, s + 1,
			       memory_order_acquire, memory_order_relaxed)) {
		atomic_fetch_add_explicit(&tscclock_w.fallbacks, 1,
					  memory_order_relaxed);
		return tscclock_gettime(); /* another thread writes it */
	}
	/* release: the odd seq before the line's stores, for a reader that
	 * sees one of them (pairs with tscclock_read's acquire fence). */
	atomic_thread_fence(memory_order_release);
	tscclock_write(&now);
	/* release: the line before the even seq (pairs with
	 * tscclock_read's acquire load of it). */
	atomic_store_explicit(&tscclock_line.seq, s + 2, memory_order_release);
	return now;
#else
	return tscclock_gettime();
#endif
}

void tscclock_stats(struct tscclock_stats *out)
{
	out->on = atomic_load_explicit(&tscclock_w.mode,
				       memory_order_relaxed) == TSCCLOCK_ON;
	out->anchors =
		atomic_load_explicit(&tscclock_w.anchors, memory_order_relaxed);
	out->wide =
		atomic_load_explicit(&tscclock_w.wide, memory_order_relaxed);
	out->fallbacks = atomic_load_explicit(&tscclock_w.fallbacks,
					      memory_order_relaxed);
	out->mult =
		atomic_load_explicit(&tscclock_line.mult, memory_order_relaxed);
}

/* The hooks change the line as a writer: under the odd seq. */
static bool tscclock_test_lock(uint32_t *s)
{
	*s = atomic_load_explicit(&tscclock_line.seq, memory_order_relaxed);
	/* acquire / release as in tscclock_slow. */
	if ((*s & 1) || !atomic_compare_exchange_strong_explicit(
				&tscclock_line.seq, s, *s + 1,
				memory_order_acquire, memory_order_relaxed))
		return false;
	atomic_thread_fence(memory_order_release);
	return true;
}

static void tscclock_test_unlock(uint32_t s)
{
	/* release: pairs with tscclock_read's acquire load. */
	atomic_store_explicit(&tscclock_line.seq, s + 2, memory_order_release);
}

void tscclock_test_reanchor(void)
{
	uint32_t s;

	if (!tscclock_test_lock(&s))
		return;
	atomic_store_explicit(&tscclock_line.span, 0, memory_order_relaxed);
	tscclock_test_unlock(s);
}

void tscclock_test_shift(int64_t delta_ns)
{
	uint32_t s;
	uint64_t b;

	if (!tscclock_test_lock(&s))
		return;
	b = atomic_load_explicit(&tscclock_line.base_ns, memory_order_relaxed);
	atomic_store_explicit(&tscclock_line.base_ns, b + (uint64_t)delta_ns,
			      memory_order_relaxed);
	tscclock_test_unlock(s);
}

void tscclock_test_off(void)
{
	uint32_t s;

	if (!tscclock_test_lock(&s))
		return;
	atomic_store_explicit(&tscclock_w.mode, TSCCLOCK_OFF,
			      memory_order_relaxed);
	atomic_store_explicit(&tscclock_line.span, 0, memory_order_relaxed);
	tscclock_test_unlock(s);
}
