/*
 * tui/view: the views as a const table.  Every entry draws and has a name;
 * a view has rows of its own (search, filter, filter_text) all together or
 * not at all, and the table has them; no action opens two views; state is
 * made and destroyed in pairs.  Moving between views: an opening action
 * toggles, help lies over the view it was opened from (which goes on
 * following its coroutine) and goes back to it as it was; search and
 * filter act on the ppt view's rows there, on the table's elsewhere.
 * The table's cursor stays on the first row until the first key, then
 * follows its coroutine through refreshes and sorts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ui/tui/tui.h"

static void test_table_shape(void **state)
{
	(void)state;
	for (int v = 0; v < TUI_VIEW_COUNT; v++) {
		const struct tui_view_impl *i = tui_views[v];
		bool rows = i->search != NULL;

		assert_non_null(i);
		assert_non_null(i->name);
		assert_non_null(i->draw);
		assert_true((i->filter != NULL) == rows);
		assert_true((i->filter_text != NULL) == rows);
		assert_true((i->create != NULL) == (i->destroy != NULL));
		for (int w = 0; w < v; w++) {
			assert_string_not_equal(tui_views[w]->name, i->name);
			if (i->opens != ACT_NONE)
				assert_int_not_equal(tui_views[w]->opens,
						     i->opens);
		}
	}
	assert_non_null(tui_views[VIEW_TABLE]->search);
	assert_false(tui_views[VIEW_TABLE]->overlay);
	assert_true(tui_views[VIEW_HELP]->overlay);
	assert_true(tui_views[VIEW_DETAIL]->follows);
}

static void test_opened_by(void **state)
{
	(void)state;
	assert_int_equal(tui_view_opened_by(ACT_HOT), VIEW_HOT);
	assert_int_equal(tui_view_opened_by(ACT_PPT), VIEW_PPT);
	assert_int_equal(tui_view_opened_by(ACT_WARNINGS), VIEW_WARNINGS);
	assert_int_equal(tui_view_opened_by(ACT_SETUP), VIEW_SETUP);
	assert_int_equal(tui_view_opened_by(ACT_HELP), VIEW_HELP);
	assert_int_equal(tui_view_opened_by(ACT_UP), -1);
	assert_int_equal(tui_view_opened_by(ACT_NONE), -1);
}

static void test_moving(void **state)
{
	struct tui t;

	(void)state;
	memset(&t, 0, sizeof(t));
	assert_true(tui_views_create(&t));
	for (int v = 0; v < TUI_VIEW_COUNT; v++)
		assert_true((t.view_state[v] != NULL) ==
			    (tui_views[v]->create != NULL));
	/* A second press of the opening key goes back to the table. */
	assert_int_equal(tui_view_toggle(&t, VIEW_WARNINGS), REACT_REDRAW);
	assert_int_equal(t.view, VIEW_WARNINGS);
	tui_view_toggle(&t, VIEW_WARNINGS);
	assert_int_equal(t.view, VIEW_TABLE);
	/* Help over the detail view: the detail view still follows. */
	tui_view_show(&t, VIEW_DETAIL);
	tui_view_toggle(&t, VIEW_HELP);
	assert_int_equal(t.view, VIEW_HELP);
	assert_int_equal(t.under, VIEW_DETAIL);
	assert_ptr_equal(tui_view_under(&t), tui_views[VIEW_DETAIL]);
	assert_true(tui_view_under(&t)->follows);
	assert_ptr_equal(tui_view_rows(&t), tui_views[VIEW_TABLE]);
	tui_view_back(&t);
	assert_int_equal(t.view, VIEW_DETAIL);
	assert_ptr_equal(tui_view_under(&t), tui_views[VIEW_DETAIL]);
	/* The ppt view's rows are its own (t.view set directly: opening it
	 * would ask the engine for its buffers). */
	t.view = VIEW_PPT;
	assert_ptr_equal(tui_view_rows(&t), tui_views[VIEW_PPT]);
	assert_string_equal(tui_view_rows(&t)->filter_text(&t), "");
	tui_views_destroy(&t);
	for (int v = 0; v < TUI_VIEW_COUNT; v++)
		assert_null(t.view_state[v]);
	tui_views_destroy(&t); /* twice: a no-op */
}

/* The snapshot holds the records of ids[0..n), in that order. */
static void cursor_snap(struct tui *t, struct model_coro *recs,
			const uint64_t *ids, size_t n)
{
	memset(recs, 0, 4 * sizeof(*recs));
	for (size_t i = 0; i < n; i++) {
		recs[i].id = ids[i];
		recs[i].last_tid = 1;
		recs[i].slot = (uint32_t)i;
	}
	t->snap.coro = recs;
	t->snap.count = t->snap.cap = n;
	table_view_rebuild(t);
}

static uint64_t cursor_id(const struct tui *t)
{
	return t->snap.coro[t->table.rows[t->table.list.selected].coro].id;
}

static void test_cursor_waits_for_a_key(void **state)
{
	struct model_coro recs[4];
	struct tui t;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.table.sort_column = COL_ID;
	t.selected_id = UINT64_MAX;
	filter_init(&t.table.filter);
	rowset_init(&t.table.rowset);
	assert_true(tui_views_create(&t));
	/* The first refresh saw one coroutine, the next all three: the
	 * cursor is on the first row, not on the one seen first. */
	cursor_snap(&t, recs, (uint64_t[]){3}, 1);
	assert_int_equal(cursor_id(&t), 3);
	cursor_snap(&t, recs, (uint64_t[]){3, 1, 2}, 3);
	assert_int_equal(t.table.list.selected, 0);
	assert_int_equal(cursor_id(&t), 1);
	/* Once the user moves, the cursor follows its coroutine. */
	assert_int_equal(table_view_move(&t, 1), REACT_REDRAW);
	assert_int_equal(cursor_id(&t), 2);
	cursor_snap(&t, recs, (uint64_t[]){3, 1, 2, 0}, 4);
	assert_int_equal(t.table.list.selected, 2);
	assert_int_equal(cursor_id(&t), 2);
	t.snap.coro = NULL;
	t.snap.count = 0;
	free(t.table.rows);
	rowset_finish(&t.table.rowset);
	tui_views_destroy(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_shape),
		cmocka_unit_test(test_opened_by),
		cmocka_unit_test(test_moving),
		cmocka_unit_test(test_cursor_waits_for_a_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
