/*
 * cray_view: the memory view's loop.
 *
 * Watchers (one libev loop, signals through signalfd, blocked before
 * curses starts so that they arrive here and nowhere else):
 *   keys     ev_io on the terminal; drains getch() until ERR, so escape
 *            sequences never lag.  With the trace on stdin ("-") the
 *            keys come from /dev/tty instead.
 *   trace    a regular file: ev_idle, reading up to CRAY_VIEW_BUDGET
 *            bytes per loop pass, so keys are answered between two
 *            budgets (about 10 ms at the reader's speed); a pipe or a
 *            FIFO: ev_io, reading until EAGAIN or the budget.  Either
 *            stops at the end, at a bad record or at a read error.
 *   refresh  ev_timer every delay: the rate, and a new snapshot
 *   signals  SIGWINCH re-lays out; SIGINT, SIGTERM, SIGHUP quit
 *   render   ev_prepare: the single place that rebuilds and draws, once
 *            per loop pass, when something asked for it
 * Reading marks nothing dirty (the display follows the refresh timer and
 * the keys, not the chunks), except when the reading ends: the final
 * state shows at once.
 *
 * Member rows and the totals above them always come from one snapshot:
 * pausing takes one with every type's members (cray_snap_take_all), which
 * the display stands on until resumed; opening a type otherwise takes a
 * new snapshot at once, with the type's members in it.
 *
 * The terminal (term.c, as the coroutine TUI's) is restored on every way
 * out: the normal path, an atexit handler, and (for a crash) a handler
 * that restores it and dies of the same signal.
 */
#define _GNU_SOURCE
#include "ui/memview/memview.h"

#include <ctype.h>
#include <curses.h>
#include <ev.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "ui/term/term.h"

#define CRAY_VIEW_BUDGET (8u << 20)

struct cray_loop {
	struct cray_view *v;
	struct ev_loop *loop;
	ev_io keys;
	ev_idle file;
	ev_io pipe;
	ev_timer refresh;
	ev_signal sig[4];
	ev_prepare render;
};

static uint64_t cray_records(const struct cray_view *v)
{
	struct cacheray_totals t;

	cacheray_totals(v->src.c, &t);
	return t.records;
}

/* The colour pairs cray_attr draws with (the coroutine TUI's colours). */
static const struct term_pair cray_pairs[] = {
	{CRAY_PAIR_HEADER, COLOR_BLACK, COLOR_CYAN, 0},
	{CRAY_PAIR_TITLE, COLOR_BLACK, COLOR_GREEN, 0},
	{CRAY_PAIR_GOOD, COLOR_GREEN, -1, 0},
	{CRAY_PAIR_DIM, COLOR_BLUE, -1, 244},
	{CRAY_PAIR_WARN, COLOR_RED, -1, 0},
	{CRAY_PAIR_SELECTED, COLOR_BLACK, COLOR_CYAN, 0},
	{CRAY_PAIR_METER, COLOR_CYAN, -1, 0},
};

static SCREEN *cray_start_curses(struct cray_view *v, FILE *in)
{
	SCREEN *scr;

	v->ascii = term_prepare();
	v->rows.ascii = v->ascii;
	scr = newterm(NULL, stdout, in);
	if (!scr)
		return NULL;
	set_term(scr);
	term_init(v->opt.mouse);
	v->color = term_colors(v->opt.color, cray_pairs,
			       sizeof(cray_pairs) / sizeof(cray_pairs[0]));
	term_size(&v->lines, &v->cols);
	return scr;
}

/* ---- rows and selection ---- */

static void cray_rebuild(struct cray_view *v)
{
	struct cray_rows *r = &v->rows;
	enum cray_tab t = v->tab;
	size_t i;

	if (!cray_rows_build(r, &v->snap, t))
		snprintf(v->message, sizeof(v->message),
			 "out of memory: no rows");
	i = v->have_sel[t] ? cray_rows_find(r, v->sel_key[t]) : SIZE_MAX;
	if (i != SIZE_MAX)
		v->list[t].selected = i;
	else if (v->list[t].selected >= r->nrows)
		v->list[t].selected = r->nrows ? r->nrows - 1 : 0;
	v->have_sel[t] = r->nrows > 0;
	if (r->nrows)
		v->sel_key[t] = cray_rows_key(r, v->list[t].selected);
}

/* A new snapshot, unless nothing was read since the last one (a finished
 * trace costs nothing per refresh) and force is not set. */
