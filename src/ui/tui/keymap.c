/*
 * keymap: corotop's keys, following htop and tokio-console: arrows and
 * j/k move, Enter drills down, Esc goes back, F6 or < > pick the sort
 * column, I inverts it, / or F3 searches, \ or F4 filters, t groups by
 * thread, space or Z pauses, F1 or ? helps, q or F10 quits.
 *
 * Bindings of one action are consecutive; the first carries the help note,
 * and the help screen joins their key names on one line.
 */
#include "ui/tui/keymap.h"

#include <curses.h>

#define CTRL(c) ((c)&0x1f)

const struct key_binding keymap[] = {
	{KEY_UP, "Up", ACT_UP, "move up"},
	{'k', "k", ACT_UP, NULL},
	{KEY_DOWN, "Down", ACT_DOWN, "move down"},
	{'j', "j", ACT_DOWN, NULL},
	{KEY_PPAGE, "PgUp", ACT_PAGE_UP, "page up"},
	{KEY_NPAGE, "PgDn", ACT_PAGE_DOWN, "page down"},
	{KEY_HOME, "Home", ACT_HOME, "first row"},
	{'g', "g", ACT_HOME, NULL},
	{KEY_END, "End", ACT_END, "last row"},
	{'G', "G", ACT_END, NULL},
	{'\n', "Enter", ACT_ENTER, "details of the selected coroutine"},
	{'\r', NULL, ACT_ENTER, NULL},
	{KEY_ENTER, NULL, ACT_ENTER, NULL},
	{27, "Esc", ACT_BACK, "back to the table"},
	{KEY_BACKSPACE, "Backspace", ACT_BACK, NULL},
	{127, NULL, ACT_BACK, NULL},
	{KEY_LEFT, "Left", ACT_LEFT,
	 "table, detail view: scroll left (as htop); other views: back"},
	{KEY_RIGHT, "Right", ACT_RIGHT,
	 "table: scroll right, to every column and WHERE in full; detail "
	 "view: to its long lines' ends"},
	{'J', "J", ACT_CORO_NEXT, "detail view: the next coroutine"},
	{'K', "K", ACT_CORO_PREV, "detail view: the previous coroutine"},
	{KEY_F(6), "F6", ACT_SORT_NEXT, "sort by the next column"},
	{'>', ">", ACT_SORT_NEXT, NULL},
	{'.', NULL, ACT_SORT_NEXT, NULL},
	{'<', "<", ACT_SORT_PREV, "sort by the previous column"},
	{',', NULL, ACT_SORT_PREV, NULL},
	{'I', "I", ACT_INVERT, "invert the sort order"},
	{'/', "/", ACT_SEARCH, "search (incremental)"},
	{KEY_F(3), "F3", ACT_SEARCH, NULL},
	{'n', "n", ACT_SEARCH_NEXT, "next match"},
	{'N', "N", ACT_SEARCH_PREV, "previous match"},
	{'\\', "\\", ACT_FILTER, "filter: text, !regex, state=S tid=N"},
	{KEY_F(4), "F4", ACT_FILTER, NULL},
	{'t', "t", ACT_GROUP,
	 "group rows by thread (hot stacks: list or tree)"},
	{' ', "Space", ACT_PAUSE, "pause or resume the display"},
	{'Z', "Z", ACT_PAUSE, NULL},
	{'w', "w", ACT_WARNINGS, "warnings pane: lints and offenders"},
	{'H', "H", ACT_HOT, "hot stacks: where the CPU goes (CallTrace)"},
	{KEY_F(5), "F5", ACT_TREE,
	 "table: group by thread (as t); hot stacks: list or tree"},
	{'+', "+", ACT_EXPAND, "hot-stack tree: open the node (Enter flips)"},
	{'=', NULL, ACT_EXPAND, NULL},
	{'-', "-", ACT_COLLAPSE, "hot-stack tree: close the node"},
	{'E', "E", ACT_EXPAND_ALL,
	 "hot-stack tree: open every node; detail view: every parked frame"},
	{'C', "C", ACT_COLLAPSE_ALL,
	 "hot-stack tree: close every node; detail view: the first frames"},
	{'L', "L", ACT_HOT_BY,
	 "hot stacks: one row per function stack, line stack or address"},
	{'x', "x", ACT_EXPORT,
	 "write the hot stacks, folded (--folded FILE or corotop-PID.folded)"},
	{'P', "P", ACT_PPT, "ppt frames of the attached process (-p)"},
	{'o', "o", ACT_OUTPUT,
	 "the target's output: what it printed (End follows the end)"},
	{'\t', "Tab", ACT_TAB_NEXT, "ppt frames: next buffer"},
	{KEY_BTAB, "Shift-Tab", ACT_TAB_PREV, "ppt frames: previous buffer"},
	{KEY_F(2), "F2", ACT_SETUP, "setup: columns and thresholds"},
	{'S', "S", ACT_SETUP, NULL},
	{'z', "z", ACT_RESET_RATES,
	 "reset the rates (switches/s, events/s); hot stacks: zero counts"},
	{KEY_F(1), "F1", ACT_HELP, "this help"},
	{'?', "?", ACT_HELP, NULL},
	{'h', "h", ACT_HELP, NULL},
	{CTRL('l'), "Ctrl-L", ACT_REDRAW, "redraw the screen"},
	{'q', "q", ACT_QUIT, "quit"},
	{KEY_F(10), "F10", ACT_QUIT, NULL},
};

