/*
 * table_view: the main coroutine table and the header meters above it.
 *
 * rebuild (after a snapshot, a sort or a filter change) selects the rows:
 * filter, sort by the chosen column (ties broken by id so the order is
 * stable), and with grouping on, sort by thread first and insert a header
 * row per thread.  The selection follows the same coroutine (by model id)
 * across rebuilds, like htop's.
 *
 * Layout, top to bottom: title bar, two meter lines, a status line (filter,
 * search, messages, PAUSED), the column titles, the rows, and the key bar at
 * the bottom (or the input line while searching or filtering).  When the
 * terminal is narrow, columns with the highest priority number are dropped
 * first, while WHERE, the column people read, keeps TABLE_WHERE_LEAST
 * characters; it takes whatever width is left.  NAME is shown only while
 * some coroutine of the snapshot has a name.
 *
 * Right scrolls (as htop's arrows do): the table becomes the full one,
 * every column the user did not hide and WHERE as wide as the longest on
 * the screen (TABLE_WHERE_WIDE to TABLE_WHERE_MAX),
 * shifted left by `hscroll` screen columns; Left scrolls back, and at 0
 * the fitted table returns.  A `<` or `>` at the titles' ends says there
 * is more that way.
 */
#define _GNU_SOURCE
#include <curses.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/lint.h"
#include "ui/tui/replay_ctl.h"
#include "ui/term/layout.h"
#include "common/grow.h"
#include "ui/tui/tui.h"

static int table_view_first_row(const struct tui *t)
{
	return TABLE_HEADER_LINES + thread_meters_lines(t) + 1;
}

int table_view_visible_rows(const struct tui *t)
{
	int n = t->lines - table_view_first_row(t) - 1;

	return n > 0 ? n : 0;
}

static const struct model_coro *table_view_selected(const struct tui *t)
{
	if (t->table.list.selected >= t->table.nrows ||
	    t->table.rows[t->table.list.selected].coro == UINT32_MAX)
		return NULL;
	return &t->snap.coro[t->table.rows[t->table.list.selected].coro];
}

static bool table_grow(struct tui *t, size_t need)
{
	return grow_array((void **)&t->table.rows, &t->table.cap_rows, need,
			  sizeof(*t->table.rows));
}

/* t->table.rows from the sorted indexes idx[0..n), with a header row before
 * each thread's rows when grouping. */
static size_t table_fill(struct tui *t, const uint32_t *idx, size_t n)
{
	const struct model_coro *c = t->snap.coro;
	size_t out = 0;

	for (size_t i = 0; i < n; i++) {
		uint32_t k = idx[i];

		if (t->table.group_by_thread &&
		    (!i || c[idx[i - 1]].last_tid != c[k].last_tid)) {
			size_t end = i + 1;

			while (end < n && c[idx[end]].last_tid == c[k].last_tid)
				end++;
			t->table.rows[out++] = (struct tui_row){
				.coro = UINT32_MAX,
				.tid = c[k].last_tid,
				.count = (uint32_t)(end - i),
			};
		}
		t->table.rows[out++] = (struct tui_row){.coro = k};
	}
	return out;
}

