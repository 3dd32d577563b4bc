/*
 * thread_meters: htop's CPU meters, one per OS thread of the target that
 * runs coroutines, between the table's header and its column titles.
 *
 * Each meter is the thread's tid, its CPU share of one CPU since the last
 * sample as a bar with the percentage in it (procfs, engine_threads), and
 * the coroutine running on it now (its name, else where it last switched,
 * else its id; "-" when none is; a long C++ name shortened by dropping its
 * namespaces and parameters, shortname.c, not cut at its start).  A thread
 * counts once some coroutine's last switch was on it: the scheduler's workers,
 * not the program's other threads.  Without a live target (replay, observer)
 * the threads of the running coroutines are shown with no share; after the
 * target exited, none.
 *
 * Samples are taken at a refresh at most every THREAD_METERS_MIN_NS, so a
 * share always spans half a second or more -- unless the threads the
 * coroutines switched on changed since (a new worker), which is sampled
 * at once, so a meter never lags the table's rows.  As many meters go on a line
 * as fit; at most THREAD_METERS_LINES lines, fewer on a short screen, and
 * the last cell of a full block says how many threads did not fit.
 */
#define _GNU_SOURCE
#include <curses.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "ui/rows/shortname.h"
#include "ui/tui/thread_meters.h"
#include "ui/tui/tui.h"

#define THREAD_METERS_MIN_NS 500000000ull
#define THREAD_METERS_LINES 3
#define THREAD_METER_BAR 8 /* inside the brackets: "||100.0%" */
/* The running coroutine: room for a C++ fiber's name, main::{lambda()#2},
 * and still two meters on 80 columns. */
#define THREAD_METER_LABEL 18
/* "  12345 [|||||  42.1%] label         " and a gap */
#define THREAD_METER_WIDTH                                                     \
	(7 + 2 + THREAD_METER_BAR + 2 + THREAD_METER_LABEL + 2)

/* Whether some coroutine's last switch was on thread tid, and the one
 * running there now (UINT32_MAX when none). */
static bool thread_meters_coro(const struct tui *t, uint64_t tid,
			       uint32_t *running)
{
	bool seen = false;

	*running = UINT32_MAX;
	for (size_t i = 0; i < t->snap.count; i++) {
		const struct model_coro *c = &t->snap.coro[i];

		if (c->last_tid != tid)
			continue;
		seen = true;
		if (c->state == MODEL_RUNNING) {
			*running = (uint32_t)i;
			break;
		}
	}
	return seen;
}

/* The distinct threads the snapshot's coroutines last switched on, in tid
 * order, at most TUI_METERS_MAX: what a new sample is due on. */
static size_t thread_meters_tids(const struct tui *t, uint64_t *tid)
{
	size_t n = 0;

	for (size_t i = 0; i < t->snap.count; i++) {
		uint64_t v = t->snap.coro[i].last_tid;
		size_t k = n;

		if (!v)
			continue;
		while (k > 0 && tid[k - 1] > v)
			k--;
		if ((k > 0 && tid[k - 1] == v) || n == TUI_METERS_MAX)
			continue;
		memmove(tid + k + 1, tid + k, (n - k) * sizeof(*tid));
		tid[k] = v;
		n++;
	}
	return n;
}

