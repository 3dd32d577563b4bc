/*
 * pptlayout: frame types laid out on the wire (src/probe/pptlayout.c) --
 * the example buffer's JSON description byte for byte, as the shipped
 * generator's Aeson encoding spells it; a one-type buffer (no
 * discriminator, end padding); the copy plans (runs contiguous in the
 * caller's struct and the frame merge into one copy); and init's checks of
 * names, types, counts, offsets and flags.  Saving into segments is
 * test-pptclient.c.
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

#include <errno.h>
#include <time.h>

#include "common/jsonstr.h"
#include "corotop/ppt.h"
#include "json-check.h"
#include "ppt-demo-types.h"
#include "probe/ppt_internal.h"

COROTOP_PPT_BUFFER(demo);
COROTOP_PPT_BUFFER(one);

/* The example (frame size 64): tests/common/ppt-demo-types.h. */

static int setup(void **state)
{
	(void)state;
	return corotop_ppt_buffer_init(&demo, demo_types, 2, 0);
}

static int teardown(void **state)
{
	(void)state;
	corotop_ppt_buffer_finish(&demo);
	corotop_ppt_buffer_finish(&one);
	return 0;
}

static const char demo_json[] =
	"{\"abi\":\"1.0.0\",\"tags\":[{\"key\":\"corotop\",\"value\":"
	"\"client/1\"}],\"metadata\":[],\"emit\":{\"_eBuffer\":{\"ebName\":"
	"\"demo\",\"ebMinElements\":null},\"_eLanguage\":\"ELangC\","
	"\"_eTimeRep\":{\"tag\":\"ETimeSpec\",\"contents\":"
	"\"ETimeClockMonotonic\"},\"_eRuntime\":{\"erMultithread\":true},"
	"\"_eTags\":[],\"_eOptions\":[]},\"target\":{\"tDouble\":8,"
	"\"tFloat\":4,\"tInt\":4,\"tTime\":16,\"tCounter\":8,\"tPadTo\":4,"
	"\"tCounterCount\":3},\"frames\":["
	/* tick */
	"{\"_flName\":\"tick\",\"_flFrame\":[\"tick\",[]],\"_flLayout\":["
	"{\"_lType\":{\"tag\":\"PIntegral\",\"contents\":[\"PPInt\",null]},"
	"\"_lOffset\":0,\"_lAlignment\":4,\"_lSize\":4,\"_lKind\":{\"tag\":"
	"\"LKSeqno\",\"contents\":\"FrontSeq\"},\"_lName\":\"__ppt_seqno\"},"
	"{\"_lType\":{\"tag\":\"PIntegral\",\"contents\":[\"PPInt\",null]},"
	"\"_lOffset\":4,\"_lAlignment\":4,\"_lSize\":4,\"_lKind\":{\"tag\":"
	"\"LKTypeDescrim\",\"contents\":2},\"_lName\":\"__ppt_type\"},"
	"{\"_lType\":{\"tag\":\"PIntegral\",\"contents\":[\"PPByte\",null]},"
	"\"_lOffset\":8,\"_lAlignment\":1,\"_lSize\":8,\"_lKind\":{\"tag\":"
	"\"LKPadding\",\"contents\":8},\"_lName\":\"__pad_8\"},"
	"{\"_lType\":{\"tag\":\"PTime\",\"contents\":null},\"_lOffset\":16,"
	"\"_lAlignment\":16,\"_lSize\":16,\"_lKind\":{\"tag\":\"LKMember\","
	"\"contents\":[{\"fmType\":\"PTime\",\"fmName\":\"work\","
	"\"fmDifferential\":true},{\"tag\":\"IntBegin\",\"contents\":[0,1]}]},"
	"\"_lName\":\"work_start\"},"
	"{\"_lType\":{\"tag\":\"PTime\",\"contents\":null},\"_lOffset\":32,"
	"\"_lAlignment\":16,\"_lSize\":16,\"_lKind\":{\"tag\":\"LKMember\","
	"\"contents\":[{\"fmType\":\"PTime\",\"fmName\":\"work\","
	"\"fmDifferential\":true},{\"tag\":\"IntEnd\",\"contents\":[0,1]}]},"
	"\"_lName\":\"work_end\"},"
	"{\"_lType\":{\"tag\":\"PRational\",\"contents\":[\"PPDouble\",null]},"
	"\"_lOffset\":48,\"_lAlignment\":8,\"_lSize\":8,\"_lKind\":{\"tag\":"
	"\"LKMember\",\"contents\":[{\"fmType\":\"PDouble\",\"fmName\":"
	"\"load\",\"fmDifferential\":false},null]},\"_lName\":\"load\"},"
	"{\"_lType\":{\"tag\":\"PIntegral\",\"contents\":[\"PPInt\",null]},"
	"\"_lOffset\":56,\"_lAlignment\":4,\"_lSize\":4,\"_lKind\":{\"tag\":"
	"\"LKMember\",\"contents\":[{\"fmType\":\"PInt\",\"fmName\":"
	"\"count\",\"fmDifferential\":false},null]},\"_lName\":\"count\"},"
	"{\"_lType\":{\"tag\":\"PIntegral\",\"contents\":[\"PPInt\",null]},"
	"\"_lOffset\":60,\"_lAlignment\":4,\"_lSize\":4,\"_lKind\":{\"tag\":"
	"\"LKSeqno\",\"contents\":\"BackSeq\"},\"_lName\":"
	"\"__ppt_seqno_back\"}]},"
	/* io */
	"{\"_flName\":\"io\",\"_flFrame\":[\"io\",[]],\"_flLayout\":["
	"{\"_lType\":{\"tag\":\"PIntegral\",\"contents\":[\"PPInt\",null]},"
	"\"_lOffset\":0,\"_lAlignment\":4,\"_lSize\":4,\"_lKind\":{\"tag\":"
	"\"LKSeqno\",\"contents\":\"FrontSeq\"},\"_lName\":\"__ppt_seqno\"},"
	"{\"_lType\":{\"tag\":\"PIntegral\",\"contents\":[\"PPInt\",null]},"
	"\"_lOffset\":4,\"_lAlignment\":4,\"_lSize\":4,\"_lKind\":{\"tag\":"
	"\"LKTypeDescrim\",\"contents\":2},\"_lName\":\"__ppt_type\"},"
	"{\"_lType\":{\"tag\":\"PCounter\",\"contents\":[0,null]},"
	"\"_lOffset\":8,\"_lAlignment\":8,\"_lSize\":8,\"_lKind\":{\"tag\":"
	"\"LKMember\",\"contents\":[{\"fmType\":\"PCounter\",\"fmName\":"
	"\"cost\",\"fmDifferential\":true},{\"tag\":\"IntBegin\","
	"\"contents\":[0,2]}]},\"_lName\":\"cost_0_start\"},"
	"{\"_lType\":{\"tag\":\"PCounter\",\"contents\":[0,null]},"
	"\"_lOffset\":16,\"_lAlignment\":8,\"_lSize\":8,\"_lKind\":{\"tag\":"
	"\"LKMember\",\"contents\":[{\"fmType\":\"PCounter\",\"fmName\":"
	"\"cost\",\"fmDifferential\":true},{\"tag\":\"IntEnd\","
	"\"contents\":[0,2]}]},\"_lName\":\"cost_0_end\"},"
	"{\"_lType\":{\"tag\":\"PCounter\",\"contents\":[1,null]},"
	"\"_lOffset\":24,\"_lAlignment\":8,\"_lSize\":8,\"_lKind\":{\"tag\":"
	"\"LKMember\",\"contents\":[{\"fmType\":\"PCounter\",\"fmName\":"
	"\"cost\",\"fmDifferential\":true},{\"tag\":\"IntBegin\","
	"\"contents\":[1,2]}]},\"_lName\":\"cost_1_start\"},"
	"{\"_lType\":{\"tag\":\"PCounter\",\"contents\":[1,null]},"
	"\"_lOffset\":32,\"_lAlignment\":8,\"_lSize\":8,\"_lKind\":{\"tag\":"
	"\"LKMember\",\"contents\":[{\"fmType\":\"PCounter\",\"fmName\":"
	"\"cost\",\"fmDifferential\":true},{\"tag\":\"IntEnd\","
	"\"contents\":[1,2]}]},\"_lName\":\"cost_1_end\"},"
	"{\"_lType\":{\"tag\":\"PCounter\",\"contents\":[2,null]},"
	"\"_lOffset\":40,\"_lAlignment\":8,\"_lSize\":8,\"_lKind\":{\"tag\":"
	"\"LKMember\",\"contents\":[{\"fmType\":\"PCounter\",\"fmName\":"
	"\"cost\",\"fmDifferential\":true},{\"tag\":\"IntBegin\","
	"\"contents\":[2,2]}]},\"_lName\":\"cost_2_start\"},"
	"{\"_lType\":{\"tag\":\"PCounter\",\"contents\":[2,null]},"
	"\"_lOffset\":48,\"_lAlignment\":8,\"_lSize\":8,\"_lKind\":{\"tag\":"
	"\"LKMember\",\"contents\":[{\"fmType\":\"PCounter\",\"fmName\":"
	"\"cost\",\"fmDifferential\":true},{\"tag\":\"IntEnd\","
	"\"contents\":[2,2]}]},\"_lName\":\"cost_2_end\"},"
	"{\"_lType\":{\"tag\":\"PIntegral\",\"contents\":[\"PPInt\",null]},"
	"\"_lOffset\":56,\"_lAlignment\":4,\"_lSize\":4,\"_lKind\":{\"tag\":"
	"\"LKMember\",\"contents\":[{\"fmType\":\"PInt\",\"fmName\":\"fd\","
	"\"fmDifferential\":false},null]},\"_lName\":\"fd\"},"
	"{\"_lType\":{\"tag\":\"PIntegral\",\"contents\":[\"PPInt\",null]},"
	"\"_lOffset\":60,\"_lAlignment\":4,\"_lSize\":4,\"_lKind\":{\"tag\":"
	"\"LKSeqno\",\"contents\":\"BackSeq\"},\"_lName\":"
	"\"__ppt_seqno_back\"}]}]}";

