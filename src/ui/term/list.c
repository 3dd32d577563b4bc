/*
 * list: one cursor and one scroll for every list on the screen.
 *
 * The cursor moves by a signed delta and is clamped to the rows (a list
 * with no rows has no cursor to move).  The view keeps its own key for the
 * selected row (an id, a path, a position) and finds the row again after a
 * refresh; the list only knows row numbers.
 *
 * Scrolling happens when a list is drawn, so that it always agrees with
 * the lines the screen has at that moment: term_list_follow brings the
 * cursor into sight, term_list_fill then keeps the last page full.  Some
 * lists want the second and some do not (a list that shrinks under a
 * fixed cursor may rather keep its rows in place), so they are apart.
 *
 * A pager is a list without a cursor: only its first line moves.
 */
#include "ui/term/list.h"

long term_list_page(int visible)
{
	return visible > 1 ? visible - 1 : 1;
}

long term_motion_step(enum term_motion m, long page, long far)
{
	switch (m) {
	case TERM_UP:
		return -1;
	case TERM_DOWN:
		return 1;
	case TERM_PAGE_UP:
		return -page;
	case TERM_PAGE_DOWN:
		return page;
	case TERM_HOME:
		return -far;
	case TERM_END:
		return far;
	default:
		return 0;
	}
}

bool term_list_move(struct term_list *l, size_t n, long delta)
{
	long sel = (long)l->selected + delta;

	if (!n)
		return false;
	if (sel < 0)
		sel = 0;
	if (sel >= (long)n)
		sel = (long)n - 1;
	l->selected = (size_t)sel;
	return true;
}

bool term_list_motion(struct term_list *l, size_t n, enum term_motion m,
		      int visible)
{
	long step = term_motion_step(m, term_list_page(visible), (long)n);

	return m != TERM_MOTION_NONE && term_list_move(l, n, step);
}

void term_list_follow(struct term_list *l, int rows, size_t lead)
{
	if (l->selected < l->top)
		l->top = l->selected;
	if (lead && l->top == l->selected && l->top >= lead)
		l->top -= lead;
	if (rows > 0 && l->selected >= l->top + (size_t)rows)
		l->top = l->selected - (size_t)rows + 1;
}

void term_list_fill(struct term_list *l, size_t n, int rows)
{
	/* rows < 0 (no room at all: nothing is drawn) converts to size_t
	 * as the memory view's clamp always did, so that its scrolling after
	 * the screen grows again stays what it was. */
	if (l->top + (size_t)rows > n)
		l->top = n > (size_t)rows ? n - (size_t)rows : 0;
}

int term_pager_scroll(int top, long step)
{
	long t = (long)top + step;

	return t < 0 ? 0 : (int)t;
}

int term_pager_top(int top, int total, int rows)
{
	if (top > total - rows)
		top = total - rows;
	return top < 0 ? 0 : top;
}
