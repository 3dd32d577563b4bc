/*
 * memview: the memory view's loop.
 *
 * Watchers (one libev loop, signals through signalfd, blocked before
 * curses starts so that they arrive here and nowhere else):
 *   keys     ev_io on the terminal; drains getch() until ERR, so escape
 *            sequences never lag.  With the trace on stdin ("-") the
 *            keys come from /dev/tty instead.
 *   trace    a regular file: ev_idle, reading up to MEMVIEW_BUDGET
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

#define MEMVIEW_BUDGET (8u << 20)

struct memview_loop {
	struct memview *v;
	struct ev_loop *loop;
	ev_io keys;
	ev_idle file;
	ev_io pipe;
	ev_timer refresh;
	ev_signal sig[4];
	ev_prepare render;
};

static uint64_t memview_records(const struct memview *v)
{
	struct cacheray_totals t;

	cacheray_totals(v->src.c, &t);
	return t.records;
}

/* The colour pairs memview_attr draws with (the coroutine TUI's colours). */
static const struct term_pair memview_pairs[] = {
	{MEMVIEW_PAIR_HEADER, COLOR_BLACK, COLOR_CYAN, 0},
	{MEMVIEW_PAIR_TITLE, COLOR_BLACK, COLOR_GREEN, 0},
	{MEMVIEW_PAIR_GOOD, COLOR_GREEN, -1, 0},
	{MEMVIEW_PAIR_DIM, COLOR_BLUE, -1, 244},
	{MEMVIEW_PAIR_WARN, COLOR_RED, -1, 0},
	{MEMVIEW_PAIR_SELECTED, COLOR_BLACK, COLOR_CYAN, 0},
	{MEMVIEW_PAIR_METER, COLOR_CYAN, -1, 0},
};

static SCREEN *memview_start_curses(struct memview *v, FILE *in)
{
	SCREEN *scr;

	v->ascii = term_prepare();
	v->rows.ascii = v->ascii;
	scr = newterm(NULL, stdout, in);
	if (!scr)
		return NULL;
	set_term(scr);
	term_init(v->opt.mouse);
	v->color =
		term_colors(v->opt.color, memview_pairs,
			    sizeof(memview_pairs) / sizeof(memview_pairs[0]));
	term_size(&v->lines, &v->cols);
	return scr;
}

/* ---- rows and selection ---- */

static void memview_rebuild(struct memview *v)
{
	struct memview_rows *r = &v->rows;
	enum memview_tab t = v->tab;
	size_t i;

	if (!memview_rows_build(r, &v->snap, t))
		snprintf(v->message, sizeof(v->message),
			 "out of memory: no rows");
	i = v->have_sel[t] ? memview_rows_find(r, v->sel_key[t]) : SIZE_MAX;
	if (i != SIZE_MAX)
		v->list[t].selected = i;
	else if (v->list[t].selected >= r->nrows)
		v->list[t].selected = r->nrows ? r->nrows - 1 : 0;
	v->have_sel[t] = r->nrows > 0;
	if (r->nrows)
		v->sel_key[t] = memview_rows_key(r, v->list[t].selected);
}

/* A new snapshot, unless nothing was read since the last one (a finished
 * trace costs nothing per refresh) and force is not set. */
static void memview_snapshot(struct memview *v, bool force)
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
static void memview_freeze(struct memview *v)
{
	if (!cray_snap_take_all(&v->snap, v->src.c))
		snprintf(v->message, sizeof(v->message),
			 "out of memory: paused without member counts");
	v->have_snap = true;
	v->snap_got = v->src.got;
}

/* The selection (and the key that follows its row) after a move. */
static unsigned memview_moved(struct memview *v, bool moved)
{
	struct term_list *l = &v->list[v->tab];

	if (!moved)
		return 0;
	v->sel_key[v->tab] = memview_rows_key(&v->rows, l->selected);
	v->have_sel[v->tab] = true;
	return MEMVIEW_REDRAW;
}

static unsigned memview_move(struct memview *v, long delta)
{
	return memview_moved(
		v, term_list_move(&v->list[v->tab], v->rows.nrows, delta));
}

static unsigned memview_select(struct memview *v, size_t row)
{
	return memview_move(v, (long)row - (long)v->list[v->tab].selected);
}

/* From the selection on (dir 1) or back (-1): the next row matching the
 * search; include_current for incremental search. */
static bool memview_search(struct memview *v, int dir, bool include_current)
{
	size_t n = v->rows.nrows, cur = v->list[v->tab].selected;

	for (size_t k = include_current ? 0 : 1; n && k <= n; k++) {
		size_t i = (cur + (dir > 0 ? k : n - k % n)) % n;

		if (memview_rows_match(&v->rows, i, v->search)) {
			memview_select(v, i);
			return true;
		}
	}
	return false;
}

