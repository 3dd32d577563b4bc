/*
 * term/list: the one list widget of both views.  The cursor stays on a
 * row at either end and on page keys, a list without rows has no cursor
 * to move, scrolling keeps the cursor on the screen (with a group's header
 * above it when asked), the last page stays full, and a pager's first
 * line stays between the top and the last screenful.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ui/term/list.h"

static void test_move_clamps(void **state)
{
	struct term_list l = {0};

	(void)state;
	assert_true(term_list_move(&l, 10, -1)); /* at the top: stays */
	assert_int_equal(l.selected, 0);
	assert_true(term_list_move(&l, 10, 3));
	assert_int_equal(l.selected, 3);
	assert_true(term_list_move(&l, 10, 100)); /* past the end */
	assert_int_equal(l.selected, 9);
	assert_true(term_list_move(&l, 10, 1));
	assert_int_equal(l.selected, 9);
	assert_true(term_list_move(&l, 10, -100));
	assert_int_equal(l.selected, 0);
	/* Rows went away under the cursor: the next move clamps it. */
	l.selected = 7;
	assert_true(term_list_move(&l, 5, 0));
	assert_int_equal(l.selected, 4);
}

static void test_move_empty(void **state)
{
	struct term_list l = {.selected = 2, .top = 1};

	(void)state;
	assert_false(term_list_move(&l, 0, 1));
	assert_false(term_list_motion(&l, 0, TERM_END, 10));
	assert_int_equal(l.selected, 2); /* unchanged */
	assert_int_equal(l.top, 1);
}

static void test_page(void **state)
{
	(void)state;
	assert_int_equal(term_list_page(20), 19); /* one row of overlap */
	assert_int_equal(term_list_page(2), 1);
	assert_int_equal(term_list_page(1), 1);
	assert_int_equal(term_list_page(0), 1);
	assert_int_equal(term_list_page(-3), 1);
}

static void test_motion_step(void **state)
{
	(void)state;
	assert_int_equal(term_motion_step(TERM_UP, 9, 50), -1);
	assert_int_equal(term_motion_step(TERM_DOWN, 9, 50), 1);
	assert_int_equal(term_motion_step(TERM_PAGE_UP, 9, 50), -9);
	assert_int_equal(term_motion_step(TERM_PAGE_DOWN, 9, 50), 9);
	assert_int_equal(term_motion_step(TERM_HOME, 9, 50), -50);
	assert_int_equal(term_motion_step(TERM_END, 9, 50), 50);
	assert_int_equal(term_motion_step(TERM_MOTION_NONE, 9, 50), 0);
}

static void test_motion(void **state)
{
	struct term_list l = {0};

	(void)state;
	/* 100 rows, 10 on the screen: pages of 9. */
	assert_true(term_list_motion(&l, 100, TERM_PAGE_DOWN, 10));
	assert_int_equal(l.selected, 9);
	assert_true(term_list_motion(&l, 100, TERM_PAGE_DOWN, 10));
	assert_int_equal(l.selected, 18);
	assert_true(term_list_motion(&l, 100, TERM_PAGE_UP, 10));
	assert_int_equal(l.selected, 9);
	assert_true(term_list_motion(&l, 100, TERM_END, 10));
	assert_int_equal(l.selected, 99);
	assert_true(term_list_motion(&l, 100, TERM_PAGE_DOWN, 10));
	assert_int_equal(l.selected, 99); /* stays on the last row */
	assert_true(term_list_motion(&l, 100, TERM_HOME, 10));
	assert_int_equal(l.selected, 0);
	assert_true(term_list_motion(&l, 100, TERM_PAGE_UP, 10));
	assert_int_equal(l.selected, 0);
	assert_false(term_list_motion(&l, 100, TERM_MOTION_NONE, 10));
}

static void test_follow(void **state)
{
	struct term_list l = {.selected = 0, .top = 0};

	(void)state;
	/* Down past the last line: the cursor is on the last line. */
	l.selected = 14;
	term_list_follow(&l, 10, 0);
	assert_int_equal(l.top, 5);
	/* Within the screen: nothing scrolls. */
	l.selected = 7;
	term_list_follow(&l, 10, 0);
	assert_int_equal(l.top, 5);
	/* Up above the first line: the cursor is on the first line. */
	l.selected = 2;
	term_list_follow(&l, 10, 0);
	assert_int_equal(l.top, 2);
	/* No room: top only comes up to the cursor. */
	l.selected = 40;
	term_list_follow(&l, 0, 0);
	assert_int_equal(l.top, 2);
	term_list_follow(&l, -2, 0);
	assert_int_equal(l.top, 2);
}

static void test_follow_lead(void **state)
{
	struct term_list l = {.selected = 6, .top = 8};

	(void)state;
	/* Scrolling up to row 6: its group header (row 5) shows too. */
	term_list_follow(&l, 10, 1);
	assert_int_equal(l.top, 5);
	/* The cursor is not the first row shown: top stays. */
	l.selected = 7;
	term_list_follow(&l, 10, 1);
	assert_int_equal(l.top, 5);
	/* At the very top there is nothing above. */
	l.selected = 0;
	term_list_follow(&l, 10, 1);
	assert_int_equal(l.top, 0);
	/* One line: the cursor wins over its header. */
	l = (struct term_list){.selected = 6, .top = 6};
	term_list_follow(&l, 1, 1);
	assert_int_equal(l.top, 6);
}

static void test_fill(void **state)
{
	struct term_list l = {.selected = 19, .top = 15};

	(void)state;
	/* 20 rows, 10 lines: the last page is full from row 10. */
	term_list_fill(&l, 20, 10);
	assert_int_equal(l.top, 10);
	/* Everything fits: from the first row. */
	term_list_fill(&l, 6, 10);
	assert_int_equal(l.top, 0);
	l.top = 3;
	term_list_fill(&l, 20, 10);
	assert_int_equal(l.top, 3); /* a full screen already */
}

static void test_pager(void **state)
{
	(void)state;
	assert_int_equal(term_pager_scroll(5, -10), 0);
	assert_int_equal(term_pager_scroll(5, 3), 8);
	assert_int_equal(term_pager_scroll(0, 1000), 1000);
	/* 50 lines on 20: at most 30. */
	assert_int_equal(term_pager_top(1000, 50, 20), 30);
	assert_int_equal(term_pager_top(12, 50, 20), 12);
	assert_int_equal(term_pager_top(-4, 50, 20), 0);
	/* It all fits: 0. */
	assert_int_equal(term_pager_top(7, 15, 20), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_move_clamps),
		cmocka_unit_test(test_move_empty),
		cmocka_unit_test(test_page),
		cmocka_unit_test(test_motion_step),
		cmocka_unit_test(test_motion),
		cmocka_unit_test(test_follow),
		cmocka_unit_test(test_follow_lead),
		cmocka_unit_test(test_fill),
		cmocka_unit_test(test_pager),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
