/*
 * warn_view: the warnings pane (w).  For each lint: whether it is on, its
 * threshold, how many coroutines trip it, and the worst offenders (longest
 * in their state first), each by its name and WHERE.  The offenders are
 * rows: Up/Down select one, Enter opens its detail view, so a lost wakeup
 * is two keys away from the table.  On a narrow screen (80 columns) the
 * notes wrap and WHERE narrows, so that nothing is cut.
 */
#define _GNU_SOURCE
#include <curses.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/duration.h"
#include "engine/model/lint.h"
#include "ui/tui/tui.h"

#define WARN_SHOWN 5 /* offenders listed per lint */
/* An offender's line without its WHERE and id: the indent, name, state,
 * time in state, " tid " and its 8 columns, " id ", one column spare. */
#define WARN_ROW_FIXED (5 + 16 + 1 + 1 + 1 + 8 + 2 + 13 + 4 + 1)
#define WARN_WHERE_MOST 30
#define WARN_WHERE_LEAST 10

/* The pane's rows: the offenders drawn last, in screen order. */
struct warn_view {
	size_t cursor;
	size_t nshown;
	uint64_t shown[LINT_COUNT * WARN_SHOWN]; /* their model ids */
};

static struct warn_view *warn_of(const struct tui *t)
{
	return t->view_state[VIEW_WARNINGS];
}

static void *warn_view_create(struct tui *t)
{
	(void)t;
	return calloc(1, sizeof(struct warn_view));
}

static int warn_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct snapshot *s = ctx;
	uint64_t a =
		snapshot_in_state_ns(s, *(const struct model_coro *const *)pa);
	uint64_t b =
		snapshot_in_state_ns(s, *(const struct model_coro *const *)pb);

	return a < b ? 1 : a > b ? -1 : 0;
}

static void warn_view_draw(struct tui *t)
{
	const struct snapshot *s = &t->snap;
	struct warn_view *v = warn_of(t);
	const struct model_coro **list;
	int y = 5;

	v->nshown = 0;
	list = malloc((s->count ? s->count : 1) * sizeof(*list));
	if (!list)
		return;
	for (int k = 0; k < LINT_COUNT && y < t->lines - 2; k++) {
		const struct lint_config *lc = &t->lints;
		size_t n = 0;
		int shown = 0;

		for (size_t i = 0; i < s->count; i++)
			if (s->coro[i].warn & (1u << k))
				list[n++] = &s->coro[i];
		qsort_r(list, n, sizeof(*list), warn_cmp, (void *)s);
		term_text(y, 1, A_BOLD, "%-6s %-13s", lint_tag(k),
			  lint_name(k));
		term_text(y++, 22, n ? tui_attr(t, PAIR_WARN) : TUI_NORMAL,
			  "%s  threshold %g%s  %zu coroutine%s",
			  lc->enabled[k] ? "on " : "off", lint_threshold(lc, k),
			  lint_unit(k), n, n == 1 ? "" : "s");
		/* Wrapped, never cut: the note says what the lint means. */
		y = term_text_wrapped(y, 3, 2, A_DIM, lint_help(k));
		for (size_t i = 0;
		     i < n && y < t->lines - 2 && shown < WARN_SHOWN;
		     i++, shown++) {
			char in[16], name[64], where[160], id[24];
			bool sel = v->nshown == v->cursor;
			/* WHERE gets what the line leaves it, at most 30: the
			 * tid and id after it stay on an 80-column screen. */
			int ww = t->cols - WARN_ROW_FIXED -
				 snprintf(id, sizeof(id), "%" PRIx64,
					  list[i]->probe_id);

			if (ww > WARN_WHERE_MOST)
				ww = WARN_WHERE_MOST;
			if (ww < WARN_WHERE_LEAST)
				ww = WARN_WHERE_LEAST;

			duration_format(in, sizeof(in),
					snapshot_in_state_ns(s, list[i]));
			snapshot_name(s, list[i], name, sizeof(name));
			snapshot_where_of(s, list[i], list[i]->last_addr, false,
					  where, sizeof(where));
			if (sel)
				term_fill(y, tui_attr(t, PAIR_SELECTED));
			term_text(y++, 5,
				  sel ? tui_attr(t, PAIR_SELECTED) : TUI_NORMAL,
				  "%-16.16s %c %8s  %-*.*s tid %-8" PRIu64
				  " id %s",
				  name[0] ? name : "-", list[i]->state, in, ww,
				  ww, where, list[i]->last_tid, id);
			v->shown[v->nshown++] = list[i]->id;
		}
		if ((size_t)shown < n && y < t->lines - 2)
			term_text(y++, 5, A_DIM,
				  "... and %zu more (filter the table: \\ then "
				  "%s)",
				  n - (size_t)shown, lint_tag(k));
		y++;
	}
	free(list);
	if (v->cursor >= v->nshown)
		v->cursor = v->nshown ? v->nshown - 1 : 0;
	/* (80 columns: it fits exactly.) */
	term_text(t->lines - 1, 0, A_NORMAL,
		  "Up/Down select   Enter detail   Esc back   S setup "
		  "thresholds   F1 help   q quit");
}

/* Up and Down pick an offender, Enter opens its detail view. */
static int warn_view_action(struct tui *t, enum tui_action a, int page)
{
	struct warn_view *v = warn_of(t);

	(void)page;
	switch (a) {
	case ACT_UP:
		if (v->cursor)
			v->cursor--;
		return REACT_REDRAW;
	case ACT_DOWN:
		if (v->cursor + 1 < v->nshown)
			v->cursor++;
		return REACT_REDRAW;
	case ACT_HOME:
		v->cursor = 0;
		return REACT_REDRAW;
	case ACT_ENTER:
		if (v->cursor >= v->nshown)
			return REACT_NONE;
		t->selected_id = v->shown[v->cursor];
		t->table.chosen = true;
		return (int)(tui_view_show(t, VIEW_DETAIL) | REACT_REBUILD);
	default:
		return -1;
	}
}

const struct tui_view_impl warn_view_impl = {
	.name = "warnings",
	.opens = ACT_WARNINGS,
	.create = warn_view_create,
	.destroy = free,
	.draw = warn_view_draw,
	.action = warn_view_action,
};
