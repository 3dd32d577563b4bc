/*
 * memview_keys: the memory view's keys, as corotop's table has them where
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

const struct memview_key memview_keys[] = {
	{KEY_UP, "Up", MEMVIEW_ACT_UP, 0, "move up"},
	{'k', "k", MEMVIEW_ACT_UP, 0, NULL},
	{KEY_DOWN, "Down", MEMVIEW_ACT_DOWN, 0, "move down"},
	{'j', "j", MEMVIEW_ACT_DOWN, 0, NULL},
	{KEY_PPAGE, "PgUp", MEMVIEW_ACT_PAGE_UP, 0, "page up"},
	{KEY_NPAGE, "PgDn", MEMVIEW_ACT_PAGE_DOWN, 0, "page down"},
	{KEY_HOME, "Home", MEMVIEW_ACT_HOME, 0, "first row"},
	{'g', "g", MEMVIEW_ACT_HOME, 0, NULL},
	{KEY_END, "End", MEMVIEW_ACT_END, 0, "last row"},
	{'G', "G", MEMVIEW_ACT_END, 0, NULL},
	{'\t', "Tab", MEMVIEW_ACT_TAB_NEXT, 0, "next tab"},
	{KEY_BTAB, "Shift-Tab", MEMVIEW_ACT_TAB_PREV, 0, "previous tab"},
	{'1', "1", MEMVIEW_ACT_TAB, 0,
	 "tab: 1 false sharing, 2 hot lines, 3 types, 4 threads"},
	{'2', "2", MEMVIEW_ACT_TAB, 1, NULL},
	{'3', "3", MEMVIEW_ACT_TAB, 2, NULL},
	{'4', "4", MEMVIEW_ACT_TAB, 3, NULL},
	{'\n', "Enter", MEMVIEW_ACT_TOGGLE, 0,
	 "types: open or close the type's members"},
	{'\r', NULL, MEMVIEW_ACT_TOGGLE, 0, NULL},
	{KEY_ENTER, NULL, MEMVIEW_ACT_TOGGLE, 0, NULL},
	{KEY_RIGHT, "Right", MEMVIEW_ACT_EXPAND, 0,
	 "types: open (per-offset member rows)"},
	{'+', "+", MEMVIEW_ACT_EXPAND, 0, NULL},
	{KEY_LEFT, "Left", MEMVIEW_ACT_COLLAPSE, 0,
	 "types: close (from a member: its type)"},
	{'-', "-", MEMVIEW_ACT_COLLAPSE, 0, NULL},
	{KEY_F(6), "F6", MEMVIEW_ACT_SORT_NEXT, 0, "sort by the next column"},
	{'>', ">", MEMVIEW_ACT_SORT_NEXT, 0, NULL},
	{'.', NULL, MEMVIEW_ACT_SORT_NEXT, 0, NULL},
	{'s', "s", MEMVIEW_ACT_SORT_NEXT, 0, NULL},
	{'<', "<", MEMVIEW_ACT_SORT_PREV, 0, "sort by the previous column"},
	{',', NULL, MEMVIEW_ACT_SORT_PREV, 0, NULL},
	{'I', "I", MEMVIEW_ACT_INVERT, 0, "invert the sort order"},
	{'/', "/", MEMVIEW_ACT_SEARCH, 0,
	 "search the tab's rows (incremental)"},
	{KEY_F(3), "F3", MEMVIEW_ACT_SEARCH, 0, NULL},
	{'n', "n", MEMVIEW_ACT_SEARCH_NEXT, 0, "next match"},
	{'N', "N", MEMVIEW_ACT_SEARCH_PREV, 0, "previous match"},
	{27, "Esc", MEMVIEW_ACT_BACK, 0, "leave help; clear the search"},
	{' ', "Space", MEMVIEW_ACT_PAUSE, 0,
	 "pause or resume the display (reading goes on)"},
	{'Z', "Z", MEMVIEW_ACT_PAUSE, 0, NULL},
	{KEY_F(1), "F1", MEMVIEW_ACT_HELP, 0, "this help"},
	{'?', "?", MEMVIEW_ACT_HELP, 0, NULL},
	{'h', "h", MEMVIEW_ACT_HELP, 0, NULL},
	{MEMVIEW_CTRL('l'), "Ctrl-L", MEMVIEW_ACT_REDRAW, 0,
	 "redraw the screen"},
	{'q', "q", MEMVIEW_ACT_QUIT, 0, "quit"},
	{KEY_F(10), "F10", MEMVIEW_ACT_QUIT, 0, NULL},
};

const size_t memview_keys_count =
	sizeof(memview_keys) / sizeof(memview_keys[0]);

#define MEMVIEW_BAR_ALL ((1u << MEMVIEW_TAB_COUNT) - 1)
#define MEMVIEW_BAR_TYPES (1u << MEMVIEW_TAB_TYPES)

/* Enter acts on the Types tab only, so only that tab offers it. */
const struct memview_bar_key memview_keys_bar[] = {
	{"F1", "Help", MEMVIEW_BAR_ALL},      {"Tab", "Next", MEMVIEW_BAR_ALL},
	{"Enter", "Open", MEMVIEW_BAR_TYPES}, {"F3", "Search", MEMVIEW_BAR_ALL},
	{"F6", "Sort", MEMVIEW_BAR_ALL},      {"I", "Invert", MEMVIEW_BAR_ALL},
	{"Spc", "Pause", MEMVIEW_BAR_ALL},    {"F10", "Quit", MEMVIEW_BAR_ALL},
};

const size_t memview_keys_bar_count =
	sizeof(memview_keys_bar) / sizeof(memview_keys_bar[0]);

const struct memview_key *memview_keys_find(int key)
{
	for (size_t i = 0; i < memview_keys_count; i++)
		if (memview_keys[i].key == key)
			return &memview_keys[i];
	return NULL;
}

enum term_motion memview_keys_motion(enum memview_action a)
{
	static const enum term_motion motion[] = {
		[MEMVIEW_ACT_UP] = TERM_UP,
		[MEMVIEW_ACT_DOWN] = TERM_DOWN,
		[MEMVIEW_ACT_PAGE_UP] = TERM_PAGE_UP,
		[MEMVIEW_ACT_PAGE_DOWN] = TERM_PAGE_DOWN,
		[MEMVIEW_ACT_HOME] = TERM_HOME,
		[MEMVIEW_ACT_END] = TERM_END,
	};

	return (size_t)a < sizeof(motion) / sizeof(motion[0])
		       ? motion[a]
		       : TERM_MOTION_NONE;
}
