/*
 * scanner_refresh: a scanned live process between passes -- every
 * second, its running threads stopped for the time it takes to read
 * their registers and re-read the known contexts' holders
 * (engine/target/threadstop.c), then let go; then, under the engine's
 * lock, every thread a running row of its own and each known context
 * where its holder says it is.
 *
 * Holders.  A known context's holder is the word that held its
 * fcontext_t when a pass found it (a Boost.Fiber's own context::c_, its
 * scheduler's lists say which; else the lowest word that held it), or,
 * for a ucontext_t, the return address swapcontext left below its saved
 * sp.  In the stop, as many holders as SCANNER_READ_NS allows are read
 * (sorted by address: consecutive ones, an array of them, in one read),
 * round robin from where the last refresh stopped, and for each holder
 * that holds another value, the saved area that value may be (its pc,
 * frame pointer and MXCSR slots).
 *
 * Fates.  A holder that still holds its context: parked where it was.
 * Emptied (a Boost.Fiber's while it runs), or a ucontext resumed:
 * running -- on the thread whose sp lies in its stack's mapping when
 * that mapping holds no other known context (a stack of its own), then
 * walked from that thread's registers; else its thread unknown.  A
 * holder that holds a saved area passing the scan's checks (in a
 * writable region the last pass read): parked there, walked again.
 * Anything else -- a holder not read this refresh (the round robin), one
 * that could not be read, one that holds something else -- leaves it
 * as it was, until a later refresh or the next pass.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "engine/model/event.h"
#include "engine/model/model.h"
#include "engine/scan/scanner_internal.h"
#include "engine/target/procmem.h"

static int scanner_word_cmp(const void *a, const void *b)
{
	const struct scanner_word *x = a, *y = b;

	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* The holders a refresh re-reads, sorted by address (outside any stop:
 * a sort of 100k words takes milliseconds), so that consecutive ones
 * (an array of them) are read as one. */
static void scanner_plan(struct scanner *s)
{
	size_t n = 0;

	/* Not a word in a stack untouched since the arm: reading it would
	 * touch it (scanner_idle.c). */
	for (size_t k = 0; k < s->nknown; k++)
		if (!scanner_frozen(s, s->known[k].hold_at, 8))
			s->plan[n++] = (struct scanner_word){
				.addr = s->known[k].hold_at, .k = (uint32_t)k};
	qsort(s->plan, n, sizeof(*s->plan), scanner_word_cmp);
	for (size_t w = 0; w < n; w++)
		s->addrs[w] = s->plan[w].addr;
	s->nplan = n;
	s->planned = true;
}

/* Holder i of the plan, just read: its word kept for its context, and
 * the saved area it may point to listed as a candidate (when it holds
 * another value than its context's). */
static void scanner_candidate(struct scanner *s, size_t i)
{
	const struct fcsave_layout *l = s->layout;
	uint32_t k = s->plan[i].k;
	const struct scanner_known *kn = &s->known[k];
	uint64_t v = s->got[i], lo, hi;

	s->words[k] = v;
	s->fate[k] = !s->got_ok[i]	  ? SCANNER_UNKNOWN
		     : v == kn->hold_val  ? SCANNER_PARKED
		     : !v || kn->ucontext ? SCANNER_RUNNING
					  : SCANNER_UNKNOWN;
	/* Another value: a saved area there, if it lies in a writable
	 * region the last pass read (nothing else is read in the stop). */
	if (!l || s->fate[k] != SCANNER_UNKNOWN || !s->got_ok[i] || (v & 7) ||
	    !scanner_region_of(s, v, &lo, &hi) || v + l->size > hi ||
	    scanner_frozen(s, v, l->size))
		return;
	s->cand_addrs[3 * s->ncand] = v + l->pc_at;
	s->cand_addrs[3 * s->ncand + 1] = v + l->fp_at;
	s->cand_addrs[3 * s->ncand + 2] =
		v + (l->has_mxcsr ? l->mxcsr_at : l->pc_at);
	s->cand[s->ncand++] = k;
}

