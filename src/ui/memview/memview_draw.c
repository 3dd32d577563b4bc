/*
 * memview_draw: the memory view's screen, drawn from the view's state only
 * (the loop calls it once per pass, when something is dirty).
 *
 * Top to bottom:
 *   title bar   corotop  memory  FILE  STATE [PAUSED]; STATE is "reading
 *               N%" (a FIFO or pipe: "reading"), "complete", "truncated",
 *               "error at byte N" or "read error"
 *   read line   bytes and records read; while reading, the rate of the
 *               last refresh interval in records/s, K or M records/s
 *               ("waiting for data" when a pipe brought nothing)
 *   totals      accesses (reads, writes, untyped, cross-line), their
 *               flags (atomic, read-modify-write pairs, unaligned), RTTA
 *               (adds, removes, live, overlaps); counts that mean loss
 *               or damage show in red, and only when not 0
 *   problem     what stopped or cut the reading (red, up to three lines)
 *   note        when every access has one thread id (the shipped runtime
 *               writes 0): per-thread and false-sharing results see one
 *               thread
 *   status      a one-shot message, or the search in effect
 *   tabs        1 False sharing  2 Hot lines  3 Types  4 Threads, with
 *               their row counts; the shown tab highlighted
 *   table       column titles (the sort column marked), then the rows;
 *               False sharing adds the byte map of the selected line: which
 *               of its 64 bytes each thread touched
 *   key bar     as the coroutine table's (memview_keys_bar: Enter Open on
 *               Types only), or the search line being typed
 * The help (F1) takes the table's place: the key table, then the shown
 * tab's columns, both from their const tables.  Columns are dropped by
 * priority when the screen is narrow, as in the coroutine table.
 */
#define _GNU_SOURCE
#include <curses.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/memview/memview.h"
#include "ui/term/layout.h"
#include "ui/term/text.h"

#define MEMVIEW_NORMAL ((int)A_NORMAL)
#define MEMVIEW_MAP_LABEL 22 /* the byte map starts at this column */

int memview_attr(const struct memview *v, enum memview_pair p)
{
	if (v->color)
		return COLOR_PAIR(p) | (p == MEMVIEW_PAIR_TITLE ? A_BOLD : 0);
	switch (p) {
	case MEMVIEW_PAIR_HEADER:
	case MEMVIEW_PAIR_TITLE:
	case MEMVIEW_PAIR_SELECTED:
		return A_REVERSE;
	case MEMVIEW_PAIR_WARN:
		return A_BOLD;
	case MEMVIEW_PAIR_DIM:
		return A_DIM;
	default:
		return A_NORMAL;
	}
}

/* text over at most max lines from y, broken at blanks; lines used. */
static int memview_wrap(const struct memview *v, int y, int attr,
			const char *text, int max)
{
	int used = 0, w = v->cols - 2;
	const char *p = text;

	while (*p && used < max && w > 10) {
		int n = (int)strlen(p);

		if (n > w && used + 1 < max) {
			n = w;
			while (n > w / 2 && p[n] != ' ')
				n--;
			if (p[n] != ' ')
				n = w;
		}
		term_text(y + used, 1, attr, "%.*s", n, p);
		p += n;
		while (*p == ' ')
			p++;
		used++;
	}
	return used;
}

/* ---- header ---- */

static const char *cray_state(const struct memview *v, char *b, size_t n)
{
	const struct cray_source *s = &v->src;
	uint64_t off = 0;

	switch (s->state) {
	case CRAY_READING:
		if (cray_source_percent(s) < 0)
			return "reading";
		snprintf(b, n, "reading %d%%", cray_source_percent(s));
		return b;
	case CRAY_COMPLETE:
		return "complete";
	case CRAY_TRUNCATED:
		return "truncated";
	case CRAY_BAD:
		cacheray_error(s->c, &off);
		snprintf(b, n, "error at byte %" PRIu64, off);
		return b;
	default:
		return "read error";
	}
}

static int memview_read_line(const struct memview *v, int y)
{
	const struct cray_source *s = &v->src;
	int meter = memview_attr(v, MEMVIEW_PAIR_METER), x;
	struct cacheray_totals t;
	char rate[48];

	cacheray_totals(s->c, &t);
	x = term_text(y, 0, MEMVIEW_NORMAL, " Read ");
	x = term_text(y, x, meter, "%" PRIu64, s->got);
	if (s->state == CRAY_READING && cray_source_percent(s) >= 0)
		x = term_text(y, x, MEMVIEW_NORMAL, " of %" PRIu64, s->size);
	x = term_text(y, x, MEMVIEW_NORMAL, " bytes, ");
	x = term_text(y, x, meter, "%" PRIu64, t.records);
	x = term_text(y, x, MEMVIEW_NORMAL, " records");
	if (s->state != CRAY_READING || v->rate < 0)
		return y + 1;
	if (v->rate == 0 && s->pollable) {
		term_text(y, x, MEMVIEW_NORMAL, "  waiting for data");
		return y + 1;
	}
	cray_source_rate_text(v->rate, rate, sizeof(rate));
	term_text(y, x, meter, "  %s", rate);
	return y + 1;
}