static void test_json_example(void **state)
{
	(void)state;
	assert_non_null(_ppt_json_demo);
	assert_string_equal(_ppt_json_demo, demo_json);
	assert_int_equal(corotop_ppt_frame_size(&demo), 64);
	assert_int_equal(corotop_ppt_buffer_init(&demo, demo_types, 2, 0),
			 -EEXIST);
	corotop_ppt_buffer_finish(&demo);
	assert_null(_ppt_json_demo);
	assert_int_equal(corotop_ppt_frame_size(&demo), 0);
}

/* One type of one byte: no discriminator, end padding, 12-byte frames. */
static void test_single_type(void **state)
{
	static const struct corotop_ppt_member m[] = {
		{"b", COROTOP_PPT_BYTE, 0}};
	static const struct corotop_ppt_frame_type t[] = {{"only", m, 1}};

	(void)state;
	assert_int_equal(
		corotop_ppt_buffer_init(&one, t, 1, COROTOP_PPT_RESIZE), 0);
	assert_int_equal(corotop_ppt_frame_size(&one), 12);
	assert_null(strstr(_ppt_json_one, PPT_TYPE_NAME));
	assert_non_null(strstr(
		_ppt_json_one,
		"{\"_lType\":{\"tag\":\"PIntegral\",\"contents\":[\"PPByte\","
		"null]},\"_lOffset\":4,\"_lAlignment\":1,\"_lSize\":1,"
		"\"_lKind\":{\"tag\":\"LKMember\",\"contents\":[{\"fmType\":"
		"\"PByte\",\"fmName\":\"b\",\"fmDifferential\":false},null]},"
		"\"_lName\":\"b\"},"
		"{\"_lType\":{\"tag\":\"PIntegral\",\"contents\":[\"PPByte\","
		"null]},\"_lOffset\":5,\"_lAlignment\":1,\"_lSize\":3,"
		"\"_lKind\":{\"tag\":\"LKPadding\",\"contents\":3},\"_lName\":"
		"\"__ppt_endpad_3\"},"
		"{\"_lType\":{\"tag\":\"PIntegral\",\"contents\":[\"PPInt\","
		"null]},\"_lOffset\":8,"));
	assert_non_null(strstr(_ppt_json_one,
			       "\"tags\":[{\"key\":\"corotop\",\"value\":"
			       "\"client/1\"},{\"key\":\"resize\",\"value\":"
			       "\"on\"}]"));
}