/* The refresh's reads, in the stop: the holders from the cursor on, a
 * chunk at a time, each chunk's holders then the saved areas those that
 * hold another value may point to (their candidates), for as long as
 * SCANNER_READ_NS allows (all of them, unless there are thousands, each
 * on a page of its own).  The next refresh goes on from where this one
 * stopped, so every holder is read in turn; the range read is
 * [s->from, s->from + s->nread) of the plan, wrapping.  again: the same
 * range once more (a thread woke meanwhile), whatever it takes. */
static void scanner_reread(struct scanner *s, bool again)
{
	uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);
	size_t n = s->nplan, done = 0;

	if (!again) {
		s->from = n ? s->cursor % n : 0;
		s->nread = n;
	}
	s->ncand = 0;
	while (done < s->nread) {
		size_t at = (s->from + done) % n;
		size_t k = s->nread - done, c0 = s->ncand;

		if (k > SCANNER_READ_CHUNK)
			k = SCANNER_READ_CHUNK;
		if (k > n - at)
			k = n - at;
		(void)procmem_read_words(s->env.pm, s->addrs + at, s->got + at,
					 s->got_ok + at, k);
		for (size_t i = at; i < at + k; i++)
			scanner_candidate(s, i);
		(void)procmem_read_words(s->env.pm, s->cand_addrs + 3 * c0,
					 s->cand_words + 3 * c0,
					 s->cand_ok + 3 * c0,
					 3 * (s->ncand - c0));
		done += k;
		if (!again &&
		    clock_now_ns(CLOCK_MONOTONIC) - t0 >= SCANNER_READ_NS)
			s->nread = done; /* the rest at the next refresh */
	}
}

/* Which known contexts run on a thread: the one known context whose
 * region holds the thread's sp, when that region holds only one (a
 * stack of its own, as mmap'd stacks are; not the heap, where many
 * contexts' stacks lie, nor a static array of several). */
static void scanner_runs_on(struct scanner *s)
{
	memset(s->ran_on, 0, s->nknown * sizeof(*s->ran_on));
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct threadstop_thread *t = &s->threads[i];
		uint64_t lo, hi;
		size_t n = 0, which = 0;

		if (!t->sp || !scanner_region_of(s, t->sp, &lo, &hi) ||
		    scanner_shared(s, lo))
			continue;
		for (size_t k = 0; k < s->nknown && n < 2; k++)
			if (s->known[k].stack_lo == lo)
				n++, which = k;
		if (n == 1)
			s->ran_on[which] = t->tid;
	}
}

/* Candidate c (scanner_reread: a holder's new value, its words read in
 * the stop), checked as the scan checks a saved area (in a writable
 * region, its MXCSR's reserved bits clear, its pc after a call): where
 * its known context parks now, into *f. */
static bool scanner_area(struct scanner *s, size_t c, struct ctxscan_found *f)
{
	const struct fcsave_layout *l = s->layout;
	const struct scanner_known *kn = &s->known[s->cand[c]];
	uint64_t at = s->words[s->cand[c]], lo, hi;
	uint64_t pc = s->cand_words[3 * c], fp = s->cand_words[3 * c + 1];
	uint64_t mxcsr = s->cand_words[3 * c + 2];

	if (!s->cand_ok[3 * c] || !s->cand_ok[3 * c + 1] ||
	    !s->cand_ok[3 * c + 2])
		return false;
	if (!l || !scanner_region_of(s, at, &lo, &hi) || at + l->size > hi ||
	    (l->has_mxcsr && (uint32_t)mxcsr >> 16) ||
	    !scanner_after_call(s, pc))
		return false;
	*f = (struct ctxscan_found){
		.at = at,
		.sp = at + l->sp_after,
		.fp = fp,
		.pc = pc,
		.pc_at = at + l->pc_at,
		.stack_lo = lo,
		.stack_hi = hi,
		.stored_at = kn->hold_at,
		.stored = 1,
		.unsure = kn->unsure,
	};
	return true;
}

