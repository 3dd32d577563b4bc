/*
 * hot_view: where the CPU goes (H).  The engine's hot stacks (CallTrace
 * samples, engine/stacks/hotquery.c) shown two ways:
 *
 *   list  the top rows by window weight, each as "leaf <- caller <- ...":
 *         one per function stack (L cycles function, line, address; the
 *         engine merges the stacks, engine_hot_rows), with %SELF (samples
 *         of this stack) and %TOTAL (samples with its leaf function
 *         anywhere on the stack: the leaf's inclusive time), both of the
 *         window, and SAMPLES since start or z, the columns labelled so;
 *         below it every frame of the selected row's heaviest stack, fully
 *         symbolized;
 *   tree  the caller -> callee tree of the same window, merged by function
 *         (t or F5 switches, as htop's tree view), %TOTAL and %SELF per
 *         node; + and - (or Enter) open and close a node, E opens all, C
 *         closes all.
 *
 * z zeroes the counts, x writes them in flamegraph.pl's folded format (to
 * the --folded file, else corotop-PID.folded in the current directory).
 *
 * The view copies what it shows on each refresh (never while paused), so a
 * rotation on the harvest thread never changes rows under the cursor.  The
 * selection follows its row (by the row's key) or its node (by path: the hash
 * of the function names from the root), and so does each node's open or
 * closed state: `toggled` lists the paths whose state differs from the
 * default, which E and C set.
 */
#define _GNU_SOURCE
#include <curses.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ui/tui/tui.h"

#define HOT_MAX_STACKS 256u
#define HOT_MAX_NODES 4096u
#define HOT_MAX_TOGGLED 1024u
#define HOT_FIRST_ROW 6 /* the column titles are on row 5 */

/* The view's copies and cursor. */
struct hot_view {
	bool tree;	       /* the caller -> callee tree, not the top list */
	bool expand_all;       /* nodes' state unless toggled (E / C) */
	enum engine_hot_by by; /* the list's rows (L) */
	struct engine_calltrace_stats stats;
	struct engine_hot_stack *stacks; /* the top list, copied on refresh */
	size_t nstacks;
	struct hot_node *nodes; /* the tree, pre-order */
	size_t nnodes;
	uint64_t *path;	   /* per node: hash of the names from the root */
	uint32_t *visible; /* node index per tree row */
	size_t nvisible;
	uint64_t *toggled; /* paths whose open state is not expand_all */
	size_t ntoggled;
	struct term_list list;
	uint64_t selected_key; /* row key (list) or path (tree) */
};

static struct hot_view *hot_of(const struct tui *t)
{
	return t->view_state[VIEW_HOT];
}

static void hot_finish(struct hot_view *h);

static bool hot_alloc(struct hot_view *h)
{
	if (h->stacks)
		return true;
	h->stacks = calloc(HOT_MAX_STACKS, sizeof(*h->stacks));
	h->nodes = calloc(HOT_MAX_NODES, sizeof(*h->nodes));
	h->path = calloc(HOT_MAX_NODES, sizeof(*h->path));
	h->visible = calloc(HOT_MAX_NODES, sizeof(*h->visible));
	h->toggled = calloc(HOT_MAX_TOGGLED, sizeof(*h->toggled));
	if (h->stacks && h->nodes && h->path && h->visible && h->toggled)
		return true;
	hot_finish(h);
	return false;
}

static void hot_finish(struct hot_view *h)
{
	free(h->stacks);
	free(h->nodes);
	free(h->path);
	free(h->visible);
	free(h->toggled);
	memset(h, 0, sizeof(*h));
}

/* FNV-1a over the name, chained to the parent's path. */
static uint64_t hot_path_hash(uint64_t parent, const char *name)
{
	uint64_t x = parent ^ 0xcbf29ce484222325ull;

	for (; *name; name++)
		x = (x ^ (unsigned char)*name) * 0x100000001b3ull;
	return x ? x : 1;
}

