/*
 * pptdesc: ppt buffer descriptions (src/engine/ppt/pptdesc.c).  The generator's
 * own example ("demo": a "tick" and an "io" frame type) turns into exactly
 * the layouts and columns expected, and so does the protocol document's
 * plain spelling of it; the ABI major is checked; descriptions that lie
 * (offsets past the frame, sizes of 0, a type count of 10^9, overlaps,
 * frames of different sizes, 100 frame types, control characters in names,
 * offsets that are not small non-negative integers) are refused with a
 * message that names the frame type and member.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/ppt/pptdesc.h"
#include "pptdesc-demo.h"

/* ---- helpers ------------------------------------------------------------ */

/* A copy of src with the nth (0-based) occurrence of from replaced. */
static char *replace_nth(const char *src, const char *from, const char *to,
			 int nth)
{
	const char *at = src;
	size_t n = strlen(src), f = strlen(from), t = strlen(to);
	char *out;

	for (int i = 0; at && i <= nth; i++)
		at = strstr(i ? at + f : at, from);
	if (!at)
		fail_msg("no occurrence %d of %s", nth, from);
	out = malloc(n - f + t + 1);
	memcpy(out, src, (size_t)(at - src));
	memcpy(out + (at - src), to, t);
	memcpy(out + (at - src) + t, at + f, n - (size_t)(at - src) - f + 1);
	return out;
}

static char *replace(const char *src, const char *from, const char *to)
{
	return replace_nth(src, from, to, 0);
}

static enum pptdesc_status parse(const char *json, struct ppt_desc *d,
				 char *err, size_t errlen)
{
	return pptdesc_parse(json, strlen(json), d, err, errlen);
}

struct want_member {
	const char *name;
	enum ppt_mtype type;
	enum ppt_kind kind;
	enum ppt_interval interval;
	int counter;
	uint32_t offset, size;
};

struct want_col {
	const char *name;
	enum ppt_mtype type;
	bool interval;
	uint16_t begin, end;
};

static void check_layout(const struct ppt_layout *l, const char *name,
			 const struct want_member *m, uint32_t nm,
			 const struct want_col *c, uint32_t nc)
{
	assert_string_equal(l->name, name);
	assert_int_equal(l->nmembers, nm);
	for (uint32_t i = 0; i < nm; i++) {
		const struct ppt_member *g = &l->members[i];

		assert_string_equal(g->name, m[i].name);
		assert_int_equal(g->type, m[i].type);
		assert_int_equal(g->kind, m[i].kind);
		assert_int_equal(g->interval, m[i].interval);
		assert_int_equal(g->counter, m[i].counter);
		assert_int_equal(g->offset, m[i].offset);
		assert_int_equal(g->size, m[i].size);
	}
	assert_int_equal(l->ncols, nc);
	for (uint32_t i = 0; i < nc; i++) {
		assert_string_equal(l->cols[i].name, c[i].name);
		assert_int_equal(l->cols[i].type, c[i].type);
		assert_int_equal(l->cols[i].interval, c[i].interval);
		assert_int_equal(l->cols[i].begin, c[i].begin);
		assert_int_equal(l->cols[i].end, c[i].end);
	}
}