void table_view_rebuild(struct tui *t)
{
	struct rowset_order order = {.column = t->table.sort_column,
				     .invert = t->table.sort_invert,
				     .group = t->table.group_by_thread};
	size_t n, i;

	/* Worst case: every coroutine on its own thread, plus headers. */
	if (!table_grow(t, 2 * t->snap.count + 1)) {
		t->table.nrows = 0;
		return;
	}
	t->table.named = false;
	for (i = 0; i < t->snap.count && !t->table.named; i++)
		t->table.named = t->snap.coro[i].name != 0;
	if (!rowset_select(&t->table.rowset, &t->snap, &t->table.filter, &order,
			   &n))
		snprintf(t->message, sizeof(t->message),
			 "out of memory: rows are not sorted");
	n = t->table.nrows = table_fill(t, t->table.rowset.idx, n);
	if (!t->table.chosen && !tui_view(t)->follows) {
		t->table.list.selected = 0;
		if (n && t->table.rows[0].coro != UINT32_MAX)
			t->selected_id = t->snap.coro[t->table.rows[0].coro].id;
		return;
	}
	/* Keep the selection on the same coroutine: find its record (one
	 * sequential pass), then its row (rows are small), rather than
	 * chasing every row into the snapshot. */
	for (i = 0; i < t->snap.count; i++)
		if (t->snap.coro[i].id == t->selected_id)
			break;
	for (size_t r = 0; i < t->snap.count && r < n; r++)
		if (t->table.rows[r].coro == i) {
			t->table.list.selected = r;
			return;
		}
	if (t->table.list.selected >= n)
		t->table.list.selected = n ? n - 1 : 0;
	/* The table moves on to a neighbour; the detail view keeps asking
	 * for its own coroutine, and says so when it is gone. */
	if (n && t->table.rows[t->table.list.selected].coro != UINT32_MAX &&
	    !tui_view(t)->follows)
		t->selected_id =
			t->snap.coro[t->table.rows[t->table.list.selected].coro]
				.id;
}

/* Move the selection to the next (dir 1) or previous (-1) search match. */
static bool table_view_search(struct tui *t, int dir, bool include_current)
{
	size_t n = t->table.nrows;

	for (size_t k = include_current ? 0 : 1; k <= n && n; k++) {
		size_t i =
			(t->table.list.selected + (dir > 0 ? k : n - k % n)) %
			n;

		if (t->table.rows[i].coro == UINT32_MAX)
			continue;
		if (filter_row_contains(&t->snap,
					&t->snap.coro[t->table.rows[i].coro],
					t->search)) {
			t->table.list.selected = i;
			t->table.chosen = true;
			t->selected_id = t->snap.coro[t->table.rows[i].coro].id;
			return true;
		}
	}
	return false;
}

/* The table's search (view.h): incremental (include_current) or n / N. */
static void table_view_find(struct tui *t, int dir, bool include_current)
{
	if (!t->search[0] || table_view_search(t, dir, include_current))
		return;
	snprintf(t->message, sizeof(t->message),
		 include_current ? "no match for '%s'"
				 : "no more matches for '%s'",
		 t->search);
}

static bool table_view_filter(struct tui *t, const char *text, char *err,
			      size_t errlen)
{
	return filter_set(&t->table.filter, text, err, errlen);
}

static const char *table_view_filter_text(const struct tui *t)
{
	return t->table.filter.text;
}

/* ---- layout ---- */

/* The columns the user did not hide, dropped by priority when the screen
 * is narrow; WHERE takes what is left (term_layout).  NAME only while some
 * coroutine has a name, PID only once the program ran as more than one
 * process (table_multiprocess). */
#define TABLE_WHERE_LEAST 24 /* WHERE's width before SEQ, LOST... go */
#define TABLE_WHERE_WIDE 64  /* scrolled: WHERE's least width ... */
#define TABLE_WHERE_MAX 200  /* ... and its most: the longest shown */
#define TABLE_HSCROLL_STEP 8

/* Scrolled, WHERE is as wide as the longest of the rows on the screen
 * (TABLE_WHERE_WIDE to TABLE_WHERE_MAX), so that Right reads it whole. */
static int table_where_wide(const struct tui *t)
{
	int most = TABLE_WHERE_WIDE, rows = table_view_visible_rows(t);

	for (size_t i = t->table.list.top;
	     i < t->table.nrows && i < t->table.list.top + (size_t)rows; i++) {
		char cell[TABLE_WHERE_MAX + 1];
		int len;

		if (t->table.rows[i].coro == UINT32_MAX)
			continue;
		column_table[COL_WHERE].cell(
			cell, sizeof(cell), &t->snap,
			&t->snap.coro[t->table.rows[i].coro]);
		len = (int)strlen(cell);
		if (len > most)
			most = len;
	}
	return most;
}

