/*
 * test-memview-rows: memview_rows and memview_tabs, the memory view's rows from
 * a snapshot of the fixture trace (cray-fixture.h) -- every tab's cells, the
 * default sorts and their ties, sorting by other columns and inverted, skipping
 * columns that are no sort key, types opened into member rows and closed, the
 * selection key across rebuilds, search, odd typenames, a type without
 * member counts, the "(other threads)" entry; which columns a narrow
 * screen keeps.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cacheray-trace.h"
#include "cray-fixture.h"
#include "ui/memview/memview_rows.h"

struct fx {
	struct cacheray *c;
	struct cray_snap snap;
	struct memview_rows rows;
};

static struct fx *fx_new(const struct tw *w, const struct cacheray_config *cfg)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->c = cacheray_create(cfg);
	assert_non_null(f->c);
	assert_true(cacheray_feed(f->c, w->b, w->n));
	cray_snap_init(&f->snap);
	memview_rows_init(&f->rows);
	assert_true(cray_snap_take(&f->snap, f->c, NULL, 0));
	return f;
}

static void fx_free(struct fx *f)
{
	memview_rows_finish(&f->rows);
	cray_snap_finish(&f->snap);
	cacheray_destroy(f->c);
	free(f);
}

static int setup(void **state)
{
	struct tw *w = malloc(sizeof(*w));

	assert_non_null(w);
	tw_cray_fixture(w);
	*state = fx_new(w, NULL);
	free(w);
	return 0;
}

static int teardown(void **state)
{
	fx_free(*state);
	return 0;
}

/* Row i's cells joined by '|', trailing blanks kept as they are. */
static const char *cells(const struct memview_rows *r, size_t i)
{
	static char out[1024];
	size_t o = 0;

	for (int c = 0; c < memview_tabs[r->tab].ncols; c++) {
		char b[320];

		memview_rows_cell(r, i, c, b, sizeof(b));
		o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%s",
				      c ? "|" : "", b);
	}
	return out;
}

static void build(struct fx *f, enum memview_tab tab)
{
	assert_true(memview_rows_build(&f->rows, &f->snap, tab));
}

static void test_sharing(void **state)
{
	struct fx *f = *state;

	build(f, MEMVIEW_TAB_SHARING);
	assert_int_equal(f->rows.nrows, 2);
	assert_string_equal(cells(&f->rows, 0),
			    "0x10000|80|10|70|diff-elements|disjoint|1(w),2(w)|"
			    "struct counter");
	assert_string_equal(cells(&f->rows, 1),
			    "0x10040|12|5|7|one-element|overlap|1(w),2(w)|"
			    "struct counter");
	assert_int_equal(memview_rows_key(&f->rows, 0), 0x10000);
	assert_int_equal(memview_rows_type(&f->rows, 0), UINT32_MAX);
	assert_false(memview_rows_openable(&f->rows, 0));
}

static void test_hot(void **state)
{
	struct fx *f = *state;

	build(f, MEMVIEW_TAB_HOT);
	assert_int_equal(f->rows.nrows, 4);
	assert_string_equal(cells(&f->rows, 0), "0x10000|80|10|70|"
						"diff-elements|1(w),2(w)|"
						"struct counter");
	assert_string_equal(cells(&f->rows, 2), "0x20000|6|4|2|diff-regions|"
						"1(w)|struct node,(untyped)");
	assert_string_equal(cells(&f->rows, 3),
			    "0x30000|4|4|0|untyped|1|(untyped)");
}

static void test_types(void **state)
{
	struct fx *f = *state;

	f->rows.ascii = true;
	build(f, MEMVIEW_TAB_TYPES);
	assert_int_equal(f->rows.nrows, 3);
	/* Accesses, most first; the tie (5 and 5) in first-seen order. */
	assert_string_equal(cells(&f->rows, 0),
			    "92|15|77|16|1|+ struct counter");
	assert_string_equal(cells(&f->rows, 1), "5|5|0|||  (untyped)");
	assert_string_equal(cells(&f->rows, 2), "5|3|2|32|2|+ struct node");
	assert_true(memview_rows_openable(&f->rows, 0));
	assert_false(memview_rows_openable(&f->rows, 1));
	f->rows.ascii = false;
	assert_string_equal(cells(&f->rows, 0),
			    "92|15|77|16|1|\u25b8 struct counter");
}

