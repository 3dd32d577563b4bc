/*
 * json: the strict, bounded parser for untrusted text (src/common/jsonparse.c):
 * what it accepts and how it reads it (escapes, surrogate pairs, numbers
 * kept exactly as int64), what it rejects and at which byte, and its
 * limits (depth, values, bytes).
 */
#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/jsonparse.h"

static struct json_doc *parse_ok(const char *text)
{
	char err[128] = "";
	struct json_doc *doc =
		json_parse(text, strlen(text), NULL, err, sizeof(err));

	if (!doc)
		fail_msg("rejected %s: %s", text, err);
	return doc;
}

/* text (len bytes) is rejected, with "byte AT: " and `what` in the message. */
static void bad_len(const char *text, size_t len, size_t at, const char *what)
{
	char err[160] = "", want[32];
	struct json_doc *doc = json_parse(text, len, NULL, err, sizeof(err));

	if (doc) {
		json_free(doc);
		fail_msg("accepted %.60s", text);
	}
	snprintf(want, sizeof(want), "byte %zu: ", at);
	if (strncmp(err, want, strlen(want)) != 0 || !strstr(err, what))
		fail_msg("%.60s: got \"%s\", want \"%s...%s\"", text, err, want,
			 what);
}

static void bad(const char *text, size_t at, const char *what)
{
	bad_len(text, strlen(text), at, what);
}

static void test_tree(void **state)
{
	struct json_doc *doc = parse_ok(" \t\r\n{\"a\":1,\"b\":[true,false,"
					"null],\"c\":\"x\",\"d\":{}} ");
	const struct json_value *r = json_root(doc), *b;

	(void)state;
	assert_int_equal(r->type, JSON_OBJECT);
	assert_int_equal(r->n, 4);
	assert_string_equal(r->u.members[0].key, "a");
	assert_int_equal(r->u.members[0].key_len, 1);
	assert_true(json_get(r, "a")->is_int);
	assert_int_equal(json_get(r, "a")->integer, 1);
	b = json_get(r, "b");
	assert_int_equal(b->type, JSON_ARRAY);
	assert_int_equal(b->n, 3);
	assert_int_equal(json_at(b, 0)->type, JSON_TRUE);
	assert_int_equal(json_at(b, 1)->type, JSON_FALSE);
	assert_int_equal(json_at(b, 2)->type, JSON_NULL);
	assert_null(json_at(b, 3));
	assert_string_equal(json_str(json_get(r, "c")), "x");
	assert_int_equal(json_get(r, "d")->type, JSON_OBJECT);
	assert_int_equal(json_get(r, "d")->n, 0);
	/* lookups on the wrong type */
	assert_null(json_get(r, "zz"));
	assert_null(json_get(b, "a"));
	assert_null(json_at(r, 0));
	assert_null(json_str(json_get(r, "a")));
	assert_null(json_get(NULL, "a"));
	assert_null(json_root(NULL));
	json_free(doc);
	json_free(NULL);

	/* scalars at the top, empty and nested containers */
	doc = parse_ok("\"s\"");
	assert_string_equal(json_str(json_root(doc)), "s");
	json_free(doc);
	doc = parse_ok("null");
	assert_int_equal(json_root(doc)->type, JSON_NULL);
	json_free(doc);
	doc = parse_ok("[[],{},[[{\"k\":[]}]]]");
	assert_int_equal(json_root(doc)->n, 3);
	assert_int_equal(
		json_at(json_at(json_at(json_root(doc), 2), 0), 0)->type,
		JSON_OBJECT);
	json_free(doc);
}

static void test_duplicate_keys(void **state)
{
	struct json_doc *doc = parse_ok("{\"a\":1,\"b\":2,\"a\":3}");

	(void)state;
	assert_int_equal(json_root(doc)->n, 3);
	assert_int_equal(json_get(json_root(doc), "a")->integer, 1);
	json_free(doc);
}

