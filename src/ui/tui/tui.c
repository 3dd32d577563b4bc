/*
 * tui: the interactive loop.
 *
 * Watchers (one libev loop, created with signalfd so that the signals main()
 * blocked before starting the engine threads arrive here and nowhere else):
 *   stdin     ev_io; drains getch() until ERR so escape sequences never lag
 *   signals   ev_signal: SIGWINCH re-lays out, SIGINT/SIGTERM/SIGHUP quit,
 *             SIGCHLD reaps the target
 *   refresh   ev_timer every delay: take a new snapshot
 *   publish   ev_async, sent by the engine's harvest thread after each tick
 *   output    ev_io on the launched target's pty: drained as it comes (the
 *             target must never block on a full pty), drawn at most every
 *             TUI_OUTPUT_DRAW_S by a one-shot ev_timer
 *   render    ev_prepare: the single place that draws, once per loop pass,
 *             ending in one doupdate()
 * Every other callback only sets bits in t->dirty.  Actions (keys, mouse)
 * return reaction flags; they never draw.
 *
 * The loop knows the views only through their table (view.h): the view
 * shown draws below the header and acts on an action first; what it leaves
 * has the meaning every view shares (moving, sorting and grouping the
 * table's rows, search and filter, pause, quit, the replay's keys).
 *
 * The terminal (term.c) is restored by term_finish on every way out of
 * tui_run, by an atexit handler if corotop dies through exit() elsewhere,
 * and by a crash handler.
 */
#define _GNU_SOURCE
#include "ui/tui/tui.h"

#define TUI_CTRL(c) ((c)&0x1f)

#include <ctype.h>
#include <curses.h>
#include <ev.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ui/tui/keymap.h"
#include "ui/tui/replay_ctl.h"
#include "ui/term/term.h"

struct tui_loop {
	struct tui *t;
	struct ev_loop *loop;
	ev_io input;
	ev_signal sig[5];
	ev_timer refresh;
	ev_async publish;
	ev_prepare render;
	ev_io output;
	ev_timer output_draw;
};

/* A target printing without pause redraws the screen this often at most. */
#define TUI_OUTPUT_DRAW_S 0.05

/* The engine's publish hook runs on the harvest thread; it may only send
 * the async watcher, and only once the loop exists. */
static _Atomic(struct tui_loop *) tui_published;

void tui_publish_hook(void *ctx)
{
	/* acquire: pairs with the release store in tui_run. */
	struct tui_loop *l =
		atomic_load_explicit(&tui_published, memory_order_acquire);

	(void)ctx;
	if (l)
		ev_async_send(l->loop, &l->publish);
}

int tui_attr(const struct tui *t, enum tui_pair p)
{
	if (t->color)
		return COLOR_PAIR(p) | (p == PAIR_TITLE ? A_BOLD : 0);
	switch (p) {
	case PAIR_HEADER:
	case PAIR_TITLE:
	case PAIR_SELECTED:
		return A_REVERSE;
	case PAIR_WARN:
	case PAIR_GROUP:
		return A_BOLD;
	case PAIR_DEAD:
		return A_DIM;
	default:
		return A_NORMAL;
	}
}

/* The colour pairs tui_attr draws with. */
static const struct term_pair tui_pairs[] = {
	{PAIR_HEADER, COLOR_BLACK, COLOR_CYAN, 0},
	{PAIR_TITLE, COLOR_BLACK, COLOR_GREEN, 0},
	{PAIR_RUNNING, COLOR_GREEN, -1, 0},
	{PAIR_DEAD, COLOR_BLUE, -1, 244},
	{PAIR_WARN, COLOR_RED, -1, 0},
	{PAIR_SELECTED, COLOR_BLACK, COLOR_CYAN, 0},
	{PAIR_METER, COLOR_CYAN, -1, 0},
	{PAIR_GROUP, COLOR_YELLOW, -1, 0},
};

static bool tui_start_curses(struct tui *t)
{
	t->ascii = term_prepare();
	if (!initscr())
		return false;
	term_init(t->opt.mouse);
	t->color = term_colors(t->opt.color, tui_pairs,
			       sizeof(tui_pairs) / sizeof(tui_pairs[0]));
	term_size(&t->lines, &t->cols);
	return true;
}

