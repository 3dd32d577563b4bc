/*
 * detail_view: one coroutine, drilled into from the table (Enter; Esc goes
 * back).  It shows the coroutine's fields, its most recent transitions
 * (what its station's ring still held when the view opened, then every one
 * harvested since; oldest first) with a gap marker where events were lost, a
 * running/suspended timeline over the span those transitions cover, and the
 * time-in-state distribution of the intervals between them.
 *
 * With CallTrace (engine/stacks/hotquery.c), above those: the stack the
 * coroutine is parked on, fully symbolized (its first frames and "...", E or +
 * lists them all, C or - folds them again), and its own hottest stacks (the
 * samples taken while it ran).
 *
 * Taller or wider than the screen, it scrolls: Up and Down, Right and Left
 * (as the table does; Left at the left edge goes back).
 */
#define _GNU_SOURCE
#include <curses.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/duration.h"
#include "engine/model/lint.h"
#include "ui/tui/tui.h"

/* The view's own state (t->view_state[VIEW_DETAIL]): its vertical and
 * horizontal scroll, its content's height and width when last drawn, and
 * whether its parked stack lists every frame (E) or the first few and
 * "...". */
struct detail_view {
	int top;
	int height;
	int left;
	int width;
	bool all_frames;
};

static struct detail_view *detail_of(const struct tui *t)
{
	return t->view_state[VIEW_DETAIL];
}

static void *detail_view_create(struct tui *t)
{
	(void)t;
	return calloc(1, sizeof(struct detail_view));
}

static void detail_view_destroy(void *state)
{
	free(state);
}

void detail_view_forget(struct tui *t)
{
	struct detail_view *d = detail_of(t);

	if (d)
		d->top = 0;
}

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
	char p50[16], p90[16], p99[16], max[16];

	if (!k) {
		snprintf(b, n, "no complete interval");
		return;
	}
	qsort(v, k, sizeof(*v), detail_cmp_u64);
	duration_format(p50, sizeof(p50), v[(k - 1) / 2]);
	duration_format(p90, sizeof(p90), v[(k * 9 - 1) / 10]);
	duration_format(max, sizeof(max), v[k - 1]);
	duration_format(p99, sizeof(p99), v[(k * 99 - 1) / 100]);
	snprintf(b, n, "%zu interval%s  p50 %s  p90 %s  p99 %s  max %s", k,
		 k == 1 ? "" : "s", p50, p90, p99, max);
}

/* The transitions to show, oldest first: the engine's history of this
 * coroutine, which starts with what was still in its station's ring when
 * the view opened and grows from there. */
static size_t detail_history(const struct tui *t, const struct model_coro *c,
			     const struct model_transition **out)
{
	*out = t->snap.history;
	return t->snap.history_id == c->id ? t->snap.nhistory : 0;
}

#define DETAIL_RING_ROWS 8 /* transitions listed: one ring's worth */

static const char *detail_bar(const struct tui *t)
{
	return t->ascii ? "~~" : "\u2504\u2504";
}

static void detail_gap(struct tui *t, int y, const struct model_transition *tr)
{
	const char *bar = detail_bar(t), *s = tr->lost_before == 1 ? "" : "s";

	attron(tui_attr(t, PAIR_WARN));
	if (tr->from_ring)
		term_text(y, 1, A_NORMAL,
			  "%s %" PRIu64 " event%s no longer in the ring (lost "
			  "or overwritten) %s",
			  bar, tr->lost_before, s, bar);
	else
		term_text(y, 1, A_NORMAL, "%s %" PRIu64 " event%s lost %s", bar,
			  tr->lost_before, s, bar);
	attroff(tui_attr(t, PAIR_WARN));
}