static void test_open_close(void **state)
{
	struct fx *f = *state;
	uint32_t counter;
	uint64_t key;

	f->rows.ascii = true;
	build(f, MEMVIEW_TAB_TYPES);
	counter = memview_rows_type(&f->rows, 0);
	assert_true(memview_rows_set_open(&f->rows, counter, true));
	assert_false(cray_snap_has_members(&f->snap, counter));
	assert_true(cray_snap_take(&f->snap, f->c, f->rows.open,
				   f->rows.open_bits));
	assert_true(cray_snap_has_members(&f->snap, counter));
	build(f, MEMVIEW_TAB_TYPES);
	assert_int_equal(f->rows.nrows, 6);
	assert_string_equal(cells(&f->rows, 0),
			    "92|15|77|16|1|- struct counter");
	assert_string_equal(cells(&f->rows, 1), "80|5|75|||    +0");
	assert_string_equal(cells(&f->rows, 2), "2|0|2|||    +3");
	assert_string_equal(cells(&f->rows, 3), "10|10|0|||    +8");
	assert_string_equal(cells(&f->rows, 4), "5|5|0|||  (untyped)");
	/* A member row belongs to its type. */
	assert_int_equal(memview_rows_type(&f->rows, 2), counter);
	key = memview_rows_key(&f->rows, 2);
	assert_int_equal(key, (uint64_t)counter << 32 | 3);
	assert_int_equal(memview_rows_find(&f->rows, key), 2);
	/* A new snapshot keeps the open type's members. */
	assert_true(cray_snap_take(&f->snap, f->c, f->rows.open,
				   f->rows.open_bits));
	build(f, MEMVIEW_TAB_TYPES);
	assert_int_equal(f->rows.nrows, 6);
	/* Closed: the members are gone, the type's row stays findable. */
	assert_true(memview_rows_set_open(&f->rows, counter, false));
	build(f, MEMVIEW_TAB_TYPES);
	assert_int_equal(f->rows.nrows, 3);
	assert_int_equal(memview_rows_find(&f->rows, key), SIZE_MAX);
	assert_int_equal(memview_rows_find(&f->rows, (uint64_t)counter << 32 |
							     UINT32_MAX),
			 0);
	/* Closing what was never opened, past the bitmap, is fine. */
	assert_true(memview_rows_set_open(&f->rows, 100000, false));
	assert_false(memview_rows_is_open(&f->rows, 100000));
}

static void test_threads(void **state)
{
	struct fx *f = *state;

	build(f, MEMVIEW_TAB_THREADS);
	assert_int_equal(f->rows.nrows, 2);
	assert_string_equal(cells(&f->rows, 0), "1|60|13|47|58.8");
	assert_string_equal(cells(&f->rows, 1), "2|42|10|32|41.2");
}

static void test_sort(void **state)
{
	struct fx *f = *state;
	struct memview_rows *r = &f->rows;

	/* Lines: from ACCESSES on, READS, WRITES, then (LAYOUT, THREADS,
	 * TYPES are no sort key) LINE, by address, lowest first. */
	build(f, MEMVIEW_TAB_HOT);
	assert_int_equal(r->sort[MEMVIEW_TAB_HOT], 1);
	memview_rows_sort(r, 1);
	assert_int_equal(r->sort[MEMVIEW_TAB_HOT], 2);
	memview_rows_sort(r, 1);
	memview_rows_sort(r, 1);
	assert_int_equal(r->sort[MEMVIEW_TAB_HOT], 0);
	build(f, MEMVIEW_TAB_HOT);
	assert_int_equal(memview_rows_key(r, 0), 0x10000);
	assert_int_equal(memview_rows_key(r, 3), 0x30000);
	r->invert[MEMVIEW_TAB_HOT] = true;
	build(f, MEMVIEW_TAB_HOT);
	assert_int_equal(memview_rows_key(r, 0), 0x30000);
	/* Back from LINE: the last sort key, WRITES. */
	memview_rows_sort(r, -1);
	assert_int_equal(r->sort[MEMVIEW_TAB_HOT], 3);
	/* Each tab keeps its own. */
	assert_int_equal(r->sort[MEMVIEW_TAB_SHARING], 1);
	/* Types by name, A to Z: '(' sorts before 's'. */
	r->tab = MEMVIEW_TAB_TYPES;
	memview_rows_sort(r, -1);
	assert_int_equal(r->sort[MEMVIEW_TAB_TYPES], 5);
	r->ascii = true;
	build(f, MEMVIEW_TAB_TYPES);
	assert_string_equal(cells(r, 0), "5|5|0|||  (untyped)");
	assert_string_equal(cells(r, 2), "5|3|2|32|2|+ struct node");
	/* Regions, most first (inverted: fewest first, ties stable). */
	r->sort[MEMVIEW_TAB_TYPES] = 4;
	r->invert[MEMVIEW_TAB_TYPES] = true;
	build(f, MEMVIEW_TAB_TYPES);
	assert_string_equal(cells(r, 0), "5|5|0|||  (untyped)");
	assert_string_equal(cells(r, 1), "92|15|77|16|1|+ struct counter");
	assert_string_equal(cells(r, 2), "5|3|2|32|2|+ struct node");
	/* Threads by READS, inverted: 2 (10) before 1 (13). */
	r->tab = MEMVIEW_TAB_THREADS;
	r->sort[MEMVIEW_TAB_THREADS] = 2;
	r->invert[MEMVIEW_TAB_THREADS] = true;
	build(f, MEMVIEW_TAB_THREADS);
	assert_string_equal(cells(r, 0), "2|42|10|32|41.2");
}