/* The demo buffer, whichever spelling it was read from. */
static void check_demo(const struct ppt_desc *d)
{
	static const struct want_member tick[] = {
		{"__ppt_seqno", PPT_T_INT, PPT_K_FRONT, PPT_I_NONE, -1, 0, 4},
		{"__ppt_type", PPT_T_INT, PPT_K_TYPE, PPT_I_NONE, -1, 4, 4},
		{"__pad_8", PPT_T_BYTE, PPT_K_PADDING, PPT_I_NONE, -1, 8, 8},
		{"work_start", PPT_T_TIME, PPT_K_MEMBER, PPT_I_BEGIN, -1, 16,
		 16},
		{"work_end", PPT_T_TIME, PPT_K_MEMBER, PPT_I_END, -1, 32, 16},
		{"load", PPT_T_DOUBLE, PPT_K_MEMBER, PPT_I_NONE, -1, 48, 8},
		{"count", PPT_T_INT, PPT_K_MEMBER, PPT_I_NONE, -1, 56, 4},
		{"__ppt_seqno_back", PPT_T_INT, PPT_K_BACK, PPT_I_NONE, -1, 60,
		 4},
	};
	static const struct want_col tick_cols[] = {
		{"work", PPT_T_TIME, true, 3, 4},
		{"load", PPT_T_DOUBLE, false, 5, 5},
		{"count", PPT_T_INT, false, 6, 6},
	};
	static const struct want_member io[] = {
		{"__ppt_seqno", PPT_T_INT, PPT_K_FRONT, PPT_I_NONE, -1, 0, 4},
		{"__ppt_type", PPT_T_INT, PPT_K_TYPE, PPT_I_NONE, -1, 4, 4},
		{"cost_0_start", PPT_T_COUNTER, PPT_K_MEMBER, PPT_I_BEGIN, 0, 8,
		 8},
		{"cost_0_end", PPT_T_COUNTER, PPT_K_MEMBER, PPT_I_END, 0, 16,
		 8},
		{"cost_1_start", PPT_T_COUNTER, PPT_K_MEMBER, PPT_I_BEGIN, 1,
		 24, 8},
		{"cost_1_end", PPT_T_COUNTER, PPT_K_MEMBER, PPT_I_END, 1, 32,
		 8},
		{"cost_2_start", PPT_T_COUNTER, PPT_K_MEMBER, PPT_I_BEGIN, 2,
		 40, 8},
		{"cost_2_end", PPT_T_COUNTER, PPT_K_MEMBER, PPT_I_END, 2, 48,
		 8},
		{"fd", PPT_T_INT, PPT_K_MEMBER, PPT_I_NONE, -1, 56, 4},
		{"__ppt_seqno_back", PPT_T_INT, PPT_K_BACK, PPT_I_NONE, -1, 60,
		 4},
	};
	static const struct want_col io_cols[] = {
		{"cost[0]", PPT_T_COUNTER, true, 2, 3},
		{"cost[1]", PPT_T_COUNTER, true, 4, 5},
		{"cost[2]", PPT_T_COUNTER, true, 6, 7},
		{"fd", PPT_T_INT, false, 8, 8},
	};

	assert_string_equal(d->abi, "1.0.0");
	assert_string_equal(d->name, "demo");
	assert_false(d->resize);
	assert_false(d->rendezvous);
	assert_false(d->timeval);
	assert_int_equal(d->frame_size, 64);
	assert_int_equal(d->front_off, 0);
	assert_int_equal(d->back_off, 60);
	assert_int_equal(d->type_off, 4);
	assert_int_equal(d->counter_count, 3);
	assert_int_equal(d->ntypes, 2);
	check_layout(&d->types[0], "tick", tick, 8, tick_cols, 3);
	check_layout(&d->types[1], "io", io, 10, io_cols, 4);
}

/* ---- tests -------------------------------------------------------------- */

static void test_generator_example(void **state)
{
	struct ppt_desc d;
	char err[256] = "";

	(void)state;
	if (parse(pptdesc_demo_generator, &d, err, sizeof(err)) != PPTDESC_OK)
		fail_msg("%s", err);
	check_demo(&d);
	pptdesc_finish(&d);
	assert_null(d.types);
	assert_int_equal(d.ntypes, 0);
	pptdesc_finish(&d); /* twice: nothing left to free */
}

static void test_plain_spelling(void **state)
{
	struct ppt_desc d;
	char err[256] = "";

	(void)state;
	if (parse(pptdesc_demo_plain, &d, err, sizeof(err)) != PPTDESC_OK)
		fail_msg("%s", err);
	check_demo(&d);
	pptdesc_finish(&d);
}

