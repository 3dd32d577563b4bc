/*
 * test-json-check: the strict RFC 8259 parser the tests check corotop's
 * JSON with (tests/common/json-check.h): every kind of invalid text is
 * rejected, saying why and where, and valid texts decode to what they say.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json-check.h"

/*
 * The parser itself: every kind of invalid text is rejected, with the reason
 * and the byte offset of the offending character; valid texts are accepted
 * and decoded.
 */
static void test_parser_rejects_bad_json(void **state)
{
	static const struct {
		const char *text;
		size_t at;
		const char *why; /* a substring of the reason */
	} bad[] = {
		{"", 0, "end of text"},
		{"   ", 3, "end of text"},
		{"{", 1, "end of text"},
		{"[1,2", 4, "end of text"},
		/* trailing commas, missing separators, unquoted keys */
		{"{\"a\":1,}", 7, "trailing comma"},
		{"[1,]", 3, "trailing comma"},
		{"[1,,2]", 3, "unexpected character"},
		{"[1 2]", 3, "expected ',' or ']'"},
		{"{\"a\":1 \"b\":2}", 7, "expected ',' or '}'"},
		{"{\"a\" 1}", 5, "expected ':'"},
		{"{\"a\":1,\"b\"}", 10, "expected ':'"},
		{"{a:1}", 1, "quoted key"},
		{"{'a':1}", 1, "quoted key"},
		{"{\"a\":1,\"a\":2}", 7, "duplicate key"},
		{"{\"\\u0000\":1}", 1, "key"},
		/* trailing garbage: exactly one value per text */
		{"{\"a\":1}x", 7, "text after the value"},
		{"[1]]", 3, "text after the value"},
		{"{} {}", 3, "text after the value"},
		{"1 2", 2, "text after the value"},
		/* literals */
		{"tru", 0, "bad literal"},
		{"nul", 0, "bad literal"},
		{"True", 0, "unexpected character"},
		{"{\"a\":nan}", 5, "bad literal"},
		{"NaN", 0, "unexpected character"},
		{"Infinity", 0, "unexpected character"},
		{"-Infinity", 1, "bad number"},
		/* numbers */
		{"01", 0, "leading zero"},
		{"-01", 0, "leading zero"},
		{"{\"a\":01}", 5, "leading zero"},
		{"{\"a\":-}", 6, "bad number"},
		{"+1", 0, "unexpected character"},
		{".5", 0, "unexpected character"},
		{"{\"a\":1.}", 7, "bad fraction"},
		{"1.e5", 2, "bad fraction"},
		{"1e", 2, "bad exponent"},
		{"1e+", 3, "bad exponent"},
		{"0x10", 1, "text after the value"},
		/* strings */
		{"\"abc", 4, "unterminated string"},
		{"\"abc\\", 4, "unterminated string"},
		{"\"\x01\"", 1, "control character"},
		{"\"a\tb\"", 2, "control character"},
		{"\"a\nb\"", 2, "control character"},
		{"\"\\x\"", 1, "bad escape"},
		{"\"\\U0041\"", 1, "bad escape"},
		{"\"ab\\'\"", 3, "bad escape"},
		{"\"\\u12G4\"", 1, "\\u escape"},
		{"\"\\u12\"", 1, "\\u escape"},
		{"\"\\ud800\"", 1, "unpaired high surrogate"},
		{"\"\\ud800\\u0041\"", 1, "unpaired high surrogate"},
		{"\"\\ud800\\u00\"", 7, "\\u escape"},
		{"\"\\udc00\"", 1, "unpaired low surrogate"},
		/* not UTF-8: a stray byte, overlong, a surrogate, truncated */
		{"\"\xff\"", 1, "UTF-8"},
		{"\"a\x80\"", 2, "UTF-8"},
		{"\"\xc0\xaf\"", 1, "UTF-8"},
		{"\"\xed\xa0\x80\"", 1, "UTF-8"},
		{"\"\xe2\x82\"", 1, "UTF-8"},
		{"\"\xf4\x90\x80\x80\"", 1, "UTF-8"},
		/* only space, tab, CR and LF are whitespace */
		{"\f1", 0, "unexpected character"},
		{"[1,\v2]", 3, "unexpected character"},
	};
	static const char *good[] = {
		"{}",
		"[]",
		"{\"a\":[1,-2.5e3,true,null]}",
		"\"\\u0041\\n\"",
		"0",
		"-0.5",
		" \t\r\n[ 1 , 2 ]\n",
		"-0",
		"0.0e-0",
		"1E+2",
		"18446744073709551615",
		"\"\x7f\"",
		"\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
		"{\"\":\"\",\"a\":{},\"b\":[[]]}",
	};
	char deep[2 * (JSON_MAX_DEPTH + 1) + 1];
	struct json_err err;
	struct jv v;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		if (json_parse(bad[i].text, &v, &err))
			fail_msg("parser accepted %s", bad[i].text);
		/* A rejected text leaves nothing behind. */
		assert_int_equal(v.t, J_NULL);
		assert_int_equal(v.n, 0);
		assert_null(v.s);
		assert_null(v.items);
		assert_non_null(err.why);
		if (!strstr(err.why, bad[i].why) || err.at != bad[i].at)
			fail_msg("%s: got \"%s\" at %zu, want \"%s\" at %zu",
				 bad[i].text, err.why, err.at, bad[i].why,
				 bad[i].at);
		json_free(&v);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		if (!json_parse(good[i], &v, &err))
			fail_msg("parser rejected %s (%s at byte %zu)", good[i],
				 err.why, err.at);
		assert_null(err.why);
		json_free(&v);
	}

	/* The depth limit: JSON_MAX_DEPTH nested arrays, and one more. */
	memset(deep, '[', JSON_MAX_DEPTH);
	memset(deep + JSON_MAX_DEPTH, ']', JSON_MAX_DEPTH);
	deep[2 * JSON_MAX_DEPTH] = '\0';
	json_must_parse(deep, &v);
	json_free(&v);
	memset(deep, '[', JSON_MAX_DEPTH + 1);
	memset(deep + JSON_MAX_DEPTH + 1, ']', JSON_MAX_DEPTH + 1);
	deep[2 * (JSON_MAX_DEPTH + 1)] = '\0';
	assert_false(json_parse(deep, &v, &err));
	assert_string_equal(err.why, "nested too deep");
	assert_int_equal(err.at, JSON_MAX_DEPTH);
	json_free(&v);
}

