/*
 * ppt_view: the frames of the attached process's ppt buffers (P), one tab
 * per buffer (Tab, Shift-Tab), newest first, one column per member --
 * intervals folded into one duration or difference -- with the buffer's
 * rate and books (frames/s, delivered, lost, torn) above.
 *
 * The view keeps its own copy of the selected buffer's newest frames
 * (PPT_UI_KEEP), refilled on each refresh from the engine's history and
 * never while paused, so rows do not move under the cursor; switching tabs
 * starts the copy again from what the engine still holds.  The selection
 * follows its frame (by delivery position).  Search (/, n, N) and filter
 * (\) work as in the table, on the frame's text "TYPE name=value ...".
 *
 * Columns: the union of every frame type's columns, in the order they
 * first appear; a frame of a type without a column leaves its cell empty.
 */
#define _GNU_SOURCE
#include <curses.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/duration.h"
#include "ui/rows/pptfilter.h"
#include "ui/tui/tui.h"

#define PPT_UI_KEEP 2048u
#define PPT_UI_BYTES (16u << 20)
#define PPT_UI_COLS 64u
#define PPT_FIRST_ROW 7 /* tabs on 4, books on 5, titles on 6 */
#define PPT_CELL 64
#define PPT_TYPE_MAX 16 /* longer type names are cut */
#define PPT_UI_BUFFERS 64

/* The view's state: the buffers as of the last refresh, a copy of the
 * selected buffer's newest frames, the rows the filter keeps (newest
 * first), and its own filter (the search line is the table's: t->search). */
struct ppt_view {
	struct engine_ppt_info info;
	struct engine_ppt_buffer bufs[PPT_UI_BUFFERS];
	size_t nbufs;
	size_t tab; /* the buffer shown */
	bool tab_set;
	/* The copy: a ring of cap frames, positions next - n .. next - 1. */
	unsigned char *bytes;
	struct engine_ppt_frame *meta;
	size_t cap, n;
	uint64_t next;	  /* engine position after the newest copied */
	uint64_t omitted; /* frames that went by faster than the copy */
	uint32_t *rows;	  /* ring slots, newest first */
	size_t nrows;
	struct term_list list;
	uint64_t selected_pos;
	struct pptfilter filter;
};

static struct ppt_view *ppt_of(const struct tui *t)
{
	return t->view_state[VIEW_PPT];
}

static void ppt_finish(struct ppt_view *p)
{
	free(p->bytes);
	free(p->meta);
	free(p->rows);
	pptfilter_finish(&p->filter);
	p->bytes = NULL;
	p->meta = NULL;
	p->rows = NULL;
	p->cap = p->n = p->nrows = 0;
}

static const struct ppt_desc *ppt_desc(struct tui *t)
{
	const struct ppt_view *p = ppt_of(t);

	return p->nbufs ? engine_ppt_desc(t->engine, p->tab) : NULL;
}

/* Ring slot of the k-th newest frame copied (k = 0: the newest). */
static size_t ppt_slot(const struct ppt_view *p, size_t k)
{
	return (size_t)((p->next - 1 - k) % p->cap);
}

/* The columns of the tab: every type's, first appearance first. */
static size_t ppt_columns(const struct ppt_desc *d, const char **names)
{
	size_t n = 0;

	for (size_t ty = 0; ty < engine_ppt_types(d); ty++) {
		size_t ncols;

		engine_ppt_type(d, ty, &ncols);
		for (size_t c = 0; c < ncols; c++) {
			const char *name = engine_ppt_column(d, ty, c);
			size_t k = 0;

			while (k < n && strcmp(names[k], name))
				k++;
			if (k == n && n < PPT_UI_COLS)
				names[n++] = name;
		}
	}
	return n;
}

/* One frame's cells, by the tab's columns; its type name; and its text
 * "TYPE name=value ..." for search and filter. */
struct ppt_row {
	const char *type;
	const char *names[PPT_UI_COLS];
	const char *values[PPT_UI_COLS];
	struct engine_ppt_cell cells[PPT_UI_COLS];
	size_t ncells;
	char line[1024];
};

static void ppt_row_fill(const struct ppt_desc *d, const unsigned char *f,
			 struct ppt_row *r)
{
	const char *type;
	size_t n = engine_ppt_cells(d, f, false, &type, r->cells, PPT_UI_COLS);
	size_t off;

