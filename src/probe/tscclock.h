/*
 * tscclock: CLOCK_MONOTONIC nanoseconds read from the TSC (issue 31).
 *
 * cTP timestamps are CLOCK_MONOTONIC ns (docs/WIRE.md), and a
 * clock_gettime costs 29 ns on the reference machine, while rdtsc costs
 * 11.  So when the kernel itself reads the TSC for its clocks (its
 * clocksource is "tsc": the kernel's verdict that the TSC is stable and
 * the same on every CPU), the probe turns TSC counts into the kernel's
 * nanoseconds along a line:
 *
 *	ns = base_ns + ((tsc - base_tsc) * mult >> 32)
 *
 * valid for tsc - base_tsc in [0, span], span being at most
 * TSCCLOCK_RANGE_NS worth of counts and never longer than the baseline
 * the slope was measured over.  A read past the span (or before the
 * base: another CPU's read) takes the slow path, which re-anchors the
 * line at a fresh sample of the clock, so no time is ever carried
 * further than 100 ms from a real clock_gettime.  The slope comes from
 * two samples 10 ms to 400 ms apart; each sample is the narrowest of a
 * few rdtsc / clock_gettime / rdtsc brackets.
 *
 * Reads are lock-free: the line is read under a seqlock (seq even and
 * unchanged around the loads).  Writers take the odd seq with a CAS; a
 * read that finds it odd, or loses its CAS, reads clock_gettime
 * instead: no thread ever waits for another.
 *
 * A thread's timestamps never go backwards: each is clamped to the last
 * one the same thread read (tscclock_last), so a re-anchor that lands
 * below where the old line had got to holds the thread's time still
 * until the clock catches up (nanoseconds: the old line's drift).
 *
 * Otherwise (another clocksource, COROTOP_PROBE_CLOCK=gettime, a CPU
 * without a TSC, or a slope that stopped matching the clock's) every
 * read is a clock_gettime, clamped the same way.  COROTOP_PROBE_CLOCK=tsc
 * uses the TSC whatever the clocksource (tests; a KVM guest whose
 * kvm-clock is the TSC scaled by the host).
 */
#ifndef COROTOP_PROBE_TSCCLOCK_H
#define COROTOP_PROBE_TSCCLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* No time is carried further than this from a clock_gettime. */
#define TSCCLOCK_RANGE_NS (100ull * 1000000ull)

/* The line, read under seq.  Its fields are relaxed atomics: the seqlock's
 * fences order them (tscclock_read, tscclock.c's writer). */
struct tscclock_line {
	_Atomic uint32_t seq; /* odd while a writer changes the line */
	_Atomic uint64_t base_tsc;
	_Atomic uint64_t base_ns;
	_Atomic uint64_t mult; /* ns per count, << 32 */
	_Atomic uint64_t span; /* counts the line holds; 0: no line */
} __attribute__((aligned(64)));

extern struct tscclock_line tscclock_line;
/* The last time this thread read: the clamp. */
extern __thread uint64_t tscclock_last
	__attribute__((tls_model("initial-exec")));

/* Decide from the environment and the kernel's clocksource (once, at
 * load: the probe's constructor). */
void tscclock_init(void);
/* A forked child: a writer that held the line in the parent is gone. */
void tscclock_atfork_child(void);
/* Past the span, before the base, or no line: re-anchor or fall back. */
uint64_t tscclock_slow(void);

/* Whether a clocksource file's text ("tsc\n") and a COROTOP_PROBE_CLOCK
 * value (NULL: unset) let the TSC be used. */
bool tscclock_decide(const char *clocksource, const char *setting);

struct tscclock_stats {
	bool on;	    /* the TSC line is in use */
	uint64_t anchors;   /* lines published (the first one included) */
	uint64_t wide;	    /* samples refused: no bracket narrow enough */
	uint64_t fallbacks; /* reads answered by clock_gettime */
	uint64_t mult;	    /* the line's slope, ns per count << 32 */
};
void tscclock_stats(struct tscclock_stats *out);

/* Test hooks (tests/unit/test-tscclock.c): the next read re-anchors;
 * the line moved by delta ns, as a drifted line would be; the TSC given
 * up, as when the slope stops matching the clock's. */
void tscclock_test_reanchor(void);
void tscclock_test_shift(int64_t delta_ns);
void tscclock_test_off(void);

#if defined(__x86_64__)
/* The line's time now, or 0 when there is no line or it does not cover
 * now.  The TSC is read only when there is a line: off, the read is a
 * clock_gettime alone. */
static inline uint64_t tscclock_read(void)
{
	/* acquire: pairs with the writer's release store of the even seq;
	 * the fence and the second load catch a writer that began
	 * meanwhile (its release fence after the odd seq). */
	uint32_t s =
		atomic_load_explicit(&tscclock_line.seq, memory_order_acquire);
	uint64_t base_tsc = atomic_load_explicit(&tscclock_line.base_tsc,
						 memory_order_relaxed);
	uint64_t base_ns = atomic_load_explicit(&tscclock_line.base_ns,
						memory_order_relaxed);
	uint64_t mult =
		atomic_load_explicit(&tscclock_line.mult, memory_order_relaxed);
	uint64_t span =
		atomic_load_explicit(&tscclock_line.span, memory_order_relaxed);
	uint64_t d;

	atomic_thread_fence(memory_order_acquire);
	if (__builtin_expect(
		    !span || (s & 1) ||
			    atomic_load_explicit(&tscclock_line.seq,
						 memory_order_relaxed) != s,
		    0))
		return 0;
	d = __rdtsc() - base_tsc; /* before the base: wraps, > span */
	if (__builtin_expect(d > span, 0))
		return 0;
	/* d <= span: at most TSCCLOCK_RANGE_NS of counts, so d * mult is
	 * about TSCCLOCK_RANGE_NS << 32 at most, well below 2^64. */
	return base_ns + ((d * mult) >> 32);
}
#endif

/* CLOCK_MONOTONIC ns, never below this thread's last. */
static inline uint64_t tscclock_now(void)
{
	uint64_t now = 0;

#if defined(__x86_64__)
	now = tscclock_read();
#endif
	if (__builtin_expect(!now, 0))
		now = tscclock_slow();
	if (__builtin_expect(now < tscclock_last, 0))
		return tscclock_last;
	tscclock_last = now;
	return now;
}

#endif
