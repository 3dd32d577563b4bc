/*
 * scanner_idle: the proof that a scanned context did not run, which the
 * lost-wakeup lint needs (a saved state that stays the same is no proof:
 * a loop that yields at the same depth saves the same bytes each time).
 * The kernel's accessed bits give it (engine/target/refwatch.c).
 *
 * Watched: the known coroutines parked in a mapping that is not the
 * heap (mmap'd, guard-paged stacks; a large malloc'd one, which glibc
 * mmaps), none of that mapping's contexts running, none that a
 * Boost.Fiber list holds (its lists prove it).  The proof is the
 * mapping's: if it was not touched, none of the contexts in it ran (one
 * that holds several errs toward no proof).
 *
 * An arm clears the accessed bits of the whole process and flushes its
 * TLBs; from its end on, every touch is seen, so it needs no stop (a
 * touch during it is before the proof starts).  Each later refresh reads
 * smaps before its stop.  A context whose stack was not touched did not
 * run since the arm: it is idle, and its IN-STATE counts from the arm
 * (model_idle).  One whose stack was touched (it ran, or something read
 * its stack) is not proven any more until the next arm, and its IN-STATE
 * counts from when that was seen: it may have parked again with the
 * same bytes.  An arm comes when a watched context is unproven (new,
 * touched), SCANNER_REARM_NS after the last at the earliest, backing off
 * while arms prove nothing.
 *
 * Our own reads touch what they read (process_vm_readv marks the page
 * referenced).  So while a watched stack is untouched -- frozen -- no
 * read of ours goes there: a refresh does not re-read the words in it
 * (scanner_plan), and a pass does not scan it (scanner_read refuses):
 * its context is carried over from the last pass (scanner_idle_carry),
 * since memory nobody touched still holds what it held.
 *
 * An arm ends the window the proofs stand on.  To carry an idle
 * context's proof across it, the check and the arm are done in one
 * refresh's stop, with nothing running in between -- when both take
 * less than SCANNER_CHECK_IN_STOP_NS together, as they lengthen the
 * stop; else such an arm waits SCANNER_REARM_MAX_NS, and the proofs
 * start again at it.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "engine/model/model.h"
#include "engine/scan/scanner_internal.h"
#include "engine/target/refwatch.h"

/* An arm walks every page of the process twice (about 5 ms with 10k
 * mappings, in the kernel, the process running on): the next comes
 * SCANNER_REARM_NS after it, twice as late each time one proves
 * nothing, up to SCANNER_REARM_MAX_NS; and when the proofs it would end
 * cannot be carried across, not before SCANNER_REARM_MAX_NS. */
#define SCANNER_REARM_NS (4000ull * 1000000ull)
#define SCANNER_REARM_MAX_NS (64000ull * 1000000ull)
#define SCANNER_CHECK_IN_STOP_NS (1000u * 1000u)
/* A check comes at most once per SCANNER_CHECK_REST times the last
 * one's length: smaps walks every page of the process (50 ms with 10k
 * stacks of their own), and corotop's share of a CPU stays about 5%. */
#define SCANNER_CHECK_REST 20u

bool scanner_frozen(const struct scanner *s, uint64_t addr, uint64_t n)
{
	/* Sorted, disjoint: the first that ends after addr. */
	size_t a = scanner_ends_after(s->frozen, s->nfrozen, addr);

	return a < s->nfrozen && s->frozen[a].lo < addr + n;
}

static int scanner_watch_cmp(const void *a, const void *b, void *ctx)
{
	const struct scanner *s = ctx;
	uint64_t x = s->known[*(const uint32_t *)a].stack_lo;
	uint64_t y = s->known[*(const uint32_t *)b].stack_lo;

	return (x > y) - (x < y);
}

/* The end of watch_k[i]'s group: the contexts in the same stack. */
static size_t scanner_group_end(const struct scanner *s, size_t i)
{
	size_t j = i + 1;

	while (j < s->nwatch && s->known[s->watch_k[j]].stack_lo ==
					s->known[s->watch_k[i]].stack_lo)
		j++;
	return j;
}

/* The known contexts parked in a mapping that is not the heap, where
 * none runs (resumed), into watch_k, sorted by their stack's start:
 * one group per mapping. */
