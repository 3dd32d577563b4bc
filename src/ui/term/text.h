/*
 * text: writing on the screen for both interactive views -- a printf
 * clipped to the screen, text wrapped at blanks, a line filled with an
 * attribute, the entries of a key bar.  See text.c.
 */
#ifndef COROTOP_TERM_TEXT_H
#define COROTOP_TERM_TEXT_H

#include <stdbool.h>

/* printf at (y, x) with attributes attr, cut at the screen's right edge;
 * nothing outside the screen.  Returns the column after the text, so that
 * a line can be built piece by piece (x itself when nothing was drawn). */
int term_text(int y, int x, int attr, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* A window for term_text, for a view that scrolls: line y is drawn on
 * screen line y - shift, and only when that is in [top, bottom); column x
 * at x - left, what falls left of the screen cut off.  Through it
 * term_text returns the view's own column after the text, uncut.
 * term_window_end draws on every line again, and returns the column after
 * the widest line drawn through the window (what it can scroll to). */
void term_window(int top, int bottom, int shift, int left);
int term_window_end(void);

/* The length of the first line of text wrapped at width: up to its last
 * blank that fits (the whole width for a word longer than that). */
int term_wrap(const char *text, int width);

/* text from (y, x), wrapped at blanks at the screen's right edge, the
 * lines after the first indented by indent more: nothing is cut.  Returns
 * the line after the last. */
int term_text_wrapped(int y, int x, int indent, int attr, const char *text);

/* Line y, the screen's width, blank in attributes attr (a title bar, a
 * selected row). */
void term_fill(int y, int attr);

/* One entry of a key bar at the cursor: the key, its label in attributes
 * label_attr, a blank.  False, and nothing drawn, when it would not fit
 * whole on the line: the bar ends there. */
bool term_bar_key(const char *key, const char *label, int label_attr);

#endif