/* What the parser builds, and the lookups. */
static void test_parser_values(void **state)
{
	const struct jv *m;
	struct jv v;

	(void)state;
	/* Escapes decode to UTF-8, surrogate pairs included. */
	json_must_parse("\"\\u0041\\u00e9\\u20ac\\ud83d\\ude00\\/\\b\\f\\n"
			"\\r\\t\\\"\\\\\"",
			&v);
	assert_int_equal(v.t, J_STR);
	assert_string_equal(v.s, "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
				 "/\b\f\n\r\t\"\\");
	assert_int_equal(v.len, strlen(v.s));
	json_free(&v);
	/* "\u0000" is legal in a string value: the length says so. */
	json_must_parse("\"a\\u0000b\"", &v);
	assert_int_equal(v.len, 3);
	assert_memory_equal(v.s, "a\0b", 4);
	json_free(&v);

	json_must_parse("{\"a\":{\"b\":[1,\"x\"]},\"c\":18446744073709551615,"
			"\"d\":-1,\"e\":1.5,\"f\":2e3,\"g\":false,\"h\":null}",
			&v);
	assert_int_equal(v.t, J_OBJ);
	assert_int_equal(v.n, 7);
	/* Key order is kept. */
	assert_string_equal(v.keys[0], "a");
	assert_string_equal(v.keys[6], "h");
	m = json_need(&v, "a.b", J_ARR);
	assert_int_equal(m->n, 2);
	assert_int_equal(m->items[0].t, J_NUM);
	assert_string_equal(m->items[1].s, "x");
	assert_ptr_equal(json_get(&v, "a.b"), m);
	assert_null(json_get(&v, "a.x"));
	assert_null(json_get(&v, "a.b.c")); /* not an object */
	assert_null(json_get(&v, "x"));
	assert_null(json_get(&v, "ab"));
	/* Numbers: exact text, and a double. */
	assert_true(json_u64(&v, "c") == UINT64_MAX);
	assert_string_equal(json_need(&v, "c", J_NUM)->s,
			    "18446744073709551615");
	assert_true(json_need(&v, "d", J_NUM)->num == -1.0);
	assert_true(json_need(&v, "e", J_NUM)->num == 1.5);
	assert_true(json_need(&v, "f", J_NUM)->num == 2000.0);
	assert_false(json_is_uint(json_get(&v, "d")));
	assert_false(json_is_uint(json_get(&v, "e")));
	assert_false(json_is_uint(json_get(&v, "f")));
	assert_false(json_is_uint(json_get(&v, "g")));
	assert_true(json_is_uint(json_get(&v, "c")));
	assert_false(json_need(&v, "g", J_BOOL)->b);
	json_need(&v, "h", J_NULL);
	json_free(&v);
	json_free(&v); /* idempotent */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parser_rejects_bad_json),
		cmocka_unit_test(test_parser_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