/* "label value" pairs from x, values in the meter colour; a pair with warn
 * set shows only when its value is not 0, in red. */
struct memview_kv {
	const char *label;
	uint64_t value;
	bool warn;
};

static void memview_kvs(const struct memview *v, int y, int x,
			const struct memview_kv *kv, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (kv[i].warn && !kv[i].value)
			continue;
		x = term_text(y, x, MEMVIEW_NORMAL, "%s%s ", i ? "  " : " ",
			      kv[i].label);
		x = term_text(y, x,
			      memview_attr(v, kv[i].warn ? MEMVIEW_PAIR_WARN
							 : MEMVIEW_PAIR_METER),
			      "%" PRIu64, kv[i].value);
	}
}

/* Three lines from y: accesses, their flags, RTTA. */
static void memview_totals(const struct memview *v, int y)
{
	const struct cacheray_totals *t = &v->snap.tot;
	const struct memview_kv acc[] = {
		{"reads", t->reads, false},
		{"writes", t->writes, false},
		{"untyped", t->untyped, false},
		{"cross-line", t->cross_line, false},
		{"lines-dropped", t->lines_dropped_accesses, true},
	};
	const struct memview_kv flags[] = {
		{"atomic", t->atomics, false},
		{"rmw-pairs", t->atomic_rmw, false},
		{"unaligned", t->unaligned, false},
	};
	const struct memview_kv rtta[] = {
		{"adds", t->rtta_adds, false},
		{"removes", t->rtta_removes, false},
		{"live", t->rtta_live, false},
		{"overlaps", t->rtta_overlaps, false},
		{"unknown-removes", t->rtta_remove_unknown, true},
		{"refused", t->rtta_full, true},
	};
	int x = term_text(y, 0, MEMVIEW_NORMAL, " Accesses ");

	x = term_text(y, x, memview_attr(v, MEMVIEW_PAIR_METER), "%" PRIu64,
		      t->accesses);
	x = term_text(y, x, MEMVIEW_NORMAL, ":");
	memview_kvs(v, y, x, acc, sizeof(acc) / sizeof(acc[0]));
	x = term_text(y + 1, 0, MEMVIEW_NORMAL, " Flags");
	memview_kvs(v, y + 1, x, flags, sizeof(flags) / sizeof(flags[0]));
	x = term_text(y + 2, 0, MEMVIEW_NORMAL, " RTTA");
	memview_kvs(v, y + 2, x, rtta, sizeof(rtta) / sizeof(rtta[0]));
}

static const char *const memview_note_text[] = {
	[CRAY_NOTE_NONE] = "",
	[CRAY_NOTE_TID0] =
		"note: every access has thread id 0 (the shipped Cacheray "
		"runtime writes 0), so per-thread and false-sharing analysis "
		"sees a single thread",
	[CRAY_NOTE_ONE_TID] = "note: every access has the same thread id, so "
			      "per-thread and false-sharing analysis sees a "
			      "single thread",
};

/* Problem, note and status lines from y; returns the next free line. */
static int memview_notices(const struct memview *v, int y)
{
	const struct cray_source *s = &v->src;
	char b[512];

	if (s->state == CRAY_BAD || s->state == CRAY_FAILED) {
		uint64_t off = 0;
		const char *e = cacheray_error(s->c, &off);
		const char *msg = e ? strchr(e, ':') : NULL;

		if (s->state == CRAY_BAD && msg) {
			struct cacheray_totals t;

			cacheray_totals(s->c, &t);
			snprintf(b, sizeof(b),
				 "error at byte %" PRIu64 ":%s. Reading "
				 "stopped there: the counts are those of the "
				 "%" PRIu64 " records before it.",
				 off, msg + 1, t.records);
		} else {
			snprintf(b, sizeof(b), "%s", s->problem);
		}
		y += memview_wrap(v, y, memview_attr(v, MEMVIEW_PAIR_WARN), b,
				  3);
	} else if (s->state == CRAY_TRUNCATED) {
		struct cacheray_totals t;

		cacheray_totals(s->c, &t); /* (the snapshot may be paused) */
		snprintf(b, sizeof(b),
			 "truncated: the trace ends %zu bytes into a record "
			 "that starts at byte %" PRIu64,
			 cacheray_pending(s->c), t.bytes_read);
		y += memview_wrap(v, y, memview_attr(v, MEMVIEW_PAIR_WARN), b,
				  2);
	}
	if (v->snap.note)
		y += memview_wrap(v, y, MEMVIEW_NORMAL,
				  memview_note_text[v->snap.note], 2);
	if (v->message[0])
		term_text(y, 0, MEMVIEW_NORMAL, " %s", v->message);
	else if (v->search[0] && !v->typing)
		term_text(y, 0, MEMVIEW_NORMAL, " search: %s", v->search);
	return y + 1;
}

