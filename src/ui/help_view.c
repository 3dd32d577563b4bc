/*
 * help_view: the keys and the columns, drawn from the binding table and
 * the column table themselves, so help can not drift from behaviour.
 */
#include <curses.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "keymap.h"
#include "tui.h"

void help_view_draw(struct tui *t)
{
	int y = 5, col2 = 66, width;
	bool two = t->cols >= 110;

	/* Two columns (keys | columns) when wide, else one after the other. */
	width = (two ? col2 : t->cols) - 25;
	attron(A_BOLD);
	tui_text(t, y++, 1, A_NORMAL, "Keys");
	attroff(A_BOLD);
	for (size_t i = 0; i < keymap_count && y < t->lines - 1; i++) {
		char keys[48] = "";
		size_t used = 0;

		if (!keymap[i].help)
			continue;
		for (size_t j = i;
		     j < keymap_count && keymap[j].action == keymap[i].action;
		     j++) {
			if (!keymap[j].keyname)
				continue;
			used += (size_t)snprintf(
				keys + used, sizeof(keys) - used, "%s%s",
				used ? " " : "", keymap[j].keyname);
			if (used >= sizeof(keys))
				used = sizeof(keys) - 1;
		}
		attron(tui_attr(t, PAIR_METER));
		tui_text(t, y, 2, A_NORMAL, "%-21.21s", keys);
		attroff(tui_attr(t, PAIR_METER));
		tui_text(t, y++, 24, A_NORMAL, "%.*s", width > 0 ? width : 0,
			 keymap[i].help);
	}
	if (two) {
		y = 5;
	} else {
		y++;
		col2 = 0;
	}
	attron(A_BOLD);
	tui_text(t, y++, col2 + 1, A_NORMAL, "Columns");
	attroff(A_BOLD);
	for (int c = 0; c < COL_COUNT && y < t->lines - 1; c++) {
		int x = col2 + 2;

		attron(tui_attr(t, PAIR_METER));
		tui_text(t, y, x, A_NORMAL, "%-9s", column_table[c].title);
		attroff(tui_attr(t, PAIR_METER));
		tui_text(t, y++, x + 10, A_NORMAL, "%.*s",
			 t->cols - x - 11 > 0 ? t->cols - x - 11 : 0,
			 column_table[c].help);
	}
	tui_text(t, t->lines - 1, 0, A_NORMAL, "Esc or F1 goes back");
}
