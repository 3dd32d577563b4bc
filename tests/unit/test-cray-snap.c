/*
 * cray_snap: the memory view's copy of the reader -- totals, the types
 * kept (accessed or with regions; "(untyped)" only once used), threads,
 * both line lists, the thread-id note, member rows only for open types
 * (or for all, the snapshot a pause stands on), and the copy standing
 * still while the reader goes on, members included.
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
#include "cacheray/cray_snap.h"

static struct cacheray *feed(const struct tw *w)
{
	struct cacheray *c = cacheray_create(NULL);

	assert_non_null(c);
	assert_true(cacheray_feed(c, w->b, w->n));
	return c;
}

static uint32_t type_index(const struct cacheray *c, const char *name)
{
	for (size_t i = 0; i < cacheray_ntypes(c); i++)
		if (!strcmp(cacheray_type_at(c, i)->name, name))
			return (uint32_t)i;
	fail_msg("no type %s", name);
	return 0;
}

static void test_fixture(void **state)
{
	struct tw w;
	struct cacheray *c;
	struct cray_snap s;
	uint8_t open[1] = {0};
	size_t first;
	uint32_t counter, node;

	(void)state;
	tw_cray_fixture(&w);
	assert_int_equal(w.n, 1976);
	c = feed(&w);
	counter = type_index(c, "struct counter");
	node = type_index(c, "struct node");
	cray_snap_init(&s);
	open[0] = (uint8_t)(1u << counter);
	assert_true(cray_snap_take(&s, c, open, 8));
	assert_int_equal(s.tot.records, 106);
	assert_int_equal(s.tot.accesses, 102);
	assert_int_equal(s.tot.untyped, 5);
	assert_int_equal(s.note, CRAY_NOTE_NONE);
	assert_int_equal(s.ntypes, 3);
	assert_int_equal(s.nthreads, 2);
	assert_int_equal(s.nlines[0], 4);
	assert_int_equal(s.nlines[1], 2);
	assert_int_equal(s.lines[1][0].addr, 0x10000);
	assert_true(s.lines[1][0].disjoint);
	assert_false(s.lines[1][1].disjoint);
	assert_non_null(cray_snap_type(&s, node));
	assert_int_equal(cray_snap_type(&s, node)->regions, 2);
	assert_null(cray_snap_type(&s, 999));
	/* Members of the open type only, by offset. */
	assert_int_equal(cray_snap_type_members(&s, counter, &first), 3);
	assert_int_equal(s.members[first].offset, 0);
	assert_rw(s.members[first].n, 5, 75);
	assert_int_equal(s.members[first + 2].offset, 8);
	assert_int_equal(cray_snap_type_members(&s, node, &first), 0);
	assert_true(cray_snap_has_members(&s, counter));
	assert_false(cray_snap_has_members(&s, node));
	assert_false(s.all_members);
	/* Every type's members (the snapshot a pause stands on). */
	assert_true(cray_snap_take_all(&s, c));
	assert_true(s.all_members);
	assert_int_equal(cray_snap_type_members(&s, node, &first), 2);
	assert_int_equal(cray_snap_type_members(&s, counter, &first), 3);
	assert_int_equal(s.nmembers, 5);
	assert_true(cray_snap_has_members(&s, node));
	/* Back to the open ones. */
	assert_true(cray_snap_take(&s, c, open, 8));
	assert_false(s.all_members);
	assert_int_equal(s.nmembers, 3);
	cray_snap_finish(&s);
	cacheray_destroy(c);
}

/* The copy does not move when the reader reads on. */
static void test_still(void **state)
{
	struct tw w;
	struct cacheray *c;
	struct cray_snap s;

	(void)state;
	tw_cray_fixture(&w);
	c = cacheray_create(NULL);
	assert_non_null(c);
	assert_true(cacheray_feed(c, w.b, 988));
	cray_snap_init(&s);
	assert_true(cray_snap_take(&s, c, NULL, 0));
	assert_int_equal(s.tot.accesses, 52);
	assert_int_equal(s.ntypes, 1); /* no untyped access yet */
	assert_true(cacheray_feed(c, w.b + 988, w.n - 988));
	assert_int_equal(s.tot.accesses, 52);
	assert_int_equal(s.types[0].n[1], 52);
	assert_int_equal(s.lines[1][0].writes, 52);
	assert_true(cray_snap_take(&s, c, NULL, 0));
	assert_int_equal(s.tot.accesses, 102);
	assert_int_equal(s.ntypes, 3);
	cray_snap_finish(&s);
	cacheray_destroy(c);
}

/*
 * Paused: the snapshot taken at the pause has every type's members, so a
 * type opened later shows counts of that moment -- the same as its
 * frozen totals -- however far reading has gone since.
 */
static void test_paused_members(void **state)
{
	struct tw w;
	struct cacheray *c;
	struct cray_snap s;
	const struct cray_type_copy *t;
	uint64_t sum[2] = {0, 0};
	size_t first, n;
	uint32_t counter;

	(void)state;
	tw_cray_fixture(&w);
	c = cacheray_create(NULL);
	assert_non_null(c);
	assert_true(cacheray_feed(c, w.b, 988));
	cray_snap_init(&s);
	assert_true(cray_snap_take_all(&s, c));
	assert_true(cacheray_feed(c, w.b + 988, w.n - 988));
	counter = type_index(c, "struct counter");
	t = cray_snap_type(&s, counter);
	assert_rw(t->n, 0, 52);
	n = cray_snap_type_members(&s, counter, &first);
	assert_int_equal(n, 1);
	assert_int_equal(s.members[first].offset, 0);
	for (size_t i = first; i < first + n; i++) {
		sum[0] += s.members[i].n[0];
		sum[1] += s.members[i].n[1];
	}
	assert_rw(sum, t->n[0], t->n[1]);
	/* The reader has moved on: 80 accesses at +0 by now. */
	assert_rw(cacheray_type_at(c, counter)->members[0].n, 5, 75);
	cray_snap_finish(&s);
	cacheray_destroy(c);
}

static void test_notes(void **state)
{
	struct tw w = {.n = 0};
	struct cacheray *c;
	struct cray_snap s;

	(void)state;
	cray_snap_init(&s);
	/* Nothing read: no note. */
	c = feed(&w);
	assert_true(cray_snap_take(&s, c, NULL, 0));
	assert_int_equal(s.note, CRAY_NOTE_NONE);
	cacheray_destroy(c);
	/* The shipped runtime: thread id 0 everywhere. */
	tw_accesses(&w, 3, W, 0x1000, 8, 0);
	c = feed(&w);
	assert_true(cray_snap_take(&s, c, NULL, 0));
	assert_int_equal(s.note, CRAY_NOTE_TID0);
	cacheray_destroy(c);
	/* One other id. */
	w.n = 0;
	tw_accesses(&w, 3, W, 0x1000, 8, 7);
	c = feed(&w);
	assert_true(cray_snap_take(&s, c, NULL, 0));
	assert_int_equal(s.note, CRAY_NOTE_ONE_TID);
	cacheray_destroy(c);
	/* A region without accesses is a type all the same. */
	w.n = 0;
	tw_add(&w, 0x1000, 4, 4, "int");
	c = feed(&w);
	assert_true(cray_snap_take(&s, c, NULL, 0));
	assert_int_equal(s.ntypes, 1);
	assert_string_equal(s.types[0].name, "int");
	assert_int_equal(s.nthreads, 0);
	cray_snap_finish(&s);
	cacheray_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture),
		cmocka_unit_test(test_still),
		cmocka_unit_test(test_paused_members),
		cmocka_unit_test(test_notes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
