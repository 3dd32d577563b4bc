/*
 * layout: where a table's columns go on a screen of a given width, for
 * both interactive views (the coroutine table, the memory view's tabs).
 * See layout.c.
 */
#ifndef COROTOP_TERM_LAYOUT_H
#define COROTOP_TERM_LAYOUT_H

#include <stdbool.h>

#define TERM_LAYOUT_MAX 16  /* columns of one table, at most */
#define TERM_LAYOUT_FLEX 12 /* the flexible column's least width */

/* One column as the layout sees it. */
struct term_layout_column {
	int width;    /* < 0: flexible, takes what the others leave */
	int priority; /* 0: always shown; higher numbers are dropped first */
	bool hidden;  /* switched off by the user: never shown */
	int least;    /* flexible: its least width (0: TERM_LAYOUT_FLEX) */
};

/* The result: per column, whether it shows, its x and its width. */
struct term_layout {
	bool shown[TERM_LAYOUT_MAX];
	int x[TERM_LAYOUT_MAX];
	int width[TERM_LAYOUT_MAX];
};

/* Lay out the n columns (n <= TERM_LAYOUT_MAX; more are not shown) on a
 * screen `screen` columns wide, one blank after each column. */
void term_layout(struct term_layout *lay, const struct term_layout_column *col,
		 int n, int screen);

#endif