void scanner_refresh(struct scanner *s)
{
	const struct threadstop_thread *t;
	int rounds = 0;
	size_t n;

	if (s->core || s->dirfd < 0)
		return;
	if (!s->ts) {
		s->ts = threadstop_create(s->pid, s->dirfd, s->env.nonblocking);
		if (!s->ts)
			return;
	}
	scanner_idle_check(s); /* may change what the plan reads */
	if (!s->planned)
		scanner_plan(s);
	/* Under the stop, each holder: whether it still holds its
	 * context (a resumed one's is cleared or rewritten).  A thread that
	 * woke meanwhile may have changed what was read: it is stopped (or
	 * seen waiting again) and the holders read again. */
	memset(s->fate, SCANNER_UNKNOWN, s->nknown);
	n = threadstop_begin(s->ts, &t);
	scanner_reread(s, false);
	s->torn = false;
	while (!threadstop_settled(s->ts)) {
		if (++rounds > 2) {
			s->torn = true;
			break;
		}
		scanner_reread(s, true);
	}
	/* The next refresh goes on from where this one stopped. */
	s->cursor = s->nplan ? (s->from + s->nread) % s->nplan : 0;
	if (!s->torn)
		scanner_idle_stop(s);
	memcpy(s->threads, t, n * sizeof(*t));
	s->nthreads = n;
	threadstop_end(s->ts);
	scanner_idle_after(s); /* an arm that needs no stop */
	/* Each known context's fate.  A holder that still holds it: parked
	 * where it was (one that parked again at the same depth is too, until
	 * the next pass).  One emptied (Boost.Fiber's c_ while it runs), or a
	 * ucontext resumed: running.  One that holds a saved area: parked
	 * there.  Anything else: as it was, until the next pass. */
	scanner_runs_on(s);
	for (size_t k = 0; k < s->nknown; k++)
		if (s->ran_on[k])
			s->fate[k] = SCANNER_RUNNING;
	for (size_t c = 0; c < s->ncand; c++)
		if (!s->ran_on[s->cand[c]] &&
		    scanner_area(s, c, &s->moved[s->cand[c]]))
			s->fate[s->cand[c]] = SCANNER_MOVED;
}

/* The refresh's thread tid (NULL: not seen). */
static const struct threadstop_thread *scanner_thread(const struct scanner *s,
						      pid_t tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	return NULL;
}

/* A thread's row: opened, walked again when it moved. */
static void scanner_thread_row(struct scanner *s,
			       const struct threadstop_thread *t,
			       struct scanner_trow *row, bool fresh,
			       uint64_t now)
{
	struct harvest_event ev = {
		.ts = now,
		.tid = (uint64_t)t->tid,
		.addr = t->pc,
		.probe_id = (uint64_t)t->tid,
		.station = row->station,
		.census = 1,
		.is_active = 1,
		.where = {.sp = t->sp, .fp = t->fp, .pc = t->pc},
	};
	uint64_t lo, hi;

	if (!fresh && row->sp == t->sp && row->pc == t->pc)
		return;
	if (t->sp && scanner_region_of(s, t->sp, &lo, &hi)) {
		ev.where.stack_lo = t->sp;
		ev.where.stack_hi = hi;
	}
	if (fresh) {
		model_open(s->env.model, row->station, ev.probe_id, now);
		model_found(s->env.model, row->station, false, false);
	}
	row->sp = t->sp;
	row->pc = t->pc;
	s->env.event(s->env.ctx, &ev);
}