static void test_abi(void **state)
{
	struct ppt_desc d;
	char err[256] = "", *s;

	(void)state;
	s = replace(pptdesc_demo_generator, "\"abi\":\"1.0.0\"",
		    "\"abi\":\"2.0.0\"");
	assert_int_equal(parse(s, &d, err, sizeof(err)), PPTDESC_ABI_MISMATCH);
	assert_string_equal(err,
			    "buffer ABI 2.0.0, corotop speaks 1.x (1.0.0)");
	assert_string_equal(d.abi, "2.0.0");
	assert_null(d.types);
	free(s);

	/* a later minor or patch of 1 is read */
	s = replace(pptdesc_demo_generator, "\"abi\":\"1.0.0\"",
		    "\"abi\":\"1.7.12\"");
	assert_int_equal(parse(s, &d, err, sizeof(err)), PPTDESC_OK);
	assert_string_equal(d.abi, "1.7.12");
	pptdesc_finish(&d);
	free(s);

	static const char *const bad[] = {
		"\"zbi\":\"1.0.0\"",  "\"abi\":1",
		"\"abi\":\"1.0\"",    "\"abi\":\"1.0.0.0\"",
		"\"abi\":\"1.0.x\"",  "\"abi\":\"\"",
		"\"abi\":\"v1.0.0\"", "\"abi\":\"1..0\"",
		"\"abi\":null",	      "\"abi\":\"01.0.0\"",
		"\"abi\":\"1.00.0\"", "\"abi\":\"123456.0.0\"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s = replace(pptdesc_demo_generator, "\"abi\":\"1.0.0\"",
			    bad[i]);
		err[0] = '\0';
		if (parse(s, &d, err, sizeof(err)) != PPTDESC_BAD_LAYOUT)
			fail_msg("%s accepted", bad[i]);
		assert_non_null(strstr(err, "abi"));
		assert_null(d.types);
		free(s);
	}
}

static void test_not_json(void **state)
{
	struct ppt_desc d;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse("{\"abi\":", &d, err, sizeof(err)),
			 PPTDESC_BAD_JSON);
	assert_non_null(strstr(err, "byte 7"));
	assert_int_equal(parse("[]", &d, err, sizeof(err)), PPTDESC_BAD_JSON);
	assert_int_equal(pptdesc_parse(NULL, 0, &d, NULL, 0), PPTDESC_BAD_JSON);
	assert_null(d.types);
}

struct lie {
	const char *what;
	const char *from, *to;
	int nth;
	const char *says;	 /* in the message */
	const char *from2, *to2; /* a second edit, or NULL */
};

