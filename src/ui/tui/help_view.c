/*
 * help_view: the keys and the columns, drawn from the binding table and
 * the column table themselves, so help can not drift from behaviour.
 * Replaying, the replay keys come first, and the other table leaves out
 * the keys they take (g is "go to", not "first row", then).
 */
#include <curses.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/tui/keymap.h"
#include "ui/tui/tui.h"

/* The help's state: a pager. */
struct help_view {
	int top; /* first help line shown (narrow, scrolled) */
};

static struct help_view *help_of(const struct tui *t)
{
	return t->view_state[VIEW_HELP];
}

/* Lines of the single-column layout are numbered from 0; only those
 * between the help's top and the bottom of the screen are drawn. */
struct help_cursor {
	struct tui *t;
	int line;	 /* virtual line number */
	int first, last; /* screen rows available */
};

static int help_row(struct help_cursor *c)
{
	int y = c->first + c->line - help_of(c->t)->top;

	c->line++;
	return y >= c->first && y <= c->last ? y : -1;
}

/* Replaying, a replay key wins over the same key of the other table
 * (tui_key), except + - = in the hot-stack view, whose lines say so. */
static bool help_shadowed(const struct tui *t, const struct key_binding *map,
			  size_t i)
{
	if (!t->snap.replay.on || map == keymap_replay ||
	    (map[i].key > 0 && map[i].key < 128 && strchr("+=-", map[i].key)))
		return false;
	for (size_t k = 0; k < keymap_replay_count; k++)
		if (keymap_replay[k].key == map[i].key)
			return true;
	return false;
}

/* The names of the keys bound like map[i] (the bindings that follow it
 * with the same action) that work now, into keys; how many. */
static int help_keynames(const struct tui *t, const struct key_binding *map,
			 size_t count, size_t i, char *keys, size_t size)
{
	size_t used = 0;
	int n = 0;

	keys[0] = '\0';
	for (size_t j = i; j < count && map[j].action == map[i].action; j++) {
		if (!map[j].keyname || help_shadowed(t, map, j))
			continue;
		n++;
		used += (size_t)snprintf(keys + used, size - used, "%s%s",
					 used ? " " : "", map[j].keyname);
		if (used >= size)
			used = size - 1;
	}
	return n;
}

static void help_table(struct help_cursor *c, int width, const char *title,
		       const struct key_binding *map, size_t count)
{
	struct tui *t = c->t;
	int y = help_row(c);

	if (y >= 0)
		term_text(y, 1, A_BOLD, "%s", title);
	for (size_t i = 0; i < count; i++) {
		char keys[48];

		if (!map[i].help ||
		    !help_keynames(t, map, count, i, keys, sizeof(keys)))
			continue;
		y = help_row(c);
		if (y < 0)
			continue;
		term_text(y, 2, tui_attr(t, PAIR_METER), "%-21.21s", keys);
		term_text(y, 24, TUI_NORMAL, "%.*s", width > 0 ? width : 0,
			  map[i].help);
	}
}

/* Replaying: the replay keys first (they win), then the rest. */
static void help_keys(struct help_cursor *c, int width)
{
	if (c->t->snap.replay.on) {
		help_table(c, width, "Replay keys", keymap_replay,
			   keymap_replay_count);
		help_row(c);
	}
	help_table(c, width, "Keys", keymap, keymap_count);
}

static int help_count(const struct tui *t, const struct key_binding *map,
		      size_t count)
{
	char keys[48];
	int n = 0;

	for (size_t i = 0; i < count; i++)
		n += map[i].help != NULL &&
		     help_keynames(t, map, count, i, keys, sizeof(keys)) > 0;
	return n;
}

static void help_columns(struct help_cursor *c, int x)
{
	struct tui *t = c->t;
	int y = help_row(c);

	if (y >= 0)
		term_text(y, x - 1, A_BOLD, "Columns");
	for (int k = 0; k < COL_COUNT; k++) {
		y = help_row(c);
		if (y < 0)
			continue;
		term_text(y, x, tui_attr(t, PAIR_METER), "%-9s",
			  column_table[k].title);
		term_text(y, x + 10, TUI_NORMAL, "%s", column_table[k].help);
	}
}

static void help_view_draw(struct tui *t)
{
	struct help_view *h = help_of(t);
	struct help_cursor c = {.t = t, .first = 5, .last = t->lines - 2};
	int keys = help_count(t, keymap, keymap_count) + 1;
	int total = COL_COUNT + 2; /* titles, blank line, columns */

	if (t->snap.replay.on)
		keys += help_count(t, keymap_replay, keymap_replay_count) + 2;
	total += keys;
	if (t->cols >= 110) {
		/* Keys on the left, columns on the right; the keys scroll
		 * when they are taller than the screen. */
		int rows = c.last - c.first + 1;
		int tall = keys > COL_COUNT + 1 ? keys : COL_COUNT + 1;

		h->top = term_pager_top(h->top, tall, rows);
		help_keys(&c, 66 - 25);
		c.line = 0;
		help_columns(&c, 67);
		term_text(t->lines - 1, 0, TUI_NORMAL,
			  tall > rows ? "Esc or F1 goes back   Up/Down scroll"
				      : "Esc or F1 goes back");
		return;
	}
	/* One column: keys, then columns, scrolled with Up/Down/PgUp/PgDn. */
	h->top = term_pager_top(h->top, total, c.last - c.first + 1);
	help_keys(&c, t->cols - 25);
	help_row(&c);
	help_columns(&c, 2);
	term_text(t->lines - 1, 0, TUI_NORMAL,
		  "Esc or F1 goes back   Up/Down scroll (%d/%d)",
		  h->top + (c.last - c.first + 1) < c.line
			  ? h->top + (c.last - c.first + 1)
			  : c.line,
		  c.line);
}

static void *help_view_create(struct tui *t)
{
	(void)t;
	return calloc(1, sizeof(struct help_view));
}

/* Opened over a view: from the top, and back there when done. */
static void help_view_open(struct tui *t, enum tui_view from)
{
	t->under = from;
	help_of(t)->top = 0;
}

/* Movement scrolls the help (when it is taller than the screen); any
 * other key but quit and redraw goes back to the view under it. */
static int help_view_action(struct tui *t, enum tui_action a, int page)
{
	struct help_view *h = help_of(t);
	long step = term_motion_step(keymap_motion(a), page, 1000);

	if (step) {
		h->top = term_pager_scroll(h->top, step);
		return REACT_REDRAW;
	}
	if (a == ACT_QUIT || a == ACT_REDRAW)
		return -1;
	return (int)tui_view_back(t);
}

const struct tui_view_impl help_view_impl = {
	.name = "help",
	.opens = ACT_HELP,
	.overlay = true,
	.create = help_view_create,
	.destroy = free,
	.open = help_view_open,
	.draw = help_view_draw,
	.action = help_view_action,
};
