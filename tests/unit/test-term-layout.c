/*
 * term/layout: columns on a narrow screen.  Everything shows when it fits
 * and the flexible column takes the rest; narrower, the highest priority
 * number goes first (the rightmost first among equals), priority 0 never;
 * a hidden column never shows and takes no room.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ui/term/layout.h"

/* ID(10,0)  A(8,2)  B(8,3)  C(8,3)  WHERE(flex,1)  D(5,0) */
static const struct term_layout_column cols[] = {
	{10, 0, false}, {8, 2, false},	{8, 3, false},
	{8, 3, false},	{-1, 1, false}, {5, 0, false},
};
#define NCOLS 6
#define MIN_TOTAL (11 + 9 + 9 + 9 + TERM_LAYOUT_FLEX + 1 + 6)

static int shown_end(const struct term_layout *lay)
{
	int end = 0;

	for (int c = 0; c < NCOLS; c++)
		if (lay->shown[c])
			end = lay->x[c] + lay->width[c];
	return end;
}

static void test_wide(void **state)
{
	struct term_layout lay;

	(void)state;
	term_layout(&lay, cols, NCOLS, 100);
	for (int c = 0; c < NCOLS; c++)
		assert_true(lay.shown[c]);
	assert_int_equal(lay.x[0], 0);
	assert_int_equal(lay.x[1], 11); /* one blank after each */
	assert_int_equal(lay.x[4], 38);
	/* The flexible column takes all but one spare column. */
	assert_int_equal(lay.width[4], TERM_LAYOUT_FLEX + 99 - MIN_TOTAL);
	assert_int_equal(lay.x[5], 38 + lay.width[4] + 1);
	assert_int_equal(lay.x[5] + lay.width[5], 98);
}

static void test_exact(void **state)
{
	struct term_layout lay;

	(void)state;
	term_layout(&lay, cols, NCOLS, MIN_TOTAL);
	for (int c = 0; c < NCOLS; c++)
		assert_true(lay.shown[c]);
	assert_int_equal(lay.width[4], TERM_LAYOUT_FLEX);
}

static void test_narrow_drops_by_priority(void **state)
{
	struct term_layout lay;

	(void)state;
	/* One column short: the rightmost priority-3 column (C) goes. */
	term_layout(&lay, cols, NCOLS, MIN_TOTAL - 1);
	assert_false(lay.shown[3]);
	assert_true(lay.shown[2] && lay.shown[1] && lay.shown[4]);
	/* Shorter: B too, then A (2), then WHERE (1). */
	term_layout(&lay, cols, NCOLS, MIN_TOTAL - 10);
	assert_false(lay.shown[2] || lay.shown[3]);
	assert_true(lay.shown[1]);
	term_layout(&lay, cols, NCOLS, MIN_TOTAL - 19);
	assert_false(lay.shown[1]);
	assert_true(lay.shown[4]);
	term_layout(&lay, cols, NCOLS, 20);
	assert_false(lay.shown[4]);
	/* Priority 0 stays, even when it does not fit. */
	assert_true(lay.shown[0] && lay.shown[5]);
	term_layout(&lay, cols, NCOLS, 5);
	assert_true(lay.shown[0] && lay.shown[5]);
	/* Whatever the width, what shows ends inside the screen or only
	 * priority 0 is left. */
	for (int w = 17; w <= 120; w++) {
		term_layout(&lay, cols, NCOLS, w);
		assert_true(shown_end(&lay) < w);
	}
}

/* A flexible column with a least width of its own counts that much: the
 * columns of higher priority numbers go to keep it (WHERE over SEQ). */
static void test_least(void **state)
{
	struct term_layout_column c[NCOLS];
	struct term_layout lay;

	(void)state;
	for (int i = 0; i < NCOLS; i++)
		c[i] = cols[i];
	c[4].least = TERM_LAYOUT_FLEX + 9;
	/* Where everything fit at the default, C (priority 3) now goes. */
	term_layout(&lay, c, NCOLS, MIN_TOTAL);
	assert_false(lay.shown[3]);
	assert_true(lay.shown[2] && lay.shown[4]);
	assert_int_equal(lay.width[4], TERM_LAYOUT_FLEX + 9);
	/* Narrower than that least width with only priorities 0 and 1
	 * left: the flexible column shrinks to TERM_LAYOUT_FLEX rather than
	 * go, and takes what is spare. */
	term_layout(&lay, c, NCOLS, TERM_LAYOUT_FLEX + 20);
	assert_false(lay.shown[1] || lay.shown[2] || lay.shown[3]);
	assert_true(lay.shown[4]);
	assert_int_equal(lay.width[4], TERM_LAYOUT_FLEX + 1);
	assert_true(shown_end(&lay) < TERM_LAYOUT_FLEX + 20);
	/* With room for all, the flexible one takes the rest as before. */
	term_layout(&lay, c, NCOLS, MIN_TOTAL + 9);
	for (int i = 0; i < NCOLS; i++)
		assert_true(lay.shown[i]);
	assert_int_equal(lay.width[4], TERM_LAYOUT_FLEX + 9);
}

static void test_hidden(void **state)
{
	struct term_layout_column c[NCOLS];
	struct term_layout lay;

	(void)state;
	for (int i = 0; i < NCOLS; i++)
		c[i] = cols[i];
	c[1].hidden = true; /* A: 9 columns free */
	term_layout(&lay, c, NCOLS, MIN_TOTAL - 9);
	assert_false(lay.shown[1]);
	for (int i = 2; i < NCOLS; i++)
		assert_true(lay.shown[i]); /* nothing else had to go */
	assert_int_equal(lay.x[2], 11);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wide),
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_narrow_drops_by_priority),
		cmocka_unit_test(test_hidden),
		cmocka_unit_test(test_least),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