	r->ncells = 0;
	r->type = type ? type : "?";
	off = (size_t)snprintf(r->line, sizeof(r->line), "%s", r->type);
	for (size_t c = 0; c < n; c++) {
		r->names[c] = r->cells[c].name;
		r->values[c] = r->cells[c].text;
		if (off < sizeof(r->line))
			off += (size_t)snprintf(r->line + off,
						sizeof(r->line) - off, " %s=%s",
						r->names[c], r->values[c]);
	}
	r->ncells = n;
}

static bool ppt_row_matches(const struct ppt_view *p, const struct ppt_row *r)
{
	return pptfilter_match(&p->filter, r->type, r->line, r->names,
			       r->values, r->ncells);
}

/* Rows the filter keeps, newest first; the selection follows its frame. */
static void ppt_rebuild(struct tui *t)
{
	struct ppt_view *p = ppt_of(t);
	const struct ppt_desc *d = ppt_desc(t);
	struct ppt_row *r;
	size_t keep = 0;

	p->nrows = 0;
	if (!d || !p->n)
		return;
	r = malloc(sizeof(*r));
	if (!r)
		return;
	for (size_t k = 0; k < p->n; k++) {
		size_t s = ppt_slot(p, k);

		ppt_row_fill(d, p->bytes + s * engine_ppt_frame_size(d), r);
		if (!ppt_row_matches(p, r))
			continue;
		if (p->meta[s].pos == p->selected_pos)
			keep = p->nrows;
		p->rows[p->nrows++] = (uint32_t)s;
	}
	free(r);
	p->list.selected = keep;
	if (p->nrows && p->list.selected >= p->nrows)
		p->list.selected = p->nrows - 1;
}

/* Start the copy of tab p->tab again from what the engine holds. */
static void ppt_reset_copy(struct tui *t)
{
	struct ppt_view *p = ppt_of(t);
	const struct ppt_desc *d = ppt_desc(t);
	uint64_t next = p->tab < p->nbufs ? p->bufs[p->tab].next_pos : 0;
	/* The frame size comes from the target: a byte budget too. */
	size_t keep = PPT_UI_KEEP;

	if (d && keep > PPT_UI_BYTES / engine_ppt_frame_size(d))
		keep = PPT_UI_BYTES / engine_ppt_frame_size(d);
	p->n = 0;
	p->omitted = 0;
	p->next = next > keep ? next - keep : 0;
	p->list.selected = p->list.top = 0;
	p->selected_pos = UINT64_MAX;
	free(p->bytes);
	p->bytes = d && keep ? malloc(keep * engine_ppt_frame_size(d)) : NULL;
	if (!p->meta)
		p->meta = malloc(PPT_UI_KEEP * sizeof(*p->meta));
	if (!p->rows)
		p->rows = malloc(PPT_UI_KEEP * sizeof(*p->rows));
	p->cap = p->bytes && p->meta && p->rows ? keep : 0;
}

/* Append what the engine delivered since the last refresh. */
static void ppt_pull(struct tui *t)
{
	struct ppt_view *p = ppt_of(t);
	const struct ppt_desc *d = ppt_desc(t);
	uint64_t want, skipped = 0, next;

	if (!d || !p->cap)
		return;
	want = p->bufs[p->tab].next_pos;
	if (want - p->next > p->cap) {
		p->omitted += want - p->cap - p->next;
		p->next = want - p->cap;
	}
	while (p->next < want) {
		/* Copy into the ring in runs that do not wrap. */
		size_t slot = (size_t)(p->next % p->cap);
		size_t room = p->cap - slot, got;

		got = engine_ppt_frames(t->engine, p->tab, p->next,
					p->bytes +
						slot * engine_ppt_frame_size(d),
					p->meta + slot, room, &next, &skipped);
		p->omitted += skipped;
		if (!got && next == p->next)
			break;
		p->n += got;
		if (p->n > p->cap)
			p->n = p->cap;
		p->next = next;
	}
}

