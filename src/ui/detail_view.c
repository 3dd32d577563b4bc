/*
 * detail_view: one coroutine, drilled into from the table (Enter; Esc goes
 * back).  It shows the coroutine's fields, its most recent transitions
 * (the engine keeps the last 8, oldest first) with a gap marker where
 * events were lost, a running/suspended timeline over the span those
 * transitions cover, and the time-in-state distribution of the intervals
 * between them.
 */
#define _GNU_SOURCE
#include <curses.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/duration.h"
#include "tui.h"

static const struct model_coro *detail_find(const struct tui *t)
{
	for (size_t i = 0; i < t->snap.count; i++)
		if (t->snap.coro[i].id == t->selected_id)
			return &t->snap.coro[i];
	return NULL;
}

static int detail_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* "n intervals: p50 .. p90 .. max .." of one state's durations. */
static void detail_dist(char *b, size_t n, uint64_t *v, size_t k)
{
	char p50[16], p90[16], max[16];

	if (!k) {
		snprintf(b, n, "no complete interval");
		return;
	}
	qsort(v, k, sizeof(*v), detail_cmp_u64);
	duration_format(p50, sizeof(p50), v[(k - 1) / 2]);
	duration_format(p90, sizeof(p90), v[(k * 9 - 1) / 10]);
	duration_format(max, sizeof(max), v[k - 1]);
	snprintf(b, n, "%zu interval%s  p50 %s  p90 %s  max %s", k,
		 k == 1 ? "" : "s", p50, p90, max);
}

static int detail_ring(struct tui *t, const struct model_coro *c, int y)
{
	if (y >= t->lines - 3)
		return y;
	tui_text(t, y++, 1, A_NORMAL, "Last transitions (oldest first)");
	attron(tui_attr(t, PAIR_TITLE));
	tui_text(t, y++, 1, A_NORMAL, "%10s %12s %8s %-18s %-9s", "EVENT",
		 "WHEN", "TID", "ADDR", "STATE");
	attroff(tui_attr(t, PAIR_TITLE));
	for (unsigned i = 0; i < c->recent_count && y < t->lines - 6; i++) {
		const struct model_transition *tr = model_coro_recent(c, i);
		char ago[16];

		if (tr->lost_before) {
			attron(tui_attr(t, PAIR_WARN));
			tui_text(t, y++, 1, A_NORMAL,
				 "%s %" PRIu64 " event%s lost %s",
				 t->ascii ? "~~" : "\u2504\u2504",
				 tr->lost_before,
				 tr->lost_before == 1 ? "" : "s",
				 t->ascii ? "~~" : "\u2504\u2504");
			attroff(tui_attr(t, PAIR_WARN));
		}
		duration_format(ago, sizeof(ago),
				t->snap.ts > tr->ts ? t->snap.ts - tr->ts : 0);
		tui_text(t, y++, 1, A_NORMAL,
			 "%10" PRIu64 " %8s ago %8" PRIu64 " 0x%016" PRIx64
			 " %-9s",
			 tr->n, ago, tr->tid, tr->addr,
			 tr->is_active ? "running" : "suspended");
	}
	if (!c->recent_count)
		tui_text(t, y++, 1, A_NORMAL,
			 "  (no transition harvested yet)");
	if (c->pending_lost) {
		attron(tui_attr(t, PAIR_WARN));
		tui_text(t, y++, 1, A_NORMAL,
			 "%s %" PRIu64 " more lost since %s",
			 t->ascii ? "~~" : "\u2504\u2504", c->pending_lost,
			 t->ascii ? "~~" : "\u2504\u2504");
		attroff(tui_attr(t, PAIR_WARN));
	}
	return y;
}

/* Running/suspended over [first transition, now], one cell per slice. */
static int detail_timeline(struct tui *t, const struct model_coro *c, int y)
{
	uint64_t run[MODEL_RECENT], susp[MODEL_RECENT];
	size_t nrun = 0, nsusp = 0;
	int width = t->cols - 14;
	uint64_t start, end = c->state == MODEL_DEAD ? c->dead_ts : t->snap.ts;
	char span[16], line[160];

	if (!c->recent_count || width < 10)
		return y;
	start = model_coro_recent(c, 0)->ts;
	if (end <= start)
		end = start + 1;
	duration_format(span, sizeof(span), end - start);
	tui_text(t, y++, 1, A_NORMAL,
		 "Timeline, last %s (%s running, %s suspended)", span,
		 t->ascii ? "#" : "\u2588", t->ascii ? "." : "\u00b7");
	move(y, 1);
	printw("%10s ", "");
	for (int x = 0; x < width; x++) {
		uint64_t at =
			start + (end - start) * (uint64_t)x / (uint64_t)width;
		bool running = false;

		for (unsigned i = 0; i < c->recent_count; i++) {
			const struct model_transition *tr =
				model_coro_recent(c, i);

			if (tr->ts <= at)
				running = tr->is_active;
		}
		if (running) {
			attron(tui_attr(t, PAIR_RUNNING));
			addstr(t->ascii ? "#" : "\u2588");
			attroff(tui_attr(t, PAIR_RUNNING));
		} else {
			addstr(t->ascii ? "." : "\u00b7");
		}
	}
	y += 2;
	for (unsigned i = 1; i < c->recent_count; i++) {
		const struct model_transition *a = model_coro_recent(c, i - 1);
		const struct model_transition *b = model_coro_recent(c, i);
		uint64_t d = b->ts > a->ts ? b->ts - a->ts : 0;

		if (a->is_active)
			run[nrun++] = d;
		else
			susp[nsusp++] = d;
	}
	tui_text(t, y++, 1, A_NORMAL, "Time in state over these transitions:");
	detail_dist(line, sizeof(line), run, nrun);
	tui_text(t, y++, 3, A_NORMAL, "running    %s", line);
	detail_dist(line, sizeof(line), susp, nsusp);
	tui_text(t, y++, 3, A_NORMAL, "suspended  %s", line);
	return y;
}

void detail_view_draw(struct tui *t)
{
	const struct model_coro *c = detail_find(t);
	char age[16], in[16];
	int y = 5;

	if (!c) {
		tui_text(t, y, 1, A_NORMAL,
			 "That coroutine is gone (it died and its record "
			 "expired). Esc goes back.");
		return;
	}
	duration_format(age, sizeof(age), snapshot_age_ns(&t->snap, c));
	duration_format(in, sizeof(in), snapshot_in_state_ns(&t->snap, c));
	attron(A_BOLD);
	tui_text(t, y++, 1, A_NORMAL,
		 "Coroutine %" PRIx64 "  (corotop id %" PRIu64 ", station %u)",
		 c->probe_id, c->id, c->station);
	attroff(A_BOLD);
	tui_text(t, y++, 1, A_NORMAL,
		 "%s for %s, age %s, %" PRIu64 " switches (%.0f/s), "
		 "%.1f%% running, %" PRIu64 " lost",
		 snapshot_state_name(c->state), in, age, c->switches,
		 c->sw_per_sec, snapshot_run_pct(&t->snap, c), c->lost);
	y++;
	y = detail_ring(t, c, y);
	y++;
	if (y < t->lines - 5)
		detail_timeline(t, c, y);
	tui_text(t, t->lines - 1, 0, A_NORMAL, "Esc back   F1 help   q quit");
}