static bool hot_toggled(const struct hot_view *h, uint64_t path)
{
	for (size_t i = 0; i < h->ntoggled; i++)
		if (h->toggled[i] == path)
			return true;
	return false;
}

static bool hot_open(const struct hot_view *h, size_t node)
{
	return h->expand_all != hot_toggled(h, h->path[node]);
}

/* Which nodes show: a closed node hides its subtree. */
static void hot_layout_tree(struct hot_view *h)
{
	uint64_t parent[CT_MAX_FRAMES + 1] = {0};

	h->nvisible = 0;
	for (size_t i = 0; i < h->nnodes; i++) {
		uint32_t d = h->nodes[i].depth;

		if (d > CT_MAX_FRAMES)
			d = CT_MAX_FRAMES;
		h->path[i] =
			hot_path_hash(d ? parent[d - 1] : 0, h->nodes[i].name);
		parent[d] = h->path[i];
	}
	for (size_t i = 0; i < h->nnodes;) {
		h->visible[h->nvisible++] = (uint32_t)i;
		if (!hot_open(h, i) && h->nodes[i].subtree > 1)
			i += h->nodes[i].subtree;
		else
			i++;
	}
}

static size_t hot_rows(const struct tui *t)
{
	const struct hot_view *h = hot_of(t);

	return h->tree ? h->nvisible : h->nstacks;
}

/* The key the selection follows across refreshes. */
static uint64_t hot_row_key(const struct tui *t, size_t row)
{
	const struct hot_view *h = hot_of(t);

	if (row >= hot_rows(t))
		return 0;
	return h->tree ? h->path[h->visible[row]] : h->stacks[row].key;
}

static void hot_reselect(struct tui *t)
{
	struct hot_view *h = hot_of(t);
	size_t n = hot_rows(t);

	for (size_t r = 0; r < n; r++)
		if (hot_row_key(t, r) == h->selected_key) {
			h->list.selected = r;
			return;
		}
	if (h->list.selected >= n)
		h->list.selected = n ? n - 1 : 0;
	h->selected_key = hot_row_key(t, h->list.selected);
}

static void hot_view_refresh(struct tui *t)
{
	struct hot_view *h = hot_of(t);

	if (!hot_alloc(h))
		return;
	engine_calltrace_stats(t->engine, &h->stats);
	/* Only what the mode shows: the tree folds every stack kept. */
	if (h->tree) {
		h->nnodes = engine_hot_tree(t->engine, 0, true, h->nodes,
					    HOT_MAX_NODES);
		hot_layout_tree(h);
	} else {
		h->nstacks = engine_hot_rows(t->engine, 0, ENGINE_HOT_BY_WINDOW,
					     h->by, h->stacks, HOT_MAX_STACKS);
	}
	hot_reselect(t);
}

/* "leaf+0x12 (file.c:3) <- caller <- caller", as much as fits. */
void hot_view_stack_line(struct tui *t, const struct engine_hot_stack *s,
			 char *b, size_t n)
{
	const char *arrow = t->ascii ? " <- " : " \u2190 ";
	size_t used = 0;

	b[0] = '\0';
	for (uint32_t k = 0; k < s->nframes && used + 8 < n; k++) {
		char name[128];

		/* The leaf in full (function+offset and line: stacks that
		 * differ only there are told apart), callers by function. */
		engine_frame_name(t->engine, s->frames[k], k == 0, k == 0, name,
				  sizeof(name));
		used += (size_t)snprintf(b + used, n - used, "%s%s",
					 k ? arrow : "", name);
	}
	if (used >= n)
		b[n - 1] = '\0';
}

/* A list row's "leaf <- caller <- ...", each frame at the row's
 * granularity, as much as fits. */
static void hot_row_line(struct tui *t, const struct engine_hot_stack *s,
			 char *b, size_t n)
{
	const char *arrow = t->ascii ? " <- " : " \u2190 ";
	enum engine_hot_by by = hot_of(t)->by;
	size_t used = 0;

	b[0] = '\0';
	for (uint32_t k = 0; k < s->nframes && used + 8 < n; k++) {
		char name[128];

		engine_hot_frame_label(t->engine, s->frames[k], k == 0, by,
				       name, sizeof(name));
		used += (size_t)snprintf(b + used, n - used, "%s%s",
					 k ? arrow : "", name);
	}
	if (used >= n)
		b[n - 1] = '\0';
}