static void ppt_view_refresh(struct tui *t)
{
	struct ppt_view *p = ppt_of(t);

	engine_ppt_info(t->engine, &p->info);
	p->nbufs = engine_ppt_buffers(t->engine, p->bufs, PPT_UI_BUFFERS);
	if (!p->tab_set && p->nbufs) {
		/* Start on the first attached buffer that is not the probe's
		 * own, else the first attached one, else the first. */
		size_t pick = SIZE_MAX;

		for (size_t i = 0; i < p->nbufs && pick == SIZE_MAX; i++)
			if (!p->bufs[i].rendezvous &&
			    p->bufs[i].state != ENGINE_PPT_DETACHED)
				pick = i;
		for (size_t i = 0; i < p->nbufs && pick == SIZE_MAX; i++)
			if (p->bufs[i].state != ENGINE_PPT_DETACHED)
				pick = i;
		p->tab = pick == SIZE_MAX ? 0 : pick;
		p->tab_set = true;
		ppt_reset_copy(t);
	}
	if (p->tab >= p->nbufs)
		return;
	ppt_pull(t);
	ppt_rebuild(t);
}

static int ppt_notes(const struct tui *t, const char **lines, char *buf,
		     size_t n);

static int ppt_visible_rows(const struct tui *t)
{
	const char *lines[2];
	char buf[160];
	int n = t->lines - PPT_FIRST_ROW - 1 -
		ppt_notes(t, lines, buf, sizeof(buf));

	return n > 0 ? n : 0;
}

/* Columns tab i takes: a gap, then " NAME ". */
static int ppt_tab_width(const struct ppt_view *p, size_t i)
{
	return (int)strlen(p->bufs[i].name) + 3;
}

/* The tabs, scrolled so that the selected one shows: as many tabs before
 * it as fit, then as many after it.  "<" in column 0 and ">" in the last
 * column say that more tabs lie that way. */
static void ppt_draw_tabs(struct tui *t)
{
	struct ppt_view *p = ppt_of(t);
	int room = t->cols - 1, used = 1 + ppt_tab_width(p, p->tab), x;
	size_t first = p->tab, i;

	while (first > 0 && used + ppt_tab_width(p, first - 1) <= room)
		used += ppt_tab_width(p, --first);
	x = term_text(4, 0, TUI_NORMAL, first ? "<" : " ");
	for (i = first; i < p->nbufs; i++) {
		if (i > p->tab && x + ppt_tab_width(p, i) > room)
			break;
		x = term_text(4, x + 1,
			      i == p->tab ? tui_attr(t, PAIR_SELECTED)
					  : TUI_NORMAL,
			      " %s ", p->bufs[i].name);
	}
	if (i < p->nbufs)
		term_text(4, t->cols - 1, TUI_NORMAL, ">");
}

static const char *ppt_state_name(enum engine_ppt_state s)
{
	switch (s) {
	case ENGINE_PPT_UNHOOKING:
		return "waiting for the client to let go of an old segment";
	case ENGINE_PPT_WAITING:
		return "waiting for the client";
	case ENGINE_PPT_ATTACHED:
		return "attached";
	case ENGINE_PPT_GONE:
		return "process exited";
	case ENGINE_PPT_LOST:
		return "lost: another agent took the buffer over";
	default:
		return "not attached";
	}
}

/* One "  LABEL VALUE" of the books line, drawn whole or not at all: a
 * value cut by the screen's edge ("first frame 1.6" for 1.6s) would lie.
 * Returns the next x; t->cols once an item did not fit, so that none
 * after it is drawn either. */
static int ppt_books_item(struct tui *t, int x, const char *label, int attr,
			  const char *value)
{
	int len = 2 + (int)strlen(value) +
		  (label[0] ? (int)strlen(label) + 1 : 0);

	if (x + len > t->cols)
		return t->cols;
	x = term_text(5, x, TUI_NORMAL, "  %s%s", label, label[0] ? " " : "");
	return term_text(5, x, attr, "%s", value);
}

