/*
 * help_view: the keys and the columns, drawn from the binding table and
 * the column table themselves, so help can not drift from behaviour.
 * Replaying, the replay keys come first, and the other table leaves out
 * the keys they take (g is "go to", not "first row", then).  A glossary
 * of the header's words and of each warning (with its threshold now)
 * follows.  Long notes wrap at word boundaries; nothing is cut.
 */
#include <curses.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/model/lint.h"
#include "ui/tui/keymap.h"
#include "ui/tui/tui.h"

/* The header's words, for the glossary (each warning follows, from the
 * lint table). */
static const struct {
	const char *word, *meaning;
} help_glossary[] = {
	{"harvesting", "the engine is reading the region: events arrived in "
		       "the last rate window"},
	{"engine asleep", "nothing to read: the engine sleeps on a futex or "
			  "its socket until the probe wakes it"},
	{"lost", "transitions overwritten in a station's ring before the "
		 "engine read them (only the ones really skipped)"},
	{"untraced", "transitions of coroutines that had no station (all "
		     "stations were taken)"},
	{"stations", "stations in use / stations in the region: one per "
		     "live coroutine"},
	{"recycled", "stations of dead coroutines handed back for reuse"},
	{"output +N", "lines the target printed that the output view (o) has "
		      "not shown"},
	{"%SELF (hot stacks)",
	 "share of the window's samples (older ones count less: halved every "
	 "half-life) whose stack is this row's: the same functions (lines, "
	 "addresses: L) from the leaf to the root"},
	{"%TOTAL (hot stacks)",
	 "share of the window's samples with the row's leaf function (line, "
	 "address) anywhere on the stack, each sample once even when it "
	 "recurses: the leaf's inclusive time"},
	{"SAMPLES (hot stacks)",
	 "samples of the row since start or z, not only of the window"},
};

#define HELP_GLOSSARY (sizeof(help_glossary) / sizeof(help_glossary[0]))
/* Its entries, and one for each warning. */
#define HELP_GLOSS_ALL ((int)HELP_GLOSSARY + LINT_COUNT)

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

/* Lines text takes wrapped at width. */
static int help_lines(const char *text, int width)
{
	int n = 0;

	do {
		text += term_wrap(text, width);
		while (*text == ' ')
			text++;
		n++;
	} while (*text);
	return n;
}

/* Text wrapped at width from column x, a line each (help_row); the first
 * line's row, or -1 when it is off the screen. */
static int help_text(struct help_cursor *c, int x, int width, int attr,
		     const char *text)
{
	int first = -2;

	do {
		int len = term_wrap(text, width), y = help_row(c);

		if (first == -2)
			first = y;
		if (y >= 0)
			term_text(y, x, attr, "%.*s", len, text);
		text += len;
		while (*text == ' ')
			text++;
	} while (*text);
	return first;
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
		y = help_text(c, 24, width, TUI_NORMAL, map[i].help);
		if (y >= 0)
			term_text(y, 2, tui_attr(t, PAIR_METER), "%-21.21s",
				  keys);
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

/* Glossary entry g as one text ("word: meaning"): the header's words,
 * then each warning with its threshold now. */
static void help_gloss(const struct tui *t, int g, char *text, size_t n)
{
	int k = g - (int)HELP_GLOSSARY;

	if (k < 0)
		snprintf(text, n, "%s: %s", help_glossary[g].word,
			 help_glossary[g].meaning);
	else
		snprintf(text, n, "%s: %s (%s, threshold %g%s)", lint_tag(k),
			 lint_help(k), lint_name(k),
			 lint_threshold(&t->lints, k), lint_unit(k));
}

/* The lines a key table takes, its notes wrapped at width. */
static int help_count(const struct tui *t, const struct key_binding *map,
		      size_t count, int width)
{
	char keys[48];
	int n = 0;

	for (size_t i = 0; i < count; i++)
		if (map[i].help &&
		    help_keynames(t, map, count, i, keys, sizeof(keys)) > 0)
			n += help_lines(map[i].help, width);
	return n;
}

/* Lines of the columns and the glossary, text wrapped at width, titles
 * and the blank line between them included. */
static int help_count_columns(const struct tui *t, int width)
{
	char text[256];
	int n = 3;

	for (int k = 0; k < COL_COUNT; k++)
		n += help_lines(column_table[k].help, width);
	for (int g = 0; g < HELP_GLOSS_ALL; g++) {
		help_gloss(t, g, text, sizeof(text));
		n += help_lines(text, width + 10);
	}
	return n;
}

/* The columns, then the glossary, from column x, text wrapped at
 * width. */
static void help_columns(struct help_cursor *c, int x, int width)
{
	struct tui *t = c->t;
	char text[256];
	int y = help_row(c), meter = tui_attr(t, PAIR_METER);

	if (y >= 0)
		term_text(y, x - 1, A_BOLD, "Columns");
	for (int k = 0; k < COL_COUNT; k++) {
		y = help_text(c, x + 10, width, TUI_NORMAL,
			      column_table[k].help);
		if (y >= 0)
			term_text(y, x, meter, "%-9s", column_table[k].title);
	}
	help_row(c);
	y = help_row(c);
	if (y >= 0)
		term_text(y, x - 1, A_BOLD, "Header words and warnings");
	for (int g = 0; g < HELP_GLOSS_ALL; g++) {
		help_gloss(t, g, text, sizeof(text));
		help_text(c, x, width + 10, TUI_NORMAL, text);
	}
}

static void help_view_draw(struct tui *t)
{
	struct help_view *h = help_of(t);
	struct help_cursor c = {.t = t, .first = 5, .last = t->lines - 2};
	bool wide = t->cols >= 110;
	/* Key notes from column 24; column notes 10 after their x. */
	int kw = (wide ? 66 : t->cols) - 25;
	int cw = wide ? t->cols - 67 - 10 - 1 : t->cols - 12 - 1;
	int keys = help_count(t, keymap, keymap_count, kw) + 1;
	int cols = help_count_columns(t, cw);
	int total;

	if (t->snap.replay.on)
		keys += help_count(t, keymap_replay, keymap_replay_count, kw) +
			2;
	total = keys + 1 + cols;
	if (wide) {
		/* Keys on the left, columns on the right; the taller one
		 * scrolls both when it is taller than the screen. */
		int rows = c.last - c.first + 1;
		int tall = keys > cols ? keys : cols;

		h->top = term_pager_top(h->top, tall, rows);
		help_keys(&c, kw);
		c.line = 0;
		help_columns(&c, 67, cw);
		term_text(t->lines - 1, 0, TUI_NORMAL,
			  tall > rows ? "Esc or F1 goes back   Up/Down scroll"
				      : "Esc or F1 goes back");
		return;
	}
	/* One column: keys, then columns, scrolled with Up/Down/PgUp/PgDn. */
	h->top = term_pager_top(h->top, total, c.last - c.first + 1);
	help_keys(&c, kw);
	help_row(&c);
	help_columns(&c, 2, cw);
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