static void cray_snapshot(struct cray_view *v, bool force)
{
	if (!force && v->have_snap && v->snap_got == v->src.got)
		return;
	if (!cray_snap_take(&v->snap, v->src.c, v->rows.open,
			    v->rows.open_bits))
		snprintf(v->message, sizeof(v->message),
			 "out of memory: the tables are incomplete");
	v->have_snap = true;
	v->snap_got = v->src.got;
}

/* Pausing: the display stands on a snapshot of this moment with every
 * type's members, so that a type opened while paused shows counts of the
 * same moment as its totals. */
static void cray_freeze(struct cray_view *v)
{
	if (!cray_snap_take_all(&v->snap, v->src.c))
		snprintf(v->message, sizeof(v->message),
			 "out of memory: paused without member counts");
	v->have_snap = true;
	v->snap_got = v->src.got;
}

/* The selection (and the key that follows its row) after a move. */
static unsigned cray_moved(struct cray_view *v, bool moved)
{
	struct term_list *l = &v->list[v->tab];

	if (!moved)
		return 0;
	v->sel_key[v->tab] = cray_rows_key(&v->rows, l->selected);
	v->have_sel[v->tab] = true;
	return CRAY_REDRAW;
}

static unsigned cray_move(struct cray_view *v, long delta)
{
	return cray_moved(
		v, term_list_move(&v->list[v->tab], v->rows.nrows, delta));
}

static unsigned cray_select(struct cray_view *v, size_t row)
{
	return cray_move(v, (long)row - (long)v->list[v->tab].selected);
}

/* From the selection on (dir 1) or back (-1): the next row matching the
 * search; include_current for incremental search. */
static bool cray_search(struct cray_view *v, int dir, bool include_current)
{
	size_t n = v->rows.nrows, cur = v->list[v->tab].selected;

	for (size_t k = include_current ? 0 : 1; n && k <= n; k++) {
		size_t i = (cur + (dir > 0 ? k : n - k % n)) % n;

		if (cray_rows_match(&v->rows, i, v->search)) {
			cray_select(v, i);
			return true;
		}
	}
	return false;
}

/* Open (1), close (0) or flip (-1) the selected type's members. */
static unsigned cray_open(struct cray_view *v, int want)
{
	struct cray_rows *r = &v->rows;
	size_t sel = v->list[v->tab].selected;
	uint32_t type = cray_rows_type(r, sel);
	bool member, open;

	if (type == UINT32_MAX || !cray_rows_openable(r, sel))
		return 0;
	member = r->row[sel].member != CRAY_ROW_ITEM;
	open = cray_rows_is_open(r, type);
	if (member && want != 1)
		want = 0; /* from a member row: close its type */
	if (want < 0)
		want = !open;
	if (want == open)
		return 0;
	if (want && v->paused && !v->snap.all_members) {
		snprintf(v->message, sizeof(v->message),
			 "paused without member counts: resume (Space) to "
			 "open types");
		return CRAY_REDRAW;
	}
	if (want && !cray_rows_set_open(r, type, true)) {
		snprintf(v->message, sizeof(v->message),
			 "out of memory: the members stay closed");
		return CRAY_REDRAW;
	}
	/* Members come from the snapshot shown: paused, the frozen one has
	 * them all; else a new one is taken now, with this type's. */
	if (want && !cray_snap_has_members(&v->snap, type))
		cray_snapshot(v, true);
	if (!want)
		cray_rows_set_open(r, type, false);
	/* The selection stays on (or moves to) the type's row. */
	v->sel_key[v->tab] = (uint64_t)type << 32 | UINT32_MAX;
	v->have_sel[v->tab] = true;
	return CRAY_REBUILD | CRAY_REDRAW;
}

static unsigned cray_sort(struct cray_view *v, int dir)
{
	const struct cray_tab_impl *t = &cray_tabs[v->tab];

	cray_rows_sort(&v->rows, dir);
	snprintf(v->message, sizeof(v->message), "sorted by %s%s",
		 t->cols[v->rows.sort[v->tab]].title,
		 v->rows.invert[v->tab] ? " (inverted)" : "");
	return CRAY_REBUILD | CRAY_REDRAW;
}

static unsigned cray_tab(struct cray_view *v, int tab)
{
	v->tab = (enum cray_tab)((tab + CRAY_TAB_COUNT) % CRAY_TAB_COUNT);
	return CRAY_REBUILD | CRAY_REDRAW;
}