static void ppt_draw_books(struct tui *t)
{
	const struct ppt_view *p = ppt_of(t);
	const struct engine_ppt_buffer *b = &p->bufs[p->tab];
	int warn = tui_attr(t, PAIR_WARN), meter = tui_attr(t, PAIR_METER);
	char lat[32] = "-", v[32];
	int x;

	if (b->attach_latency_ns)
		duration_format(lat, sizeof(lat), b->attach_latency_ns);
	x = term_text(5, 0, TUI_NORMAL, " %s, %s %" PRIu64 "x%uB",
		      ppt_state_name(b->state),
		      b->dynamic ? "dynamic" : "static", b->nframes,
		      b->frame_size);
	snprintf(v, sizeof(v), "%.0f/s", b->fps);
	x = ppt_books_item(t, x, "", meter, v);
	snprintf(v, sizeof(v), "%" PRIu64, b->delivered);
	x = ppt_books_item(t, x, "delivered", TUI_NORMAL, v);
	snprintf(v, sizeof(v), "%" PRIu64, b->lost);
	x = ppt_books_item(t, x, "lost", b->lost ? warn : meter, v);
	snprintf(v, sizeof(v), "%" PRIu64, b->torn);
	x = ppt_books_item(t, x, "torn", b->torn ? warn : meter, v);
	x = ppt_books_item(t, x, "first frame", TUI_NORMAL, lat);
	if (p->info.ncounters)
		ppt_books_item(t, x, "counters", TUI_NORMAL,
			       b->counters_setup ? "on" : "not set up");
}

/* The cell of frame row r under column title `col`, or "". */
static const char *ppt_cell(const struct ppt_row *r, const char *col)
{
	for (size_t j = 0; j < r->ncells; j++)
		if (!strcmp(r->names[j], col))
			return r->values[j];
	return "";
}

static void ppt_draw_rows(struct tui *t, const struct ppt_desc *d)
{
	struct ppt_view *p = ppt_of(t);
	const char *cols[PPT_UI_COLS];
	int width[PPT_UI_COLS];
	size_t ncols = ppt_columns(d, cols);
	int rows = ppt_visible_rows(t), x, seqw = 3, typew = 4;
	struct ppt_row *r = malloc(sizeof(*r));
	uint64_t now = t->snap.ts;

	if (!r)
		return;
	term_list_follow(&p->list, rows, 0);
	/* Each column as wide as its title and the rows on screen need (SEQ
	 * and TYPE too: on a narrow screen every column counts). */
	for (size_t c = 0; c < ncols; c++)
		width[c] = (int)strlen(cols[c]) < 4 ? 4 : (int)strlen(cols[c]);
	for (int i = 0; i < rows && p->list.top + (size_t)i < p->nrows; i++) {
		size_t s = p->rows[p->list.top + (size_t)i];
		char seq[16];
		int w;

		ppt_row_fill(d, p->bytes + s * engine_ppt_frame_size(d), r);
		w = snprintf(seq, sizeof(seq), "%u", p->meta[s].index);
		if (w > seqw)
			seqw = w;
		w = (int)strlen(r->type);
		if (w > typew)
			typew = w < PPT_TYPE_MAX ? w : PPT_TYPE_MAX;
		for (size_t c = 0; c < ncols; c++) {
			w = (int)strlen(ppt_cell(r, cols[c]));
			if (w > width[c])
				width[c] = w < PPT_CELL ? w : PPT_CELL;
		}
	}
	x = term_text(6, 0, tui_attr(t, PAIR_TITLE), " %*s %8s %-*s", seqw,
		      "SEQ", "AGE", typew, "TYPE");
	for (size_t c = 0; c < ncols; c++)
		x = term_text(6, x, tui_attr(t, PAIR_TITLE), " %*s", width[c],
			      cols[c]);
	for (int cx = x; cx < t->cols; cx++)
		mvaddch(6, cx, ' ' | tui_attr(t, PAIR_TITLE));
	for (int i = 0; i < rows && p->list.top + (size_t)i < p->nrows; i++) {
		size_t k = p->list.top + (size_t)i, s = p->rows[k];
		const struct engine_ppt_frame *m = &p->meta[s];
		int attr = k == p->list.selected ? tui_attr(t, PAIR_SELECTED)
						 : TUI_NORMAL;
		char age[32];
		int y = PPT_FIRST_ROW + i;

		ppt_row_fill(d, p->bytes + s * engine_ppt_frame_size(d), r);
		duration_format(age, sizeof(age),
				now > m->ts ? now - m->ts : 0);
		if (attr != TUI_NORMAL)
			term_fill(y, attr);
		x = term_text(y, 0, attr, " %*u %8s %-*.*s", seqw, m->index,
			      age, typew, typew, r->type);
		for (size_t c = 0; c < ncols; c++)
			x = term_text(y, x, attr, " %*s", width[c],
				      ppt_cell(r, cols[c]));
	}
	free(r);
}

/* prefix and text from line y down, wrapped at blanks to the screen's
 * width (a word longer than a line is cut), up to the line above the key
 * bar: why a buffer did not attach is often longer than a narrow screen. */
