/*
 * text: writing on the screen for both interactive views -- a printf
 * clipped to the screen, and a line filled with an attribute.  See text.c.
 */
#ifndef COROTOP_TERM_TEXT_H
#define COROTOP_TERM_TEXT_H

/* printf at (y, x) with attributes attr, cut at the screen's right edge;
 * nothing outside the screen.  Returns the column after the text, so that
 * a line can be built piece by piece (x itself when nothing was drawn). */
int term_text(int y, int x, int attr, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Line y, the screen's width, blank in attributes attr (a title bar, a
 * selected row). */
void term_fill(int y, int attr);

#endif