/* Whether the program ran as more than one process (pid): the PID column
 * shows then.  An exec keeps the pid: one process. */
static bool table_multiprocess(const struct tui *t)
{
	for (size_t k = 1; k < t->snap.nprocs; k++)
		if (t->snap.procs[k].pid != t->snap.procs[0].pid)
			return true;
	return false;
}

/* The fitted table, or with `wide` the full one (Right). */
static void table_layout(const struct tui *t, struct term_layout *lay,
			 bool wide)
{
	struct term_layout_column col[COL_COUNT];
	int full = 1; /* the full table's width, and the spare column */
	int where = wide ? table_where_wide(t) : TABLE_WHERE_LEAST;
	bool multi = table_multiprocess(t);

	for (int c = 0; c < COL_COUNT; c++) {
		col[c] = (struct term_layout_column){
			.width = column_table[c].width,
			/* Scrolled: nothing is dropped, WHERE is wide. */
			.least = where,
			.priority = wide ? 0 : column_table[c].priority,
			.hidden = t->hidden[c] ||
				  (c == COL_NAME && !t->table.named) ||
				  (c == COL_PID && !multi),
		};
		if (!col[c].hidden)
			full += (col[c].width < 0 ? col[c].least
						  : col[c].width) +
				1;
	}
	term_layout(lay, col, COL_COUNT, wide ? full : t->cols);
}

/* The full table's width: where the last shown column ends. */
static int table_full_width(const struct tui *t)
{
	struct term_layout lay;
	int end = 0;

	table_layout(t, &lay, true);
	for (int c = 0; c < COL_COUNT; c++)
		if (lay.shown[c] && lay.x[c] + lay.width[c] > end)
			end = lay.x[c] + lay.width[c];
	return end;
}

/* Right and Left: scroll by TABLE_HSCROLL_STEP, within the full table. */
static unsigned table_view_hscroll(struct tui *t, int dir)
{
	int most = table_full_width(t) - t->cols + 1;
	int to = t->table.hscroll + dir * TABLE_HSCROLL_STEP;

	if (to > most)
		to = most;
	if (to < 0)
		to = 0;
	if (to == t->table.hscroll) {
		if (dir > 0 && to == 0)
			snprintf(t->message, sizeof(t->message),
				 "the whole table fits: nothing to scroll");
		return dir > 0 && to == 0 ? REACT_REDRAW : REACT_NONE;
	}
	t->table.hscroll = to;
	return REACT_REDRAW;
}

/* Text of width w at the full table's column x, shifted by the scroll and
 * cut at the screen's left edge (term_text cuts the right). */
static void table_cell(const struct tui *t, int y, int x, int w, int attr,
		       bool left, const char *text)
{
	char buf[TABLE_WHERE_MAX + 8];
	int skip;

	if (w > (int)sizeof(buf) - 1)
		w = (int)sizeof(buf) - 1;
	snprintf(buf, sizeof(buf), left ? "%-*.*s" : "%*.*s", w, w, text);
	x -= t->table.hscroll;
	skip = x < 0 ? -x : 0;
	while (skip < w && (buf[skip] & 0xc0) == 0x80)
		skip++; /* not into a UTF-8 sequence */
	if (skip >= w)
		return;
	term_text(y, x + skip, attr, "%s", buf + skip);
}

/* A column's title at the full table's column x, then the sort arrow
 * when it is the sort column (else NULL); shifted like the cells. */
static void table_title(const struct tui *t, int y, int x, int attr,
			const char *name, const char *arrow)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%s%s", name, arrow ? arrow : "");
	table_cell(t, y, x, (int)strlen(buf), attr, true, buf);
}

/* ---- actions ---- */