static void ppt_draw_wrapped(struct tui *t, int y, int attr, const char *prefix,
			     const char *text)
{
	char buf[512];
	const char *s = buf;
	int room = t->cols - 2;

	snprintf(buf, sizeof(buf), "%s%s", prefix, text);
	for (; *s && y < t->lines - 1; y++) {
		int len = (int)strlen(s), cut = len;

		if (len > room) {
			cut = room;
			while (cut > 0 && s[cut] != ' ')
				cut--;
			if (cut == 0)
				cut = room;
		}
		term_text(y, 1, attr, "%.*s", cut, s);
		s += cut;
		while (*s == ' ')
			s++;
	}
}

/* The key bar, or the search or filter line being typed (as the table's
 * bar does: the keys typed must show, and the cursor at their end). */
static void ppt_draw_bar(struct tui *t)
{
	static const char *const keys[] = {
		"Esc back",    "Tab next buffer", "/ search", "\\ filter",
		"Space pause", "F1 help",	  "q quit",
	};
	int x = 0;

	if (t->input != INPUT_NONE && t->input != INPUT_GOTO) {
		term_text(t->lines - 1, 0, TUI_NORMAL, "%s: %s",
			  t->input == INPUT_SEARCH ? "Search" : "Filter",
			  t->line);
		curs_set(1);
		return;
	}
	curs_set(0);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		/* Whole keys only, as the table's bar. */
		int len = (int)strlen(keys[i]);

		if (x + len > t->cols)
			break;
		x = term_text(t->lines - 1, x, TUI_NORMAL, "%s%s", keys[i],
			      i + 1 < sizeof(keys) / sizeof(keys[0]) ? "  "
								     : "");
	}
}

/* Lines above the key bar for what a user must not miss: counters the
 * kernel refused, a probe that could not map corotop's region.  (A buffer
 * that failed says why in its own tab.) */
static int ppt_notes(const struct tui *t, const char **lines, char *buf,
		     size_t n)
{
	const struct engine_ppt_info *in = &ppt_of(t)->info;
	int k = 0;

	if (in->refused[0])
		lines[k++] = in->refused;
	if (in->probe_said && !in->traced) {
		snprintf(buf, n, "the probe could not map corotop's region: %s",
			 in->probe_errno ? strerror(in->probe_errno)
					 : "another agent holds its buffer");
		lines[k++] = buf;
	}
	return k;
}

static void ppt_draw_notes(struct tui *t)
{
	const char *lines[2];
	char buf[160];
	int k = ppt_notes(t, lines, buf, sizeof(buf));

	for (int i = 0; i < k; i++)
		term_text(t->lines - 1 - k + i, 1, tui_attr(t, PAIR_WARN), "%s",
			  lines[i]);
}

static void ppt_view_draw(struct tui *t)
{
	struct ppt_view *p = ppt_of(t);
	const struct ppt_desc *d = ppt_desc(t);

	if (!p->info.enabled && t->replay) {
		term_text(5, 1, TUI_NORMAL,
			  "ppt frames are not recorded: a replay has the "
			  "coroutines only.");
	} else if (!p->info.enabled) {
		term_text(5, 1, TUI_NORMAL,
			  "No ppt buffers: attach to a running process with "
			  "corotop -p PID.");
	} else if (!p->nbufs || p->tab >= p->nbufs) {
		term_text(5, 1, TUI_NORMAL, "No buffers attached.");
	} else {
		ppt_draw_tabs(t);
		if (p->bufs[p->tab].state != ENGINE_PPT_DETACHED)
			ppt_draw_books(t);
		if (!d || p->bufs[p->tab].state == ENGINE_PPT_DETACHED)
			ppt_draw_wrapped(
				t, 6, tui_attr(t, PAIR_WARN),
				"not attached: ", p->bufs[p->tab].warning);
		else if (!p->nrows)
			term_text(
				7, 1, TUI_NORMAL, "%s",
				p->n ? "No frame matches the filter."
				: p->bufs[p->tab].rendezvous
					? "No frames yet: the probe attaches "
					  "at the program's next coroutine "
					  "transition."
					: "No frames yet: the client attaches "
					  "at its next save.");
		else
			ppt_draw_rows(t, d);
	}
	ppt_draw_notes(t);
	ppt_draw_bar(t);
}