static int scanner_tid_cmp(const void *a, const void *b)
{
	const struct threadstop_thread *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

void scanner_refresh_apply(struct scanner *s, uint64_t now)
{
	struct threadstop_stats ts;
	size_t i = 0, k = 0, n = 0;
	uint32_t resumed = 0;

	if (!s->ts)
		return;
	/* The threads, merged by id with the rows (both sorted). */
	qsort(s->threads, s->nthreads, sizeof(*s->threads), scanner_tid_cmp);
	while (i < s->nthreads || k < s->ntrows) {
		const struct threadstop_thread *t =
			i < s->nthreads ? &s->threads[i] : NULL;
		struct scanner_trow *o = k < s->ntrows ? &s->trows[k] : NULL;

		if (o && (!t || o->tid < t->tid)) { /* gone */
			model_close(s->env.model, o->station, now, true);
			s->free[s->nfree++] = o->station;
			k++;
		} else if (o && o->tid == t->tid) {
			struct scanner_trow row = *o;

			scanner_thread_row(s, t, &row, false, now);
			s->trows_next[n++] = row;
			i++, k++;
		} else {
			if (s->nfree) {
				struct scanner_trow row = {
					.tid = t->tid,
					.station = s->free[--s->nfree]};

				scanner_thread_row(s, t, &row, true, now);
				s->trows_next[n++] = row;
			}
			i++;
		}
	}
	memcpy(s->trows, s->trows_next, n * sizeof(*s->trows));
	s->ntrows = n;
	/* What the refresh saw of the known contexts: running (on the
	 * thread whose stack holds them, when one does) until found parked;
	 * parked elsewhere, their holder says: walked there. */
	for (size_t j = 0; j < s->nknown; j++) {
		struct scanner_known *kn = &s->known[j];
		pid_t on = s->ran_on[j];

		if (s->fate[j] == SCANNER_RUNNING && (!kn->resumed || on)) {
			/* Running: on its thread, walked from the thread's
			 * registers, when it is known; else where it last
			 * parked, its thread not known. */
			const struct threadstop_thread *t =
				on ? scanner_thread(s, on) : NULL;
			struct harvest_event ev = {
				.ts = now,
				.tid = (uint64_t)(on > 0 ? on : 0),
				.addr = t ? t->pc : kn->pc,
				.probe_id = kn->id,
				.station = kn->station,
				.census = 1,
				.is_active = 1,
			};

			if (t && t->sp) {
				ev.where = (struct ctp_census){
					.sp = t->sp, .fp = t->fp, .pc = t->pc};
				ev.where.stack_lo = t->sp;
				ev.where.stack_hi = kn->stack_hi;
			}
			kn->resumed = true;
			kn->touched = true; /* it ran: no proof */
			kn->idle = false;
			kn->tid = on > 0 ? on : kn->tid;
			s->env.event(s->env.ctx, &ev);
		} else if (s->fate[j] == SCANNER_MOVED) {
			uint64_t hold_at = kn->hold_at;

			scanner_keep(kn, &s->moved[j]);
			kn->hold_at = hold_at; /* the same holder */
			kn->touched = true;    /* it ran: no proof */
			kn->idle = false;
			kn->waiting = false; /* the next pass's lists say */
			scanner_send(s, &s->moved[j], kn->id, kn->station, now,
				     kn->unsure, false, kn->tid);
		} else if (s->fate[j] == SCANNER_PARKED && kn->resumed) {
			/* Back where it was: parked there again. */
			const struct ctxscan_found f = {
				.at = kn->at,
				.sp = kn->sp,
				.fp = kn->fp,
				.pc = kn->pc,
				.stack_lo = kn->stack_lo,
				.stack_hi = kn->stack_hi,
			};

			kn->resumed = false;
			kn->waiting = false;
			scanner_send(s, &f, kn->id, kn->station, now,
				     kn->unsure, false, kn->tid);
		}
		resumed += kn->resumed;
	}
	scanner_idle_apply(s, now);
	threadstop_stats(s->ts, &ts);
	s->st.nonblocking = s->env.nonblocking;
	s->st.refreshes++;
	s->st.pause_ns = ts.pause_ns;
	s->st.pause_max_ns = ts.pause_max_ns;
	s->st.stopped = ts.stopped;
	s->st.resumed = resumed;
	s->st.round = (uint32_t)s->nread;
	s->st.torn += s->torn;
	s->st.refused = ts.refused;
	s->st.late = ts.late;
	s->st.threads_listed = (uint32_t)n;
}