/* Copies merge where the caller's struct and the frame are contiguous. */
static void test_copy_plans(void **state)
{
	struct flat {
		double a, b;
		int32_t x, y;
		uint8_t z;
	};
	static const struct corotop_ppt_member fm[] = {
		{"a", COROTOP_PPT_DOUBLE, offsetof(struct flat, a)},
		{"b", COROTOP_PPT_DOUBLE, offsetof(struct flat, b)},
		{"x", COROTOP_PPT_INT, offsetof(struct flat, x)},
		{"y", COROTOP_PPT_INT, offsetof(struct flat, y)},
		{"z", COROTOP_PPT_BYTE, offsetof(struct flat, z)},
	};
	static const struct corotop_ppt_frame_type t[] = {{"flat", fm, 5},
							  {"tick", tick_m, 3}};
	struct ppt_layout l;
	const struct ppt_plan *p;

	(void)state;
	assert_int_equal(ppt_layout_build(&l, "plans", t, 2, 0, "client/1"), 0);
	/* flat: seqno, type, then a b x y z at 8..33: one copy. */
	p = &l.plans[0];
	assert_int_equal(p->discrim, 1);
	assert_int_equal(p->nops, 1);
	assert_int_equal(p->ops[0].src, 0);
	assert_int_equal(p->ops[0].dst, 8);
	assert_int_equal(p->ops[0].len, 25);
	/* tick: work (two times, contiguous in both) at 16, load at 48,
	 * count at 56 -- the last two swapped in the struct: three. */
	p = &l.plans[1];
	assert_int_equal(p->discrim, 2);
	assert_int_equal(p->nops, 3);
	assert_int_equal(p->ops[0].src, 16);
	assert_int_equal(p->ops[0].dst, 16);
	assert_int_equal(p->ops[0].len, 32);
	assert_int_equal(p->ops[1].src, 8);
	assert_int_equal(p->ops[1].dst, 48);
	assert_int_equal(p->ops[2].src, 0);
	assert_int_equal(p->ops[2].dst, 56);
	assert_int_equal(l.frame_size, 64);
	assert_int_equal(l.back_off, 60);
	ppt_layout_finish(&l);
	/* A tag value that is not an identifier is escaped. */
	assert_int_equal(ppt_layout_build(&l, "plans", t, 1, 0, "a\"b"), 0);
	assert_non_null(strstr(l.json, "\"value\":\"a\\\"b\"}"));
	ppt_layout_finish(&l);
}