static void test_search(void **state)
{
	struct fx *f = *state;

	build(f, MEMVIEW_TAB_HOT);
	assert_false(memview_rows_match(&f->rows, 0, "node"));
	assert_true(memview_rows_match(&f->rows, 2, "node"));
	/* Needles are lowercase; cells are compared lowercased. */
	assert_true(memview_rows_match(&f->rows, 1, "one-el"));
	assert_false(memview_rows_match(&f->rows, 1, ""));
	build(f, MEMVIEW_TAB_TYPES);
	assert_true(memview_rows_match(&f->rows, 1, "(untyped)"));
}

/* Typenames with odd bytes, a type too big for member counts, and more
 * threads than the reader keeps. */
static void test_odd(void **state)
{
	struct cacheray_config cfg = {.max_threads = 3};
	struct tw *w = malloc(sizeof(*w));
	struct fx *f;
	uint32_t big;
	char name[] = "a\001b\xff";

	(void)state;
	assert_non_null(w);
	w->n = 0;
	tw_add(w, 0x1000, 8, 1, name);
	tw_add(w, 0x100000, 8192, 1, "huge");
	tw_accesses(w, 3, W, 0x1000, 8, 1);
	tw_accesses(w, 2, R, 0x100000, 8, 2);
	tw_accesses(w, 1, R, 0x100000, 8, 3);
	f = fx_new(w, &cfg);
	free(w);
	f->rows.ascii = true;
	build(f, MEMVIEW_TAB_TYPES);
	assert_string_equal(cells(&f->rows, 0), "3|0|3|8|1|+ a?b?");
	assert_string_equal(cells(&f->rows, 1), "3|3|0|8192|1|+ huge");
	big = memview_rows_type(&f->rows, 1);
	assert_true(memview_rows_set_open(&f->rows, big, true));
	assert_true(cray_snap_take(&f->snap, f->c, f->rows.open,
				   f->rows.open_bits));
	build(f, MEMVIEW_TAB_TYPES);
	assert_int_equal(f->rows.nrows, 3);
	assert_string_equal(cells(&f->rows, 2),
			    "|||||    (no member counts: element over 4096 "
			    "bytes or the counter budget spent)");
	assert_int_equal(memview_rows_key(&f->rows, 2),
			 (uint64_t)big << 32 | (UINT32_MAX - 1));
	/* Thread 3 went to "(other threads)", which sorts last by id. */
	build(f, MEMVIEW_TAB_THREADS);
	f->rows.sort[MEMVIEW_TAB_THREADS] = 0;
	build(f, MEMVIEW_TAB_THREADS);
	assert_int_equal(f->rows.nrows, 3);
	assert_string_equal(cells(&f->rows, 0), "1|3|0|3|50.0");
	assert_string_equal(cells(&f->rows, 2), "(other threads)|1|1|0|16.7");
	fx_free(f);
}