void thread_meters_update(struct tui *t)
{
	struct engine_thread th[TUI_METERS_MAX];
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC), tids[TUI_METERS_MAX];
	size_t n = 0, ntids = thread_meters_tids(t, tids);
	bool same = ntids == t->threads.ntids &&
		    !memcmp(tids, t->threads.tids, ntids * sizeof(*tids));

	memcpy(t->threads.tids, tids, ntids * sizeof(*tids));
	t->threads.ntids = ntids;
	if (same && t->threads.sampled_ns &&
	    now - t->threads.sampled_ns < THREAD_METERS_MIN_NS &&
	    t->threads.n) {
		/* Too soon for a share: keep it, and find who runs now. */
		for (size_t k = 0; k < t->threads.nmeters; k++)
			thread_meters_coro(t, t->threads.meters[k].tid,
					   &t->threads.meters[k].coro);
		return;
	}
	t->threads.sampled_ns = now;
	t->threads.n = engine_threads(t->engine, th, TUI_METERS_MAX);
	t->threads.nmeters = 0;
	if (t->threads.n) {
		for (size_t k = 0; k < t->threads.n; k++) {
			uint32_t coro;

			if (!thread_meters_coro(t, th[k].tid, &coro))
				continue;
			t->threads.meters[n++] = (struct tui_meter){
				.tid = th[k].tid,
				.pct = th[k].cpu_pct,
				.coro = coro,
			};
		}
		t->threads.nmeters = n;
		return;
	}
	/* No live target: the running coroutines' threads, no share (not
	 * after an exit: those threads are gone). */
	for (size_t i = 0;
	     !t->snap.target.exited && i < t->snap.count && n < TUI_METERS_MAX;
	     i++) {
		const struct model_coro *c = &t->snap.coro[i];
		size_t k;

		if (c->state != MODEL_RUNNING || !c->last_tid)
			continue;
		for (k = 0; k < n && t->threads.meters[k].tid != c->last_tid;
		     k++)
			;
		if (k < n)
			continue;
		/* In tid order, as procfs lists them. */
		for (k = n; k > 0 && t->threads.meters[k - 1].tid > c->last_tid;
		     k--)
			t->threads.meters[k] = t->threads.meters[k - 1];
		t->threads.meters[k] = (struct tui_meter){
			.tid = c->last_tid, .pct = -1, .coro = (uint32_t)i};
		n++;
	}
	t->threads.nmeters = n;
}

static int thread_meters_per_line(const struct tui *t)
{
	int per = (t->cols - 1) / THREAD_METER_WIDTH;

	return per > 0 ? per : 1;
}

int thread_meters_lines(const struct tui *t)
{
	int most = t->lines >= 30   ? THREAD_METERS_LINES
		   : t->lines >= 20 ? 2
		   : t->lines >= 16 ? 1
				    : 0;
	int per = thread_meters_per_line(t);
	int need = (int)((t->threads.nmeters + (size_t)per - 1) / (size_t)per);

	return need < most ? need : most;
}

static void thread_meter_draw(struct tui *t, int y, int x,
			      const struct tui_meter *m)
{
	char pct[8] = "", label[256] = "-", shown[256];
	int bars = 0;

	if (m->pct >= 0) {
		double p = m->pct > 999.9 ? 999.9 : m->pct;

		snprintf(pct, sizeof(pct), "%.1f%%", p);
		bars = (int)(p * THREAD_METER_BAR / 100.0 + 0.5);
		if (bars > THREAD_METER_BAR)
			bars = THREAD_METER_BAR;
	}
	if (m->coro != UINT32_MAX && m->coro < t->snap.count) {
		const struct model_coro *c = &t->snap.coro[m->coro];

		snapshot_name(&t->snap, c, label, sizeof(label));
		if (!label[0] && !c->last_addr)
			snprintf(label, sizeof(label), "-");
		else if (!label[0])
			snapshot_where_of(&t->snap, c, c->last_addr, false,
					  label, sizeof(label));
	}
	x = term_text(y, x, A_NORMAL, "%7" PRIu64 " [", m->tid);
	/* The bar, then the share over its right end, as htop draws it. */
	for (int k = 0; k < THREAD_METER_BAR; k++) {
		int from = THREAD_METER_BAR - (int)strlen(pct);

		if (k >= from)
			x = term_text(y, x, A_NORMAL, "%c", pct[k - from]);
		else if (k < bars)
			x = term_text(y, x, tui_attr(t, PAIR_RUNNING), "|");
		else
			x = term_text(y, x, A_NORMAL, " ");
	}
	/* A long C++ name loses its namespaces, not its end. */
	term_text(
		y, x, A_NORMAL, "] %-*.*s", THREAD_METER_LABEL,
		THREAD_METER_LABEL,
		shortname_fit(label, THREAD_METER_LABEL, shown, sizeof(shown)));
}

void thread_meters_draw(struct tui *t, int y)
{
	int lines = thread_meters_lines(t), per = thread_meters_per_line(t);
	size_t room = (size_t)lines * (size_t)per;

	for (size_t k = 0; k < t->threads.nmeters && k < room; k++) {
		int row = (int)(k / (size_t)per), col = (int)(k % (size_t)per);

		if (k + 1 == room && t->threads.nmeters > room) {
			term_text(y + row, col * THREAD_METER_WIDTH, A_DIM,
				  "   +%zu more threads",
				  t->threads.nmeters - k);
			break;
		}
		thread_meter_draw(t, y + row, col * THREAD_METER_WIDTH,
				  &t->threads.meters[k]);
	}
}