static int detail_ring(struct tui *t, const struct model_coro *c, int y)
{
	const struct model_transition *h;
	size_t n = detail_history(t, c, &h);
	size_t first = n > DETAIL_RING_ROWS ? n - DETAIL_RING_ROWS : 0;

	term_text(y++, 1, A_NORMAL, "Last transitions (oldest first)");
	attron(tui_attr(t, PAIR_TITLE));
	term_text(y++, 1, A_NORMAL, "%4s %20s %12s %8s %-9s %s", "SLOT", "SEQ",
		  "WHEN", "TID", "STATE", "WHERE");
	attroff(tui_attr(t, PAIR_TITLE));
	for (size_t i = first; i < n; i++) {
		const struct model_transition *tr = &h[i];
		char ago[16], where[128], slot[12] = "-";

		if (tr->lost_before)
			detail_gap(t, y++, tr);
		duration_format(ago, sizeof(ago),
				t->snap.ts > tr->ts ? t->snap.ts - tr->ts : 0);
		/* The ring slot and the seq as read from the region: what a
		 * writer's bug looks like (a recording keeps no slots). */
		if (tr->slot != MODEL_NO_SLOT)
			snprintf(slot, sizeof(slot), "%u", tr->slot);
		snapshot_where_of(&t->snap, c, tr->addr, false, where,
				  sizeof(where));
		term_text(y++, 1, A_NORMAL,
			  "%4s %20" PRIu64 " %8s ago %8" PRIu64 " %-9s %s",
			  slot, tr->seq, ago, tr->tid,
			  tr->is_active ? "running" : "suspended", where);
	}
	if (!n)
		term_text(y++, 1, A_NORMAL, "%s",
			  c->scanned	? "  (none: found in memory, it sends "
					  "no events)"
			  : c->switches ? "  (none left in its station's ring)"
					: "  (no transition harvested yet)");
	if (c->pending_lost) {
		attron(tui_attr(t, PAIR_WARN));
		term_text(y++, 1, A_NORMAL, "%s %" PRIu32 " more lost since %s",
			  detail_bar(t), c->pending_lost, detail_bar(t));
		attroff(tui_attr(t, PAIR_WARN));
	}
	return y;
}

#define DETAIL_WINDOW_NS 10000000000ull /* timeline span: 10 s */

/* Running/suspended over the last 10 s (or since the first transition
 * known), one cell per slice, plus the switch count in that window. */
static int detail_timeline(struct tui *t, const struct model_coro *c, int y)
{
	const struct model_transition *h;
	size_t n = detail_history(t, c, &h), in_window = 0, nrun = 0, nsusp = 0;
	int width = t->cols - 14;
	uint64_t end = c->state == MODEL_DEAD ? c->dead_ts : t->snap.ts;
	uint64_t start = end > DETAIL_WINDOW_NS ? end - DETAIL_WINDOW_NS : 0;
	uint64_t *run, *susp;
	char span[16], line[160];
	size_t k = 0;

	if (!n || width < 10)
		return y;
	if (h[0].ts > start)
		start = h[0].ts;
	if (end <= start)
		end = start + 1;
	for (size_t i = 0; i < n; i++)
		in_window += h[i].ts >= start;
	duration_format(span, sizeof(span), end - start);
	term_text(y++, 1, TUI_NORMAL,
		  "Timeline, last %s: %zu switches (%s running, %s suspended)",
		  span, in_window, t->ascii ? "#" : "\u2588",
		  t->ascii ? "." : "\u00b7");
	for (int x = 0; x < width; x++) {
		uint64_t at =
			start + (end - start) * (uint64_t)x / (uint64_t)width;
		bool running = false;

		/* h is in time order: advance k to the last one <= at. */
		while (k + 1 < n && h[k + 1].ts <= at)
			k++;
		running = h[k].ts <= at && h[k].is_active;
		if (running)
			term_text(y, 12 + x, tui_attr(t, PAIR_RUNNING), "%s",
				  t->ascii ? "#" : "\u2588");
		else
			term_text(y, 12 + x, A_NORMAL, "%s",
				  t->ascii ? "." : "\u00b7");
	}
	y += 2;
	run = malloc(n * sizeof(*run));
	susp = malloc(n * sizeof(*susp));
	if (!run || !susp) {
		free(run);
		free(susp);
		return y;
	}
	for (size_t i = 1; i < n; i++) {
		uint64_t d = h[i].ts > h[i - 1].ts ? h[i].ts - h[i - 1].ts : 0;

		if (h[i - 1].is_active)
			run[nrun++] = d;
		else
			susp[nsusp++] = d;
	}
	/* Replay shows the recording's transitions up to the position. */
	term_text(y++, 1, TUI_NORMAL, "Time in state, %zu transitions %s:", n,
		  t->snap.replay.on ? "recorded up to here"
				    : "since this view opened");
	detail_dist(line, sizeof(line), run, nrun);
	term_text(y++, 3, TUI_NORMAL, "running    %s", line);
	detail_dist(line, sizeof(line), susp, nsusp);
	term_text(y++, 3, TUI_NORMAL, "suspended  %s", line);
	free(run);
	free(susp);
	return y;
}