unsigned table_view_move(struct tui *t, long delta)
{
	long sel;

	if (!term_list_move(&t->table.list, t->table.nrows, delta))
		return REACT_NONE;
	sel = (long)t->table.list.selected;
	/* Group headers are not selectable: step on to a coroutine in the
	 * direction of travel, or back if the header is the last row. */
	while (t->table.rows[sel].coro == UINT32_MAX) {
		long next = sel + (delta < 0 && sel > 0 ? -1 : 1);

		if (delta < 0 && sel == 0)
			next = 1;
		if (next < 0 || next >= (long)t->table.nrows)
			break;
		sel = next;
		if (delta < 0 && sel == 0)
			break;
	}
	t->table.list.selected = (size_t)sel;
	t->table.chosen = true;
	detail_view_forget(t); /* another coroutine's starts at its top */
	if (t->table.rows[sel].coro != UINT32_MAX)
		t->selected_id = t->snap.coro[t->table.rows[sel].coro].id;
	return REACT_REDRAW;
}

unsigned table_view_sort(struct tui *t, int dir)
{
	/* PID is skipped while the program is one process (not shown). */
	do
		t->table.sort_column =
			(t->table.sort_column + dir + COL_COUNT) % COL_COUNT;
	while (t->table.sort_column == COL_PID && !table_multiprocess(t));
	snprintf(t->message, sizeof(t->message), "sorted by %s%s",
		 column_table[t->table.sort_column].title,
		 t->table.sort_invert ? " (inverted)" : "");
	return REACT_REBUILD | REACT_REDRAW;
}

/* While the table shows: Enter opens the selected coroutine, Esc clears
 * the filter first. */
static int table_view_action(struct tui *t, enum tui_action a, int page)
{
	(void)page;
	switch (a) {
	case ACT_ENTER:
		if (!table_view_selected(t))
			return REACT_NONE;
		t->table.chosen = true;
		return (int)tui_view_show(t, VIEW_DETAIL);
	case ACT_RIGHT:
		return (int)table_view_hscroll(t, 1);
	case ACT_LEFT:
		return (int)table_view_hscroll(t, -1);
	case ACT_TREE:
		/* htop's F5 is its tree; the table's tree is by thread. */
		t->table.group_by_thread = !t->table.group_by_thread;
		return REACT_REBUILD | REACT_REDRAW;
	case ACT_BACK:
		/* Esc clears the search line, then the filter. */
		if (t->search[0]) {
			t->search[0] = '\0';
			return REACT_REDRAW;
		}
		if (!t->table.filter.active)
			return -1;
		filter_set(&t->table.filter, "", NULL, 0);
		return REACT_REBUILD | REACT_REDRAW;
	default:
		return -1;
	}
}

/* The column under screen column x in the titles, or -1. */
static int table_view_column_at(const struct tui *t, int x)
{
	struct term_layout lay;

	table_layout(t, &lay, t->table.hscroll > 0);
	x += t->table.hscroll;
	for (int c = 0; c < COL_COUNT; c++)
		if (lay.shown[c] && x >= lay.x[c] &&
		    x <= lay.x[c] + lay.width[c])
			return c;
	return -1;
}

/* The wheel moves, a click on a row selects it, a click on a column's
 * title sorts by it (again: inverted). */
static unsigned table_view_mouse(struct tui *t, const MEVENT *ev)
{
	int first = table_view_first_row(t);

	if (ev->bstate & BUTTON4_PRESSED)
		return table_view_move(t, -3);
	if (ev->bstate & BUTTON5_PRESSED)
		return table_view_move(t, 3);
	if (!(ev->bstate & (BUTTON1_CLICKED | BUTTON1_PRESSED)))
		return REACT_NONE;
	if (ev->y == first - 1) {
		int col = table_view_column_at(t, ev->x);

		if (col < 0)
			return REACT_NONE;
		if (col == t->table.sort_column)
			t->table.sort_invert = !t->table.sort_invert;
		t->table.sort_column = col;
		return table_view_sort(t, 0);
	}
	if (ev->y >= first &&
	    (size_t)(ev->y - first) + t->table.list.top < t->table.nrows)
		return table_view_move(
			t, (long)(t->table.list.top + (size_t)(ev->y - first)) -
				   (long)t->table.list.selected);
	return REACT_NONE;
}