static void memview_header(struct memview *v)
{
	char state[64];

	term_fill(0, memview_attr(v, MEMVIEW_PAIR_HEADER));
	term_text(0, 0, memview_attr(v, MEMVIEW_PAIR_HEADER),
		  " corotop  memory  %.60s  %s%s", v->src.name,
		  cray_state(v, state, sizeof(state)),
		  v->paused ? "  [PAUSED]" : "");
	memview_read_line(v, 1);
	memview_totals(v, 2);
}

/* ---- tabs ---- */

static void memview_tab_count(const struct memview *v, int k, char *b, size_t n)
{
	const struct cray_snap *s = &v->snap;

	switch (k) {
	case MEMVIEW_TAB_SHARING:
		snprintf(b, n, "%zu%s", s->nlines[1],
			 s->nlines[1] >= CRAY_SNAP_LINES ? "+" : "");
		return;
	case MEMVIEW_TAB_HOT:
		if (s->tot.lines > s->nlines[0])
			snprintf(b, n, "%zu of %" PRIu64, s->nlines[0],
				 s->tot.lines);
		else
			snprintf(b, n, "%zu", s->nlines[0]);
		return;
	case MEMVIEW_TAB_TYPES:
		snprintf(b, n, "%zu", s->ntypes);
		return;
	default:
		snprintf(b, n, "%zu", s->nthreads);
	}
}

static void memview_tabs_line(struct memview *v, int y)
{
	int x = 0;

	for (int k = 0; k < MEMVIEW_TAB_COUNT; k++) {
		char count[48];

		memview_tab_count(v, k, count, sizeof(count));
		v->tab_x[k] = x;
		x = term_text(y, x + 1,
			      k == (int)v->tab
				      ? memview_attr(v, MEMVIEW_PAIR_SELECTED)
				      : MEMVIEW_NORMAL,
			      " %d %s (%s) ", k + 1, memview_tabs[k].name,
			      count);
	}
	v->tab_x[MEMVIEW_TAB_COUNT] = x;
}

/* ---- table ---- */

static void memview_titles(const struct memview *v, int y,
			   const struct memview_tab_impl *t,
			   const struct term_layout *lay)
{
	int title = memview_attr(v, MEMVIEW_PAIR_TITLE);
	int sort = v->rows.sort[v->tab];
	const char *arrow = v->rows.invert[v->tab] != t->cols[sort].desc
				    ? (v->ascii ? "v" : "\u25bc")
				    : (v->ascii ? "^" : "\u25b2");

	term_fill(y, title);
	for (int c = 0; c < t->ncols; c++) {
		const struct memview_column *col = &t->cols[c];
		int x;

		if (!lay->shown[c])
			continue;
		if (col->left) {
			x = term_text(y, lay->x[c], title, "%s", col->title);
			if (c == sort)
				term_text(y, x, title, "%s", arrow);
		} else {
			term_text(y, lay->x[c], title, "%*s", lay->width[c],
				  col->title);
			if (c == sort) /* in the gap after the column */
				term_text(y, lay->x[c] + lay->width[c], title,
					  "%s", arrow);
		}
	}
}

static int memview_row_attr(const struct memview *v, size_t i, bool selected)
{
	const struct memview_rows *r = &v->rows;

	if (selected)
		return memview_attr(v, MEMVIEW_PAIR_SELECTED);
	if (r->tab == MEMVIEW_TAB_TYPES &&
	    r->row[i].member == MEMVIEW_ROW_ITEM &&
	    r->snap->types[r->row[i].item].special)
		return memview_attr(v, MEMVIEW_PAIR_DIM);
	return MEMVIEW_NORMAL;
}

/* A count wider than its column is shown as 1.2M (or K, G, ...), never
 * with its digits cut. */