static void scanner_watchable(struct scanner *s)
{
	size_t m = 0;

	s->nwatch = 0;
	for (size_t k = 0; k < s->nknown; k++)
		if (!scanner_shared(s, s->known[k].stack_lo) &&
		    !s->known[k].listed && s->known[k].judged)
			s->watch_k[s->nwatch++] = (uint32_t)k;
	qsort_r(s->watch_k, s->nwatch, sizeof(*s->watch_k), scanner_watch_cmp,
		s);
	for (size_t i = 0, j; i < s->nwatch; i = j) {
		bool runs = false;

		j = scanner_group_end(s, i);
		for (size_t g = i; g < j; g++)
			runs = runs || s->known[s->watch_k[g]].resumed;
		for (size_t g = i; g < j && !runs; g++)
			s->watch_k[m++] = s->watch_k[g];
	}
	s->nwatch = m;
}

/* Whether group [i, j) is being checked (some context of it watched
 * since the arm, not touched), or untouched throughout (all). */
static bool scanner_group(const struct scanner *s, size_t i, size_t j, bool all)
{
	for (size_t g = i; g < j; g++) {
		const struct scanner_known *kn = &s->known[s->watch_k[g]];
		bool open = kn->idle_from && !kn->touched;

		if (open != all)
			return open;
	}
	return all;
}

/* The stacks not to read: those whose every context was watched since
 * the arm and none touched. */
static void scanner_freeze(struct scanner *s)
{
	size_t n = 0;
	bool same = true;

	for (size_t i = 0, j; i < s->nwatch; i = j) {
		const struct scanner_known *kn = &s->known[s->watch_k[i]];
		struct ctxscan_region r = {kn->stack_lo, kn->stack_hi, 0};

		j = scanner_group_end(s, i);
		if (!scanner_group(s, i, j, true))
			continue;
		same = same && n < s->nfrozen && s->frozen[n].lo == r.lo &&
		       s->frozen[n].hi == r.hi;
		s->frozen[n++] = r;
	}
	if (!same || n != s->nfrozen)
		s->planned = false; /* the holders to re-read change */
	s->nfrozen = n;
}

/* Reads smaps for the stacks being checked: the contexts of one touched
 * since the arm are marked so, those of one untouched proven idle.
 * False when it could not be read (nothing changes then). */
static bool scanner_read_refs(struct scanner *s)
{
	size_t n = 0;
	uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);
	int e;

	for (size_t i = 0, j; i < s->nwatch; i = j) {
		j = scanner_group_end(s, i);
		if (scanner_group(s, i, j, false)) {
			s->watch_lo[n] = s->known[s->watch_k[i]].stack_lo;
			s->watch_hi[n++] = s->known[s->watch_k[i]].stack_hi;
		}
	}
	e = refwatch_read(s->dirfd, s->watch_lo, s->watch_hi, s->watch_kb, n);
	s->checked_ns = clock_now_ns(CLOCK_MONOTONIC);
	s->check_ns = s->checked_ns - t0;
	if (e)
		return false;
	/* In the same order as watch_lo (both by stack). */
	for (size_t i = 0, j, w = 0; i < s->nwatch && w < n; i = j) {
		bool idle;

		j = scanner_group_end(s, i);
		if (!scanner_group(s, i, j, false))
			continue;
		idle = s->watch_kb[w++] == 0;
		for (size_t g = i; g < j; g++) {
			struct scanner_known *kn = &s->known[s->watch_k[g]];

			if (!idle) {
				kn->touched = true;
				kn->idle = false;
			} else if (kn->idle_from && !kn->touched) {
				kn->idle = true;
				s->proved = true;
			}
		}
	}
	return true;
}

/* The arm, at `now` (its end, CLOCK_MONOTONIC): every watched context's
 * proof starts there, but an idle one's when chain (checked just
 * before, with nothing run since: its proof goes on). */
static void scanner_arm(struct scanner *s, bool chain)
{
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC);
	int e = refwatch_arm(s->dirfd);

	s->arm_ns = clock_now_ns(CLOCK_MONOTONIC) - now;
	now += s->arm_ns;
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
	/* Back off while arms prove nothing. */
	s->rearm_ns = s->proved || !s->armed_ns ? SCANNER_REARM_NS
		      : s->rearm_ns < SCANNER_REARM_MAX_NS / 2
			      ? 2 * s->rearm_ns
			      : SCANNER_REARM_MAX_NS;
	s->proved = false;
	s->armed_ns = now;
	s->arms++;
	scanner_freeze(s);
}

