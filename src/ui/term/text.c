/*
 * text: the one way both views put text on the screen.  Every string is
 * formatted into a bounded buffer first, then cut to what is left of the
 * line, so that a long name never wraps onto the next line (curses would
 * wrap it) and a line built piece by piece stops cleanly at the edge.
 *
 * The screen is curses' stdscr: its size is what term_size last gave the
 * view, since only term_size resizes it.
 *
 * A view taller than the screen draws all of itself through a window
 * (term_window): lines are moved up by its shift, and those that land
 * outside it are not drawn, so its code knows nothing of scrolling.  The
 * interface is single-threaded; the window is the one piece of state.
 */
#include "ui/term/text.h"

#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static struct {
	bool on;
	int top, bottom, shift;
} term_win;

void term_window(int top, int bottom, int shift)
{
	term_win.on = true;
	term_win.top = top;
	term_win.bottom = bottom;
	term_win.shift = shift;
}

void term_window_end(void)
{
	term_win.on = false;
}

int term_text(int y, int x, int attr, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int len, lines, cols;

	getmaxyx(stdscr, lines, cols);
	if (term_win.on) {
		y -= term_win.shift;
		if (y < term_win.top || y >= term_win.bottom)
			return x;
	}
	if (x >= cols || y < 0 || y >= lines)
		return x;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	len = (int)strlen(buf);
	if (len > cols - x)
		len = cols - x;
	attron(attr);
	mvaddnstr(y, x, buf, len);
	attroff(attr);
	return x + len;
}

void term_fill(int y, int attr)
{
	attron(attr);
	mvhline(y, 0, ' ', getmaxx(stdscr));
	attroff(attr);
}

bool term_bar_key(const char *key, const char *label, int label_attr)
{
	int x = getcurx(stdscr);

	if (x + (int)strlen(key) + (int)strlen(label) + 1 > getmaxx(stdscr))
		return false;
	printw("%s", key);
	attron(label_attr);
	printw("%s", label);
	attroff(label_attr);
	printw(" ");
	return true;
}