static void memview_fit(char *cell, size_t n, int w)
{
	static const char suffix[] = "KMGTPE";
	size_t len = strlen(cell);
	double x;

	if ((int)len <= w || strspn(cell, "0123456789") != len)
		return;
	x = strtod(cell, NULL);
	for (int i = 0; suffix[i]; i++) {
		x /= 1000;
		snprintf(cell, n, "%.1f%c", x, suffix[i]);
		if ((int)strlen(cell) <= w)
			return;
	}
}

static void memview_row(const struct memview *v, int y, size_t i,
			const struct memview_tab_impl *t,
			const struct term_layout *lay, bool selected)
{
	int attr = memview_row_attr(v, i, selected);

	if (selected)
		term_fill(y, attr);
	for (int c = 0; c < t->ncols; c++) {
		char cell[320];
		int w = lay->width[c], a = attr;

		if (!lay->shown[c])
			continue;
		memview_rows_cell(&v->rows, i, c, cell, sizeof(cell));
		if (!t->cols[c].left)
			memview_fit(cell, sizeof(cell), w);
		/* Disjoint bytes on a shared line: false sharing proper. */
		if (!selected && v->tab == MEMVIEW_TAB_SHARING &&
		    !strcmp(cell, "disjoint"))
			a = memview_attr(v, MEMVIEW_PAIR_WARN);
		if (t->cols[c].left)
			term_text(y, lay->x[c], a, "%-*.*s", w, w, cell);
		else
			term_text(y, lay->x[c], a, "%*.*s", w, w, cell);
	}
}

/* Which of the selected line's 64 bytes each thread touched. */
static void memview_byte_map(const struct memview *v, int y)
{
	const struct memview_rows *r = &v->rows;
	const struct cacheray_line *l;
	int warn = memview_attr(v, MEMVIEW_PAIR_WARN);
	char label[32];

	if (!r->nrows || v->list[v->tab].selected >= r->nrows)
		return;
	l = memview_rows_line(r, &r->row[v->list[v->tab].selected]);
	snprintf(label, sizeof(label), " Line 0x%" PRIx64, l->addr);
	term_text(y, 0, A_BOLD, "%.*s", MEMVIEW_MAP_LABEL - 1, label);
	for (int b = 0; b < 64; b += 8)
		term_text(y, MEMVIEW_MAP_LABEL + b, MEMVIEW_NORMAL, "%d", b);
	for (unsigned s = 0; s < l->nthreads; s++) {
		uint64_t mine = l->thread[s].bytes, other = l->thread[!s].bytes;
		char who[32];

		if (l->thread[s].t->other)
			snprintf(who, sizeof(who), "other%s",
				 l->thread[s].wrote ? " (w)" : "");
		else
			snprintf(who, sizeof(who), "thread %" PRIu64 "%s",
				 l->thread[s].t->id,
				 l->thread[s].wrote ? " (w)" : "");
		term_text(y + 1 + (int)s, 3, MEMVIEW_NORMAL, "%.16s", who);
		for (int b = 0; b < 64; b++) {
			bool on = mine >> b & 1, both = on && (other >> b & 1);

			term_text(y + 1 + (int)s, MEMVIEW_MAP_LABEL + b,
				  both ? warn : MEMVIEW_NORMAL, "%s",
				  both	     ? "X"
				  : on	     ? (v->ascii ? "#" : "\u2588")
				  : v->ascii ? "."
					     : "\u00b7");
		}
	}
	if (l->more_threads)
		term_text(y + 3, 3, MEMVIEW_NORMAL,
			  "(more threads touched the line; their bytes are not "
			  "kept)");
}

static void memview_table(struct memview *v, int y)
{
	const struct memview_tab_impl *t = &memview_tabs[v->tab];
	struct term_layout lay;
	struct term_list *l = &v->list[v->tab];
	int rows = v->lines - 1 - (y + 1);
	bool map = v->tab == MEMVIEW_TAB_SHARING && v->rows.nrows &&
		   v->cols >= MEMVIEW_MAP_LABEL + 64 + 1 && rows >= 10;

	if (map)
		rows -= 5; /* a blank line, the map's four */
	memview_tabs_layout(t, v->cols, &lay);
	memview_titles(v, y, t, &lay);
	v->first_row = y + 1;
	v->nvisible = rows > 0 ? rows : 0;
	term_list_follow(l, rows, 0);
	term_list_fill(l, v->rows.nrows, rows);
	for (int i = 0; i < rows && l->top + (size_t)i < v->rows.nrows; i++)
		memview_row(v, y + 1 + i, l->top + (size_t)i, t, &lay,
			    l->top + (size_t)i == l->selected);
	if (!v->rows.nrows)
		term_text(y + 1, 1, MEMVIEW_NORMAL, "%s", t->empty);
	if (map)
		memview_byte_map(v, y + 1 + rows + 1);
}