static void want_string(const char *text, const char *bytes, size_t n)
{
	struct json_doc *doc = parse_ok(text);
	const struct json_value *v = json_root(doc);

	assert_int_equal(v->type, JSON_STRING);
	assert_int_equal(v->n, n);
	assert_memory_equal(v->u.string, bytes, n);
	assert_int_equal(v->u.string[n], '\0');
	json_free(doc);
}

static void test_escapes(void **state)
{
	(void)state;
	want_string("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t", 8);
	want_string("\"\\u0041\\u00e9\\u20AC\"", "A\xc3\xa9\xe2\x82\xac", 6);
	/* a surrogate pair is one code point: U+1F600 */
	want_string("\"\\uD83D\\uDE00\"", "\xf0\x9f\x98\x80", 4);
	want_string("\"\\uDBFF\\uDFFF\"", "\xf4\x8f\xbf\xbf", 4);
	/* NUL is legal in a string value */
	want_string("\"a\\u0000b\"", "a\0b", 3);
	/* raw UTF-8, DEL */
	want_string("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x7f\"",
		    "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x7f", 10);
	want_string("\"\"", "", 0);

	bad("\"\\x\"", 1, "invalid escape");
	bad("\"\\\b\"", 1, "invalid escape \\?"); /* a raw BS escaped */
	bad("\"\\\n\"", 1, "invalid escape");
	bad("\"\\U0041\"", 1, "invalid escape \\U");
	bad("\"\\u12\"", 1, "four hex digits");
	bad("\"\\u12G4\"", 1, "four hex digits");
	bad("\"\\uD800\"", 1, "surrogate");
	bad("\"\\uDC00\"", 1, "lone low surrogate");
	bad("\"\\uD800\\u0041\"", 1, "surrogate");
	bad("\"ab\\uD83Dx\"", 3, "surrogate");
	bad("\"abc", 0, "unterminated");
	bad("\"abc\\\"", 0, "unterminated");
	bad("\"a\x01"
	    "b\"",
	    2, "control character");
	bad("\"a\tb\"", 2, "control character");
	bad("\"a\nb\"", 2, "control character");
	bad("{\"a\\u0000b\":1}", 1, "\\u0000");
}

static void test_utf8(void **state)
{
	(void)state;
	bad("\"\xff\"", 1, "UTF-8");
	bad("\"a\x80\"", 2, "UTF-8");
	bad("\"\xc0\xaf\"", 1, "UTF-8");	 /* overlong '/' */
	bad("\"\xe0\x80\xaf\"", 1, "UTF-8");	 /* overlong */
	bad("\"\xed\xa0\x80\"", 1, "UTF-8");	 /* encoded surrogate */
	bad("\"\xe2\x82\"", 1, "UTF-8");	 /* truncated */
	bad("\"\xf4\x90\x80\x80\"", 1, "UTF-8"); /* past U+10FFFF */
	bad("\xef\xbb\xbf{}", 0, "expected a value");
}

static void want_number(const char *text, double d, bool is_int, int64_t i)
{
	struct json_doc *doc = parse_ok(text);
	const struct json_value *v = json_root(doc);

	assert_int_equal(v->type, JSON_NUMBER);
	if (v->u.number != d)
		fail_msg("%s read as %.17g, want %.17g", text, v->u.number, d);
	assert_int_equal(v->is_int, is_int);
	if (is_int)
		assert_true(v->integer == i);
	json_free(doc);
}

