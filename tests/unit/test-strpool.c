/*
 * strpool: interned display strings (src/common/strpool.c): one copy per
 * distinct string, cleaned of control bytes, cut at STRPOOL_STR_MAX, valid
 * until destroy, and a hard byte budget.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/strpool.h"

static void test_dedup(void **state)
{
	struct strpool *p = strpool_create(1 << 20);
	const char *a, *b, *c;

	(void)state;
	a = strpool_intern(p, "main", 4);
	b = strpool_intern(p, "main_loop", 4); /* first 4 bytes: "main" */
	c = strpool_intern(p, "mainx", 5);
	assert_string_equal(a, "main");
	assert_ptr_equal(a, b);
	assert_string_equal(c, "mainx");
	assert_ptr_not_equal(a, c);
	/* len past the NUL stops at the NUL */
	assert_ptr_equal(strpool_intern(p, "main", 100), a);
	assert_string_equal(strpool_intern(p, "", 0), "");
	assert_null(strpool_intern(p, NULL, 3));
	assert_null(strpool_intern(NULL, "x", 1));
	assert_true(strpool_bytes(p) > 0);
	strpool_destroy(p);
	strpool_destroy(NULL);
}

static void test_cleans_bytes(void **state)
{
	struct strpool *p = strpool_create(1 << 20);

	(void)state;
	/* ESC, TAB, DEL and the two bytes of a UTF-8 "e acute" */
	assert_string_equal(strpool_intern(p, "a\x1b[2Jb\tc\x7f\xc3\xa9", 11),
			    "a?[2Jb?c???");
	strpool_destroy(p);
}

static void test_cuts_long(void **state)
{
	struct strpool *p = strpool_create(1 << 20);
	char in[1000], want[STRPOOL_STR_MAX + 1];
	const char *got;

	(void)state;
	memset(in, 'n', sizeof(in) - 1);
	in[sizeof(in) - 1] = '\0';
	got = strpool_intern(p, in, sizeof(in));
	assert_int_equal(strlen(got), STRPOOL_STR_MAX);
	memset(want, 'n', STRPOOL_STR_MAX - 3);
	memcpy(want + STRPOOL_STR_MAX - 3, "...", 4);
	assert_string_equal(got, want);
	/* exactly STRPOOL_STR_MAX bytes: kept whole */
	in[STRPOOL_STR_MAX] = '\0';
	got = strpool_intern(p, in, sizeof(in));
	assert_int_equal(strlen(got), STRPOOL_STR_MAX);
	assert_int_equal(got[STRPOOL_STR_MAX - 1], 'n');
	strpool_destroy(p);
}

static void test_budget(void **state)
{
	/* The smallest budget is one chunk (64 KiB). */
	struct strpool *p = strpool_create(1);
	const char *first = strpool_intern(p, "first", 5);
	const char *last = NULL;
	char name[32];
	int i;

	(void)state;
	assert_non_null(first);
	for (i = 0; i < 100000; i++) {
		snprintf(name, sizeof(name), "function_%06d", i);
		last = strpool_intern(p, name, sizeof(name));
		if (!last)
			break;
	}
	assert_null(last);
	assert_true(i > 1000); /* a chunk holds thousands of names */
	assert_true(strpool_bytes(p) <= 64 * 1024);
	/* known strings are still found, and still valid */
	assert_ptr_equal(strpool_intern(p, "first", 5), first);
	assert_string_equal(first, "first");
	strpool_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dedup),
		cmocka_unit_test(test_cleans_bytes),
		cmocka_unit_test(test_cuts_long),
		cmocka_unit_test(test_budget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
