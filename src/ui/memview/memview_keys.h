/*
 * memview_keys: the memory view's key bindings, one const table that both
 * dispatches keys and draws the help, so the two can never disagree.
 * See memview_keys.c.
 */
#ifndef COROTOP_MEMVIEW_KEYS_H
#define COROTOP_MEMVIEW_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "ui/term/list.h"

enum memview_action {
	MEMVIEW_ACT_NONE = 0,
	MEMVIEW_ACT_UP,
	MEMVIEW_ACT_DOWN,
	MEMVIEW_ACT_PAGE_UP,
	MEMVIEW_ACT_PAGE_DOWN,
	MEMVIEW_ACT_HOME,
	MEMVIEW_ACT_END,
	MEMVIEW_ACT_TAB_NEXT,
	MEMVIEW_ACT_TAB_PREV,
	MEMVIEW_ACT_TAB, /* arg: the tab */
	MEMVIEW_ACT_TOGGLE,
	MEMVIEW_ACT_EXPAND,
	MEMVIEW_ACT_COLLAPSE,
	MEMVIEW_ACT_SORT_NEXT,
	MEMVIEW_ACT_SORT_PREV,
	MEMVIEW_ACT_INVERT,
	MEMVIEW_ACT_SEARCH,
	MEMVIEW_ACT_SEARCH_NEXT,
	MEMVIEW_ACT_SEARCH_PREV,
	MEMVIEW_ACT_BACK,
	MEMVIEW_ACT_PAUSE,
	MEMVIEW_ACT_HELP,
	MEMVIEW_ACT_REDRAW,
	MEMVIEW_ACT_QUIT,
};

/* The key code of Ctrl and a letter. */
#define MEMVIEW_CTRL(c) ((c)&0x1f)

struct memview_key {
	int key;	     /* curses key code or character */
	const char *keyname; /* as help shows it; NULL: not shown */
	enum memview_action action;
	int arg;
	const char *help; /* the first binding of an action carries it */
};

extern const struct memview_key memview_keys[];
extern const size_t memview_keys_count;

/* The binding of key, or NULL. */
const struct memview_key *memview_keys_find(int key);

/* The list motion of a cursor action (Up, PgDn, Home...), else
 * TERM_MOTION_NONE. */
enum term_motion memview_keys_motion(enum memview_action a);

/* The key bar: a key name and what it does, shown on the tabs of its
 * mask (bit k: tab k, enum memview_tab). */
struct memview_bar_key {
	const char *key, *label;
	unsigned tabs;
};

extern const struct memview_bar_key memview_keys_bar[];
extern const size_t memview_keys_bar_count;

/* Whether a bar entry is shown on tab. */
static inline bool memview_keys_bar_on(const struct memview_bar_key *b, int tab)
{
	return b->tabs & (1u << tab);
}

#endif