/* ---- drawing ---- */

/* "REC file 12.3 MB", and what the recorder had to drop, on the header
 * line from column x: a recording in progress is never invisible. */
static void table_record_mark(struct tui *t, int x,
			      const struct snapshot_record *r)
{
	const char *slash = r->path ? strrchr(r->path, '/') : NULL;
	const char *name = slash ? slash + 1 : r->path ? r->path : "";
	int hdr = tui_attr(t, PAIR_HEADER);

	x = term_text(0, x, hdr | A_BOLD,
		      r->stopped ? "  REC STOPPED" : "  REC");
	x = term_text(0, x, hdr, " %s %.1f MB", name, (double)r->bytes / 1e6);
	if (r->dropped)
		term_text(0, x, hdr | A_BOLD, "  %" PRIu64 " dropped",
			  r->dropped);
}

/* Why the sort column is not on the screen, or NULL when it is: the
 * table is too narrow for it (or scrolled past it), or setup hides it. */
static const char *table_sort_off(const struct tui *t)
{
	struct term_layout lay;
	int k = t->table.sort_column, x;

	if (t->hidden[k])
		return "hidden (F2 shows it)";
	table_layout(t, &lay, t->table.hscroll > 0);
	x = lay.x[k] - t->table.hscroll;
	/* (Some of it on the screen is enough: its cells say what they
	 * are.) */
	if (lay.shown[k] && x + lay.width[k] > 0 && x < t->cols)
		return NULL;
	return lay.shown[k] && x < 0 ? "off screen (Left scrolls to it)"
				     : "off screen (Right scrolls to it)";
}

/* The status line when no message has it: what shapes the rows shown --
 * the filter, the search, a sort column the screen does not show, the
 * grouping by thread -- so that a table that
 * looks odd says why (htop's header says "Tree" the same way). */
static void table_state_line(struct tui *t, const char *filter)
{
	const char *off = t->view == VIEW_TABLE ? table_sort_off(t) : NULL;
	int x = 0;

	if (filter[0])
		x = term_text(3, x, TUI_NORMAL, " filter: %s", filter);
	if (t->search[0])
		x = term_text(3, x, TUI_NORMAL, " %ssearch: %s", x ? " " : "",
			      t->search);
	if (off)
		x = term_text(3, x, TUI_NORMAL, " %ssorted by %s%s: %s",
			      x ? " " : "",
			      column_table[t->table.sort_column].title,
			      t->table.sort_invert ? " (inverted)" : "", off);
	if (t->table.group_by_thread && t->view == VIEW_TABLE)
		term_text(3, x, TUI_NORMAL, " %sgrouped by thread (t ungroups)",
			  x ? " " : "");
}