/* ---- actions: change state, return reactions, never draw ---- */

/* The search or filter line, for the rows of the view shown: a view
 * without rows of its own leaves for the table, whose rows it searches. */
static unsigned tui_input_open(struct tui *t, enum tui_action a)
{
	const char *now;

	if (!tui_view(t)->search)
		tui_view_show(t, VIEW_TABLE);
	now = tui_view_rows(t)->filter_text(t);
	t->input = a == ACT_SEARCH ? INPUT_SEARCH : INPUT_FILTER;
	snprintf(t->line, sizeof(t->line), "%s", a == ACT_FILTER ? now : "");
	snprintf(t->before, sizeof(t->before), "%s", now);
	t->line_len = strlen(t->line);
	return REACT_REDRAW;
}

/* An action: the view shown acts first; what it leaves has the meaning
 * every view shares.  Moving, sorting and grouping act on the table's
 * rows from any view (the detail view follows the selection). */
static unsigned tui_dispatch(struct tui *t, enum tui_action a)
{
	const struct tui_view_impl *v = tui_view(t);
	int page = table_view_visible_rows(t);
	enum term_motion m = keymap_motion(a);
	int open = tui_view_opened_by(a);

	/* Left scrolls the table, and the detail view while it is scrolled
	 * right; every other view (and those at their left edge) takes it for
	 * Esc. */
	if (a == ACT_LEFT && t->view != VIEW_TABLE) {
		int r = v->action ? v->action(t, a, page) : -1;

		if (r >= 0)
			return (unsigned)r;
		a = ACT_BACK;
	}
	if (v->action) {
		int r = v->action(t, a, page);

		if (r >= 0)
			return (unsigned)r;
	}
	if (open >= 0)
		return tui_view_toggle(t, (enum tui_view)open);
	if (m != TERM_MOTION_NONE)
		return table_view_move(t,
				       term_motion_step(m, term_list_page(page),
							(long)t->table.nrows));
	switch (a) {
	case ACT_BACK:
		return tui_view_show(t, VIEW_TABLE);
	case ACT_CORO_NEXT:
		return table_view_move(t, 1);
	case ACT_CORO_PREV:
		return table_view_move(t, -1);
	case ACT_SORT_NEXT:
		return table_view_sort(t, 1);
	case ACT_SORT_PREV:
		return table_view_sort(t, -1);
	case ACT_INVERT:
		t->table.sort_invert = !t->table.sort_invert;
		return table_view_sort(t, 0);
	case ACT_SEARCH:
	case ACT_FILTER:
		return tui_input_open(t, a);
	case ACT_SEARCH_NEXT:
	case ACT_SEARCH_PREV:
		if (!t->search[0])
			return REACT_NONE;
		tui_view_rows(t)->search(t, a == ACT_SEARCH_NEXT ? 1 : -1,
					 false);
		return REACT_REDRAW;
	case ACT_GROUP:
		t->table.group_by_thread = !t->table.group_by_thread;
		return REACT_REBUILD | REACT_REDRAW;
	case ACT_PAUSE:
		t->paused = !t->paused;
		return REACT_REDRAW | (t->paused ? 0 : REACT_REFRESH);
	case ACT_EXPORT:
		return hot_view_export(t);
	case ACT_RESET_RATES:
		engine_reset_rates(t->engine);
		snprintf(t->message, sizeof(t->message), "rates reset");
		return REACT_REFRESH | REACT_REDRAW;
	case ACT_REDRAW:
		clearok(curscr, TRUE);
		return REACT_REDRAW;
	case ACT_QUIT:
		return REACT_QUIT;
	case ACT_PLAY:
	case ACT_STEP_BACK:
	case ACT_STEP_FWD:
	case ACT_FASTER:
	case ACT_SLOWER:
	case ACT_GOTO:
	case ACT_REPLAY_START:
	case ACT_REPLAY_END:
		return t->replay ? replay_ctl_action(t, a) : REACT_NONE;
	default:
		/* Enter, the tabs, the tree: the views that have them. */
		return REACT_NONE;
	}
}

/* The search/filter line: printable keys edit it, Backspace deletes a
 * character, Ctrl-W a word and Ctrl-U the line (as readline does), Enter
 * keeps it, Esc cancels.  Search is incremental; a filter applies while it
 * parses.  Both act on the rows of the view shown (tui_view_rows). */