/* An empty reader: every tab has no rows, cells of no row are empty. */
static void test_empty(void **state)
{
	struct tw w = {.n = 0};
	struct fx *f = fx_new(&w, NULL);
	char b[8] = "x";

	(void)state;
	for (int t = 0; t < MEMVIEW_TAB_COUNT; t++) {
		build(f, (enum memview_tab)t);
		assert_int_equal(f->rows.nrows, 0);
		assert_non_null(memview_tabs[t].empty);
	}
	memview_rows_cell(&f->rows, 0, 0, b, sizeof(b));
	assert_string_equal(b, "");
	assert_int_equal(memview_rows_key(&f->rows, 0), UINT64_MAX);
	assert_int_equal(memview_rows_find(&f->rows, 0x1000), SIZE_MAX);
	fx_free(f);
}

/* The column tables: a title and help each, one flexible column at most,
 * a default sort that is a sort key. */
static void test_tables(void **state)
{
	(void)state;
	for (int t = 0; t < MEMVIEW_TAB_COUNT; t++) {
		const struct memview_tab_impl *k = &memview_tabs[t];
		int flex = 0;

		assert_non_null(k->name);
		assert_true(k->ncols > 0 && k->ncols <= 16);
		assert_non_null(k->cols[k->sort].cmp);
		for (int c = 0; c < k->ncols; c++) {
			assert_non_null(k->cols[c].title);
			assert_non_null(k->cols[c].help);
			assert_non_null(k->cols[c].cell);
			assert_true(k->cols[c].priority >= 0);
			flex += k->cols[c].width < 0;
		}
		assert_true(flex <= 1);
	}
}

static int col_of(enum memview_tab t, const char *title)
{
	for (int c = 0; c < memview_tabs[t].ncols; c++)
		if (!strcmp(memview_tabs[t].cols[c].title, title))
			return c;
	fail_msg("no column %s", title);
	return -1;
}

/* Narrow screens: on False sharing, BYTES and THREADS outlast TYPES (and
 * LAYOUT goes first, as at 80 columns before); Hot lines keeps TYPES. */
static void test_layout(void **state)
{
	const struct memview_tab_impl *sh = &memview_tabs[MEMVIEW_TAB_SHARING];
	const struct memview_tab_impl *hot = &memview_tabs[MEMVIEW_TAB_HOT];
	int bytes = col_of(MEMVIEW_TAB_SHARING, "BYTES");
	int threads = col_of(MEMVIEW_TAB_SHARING, "THREADS");
	int types = col_of(MEMVIEW_TAB_SHARING, "TYPES");
	int layout = col_of(MEMVIEW_TAB_SHARING, "LAYOUT");
	struct term_layout lay;

	(void)state;
	memview_tabs_layout(sh, 100, &lay);
	for (int c = 0; c < sh->ncols; c++)
		assert_true(lay.shown[c]);
	assert_int_equal(lay.x[types] + lay.width[types], 98); /* flexible */
	memview_tabs_layout(sh, 80, &lay);
	assert_false(lay.shown[layout]);
	assert_true(lay.shown[types] && lay.shown[bytes] && lay.shown[threads]);
	memview_tabs_layout(sh, 70, &lay);
	assert_false(lay.shown[types]);
	assert_true(lay.shown[bytes] && lay.shown[threads]);
	for (int cols = 40; cols <= 120; cols++) {
		int end = 0;

		memview_tabs_layout(sh, cols, &lay);
		if (!lay.shown[bytes] || !lay.shown[threads])
			assert_false(lay.shown[types]);
		for (int c = 0; c < sh->ncols; c++) {
			if (lay.shown[c])
				end = lay.x[c] + lay.width[c];
			/* Priority 0: LINE and ACCESSES, on any width. */
			if (sh->cols[c].priority == 0)
				assert_true(lay.shown[c]);
		}
		assert_true(end < cols);
	}
	memview_tabs_layout(hot, 70, &lay);
	assert_true(lay.shown[col_of(MEMVIEW_TAB_HOT, "TYPES")]);
	assert_false(lay.shown[col_of(MEMVIEW_TAB_HOT, "THREADS")]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sharing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_types, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_close, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sort, setup, teardown),
		cmocka_unit_test_setup_teardown(test_search, setup, teardown),
		cmocka_unit_test(test_odd),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_layout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
