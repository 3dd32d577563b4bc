/*
 * scanner_idle: the proof that a scanned context did not run, which the
 * lost-wakeup lint needs (a saved state that stays the same is no proof:
 * a loop that yields at the same depth saves the same bytes each time).
 * The kernel's accessed bits give it (engine/target/refwatch.c).
 *
 * Watched: a known context parked alone in a stack of its own (a
 * mapping no other known context lies in, not the heap: mmap'd,
 * guard-paged stacks).  An arm, in a refresh's stop, clears the accessed
 * bits of the whole process; each later refresh reads, before its stop,
 * which watched stacks were touched since.  A context whose stack was
 * not touched did not run since the arm: it is idle, and its IN-STATE
 * counts from the arm (model_idle).  One whose stack was touched (it
 * ran, or something read its stack) is not proven any more until the
 * next arm, and its IN-STATE counts from when that was seen: it may
 * have parked again with the same bytes.  An arm comes when a parked context is
 * not watched (new, touched), at most every SCANNER_REARM_NS.
 *
 * Our own reads touch what they read (process_vm_readv marks the page
 * referenced).  So while a watched stack is untouched -- frozen -- no
 * read of ours goes there: a refresh does not re-read the words in it
 * (scanner_plan), and a pass does not scan it (scanner_read refuses):
 * its context is carried over from the last pass (scanner_idle_carry),
 * since memory nobody touched still holds what it held.
 *
 * An arm ends the window the proofs stand on.  To carry an idle
 * context's proof across it, the check is done in the same stop, just
 * before the arm, with nothing running in between (when smaps reads in
 * less than SCANNER_CHECK_IN_STOP_NS: it lengthens the stop); else the
 * proofs start again at the arm.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "engine/model/model.h"
#include "engine/scan/scanner_internal.h"
#include "engine/target/refwatch.h"

#define SCANNER_REARM_NS (4000ull * 1000000ull)
#define SCANNER_CHECK_IN_STOP_NS (1000u * 1000u)
/* A check comes at most once per SCANNER_CHECK_REST times the last
 * one's length: smaps walks every page of the process (50 ms with 10k
 * stacks of their own), and corotop's share of a CPU stays about 5%. */
#define SCANNER_CHECK_REST 20u

bool scanner_frozen(const struct scanner *s, uint64_t addr, uint64_t n)
{
	size_t a = 0, b = s->nfrozen;

	/* Sorted, disjoint: the first that ends after addr. */
	while (a < b) {
		size_t m = a + (b - a) / 2;

		if (s->frozen[m].hi <= addr)
			a = m + 1;
		else
			b = m;
	}
	return a < s->nfrozen && s->frozen[a].lo < addr + n;
}

static int scanner_watch_cmp(const void *a, const void *b, void *ctx)
{
	const struct scanner *s = ctx;
	uint64_t x = s->known[*(const uint32_t *)a].stack_lo;
	uint64_t y = s->known[*(const uint32_t *)b].stack_lo;

	return (x > y) - (x < y);
}

/* The known contexts alone in a stack of their own, parked (resumed
 * ones run), into watch_k, sorted by their stack's start. */
static void scanner_watchable(struct scanner *s)
{
	size_t n = 0, m = 0;

	for (size_t k = 0; k < s->nknown; k++)
		if (!scanner_shared(s, s->known[k].stack_lo))
			s->watch_k[n++] = (uint32_t)k;
	qsort_r(s->watch_k, n, sizeof(*s->watch_k), scanner_watch_cmp, s);
	for (size_t i = 0, j; i < n; i = j) {
		const struct scanner_known *kn = &s->known[s->watch_k[i]];

		for (j = i + 1;
		     j < n && s->known[s->watch_k[j]].stack_lo == kn->stack_lo;
		     j++)
			;
		if (j == i + 1 && !kn->resumed)
			s->watch_k[m++] = s->watch_k[i];
	}
	s->nwatch = m;
}

/* The stacks not to read: those watched and untouched since the arm. */
static void scanner_freeze(struct scanner *s)
{
	size_t n = 0;
	bool same = true;

	for (size_t i = 0; i < s->nwatch; i++) {
		const struct scanner_known *kn = &s->known[s->watch_k[i]];
		struct ctxscan_range r = {kn->stack_lo, kn->stack_hi};

		if (!kn->idle_from || kn->touched)
			continue;
		same = same && n < s->nfrozen && s->frozen[n].lo == r.lo &&
		       s->frozen[n].hi == r.hi;
		s->frozen[n++] = r;
	}
	if (!same || n != s->nfrozen)
		s->planned = false; /* the holders to re-read change */
	s->nfrozen = n;
}

/* Reads smaps for the watched, untouched stacks: each touched since the
 * arm is marked so, each untouched proven idle.  False when it could
 * not be read (nothing changes then). */