static unsigned tui_input_key(struct tui *t, int key)
{
	const struct tui_view_impl *rows = tui_view_rows(t);
	char err[160] = "";
	bool done = false, cancel = false;

	if (key == 27) {
		cancel = done = true;
	} else if (key == '\n' || key == '\r' || key == KEY_ENTER) {
		done = true;
	} else if (key == KEY_BACKSPACE || key == 127 || key == 8) {
		if (t->line_len)
			t->line[--t->line_len] = '\0';
	} else if (key == TUI_CTRL('u')) {
		t->line_len = 0;
		t->line[0] = '\0';
	} else if (key == TUI_CTRL('w')) {
		while (t->line_len && t->line[t->line_len - 1] == ' ')
			t->line_len--;
		while (t->line_len && t->line[t->line_len - 1] != ' ')
			t->line_len--;
		t->line[t->line_len] = '\0';
	} else if (key >= 32 && key < 127 &&
		   t->line_len + 1 < sizeof(t->line)) {
		t->line[t->line_len++] = (char)key;
		t->line[t->line_len] = '\0';
	} else {
		return REACT_NONE;
	}
	if (t->input == INPUT_GOTO) {
		if (!done)
			return REACT_REDRAW;
		t->input = INPUT_NONE;
		return cancel ? REACT_REDRAW : replay_ctl_goto(t, t->line);
	}
	if (t->input == INPUT_SEARCH) {
		if (cancel)
			t->search[0] = '\0';
		else
			for (size_t i = 0; i <= t->line_len; i++)
				t->search[i] = (char)tolower(
					(unsigned char)t->line[i]);
		rows->search(t, 1, true);
	} else if (cancel) {
		/* Esc: back to the filter that was in effect before. */
		rows->filter(t, t->before, err, sizeof(err));
	} else if (!rows->filter(t, t->line, err, sizeof(err)) && done) {
		/* A filter that does not parse is not kept, and neither is any
		 * half-typed prefix of it: restore the previous one. */
		rows->filter(t, t->before, NULL, 0);
		snprintf(t->message, sizeof(t->message), "%s (filter kept: %s)",
			 err, t->before[0] ? t->before : "none");
	}
	if (done)
		t->input = INPUT_NONE;
	return REACT_REBUILD | REACT_REDRAW;
}

static unsigned tui_mouse(struct tui *t)
{
	MEVENT ev;

	if (getmouse(&ev) != OK || !tui_view(t)->mouse)
		return REACT_NONE;
	return tui_view(t)->mouse(t, &ev);
}

static unsigned tui_key(struct tui *t, int key)
{
	const struct tui_view_impl *v = tui_view(t);
	const struct key_binding *b;

	if (key == KEY_RESIZE) {
		term_size(&t->lines, &t->cols);
		return REACT_REDRAW;
	}
	/* From the first key on, the table's cursor follows its coroutine
	 * through sorts, groups and refreshes (tui.h, chosen). */
	t->table.chosen = true;
	if (t->input != INPUT_NONE)
		return tui_input_key(t, key);
	if (v->key)
		return v->key(t, key);
	if (key == KEY_MOUSE)
		return tui_mouse(t);
	t->message[0] = '\0';
	/* Replaying: the time keys, but the keys a view keeps (the hot-stack
	 * tree's + and -). */
	b = t->replay && !(v->own_keys && key > 0 && key < 128 &&
			   strchr(v->own_keys, key))
		    ? keymap_find_replay(key)
		    : keymap_find(key);
	return b ? tui_dispatch(t, b->action) : REACT_NONE;
}

/* ---- watchers: mark dirty only ---- */

static unsigned tui_on_key(void *ctx, int key)
{
	return tui_key(ctx, key);
}

static void tui_on_rebuild(void *ctx)
{
	table_view_rebuild(ctx);
}

/* Every key waiting: the next key of the same burst (t then g, say) acts
 * on the rows this one asked for; drawing still waits. */
static void tui_on_input(struct ev_loop *loop, ev_io *w, int revents)
{
	static const struct term_keys keys = {tui_on_key, tui_on_rebuild};
	struct tui_loop *l = w->data;

	(void)loop;
	(void)revents;
	l->t->dirty = term_keys_drain(&keys, l->t, l->t->dirty);
}