void table_view_header(struct tui *t)
{
	const struct snapshot *s = &t->snap;
	/* The filter of the rows shown: the ppt view has one of its own. */
	const char *filter = tui_view_rows(t)->filter_text(t);
	char target[80];
	struct engine_output_lines ol;
	int meter = tui_attr(t, PAIR_METER), warn = tui_attr(t, PAIR_WARN);
	int x;

	term_fill(0, tui_attr(t, PAIR_HEADER));
	if (s->replay.on) {
		replay_ctl_header(t, 0);
	} else {
		x = term_text(0, 0, tui_attr(t, PAIR_HEADER),
			      " corotop  %s  engine %s%s",
			      snapshot_target_text(s, target, sizeof(target)),
			      s->error	    ? "STOPPED"
			      : s->sleeping ? "asleep"
					    : "harvesting",
			      t->paused ? "  [PAUSED]" : "");
		engine_output_lines(t->engine, &ol);
		if (ol.total > t->output_seen && t->view != VIEW_OUTPUT)
			x = term_text(0, x, tui_attr(t, PAIR_HEADER) | A_BOLD,
				      "  output +%" PRIu64 " (o)",
				      ol.total - t->output_seen);
		if (s->record.on)
			table_record_mark(t, x, &s->record);
	}
	x = term_text(1, 0, A_NORMAL, " Events ");
	x = term_text(1, x, meter, "%.0f/s", s->t.events_per_sec);
	x = term_text(1, x, A_NORMAL, "  lost ");
	x = term_text(1, x, s->t.lost ? warn : meter, "%" PRIu64, s->t.lost);
	if (!s->replay.on) { /* neither is recorded */
		x = term_text(1, x, A_NORMAL, "  untraced ");
		x = term_text(1, x, s->t.untraced ? warn : meter, "%" PRIu64,
			      s->t.untraced);
		x = term_text(1, x, A_NORMAL, "  stations ");
		x = term_text(1, x, meter, "%u/%u", s->t.stations_allocated,
			      s->t.stations_max);
	}
	x = term_text(1, x, A_NORMAL, "  total %" PRIu64, s->t.events);
	/* Only when it happened: contexts the interposer's table had no
	 * room for are missing from the table below. */
	if (s->contexts_untracked && !s->replay.on)
		x = term_text(1, x, warn, "  untracked contexts %" PRIu64,
			      s->contexts_untracked);
	/* Switches made where the interposer could not see them: the
	 * states below are not to be believed. */
	if (s->switches_unseen && !s->replay.on)
		term_text(1, x, warn, "  unseen switches %" PRIu64,
			  s->switches_unseen);
	x = term_text(2, 0, A_NORMAL, " Coroutines %zu: ", s->count);
	x = term_text(2, x, tui_attr(t, PAIR_RUNNING), "R %u", s->t.running);
	x = term_text(2, x, A_NORMAL, "  S %u  ", s->t.suspended);
	x = term_text(2, x, tui_attr(t, PAIR_DEAD), "D %u", s->t.dead);
	/* The warning counts are never cut: on a narrow screen "recycled"
	 * goes first, then the spaces inside the counts. */
	{
		char rec[40] = "", counts[LINT_COUNT][24];
		int wlen = 0;
		bool tight;

		if (!s->replay.on)
			snprintf(rec, sizeof(rec), "  recycled %" PRIu64,
				 s->t.recycled);
		for (int k = 0; k < LINT_COUNT; k++)
			wlen += snprintf(counts[k], sizeof(counts[k]), " %s %u",
					 lint_tag((enum lint_kind)k),
					 s->warn_counts[k]);
		if (x + (int)strlen(rec) + 11 + wlen > t->cols)
			rec[0] = '\0';
		tight = x + 11 + wlen > t->cols;
		x = term_text(2, x, A_NORMAL, "%s%s", rec,
			      tight ? "  Warn" : "   Warnings");
		for (int k = 0; k < LINT_COUNT; k++)
			x = term_text(
				2, x, s->warn_counts[k] ? warn : TUI_NORMAL,
				tight ? " %s%u" : " %s %u",
				lint_tag((enum lint_kind)k), s->warn_counts[k]);
	}
	if (t->input == INPUT_GOTO) {
		term_text(3, 0, A_NORMAL,
			  " Go to (12.5s, 1:30, +5s, -2s, 50%%, end): %s",
			  t->line);
		curs_set(1);
	} else if (s->error)
		term_text(3, 0, warn, " %s", s->error);
	else if (s->warning && !t->message[0])
		term_text(3, 0, warn, " %s", s->warning);
	else if (t->message[0])
		term_text(3, 0, A_NORMAL, " %s", t->message);
	else
		table_state_line(t, filter);
}

