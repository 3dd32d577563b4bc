/*
 * test-json-writer: the streaming JSON writer (src/common/json_writer.h)
 * -- commas between elements and none after a key or at the start of a
 * container, however deep the nesting and whatever closed before;
 * strings and keys escaped by the one policy (invalid UTF-8 as U+FFFD,
 * quotes, backslashes and control characters escaped); integers at both
 * ends of their range, doubles in the format given, formatted values,
 * true, false and null; breaks and raw whitespace where the caller puts
 * them; documents far longer than the writer's buffer (many small
 * tokens, a long string, a long formatted value, escaped strings between
 * buffered ones) come out in order.  Each document is compared byte for
 * byte and parsed as strict JSON.
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

#include "common/json_writer.h"

#include "json-check.h"

struct doc {
	char *buf;
	size_t n;
	FILE *f;
	struct json_writer w;
};

static void doc_begin(struct doc *d)
{
	d->buf = NULL;
	d->n = 0;
	d->f = open_memstream(&d->buf, &d->n);
	assert_non_null(d->f);
	json_writer_init(&d->w, d->f);
}

/* The document written equals want, and parses. */
static void doc_expect(struct doc *d, const char *want)
{
	struct jv v;

	json_writer_finish(&d->w);
	fclose(d->f);
	if (strcmp(d->buf, want))
		fail_msg("wrote %s, expected %s", d->buf, want);
	json_must_parse(d->buf, &v);
	json_free(&v);
	free(d->buf);
}

static void test_empty_containers(void **state)
{
	struct doc d;

	(void)state;
	doc_begin(&d);
	json_writer_object_begin(&d.w);
	json_writer_object_end(&d.w);
	doc_expect(&d, "{}");

	doc_begin(&d);
	json_writer_array_begin(&d.w);
	json_writer_array_begin(&d.w);
	json_writer_array_end(&d.w);
	json_writer_object_begin(&d.w);
	json_writer_object_end(&d.w);
	json_writer_array_end(&d.w);
	doc_expect(&d, "[[],{}]");
}

static void test_nesting_and_commas(void **state)
{
	struct doc d;

	(void)state;
	doc_begin(&d);
	json_writer_object_begin(&d.w);
	json_writer_uint_field(&d.w, "a", 1);
	json_writer_key(&d.w, "b");
	json_writer_array_begin(&d.w);
	json_writer_uint(&d.w, 2);
	json_writer_object_begin(&d.w);
	json_writer_null_field(&d.w, "c");
	json_writer_key(&d.w, "d");
	json_writer_object_begin(&d.w);
	json_writer_object_end(&d.w);
	json_writer_bool_field(&d.w, "e", true);
	json_writer_object_end(&d.w);
	json_writer_array_begin(&d.w);
	json_writer_array_end(&d.w);
	json_writer_bool(&d.w, false);
	json_writer_array_end(&d.w);
	json_writer_key(&d.w, "f");
	json_writer_array_begin(&d.w);
	json_writer_array_begin(&d.w);
	json_writer_array_begin(&d.w);
	json_writer_uint(&d.w, 3);
	json_writer_array_end(&d.w);
	json_writer_array_end(&d.w);
	json_writer_array_end(&d.w);
	json_writer_string_field(&d.w, "g", "h");
	json_writer_object_end(&d.w);
	doc_expect(&d, "{\"a\":1,\"b\":[2,{\"c\":null,\"d\":{},\"e\":true},"
		       "[],false],\"f\":[[[3]]],\"g\":\"h\"}");
	assert_int_equal(d.w.depth, 0);
}

static void test_escaping(void **state)
{
	struct doc d;

	(void)state;
	doc_begin(&d);
	json_writer_object_begin(&d.w);
	json_writer_string_field(&d.w, "q\"k", "a\"b\\c");
	json_writer_key_len(&d.w, "n\tl", 3);
	json_writer_string_len(&d.w, "\x01\n\x7f", 3);
	json_writer_string_field(&d.w, "utf8",
				 "Gr\xc3\xbc\xc3\x9f"
				 "e");
	json_writer_key(&d.w, "bad");
	json_writer_string_len(&d.w, "x\x9by\xc0", 4);
	json_writer_string_field(&d.w, "null", NULL);
	json_writer_object_end(&d.w);
	doc_expect(&d, "{\"q\\\"k\":\"a\\\"b\\\\c\",\"n\\u0009l\":"
		       "\"\\u0001\\u000a\\u007f\",\"utf8\":\"Gr\xc3\xbc\xc3\x9f"
		       "e\",\"bad\":\"x\\ufffdy\\ufffd\",\"null\":\"\"}");
}