/* The list's column titles, each % labelled with its window and SAMPLES
 * with its own ("all": since start or z), so that nobody divides one by
 * the other.  Widths into w[3]. */
static void hot_list_titles(struct tui *t, char *b, size_t n, int w[3])
{
	const struct hot_view *h = hot_of(t);
	char self[24], total[24];

	snprintf(self, sizeof(self), "%%SELF %us", h->stats.hot.window_s);
	snprintf(total, sizeof(total), "%%TOTAL %us", h->stats.hot.window_s);
	w[0] = (int)strlen(self);
	w[1] = (int)strlen(total);
	w[2] = (int)strlen("SAMPLES all");
	snprintf(b, n, "%s %s %s  STACK by %s, innermost first", self, total,
		 "SAMPLES all", engine_hot_by_name(h->by));
}

static void hot_draw_list(struct tui *t)
{
	struct hot_view *h = hot_of(t);
	int rows = t->lines - HOT_FIRST_ROW - 1;
	int list_rows = h->nstacks ? rows / 2 : rows;
	char line[1024];
	int w[3];

	hot_list_titles(t, line, sizeof(line), w);
	term_text(HOT_FIRST_ROW - 1, 0, tui_attr(t, PAIR_TITLE), "%-*s",
		  t->cols, line);
	term_list_follow(&h->list, list_rows, 0);
	for (int r = 0; r < list_rows && h->list.top + (size_t)r < h->nstacks;
	     r++) {
		size_t i = h->list.top + (size_t)r;
		const struct engine_hot_stack *s = &h->stacks[i];
		int attr = i == h->list.selected ? tui_attr(t, PAIR_SELECTED)
						 : TUI_NORMAL;

		hot_row_line(t, s, line, sizeof(line));
		term_text(HOT_FIRST_ROW + r, 0, attr,
			  "%*.1f %*.1f %*" PRIu64 "  %-*s", w[0], s->self_pct,
			  w[1], s->total_pct, w[2], s->total, t->cols, line);
	}
	if (h->list.selected < h->nstacks) {
		const struct engine_hot_stack *s = &h->stacks[h->list.selected];
		int y = HOT_FIRST_ROW + list_rows + 1;

		if (s->merged > 1)
			term_text(y++, 1, A_BOLD,
				  "Stack %" PRIu64 " (trace 0x%" PRIx64
				  "), the heaviest of %u merged: %u frames, "
				  "innermost first",
				  s->stack_id, s->trace_id, s->merged,
				  s->nframes);
		else
			term_text(y++, 1, A_BOLD,
				  "Stack %" PRIu64 " (trace 0x%" PRIx64
				  "): %u frames, innermost first",
				  s->stack_id, s->trace_id, s->nframes);
		for (uint32_t k = 0; k < s->nframes && y < t->lines - 1; k++)
			term_text(y++, 3, TUI_NORMAL, "#%-3u %s", k,
				  engine_frame_name(t->engine, s->frames[k],
						    k == 0, true, line,
						    sizeof(line)));
	}
}

static void hot_draw_tree(struct tui *t)
{
	struct hot_view *h = hot_of(t);
	int rows = t->lines - HOT_FIRST_ROW - 1;

	term_text(HOT_FIRST_ROW - 1, 0, tui_attr(t, PAIR_TITLE), "%-*s",
		  t->cols, " %TOTAL   %SELF  CALLER -> CALLEE");
	term_list_follow(&h->list, rows, 0);
	for (int r = 0; r < rows && h->list.top + (size_t)r < h->nvisible;
	     r++) {
		size_t row = h->list.top + (size_t)r;
		size_t i = h->visible[row];
		const struct hot_node *n = &h->nodes[i];
		const char *mark = n->subtree <= 1 ? " "
				   : hot_open(h, i)
					   ? (t->ascii ? "-" : "\u25be")
					   : (t->ascii ? "+" : "\u25b8");
		int attr = row == h->list.selected ? tui_attr(t, PAIR_SELECTED)
						   : TUI_NORMAL;
		int indent = (int)(n->depth > 40 ? 40 : n->depth) * 2;

		term_text(HOT_FIRST_ROW + r, 0, attr, "%7.1f %7.1f  %*s%s %-*s",
			  n->total_pct, n->self_pct, indent, "", mark, t->cols,
			  n->name);
	}
}