/* The probe's JSON strings follow corotop's one policy (it keeps its own
 * copy of common/jsonstr.h): a tag value comes out of the description as
 * jsonstr_write writes it, and the description stays strict JSON.  A byte
 * that is not UTF-8 is U+FFFD (it used to pass raw, and corotop's own
 * reader then refused the description), DEL is \u007f (it passed raw). */
static void test_tag_value_policy(void **state)
{
	static const char *const in[] = {
		"client/1",
		"Gr\xc3\xbc\xc3\x9f"
		"e",
		"\xf0\x9f\x98\x80",
		"\xff",
		"a\x9b"
		"b",
		"\xc0\xaf",
		"\xed\xa0\x80",
		"\xf4\x90\x80\x80",
		"x\xe2\x82",
		"\x01\x1f\x7f",
		"q\"b\\s",
	};
	static const struct corotop_ppt_frame_type t[] = {{"tick", tick_m, 3}};

	(void)state;
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct ppt_layout l;
		char *want = NULL;
		size_t n = 0;
		FILE *f = open_memstream(&want, &n);
		const char *at;
		struct jv v;

		assert_non_null(f);
		jsonstr_write_cstr(f, in[i]);
		fclose(f);
		assert_int_equal(ppt_layout_build(&l, "tags", t, 1, 0, in[i]),
				 0);
		at = strstr(l.json, "\"value\":");
		assert_non_null(at);
		at += strlen("\"value\":");
		assert_true(strncmp(at, want, n) == 0);
		assert_int_equal(at[n], '}');
		json_must_parse(l.json, &v);
		json_free(&v);
		free(want);
		ppt_layout_finish(&l);
	}
}

