/*
 * layout: columns on a screen that may be too narrow for them all.
 *
 * Every shown column takes its width and one blank after it; a flexible
 * column counts its least width (TERM_LAYOUT_FLEX unless it says more),
 * so that a column people read (WHERE) outranks the columns of a higher
 * priority number when the screen is short; when only columns as
 * important as it are left to drop, it shrinks to TERM_LAYOUT_FLEX first. While
 * the total is wider than the screen, the columns of the highest priority
 * number are dropped, the rightmost first among equals; priority 0 is never
 * dropped.  Then the flexible column takes what the others leave, less one
 * column spare at the screen's edge.
 *
 * (The coroutine table and the memory view had one copy each, which had
 * drifted: the memory view numbered its always-shown columns 1 and
 * stopped dropping there, the table numbered them 0.  The memory view's
 * priorities are now one less, so both keep what they showed.)
 */
#include "ui/term/layout.h"

void term_layout(struct term_layout *lay, const struct term_layout_column *col,
		 int n, int screen)
{
	int total = 0, x = 0, lowest = 0;

	if (n > TERM_LAYOUT_MAX)
		n = TERM_LAYOUT_MAX;
	for (int c = 0; c < TERM_LAYOUT_MAX; c++) {
		lay->shown[c] = c < n && !col[c].hidden;
		lay->x[c] = lay->width[c] = 0;
		if (!lay->shown[c])
			continue;
		lay->width[c] = col[c].width >= 0  ? col[c].width
				: col[c].least > 0 ? col[c].least
						   : TERM_LAYOUT_FLEX;
		total += lay->width[c] + 1;
		if (col[c].priority > lowest)
			lowest = col[c].priority;
	}
	/* Drop the least important columns until the rest fit.  Before a
	 * column as important as the flexible one goes, the flexible one
	 * gives up what it asked beyond TERM_LAYOUT_FLEX. */
	for (int prio = lowest; prio > 0 && total > screen; prio--) {
		for (int c = 0; c < n; c++)
			if (lay->shown[c] && col[c].width < 0 &&
			    col[c].priority >= prio &&
			    lay->width[c] > TERM_LAYOUT_FLEX) {
				total -= lay->width[c] - TERM_LAYOUT_FLEX;
				lay->width[c] = TERM_LAYOUT_FLEX;
			}
		for (int c = n - 1; c >= 0 && total > screen; c--)
			if (col[c].priority == prio && lay->shown[c]) {
				lay->shown[c] = false;
				total -= lay->width[c] + 1;
			}
	}
	for (int c = 0; c < n; c++) {
		if (!lay->shown[c])
			continue;
		lay->x[c] = x;
		/* `total` counts the flexible column at its least width; it
		 * gets whatever the others leave. */
		if (col[c].width < 0 && screen - 1 > total)
			lay->width[c] += screen - 1 - total;
		x += lay->width[c] + 1;
	}
}