/* Open (1), close (0) or flip (-1) the selected type's members. */
static unsigned memview_open(struct memview *v, int want)
{
	struct memview_rows *r = &v->rows;
	size_t sel = v->list[v->tab].selected;
	uint32_t type = memview_rows_type(r, sel);
	bool member, open;

	if (type == UINT32_MAX || !memview_rows_openable(r, sel))
		return 0;
	member = r->row[sel].member != MEMVIEW_ROW_ITEM;
	open = memview_rows_is_open(r, type);
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
		return MEMVIEW_REDRAW;
	}
	if (want && !memview_rows_set_open(r, type, true)) {
		snprintf(v->message, sizeof(v->message),
			 "out of memory: the members stay closed");
		return MEMVIEW_REDRAW;
	}
	/* Members come from the snapshot shown: paused, the frozen one has
	 * them all; else a new one is taken now, with this type's. */
	if (want && !cray_snap_has_members(&v->snap, type))
		memview_snapshot(v, true);
	if (!want)
		memview_rows_set_open(r, type, false);
	/* The selection stays on (or moves to) the type's row. */
	v->sel_key[v->tab] = (uint64_t)type << 32 | UINT32_MAX;
	v->have_sel[v->tab] = true;
	return MEMVIEW_REBUILD | MEMVIEW_REDRAW;
}

static unsigned memview_sort(struct memview *v, int dir)
{
	const struct memview_tab_impl *t = &memview_tabs[v->tab];

	memview_rows_sort(&v->rows, dir);
	snprintf(v->message, sizeof(v->message), "sorted by %s%s",
		 t->cols[v->rows.sort[v->tab]].title,
		 v->rows.invert[v->tab] ? " (inverted)" : "");
	return MEMVIEW_REBUILD | MEMVIEW_REDRAW;
}

static unsigned memview_tab(struct memview *v, int tab)
{
	v->tab = (enum memview_tab)((tab + MEMVIEW_TAB_COUNT) %
				    MEMVIEW_TAB_COUNT);
	return MEMVIEW_REBUILD | MEMVIEW_REDRAW;
}

/* ---- actions: change state, return reactions, never draw ---- */

static unsigned memview_help_action(struct memview *v, enum memview_action a)
{
	long step = term_motion_step(memview_keys_motion(a),
				     term_list_page(v->nvisible), 100000);

	if (step) {
		v->help_top = term_pager_scroll(v->help_top, step);
		return MEMVIEW_REDRAW; /* the drawing clamps the bottom */
	}
	if (a == MEMVIEW_ACT_QUIT)
		return MEMVIEW_QUIT;
	if (a == MEMVIEW_ACT_REDRAW)
		clearok(curscr, TRUE);
	else
		v->help = false; /* any other key goes back */
	return MEMVIEW_REDRAW;
}

static unsigned memview_action(struct memview *v, const struct memview_key *k)
{
	if (v->help)
		return memview_help_action(v, k->action);
	switch (k->action) {
	case MEMVIEW_ACT_UP:
	case MEMVIEW_ACT_DOWN:
	case MEMVIEW_ACT_PAGE_UP:
	case MEMVIEW_ACT_PAGE_DOWN:
	case MEMVIEW_ACT_HOME:
	case MEMVIEW_ACT_END:
		return memview_moved(
			v, term_list_motion(&v->list[v->tab], v->rows.nrows,
					    memview_keys_motion(k->action),
					    v->nvisible));
	case MEMVIEW_ACT_TAB_NEXT:
		return memview_tab(v, (int)v->tab + 1);
	case MEMVIEW_ACT_TAB_PREV:
		return memview_tab(v, (int)v->tab - 1);
	case MEMVIEW_ACT_TAB:
		return memview_tab(v, k->arg);
	case MEMVIEW_ACT_TOGGLE:
		return memview_open(v, -1);
	case MEMVIEW_ACT_EXPAND:
		return memview_open(v, 1);
	case MEMVIEW_ACT_COLLAPSE:
		return memview_open(v, 0);
	case MEMVIEW_ACT_SORT_NEXT:
		return memview_sort(v, 1);
	case MEMVIEW_ACT_SORT_PREV:
		return memview_sort(v, -1);
	case MEMVIEW_ACT_INVERT:
		v->rows.invert[v->tab] = !v->rows.invert[v->tab];
		return memview_sort(v, 0);
	case MEMVIEW_ACT_SEARCH:
		v->typing = true;
		v->line[0] = '\0';
		return MEMVIEW_REDRAW;
	case MEMVIEW_ACT_SEARCH_NEXT:
	case MEMVIEW_ACT_SEARCH_PREV:
		if (!v->search[0])
			return 0;
		if (!memview_search(
			    v, k->action == MEMVIEW_ACT_SEARCH_NEXT ? 1 : -1,
			    false))
			snprintf(v->message, sizeof(v->message),
				 "no more matches for '%s'", v->search);
		return MEMVIEW_REDRAW;
	case MEMVIEW_ACT_BACK:
		v->search[0] = '\0';
		return MEMVIEW_REDRAW;
	case MEMVIEW_ACT_PAUSE:
		v->paused = !v->paused;
		if (!v->paused)
			return MEMVIEW_REDRAW | MEMVIEW_REFRESH;
		memview_freeze(v);
		return MEMVIEW_REBUILD | MEMVIEW_REDRAW;
	case MEMVIEW_ACT_HELP:
		v->help = true;
		v->help_top = 0;
		return MEMVIEW_REDRAW;
	case MEMVIEW_ACT_REDRAW:
		clearok(curscr, TRUE);
		return MEMVIEW_REDRAW;
	case MEMVIEW_ACT_QUIT:
		return MEMVIEW_QUIT;
	case MEMVIEW_ACT_NONE:
		break;
	}
	return 0;
}