static void test_lies(void **state)
{
	static const struct lie lies[] = {
		{"offset past the frame", "\"_lOffset\":56",
		 "\"_lOffset\":65534", 0,
		 "frame type 'tick', member 'count': offset 65534 + size 4 "
		 "is past"},
		{"offset out of range", "\"_lOffset\":56", "\"_lOffset\":70000",
		 0, "member 'count': offset is not an integer"},
		{"offset past the end", "\"_lOffset\":56", "\"_lOffset\":64", 0,
		 "frame type 'io': is 64 bytes, 'tick' is 68"},
		{"size 0", "\"_lSize\":8,\"_lKind\":{\"tag\":\"LKMember\"",
		 "\"_lSize\":0,\"_lKind\":{\"tag\":\"LKMember\"", 0,
		 "frame type 'tick', member 'load': size is not an integer"},
		{"size of the wrong type",
		 "\"_lSize\":8,\"_lKind\":{\"tag\":\"LKMember\"",
		 "\"_lSize\":4,\"_lKind\":{\"tag\":\"LKMember\"", 1,
		 "frame type 'io', member 'cost_0_start': a counter member is "
		 "8 bytes, not 4"},
		{"type count 10^9", "\"LKTypeDescrim\",\"contents\":2",
		 "\"LKTypeDescrim\",\"contents\":1000000000", 0,
		 "frame type 'tick', member '__ppt_type': counts 1000000000 "
		 "frame types, the description has 2"},
		{"overlapping the back seqno", "\"_lOffset\":56",
		 "\"_lOffset\":58", 1,
		 "frame type 'io', member '__ppt_seqno_back': offset 60 (4 "
		 "bytes) overlaps member 'fd'"},
		{"overlapping the front seqno", "\"_lOffset\":48",
		 "\"_lOffset\":2", 0,
		 "member 'load': offset 2 (8 bytes) overlaps member "
		 "'__ppt_seqno'"},
		{"overlapping padding", "\"_lOffset\":16", "\"_lOffset\":12", 0,
		 "member 'work_start': offset 12 (16 bytes) overlaps member "
		 "'__pad_8'"},
		{"two members at one offset", "\"_lOffset\":56",
		 "\"_lOffset\":48", 0, "member 'count': offset 48"},
		{"frames of different sizes", "\"_lOffset\":60",
		 "\"_lOffset\":64", 1,
		 "frame type 'io': is 68 bytes, 'tick' is 64"},
		{"control char in a name", "\"_lName\":\"load\"",
		 "\"_lName\":\"lo\\u001bad\"", 0,
		 "frame type 'tick', member 6: name has a control"},
		{"non-ASCII name", "\"_lName\":\"load\"",
		 "\"_lName\":\"lo\\u00e9d\"", 0,
		 "member 6: name has a control"},
		{"empty name", "\"_lName\":\"load\"", "\"_lName\":\"\"", 0,
		 "member 6: name is empty"},
		{"long name", "\"_lName\":\"load\"",
		 "\"_lName\":\"0123456789012345678901234567890123456789"
		 "012345678901234567890123\"",
		 0, "member 6: name is longer than 63"},
		{"frame name", "\"_flName\":\"io\"", "\"_flName\":\"i\\no\"", 0,
		 "frame type 2: name has a control"},
		{"buffer name", "\"ebName\":\"demo\"", "\"ebName\":\"\\u0007\"",
		 0, "the buffer's name has a control"},
		{"offset 1.5", "\"_lOffset\":48", "\"_lOffset\":1.5", 0,
		 "member 'load': offset is not an integer in 0..65536"},
		{"offset 48.0", "\"_lOffset\":48", "\"_lOffset\":48.0", 0,
		 "member 'load': offset is not an integer"},
		{"negative offset", "\"_lOffset\":48", "\"_lOffset\":-8", 0,
		 "member 'load': offset is not an integer"},
		{"offset 2^63", "\"_lOffset\":48",
		 "\"_lOffset\":9223372036854775808", 0,
		 "member 'load': offset is not an integer"},
		{"offset 2^64+48", "\"_lOffset\":48",
		 "\"_lOffset\":18446744073709551664", 0,
		 "member 'load': offset is not an integer"},
		{"offset a string", "\"_lOffset\":48", "\"_lOffset\":\"48\"", 0,
		 "member 'load': offset is not an integer"},
		{"size missing", "\"_lSize\":4,", "", 0,
		 "member '__ppt_seqno': size is not an integer"},
		{"two front seqnos", "\"BackSeq\"", "\"FrontSeq\"", 0,
		 "frame type 'tick': has 2 front and 0 back seqnos"},
		{"seqno of 8 bytes",
		 "\"_lOffset\":60,\"_lAlignment\":4,\"_lSize\":4",
		 "\"_lOffset\":56,\"_lAlignment\":4,\"_lSize\":8", 0,
		 "member '__ppt_seqno_back': a back_seqno must be a 4-byte "
		 "int"},
		{"no discriminator with 2 types",
		 "\"LKTypeDescrim\",\"contents\":2",
		 "\"LKPadding\",\"contents\":4", 1,
		 "frame type 'io': has 0 type discriminators, needs one"},
		{"back seqno elsewhere", "\"_lOffset\":56", "\"_lOffset\":60",
		 0,
		 "frame type 'io': has its seqnos or discriminator at other "
		 "offsets than 'tick'",
		 "\"_lOffset\":60,\"_lAlignment\":4,\"_lSize\":4,\"_lKind\":{"
		 "\"tag\":\"LKSeqno\"",
		 "\"_lOffset\":56,\"_lAlignment\":4,\"_lSize\":4,\"_lKind\":{"
		 "\"tag\":\"LKSeqno\""},
		{"unknown type", "\"PPDouble\"", "\"PPQuad\"", 0,
		 "member 'load': unknown _lType \"PRational\" \"PPQuad\""},
		{"unknown kind", "\"LKPadding\"", "\"LKMystery\"", 0,
		 "member '__pad_8': unknown _lKind \"LKMystery\""},
		{"counter index 3", T_COUNTER(2), T_COUNTER(3), 0,
		 "member 'cost_2_start': counter index is not an integer in "
		 "0..2"},
		{"counter index past tCounterCount", "\"tCounterCount\":3",
		 "\"tCounterCount\":2", 0,
		 "member 'cost_2_start': counter index is not an integer in "
		 "0..1"},
		{"tCounterCount 4", "\"tCounterCount\":3",
		 "\"tCounterCount\":4", 0,
		 "target.tCounterCount is not an integer in 1..3"},
		{"32-bit time", "\"tTime\":16", "\"tTime\":8", 0,
		 "target.tTime is not 16"},
		{"no frames", "\"frames\":[", "\"frames\":[],\"x\":[", 0,
		 "has 0 frame types"},
		{"frames not a list", "\"frames\":[", "\"frames\":{},\"x\":[",
		 0, "has 0 frame types"},
		{"no member list", "\"_flLayout\"", "\"_flLayoutX\"", 0,
		 "frame type 'tick': has no member list"},
		{"frame not an object", "\"frames\":[", "\"frames\":[1,", 0,
		 "frame type 1: is not an object"},
		{"member not an object", "\"_flLayout\":[",
		 "\"_flLayout\":[[],", 0,
		 "frame type 'tick', member 1: is not an object"},
	};
	struct ppt_desc d;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		const struct lie *l = &lies[i];
		char *s = replace_nth(pptdesc_demo_generator, l->from, l->to,
				      l->nth);
		enum pptdesc_status st;

		if (l->from2) {
			char *t = replace(s, l->from2, l->to2);

			free(s);
			s = t;
		}

		memset(&d, 0xa5, sizeof(d));
		err[0] = '\0';
		st = parse(s, &d, err, sizeof(err));
		if (st != PPTDESC_BAD_LAYOUT || !strstr(err, l->says))
			fail_msg("%s: status %d, \"%s\", want \"%s\"", l->what,
				 st, err, l->says);
		assert_null(d.types);
		assert_int_equal(d.ntypes, 0);
		pptdesc_finish(&d);
		free(s);
	}
}