static void test_numbers(void **state)
{
	char longnum[700];

	(void)state;
	want_number("0", 0, true, 0);
	want_number("-0", 0, true, 0);
	want_number("42", 42, true, 42);
	want_number("-17", -17, true, -17);
	want_number("1.5", 1.5, false, 0);
	want_number("1.0", 1, false, 0);
	want_number("-1.5e-3", -1.5e-3, false, 0);
	want_number("1E+2", 100, false, 0);
	want_number("1e2", 100, false, 0);
	want_number("9223372036854775807", 9223372036854775807.0, true,
		    INT64_MAX);
	want_number("-9223372036854775808", -9223372036854775808.0, true,
		    INT64_MIN);
	want_number("9223372036854775808", 9223372036854775808.0, false, 0);
	want_number("-9223372036854775809", -9223372036854775809.0, false, 0);
	want_number("18446744073709551616", 18446744073709551616.0, false, 0);
	want_number("1e308", 1e308, false, 0);
	want_number("1e-400", 0, false, 0); /* underflow reads as 0 */
	want_number(" 12 ", 12, true, 12);

	bad("01", 0, "leading zero");
	bad("-01", 1, "leading zero");
	bad("[00]", 1, "leading zero");
	bad("1.", 2, "digit");
	bad("1.e3", 2, "digit");
	bad(".5", 0, "expected a value");
	bad("+1", 0, "expected a value");
	bad("1e", 2, "exponent");
	bad("1e+", 3, "exponent");
	bad("-", 1, "digit");
	bad("NaN", 0, "expected a value");
	bad("Infinity", 0, "expected a value");
	bad("-Infinity", 1, "digit");
	bad("1e309", 0, "out of range");
	bad("-1e400", 0, "out of range");
	bad("[1,2e99999]", 3, "out of range");
	bad("0x10", 1, "after the value");
	memset(longnum, '1', sizeof(longnum) - 1);
	longnum[sizeof(longnum) - 1] = '\0';
	bad(longnum, 0, "longer than");
}

/* Numbers read in the C locale even where the decimal point is ','. */
static void test_locale(void **state)
{
	static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8",
					    "fr_FR.UTF-8", "fr_FR.utf8"};
	bool set = false;

	(void)state;
	for (size_t i = 0; i < 4 && !set; i++)
		set = setlocale(LC_NUMERIC, names[i]) != NULL;
	if (!set)
		skip();
	want_number("1.5", 1.5, false, 0);
	setlocale(LC_NUMERIC, "C");
}

static void test_syntax(void **state)
{
	(void)state;
	bad("", 0, "found the end");
	bad("   ", 3, "found the end");
	bad("[1,]", 3, "expected a value");
	bad("[,1]", 1, "expected a value");
	bad("{\"a\":1,}", 7, "expected a string key");
	bad("{,}", 1, "expected a string key");
	bad("[1 2]", 3, "expected ',' or ']'");
	bad("{\"a\":1 \"b\":2}", 7, "expected ',' or '}'");
	bad("{\"a\" 1}", 5, "expected ':'");
	bad("{a:1}", 1, "expected a string key");
	bad("{'a':1}", 1, "expected a string key");
	bad("'a'", 0, "expected a value");
	bad("[1] x", 4, "after the value");
	bad("[1]//", 3, "after the value");
	bad("{} {}", 3, "after the value");
	bad("[", 1, "found the end");
	bad("[1,2", 4, "expected ',' or ']'");
	bad("{", 1, "expected a string key");
	bad("{\"a\":", 5, "found the end");
	bad("tru", 0, "expected a value");
	bad("nul", 0, "expected a value");
	bad("True", 0, "expected a value");
	bad("truex", 4, "after the value");
	bad("[1]]", 3, "after the value");
	/* the text need not end in NUL, and stops at len */
	bad_len("[1]x", 2, 2, "expected ',' or ']'");
	{
		struct json_doc *doc = json_parse("12x", 2, NULL, NULL, 0);

		assert_non_null(doc);
		assert_int_equal(json_root(doc)->integer, 12);
		json_free(doc);
	}
	/* no error buffer, or a tiny one: still rejected, no overflow */
	{
		char tiny[4] = "zzz";

		assert_null(json_parse("[", 1, NULL, NULL, 0));
		assert_null(json_parse("[", 1, NULL, tiny, sizeof(tiny)));
		assert_string_equal(tiny, "byt");
	}
}

static char *nested(unsigned depth)
{
	char *s = malloc(2 * (size_t)depth + 1);

	memset(s, '[', depth);
	memset(s + depth, ']', depth);
	s[2 * depth] = '\0';
	return s;
}

