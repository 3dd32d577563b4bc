/*
 * cray_keys: the memory view's key bindings, one const table that both
 * dispatches keys and draws the help, so the two can never disagree.
 * See memview_keys.c.
 */
#ifndef COROTOP_CRAY_KEYS_H
#define COROTOP_CRAY_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "ui/term/list.h"

enum cray_action {
	CRAY_ACT_NONE = 0,
	CRAY_ACT_UP,
	CRAY_ACT_DOWN,
	CRAY_ACT_PAGE_UP,
	CRAY_ACT_PAGE_DOWN,
	CRAY_ACT_HOME,
	CRAY_ACT_END,
	CRAY_ACT_TAB_NEXT,
	CRAY_ACT_TAB_PREV,
	CRAY_ACT_TAB, /* arg: the tab */
	CRAY_ACT_TOGGLE,
	CRAY_ACT_EXPAND,
	CRAY_ACT_COLLAPSE,
	CRAY_ACT_SORT_NEXT,
	CRAY_ACT_SORT_PREV,
	CRAY_ACT_INVERT,
	CRAY_ACT_SEARCH,
	CRAY_ACT_SEARCH_NEXT,
	CRAY_ACT_SEARCH_PREV,
	CRAY_ACT_BACK,
	CRAY_ACT_PAUSE,
	CRAY_ACT_HELP,
	CRAY_ACT_REDRAW,
	CRAY_ACT_QUIT,
};

/* The key code of Ctrl and a letter. */
#define CRAY_CTRL(c) ((c)&0x1f)

struct cray_key {
	int key;	     /* curses key code or character */
	const char *keyname; /* as help shows it; NULL: not shown */
	enum cray_action action;
	int arg;
	const char *help; /* the first binding of an action carries it */
};

extern const struct cray_key cray_keys[];
extern const size_t cray_keys_count;

/* The binding of key, or NULL. */
const struct cray_key *cray_keys_find(int key);

/* The list motion of a cursor action (Up, PgDn, Home...), else
 * TERM_MOTION_NONE. */
enum term_motion cray_keys_motion(enum cray_action a);

/* The key bar: a key name and what it does, shown on the tabs of its
 * mask (bit k: tab k, enum cray_tab). */
struct cray_bar_key {
	const char *key, *label;
	unsigned tabs;
};

extern const struct cray_bar_key cray_keys_bar[];
extern const size_t cray_keys_bar_count;

/* Whether a bar entry is shown on tab. */
static inline bool cray_keys_bar_on(const struct cray_bar_key *b, int tab)
{
	return b->tabs & (1u << tab);
}

#endif