void scanner_idle_check(struct scanner *s)
{
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC);
	bool unwatched = false, idle = false, due, quick;

	s->arm_due = s->arm_after = false;
	if (s->idle_off || s->env.nonblocking || s->dirfd < 0)
		return;
	scanner_watchable(s);
	if (s->armed_ns &&
	    now - s->checked_ns >= SCANNER_CHECK_REST * s->check_ns)
		(void)scanner_read_refs(s);
	for (size_t i = 0; i < s->nwatch; i++) {
		const struct scanner_known *kn = &s->known[s->watch_k[i]];

		unwatched = unwatched || !kn->idle_from || kn->touched;
		idle = idle || kn->idle;
	}
	/* Carrying the idle ones' proofs across takes a check and the arm
	 * in a stop: only when both are quick. */
	quick = s->check_ns + s->arm_ns < SCANNER_CHECK_IN_STOP_NS;
	due = s->nwatch &&
	      (!s->armed_ns ||
	       (unwatched && now - s->armed_ns >= s->rearm_ns &&
		(quick || !idle || now - s->armed_ns >= SCANNER_REARM_MAX_NS)));
	if (due && idle && quick)
		s->arm_due = true; /* in the stop (scanner_idle_stop) */
	else if (due)
		s->arm_after = true; /* once the stop is over */
	scanner_freeze(s);
}

void scanner_idle_after(struct scanner *s)
{
	if (s->arm_after)
		scanner_arm(s, false);
	s->arm_after = false;
}

void scanner_idle_stop(struct scanner *s)
{
	if (!s->arm_due)
		return;
	/* Nothing runs from this check to the arm: an idle one's proof
	 * goes on across it. */
	if (!scanner_read_refs(s))
		return;
	scanner_arm(s, true);
	/* A thread that woke meanwhile may have touched a page between
	 * the check and the arm, unseen: the idle ones' proofs start at
	 * the arm, as the others'. */
	if (!threadstop_settled(s->ts))
		for (size_t i = 0; i < s->nwatch; i++) {
			struct scanner_known *kn = &s->known[s->watch_k[i]];

			if (kn->idle_from && kn->idle_from != s->armed_ns) {
				kn->idle_from = s->armed_ns;
				kn->idle = kn->touch_sent = false;
			}
		}
}

void scanner_idle_apply(struct scanner *s, uint64_t now)
{
	uint64_t mono = clock_now_ns(CLOCK_MONOTONIC);
	uint32_t idle = 0;

	for (size_t k = 0; k < s->nknown; k++) {
		struct scanner_known *kn = &s->known[k];
		bool want = kn->idle; /* never with touched or resumed */
		const struct model_coro *c =
			model_station_coro(s->env.model, kn->station);

		/* Only a coroutine is judged by the lint: a dispatcher or
		 * a thread's root is not watched (it would only cost arms). */
		kn->judged = c && c->kind == MODEL_COROUTINE;

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
	s->st.arm_ns = s->arm_ns;
	s->st.idle_off = s->idle_off;
}

static int scanner_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

size_t scanner_idle_carry(struct scanner *s, struct ctxscan_found *found,
			  size_t nfound, size_t max)
{
	uint64_t *ats = malloc((nfound ? nfound : 1) * sizeof(*ats));
	size_t n = 0;

	if (!ats)
		return 0; /* not carried: found again once touched */
	/* Not one the pass found itself. */
	for (size_t i = 0; i < nfound; i++)
		ats[i] = found[i].at;
	qsort(ats, nfound, sizeof(*ats), scanner_u64_cmp);
	for (size_t i = 0; i < s->nwatch && nfound + n < max; i++) {
		const struct scanner_known *kn = &s->known[s->watch_k[i]];
		uint64_t lo, hi;

		/* In a frozen stack still mapped as it was. */
		if (!scanner_frozen(s, kn->stack_lo, 1) ||
		    !scanner_region_of(s, kn->stack_lo, &lo, &hi) ||
		    lo != kn->stack_lo || hi != kn->stack_hi ||
		    bsearch(&kn->at, ats, nfound, sizeof(*ats),
			    scanner_u64_cmp))
			continue;
		found[nfound + n++] = (struct ctxscan_found){
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
	free(ats);
	return n;
}