static unsigned ppt_move(struct tui *t, enum term_motion m, int page)
{
	struct ppt_view *p = ppt_of(t);

	if (!term_list_motion(&p->list, p->nrows, m, page))
		return REACT_NONE;
	p->selected_pos = p->meta[p->rows[p->list.selected]].pos;
	return REACT_REDRAW;
}

static unsigned ppt_tab(struct tui *t, int dir)
{
	struct ppt_view *p = ppt_of(t);

	if (p->nbufs < 2)
		return REACT_NONE;
	p->tab = (p->tab + (dir > 0 ? 1 : p->nbufs - 1)) % p->nbufs;
	ppt_reset_copy(t);
	ppt_pull(t);
	ppt_rebuild(t);
	snprintf(t->message, sizeof(t->message), "buffer %s",
		 p->bufs[p->tab].name);
	return REACT_REDRAW;
}

/* An action in the ppt view: its reactions, or -1 for the default. */
static int ppt_view_action(struct tui *t, enum tui_action a, int page)
{
	struct ppt_view *p = ppt_of(t);

	switch (a) {
	case ACT_UP:
	case ACT_DOWN:
	case ACT_PAGE_UP:
	case ACT_PAGE_DOWN:
	case ACT_HOME:
	case ACT_END:
		return (int)ppt_move(t, keymap_motion(a), page);
	case ACT_TAB_NEXT:
		return (int)ppt_tab(t, 1);
	case ACT_TAB_PREV:
		return (int)ppt_tab(t, -1);
	case ACT_ENTER:
	case ACT_GROUP:
	case ACT_SORT_NEXT:
	case ACT_SORT_PREV:
	case ACT_INVERT:
		return REACT_NONE; /* frames keep their order: newest first */
	case ACT_BACK:
		if (p->filter.active) {
			pptfilter_set(&p->filter, "", NULL, 0);
			ppt_rebuild(t);
			return REACT_REDRAW;
		}
		return -1;
	default:
		return -1;
	}
}

/* Search (view.h): from the selection, says when nothing matches. */
static void ppt_view_search(struct tui *t, int dir, bool include_current)
{
	struct ppt_view *p = ppt_of(t);
	const struct ppt_desc *d = ppt_desc(t);
	struct ppt_row *r;

	if (!d || !p->nrows || !t->search[0])
		return;
	r = malloc(sizeof(*r));
	if (!r)
		return;
	for (size_t step = include_current ? 0 : 1; step <= p->nrows; step++) {
		long at = ((long)p->list.selected + (long)step * dir) %
			  (long)p->nrows;
		size_t k = (size_t)(at < 0 ? at + (long)p->nrows : at);
		size_t s = p->rows[k];

		ppt_row_fill(d, p->bytes + s * engine_ppt_frame_size(d), r);
		if (pptfilter_contains(r->line, t->search)) {
			p->list.selected = k;
			p->selected_pos = p->meta[s].pos;
			free(r);
			return;
		}
	}
	free(r);
	snprintf(t->message, sizeof(t->message), "no match for '%s'",
		 t->search);
}

static bool ppt_view_filter(struct tui *t, const char *text, char *err,
			    size_t errlen)
{
	if (!pptfilter_set(&ppt_of(t)->filter, text, err, errlen))
		return false;
	ppt_rebuild(t);
	return true;
}

static const char *ppt_view_filter_text(const struct tui *t)
{
	return ppt_of(t)->filter.text;
}

static void *ppt_view_create(struct tui *t)
{
	struct ppt_view *p = calloc(1, sizeof(*p));

	(void)t;
	if (p)
		pptfilter_init(&p->filter);
	return p;
}

static void ppt_view_destroy(void *state)
{
	ppt_finish(state);
	free(state);
}

/* Opened afresh: the buffers and frames of now. */
static void ppt_view_open(struct tui *t, enum tui_view from)
{
	(void)from;
	ppt_view_refresh(t);
}

const struct tui_view_impl ppt_view_impl = {
	.name = "ppt",
	.opens = ACT_PPT,
	.create = ppt_view_create,
	.destroy = ppt_view_destroy,
	.open = ppt_view_open,
	.update = ppt_view_refresh,
	.draw = ppt_view_draw,
	.action = ppt_view_action,
	.search = ppt_view_search,
	.filter = ppt_view_filter,
	.filter_text = ppt_view_filter_text,
};