/* The search line: printable keys edit it (incrementally), Backspace
 * deletes, Ctrl-U clears, Enter keeps it, Esc cancels. */
static unsigned memview_input_key(struct memview *v, int key)
{
	size_t len = strlen(v->line);

	if (key == 27) {
		v->typing = false;
		v->search[0] = '\0';
		return MEMVIEW_REDRAW;
	}
	if (key == '\n' || key == '\r' || key == KEY_ENTER) {
		v->typing = false;
		if (v->search[0] && !memview_search(v, 1, true))
			snprintf(v->message, sizeof(v->message),
				 "no match for '%s'", v->search);
		return MEMVIEW_REDRAW;
	}
	if (key == KEY_BACKSPACE || key == 127 || key == 8) {
		if (len)
			v->line[len - 1] = '\0';
	} else if (key == MEMVIEW_CTRL('u')) {
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
	if (v->search[0] && !memview_search(v, 1, true))
		snprintf(v->message, sizeof(v->message), "no match for '%s'",
			 v->search);
	return MEMVIEW_REDRAW;
}

static unsigned memview_mouse(struct memview *v)
{
	MEVENT ev;

	if (getmouse(&ev) != OK || v->help)
		return 0;
	if (ev.bstate & BUTTON4_PRESSED)
		return memview_move(v, -3);
	if (ev.bstate & BUTTON5_PRESSED)
		return memview_move(v, 3);
	if (!(ev.bstate & (BUTTON1_CLICKED | BUTTON1_PRESSED)))
		return 0;
	if (ev.y == v->first_row - 2) {
		for (int k = 0; k < MEMVIEW_TAB_COUNT; k++)
			if (ev.x >= v->tab_x[k] && ev.x < v->tab_x[k + 1])
				return memview_tab(v, k);
		return 0;
	}
	if (ev.y >= v->first_row && ev.y < v->first_row + v->nvisible &&
	    v->list[v->tab].top + (size_t)(ev.y - v->first_row) < v->rows.nrows)
		return memview_select(v, v->list[v->tab].top +
						 (size_t)(ev.y - v->first_row));
	return 0;
}

static unsigned memview_key(struct memview *v, int key)
{
	const struct memview_key *k;

	if (key == KEY_RESIZE) {
		term_size(&v->lines, &v->cols);
		return MEMVIEW_REDRAW;
	}
	if (v->typing)
		return memview_input_key(v, key);
	if (key == KEY_MOUSE)
		return memview_mouse(v);
	v->message[0] = '\0';
	k = memview_keys_find(key);
	return k ? memview_action(v, k) : MEMVIEW_REDRAW;
}

/* ---- watchers: mark dirty only ---- */

static unsigned memview_on_key(void *ctx, int key)
{
	return memview_key(ctx, key);
}

static void memview_on_rebuild(void *ctx)
{
	memview_rebuild(ctx);
}

/* Every key waiting; the next key of a burst acts on the rows this one
 * asked for (Tab then j), and drawing still waits. */
static void memview_on_keys(struct ev_loop *loop, ev_io *w, int revents)
{
	static const struct term_keys keys = {memview_on_key,
					      memview_on_rebuild};
	struct memview_loop *l = w->data;

	(void)loop;
	(void)revents;
	l->v->dirty = term_keys_drain(&keys, l->v, l->v->dirty);
}

static void memview_read(struct memview_loop *l, enum cray_step step)
{
	if (step != CRAY_STEP_DONE)
		return;
	ev_idle_stop(l->loop, &l->file);
	ev_io_stop(l->loop, &l->pipe);
	/* The end shows at once, not at the next tick. */
	l->v->dirty |= MEMVIEW_REFRESH | MEMVIEW_REDRAW;
}

static void memview_on_file(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct memview_loop *l = w->data;

	(void)loop;
	(void)revents;
	memview_read(l, cray_source_read(&l->v->src, MEMVIEW_BUDGET));
}

static void memview_on_pipe(struct ev_loop *loop, ev_io *w, int revents)
{
	struct memview_loop *l = w->data;

	(void)loop;
	(void)revents;
	memview_read(l, cray_source_read(&l->v->src, MEMVIEW_BUDGET));
}

static void memview_on_refresh(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct memview_loop *l = w->data;
	struct memview *v = l->v;
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC),
		 records = memview_records(v);

	(void)loop;
	(void)revents;
	if (now > v->tick_ns)
		v->rate = (double)(records - v->tick_records) * 1e9 /
			  (double)(now - v->tick_ns);
	v->tick_ns = now;
	v->tick_records = records;
	v->dirty |= MEMVIEW_REFRESH | MEMVIEW_REDRAW;
}

