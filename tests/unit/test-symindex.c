/*
 * symindex: function lookup by address (src/engine/symbols/symindex.c): sized
 * and sizeless symbols, the choice among aliases, nesting, lies about sizes,
 * and the module end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/symbols/symindex.h"

static struct symindex *index_of(const struct symindex_entry *e, size_t n,
				 uint64_t end)
{
	struct symindex_entry *v = malloc((n ? n : 1) * sizeof(*v));

	assert_non_null(v);
	if (n)
		memcpy(v, e, n * sizeof(*v));
	return symindex_create(v, n, end);
}

static const char *name_at(struct symindex *x, uint64_t addr)
{
	const struct symindex_entry *e = symindex_find(x, addr);

	return e ? e->name : NULL;
}

static void test_sized_and_gaps(void **state)
{
	/* given out of order on purpose */
	static const struct symindex_entry e[] = {
		{.addr = 0x2000, .size = 0x10, .name = "b"},
		{.addr = 0x1000, .size = 0x100, .name = "a"},
	};
	struct symindex *x = index_of(e, 2, 0x10000);

	(void)state;
	assert_int_equal(symindex_count(x), 2);
	assert_null(name_at(x, 0xfff));
	assert_string_equal(name_at(x, 0x1000), "a");
	assert_string_equal(name_at(x, 0x10ff), "a");
	assert_null(name_at(x, 0x1100)); /* between a and b */
	assert_string_equal(name_at(x, 0x200f), "b");
	assert_null(name_at(x, 0x2010));
	assert_null(symindex_find(NULL, 0x1000));
	symindex_destroy(x);
	symindex_destroy(NULL);
}

static void test_sizeless(void **state)
{
	static const struct symindex_entry e[] = {
		{.addr = 0x1000, .size = 0, .name = "asm_start"},
		{.addr = 0x1800, .size = 0x10, .name = "c"},
		{.addr = 0x3000, .size = 0, .name = "tail"},
	};
	struct symindex *x = index_of(e, 3, 0x4000);

	(void)state;
	assert_string_equal(name_at(x, 0x17ff), "asm_start"); /* to next */
	assert_string_equal(name_at(x, 0x1805), "c");
	assert_string_equal(name_at(x, 0x3fff), "tail"); /* to the end */
	assert_null(name_at(x, 0x4000));
	symindex_destroy(x);
}

static void test_aliases(void **state)
{
	static const struct symindex_entry e[] = {
		{.addr = 0x100,
		 .size = 0,
		 .name = "__getpid",
		 .bind = SYMINDEX_GLOBAL},
		{.addr = 0x100,
		 .size = 0x20,
		 .name = "getpid",
		 .bind = SYMINDEX_WEAK},
		{.addr = 0x200,
		 .size = 0x20,
		 .name = "x_local",
		 .bind = SYMINDEX_LOCAL},
		{.addr = 0x200,
		 .size = 0x20,
		 .name = "x_weak",
		 .bind = SYMINDEX_WEAK},
		{.addr = 0x300,
		 .size = 0x20,
		 .name = "zeta",
		 .bind = SYMINDEX_GLOBAL},
		{.addr = 0x300,
		 .size = 0x20,
		 .name = "alpha",
		 .bind = SYMINDEX_GLOBAL},
	};
	struct symindex *x = index_of(e, 6, 0x1000);
	const struct symindex_entry *g;

	(void)state;
	assert_int_equal(symindex_count(x), 3);
	g = symindex_find(x, 0x110);
	assert_string_equal(g->name, "getpid"); /* fewer underscores */
	assert_true(g->size == 0x20);		/* the largest alias size */
	assert_string_equal(name_at(x, 0x200), "x_weak"); /* weak > local */
	assert_string_equal(name_at(x, 0x300), "alpha");  /* strcmp order */
	symindex_destroy(x);
}

static void test_nested_and_lies(void **state)
{
	static const struct symindex_entry e[] = {
		{.addr = 0x1000, .size = 0x1000, .name = "outer"},
		{.addr = 0x1100, .size = 0x10, .name = "inner"},
		/* a size that wraps around the address space */
		{.addr = 0x5000, .size = UINT64_MAX, .name = "liar"},
		{.addr = 0x6000, .size = 0x10, .name = "after"},
		/* past the module's end: dropped */
		{.addr = 0x9000, .size = 0x10, .name = "outside"},
		{.addr = 0x7000, .size = 0x10, .name = NULL},
	};
	struct symindex *x = index_of(e, 6, 0x8000);

	(void)state;
	assert_int_equal(symindex_count(x), 4);
	assert_string_equal(name_at(x, 0x1105), "inner");
	assert_string_equal(name_at(x, 0x1200), "outer"); /* backtracks */
	assert_string_equal(name_at(x, 0x5fff), "liar");  /* to the next */
	assert_string_equal(name_at(x, 0x6000), "after");
	assert_null(name_at(x, 0x9000));
	symindex_destroy(x);
}

static void test_empty(void **state)
{
	struct symindex *x = index_of(NULL, 0, 0x1000);

	(void)state;
	assert_non_null(x);
	assert_int_equal(symindex_count(x), 0);
	assert_null(symindex_find(x, 0x10));
	symindex_destroy(x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sized_and_gaps),
		cmocka_unit_test(test_sizeless),
		cmocka_unit_test(test_aliases),
		cmocka_unit_test(test_nested_and_lies),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