static void hot_view_draw(struct tui *t)
{
	struct hot_view *h = hot_of(t);

	if (!h->stats.enabled && t->replay) {
		term_text(5, 1, TUI_NORMAL,
			  "CPU samples are not recorded: a replay has the "
			  "coroutines, their transitions and parked stacks "
			  "(Enter on a row).");
	} else if (!h->stats.enabled) {
		term_text(5, 1, TUI_NORMAL,
			  "No CallTrace region: hot stacks need corotop to "
			  "start the target or attach to it (-p), not --shm.");
	} else if (h->stats.failed) {
		term_text(5, 1, tui_attr(t, PAIR_WARN), "CallTrace stopped: %s",
			  h->stats.warning);
	} else if (h->tree ? !h->nnodes : !h->nstacks) {
		term_text(5, 1, TUI_NORMAL,
			  "No samples yet. Start the target with --sample HZ "
			  "(e.g. --sample 997), or have it call "
			  "corotop_calltrace_put().");
	} else {
		term_text(4, 1, TUI_NORMAL,
			  "Hot stacks by %s: %" PRIu64 " stacks, %" PRIu64
			  " samples since start or z, dropped %" PRIu64
			  "; %% of the last %us",
			  h->tree ? "function" : engine_hot_by_name(h->by),
			  h->stats.hot.stacks, h->stats.hot.weight,
			  engine_calltrace_lost(&h->stats),
			  h->stats.hot.window_s);
		if (h->tree)
			hot_draw_tree(t);
		else
			hot_draw_list(t);
	}
	if (h->tree)
		term_text(t->lines - 1, 0, TUI_NORMAL, "%s",
			  "Esc back  t list  +/- open/close  E open all  "
			  "C close all  z zero  x export  q quit");
	else
		term_text(
			t->lines - 1, 0, TUI_NORMAL,
			"Esc back  t tree  L by %s  z zero counts  "
			"x export folded  F1 help  q quit",
			engine_hot_by_name((h->by + 1) % ENGINE_HOT_BY_COUNT));
}

static unsigned hot_move(struct tui *t, enum term_motion m, int page)
{
	struct hot_view *h = hot_of(t);

	if (!term_list_motion(&h->list, hot_rows(t), m, page))
		return REACT_NONE;
	h->selected_key = hot_row_key(t, h->list.selected);
	return REACT_REDRAW;
}

/* Open (1), close (0) or flip (-1) the selected node. */
static unsigned hot_set_open(struct tui *t, int want)
{
	struct hot_view *h = hot_of(t);
	size_t i;
	bool open;

	if (!h->tree || h->list.selected >= h->nvisible)
		return REACT_NONE;
	i = h->visible[h->list.selected];
	open = hot_open(h, i);
	if (h->nodes[i].subtree <= 1 || (want >= 0 && open == (want == 1)))
		return REACT_NONE;
	if (hot_toggled(h, h->path[i])) {
		for (size_t k = 0; k < h->ntoggled; k++)
			if (h->toggled[k] == h->path[i])
				h->toggled[k] = h->toggled[--h->ntoggled];
	} else if (h->ntoggled < HOT_MAX_TOGGLED) {
		h->toggled[h->ntoggled++] = h->path[i];
	}
	hot_layout_tree(h);
	hot_reselect(t);
	return REACT_REDRAW;
}