const size_t keymap_count = sizeof(keymap) / sizeof(keymap[0]);

/* Replay: space plays and pauses the recording (the display follows it),
 * [ and ] step through transitions (of the coroutine shown in the detail
 * view, else of any), + and - change the speed (except in the hot-stack
 * tree, where they keep their meaning), T asks for a time ("go to"; not
 * g, which stays "first row" as in every other view). */
const struct key_binding keymap_replay[] = {
	{' ', "Space", ACT_PLAY, "replay: play or pause"},
	{'Z', "Z", ACT_PLAY, NULL},
	{'[', "[", ACT_STEP_BACK,
	 "replay: previous transition (detail view: of that coroutine)"},
	{']', "]", ACT_STEP_FWD,
	 "replay: next transition (detail view: of that coroutine)"},
	{'+', "+", ACT_FASTER, "replay: twice as fast"},
	{'=', NULL, ACT_FASTER, NULL},
	{'-', "-", ACT_SLOWER, "replay: half as fast"},
	{'T', "T", ACT_GOTO,
	 "replay: go to a time (12.5s, 1:30, +5s, -2s, 50%, start, end)"},
	{'{', "{", ACT_REPLAY_START, "replay: to the start"},
	{'}', "}", ACT_REPLAY_END, "replay: to the end"},
};

const size_t keymap_replay_count =
	sizeof(keymap_replay) / sizeof(keymap_replay[0]);

const struct key_binding *keymap_find_replay(int key)
{
	for (size_t i = 0; i < keymap_replay_count; i++)
		if (keymap_replay[i].key == key)
			return &keymap_replay[i];
	return keymap_find(key);
}

const struct key_binding *keymap_find(int key)
{
	for (size_t i = 0; i < keymap_count; i++)
		if (keymap[i].key == key)
			return &keymap[i];
	return NULL;
}

enum term_motion keymap_motion(enum tui_action a)
{
	static const enum term_motion motion[] = {
		[ACT_UP] = TERM_UP,	      [ACT_DOWN] = TERM_DOWN,
		[ACT_PAGE_UP] = TERM_PAGE_UP, [ACT_PAGE_DOWN] = TERM_PAGE_DOWN,
		[ACT_HOME] = TERM_HOME,	      [ACT_END] = TERM_END,
	};

	return (size_t)a < sizeof(motion) / sizeof(motion[0])
		       ? motion[a]
		       : TERM_MOTION_NONE;
}
