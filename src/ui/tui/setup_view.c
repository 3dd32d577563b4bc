/*
 * setup_view: F2 or S.  Switch warnings on and off, change their
 * thresholds, and show or hide columns.  Every change applies at once (the
 * engine gets the new lint settings) and is written to the config file, one
 * key at a time, so hand edits of other lines survive.
 *
 *   Up/Down (j/k) pick a line   Space/Enter toggle
 *   + / - (Right/Left) double / halve a threshold   Esc, q or F2 leave
 */
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/settings/config.h"
#include "ui/tui/tui.h"

#define SETUP_ITEMS (LINT_COUNT + COL_COUNT)

/* The setup screen's state: the line picked, lints first. */
struct setup_view {
	int item;
};

static struct setup_view *setup_of(const struct tui *t)
{
	return t->view_state[VIEW_SETUP];
}

static void setup_save(struct tui *t, const char *key, const char *value)
{
	char err[160];

	if (!t->opt.config_path)
		return;
	if (!config_set(t->opt.config_path, key, value, err, sizeof(err)))
		snprintf(t->message, sizeof(t->message), "not saved: %.140s",
			 err);
	else
		snprintf(t->message, sizeof(t->message), "saved %s = %s", key,
			 value);
}

static void setup_save_columns(struct tui *t)
{
	char list[256] = "";
	size_t used = 0;

	for (int c = 0; c < COL_COUNT; c++) {
		if (t->hidden[c])
			continue;
		used += (size_t)snprintf(list + used, sizeof(list) - used,
					 "%s%s", used ? "," : "",
					 column_table[c].name);
		if (used >= sizeof(list))
			used = sizeof(list) - 1;
	}
	setup_save(t, "columns", list);
}

static void setup_lint_changed(struct tui *t, int k, bool threshold)
{
	char key[64], value[32];

	engine_set_lints(t->engine, &t->lints);
	if (threshold) {
		snprintf(key, sizeof(key), "lint.%s.threshold", lint_name(k));
		snprintf(value, sizeof(value), "%g",
			 lint_threshold(&t->lints, k));
	} else {
		snprintf(key, sizeof(key), "lint.%s", lint_name(k));
		snprintf(value, sizeof(value), "%s",
			 t->lints.enabled[k] ? "on" : "off");
	}
	setup_save(t, key, value);
}

/* Setup is modal: it takes every key (see the top of the file). */
static unsigned setup_view_key(struct tui *t, int key)
{
	struct setup_view *sv = setup_of(t);
	int i = sv->item;

	switch (key) {
	case KEY_UP:
	case 'k':
		sv->item = i > 0 ? i - 1 : 0;
		return REACT_REDRAW;
	case KEY_DOWN:
	case 'j':
		sv->item = i + 1 < SETUP_ITEMS ? i + 1 : i;
		return REACT_REDRAW;
	case ' ':
	case '\n':
	case '\r':
	case KEY_ENTER:
		if (i < LINT_COUNT) {
			t->lints.enabled[i] = !t->lints.enabled[i];
			setup_lint_changed(t, i, false);
		} else if (i - LINT_COUNT != COL_ID) {
			t->hidden[i - LINT_COUNT] = !t->hidden[i - LINT_COUNT];
			setup_save_columns(t);
		}
		return REACT_REFRESH | REACT_REBUILD | REACT_REDRAW;
	case '+':
	case '-':
	case KEY_RIGHT:
	case KEY_LEFT:
		if (i < LINT_COUNT) {
			double v = lint_threshold(&t->lints, i);
			bool up = key == '+' || key == KEY_RIGHT;

			if (!lint_set_threshold(&t->lints, i,
						up ? v * 2 : v / 2))
				return REACT_NONE;
			setup_lint_changed(t, i, true);
			return REACT_REFRESH | REACT_REDRAW;
		}
		return REACT_NONE;
	case 27:
	case 'q':
	case 'S':
	case KEY_F(2):
		return tui_view_show(t, VIEW_TABLE);
	default:
		return REACT_NONE;
	}
}

static void setup_view_draw(struct tui *t)
{
	int item = setup_of(t)->item;
	int y = 5;

	term_text(y++, 1, A_BOLD, "Warnings");
	for (int k = 0; k < LINT_COUNT && y < t->lines - 2; k++) {
		int attr = k == item ? tui_attr(t, PAIR_SELECTED) : TUI_NORMAL;

		term_text(y++, 2, attr, " [%c] %-13s > %g%-3s %s ",
			  t->lints.enabled[k] ? 'x' : ' ', lint_name(k),
			  lint_threshold(&t->lints, k), lint_unit(k),
			  lint_tag(k));
	}
	y++;
	term_text(y++, 1, A_BOLD, "Columns");
	for (int c = 0; c < COL_COUNT && y < t->lines - 2; c++) {
		int attr = LINT_COUNT + c == item ? tui_attr(t, PAIR_SELECTED)
						  : TUI_NORMAL;

		term_text(y++, 2, attr, " [%c] %-9s %s ",
			  t->hidden[c] ? ' ' : 'x', column_table[c].title,
			  c == COL_ID ? "(always shown)" : "");
	}
	term_text(t->lines - 1, 0, A_NORMAL,
		  "Up/Down pick  Space toggle  +/- threshold  Esc back%s",
		  t->opt.config_path ? "  (changes are saved)" : "");
}

static void *setup_view_create(struct tui *t)
{
	(void)t;
	return calloc(1, sizeof(struct setup_view));
}

const struct tui_view_impl setup_view_impl = {
	.name = "setup",
	.opens = ACT_SETUP,
	.create = setup_view_create,
	.destroy = free,
	.draw = setup_view_draw,
	.key = setup_view_key,
};
