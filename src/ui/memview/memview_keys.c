/*
 * cray_keys: the memory view's keys, as corotop's table has them where
 * the meaning is the same (arrows and j/k move, F6 or < > sort, I inverts,
 * / or F3 searches, Space or Z pauses, F1 or ? helps, q or F10 quits), plus
 * the tabs (Tab, Shift-Tab, 1-4) and opening a type into its members
 * (Enter flips, Right or + opens, Left or - closes).
 *
 * Bindings of one action are consecutive; the first carries the help note,
 * and the help screen joins their key names on one line.  The key bar's
 * entries are a table here too, each with the tabs it is shown on.
 */
#include "ui/memview/memview_keys.h"

#include <curses.h>

#include "ui/memview/memview_tabs.h"

const struct cray_key cray_keys[] = {
	{KEY_UP, "Up", CRAY_ACT_UP, 0, "move up"},
	{'k', "k", CRAY_ACT_UP, 0, NULL},
	{KEY_DOWN, "Down", CRAY_ACT_DOWN, 0, "move down"},
	{'j', "j", CRAY_ACT_DOWN, 0, NULL},
	{KEY_PPAGE, "PgUp", CRAY_ACT_PAGE_UP, 0, "page up"},
	{KEY_NPAGE, "PgDn", CRAY_ACT_PAGE_DOWN, 0, "page down"},
	{KEY_HOME, "Home", CRAY_ACT_HOME, 0, "first row"},
	{'g', "g", CRAY_ACT_HOME, 0, NULL},
	{KEY_END, "End", CRAY_ACT_END, 0, "last row"},
	{'G', "G", CRAY_ACT_END, 0, NULL},
	{'\t', "Tab", CRAY_ACT_TAB_NEXT, 0, "next tab"},
	{KEY_BTAB, "Shift-Tab", CRAY_ACT_TAB_PREV, 0, "previous tab"},
	{'1', "1", CRAY_ACT_TAB, 0,
	 "tab: 1 false sharing, 2 hot lines, 3 types, 4 threads"},
	{'2', "2", CRAY_ACT_TAB, 1, NULL},
	{'3', "3", CRAY_ACT_TAB, 2, NULL},
	{'4', "4", CRAY_ACT_TAB, 3, NULL},
	{'\n', "Enter", CRAY_ACT_TOGGLE, 0,
	 "types: open or close the type's members"},
	{'\r', NULL, CRAY_ACT_TOGGLE, 0, NULL},
	{KEY_ENTER, NULL, CRAY_ACT_TOGGLE, 0, NULL},
	{KEY_RIGHT, "Right", CRAY_ACT_EXPAND, 0,
	 "types: open (per-offset member rows)"},
	{'+', "+", CRAY_ACT_EXPAND, 0, NULL},
	{KEY_LEFT, "Left", CRAY_ACT_COLLAPSE, 0,
	 "types: close (from a member: its type)"},
	{'-', "-", CRAY_ACT_COLLAPSE, 0, NULL},
	{KEY_F(6), "F6", CRAY_ACT_SORT_NEXT, 0, "sort by the next column"},
	{'>', ">", CRAY_ACT_SORT_NEXT, 0, NULL},
	{'.', NULL, CRAY_ACT_SORT_NEXT, 0, NULL},
	{'s', "s", CRAY_ACT_SORT_NEXT, 0, NULL},
	{'<', "<", CRAY_ACT_SORT_PREV, 0, "sort by the previous column"},
	{',', NULL, CRAY_ACT_SORT_PREV, 0, NULL},
	{'I', "I", CRAY_ACT_INVERT, 0, "invert the sort order"},
	{'/', "/", CRAY_ACT_SEARCH, 0, "search the tab's rows (incremental)"},
	{KEY_F(3), "F3", CRAY_ACT_SEARCH, 0, NULL},
	{'n', "n", CRAY_ACT_SEARCH_NEXT, 0, "next match"},
	{'N', "N", CRAY_ACT_SEARCH_PREV, 0, "previous match"},
	{27, "Esc", CRAY_ACT_BACK, 0, "leave help; clear the search"},
	{' ', "Space", CRAY_ACT_PAUSE, 0,
	 "pause or resume the display (reading goes on)"},
	{'Z', "Z", CRAY_ACT_PAUSE, 0, NULL},
	{KEY_F(1), "F1", CRAY_ACT_HELP, 0, "this help"},
	{'?', "?", CRAY_ACT_HELP, 0, NULL},
	{'h', "h", CRAY_ACT_HELP, 0, NULL},
	{CRAY_CTRL('l'), "Ctrl-L", CRAY_ACT_REDRAW, 0, "redraw the screen"},
	{'q', "q", CRAY_ACT_QUIT, 0, "quit"},
	{KEY_F(10), "F10", CRAY_ACT_QUIT, 0, NULL},
};

const size_t cray_keys_count = sizeof(cray_keys) / sizeof(cray_keys[0]);

#define CRAY_BAR_ALL ((1u << CRAY_TAB_COUNT) - 1)
#define CRAY_BAR_TYPES (1u << CRAY_TAB_TYPES)

/* Enter acts on the Types tab only, so only that tab offers it. */
const struct cray_bar_key cray_keys_bar[] = {
	{"F1", "Help", CRAY_BAR_ALL},	   {"Tab", "Next", CRAY_BAR_ALL},
	{"Enter", "Open", CRAY_BAR_TYPES}, {"F3", "Search", CRAY_BAR_ALL},
	{"F6", "Sort", CRAY_BAR_ALL},	   {"I", "Invert", CRAY_BAR_ALL},
	{"Spc", "Pause", CRAY_BAR_ALL},	   {"F10", "Quit", CRAY_BAR_ALL},
};

const size_t cray_keys_bar_count =
	sizeof(cray_keys_bar) / sizeof(cray_keys_bar[0]);

const struct cray_key *cray_keys_find(int key)
{
	for (size_t i = 0; i < cray_keys_count; i++)
		if (cray_keys[i].key == key)
			return &cray_keys[i];
	return NULL;
}

enum term_motion cray_keys_motion(enum cray_action a)
{
	static const enum term_motion motion[] = {
		[CRAY_ACT_UP] = TERM_UP,
		[CRAY_ACT_DOWN] = TERM_DOWN,
		[CRAY_ACT_PAGE_UP] = TERM_PAGE_UP,
		[CRAY_ACT_PAGE_DOWN] = TERM_PAGE_DOWN,
		[CRAY_ACT_HOME] = TERM_HOME,
		[CRAY_ACT_END] = TERM_END,
	};

	return (size_t)a < sizeof(motion) / sizeof(motion[0])
		       ? motion[a]
		       : TERM_MOTION_NONE;
}
