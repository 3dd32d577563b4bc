/*
 * keymap: the one table that maps keys to actions.  Dispatch and the help
 * screen both read it, so they can never disagree.  See keymap.c.
 */
#ifndef COROTOP_KEYMAP_H
#define COROTOP_KEYMAP_H

#include <stddef.h>

#include "ui/term/list.h"

enum tui_action {
	ACT_NONE = 0,
	ACT_UP,
	ACT_DOWN,
	ACT_PAGE_UP,
	ACT_PAGE_DOWN,
	ACT_HOME,
	ACT_END,
	ACT_ENTER,
	ACT_BACK,
	ACT_SORT_NEXT,
	ACT_SORT_PREV,
	ACT_INVERT,
	ACT_SEARCH,
	ACT_SEARCH_NEXT,
	ACT_SEARCH_PREV,
	ACT_FILTER,
	ACT_GROUP,
	ACT_PAUSE,
	ACT_WARNINGS,
	ACT_SETUP,
	ACT_RESET_RATES,
	ACT_HELP,
	ACT_REDRAW,
	ACT_QUIT,
	ACT_HOT,	  /* the hot-stacks view */
	ACT_TREE,	  /* hot stacks: list <-> tree */
	ACT_EXPAND,	  /* hot stacks: open the selected node */
	ACT_COLLAPSE,	  /* hot stacks: close the selected node */
	ACT_EXPAND_ALL,	  /* hot stacks: open every node */
	ACT_COLLAPSE_ALL, /* hot stacks: close every node */
	ACT_EXPORT,	  /* hot stacks: write the folded file now */
	ACT_PPT,	  /* the ppt frames view */
	ACT_TAB_NEXT,	  /* ppt view: next buffer */
	ACT_TAB_PREV,	  /* ppt view: previous buffer */
	ACT_OUTPUT,	  /* the target's output */
	ACT_LEFT,	  /* table: scroll left; elsewhere: back */
	ACT_RIGHT,	  /* table: scroll right */
	ACT_CORO_NEXT,	  /* detail view: the next coroutine of the table */
	ACT_CORO_PREV,	  /* detail view: the previous one */
	ACT_HOT_BY,	  /* hot stacks: rows by function, line or address */
	/* Replay (--replay): the replay keymap below, consulted first. */
	ACT_PLAY,	  /* play or pause the recording */
	ACT_STEP_BACK,	  /* to the previous transition */
	ACT_STEP_FWD,	  /* to the next transition */
	ACT_FASTER,	  /* speed x2 */
	ACT_SLOWER,	  /* speed /2 */
	ACT_GOTO,	  /* type a time to jump to */
	ACT_REPLAY_START, /* to the start */
	ACT_REPLAY_END,	  /* to the end */
};

struct key_binding {
	int key;	     /* curses key code or character */
	const char *keyname; /* as the help screen shows it */
	enum tui_action action;
	const char *help; /* first binding of an action carries the note */
};

extern const struct key_binding keymap[];
extern const size_t keymap_count;

/* Keys that mean something else while replaying (--replay), looked up
 * before the main table. */
extern const struct key_binding keymap_replay[];
extern const size_t keymap_replay_count;

/* The binding for `key`, or NULL; replay: the replay bindings first. */
const struct key_binding *keymap_find(int key);
const struct key_binding *keymap_find_replay(int key);

/* The list motion of a cursor action (Up, PgDn, Home...), else
 * TERM_MOTION_NONE. */
enum term_motion keymap_motion(enum tui_action a);

#endif