/* ---- actions: change state, return reactions, never draw ---- */

static unsigned cray_help_action(struct cray_view *v, enum cray_action a)
{
	long step = term_motion_step(cray_keys_motion(a),
				     term_list_page(v->nvisible), 100000);

	if (step) {
		v->help_top = term_pager_scroll(v->help_top, step);
		return CRAY_REDRAW; /* the drawing clamps the bottom */
	}
	if (a == CRAY_ACT_QUIT)
		return CRAY_QUIT;
	if (a == CRAY_ACT_REDRAW)
		clearok(curscr, TRUE);
	else
		v->help = false; /* any other key goes back */
	return CRAY_REDRAW;
}

static unsigned cray_action(struct cray_view *v, const struct cray_key *k)
{
	if (v->help)
		return cray_help_action(v, k->action);
	switch (k->action) {
	case CRAY_ACT_UP:
	case CRAY_ACT_DOWN:
	case CRAY_ACT_PAGE_UP:
	case CRAY_ACT_PAGE_DOWN:
	case CRAY_ACT_HOME:
	case CRAY_ACT_END:
		return cray_moved(
			v, term_list_motion(&v->list[v->tab], v->rows.nrows,
					    cray_keys_motion(k->action),
					    v->nvisible));
	case CRAY_ACT_TAB_NEXT:
		return cray_tab(v, (int)v->tab + 1);
	case CRAY_ACT_TAB_PREV:
		return cray_tab(v, (int)v->tab - 1);
	case CRAY_ACT_TAB:
		return cray_tab(v, k->arg);
	case CRAY_ACT_TOGGLE:
		return cray_open(v, -1);
	case CRAY_ACT_EXPAND:
		return cray_open(v, 1);
	case CRAY_ACT_COLLAPSE:
		return cray_open(v, 0);
	case CRAY_ACT_SORT_NEXT:
		return cray_sort(v, 1);
	case CRAY_ACT_SORT_PREV:
		return cray_sort(v, -1);
	case CRAY_ACT_INVERT:
		v->rows.invert[v->tab] = !v->rows.invert[v->tab];
		return cray_sort(v, 0);
	case CRAY_ACT_SEARCH:
		v->typing = true;
		v->line[0] = '\0';
		return CRAY_REDRAW;
	case CRAY_ACT_SEARCH_NEXT:
	case CRAY_ACT_SEARCH_PREV:
		if (!v->search[0])
			return 0;
		if (!cray_search(v, k->action == CRAY_ACT_SEARCH_NEXT ? 1 : -1,
				 false))
			snprintf(v->message, sizeof(v->message),
				 "no more matches for '%s'", v->search);
		return CRAY_REDRAW;
	case CRAY_ACT_BACK:
		v->search[0] = '\0';
		return CRAY_REDRAW;
	case CRAY_ACT_PAUSE:
		v->paused = !v->paused;
		if (!v->paused)
			return CRAY_REDRAW | CRAY_REFRESH;
		cray_freeze(v);
		return CRAY_REBUILD | CRAY_REDRAW;
	case CRAY_ACT_HELP:
		v->help = true;
		v->help_top = 0;
		return CRAY_REDRAW;
	case CRAY_ACT_REDRAW:
		clearok(curscr, TRUE);
		return CRAY_REDRAW;
	case CRAY_ACT_QUIT:
		return CRAY_QUIT;
	case CRAY_ACT_NONE:
		break;
	}
	return 0;
}

/* The search line: printable keys edit it (incrementally), Backspace
 * deletes, Ctrl-U clears, Enter keeps it, Esc cancels. */
static unsigned cray_input_key(struct cray_view *v, int key)
{
	size_t len = strlen(v->line);

	if (key == 27) {
		v->typing = false;
		v->search[0] = '\0';
		return CRAY_REDRAW;
	}
	if (key == '\n' || key == '\r' || key == KEY_ENTER) {
		v->typing = false;
		if (v->search[0] && !cray_search(v, 1, true))
			snprintf(v->message, sizeof(v->message),
				 "no match for '%s'", v->search);
		return CRAY_REDRAW;
	}
	if (key == KEY_BACKSPACE || key == 127 || key == 8) {
		if (len)
			v->line[len - 1] = '\0';
	} else if (key == CRAY_CTRL('u')) {
		v->line[0] = '\0';
	} else if (key >= 32 && key < 127 && len + 1 < sizeof(v->line)) {
		v->line[len] = (char)key;
		v->line[len + 1] = '\0';
	} else {
		return 0;
	}
	for (size_t i = 0; i < sizeof(v->search); i++) {
		v->search[i] = (char)tolower((unsigned char)v->line[i]);
		if (!v->line[i])
			break;
	}
	v->message[0] = '\0';
	if (v->search[0] && !cray_search(v, 1, true))
		snprintf(v->message, sizeof(v->message), "no match for '%s'",
			 v->search);
	return CRAY_REDRAW;
}

