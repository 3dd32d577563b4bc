/*
 * list: the cursor and the scroll of a list of rows, the one list widget
 * of both interactive views (the coroutine table, hot stacks, ppt frames,
 * the memory view's tabs) and their help pagers.  See list.c.
 *
 * Each view maps its own key actions to the motions below; the list
 * clamps the cursor to its rows, and at draw time scrolls so that the
 * cursor shows.
 */
#ifndef COROTOP_TERM_LIST_H
#define COROTOP_TERM_LIST_H

#include <stdbool.h>
#include <stddef.h>

/* The selected row and the first row shown. */
struct term_list {
	size_t selected;
	size_t top;
};

/* The cursor motions every list answers. */
enum term_motion {
	TERM_MOTION_NONE = 0,
	TERM_UP,
	TERM_DOWN,
	TERM_PAGE_UP,
	TERM_PAGE_DOWN,
	TERM_HOME,
	TERM_END,
};

/* The rows a page key moves when `visible` rows show: one less, so that
 * the row at the edge stays in sight; at least 1. */
long term_list_page(int visible);

/* The signed step of motion m: one row, `page` rows, or `far` (to an end:
 * the number of rows does).  0 for TERM_MOTION_NONE. */
long term_motion_step(enum term_motion m, long page, long far);

/* Move the cursor by delta, clamped to rows 0 .. n - 1.  False, and the
 * list unchanged, when there are no rows. */
bool term_list_move(struct term_list *l, size_t n, long delta);

/* term_list_move by motion m on a list of n rows showing `visible` rows:
 * pages of term_list_page(visible), Home and End to the ends. */
bool term_list_motion(struct term_list *l, size_t n, enum term_motion m,
		      int visible);

/* Scroll so that the cursor shows on `rows` lines: up to the cursor, and
 * then `lead` rows more when the cursor is the first row shown (a group's
 * header shown with its first row), or down until the cursor is on the
 * last line.  rows <= 0: only the first. */
void term_list_follow(struct term_list *l, int rows, size_t lead);

/* No blank lines under the last of n rows that rows above top could fill:
 * top at most n - rows (0 when all rows fit). */
void term_list_fill(struct term_list *l, size_t n, int rows);

/* A pager (a help screen: lines, no cursor).  Its first line moved by
 * step, never above the first line (the drawing clamps the bottom). */
int term_pager_scroll(int top, long step);
/* Its first line on a screen of `rows` lines showing `total`: at most
 * total - rows, and 0 when everything fits. */
int term_pager_top(int top, int total, int rows);

#endif