/* 100 frame types: refused before any is read. */
static void test_too_many_types(void **state)
{
	size_t cap = 100 * sizeof(TICK_FRAME) + 1024;
	char *s = malloc(cap), err[256] = "";
	struct ppt_desc d;
	size_t n;

	(void)state;
	n = (size_t)snprintf(s, cap, "{\"abi\":\"1.0.0\",\"frames\":[");
	for (int i = 0; i < 100; i++)
		n += (size_t)snprintf(s + n, cap - n, "%s" TICK_FRAME,
				      i ? "," : "");
	snprintf(s + n, cap - n, "]}");
	assert_int_equal(parse(s, &d, err, sizeof(err)), PPTDESC_BAD_LAYOUT);
	assert_string_equal(err, "the description has 100 frame types, "
				 "corotop reads 1..64");
	assert_null(d.types);
	free(s);
}

static void test_flags(void **state)
{
	struct ppt_desc d;
	char err[256] = "", *s, *t;

	(void)state;
	s = replace(pptdesc_demo_generator, "\"value\":\"client/1\"}",
		    "\"value\":\"client/1\"},{\"key\":\"resize\",\"value\":"
		    "\"on\"},{\"key\":\"corotop\",\"value\":\"rendezvous/1\"}");
	t = replace(s, "\"ETimeSpec\"", "\"ETimeVal\"");
	assert_int_equal(parse(t, &d, err, sizeof(err)), PPTDESC_OK);
	assert_true(d.resize);
	assert_true(d.rendezvous);
	assert_true(d.timeval);
	pptdesc_finish(&d);
	free(s);
	free(t);

	/* resize as a boolean, in the plain spelling */
	s = replace(pptdesc_demo_plain, "\"emit\":{}",
		    "\"emit\":{\"resize\":true}");
	assert_int_equal(parse(s, &d, err, sizeof(err)), PPTDESC_OK);
	assert_true(d.resize);
	assert_false(d.rendezvous);
	pptdesc_finish(&d);
	free(s);
	s = replace(pptdesc_demo_plain, "\"emit\":{}",
		    "\"emit\":{\"resize\":\"on\"}");
	assert_int_equal(parse(s, &d, err, sizeof(err)), PPTDESC_OK);
	assert_false(d.resize);
	pptdesc_finish(&d);
	free(s);
	s = replace(pptdesc_demo_generator, "{\"abi\"",
		    "{\"resize\":true,\"abi\"");
	assert_int_equal(parse(s, &d, err, sizeof(err)), PPTDESC_OK);
	assert_true(d.resize);
	pptdesc_finish(&d);
	free(s);
}