unsigned hot_view_export(struct tui *t)
{
	char own[64], err[96];
	const char *path = t->opt.folded_path;

	if (!path) {
		snprintf(own, sizeof(own), "corotop-%d.folded",
			 (int)engine_target_pid(t->engine));
		path = own;
	}
	if (engine_export(t->engine, ENGINE_EXPORT_FOLDED, path, 0, err,
			  sizeof(err)))
		snprintf(t->message, sizeof(t->message),
			 "hot stacks written to %.120s", path);
	else
		snprintf(t->message, sizeof(t->message), "export failed: %s",
			 err);
	return REACT_REDRAW;
}

/* An action in the hot view: its reactions, or -1 when the action keeps
 * its table meaning. */
static int hot_view_action(struct tui *t, enum tui_action a, int page)
{
	struct hot_view *h = hot_of(t);

	switch (a) {
	case ACT_UP:
	case ACT_DOWN:
	case ACT_PAGE_UP:
	case ACT_PAGE_DOWN:
	case ACT_HOME:
	case ACT_END:
		return (int)hot_move(t, keymap_motion(a), page);
	case ACT_GROUP:
	case ACT_TREE:
		h->tree = !h->tree;
		h->list.selected = h->list.top = 0;
		h->selected_key = 0;
		hot_view_refresh(t);
		h->selected_key = hot_row_key(t, 0);
		return REACT_REDRAW;
	case ACT_HOT_BY:
		if (h->tree)
			return REACT_NONE; /* the tree is by function */
		h->by = (h->by + 1) % ENGINE_HOT_BY_COUNT;
		h->list.selected = h->list.top = 0;
		h->selected_key = 0;
		hot_view_refresh(t);
		h->selected_key = hot_row_key(t, 0);
		snprintf(t->message, sizeof(t->message),
			 "hot stacks: one row per %s",
			 h->by == ENGINE_HOT_BY_ADDRESS
				 ? "stack as sampled (by address)"
			 : h->by == ENGINE_HOT_BY_LINE ? "line stack"
						       : "function stack");
		return REACT_REDRAW;
	case ACT_ENTER:
		return (int)hot_set_open(t, -1);
	case ACT_EXPAND:
		return (int)hot_set_open(t, 1);
	case ACT_COLLAPSE:
		return (int)hot_set_open(t, 0);
	case ACT_EXPAND_ALL:
	case ACT_COLLAPSE_ALL:
		h->expand_all = a == ACT_EXPAND_ALL;
		h->ntoggled = 0;
		hot_layout_tree(h);
		hot_reselect(t);
		return REACT_REDRAW;
	case ACT_RESET_RATES:
		engine_hot_zero(t->engine);
		snprintf(t->message, sizeof(t->message),
			 "hot-stack counts zeroed");
		hot_view_refresh(t);
		return REACT_REDRAW;
	case ACT_EXPORT:
		return (int)hot_view_export(t);
	default:
		return -1; /* not the hot view's: the table's meaning */
	}
}

static void *hot_view_create(struct tui *t)
{
	struct hot_view *h = calloc(1, sizeof(*h));

	if (h) {
		h->expand_all = true; /* the tree opens fully (E) */
		/* --hot-by, as for batch output; L cycles from there. */
		h->by = (enum engine_hot_by)(t->opt.hot_by %
					     ENGINE_HOT_BY_COUNT);
	}
	return h;
}

static void hot_view_destroy(void *state)
{
	hot_finish(state);
	free(state);
}

/* Opened afresh: the copies of now. */
static void hot_view_open(struct tui *t, enum tui_view from)
{
	(void)from;
	hot_view_refresh(t);
}

/* + - = open and close the tree's nodes, also while replaying. */
const struct tui_view_impl hot_view_impl = {
	.name = "hot",
	.opens = ACT_HOT,
	.own_keys = "+=-",
	.create = hot_view_create,
	.destroy = hot_view_destroy,
	.open = hot_view_open,
	.update = hot_view_refresh,
	.draw = hot_view_draw,
	.action = hot_view_action,
};
