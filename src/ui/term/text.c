/*
 * text: the one way both views put text on the screen.  Every string is
 * formatted into a bounded buffer first, then cut to what is left of the
 * line, so that a long name never wraps onto the next line (curses would
 * wrap it) and a line built piece by piece stops cleanly at the edge.
 *
 * The screen is curses' stdscr: its size is what term_size last gave the
 * view, since only term_size resizes it.
 *
 * A view taller or wider than the screen draws all of itself through a
 * window (term_window): lines are moved up by its shift and left by its
 * left, and what lands outside it is not drawn, so its code knows nothing
 * of scrolling.  The window measures the widest line drawn through it
 * (term_window_end returns it), which bounds the horizontal scroll.  The
 * interface is single-threaded; the window is the one piece of state.
 */
#include "ui/term/text.h"

#include <curses.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static struct {
	bool on;
	int top, bottom, shift, left;
	int widest; /* the column after the widest line drawn through it */
} term_win;

void term_window(int top, int bottom, int shift, int left)
{
	term_win.on = true;
	term_win.top = top;
	term_win.bottom = bottom;
	term_win.shift = shift;
	term_win.left = left;
	term_win.widest = 0;
}

int term_window_end(void)
{
	term_win.on = false;
	return term_win.widest;
}

/* Characters (UTF-8 sequences) in s. */
static int term_chars(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* s past its first n characters. */
static const char *term_skip(const char *s, int n)
{
	while (*s && n > 0) {
		s++;
		while (((unsigned char)*s & 0xc0) == 0x80)
			s++;
		n--;
	}
	return s;
}

/* buf at (y, x), cut at the screen's `cols`, in attr; its length drawn. */
static int term_put(int y, int x, int cols, int attr, const char *buf)
{
	int len = (int)strlen(buf);

	if (len > cols - x)
		len = cols - x;
	attron(attr);
	mvaddnstr(y, x, buf, len);
	attroff(attr);
	return len;
}

/* term_text through the window: line y at y - shift, column x at
 * x - left, the part left of the window's edge skipped.  Returns the
 * column after the text in the view's own columns, as if nothing were
 * cut. */
static int term_window_text(int y, int x, int attr, const char *buf)
{
	int end = x + term_chars(buf), lines, cols;

	getmaxyx(stdscr, lines, cols);
	if (end > term_win.widest)
		term_win.widest = end;
	y -= term_win.shift;
	x -= term_win.left;
	if (y < term_win.top || y >= term_win.bottom || y >= lines ||
	    x >= cols || end - term_win.left <= 0)
		return end;
	if (x < 0) {
		buf = term_skip(buf, -x);
		x = 0;
	}
	(void)term_put(y, x, cols, attr, buf);
	return end;
}

int term_text(int y, int x, int attr, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int lines, cols;

	getmaxyx(stdscr, lines, cols);
	if (!term_win.on && (x >= cols || y < 0 || y >= lines))
		return x;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (term_win.on)
		return term_window_text(y, x, attr, buf);
	return x + term_put(y, x, cols, attr, buf);
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

int term_wrap(const char *text, int width)
{
	int len = (int)strlen(text), cut = 0;

	if (width < 1)
		width = 1;
	if (len <= width)
		return len;
	for (int i = 0; i <= width; i++)
		if (text[i] == ' ')
			cut = i;
	return cut ? cut : width;
}

int term_text_wrapped(int y, int x, int indent, int attr, const char *text)
{
	int cols = getmaxx(stdscr), at = x;

	do {
		int len = term_wrap(text, cols - at);

		term_text(y++, at, attr, "%.*s", len, text);
		text += len;
		while (*text == ' ')
			text++;
		at = x + indent;
	} while (*text);
	return y;
}