/* Which warnings flag it, and why: the lint's threshold and its note. */
static int detail_lints(struct tui *t, const struct model_coro *c, int y)
{
	int width = t->cols - 3;

	for (int k = 0; k < LINT_COUNT; k++) {
		char text[320];
		const char *p = text;

		if (!(c->warn & (1u << k)))
			continue;
		snprintf(text, sizeof(text),
			 "Flagged %s (%s, threshold %g%s): %s", lint_tag(k),
			 lint_name(k), lint_threshold(&t->lints, k),
			 lint_unit(k), lint_help(k));
		/* Wrapped at a blank, the rest indented: never cut. */
		while (*p && width > 10) {
			int len = (int)strlen(p), cut = len;

			if (len > width)
				for (cut = width; cut > 0 && p[cut] != ' ';
				     cut--)
					;
			if (cut <= 0)
				cut = width < len ? width : len;
			term_text(y++, p == text ? 1 : 3,
				  tui_attr(t, PAIR_WARN), "%.*s", cut, p);
			p += cut;
			while (*p == ' ')
				p++;
			width = t->cols - 5;
		}
	}
	return y;
}

#define DETAIL_PARKED_FRAMES 6 /* listed before the "..." */
#define DETAIL_PARKED_MAX 64   /* listed at most, expanded */
#define DETAIL_HOT_STACKS 3
#define DETAIL_HSCROLL_STEP 8 /* columns a Right or Left moves */

/* Where it is parked (the captured stack) and where its CPU went. */
static int detail_stacks(struct tui *t, const struct model_coro *c, int y)
{
	struct detail_view *d = detail_of(t);
	uint64_t frames[DETAIL_PARKED_MAX], trace = 0;
	struct engine_hot_stack hs[DETAIL_HOT_STACKS];
	char line[512];
	size_t n, shown = d->all_frames ? DETAIL_PARKED_MAX
					: DETAIL_PARKED_FRAMES;
	bool parked;

	n = c->state == MODEL_SUSPENDED
		    ? engine_parked_stack(t->engine, c->id, frames,
					  DETAIL_PARKED_MAX, &trace)
		    : 0;
	if (n && !trace) /* replay: the stack the recording carries */
		term_text(y++, 1, A_BOLD, "Parked stack (recorded):");
	else if (n)
		term_text(y++, 1, A_BOLD,
			  "Parked stack (trace 0x%" PRIx64 "):", trace);
	if (n) {
		for (size_t k = 0; k < n && k < shown; k++)
			term_text(y++, 3, TUI_NORMAL, "#%-2zu %s", k,
				  engine_frame_name(t->engine, frames[k],
						    k == 0, true, line,
						    sizeof(line)));
		if (n > shown)
			term_text(y++, 3, A_DIM,
				  "... %zu more frame%s (E shows "
				  "them)",
				  n - shown, n - shown == 1 ? "" : "s");
	}
	parked = n > 0; /* (a recorded stack has no trace id) */
	n = engine_hot_stacks(t->engine, c->id, ENGINE_HOT_BY_TOTAL, hs,
			      DETAIL_HOT_STACKS);
	if (n) {
		term_text(y++, 1, A_BOLD,
			  "Hot stacks while it ran (%% of its samples, "
			  "samples):");
		for (size_t k = 0; k < n; k++) {
			hot_view_stack_line(t, &hs[k], line, sizeof(line));
			term_text(y++, 3, TUI_NORMAL, "%5.1f %7" PRIu64 "  %s",
				  hs[k].self_pct, hs[k].total, line);
		}
	}
	return n || parked ? y + 1 : y;
}

#define DETAIL_TOP 5 /* the first line under the header */

/* The key bar, and where the view is scrolled to when it is taller than
 * the screen. */
