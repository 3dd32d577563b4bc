/*
 * test-pptframe: frames decoded by hand-built descriptions
 * (src/engine/ppt/pptframe.c): seqnos and the type discriminator, every member
 * type, timespec and timeval, intervals (durations that go negative, int
 * and counter deltas that wrap, float intervals), saturation at the int64
 * edges, and the exact strings for people and for JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <locale.h>
#include <math.h>

#include "engine/ppt/pptframe.h"

/* ---- building descriptions ---- */

static void name_set(char *dst, const char *src)
{
	size_t n = strlen(src);

	if (n >= PPTDESC_NAME_MAX)
		n = PPTDESC_NAME_MAX - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static struct ppt_member mem(const char *name, enum ppt_mtype t,
			     enum ppt_interval iv, uint32_t off)
{
	static const uint32_t size[] = {4, 1, 4, 8, 16, 8};
	struct ppt_member m = {.type = t,
			       .kind = PPT_K_MEMBER,
			       .interval = iv,
			       .counter = -1,
			       .offset = off,
			       .size = size[t]};

	name_set(m.name, name);
	return m;
}

static struct ppt_column col(const char *name, enum ppt_mtype t, uint16_t b,
			     int16_t e)
{
	struct ppt_column c = {.type = t,
			       .interval = e >= 0,
			       .begin = b,
			       .end = e >= 0 ? (uint16_t)e : b};

	name_set(c.name, name);
	return c;
}

static void put(unsigned char *f, uint32_t off, const void *v, size_t len)
{
	memcpy(f + off, v, len);
}

static void put_u32(unsigned char *f, uint32_t off, uint32_t v)
{
	put(f, off, &v, 4);
}

static void put_time(unsigned char *f, uint32_t off, int64_t s, int64_t frac)
{
	int64_t t[2] = {s, frac};

	put(f, off, t, sizeof(t));
}

static const char *fmt(const struct ppt_value *v)
{
	static char buf[64];
	size_t n = pptframe_format(v, buf, sizeof(buf));

	assert_int_equal(n, strlen(buf));
	return buf;
}

static const char *json(const struct ppt_value *v)
{
	static char buf[64];
	size_t n = pptframe_json(v, buf, sizeof(buf));

	assert_int_equal(n, strlen(buf));
	return buf;
}

/*
 * One type, every member type:
 *   0 front | 4 int i | 8 time t | 24 double d | 32 counter c | 40 float f
 *   | 44 byte b | 45 pad | 48 back
 */
#define ONE_SIZE 52u
static struct ppt_member one_m[6];
static struct ppt_column one_c[6];
static struct ppt_layout one_l;

static struct ppt_desc one_desc(bool timeval)
{
	struct ppt_desc d = {.timeval = timeval,
			     .frame_size = ONE_SIZE,
			     .front_off = 0,
			     .back_off = 48,
			     .type_off = UINT32_MAX,
			     .counter_count = 3,
			     .types = &one_l,
			     .ntypes = 1};

	one_m[0] = mem("i", PPT_T_INT, PPT_I_NONE, 4);
	one_m[1] = mem("t", PPT_T_TIME, PPT_I_NONE, 8);
	one_m[2] = mem("d", PPT_T_DOUBLE, PPT_I_NONE, 24);
	one_m[3] = mem("c", PPT_T_COUNTER, PPT_I_NONE, 32);
	one_m[4] = mem("f", PPT_T_FLOAT, PPT_I_NONE, 40);
	one_m[5] = mem("b", PPT_T_BYTE, PPT_I_NONE, 44);
	for (uint16_t k = 0; k < 6; k++)
		one_c[k] = col(one_m[k].name, one_m[k].type, k, -1);
	one_l = (struct ppt_layout){
		.members = one_m, .nmembers = 6, .cols = one_c, .ncols = 6};
	name_set(one_l.name, "one");
	return d;
}

static void test_one_type(void **state)
{
	struct ppt_desc d = one_desc(false);
	unsigned char f[ONE_SIZE] = {0};
	struct ppt_value v[8];
	int32_t i = INT32_MIN;
	double nan_ = NAN;
	uint64_t c = UINT64_MAX;
	float fl = 3.25f;

	(void)state;
	put_u32(f, 0, 77);
	put_u32(f, 48, 78);
	put(f, 4, &i, 4);
	put_time(f, 8, 5, 123456789);
	put(f, 24, &nan_, 8);
	put(f, 32, &c, 8);
	put(f, 40, &fl, 4);
	f[44] = 200;
	assert_int_equal(pptframe_front(&d, f), 77);
	assert_int_equal(pptframe_back(&d, f), 78);
	assert_int_equal(pptframe_type(&d, f), 0);
	assert_int_equal(pptframe_decode(&d, 0, f, v, 8), 6);

	assert_int_equal(v[0].kind, PPT_V_INT);
	assert_true(v[0].v.i == INT32_MIN);
	assert_string_equal(fmt(&v[0]), "-2147483648");
	assert_string_equal(json(&v[0]), "-2147483648");

	assert_int_equal(v[1].kind, PPT_V_TIME);
	assert_true(v[1].v.i == 5123456789ll);
	assert_string_equal(fmt(&v[1]), "5.123456789s");
	assert_string_equal(json(&v[1]), "5123456789");

	assert_int_equal(v[2].kind, PPT_V_FLOAT);
	assert_true(isnan(v[2].v.f));
	assert_string_equal(fmt(&v[2]), "nan");
	assert_string_equal(json(&v[2]), "null");

	assert_int_equal(v[3].kind, PPT_V_UINT);
	assert_true(v[3].v.u == UINT64_MAX);
	assert_string_equal(fmt(&v[3]), "18446744073709551615");
	assert_string_equal(json(&v[3]), "18446744073709551615");

	assert_int_equal(v[4].kind, PPT_V_FLOAT);
	assert_true(v[4].v.f == 3.25);
	assert_string_equal(fmt(&v[4]), "3.25");
	assert_string_equal(json(&v[4]), "3.25");

	/* A byte is unsigned. */
	assert_int_equal(v[5].kind, PPT_V_INT);
	assert_true(v[5].v.i == 200);
	assert_string_equal(fmt(&v[5]), "200");

	/* max < ncols: only max values. */
	memset(v, 0xa5, sizeof(v));
	assert_int_equal(pptframe_decode(&d, 0, f, v, 2), 2);
	assert_true(v[1].v.i == 5123456789ll);
	assert_true(v[2].v.u == 0xa5a5a5a5a5a5a5a5ull);
	/* A type that is not there decodes nothing. */
	assert_int_equal(pptframe_decode(&d, 1, f, v, 8), 0);
	assert_int_equal(pptframe_decode(&d, -1, f, v, 8), 0);
}

static void test_times(void **state)
{
	struct ppt_desc d = one_desc(false);
	unsigned char f[ONE_SIZE] = {0};
	struct ppt_value v[6];

	(void)state;
	/* Past 2000-01-01: a UTC time of day.  1700000000 is 22:13:20. */
	put_time(f, 8, 1700000000, 5);
	pptframe_decode(&d, 0, f, v, 6);
	assert_true(v[1].v.i == 1700000000000000005ll);
	assert_string_equal(fmt(&v[1]), "22:13:20.000000005");
	assert_string_equal(json(&v[1]), "1700000000000000005");
	/* 2000-01-01 itself is not later than it: seconds. */
	put_time(f, 8, 946684800, 0);
	pptframe_decode(&d, 0, f, v, 6);
	assert_string_equal(fmt(&v[1]), "946684800.000000000s");
	put_time(f, 8, 946684800, 1);
	pptframe_decode(&d, 0, f, v, 6);
	assert_string_equal(fmt(&v[1]), "00:00:00.000000001");
	/* Negative (a clock before its epoch, or lies). */
	put_time(f, 8, -1, -500000000);
	pptframe_decode(&d, 0, f, v, 6);
	assert_true(v[1].v.i == -1500000000ll);
	assert_string_equal(fmt(&v[1]), "-1.500000000s");
	/* Saturation, never overflow. */
	put_time(f, 8, INT64_MAX, 999999999);
	pptframe_decode(&d, 0, f, v, 6);
	assert_true(v[1].v.i == INT64_MAX);
	put_time(f, 8, INT64_MAX / 1000000000, INT64_MAX);
	pptframe_decode(&d, 0, f, v, 6);
	assert_true(v[1].v.i == INT64_MAX);
	put_time(f, 8, INT64_MIN, -1);
	pptframe_decode(&d, 0, f, v, 6);
	assert_true(v[1].v.i == INT64_MIN);
	assert_string_equal(fmt(&v[1]), "-9223372036.854775808s");
	assert_string_equal(json(&v[1]), "-9223372036854775808");
	put_time(f, 8, 0, INT64_MIN);
	pptframe_decode(&d, 0, f, v, 6);
	assert_true(v[1].v.i == INT64_MIN);

	/* timeval: the second word is microseconds. */
	d = one_desc(true);
	put_time(f, 8, 2, 500000);
	pptframe_decode(&d, 0, f, v, 6);
	assert_true(v[1].v.i == 2500000000ll);
	assert_string_equal(fmt(&v[1]), "2.500000000s");
	put_time(f, 8, 0, INT64_MAX);
	pptframe_decode(&d, 0, f, v, 6);
	assert_true(v[1].v.i == INT64_MAX);
	put_time(f, 8, 0, INT64_MIN / 100);
	pptframe_decode(&d, 0, f, v, 6);
	assert_true(v[1].v.i == INT64_MIN);
}

/*
 * Two types with a discriminator:
 *   a: 0 front | 4 type | 8 int x | 12 pad | 20 back
 *   b: 0 front | 4 type | 8 double y | 16 byte z | 17 pad | 20 back
 */
static void test_two_types(void **state)
{
	struct ppt_member am[1], bm[2];
	struct ppt_column ac[1], bc[2];
	struct ppt_layout l[2];
	struct ppt_desc d = {.frame_size = 24,
			     .front_off = 0,
			     .back_off = 20,
			     .type_off = 4,
			     .types = l,
			     .ntypes = 2};
	unsigned char f[24] = {0};
	struct ppt_value v[4];
	int32_t x = -7;
	double y = 0.1;

	(void)state;
	am[0] = mem("x", PPT_T_INT, PPT_I_NONE, 8);
	ac[0] = col("x", PPT_T_INT, 0, -1);
	bm[0] = mem("y", PPT_T_DOUBLE, PPT_I_NONE, 8);
	bm[1] = mem("z", PPT_T_BYTE, PPT_I_NONE, 16);
	bc[0] = col("y", PPT_T_DOUBLE, 0, -1);
	bc[1] = col("z", PPT_T_BYTE, 1, -1);
	l[0] = (struct ppt_layout){.name = "a",
				   .members = am,
				   .nmembers = 1,
				   .cols = ac,
				   .ncols = 1};
	l[1] = (struct ppt_layout){.name = "b",
				   .members = bm,
				   .nmembers = 2,
				   .cols = bc,
				   .ncols = 2};

	put_u32(f, 4, 1);
	put(f, 8, &x, 4);
	assert_int_equal(pptframe_type(&d, f), 0);
	assert_int_equal(pptframe_decode(&d, 0, f, v, 4), 1);
	assert_true(v[0].kind == PPT_V_INT && v[0].v.i == -7);
	assert_string_equal(fmt(&v[0]), "-7");

	put_u32(f, 4, 2);
	put(f, 8, &y, 8);
	f[16] = 9;
	assert_int_equal(pptframe_type(&d, f), 1);
	assert_int_equal(pptframe_decode(&d, 1, f, v, 4), 2);
	assert_true(v[0].kind == PPT_V_FLOAT && v[0].v.f == 0.1);
	assert_string_equal(fmt(&v[0]), "0.1");
	assert_string_equal(json(&v[0]), "0.10000000000000001");
	assert_true(v[1].kind == PPT_V_INT && v[1].v.i == 9);

	/* Discriminators out of 1..ntypes are errors, not indexes. */
	put_u32(f, 4, 0);
	assert_int_equal(pptframe_type(&d, f), -1);
	put_u32(f, 4, 3);
	assert_int_equal(pptframe_type(&d, f), -1);
	put_u32(f, 4, UINT32_MAX);
	assert_int_equal(pptframe_type(&d, f), -1);
	/* A discriminator that does not fit in the frame. */
	d.type_off = 21;
	put_u32(f, 4, 1);
	assert_int_equal(pptframe_type(&d, f), -1);
	/* No types at all. */
	d.type_off = UINT32_MAX;
	d.ntypes = 0;
	assert_int_equal(pptframe_type(&d, f), -1);
}

/*
 * Intervals and an unpaired begin:
 *   8 time tb | 24 time te | 40 int ib | 44 int ie | 48 counter cb
 *   | 56 counter ce | 64 double db | 72 double de | 80 byte bb | 81 byte be
 *   | 84 int lone (a begin without its end) | 88 back
 */
#define IV_SIZE 92u
static struct ppt_desc iv_desc(struct ppt_member *m, struct ppt_column *c,
			       struct ppt_layout *l, bool timeval)
{
	m[0] = mem("work_start", PPT_T_TIME, PPT_I_BEGIN, 8);
	m[1] = mem("work_end", PPT_T_TIME, PPT_I_END, 24);
	m[2] = mem("n_start", PPT_T_INT, PPT_I_BEGIN, 40);
	m[3] = mem("n_end", PPT_T_INT, PPT_I_END, 44);
	m[4] = mem("c_start", PPT_T_COUNTER, PPT_I_BEGIN, 48);
	m[5] = mem("c_end", PPT_T_COUNTER, PPT_I_END, 56);
	m[6] = mem("x_start", PPT_T_DOUBLE, PPT_I_BEGIN, 64);
	m[7] = mem("x_end", PPT_T_DOUBLE, PPT_I_END, 72);
	m[8] = mem("b_start", PPT_T_BYTE, PPT_I_BEGIN, 80);
	m[9] = mem("b_end", PPT_T_BYTE, PPT_I_END, 81);
	m[10] = mem("lone_start", PPT_T_INT, PPT_I_BEGIN, 84);
	c[0] = col("work", PPT_T_TIME, 0, 1);
	c[1] = col("n", PPT_T_INT, 2, 3);
	c[2] = col("c", PPT_T_COUNTER, 4, 5);
	c[3] = col("x", PPT_T_DOUBLE, 6, 7);
	c[4] = col("b", PPT_T_BYTE, 8, 9);
	c[5] = col("lone_start", PPT_T_INT, 10, -1);
	*l = (struct ppt_layout){.name = "iv",
				 .members = m,
				 .nmembers = 11,
				 .cols = c,
				 .ncols = 6};
	return (struct ppt_desc){.timeval = timeval,
				 .frame_size = IV_SIZE,
				 .front_off = 0,
				 .back_off = 88,
				 .type_off = UINT32_MAX,
				 .types = l,
				 .ntypes = 1};
}

static void test_intervals(void **state)
{
	struct ppt_member m[11];
	struct ppt_column c[6];
	struct ppt_layout l;
	struct ppt_desc d = iv_desc(m, c, &l, false);
	unsigned char f[IV_SIZE] = {0};
	struct ppt_value v[6];
	int32_t ib = INT32_MAX, ie = INT32_MIN, lone = 12;
	uint64_t cb = UINT64_MAX - 1, ce = 3;
	double db = 1.5, de = 0.25;

	(void)state;
	put_time(f, 8, 10, 0);
	put_time(f, 24, 10, 1500000);
	put(f, 40, &ib, 4);
	put(f, 44, &ie, 4);
	put(f, 48, &cb, 8);
	put(f, 56, &ce, 8);
	put(f, 64, &db, 8);
	put(f, 72, &de, 8);
	f[80] = 250;
	f[81] = 5;
	put(f, 84, &lone, 4);
	assert_int_equal(pptframe_decode(&d, 0, f, v, 6), 6);

	assert_int_equal(v[0].kind, PPT_V_DURATION);
	assert_true(v[0].v.i == 1500000);
	assert_string_equal(fmt(&v[0]), "1.5ms");
	assert_string_equal(json(&v[0]), "1500000");

	assert_int_equal(v[1].kind, PPT_V_DELTA);
	assert_true(v[1].v.i == -4294967295ll);
	assert_string_equal(fmt(&v[1]), "-4294967295");
	assert_string_equal(json(&v[1]), "-4294967295");

	/* A counter that wrapped: its increment. */
	assert_int_equal(v[2].kind, PPT_V_DELTA);
	assert_true(v[2].v.i == 5);
	assert_string_equal(fmt(&v[2]), "+5");
	assert_string_equal(json(&v[2]), "5");

	assert_int_equal(v[3].kind, PPT_V_FLOAT);
	assert_true(v[3].v.f == -1.25);
	assert_string_equal(fmt(&v[3]), "-1.25");

	assert_int_equal(v[4].kind, PPT_V_DELTA);
	assert_true(v[4].v.i == -245);
	assert_string_equal(fmt(&v[4]), "-245");

	assert_int_equal(v[5].kind, PPT_V_INT);
	assert_true(v[5].v.i == 12);
	assert_string_equal(fmt(&v[5]), "12");

	/* A negative duration (end before begin). */
	put_time(f, 8, 12, 0);
	put_time(f, 24, 10, 500000000);
	pptframe_decode(&d, 0, f, v, 6);
	assert_true(v[0].kind == PPT_V_DURATION && v[0].v.i == -1500000000ll);
	assert_string_equal(fmt(&v[0]), "-1.5s");
	assert_string_equal(json(&v[0]), "-1500000000");
	/* Saturated at both ends: INT64_MIN - INT64_MAX stays INT64_MIN. */
	put_time(f, 8, INT64_MAX, 0);
	put_time(f, 24, INT64_MIN, 0);
	pptframe_decode(&d, 0, f, v, 6);
	assert_true(v[0].v.i == INT64_MIN);
	assert_string_equal(fmt(&v[0]), "-106751d23h");
	put_time(f, 8, INT64_MIN, 0);
	put_time(f, 24, INT64_MAX, 0);
	pptframe_decode(&d, 0, f, v, 6);
	assert_true(v[0].v.i == INT64_MAX);
	/* Counters: a delta past INT64_MAX reads negative (modulo 2^64). */
	cb = 0;
	ce = UINT64_MAX;
	put(f, 48, &cb, 8);
	put(f, 56, &ce, 8);
	pptframe_decode(&d, 0, f, v, 6);
	assert_true(v[2].v.i == -1);
	assert_string_equal(fmt(&v[2]), "-1");
	cb = ce = 42;
	put(f, 48, &cb, 8);
	put(f, 56, &ce, 8);
	pptframe_decode(&d, 0, f, v, 6);
	assert_string_equal(fmt(&v[2]), "+0");

	/* timeval intervals */
	d = iv_desc(m, c, &l, true);
	put_time(f, 8, 1, 999999);
	put_time(f, 24, 2, 1);
	pptframe_decode(&d, 0, f, v, 6);
	assert_true(v[0].v.i == 2000ll);
	assert_string_equal(fmt(&v[0]), "2.0us");
}

static void test_lies(void **state)
{
	struct ppt_member m[11];
	struct ppt_column c[6];
	struct ppt_layout l;
	struct ppt_desc d = iv_desc(m, c, &l, false);
	unsigned char f[IV_SIZE];
	struct ppt_value v[6];

	(void)state;
	memset(f, 0xff, sizeof(f));
	/* A member past the frame reads as zero; a column naming a member
	 * the layout lacks is a zero int; a type outside the enum too. */
	m[0].offset = IV_SIZE - 8;
	m[1].offset = UINT32_MAX - 4;
	c[1].end = 200;
	m[10].type = (enum ppt_mtype)99;
	assert_int_equal(pptframe_decode(&d, 0, f, v, 6), 6);
	assert_true(v[0].kind == PPT_V_DURATION && v[0].v.i == 0);
	assert_true(v[1].kind == PPT_V_INT && v[1].v.i == 0);
	assert_true(v[5].kind == PPT_V_INT && v[5].v.i == 0);
	/* Seqnos past the frame read 0. */
	d.front_off = IV_SIZE - 3;
	d.back_off = UINT32_MAX;
	assert_int_equal(pptframe_front(&d, f), 0);
	assert_int_equal(pptframe_back(&d, f), 0);
}

static void test_format(void **state)
{
	struct ppt_value v;
	char buf[64];

	(void)state;
	v = (struct ppt_value){.kind = PPT_V_FLOAT, .v.f = INFINITY};
	assert_string_equal(fmt(&v), "inf");
	assert_string_equal(json(&v), "null");
	v.v.f = -INFINITY;
	assert_string_equal(fmt(&v), "-inf");
	assert_string_equal(json(&v), "null");
	v.v.f = 1e300;
	assert_string_equal(fmt(&v), "1e+300");
	assert_string_equal(json(&v), "1.0000000000000001e+300");
	v.v.f = 123456789.0;
	assert_string_equal(fmt(&v), "1.23457e+08");
	assert_string_equal(json(&v), "123456789");
	v = (struct ppt_value){.kind = PPT_V_DELTA, .v.i = 42};
	assert_string_equal(fmt(&v), "+42");
	assert_string_equal(json(&v), "42");
	v = (struct ppt_value){.kind = PPT_V_DURATION, .v.i = 850};
	assert_string_equal(fmt(&v), "850ns");
	v.v.i = 185000000000ll;
	assert_string_equal(fmt(&v), "3m05s");
	v = (struct ppt_value){.kind = PPT_V_INT, .v.i = INT64_MIN};
	assert_string_equal(fmt(&v), "-9223372036854775808");

	/* Truncated, always terminated, the length is what was written. */
	v.v.i = -2147483648ll;
	assert_int_equal(pptframe_format(&v, buf, 4), 3);
	assert_string_equal(buf, "-21");
	assert_int_equal(pptframe_json(&v, buf, 1), 0);
	assert_string_equal(buf, "");
	buf[0] = 'x';
	assert_int_equal(pptframe_format(&v, buf, 0), 0);
	assert_int_equal(buf[0], 'x');
	v = (struct ppt_value){.kind = PPT_V_FLOAT, .v.f = NAN};
	assert_int_equal(pptframe_format(&v, buf, 3), 2);
	assert_string_equal(buf, "na");
	/* A kind outside the enum. */
	v.kind = (enum ppt_vkind)42;
	assert_string_equal(fmt(&v), "?");
	assert_string_equal(json(&v), "null");
}

/* JSON numbers stay JSON under a locale with a decimal comma. */
static void test_json_locale(void **state)
{
	struct ppt_value v = {.kind = PPT_V_FLOAT, .v.f = -2.5e-7};
	static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8",
					    "fr_FR.UTF-8", "fr_FR.utf8"};
	const char *got = NULL;

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !got; i++)
		got = setlocale(LC_NUMERIC, names[i]);
	if (!got) {
		skip();
		return;
	}
	assert_string_equal(json(&v), "-2.4999999999999999e-07");
	v.v.f = 0.5;
	assert_string_equal(json(&v), "0.5");
	setlocale(LC_NUMERIC, "C");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_type),
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_two_types),
		cmocka_unit_test(test_intervals),
		cmocka_unit_test(test_lies),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_json_locale),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
