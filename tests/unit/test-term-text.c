/*
 * term/text and term/keys: the widgets that need a screen.  Each test
 * makes one with newterm on /dev/null (as test-term.c does), 5 lines of
 * 20 columns, and reads back what was drawn: text is cut at the right
 * edge and never wraps, nothing is drawn off the screen, the attributes
 * hold for the text only, a filled line is the screen's width, a key bar
 * entry shows whole or not at all; keys are
 * drained in order, with the rows rebuilt between the key that asked and
 * the next one.  Without the terminfo entry the tests skip.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <curses.h>

#include "ui/term/keys.h"
#include "ui/term/text.h"

struct screen {
	FILE *out, *in;
	SCREEN *scr;
};

static void screen_open(struct screen *s)
{
	s->out = fopen("/dev/null", "w");
	s->in = fopen("/dev/null", "r");
	assert_non_null(s->out);
	assert_non_null(s->in);
	s->scr = newterm("xterm", s->out, s->in);
	if (!s->scr) {
		fclose(s->out);
		fclose(s->in);
		skip();
	}
	set_term(s->scr);
	resize_term(5, 20);
	nodelay(stdscr, TRUE);
	erase();
}

static void screen_close(struct screen *s)
{
	endwin();
	delscreen(s->scr);
	fclose(s->out);
	fclose(s->in);
}

/* Line y as drawn, trailing blanks and all. */
static const char *line(int y)
{
	static char b[64];

	mvinnstr(y, 0, b, 20);
	b[20] = '\0';
	return b;
}

static void test_text_clips(void **state)
{
	struct screen s;

	(void)state;
	screen_open(&s);
	assert_int_equal(term_text(0, 2, A_NORMAL, "%s=%d", "abc", 42), 8);
	assert_string_equal(line(0), "  abc=42            ");
	/* Built piece by piece from the returned column. */
	assert_int_equal(term_text(0, 8, A_NORMAL, " more"), 13);
	assert_string_equal(line(0), "  abc=42 more       ");
	/* Cut at the edge: the next line stays blank. */
	assert_int_equal(term_text(1, 15, A_NORMAL, "%s", "abcdefgh"), 20);
	assert_string_equal(line(1), "               abcde");
	assert_string_equal(line(2), "                    ");
	/* Off the screen: nothing, and x comes back. */
	assert_int_equal(term_text(1, 20, A_NORMAL, "x"), 20);
	assert_int_equal(term_text(5, 0, A_NORMAL, "x"), 0);
	assert_int_equal(term_text(-1, 3, A_NORMAL, "x"), 3);
	assert_string_equal(line(4), "                    ");
	screen_close(&s);
}

static void test_text_attr(void **state)
{
	struct screen s;

	(void)state;
	screen_open(&s);
	term_text(2, 0, A_BOLD, "hi");
	term_text(2, 3, A_NORMAL, "lo");
	assert_true(mvinch(2, 0) & A_BOLD);
	assert_true(mvinch(2, 1) & A_BOLD);
	assert_false(mvinch(2, 3) & A_BOLD);
	assert_false(getattrs(stdscr) & A_BOLD); /* attributes restored */
	screen_close(&s);
}

static void test_fill(void **state)
{
	struct screen s;

	(void)state;
	screen_open(&s);
	term_fill(3, A_REVERSE);
	for (int x = 0; x < 20; x++) {
		chtype c = mvinch(3, x);

		assert_int_equal(c & A_CHARTEXT, ' ');
		assert_true(c & A_REVERSE);
	}
	assert_false(mvinch(2, 0) & A_REVERSE);
	assert_false(getattrs(stdscr) & A_REVERSE);
	screen_close(&s);
}

static void test_bar_key(void **state)
{
	struct screen s;

	(void)state;
	screen_open(&s);
	move(4, 0);
	assert_true(term_bar_key("F1", "Help", A_REVERSE));
	assert_true(term_bar_key("F10", "Quit", A_REVERSE));
	/* 15 columns used: "Enter" + "Detail" + a blank would not fit,
	 * "ab" + "cd" + a blank fills the line exactly. */
	assert_false(term_bar_key("Enter", "Detail", A_REVERSE));
	assert_true(term_bar_key("ab", "cd", A_REVERSE));
	assert_string_equal(line(4), "F1Help F10Quit abcd ");
	assert_false(mvinch(4, 1) & A_REVERSE);
	assert_true(mvinch(4, 2) & A_REVERSE); /* the label */
	assert_false(mvinch(4, 6) & A_REVERSE);
	assert_false(getattrs(stdscr) & A_REVERSE);
	screen_close(&s);
}

/* The view's side of the drain: what it saw, in order. */
struct seen {
	char log[32];
	size_t n;
};

static unsigned seen_key(void *ctx, int key)
{
	struct seen *s = ctx;

	s->log[s->n++] = (char)key;
	return key == 'b' ? TERM_REBUILD : key == 'q' ? TERM_QUIT : 0;
}

static void seen_rebuild(void *ctx)
{
	struct seen *s = ctx;

	s->log[s->n++] = 'R';
}

static void test_drain(void **state)
{
	static const struct term_keys keys = {seen_key, seen_rebuild};
	struct screen s;
	struct seen seen = {0};
	unsigned dirty;

	(void)state;
	screen_open(&s);
	/* ungetch is a stack: the last one pushed comes first. */
	ungetch('q');
	ungetch('c');
	ungetch('b');
	ungetch('a');
	dirty = term_keys_drain(&keys, &seen, TERM_REFRESH);
	/* Every key, the rebuild between b and c, once. */
	assert_string_equal(seen.log, "abRcq");
	assert_int_equal(dirty, TERM_REFRESH | TERM_REDRAW | TERM_QUIT);
	/* Nothing waiting: dirty as it was. */
	assert_int_equal(term_keys_drain(&keys, &seen, 0), 0);
	assert_int_equal(seen.n, 5);
	screen_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_clips),
		cmocka_unit_test(test_text_attr),
		cmocka_unit_test(test_fill),
		cmocka_unit_test(test_bar_key),
		cmocka_unit_test(test_drain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