/* One type: no discriminator; keys nobody knows are ignored everywhere. */
static void test_one_type_extra_keys(void **state)
{
	/* clang-format off */
	static const char one[] =
		"{\"abi\":\"1.0.0\",\"future\":{\"x\":[1,2]},\"buffer\":{"
		"\"frames\":[{\"name\":\"f\",\"colour\":\"red\",\"members\":["
		P("s", "int", 0, 4, "front_seqno", ",\"why\":null") ","
		P("v", "float", 4, 4, "member", ",\"unit\":\"m\"") ","
		P("c", "counter", 8, 8, "member", ",\"counter\":0") ","
		P("c", "counter", 16, 8, "member", ",\"counter\":1") ","
		P("b", "byte", 24, 1, "member", "") ","
		P("p", "byte", 25, 3, "padding", "") ","
		P("e", "int", 28, 4, "back_seqno", "") "]}]}}";
	/* clang-format on */
	static const struct want_col cols[] = {
		{"v", PPT_T_FLOAT, false, 1, 1},
		{"c[0]", PPT_T_COUNTER, false, 2, 2},
		{"c[1]", PPT_T_COUNTER, false, 3, 3},
		{"b", PPT_T_BYTE, false, 4, 4},
	};
	struct ppt_desc d;
	char err[256] = "";

	(void)state;
	if (parse(one, &d, err, sizeof(err)) != PPTDESC_OK)
		fail_msg("%s", err);
	assert_int_equal(d.ntypes, 1);
	assert_int_equal(d.type_off, UINT32_MAX);
	assert_int_equal(d.frame_size, 32);
	assert_int_equal(d.back_off, 28);
	assert_string_equal(d.name, "");
	assert_int_equal(d.types[0].ncols, 4);
	for (int i = 0; i < 4; i++) {
		assert_string_equal(d.types[0].cols[i].name, cols[i].name);
		assert_int_equal(d.types[0].cols[i].type, cols[i].type);
		assert_int_equal(d.types[0].cols[i].begin, cols[i].begin);
		assert_int_equal(d.types[0].cols[i].interval, false);
	}
	assert_int_equal(d.types[0].members[2].counter, 0);
	assert_int_equal(d.types[0].members[3].counter, 1);
	pptdesc_finish(&d);
}

/* Members listed out of order are sorted by offset; a begin without its
 * end stays a plain column under its own name. */