static void detail_draw_bar(struct tui *t, int shown)
{
	struct detail_view *d = detail_of(t);
	static const struct {
		const char *key, *label;
	} bar[] = {
		{"Esc", "Back"}, {"Up/Dn", "Scroll"}, {"J/K", "Next/Prev"},
		{"F1", "Help"},	 {"q", "Quit"},
	};
	char where[48], cols[32] = "";
	int right = d->left + t->cols;

	if (right > d->width)
		right = d->width;

	move(t->lines - 1, 0);
	clrtoeol();
	for (size_t i = 0; i < sizeof(bar) / sizeof(bar[0]); i++)
		if (!term_bar_key(bar[i].key, bar[i].label,
				  tui_attr(t, PAIR_HEADER)))
			return;
	/* Scrolled right: from which column, as "lines" says from which
	 * line. */
	if (d->left)
		snprintf(cols, sizeof(cols), "cols %d-%d of %d", d->left + 1,
			 right, d->width);
	if (d->height > shown)
		snprintf(where, sizeof(where), "lines %d-%d of %d%s%s",
			 d->top + 1, d->top + shown, d->height,
			 cols[0] ? ", " : "", cols);
	else if (cols[0])
		snprintf(where, sizeof(where), "%s", cols);
	else
		return;
	/* (On a narrow screen the columns alone, short, when both do not
	 * fit.) */
	if (getcurx(stdscr) + (int)strlen(where) >= t->cols && cols[0])
		snprintf(where, sizeof(where), "cols %d-%d/%d", d->left + 1,
			 right, d->width);
	if (getcurx(stdscr) + (int)strlen(where) < t->cols)
		term_text(t->lines - 1, t->cols - 1 - (int)strlen(where),
			  A_NORMAL, "%s", where);
}

/* Right and Left scroll by DETAIL_HSCROLL_STEP columns, as far as the
 * widest line; Left at the left edge is left to the dispatch, which goes
 * back (tui.c). */
static int detail_view_hscroll(struct tui *t, int dir)
{
	struct detail_view *d = detail_of(t);
	int most = d->width - t->cols;
	int to = d->left + dir * DETAIL_HSCROLL_STEP;

	if (most < 0)
		most = 0;
	if (to > most)
		to = most;
	if (to < 0)
		to = 0;
	if (to == d->left)
		return dir < 0 ? -1 : REACT_NONE;
	d->left = to;
	return REACT_REDRAW;
}

/* Up and Down (and the page keys) scroll while there is more that way;
 * at the end they fall through to the table's, which move to the next
 * coroutine, as J and K always do. */
static int detail_view_action(struct tui *t, enum tui_action a, int page)
{
	struct detail_view *d = detail_of(t);
	int shown = t->lines - 1 - DETAIL_TOP;
	int most = d->height - shown, to = d->top;

	(void)page;
	if (most < 0)
		most = 0;
	switch (a) {
	case ACT_RIGHT:
	case ACT_LEFT:
		return detail_view_hscroll(t, a == ACT_RIGHT ? 1 : -1);
	case ACT_EXPAND:
	case ACT_EXPAND_ALL:
	case ACT_COLLAPSE:
	case ACT_COLLAPSE_ALL:
		d->all_frames = a == ACT_EXPAND || a == ACT_EXPAND_ALL;
		return REACT_REDRAW;
	case ACT_UP:
		to--;
		break;
	case ACT_DOWN:
		to++;
		break;
	case ACT_PAGE_UP:
		to -= shown > 1 ? shown - 1 : 1;
		break;
	case ACT_PAGE_DOWN:
		to += shown > 1 ? shown - 1 : 1;
		break;
	default:
		return -1;
	}
	if (to > most)
		to = most;
	if (to < 0)
		to = 0;
	if (to == d->top)
		return -1;
	d->top = to;
	return REACT_REDRAW;
}

