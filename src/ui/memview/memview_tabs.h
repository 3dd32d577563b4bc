/*
 * memview_tabs: the memory view's tabs as data, each a const table of columns
 * (title, width, sort order, cell text, help).  See memview_tabs.c.
 */
#ifndef COROTOP_MEMVIEW_TABS_H
#define COROTOP_MEMVIEW_TABS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ui/term/layout.h"

enum memview_tab {
	MEMVIEW_TAB_SHARING = 0, /* false-sharing suspects */
	MEMVIEW_TAB_HOT,	 /* the hottest lines */
	MEMVIEW_TAB_TYPES,	 /* types, and members of the opened ones */
	MEMVIEW_TAB_THREADS,
	MEMVIEW_TAB_COUNT,
};

/* A displayed row: item indexes the tab's array in the snapshot (lines,
 * types or threads); member is MEMVIEW_ROW_ITEM or indexes snap.members. */
struct memview_row {
	uint32_t item;
	uint32_t member;
};
#define MEMVIEW_ROW_ITEM UINT32_MAX

struct memview_rows;

struct memview_column {
	const char *title;
	int width; /* -1: takes what the others leave (at least 12) */
	bool left;
	int priority; /* 0: always shown; higher numbers go first */
	bool desc;    /* sorts most first (unless inverted) */
	/* Compares two items of the tab; NULL: not a sort key. */
	int (*cmp)(const void *a, const void *b);
	void (*cell)(const struct memview_rows *r,
		     const struct memview_row *row, char *b, size_t n);
	const char *help;
};

struct memview_tab_impl {
	const char *name;
	const struct memview_column *cols;
	int ncols;
	int sort;	   /* the column sorted by at first */
	const char *empty; /* what the tab says without rows */
};

extern const struct memview_tab_impl memview_tabs[MEMVIEW_TAB_COUNT];

/* Where a tab's columns go on a screen `cols` wide (term_layout):
 * columns are dropped by priority, highest number first (the rightmost
 * first among equals), until the rest fit; the flexible column takes what
 * is left. */
void memview_tabs_layout(const struct memview_tab_impl *t, int cols,
			 struct term_layout *lay);

#endif
