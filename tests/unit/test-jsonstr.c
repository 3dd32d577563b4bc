/*
 * test-jsonstr: the one JSON string policy (src/common/jsonstr.h) --
 * valid UTF-8 of every length passes verbatim; overlong forms, surrogates,
 * code points past U+10FFFF, stray continuation bytes (a lone 0x9b),
 * bytes that never start UTF-8 (0xc0, 0xf5-0xff) and sequences cut short
 * become U+FFFD, one per byte, and what follows is read afresh; quotes,
 * backslashes and control characters (U+0000-U+001F, U+007F) are escaped;
 * and every result parses as strict JSON.
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

#include "common/jsonstr.h"

#include "json-check.h"

/* s[0..len) written; the output, checked to parse. */
static char *out_of(const char *s, size_t len)
{
	char *buf = NULL, *doc;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	struct jv v;

	assert_non_null(f);
	jsonstr_write(f, s, len);
	fclose(f);
	assert_true(asprintf(&doc, "{\"k\":%s}", buf) > 0);
	json_must_parse(doc, &v);
	json_free(&v);
	free(doc);
	return buf;
}

static void expect(const char *s, size_t len, const char *want)
{
	char *got = out_of(s, len);

	if (strcmp(got, want))
		fail_msg("wrote %s, expected %s", got, want);
	free(got);
}

#define EXPECT(lit, want) expect(lit, sizeof(lit) - 1, want)

static void test_valid_utf8_verbatim(void **state)
{
	(void)state;
	EXPECT("", "\"\"");
	EXPECT("plain ascii ~", "\"plain ascii ~\"");
	EXPECT("Gr\xc3\xbc\xc3\x9f"
	       "e",
	       "\"Gr\xc3\xbc\xc3\x9f"
	       "e\"");
	EXPECT("\xe2\x82\xac", "\"\xe2\x82\xac\"");	    /* U+20AC */
	EXPECT("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\""); /* U+1F600 */
	EXPECT("\xc2\x80", "\"\xc2\x80\"");		    /* U+0080 */
	EXPECT("\xef\xbf\xbf", "\"\xef\xbf\xbf\"");	    /* U+FFFF */
	EXPECT("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\""); /* U+10FFFF */
	EXPECT("\xed\x9f\xbf", "\"\xed\x9f\xbf\"");	    /* U+D7FF, below */
}

static void test_invalid_bytes_replaced(void **state)
{
	(void)state;
	/* A lone continuation byte, as in a Heph "where". */
	EXPECT("a\x9b"
	       "b",
	       "\"a\\ufffdb\"");
	EXPECT("\x9b", "\"\\ufffd\"");
	/* Overlong forms: '/' in two bytes, U+0000 in two, U+20AC in four. */
	EXPECT("\xc0\xaf", "\"\\ufffd\\ufffd\"");
	EXPECT("\xc1\xbf", "\"\\ufffd\\ufffd\"");
	EXPECT("\xc0\x80", "\"\\ufffd\\ufffd\"");
	EXPECT("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");
	EXPECT("\xf0\x82\x82\xac", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	/* Surrogates and past U+10FFFF. */
	EXPECT("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
	EXPECT("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	EXPECT("\xf5\x80\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	EXPECT("\xff\xfe", "\"\\ufffd\\ufffd\"");
	/* Cut short: at the end, and by an ASCII byte (read afresh). */
	EXPECT("ab\xc3", "\"ab\\ufffd\"");
	EXPECT("\xe2\x82", "\"\\ufffd\\ufffd\"");
	EXPECT("\xe2\x82x", "\"\\ufffd\\ufffdx\"");
	EXPECT("\xf0\x9f\x98\"", "\"\\ufffd\\ufffd\\ufffd\\\"\"");
	/* A bad lead, then a good sequence: the good one stays. */
	EXPECT("\xc3\xc3\xbc", "\"\\ufffd\xc3\xbc\"");
}

static void test_escapes(void **state)
{
	(void)state;
	EXPECT("q\"b\\", "\"q\\\"b\\\\\"");
	EXPECT("\x01\n\t\x1f\x7f", "\"\\u0001\\u000a\\u0009\\u001f\\u007f\"");
	EXPECT("\x1b[2J", "\"\\u001b[2J\"");
	expect("a\0b", 3, "\"a\\u0000b\"");
	/* The C-string form: NULL is "". */
	{
		char *buf = NULL;
		size_t n = 0;
		FILE *f = open_memstream(&buf, &n);

		jsonstr_write_cstr(f, NULL);
		jsonstr_write_cstr(f, "\xc3\xbc\x9b");
		fclose(f);
		assert_string_equal(buf, "\"\"\"\xc3\xbc\\ufffd\"");
		free(buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_utf8_verbatim),
		cmocka_unit_test(test_invalid_bytes_replaced),
		cmocka_unit_test(test_escapes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