/* One key of the table's key bar, shown when its view exists. */
struct table_bar_key {
	const char *key, *label;
	enum tui_view needs; /* VIEW_TABLE: always */
};

/* Whether the view a bar key opens exists now. */
static bool table_bar_shows(const struct tui *t, enum tui_view v)
{
	switch (v) {
	case VIEW_OUTPUT:
		return t->output;
	case VIEW_PPT:
		return t->snap.target.attached;
	default:
		return true;
	}
}

static void table_draw_bar(struct tui *t)
{
	static const struct table_bar_key live[] = {
		{"F1", "Help", VIEW_TABLE},	 {"F3", "Search", VIEW_TABLE},
		{"F4", "Filter", VIEW_TABLE},	 {"F6", "Sort", VIEW_TABLE},
		{"Enter", "Detail", VIEW_TABLE}, {"o", "Output", VIEW_OUTPUT},
		{"w", "Warn", VIEW_TABLE},	 {"H", "Hot", VIEW_TABLE},
		{"P", "ppt", VIEW_PPT},		 {"F10", "Quit", VIEW_TABLE},
		{"t", "Group", VIEW_TABLE},	 {"Spc", "Pause", VIEW_TABLE},
	};
	static const struct table_bar_key replay[] = {
		{"F1", "Help", VIEW_TABLE},  {"Spc", "Play", VIEW_TABLE},
		{"[]", "Step", VIEW_TABLE},  {"+-", "Speed", VIEW_TABLE},
		{"T", "GoTo", VIEW_TABLE},   {"F4", "Filter", VIEW_TABLE},
		{"F6", "Sort", VIEW_TABLE},  {"Enter", "Detail", VIEW_TABLE},
		{"F10", "Quit", VIEW_TABLE},
	};
	const struct table_bar_key *bar = t->replay ? replay : live;
	size_t nbar = t->replay ? sizeof(replay) / sizeof(replay[0])
				: sizeof(live) / sizeof(live[0]);
	int y = t->lines - 1;

	move(y, 0);
	if (t->input == INPUT_GOTO)
		return; /* the header's line shows it */
	if (t->input != INPUT_NONE) {
		term_text(y, 0, A_NORMAL, "%s: %s",
			  t->input == INPUT_SEARCH ? "Search" : "Filter",
			  t->line);
		curs_set(1);
		return;
	}
	curs_set(0);
	for (size_t i = 0; i < nbar; i++)
		if (table_bar_shows(t, bar[i].needs) &&
		    !term_bar_key(bar[i].key, bar[i].label,
				  tui_attr(t, PAIR_HEADER)))
			break;
}

static int table_row_attr(const struct tui *t, const struct model_coro *c,
			  bool selected)
{
	if (selected)
		return tui_attr(t, PAIR_SELECTED);
	if (c->state == MODEL_RUNNING)
		return tui_attr(t, PAIR_RUNNING);
	if (c->state == MODEL_DEAD)
		return tui_attr(t, PAIR_DEAD);
	return A_NORMAL;
}