static void test_tag_value_invalid_utf8(void **state)
{
	static const struct corotop_ppt_frame_type t[] = {{"tick", tick_m, 3}};
	struct ppt_layout l;

	(void)state;
	assert_int_equal(ppt_layout_build(&l, "tags", t, 1, 0, "a\xff\x7f"), 0);
	assert_non_null(strstr(l.json, "\"value\":\"a\\ufffd\\u007f\"}"));
	ppt_layout_finish(&l);
}

static void test_init_rejects(void **state)
{
	struct corotop_ppt_member m[PPT_MAX_MEMBERS + 1];
	struct corotop_ppt_frame_type t[PPT_MAX_TYPES + 1];
	struct corotop_ppt_buffer bad = one;
	char names[PPT_MAX_MEMBERS + 1][8];

	(void)state;
	for (unsigned i = 0; i <= PPT_MAX_MEMBERS; i++) {
		snprintf(names[i], sizeof(names[i]), "m%u", i);
		m[i] = (struct corotop_ppt_member){names[i], COROTOP_PPT_INT,
						   4 * i};
	}
	for (unsigned i = 0; i <= PPT_MAX_TYPES; i++)
		t[i] = (struct corotop_ppt_frame_type){names[i], m, 2};
#define REJECT(b, types, n, flags)                                             \
	assert_int_equal(corotop_ppt_buffer_init(b, types, n, flags), -EINVAL)
	/* Counts: 17 types, 0 types, 0 and 33 members. */
	REJECT(&one, t, PPT_MAX_TYPES + 1, 0);
	REJECT(&one, t, 0, 0);
	t[0].nmembers = 0;
	REJECT(&one, t, 1, 0);
	t[0].nmembers = PPT_MAX_MEMBERS + 1;
	REJECT(&one, t, 1, 0);
	t[0].nmembers = PPT_MAX_MEMBERS;
	assert_int_equal(corotop_ppt_buffer_init(&one, t, PPT_MAX_TYPES, 0), 0);
	corotop_ppt_buffer_finish(&one);
	assert_null(_ppt_json_one);
	t[0].nmembers = 2;
	/* Names. */
	bad.name = "9lives";
	REJECT(&bad, t, 1, 0);
	bad.name = "a-b";
	REJECT(&bad, t, 1, 0);
	t[1].name = t[0].name; /* two types of one name */
	REJECT(&one, t, 2, 0);
	t[1].name = names[1];
	strcpy(names[1], "m0"); /* two members of one name */
	REJECT(&one, t, 1, 0);
	strcpy(names[1], "m 1");
	REJECT(&one, t, 1, 0);
	strcpy(names[1], "__ppt_x"); /* reserved */
	REJECT(&one, t, 1, 0);
	strcpy(names[1], "m0_start"); /* collides once m0 is an interval */
	m[0].type = COROTOP_PPT_INT | COROTOP_PPT_INTERVAL;
	m[1].offset = 8;
	REJECT(&one, t, 1, 0);
	strcpy(names[1], "m1");
	m[0].type = COROTOP_PPT_INT;
	m[1].offset = 4;
	/* Types. */
	m[1].type = 0;
	REJECT(&one, t, 1, 0);
	m[1].type = COROTOP_PPT_BYTE + 1;
	REJECT(&one, t, 1, 0);
	m[1].type = COROTOP_PPT_INT | 0x200;
	REJECT(&one, t, 1, 0);
	m[1].type = COROTOP_PPT_INT;
	/* Offsets: overlapping, absurd. */
	m[1].offset = 2;
	REJECT(&one, t, 1, 0);
	m[1].offset = (size_t)1 << 40;
	REJECT(&one, t, 1, 0);
	m[1].offset = 4;
	/* Flags. */
	REJECT(&one, t, 1, 1u << 5);
	assert_null(_ppt_json_one);
	assert_null(one.client);
	assert_int_equal(corotop_ppt_buffer_init(&one, t, 1, 0), 0);
#undef REJECT
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_json_example, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_single_type, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_copy_plans, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_init_rejects, setup,
						teardown),
		cmocka_unit_test(test_tag_value_policy),
		cmocka_unit_test(test_tag_value_invalid_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
