/*
 * test-hephnames: the symbol names a corotop recording carries
 * (src/engine/heph/hephnames.c) -- corotop_symbol options read back from a
 * trace indexed in memory: the last name of an address wins, control
 * characters and ';' (the folded separator) become '?', names are cut at
 * HEPH_NAME_LEN, values too short and other options are passed over,
 * options after events count too; many names (the tables grow); and
 * heph_names_value, which the recorder writes them with.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "engine/heph/heph.h"
#include "engine/heph/hephnames.h"

static uint8_t buf[1 << 18];

static void sym(struct heph_enc *e, uint64_t addr, const char *name, size_t len)
{
	uint8_t val[8 + 400];

	assert_true(len <= 400);
	for (int i = 0; i < 8; i++)
		val[i] = (uint8_t)(addr >> (56 - 8 * i));
	memcpy(val + 8, name, len);
	assert_true(heph_enc_meta(e, "corotop_symbol", val, 8 + len));
}

static void index_bytes(struct heph_file *f, const struct heph_enc *e)
{
	char err[128] = "";

	assert_false(e->overflow);
	if (!heph_file_index_bytes(f, e->buf, e->len, err, sizeof(err)))
		fail_msg("index: %s", err);
	assert_int_equal(f->nproblems, 0);
}

static void test_load(void **state)
{
	char lng[400], cut[HEPH_NAME_LEN + 1];
	struct heph_names n;
	struct heph_file f;
	struct heph_enc e;

	(void)state;
	memset(lng, 'a', sizeof(lng));
	memset(cut, 'a', HEPH_NAME_LEN);
	cut[HEPH_NAME_LEN] = 0;
	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_epoch(&e, 5));
	sym(&e, 0x20, "first", 5);
	sym(&e, 0x30, "caf\xc3\xa9::run<int>", 15); /* UTF-8 stays */
	sym(&e, 0x10, "tab\there;nl\n\x7f", 13);
	sym(&e, UINT64_MAX, lng, sizeof(lng));
	assert_true(heph_enc_meta(&e, "corotop_symbolx", "\0\0\0\0\0\0\0\x20yy",
				  10));
	assert_true(heph_enc_meta(&e, "corotop_symbol", "\0\0\0\0", 4));
	sym(&e, 0x20, "second", 6); /* the last one wins */
	assert_true(heph_enc_event_begin(&e, 1, 0, 1, 0, 1, "x"));
	assert_true(heph_enc_event_end(&e) > 0);
	sym(&e, 0, "zero", 4);
	index_bytes(&f, &e);
	heph_names_init(&n, &f);
	assert_int_equal(n.n, 5);
	assert_string_equal(heph_names_find(&n, 0x30), "caf\xc3\xa9::run<int>");
	assert_string_equal(heph_names_find(&n, 0x20), "second");
	assert_string_equal(heph_names_find(&n, 0x10), "tab?here?nl??");
	assert_string_equal(heph_names_find(&n, UINT64_MAX), cut);
	assert_string_equal(heph_names_find(&n, 0), "zero");
	assert_null(heph_names_find(&n, 0x11));
	assert_null(heph_names_find(NULL, 0x20));
	heph_names_finish(&n);
	heph_names_finish(&n); /* twice is fine */
	assert_null(heph_names_find(&n, 0x20));
	heph_file_close(&f);

	/* No options at all. */
	assert_true(heph_file_index_bytes(&f, NULL, 0, NULL, 0));
	heph_names_init(&n, &f);
	assert_int_equal(n.n, 0);
	assert_null(heph_names_find(&n, 0));
	heph_names_finish(&n);
	heph_file_close(&f);
}

/* More names than the first table and pool hold, in no order. */
static void test_many(void **state)
{
	struct heph_names n;
	struct heph_file f;
	struct heph_enc e;
	char name[64];

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	for (uint64_t i = 0; i < 3000; i++) {
		uint64_t addr = (i * 7919) % 3000 + 1;
		int len = snprintf(name, sizeof(name), "fn_%llu_%s",
				   (unsigned long long)addr,
				   i % 2 ? "odd" : "even-and-longer");

		sym(&e, addr, name, (size_t)len);
	}
	index_bytes(&f, &e);
	heph_names_init(&n, &f);
	assert_int_equal(n.n, 3000);
	for (size_t i = 1; i < n.n; i++)
		assert_true(n.v[i - 1].addr < n.v[i].addr);
	for (uint64_t i = 0; i < 3000; i++) {
		uint64_t addr = (i * 7919) % 3000 + 1;

		snprintf(name, sizeof(name), "fn_%llu_%s",
			 (unsigned long long)addr,
			 i % 2 ? "odd" : "even-and-longer");
		assert_string_equal(heph_names_find(&n, addr), name);
	}
	assert_null(heph_names_find(&n, 3001));
	heph_names_finish(&n);
	heph_file_close(&f);
}

static void test_value(void **state)
{
	char lng[400];
	uint8_t val[8 + HEPH_NAME_LEN];

	(void)state;
	memset(lng, 'a', sizeof(lng));
	/* The option's value, capped, and refused when it does not fit. */
	assert_int_equal(
		heph_names_value(0x0102030405060708ull, "fn", val, sizeof(val)),
		10);
	assert_memory_equal(val,
			    "\x01\x02\x03\x04\x05\x06\x07\x08"
			    "fn",
			    10);
	lng[sizeof(lng) - 1] = 0;
	assert_int_equal(heph_names_value(1, lng, val, sizeof(val)),
			 8 + HEPH_NAME_LEN);
	assert_int_equal(heph_names_value(1, "fn", val, 9), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_value),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