static bool scanner_read_refs(struct scanner *s)
{
	size_t n = 0;
	uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);
	int e;

	for (size_t i = 0; i < s->nwatch; i++) {
		const struct scanner_known *kn = &s->known[s->watch_k[i]];

		if (kn->idle_from && !kn->touched)
			s->watch_lo[n++] = kn->stack_lo;
	}
	e = refwatch_read(s->dirfd, s->watch_lo, s->watch_kb, n);
	s->checked_ns = clock_now_ns(CLOCK_MONOTONIC);
	s->check_ns = s->checked_ns - t0;
	if (e)
		return false;
	for (size_t i = 0, j = 0; i < s->nwatch && j < n; i++) {
		struct scanner_known *kn = &s->known[s->watch_k[i]];

		if (!kn->idle_from || kn->touched)
			continue;
		/* In the same order as watch_lo (both by stack). */
		kn->idle = s->watch_kb[j++] == 0;
		kn->touched = !kn->idle;
	}
	return true;
}

void scanner_idle_check(struct scanner *s)
{
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC);
	bool unwatched = false;

	s->arm_due = false;
	if (s->idle_off || s->env.nonblocking || s->dirfd < 0)
		return;
	scanner_watchable(s);
	for (size_t i = 0; i < s->nwatch; i++) {
		const struct scanner_known *kn = &s->known[s->watch_k[i]];

		unwatched = unwatched || !kn->idle_from || kn->touched;
	}
	s->arm_due = s->nwatch &&
		     (!s->armed_ns ||
		      (unwatched && now - s->armed_ns >= SCANNER_REARM_NS));
	/* An arm checks in its stop (when that is quick enough). */
	if (s->armed_ns &&
	    !(s->arm_due && s->check_ns < SCANNER_CHECK_IN_STOP_NS) &&
	    now - s->checked_ns >= SCANNER_CHECK_REST * s->check_ns)
		(void)scanner_read_refs(s);
	scanner_freeze(s);
}

void scanner_idle_stop(struct scanner *s)
{
	bool chain = false;
	uint64_t now;
	int e;

	if (!s->arm_due)
		return;
	/* Nothing runs from this check to the arm: an idle one's proof
	 * goes on across it. */
	if (s->armed_ns && s->check_ns < SCANNER_CHECK_IN_STOP_NS)
		chain = scanner_read_refs(s);
	e = refwatch_arm(s->dirfd);
	now = clock_now_ns(CLOCK_MONOTONIC);
	/* A thread that woke during it may have touched a page between
	 * its two steps, unseen: this arm proves nothing, the next
	 * refresh arms again. */
	if (!e && !threadstop_settled(s->ts)) {
		for (size_t i = 0; i < s->nwatch; i++) {
			struct scanner_known *kn = &s->known[s->watch_k[i]];

			kn->idle_from = 0;
			kn->idle = kn->touched = false;
		}
		s->armed_ns = 0;
		s->nfrozen = 0;
		s->planned = false;
		return;
	}
	for (size_t i = 0; i < s->nwatch; i++) {
		struct scanner_known *kn = &s->known[s->watch_k[i]];

		if (e) { /* no proofs: clear_refs refused */
			kn->idle_from = 0;
			kn->idle = kn->touched = false;
		} else if (!(chain && kn->idle)) {
			kn->idle_from = now;
			kn->idle = kn->touched = kn->touch_sent = false;
		}
	}
	if (e) {
		s->idle_off = true;
		s->nfrozen = 0;
		s->planned = false;
		return;
	}
	s->armed_ns = now;
	s->arms++;
	scanner_freeze(s);
}

void scanner_idle_apply(struct scanner *s, uint64_t now)
{
	uint64_t mono = clock_now_ns(CLOCK_MONOTONIC);
	uint32_t idle = 0;

	for (size_t k = 0; k < s->nknown; k++) {
		struct scanner_known *kn = &s->known[k];
		bool want = kn->idle && !kn->touched && !kn->resumed;

		idle += want;
		/* Touched: it may have run, and parked again with the same
		 * bytes; what it is suspended since is not known before
		 * now. */
		if (kn->touched && !kn->touch_sent && !kn->resumed) {
			model_idle(s->env.model, kn->station, false, now, now);
			kn->touch_sent = true;
			kn->idle_sent = false;
			continue;
		}
		if (want == kn->idle_sent)
			continue;
		/* Since the arm, in the engine's clock. */
		model_idle(
			s->env.model, kn->station, want,
			now - (mono > kn->idle_from ? mono - kn->idle_from : 0),
			now);
		kn->idle_sent = want;
	}
	s->st.idle = idle;
	s->st.arms = s->arms;
	s->st.idle_off = s->idle_off;
}

size_t scanner_idle_carry(struct scanner *s, struct ctxscan_found *out,
			  size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nwatch && n < max; i++) {
		const struct scanner_known *kn = &s->known[s->watch_k[i]];
		uint64_t lo, hi;

		/* Frozen, and its stack still mapped as it was. */
		if (!kn->idle_from || kn->touched ||
		    !scanner_region_of(s, kn->stack_lo, &lo, &hi) ||
		    lo != kn->stack_lo || hi != kn->stack_hi)
			continue;
		out[n++] = (struct ctxscan_found){
			.at = kn->at,
			.sp = kn->sp,
			.fp = kn->fp,
			.pc = kn->pc,
			.pc_at = kn->ucontext || !s->layout
					 ? 0
					 : kn->at + s->layout->pc_at,
			.stack_lo = kn->stack_lo,
			.stack_hi = kn->stack_hi,
			.stored_at = kn->ucontext ? kn->at : kn->hold_at,
			.stored = 1,
			.unsure = kn->unsure,
			.ucontext = kn->ucontext,
		};
	}
	return n;
}