static void test_numbers(void **state)
{
	struct doc d;

	(void)state;
	doc_begin(&d);
	json_writer_array_begin(&d.w);
	json_writer_uint(&d.w, 0);
	json_writer_uint(&d.w, UINT64_MAX);
	json_writer_int(&d.w, INT64_MIN);
	json_writer_int(&d.w, -1);
	json_writer_double(&d.w, "%.1f", 2.25);
	json_writer_double(&d.w, "%.17g", 0.1);
	json_writer_double(&d.w, "%.3f", -0.0005);
	json_writer_valuef(&d.w, "\"0x%016llx\"", 0xabcULL);
	json_writer_valuef(&d.w, "%u.%03u", 12u, 7u);
	json_writer_hex(&d.w, "0x", 0xabc, 16);
	json_writer_hex(&d.w, "", 0, 0);
	json_writer_hex(&d.w, "0x", UINT64_MAX, 16);
	json_writer_hex(&d.w, "0x", 0x7f00deadbeefULL, 4);
	json_writer_array_end(&d.w);
	doc_expect(&d, "[0,18446744073709551615,-9223372036854775808,-1,"
		       "2.2,0.10000000000000001,-0.001,"
		       "\"0x0000000000000abc\",12.007,\"0x0000000000000abc\","
		       "\"0\",\"0xffffffffffffffff\",\"0x7f00deadbeef\"]");

	doc_begin(&d);
	json_writer_object_begin(&d.w);
	json_writer_int_field(&d.w, "i", -42);
	json_writer_uint_field(&d.w, "u", 42);
	json_writer_object_end(&d.w);
	doc_expect(&d, "{\"i\":-42,\"u\":42}");
}

/* json_writer_fixed writes what printf's %.Nf writes, integral or not. */
static void test_fixed(void **state)
{
	static const double v[] = {
		0.0,	-0.0,	 1.0,  -1.0, 100.0, 0.05,
		0.25,	2.25,	 -2.5, 1e14, 1e15,  1e300,
		-1e300, 123.456, 0.1,  1e-9, 99.95, 4503599627370496.0,
		9.5};
	char want[520], got[512];
	struct doc d;

	(void)state;
	for (unsigned digits = 0; digits <= 3; digits++) {
		for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
			doc_begin(&d);
			json_writer_array_begin(&d.w);
			json_writer_fixed(&d.w, v[i], digits);
			json_writer_array_end(&d.w);
			snprintf(got, sizeof(got), "%.*f", (int)digits, v[i]);
			snprintf(want, sizeof(want), "[%s]", got);
			doc_expect(&d, want);
		}
	}
}

static void test_breaks(void **state)
{
	struct doc d;

	(void)state;
	doc_begin(&d);
	json_writer_object_begin(&d.w);
	json_writer_key(&d.w, "e");
	json_writer_array_begin(&d.w);
	for (unsigned i = 0; i < 3; i++) {
		json_writer_break(&d.w, "\n");
		json_writer_object_begin(&d.w);
		json_writer_uint_field(&d.w, "i", i);
		json_writer_object_end(&d.w);
	}
	json_writer_raw(&d.w, "\n");
	json_writer_array_end(&d.w);
	json_writer_object_end(&d.w);
	json_writer_raw(&d.w, "\n");
	doc_expect(&d, "{\"e\":[\n{\"i\":0},\n{\"i\":1},\n{\"i\":2}\n]}\n");
}

static void test_past_the_buffer(void **state)
{
	size_t cap = 64 * 1024, n = 0;
	char *want = malloc(cap), *big = malloc(3001);
	struct doc d;

	(void)state;
	assert_non_null(want);
	assert_non_null(big);
	memset(big, 'x', 3000);
	big[3000] = 0;
	doc_begin(&d);
	json_writer_array_begin(&d.w);
	n += (size_t)snprintf(want + n, cap - n, "[");
	for (unsigned i = 0; i < 2000; i++) {
		json_writer_uint(&d.w, i * 7919u);
		n += (size_t)snprintf(want + n, cap - n, "%s%u", i ? "," : "",
				      i * 7919u);
		if (i % 300 == 0) { /* escaped: written past the buffer */
			json_writer_string(&d.w, "q\"\x01");
			n += (size_t)snprintf(want + n, cap - n,
					      ",\"q\\\"\\u0001\"");
		}
	}
	json_writer_string(&d.w, big);
	n += (size_t)snprintf(want + n, cap - n, ",\"%s\"", big);
	json_writer_valuef(&d.w, "\"%s\"", big);
	n += (size_t)snprintf(want + n, cap - n, ",\"%s\"", big);
	json_writer_array_end(&d.w);
	snprintf(want + n, cap - n, "]");
	doc_expect(&d, want);
	free(want);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_containers),
		cmocka_unit_test(test_nesting_and_commas),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_breaks),
		cmocka_unit_test(test_past_the_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
