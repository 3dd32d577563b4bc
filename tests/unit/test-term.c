/*
 * term: the curses terminal both views share.  Each test makes a screen
 * with newterm on /dev/null for a terminfo entry of known colours, as the
 * views make theirs, and checks what term set on it: the colour pairs
 * (256 colours or 8, NO_COLOR, colours not wanted), the size, and that
 * term_finish restores once.  Without the terminfo entry the test skips.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <curses.h>

#include "ui/term/term.h"

static const struct term_pair pairs[] = {
	{1, COLOR_BLACK, COLOR_CYAN, 0},
	{2, COLOR_BLUE, -1, 244},
	{3, COLOR_YELLOW, -1, 0},
};

struct screen {
	FILE *out, *in;
	SCREEN *scr;
};

static void screen_open(struct screen *s, const char *name)
{
	s->out = fopen("/dev/null", "w");
	s->in = fopen("/dev/null", "r");
	assert_non_null(s->out);
	assert_non_null(s->in);
	s->scr = newterm(name, s->out, s->in);
	if (!s->scr) {
		fclose(s->out);
		fclose(s->in);
		skip();
	}
	set_term(s->scr);
}

static void screen_close(struct screen *s)
{
	term_finish();
	endwin();
	delscreen(s->scr);
	fclose(s->out);
	fclose(s->in);
}

static void assert_pair(short pair, short fg, short bg)
{
	short f, b;

	assert_int_equal(pair_content(pair, &f, &b), OK);
	assert_int_equal(f, fg);
	assert_int_equal(b, bg);
}

static void test_prepare(void **state)
{
	(void)state;
	unsetenv("ESCDELAY");
	setenv("LC_ALL", "C", 1);
	assert_true(term_prepare()); /* C: not UTF-8, draw in ASCII */
	assert_int_equal(get_escdelay(), 25);
}

static void test_colors_256(void **state)
{
	struct screen s;

	(void)state;
	unsetenv("NO_COLOR");
	screen_open(&s, "xterm-256color");
	assert_true(term_colors(true, pairs, 3));
	assert_pair(1, COLOR_BLACK, COLOR_CYAN);
	assert_pair(2, 244, -1); /* fg256 replaces fg */
	assert_pair(3, COLOR_YELLOW, -1);
	screen_close(&s);
}

static void test_colors_8(void **state)
{
	struct screen s;

	(void)state;
	unsetenv("NO_COLOR");
	screen_open(&s, "xterm");
	assert_true(term_colors(true, pairs, 3));
	assert_pair(2, COLOR_BLUE, -1);
	screen_close(&s);
}

static void test_colors_off(void **state)
{
	struct screen s;

	(void)state;
	screen_open(&s, "xterm-256color");
	assert_false(term_colors(false, pairs, 3));
	setenv("NO_COLOR", "1", 1);
	assert_false(term_colors(true, pairs, 3));
	unsetenv("NO_COLOR");
	screen_close(&s);
}

static void test_size(void **state)
{
	struct screen s;
	int lines = 0, cols = 0;

	(void)state;
	screen_open(&s, "xterm");
	term_size(&lines, &cols);
	assert_int_equal(lines, LINES);
	assert_int_equal(cols, COLS);
	assert_true(lines > 0 && cols > 0);
	screen_close(&s);
}

static void test_finish_once(void **state)
{
	struct screen s;

	(void)state;
	screen_open(&s, "xterm");
	term_finish(); /* before term_init: nothing to restore */
	assert_false(isendwin());
	term_init(false);
	assert_false(isendwin());
	term_finish();
	assert_true(isendwin());
	refresh(); /* back in curses mode: a second finish leaves it */
	term_finish();
	assert_false(isendwin());
	screen_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prepare),
		cmocka_unit_test(test_colors_256),
		cmocka_unit_test(test_colors_8),
		cmocka_unit_test(test_colors_off),
		cmocka_unit_test(test_size),
		cmocka_unit_test(test_finish_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