static void memview_on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct memview_loop *l = w->data;

	(void)loop;
	(void)revents;
	if (w->signum == SIGWINCH) {
		term_size(&l->v->lines, &l->v->cols);
		l->v->dirty |= MEMVIEW_REDRAW;
		return;
	}
	l->v->exit_status = 128 + w->signum;
	l->v->dirty |= MEMVIEW_QUIT;
}

/* The one place that does what the callbacks asked for. */
static void memview_on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct memview_loop *l = w->data;
	struct memview *v = l->v;
	unsigned d = v->dirty;

	(void)revents;
	v->dirty = 0;
	if (d & MEMVIEW_QUIT) {
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	if ((d & MEMVIEW_REFRESH) && !v->paused) {
		memview_snapshot(v, false);
		d |= MEMVIEW_REBUILD;
	}
	if (d & MEMVIEW_REBUILD)
		memview_rebuild(v);
	if (d & (MEMVIEW_REDRAW | MEMVIEW_REBUILD))
		memview_draw(v);
}

static void memview_watch(struct memview_loop *l, FILE *in)
{
	static const int sigs[] = {SIGWINCH, SIGINT, SIGTERM, SIGHUP};
	struct memview *v = l->v;
	double delay = v->opt.delay_tenths / 10.0;

	ev_io_init(&l->keys, memview_on_keys, fileno(in), EV_READ);
	ev_idle_init(&l->file, memview_on_file);
	ev_io_init(&l->pipe, memview_on_pipe, v->src.fd, EV_READ);
	ev_timer_init(&l->refresh, memview_on_refresh, delay, delay);
	ev_prepare_init(&l->render, memview_on_prepare);
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
		ev_signal_init(&l->sig[i], memview_on_signal, sigs[i]);
		l->sig[i].data = l;
		ev_signal_start(l->loop, &l->sig[i]);
	}
}

/* The terminal the keys come from: stdin, unless the trace is on stdin
 * (or stdin is no terminal), then /dev/tty. */
static FILE *memview_keys_file(bool *own)
{
	FILE *f;

	*own = false;
	if (isatty(STDIN_FILENO))
		return stdin;
	f = fopen("/dev/tty", "re");
	*own = f != NULL;
	return f;
}

int memview_run(const char *path, const struct memview_options *opt)
{
	struct memview v;
	struct memview_loop l = {0};
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
	memview_rows_init(&v.rows);
	if (!cray_source_open(&v.src, path, err, sizeof(err), &usage)) {
		fprintf(stderr, "corotop: %s\n", err);
		return usage ? 2 : 1;
	}
	in = memview_keys_file(&own_in);
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
	scr = memview_start_curses(&v, in);
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
	memview_watch(&l, in);
	v.dirty = MEMVIEW_REFRESH | MEMVIEW_REDRAW;
	ev_run(l.loop, 0);
	term_finish();
	ev_loop_destroy(l.loop);
out:
	if (scr)
		delscreen(scr);
	if (own_in)
		fclose(in);
	sigprocmask(SIG_SETMASK, &old, NULL);
	memview_rows_finish(&v.rows);
	cray_snap_finish(&v.snap);
	cray_source_close(&v.src);
	return v.exit_status;
}