static void detail_view_draw(struct tui *t)
{
	struct detail_view *d = detail_of(t);
	const struct model_coro *c = detail_find(t);
	char age[16], in[16], where[256], name[176] = "";
	int y = DETAIL_TOP, shown = t->lines - 1 - DETAIL_TOP;

	if (!c) {
		term_text(y, 1, A_NORMAL,
			  "That coroutine is gone (it died and its record "
			  "expired). Esc goes back.");
		return;
	}
	if (d->top > d->height - shown)
		d->top = d->height > shown ? d->height - shown : 0;
	/* All of it is drawn; the window shows the lines scrolled to. */
	term_window(DETAIL_TOP, t->lines - 1, d->top, d->left);
	duration_format(age, sizeof(age), snapshot_age_ns(&t->snap, c));
	duration_format(in, sizeof(in), snapshot_in_state_ns(&t->snap, c));
	/* Its name, quoted after the id: Coroutine 7f10 "worker-3". */
	snapshot_name(&t->snap, c, where, sizeof(where));
	if (where[0])
		snprintf(name, sizeof(name), " \"%.160s\"", where);
	attron(A_BOLD);
	if (c->station == MODEL_NONE) /* replay: stations are not recorded */
		term_text(y++, 1, A_NORMAL,
			  "Coroutine %" PRIx64 "%s  (corotop id %" PRIu64 ")",
			  c->probe_id, name, c->id);
	else
		term_text(y++, 1, A_NORMAL,
			  "Coroutine %s%" PRIx64 "%s  (corotop id %" PRIu64
			  ", station %u)",
			  !c->scanned ? ""
			  : c->unsure ? "?"
				      : "~",
			  c->probe_id, name, c->id, c->station);
	attroff(A_BOLD);
	if (c->scanned && t->snap.target.core) /* frozen: not since when */
		term_text(y++, 1, A_NORMAL,
			  "%s when the core was dumped; found by a scan of "
			  "its memory%s: its age, switches and time in state "
			  "are not known",
			  snapshot_state_name(c->state),
			  c->unsure ? ", not proven live" : "");
	else if (c->scanned) /* memory says where, not since when */
		term_text(y++, 1, A_NORMAL,
			  "%s for at least %s; found by a scan of its "
			  "process's memory%s: its age and switches are not "
			  "known",
			  snapshot_state_name(c->state), in,
			  c->unsure ? ", not proven live" : "");
	else
		term_text(y++, 1, A_NORMAL,
			  "%s for %s, age %s, %" PRIu64 " switches (%.0f/s), "
			  "%.1f%% running, %" PRIu64 " lost%s",
			  snapshot_state_name(c->state), in, age, c->switches,
			  c->sw_per_sec, snapshot_run_pct(&t->snap, c), c->lost,
			  c->at_exit ? " (the state at the program's exit)"
				     : "");
	/* A transition is known: harvested, found at a late attach, or
	 * where a scan found it parked. */
	if (c->switches || c->last_tid || c->scanned)
		term_text(y++, 1, A_NORMAL, "%s at %s",
			  c->state == MODEL_RUNNING ? "Last switch" : "Parked",
			  snapshot_where_of(&t->snap, c, c->last_addr, true,
					    where, sizeof(where)));
	else
		term_text(y++, 1, A_NORMAL, "No switch yet");
	if (c->state == MODEL_SUSPENDED && c->long_wait)
		term_text(y++, 1, A_NORMAL,
			  "A long wait, as the program marked it: not a lost "
			  "wakeup however long it lasts");
	y = detail_lints(t, c, y);
	y++;
	y = detail_stacks(t, c, y);
	y = detail_ring(t, c, y);
	y++;
	y = detail_timeline(t, c, y);
	d->width = term_window_end();
	d->height = y - DETAIL_TOP;
	detail_draw_bar(t, shown);
}

/* Help over it and back keeps the place; from elsewhere it opens at the
 * top. */
static void detail_view_open(struct tui *t, enum tui_view from)
{
	struct detail_view *d = detail_of(t);
	if (from != VIEW_HELP) {
		d->top = d->left = 0;
		d->all_frames = false;
	}
}

/* Opened by Enter on a table row (table_view.c).  Up and Down scroll it,
 * then move the table's selection; J and K go from coroutine to coroutine
 * (the view follows the selection). */
const struct tui_view_impl detail_view_impl = {
	.name = "detail",
	.follows = true,
	.create = detail_view_create,
	.destroy = detail_view_destroy,
	.draw = detail_view_draw,
	.action = detail_view_action,
	.open = detail_view_open,
};