static void test_order_and_unpaired(void **state)
{
	/* clang-format off */
	static const char desc[] =
		"{\"abi\":\"1.0.0\",\"frames\":[{\"_flName\":\"t\","
		"\"_flLayout\":["
		MEMBER(T_INT, 40, 4, 4, K_SEQ("BackSeq"), "back") ","
		MEMBER(T_TIME, 24, 16, 16,
		       K_FM("PTime", "b", "true", SIDE("IntEnd", 0, 1)),
		       "b_end") ","
		MEMBER(T_TIME, 8, 16, 16,
		       K_FM("PTime", "b", "true", SIDE("IntBegin", 0, 1)),
		       "b_start") ","
		MEMBER(T_INT, 0, 4, 4, K_SEQ("FrontSeq"), "front") ","
		MEMBER(T_INT, 4, 4, 4,
		       K_FM("PInt", "a", "true", SIDE("IntBegin", 0, 1)),
		       "a_start") "]}]}";
	/* clang-format on */
	struct ppt_desc d;
	char err[256] = "";
	const struct ppt_layout *l;

	(void)state;
	if (parse(desc, &d, err, sizeof(err)) != PPTDESC_OK)
		fail_msg("%s", err);
	l = &d.types[0];
	assert_int_equal(d.frame_size, 44);
	assert_int_equal(d.front_off, 0);
	assert_int_equal(d.back_off, 40);
	assert_string_equal(l->members[0].name, "front");
	assert_string_equal(l->members[1].name, "a_start");
	assert_string_equal(l->members[2].name, "b_start");
	assert_string_equal(l->members[3].name, "b_end");
	assert_string_equal(l->members[4].name, "back");
	assert_int_equal(l->ncols, 2);
	assert_string_equal(l->cols[0].name, "a_start");
	assert_false(l->cols[0].interval);
	assert_int_equal(l->cols[0].begin, 1);
	assert_int_equal(l->cols[0].end, 1);
	assert_string_equal(l->cols[1].name, "b");
	assert_true(l->cols[1].interval);
	assert_int_equal(l->cols[1].begin, 2);
	assert_int_equal(l->cols[1].end, 3);
	pptdesc_finish(&d);
}

/* The generator's counters without an interval: tCounterCount members all
 * named after the counter, told apart by their index. */
static void test_generator_counters(void **state)
{
	/* clang-format off */
	static const char desc[] =
		"{\"abi\":\"1.0.0\",\"target\":{\"tCounterCount\":3},"
		"\"frames\":[{\"_flName\":\"t\",\"_flLayout\":["
		MEMBER(T_INT, 0, 4, 4, K_SEQ("FrontSeq"), "__ppt_seqno") ","
		MEMBER(T_COUNTER(0), 8, 8, 8,
		       K_FM("PCounter", "c", "false", "null"), "c") ","
		MEMBER(T_COUNTER(1), 16, 8, 8,
		       K_FM("PCounter", "c", "false", "null"), "c") ","
		MEMBER(T_COUNTER(2), 24, 8, 8,
		       K_FM("PCounter", "c", "false", "null"), "c") ","
		MEMBER(T_INT, 32, 4, 4, K_SEQ("BackSeq"), "__ppt_seqno_back")
		"]}]}";
	/* clang-format on */
	struct ppt_desc d;
	char err[256] = "";
	const struct ppt_layout *l;

	(void)state;
	if (parse(desc, &d, err, sizeof(err)) != PPTDESC_OK)
		fail_msg("%s", err);
	l = &d.types[0];
	assert_int_equal(d.frame_size, 36);
	assert_int_equal(d.counter_count, 3);
	assert_int_equal(l->ncols, 3);
	for (int i = 0; i < 3; i++) {
		char want[8];

		snprintf(want, sizeof(want), "c[%d]", i);
		assert_string_equal(l->cols[i].name, want);
		assert_int_equal(l->cols[i].type, PPT_T_COUNTER);
		assert_false(l->cols[i].interval);
		assert_int_equal(l->cols[i].begin, i + 1);
		assert_int_equal(l->members[i + 1].counter, i);
	}
	pptdesc_finish(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generator_example),
		cmocka_unit_test(test_plain_spelling),
		cmocka_unit_test(test_abi),
		cmocka_unit_test(test_not_json),
		cmocka_unit_test(test_lies),
		cmocka_unit_test(test_too_many_types),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_one_type_extra_keys),
		cmocka_unit_test(test_order_and_unpaired),
		cmocka_unit_test(test_generator_counters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