static void tui_on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct tui_loop *l = w->data;
	struct tui *t = l->t;

	(void)loop;
	(void)revents;
	switch (w->signum) {
	case SIGWINCH:
		term_size(&t->lines, &t->cols);
		t->dirty |= REACT_REDRAW;
		break;
	case SIGCHLD:
		if (engine_reap(t->engine))
			t->dirty |= REACT_REFRESH | REACT_REDRAW;
		break;
	default:
		t->exit_status = 128 + w->signum;
		t->dirty |= REACT_QUIT;
		break;
	}
}

static void tui_on_refresh(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct tui_loop *l = w->data;

	(void)loop;
	(void)revents;
	l->t->dirty |= REACT_REFRESH;
}

static void tui_on_publish(struct ev_loop *loop, ev_async *w, int revents)
{
	struct tui_loop *l = w->data;

	(void)loop;
	(void)revents;
	l->t->dirty |= REACT_REFRESH;
}

/* The target printed: read it all now, draw it soon. */
static void tui_on_output(struct ev_loop *loop, ev_io *w, int revents)
{
	struct tui_loop *l = w->data;
	struct tui *t = l->t;

	(void)revents;
	engine_output_drain(t->engine);
	if (engine_output_fd(t->engine) < 0)
		ev_io_stop(loop, w);
	if (!ev_is_active(&l->output_draw)) {
		ev_timer_set(&l->output_draw, TUI_OUTPUT_DRAW_S, 0.);
		ev_timer_start(loop, &l->output_draw);
	}
}

static void tui_on_output_draw(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct tui_loop *l = w->data;

	(void)loop;
	(void)revents;
	l->t->dirty |= REACT_REDRAW;
}

static void tui_draw(struct tui *t)
{
	erase();
	if (t->lines < 10 || t->cols < 40) {
		term_text(0, 0, A_NORMAL, "corotop needs 40x10");
		term_text(1, 0, A_NORMAL, "(this is %dx%d)", t->cols, t->lines);
	} else {
		table_view_header(t);
		tui_view(t)->draw(t);
	}
	wnoutrefresh(stdscr);
	doupdate();
}

/* The one place that does work the callbacks asked for. */
static void tui_on_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct tui_loop *l = w->data;
	struct tui *t = l->t;
	const struct tui_view_impl *under = tui_view_under(t);
	unsigned d = t->dirty;

	(void)revents;
	t->dirty = 0;
	if (d & REACT_QUIT) {
		t->quit = true;
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	/* The detail view (or help over it) wants the full history. */
	{
		uint64_t want = under->follows ? t->selected_id : 0;

		if (want != t->watching) {
			engine_watch(t->engine, want);
			t->watching = want;
			d |= REACT_REFRESH;
			/* Paused: the rows stay frozen, but the drill-down
			 * needs this coroutine's transitions. */
			if (t->paused && t->have_snap) {
				engine_history(t->engine, &t->snap);
				d |= REACT_REDRAW;
			}
		}
	}
	if ((d & REACT_REFRESH) && !t->paused) {
		if (under->update)
			under->update(t);
		engine_snapshot(t->engine, &t->snap);
		t->have_snap = true;
		thread_meters_update(t);
		if (t->snap.target.exited && !t->message[0])
			snprintf(t->message, sizeof(t->message), "%s",
				 t->snap.target.core
					 ? "a core file: frozen at its dump; q "
					   "quits"
					 : "the target has exited; q quits");
		d |= REACT_REBUILD | REACT_REDRAW;
	}
	if (d & REACT_REBUILD)
		table_view_rebuild(t);
	if (d & (REACT_REDRAW | REACT_REBUILD))
		tui_draw(t);
}