static unsigned cray_mouse(struct cray_view *v)
{
	MEVENT ev;

	if (getmouse(&ev) != OK || v->help)
		return 0;
	if (ev.bstate & BUTTON4_PRESSED)
		return cray_move(v, -3);
	if (ev.bstate & BUTTON5_PRESSED)
		return cray_move(v, 3);
	if (!(ev.bstate & (BUTTON1_CLICKED | BUTTON1_PRESSED)))
		return 0;
	if (ev.y == v->first_row - 2) {
		for (int k = 0; k < CRAY_TAB_COUNT; k++)
			if (ev.x >= v->tab_x[k] && ev.x < v->tab_x[k + 1])
				return cray_tab(v, k);
		return 0;
	}
	if (ev.y >= v->first_row && ev.y < v->first_row + v->nvisible &&
	    v->list[v->tab].top + (size_t)(ev.y - v->first_row) < v->rows.nrows)
		return cray_select(v, v->list[v->tab].top +
					      (size_t)(ev.y - v->first_row));
	return 0;
}

static unsigned cray_key(struct cray_view *v, int key)
{
	const struct cray_key *k;

	if (key == KEY_RESIZE) {
		term_size(&v->lines, &v->cols);
		return CRAY_REDRAW;
	}
	if (v->typing)
		return cray_input_key(v, key);
	if (key == KEY_MOUSE)
		return cray_mouse(v);
	v->message[0] = '\0';
	k = cray_keys_find(key);
	return k ? cray_action(v, k) : CRAY_REDRAW;
}

/* ---- watchers: mark dirty only ---- */

static unsigned cray_on_key(void *ctx, int key)
{
	return cray_key(ctx, key);
}

static void cray_on_rebuild(void *ctx)
{
	cray_rebuild(ctx);
}

/* Every key waiting; the next key of a burst acts on the rows this one
 * asked for (Tab then j), and drawing still waits. */
static void cray_on_keys(struct ev_loop *loop, ev_io *w, int revents)
{
	static const struct term_keys keys = {cray_on_key, cray_on_rebuild};
	struct cray_loop *l = w->data;

	(void)loop;
	(void)revents;
	l->v->dirty = term_keys_drain(&keys, l->v, l->v->dirty);
}

static void cray_read(struct cray_loop *l, enum cray_step step)
{
	if (step != CRAY_STEP_DONE)
		return;
	ev_idle_stop(l->loop, &l->file);
	ev_io_stop(l->loop, &l->pipe);
	/* The end shows at once, not at the next tick. */
	l->v->dirty |= CRAY_REFRESH | CRAY_REDRAW;
}

static void cray_on_file(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct cray_loop *l = w->data;

	(void)loop;
	(void)revents;
	cray_read(l, cray_source_read(&l->v->src, CRAY_VIEW_BUDGET));
}

static void cray_on_pipe(struct ev_loop *loop, ev_io *w, int revents)
{
	struct cray_loop *l = w->data;

	(void)loop;
	(void)revents;
	cray_read(l, cray_source_read(&l->v->src, CRAY_VIEW_BUDGET));
}

static void cray_on_refresh(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct cray_loop *l = w->data;
	struct cray_view *v = l->v;
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC), records = cray_records(v);

	(void)loop;
	(void)revents;
	if (now > v->tick_ns)
		v->rate = (double)(records - v->tick_records) * 1e9 /
			  (double)(now - v->tick_ns);
	v->tick_ns = now;
	v->tick_records = records;
	v->dirty |= CRAY_REFRESH | CRAY_REDRAW;
}

static void cray_on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct cray_loop *l = w->data;

	(void)loop;
	(void)revents;
	if (w->signum == SIGWINCH) {
		term_size(&l->v->lines, &l->v->cols);
		l->v->dirty |= CRAY_REDRAW;
		return;
	}
	l->v->exit_status = 128 + w->signum;
	l->v->dirty |= CRAY_QUIT;
}