/* ---- help ---- */

/* Help lines are numbered from 0; those from help_top on that fit between
 * first and last are drawn. */
struct memview_help_cursor {
	const struct memview *v;
	int line, first, last;
};

/* The screen row of the next help line, or -1 when it is not shown. */
static int memview_help_row(struct memview_help_cursor *h)
{
	int y = h->first + h->line++ - h->v->help_top;

	return y >= h->first && y <= h->last ? y : -1;
}

static void memview_help_keys(struct memview_help_cursor *h)
{
	const struct memview *v = h->v;
	int y = memview_help_row(h);

	if (y >= 0)
		term_text(y, 1, A_BOLD, "Keys");
	for (size_t i = 0; i < memview_keys_count; i++) {
		char keys[48] = "";
		size_t used = 0;

		if (!memview_keys[i].help)
			continue;
		for (size_t j = i;
		     j < memview_keys_count &&
		     memview_keys[j].action == memview_keys[i].action;
		     j++) {
			if (!memview_keys[j].keyname ||
			    used >= sizeof(keys) - 1)
				continue;
			used += (size_t)snprintf(
				keys + used, sizeof(keys) - used, "%s%s",
				used ? " " : "", memview_keys[j].keyname);
		}
		y = memview_help_row(h);
		if (y < 0)
			continue;
		term_text(y, 2, memview_attr(v, MEMVIEW_PAIR_METER), "%-21.21s",
			  keys);
		term_text(y, 24, MEMVIEW_NORMAL, "%s", memview_keys[i].help);
	}
}

static void memview_help_columns(struct memview_help_cursor *h)
{
	const struct memview *v = h->v;
	const struct memview_tab_impl *t = &memview_tabs[v->tab];
	int y = memview_help_row(h);

	if (y >= 0)
		term_text(y, 1, A_BOLD, "Columns of %s", t->name);
	for (int c = 0; c < t->ncols; c++) {
		y = memview_help_row(h);
		if (y < 0)
			continue;
		term_text(y, 2, memview_attr(v, MEMVIEW_PAIR_METER), "%-9s",
			  t->cols[c].title);
		term_text(y, 12, MEMVIEW_NORMAL, "%s", t->cols[c].help);
	}
}

static void memview_help(struct memview *v, int y0)
{
	struct memview_help_cursor h = {v, 0, y0, v->lines - 2};
	int rows = h.last - h.first + 1, total = 1;

	for (size_t i = 0; i < memview_keys_count; i++)
		total += memview_keys[i].help != NULL;
	total += 2 + memview_tabs[v->tab].ncols; /* a blank line, the columns */
	v->help_top = term_pager_top(v->help_top, total, rows);
	v->first_row = y0;
	v->nvisible = rows;
	memview_help_keys(&h);
	memview_help_row(&h);
	memview_help_columns(&h);
	term_text(v->lines - 1, 0, MEMVIEW_NORMAL, "%s",
		  total > rows ? "Esc or F1 goes back   Up/Down scroll"
			       : "Esc or F1 goes back");
}

/* ---- key bar ---- */

static void memview_bar(const struct memview *v)
{
	int y = v->lines - 1;

	move(y, 0);
	if (v->typing) {
		term_text(y, 0, MEMVIEW_NORMAL, "Search: %s", v->line);
		curs_set(1);
		return;
	}
	curs_set(0);
	for (size_t i = 0; i < memview_keys_bar_count; i++) {
		const struct memview_bar_key *b = &memview_keys_bar[i];

		if (!memview_keys_bar_on(b, (int)v->tab))
			continue;
		if (!term_bar_key(b->key, b->label,
				  memview_attr(v, MEMVIEW_PAIR_HEADER)))
			break;
	}
}

void memview_draw(struct memview *v)
{
	int y;

	erase();
	if (v->lines < 10 || v->cols < 40) {
		term_text(0, 0, MEMVIEW_NORMAL, "corotop needs 40x10");
		term_text(1, 0, MEMVIEW_NORMAL, "(this is %dx%d)", v->cols,
			  v->lines);
	} else {
		memview_header(v);
		y = memview_notices(v, 5);
		memview_tabs_line(v, y);
		if (v->help) {
			memview_help(v, y + 1);
		} else {
			memview_table(v, y + 1);
			memview_bar(v);
		}
	}
	wnoutrefresh(stdscr);
	doupdate();
}