int tui_run(struct engine *e, const struct tui_options *opt)
{
	static const int sigs[] = {SIGWINCH, SIGINT, SIGTERM, SIGHUP, SIGCHLD};
	struct tui t = {0};
	struct tui_loop l = {0};
	double delay = opt->delay_tenths / 10.0;
	char err[160];

	t.engine = e;
	t.opt = *opt;
	{
		struct engine_replay_info ri;

		if (engine_replay_info(e, &ri)) {
			const char *base = strrchr(ri.path, '/');
			/* The command without its directory: "demo -d 8". */
			char *cmd = ri.command, *sp = strchr(cmd, ' '), *sl;

			if (sp)
				*sp = 0;
			sl = strrchr(cmd, '/');
			if (sp)
				*sp = ' ';
			if (sl)
				memmove(cmd, sl + 1, strlen(sl + 1) + 1);
			t.replay = true;
			snprintf(t.replay_name, sizeof(t.replay_name),
				 "%.40s%s%.40s%s", base ? base + 1 : ri.path,
				 ri.command[0] ? " (" : "", ri.command,
				 ri.command[0] ? ")" : "");
		}
	}
	t.table.sort_column = opt->sort_column >= 0 ? opt->sort_column : COL_ID;
	t.table.sort_invert = opt->sort_invert;
	t.selected_id = UINT64_MAX;
	t.lints = opt->lints;
	memcpy(t.hidden, opt->hidden, sizeof(t.hidden));
	filter_init(&t.table.filter);
	/* A live table waits for a coroutine's first switch (filter.h). */
	if (!t.replay)
		t.table.filter.unswitched_ns = FILTER_UNSWITCHED_NS;
	rowset_init(&t.table.rowset);
	if (opt->filter &&
	    !filter_set(&t.table.filter, opt->filter, err, sizeof(err))) {
		fprintf(stderr, "corotop: -F: %s\n", err);
		return 2;
	}
	if (!tui_views_create(&t)) {
		fprintf(stderr, "corotop: out of memory for the views\n");
		return 1;
	}
	snapshot_init(&t.snap);
	if (!tui_start_curses(&t)) {
		tui_views_destroy(&t);
		fprintf(stderr, "corotop: cannot initialise the terminal\n");
		return 1;
	}
	l.t = &t;
	l.loop = ev_loop_new(EVFLAG_AUTO | EVFLAG_SIGNALFD);
	if (!l.loop) {
		term_finish();
		tui_views_destroy(&t);
		fprintf(stderr, "corotop: cannot create the event loop\n");
		return 1;
	}
	ev_io_init(&l.input, tui_on_input, STDIN_FILENO, EV_READ);
	l.input.data = &l;
	ev_io_start(l.loop, &l.input);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		ev_signal_init(&l.sig[i], tui_on_signal, sigs[i]);
		l.sig[i].data = &l;
		ev_signal_start(l.loop, &l.sig[i]);
	}
	ev_timer_init(&l.refresh, tui_on_refresh, delay, delay);
	l.refresh.data = &l;
	ev_timer_start(l.loop, &l.refresh);
	ev_async_init(&l.publish, tui_on_publish);
	l.publish.data = &l;
	ev_async_start(l.loop, &l.publish);
	t.output = engine_output_fd(e) >= 0;
	ev_timer_init(&l.output_draw, tui_on_output_draw, TUI_OUTPUT_DRAW_S,
		      0.);
	l.output_draw.data = &l;
	if (t.output) {
		ev_io_init(&l.output, tui_on_output, engine_output_fd(e),
			   EV_READ);
		l.output.data = &l;
		ev_io_start(l.loop, &l.output);
	}
	ev_prepare_init(&l.render, tui_on_prepare);
	l.render.data = &l;
	ev_prepare_start(l.loop, &l.render);
	/* release: the hook may now use the loop. */
	atomic_store_explicit(&tui_published, &l, memory_order_release);

	t.dirty = REACT_REFRESH | REACT_REDRAW;
	ev_run(l.loop, 0);

	atomic_store_explicit(&tui_published, NULL, memory_order_release);
	/* The harvest thread may have loaded the pointer just before: stop
	 * (join) it before the loop it would signal goes away. */
	engine_stop(e);
	term_finish();
	ev_loop_destroy(l.loop);
	filter_finish(&t.table.filter);
	if (!t.exit_status && t.snap.target.exited)
		t.exit_status = t.snap.target.term_signal
					? 128 + t.snap.target.term_signal
					: t.snap.target.exit_code;
	snapshot_finish(&t.snap);
	free(t.table.rows);
	rowset_finish(&t.table.rowset);
	tui_views_destroy(&t);
	return t.exit_status;
}