static void table_draw_row(struct tui *t, int y, const struct tui_row *r,
			   const struct term_layout *lay, bool selected)
{
	const struct model_coro *c;
	int attr;

	if (r->coro == UINT32_MAX) {
		attr = selected ? tui_attr(t, PAIR_SELECTED)
				: tui_attr(t, PAIR_GROUP);
		attron(attr);
		/* tid 0: no transition yet (the TID column shows "-"). */
		if (r->tid)
			term_text(y, 0, TUI_NORMAL,
				  "%s thread %" PRIu64 ": %u coroutine%s",
				  t->ascii ? "--" : "\u2500\u2500", r->tid,
				  r->count, r->count == 1 ? "" : "s");
		else
			term_text(y, 0, TUI_NORMAL,
				  "%s not run yet: %u coroutine%s",
				  t->ascii ? "--" : "\u2500\u2500", r->count,
				  r->count == 1 ? "" : "s");
		attroff(attr);
		return;
	}
	c = &t->snap.coro[r->coro];
	attr = table_row_attr(t, c, selected);
	if (selected)
		term_fill(y, attr);
	attron(attr);
	for (int k = 0; k < COL_COUNT; k++) {
		char cell[TABLE_WHERE_MAX + 1];
		int w = lay->width[k];

		if (!lay->shown[k])
			continue;
		column_table[k].cell(cell, sizeof(cell), &t->snap, c);
		table_cell(t, y, lay->x[k], w,
			   k == COL_WARN && c->warn && !selected
				   ? tui_attr(t, PAIR_WARN)
				   : (int)A_NORMAL,
			   column_table[k].width < 0 || column_table[k].left,
			   cell);
	}
	attroff(attr);
}

void table_view_draw(struct tui *t)
{
	struct term_layout lay;
	int first = table_view_first_row(t), rows = table_view_visible_rows(t);
	int title = tui_attr(t, PAIR_TITLE);
	size_t sel;

	table_layout(t, &lay, t->table.hscroll > 0);
	thread_meters_draw(t, TABLE_HEADER_LINES);
	term_fill(first - 1, title);
	attron(title);
	/* The arrow points the way the rows go: down for a rate's busiest
	 * first (order.c). */
	bool down = t->table.sort_invert !=
		    column_table[t->table.sort_column].busiest_first;
	const char *arrow = down ? (t->ascii ? "v" : "\u25bc")
				 : (t->ascii ? "^" : "\u25b2");

	for (int k = 0; k < COL_COUNT; k++) {
		const char *name = column_table[k].title;
		int x = lay.x[k], w = lay.width[k];

		if (!lay.shown[k])
			continue;
		/* The arrow follows a left-aligned title and sits in the gap
		 * after a right-aligned one. */
		if (!(column_table[k].width < 0 || column_table[k].left))
			x += w - (int)strlen(name);
		table_title(t, first - 1, x, title, name,
			    k == t->table.sort_column ? arrow : NULL);
	}
	/* More to the left, more to the right. */
	if (t->table.hscroll > 0)
		term_text(first - 1, 0, title, "<");
	if (table_full_width(t) - t->table.hscroll > t->cols - 1 &&
	    t->table.hscroll > 0)
		term_text(first - 1, t->cols - 1, title, ">");
	attroff(title);
	/* Scroll so the selection stays visible, a group's header together
	 * with its first row. */
	sel = t->table.list.selected;
	term_list_follow(&t->table.list, rows,
			 sel && sel < t->table.nrows &&
				 t->table.rows[sel - 1].coro == UINT32_MAX);
	term_list_fill(&t->table.list, t->table.nrows, rows);
	for (int i = 0;
	     i < rows && t->table.list.top + (size_t)i < t->table.nrows; i++)
		table_draw_row(t, first + i,
			       &t->table.rows[t->table.list.top + (size_t)i],
			       &lay,
			       t->table.list.top + (size_t)i ==
				       t->table.list.selected);
	if (!t->table.nrows && t->table.filter.held && !t->table.filter.active)
		term_text(first, 1, A_NORMAL,
			  "%zu coroutine%s just made, not switched yet",
			  t->table.filter.held,
			  t->table.filter.held == 1 ? "" : "s");
	else if (!t->table.nrows)
		term_text(first, 1, A_NORMAL, "%s",
			  t->table.filter.active
				  ? "no coroutine matches the filter"
				  : "no coroutines yet");
	table_draw_bar(t);
}

const struct tui_view_impl table_view_impl = {
	.name = "table",
	.draw = table_view_draw,
	.action = table_view_action,
	.mouse = table_view_mouse,
	.search = table_view_find,
	.filter = table_view_filter,
	.filter_text = table_view_filter_text,
};