static void test_depth(void **state)
{
	struct json_limits lim = {.max_depth = 3};
	char *s = nested(64);
	struct json_doc *doc = parse_ok(s);
	char err[128];

	(void)state;
	json_free(doc);
	free(s);
	s = nested(65);
	bad(s, 64, "nested deeper than 64");
	free(s);
	/* far deeper than any stack would allow, were it recursive */
	s = nested(500000);
	bad(s, 64, "nested deeper than 64");
	free(s);

	doc = json_parse("[{\"a\":[]}]", 10, &lim, err, sizeof(err));
	assert_non_null(doc);
	json_free(doc);
	assert_null(json_parse("[{\"a\":[[]]}]", 12, &lim, err, sizeof(err)));
	assert_string_equal(err, "byte 7: nested deeper than 3");
}

static void test_values_limit(void **state)
{
	struct json_limits lim = {.max_values = 5};
	size_t n = 200000, len = 2 * n + 1;
	char err[128], *s = malloc(len + 3);
	struct json_doc *doc;

	(void)state;
	doc = json_parse("[1,2,3,{}]", 10, &lim, err, sizeof(err));
	assert_non_null(doc);
	json_free(doc);
	assert_null(json_parse("[1,2,3,4,5]", 11, &lim, err, sizeof(err)));
	assert_string_equal(err, "byte 9: more than 5 values");
	assert_null(json_parse("{\"a\":[1,2,\"x\",null]}", 20, &lim, err,
			       sizeof(err)));
	assert_string_equal(err, "byte 14: more than 5 values");

	/* the default: 200,000 values, the array counting as one */
	s[0] = '[';
	for (size_t i = 0; i < n - 1; i++)
		memcpy(s + 1 + 2 * i, "0,", 2);
	s[2 * (n - 1)] = ']';
	doc = json_parse(s, 2 * (n - 1) + 1, NULL, err, sizeof(err));
	if (!doc)
		fail_msg("%s", err);
	assert_int_equal(json_root(doc)->n, n - 1);
	json_free(doc);
	s[2 * (n - 1)] = ',';
	s[2 * n - 1] = '0';
	s[2 * n] = ']';
	assert_null(json_parse(s, len, NULL, err, sizeof(err)));
	assert_non_null(strstr(err, "more than 200000 values"));
	free(s);
}

static void test_bytes_limit(void **state)
{
	struct json_limits lim = {.max_bytes = 4};
	char err[128];
	struct json_doc *doc = json_parse("1234", 4, &lim, err, sizeof(err));

	(void)state;
	assert_non_null(doc);
	json_free(doc);
	assert_null(json_parse("12345", 5, &lim, err, sizeof(err)));
	assert_string_equal(err,
			    "byte 4: text longer than the limit of 4 bytes");
}

static void test_json_int(void **state)
{
	struct json_doc *doc =
		parse_ok("[5, -5, 1.5, 1e2, \"5\", 9223372036854775808]");
	const struct json_value *r = json_root(doc);
	int64_t v = 0;

	(void)state;
	assert_true(json_int(json_at(r, 0), 0, 10, &v));
	assert_int_equal(v, 5);
	assert_true(json_int(json_at(r, 0), 5, 5, NULL));
	assert_false(json_int(json_at(r, 0), 6, 10, &v));
	assert_false(json_int(json_at(r, 0), 0, 4, &v));
	assert_false(json_int(json_at(r, 1), 0, 10, &v));
	assert_true(json_int(json_at(r, 1), -5, 0, &v));
	assert_int_equal(v, -5);
	assert_false(json_int(json_at(r, 2), INT64_MIN, INT64_MAX, &v));
	assert_false(json_int(json_at(r, 3), INT64_MIN, INT64_MAX, &v));
	assert_false(json_int(json_at(r, 4), INT64_MIN, INT64_MAX, &v));
	assert_false(json_int(json_at(r, 5), INT64_MIN, INT64_MAX, &v));
	assert_false(json_int(NULL, INT64_MIN, INT64_MAX, &v));
	json_free(doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_duplicate_keys),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_locale),
		cmocka_unit_test(test_syntax),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_values_limit),
		cmocka_unit_test(test_bytes_limit),
		cmocka_unit_test(test_json_int),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