/* The one place that does what the callbacks asked for. */
static void cray_on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct cray_loop *l = w->data;
	struct cray_view *v = l->v;
	unsigned d = v->dirty;

	(void)revents;
	v->dirty = 0;
	if (d & CRAY_QUIT) {
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	if ((d & CRAY_REFRESH) && !v->paused) {
		cray_snapshot(v, false);
		d |= CRAY_REBUILD;
	}
	if (d & CRAY_REBUILD)
		cray_rebuild(v);
	if (d & (CRAY_REDRAW | CRAY_REBUILD))
		cray_draw(v);
}

static void cray_watch(struct cray_loop *l, FILE *in)
{
	static const int sigs[] = {SIGWINCH, SIGINT, SIGTERM, SIGHUP};
	struct cray_view *v = l->v;
	double delay = v->opt.delay_tenths / 10.0;

	ev_io_init(&l->keys, cray_on_keys, fileno(in), EV_READ);
	ev_idle_init(&l->file, cray_on_file);
	ev_io_init(&l->pipe, cray_on_pipe, v->src.fd, EV_READ);
	ev_timer_init(&l->refresh, cray_on_refresh, delay, delay);
	ev_prepare_init(&l->render, cray_on_prepare);
	l->keys.data = l->file.data = l->pipe.data = l;
	l->refresh.data = l->render.data = l;
	ev_io_start(l->loop, &l->keys);
	if (v->src.pollable)
		ev_io_start(l->loop, &l->pipe);
	else
		ev_idle_start(l->loop, &l->file);
	ev_timer_start(l->loop, &l->refresh);
	ev_prepare_start(l->loop, &l->render);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		ev_signal_init(&l->sig[i], cray_on_signal, sigs[i]);
		l->sig[i].data = l;
		ev_signal_start(l->loop, &l->sig[i]);
	}
}

/* The terminal the keys come from: stdin, unless the trace is on stdin
 * (or stdin is no terminal), then /dev/tty. */
static FILE *cray_keys_file(bool *own)
{
	FILE *f;

	*own = false;
	if (isatty(STDIN_FILENO))
		return stdin;
	f = fopen("/dev/tty", "re");
	*own = f != NULL;
	return f;
}

int cray_view_run(const char *path, const struct cray_view_options *opt)
{
	struct cray_view v;
	struct cray_loop l = {0};
	sigset_t block, old;
	char err[512];
	bool usage, own_in;
	FILE *in;
	SCREEN *scr;

	memset(&v, 0, sizeof(v));
	v.opt = *opt;
	if (!v.opt.delay_tenths)
		v.opt.delay_tenths = 10;
	cray_snap_init(&v.snap);
	cray_rows_init(&v.rows);
	if (!cray_source_open(&v.src, path, err, sizeof(err), &usage)) {
		fprintf(stderr, "corotop: %s\n", err);
		return usage ? 2 : 1;
	}
	in = cray_keys_file(&own_in);
	if (!in) {
		fprintf(stderr, "corotop: no terminal to read keys from "
				"(/dev/tty); use -b for the report\n");
		cray_source_close(&v.src);
		return 1;
	}
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGWINCH);
	sigprocmask(SIG_BLOCK, &block, &old);
	scr = cray_start_curses(&v, in);
	l.v = &v;
	l.loop = scr ? ev_loop_new(EVFLAG_AUTO | EVFLAG_SIGNALFD) : NULL;
	if (!l.loop) {
		term_finish();
		fprintf(stderr, "corotop: cannot %s\n",
			scr ? "create the event loop"
			    : "initialise the terminal");
		v.exit_status = 1;
		goto out;
	}
	v.tick_ns = clock_now_ns(CLOCK_MONOTONIC);
	v.rate = -1;
	cray_watch(&l, in);
	v.dirty = CRAY_REFRESH | CRAY_REDRAW;
	ev_run(l.loop, 0);
	term_finish();
	ev_loop_destroy(l.loop);
out:
	if (scr)
		delscreen(scr);
	if (own_in)
		fclose(in);
	sigprocmask(SIG_SETMASK, &old, NULL);
	cray_rows_finish(&v.rows);
	cray_snap_finish(&v.snap);
	cray_source_close(&v.src);
	return v.exit_status;
}
