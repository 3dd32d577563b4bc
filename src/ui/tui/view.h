/*
 * view: the screens of the interactive interface as data.  Each view is a
 * const struct tui_view_impl in its own file (as tmux's window modes and
 * htop's panel classes are), and view.c lists them by enum tui_view.  The
 * loop (tui.c) reaches a view only through its entry: it draws the view
 * shown, gives it the actions first, refreshes the one underneath a help
 * screen.  Adding a view is one file, one entry and one enum value.
 */
#ifndef COROTOP_TUI_VIEW_H
#define COROTOP_TUI_VIEW_H

#include <curses.h>
#include <stdbool.h>
#include <stddef.h>

#include "ui/tui/keymap.h"

struct tui;

enum tui_view {
	VIEW_TABLE = 0, /* the base: every other view goes back to it */
	VIEW_DETAIL,
	VIEW_HELP,
	VIEW_WARNINGS,
	VIEW_SETUP,
	VIEW_HOT,
	VIEW_PPT,
	VIEW_OUTPUT,
	TUI_VIEW_COUNT,
};

/* One view.  Every callback may be NULL but draw. */
struct tui_view_impl {
	const char *name;
	/* The action that opens the view, and closes it (back to the table)
	 * when it shows; ACT_NONE: another view opens it. */
	enum tui_action opens;
	/* Drawn over the view it was opened from, which goes on refreshing
	 * and following its coroutine underneath (help). */
	bool overlay;
	/* About the selected coroutine: the engine keeps its history for
	 * it, the replay steps by its transitions, and the table's rebuild
	 * leaves selected_id alone when the coroutine is filtered out. */
	bool follows;
	/* Keys the view keeps while replaying, which the replay key table
	 * would take otherwise (the hot-stack tree's + - =). */
	const char *own_keys;

	/* The view's state, made when the interface starts and destroyed
	 * when it ends (t->view_state[its enum]); NULL: out of memory. */
	void *(*create)(struct tui *t);
	void (*destroy)(void *state);
	/* The view is now shown; from: the view shown before. */
	void (*open)(struct tui *t, enum tui_view from);
	/* A new snapshot is about to be taken while the view shows (or lies
	 * under an overlay): its own copies again.  (Not "refresh": curses
	 * has a macro of that name.) */
	void (*update)(struct tui *t);
	/* Below the header: the view's lines and its key bar. */
	void (*draw)(struct tui *t);
	/* An action while the view shows: its reactions (enum tui_reaction),
	 * or -1 for the meaning every view shares (tui.c).  page: the rows a
	 * table page holds. */
	int (*action)(struct tui *t, enum tui_action a, int page);
	/* A modal view takes every key itself, before the key table. */
	unsigned (*key)(struct tui *t, int key);
	/* A click or the wheel; NULL: ignored. */
	unsigned (*mouse)(struct tui *t, const MEVENT *ev);

	/* Rows of its own that / n N search and \ filters.  A view without
	 * them leaves search and filter to the table's (all three are set,
	 * or none). */
	/* Select the next (dir 1) or previous (-1) row matching t->search,
	 * or say there is none in t->message. */
	void (*search)(struct tui *t, int dir, bool include_current);
	/* Set the filter; false, the filter unchanged and why in err (when
	 * err is not NULL), when text does not parse. */
	bool (*filter)(struct tui *t, const char *text, char *err,
		       size_t errlen);
	/* The filter as typed; "" when there is none. */
	const char *(*filter_text)(const struct tui *t);
};

/* Every view, by enum tui_view. */
extern const struct tui_view_impl *const tui_views[TUI_VIEW_COUNT];

extern const struct tui_view_impl table_view_impl;
extern const struct tui_view_impl detail_view_impl;
extern const struct tui_view_impl help_view_impl;
extern const struct tui_view_impl warn_view_impl;
extern const struct tui_view_impl setup_view_impl;
extern const struct tui_view_impl hot_view_impl;
extern const struct tui_view_impl ppt_view_impl;
extern const struct tui_view_impl output_view_impl;

/* Show view v: its open callback runs.  Returns REACT_REDRAW. */
unsigned tui_view_show(struct tui *t, enum tui_view v);
/* Back from an overlay to the view under it, as it was (its open callback
 * does not run). */
unsigned tui_view_back(struct tui *t);
/* Show view v, or the table when v shows already. */
unsigned tui_view_toggle(struct tui *t, enum tui_view v);
/* The view opened by action a, or -1. */
int tui_view_opened_by(enum tui_action a);

/* Make every view's state; false (and none made) when out of memory. */
bool tui_views_create(struct tui *t);
/* Destroy every view's state (a no-op for the ones not made). */
void tui_views_destroy(struct tui *t);

#endif
