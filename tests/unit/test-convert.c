/*
 * test-convert: a Heph trace rewritten for other tools
 * (src/convert/convert.c), on traces built in memory and written with
 * convert_write into open_memstream.
 *
 * chrome  the output is parsed by the strict checker (tests/common):
 *         every trace event has its keys, ts/dur are exact microseconds
 *         with nanosecond decimals, one process per traced program and
 *         one track per coroutine (a reused probe id is a new one, named
 *         by name, WHERE or id; migrations as args and flows; the chrome
 *         and jsonl summaries agree), starts on a track are nudged 1 ns
 *         apart (counted), integers
 *         beyond 2^53 are strings, arrays of every type are arrays, NaN
 *         and infinities are null, strings with quotes, backslashes,
 *         control characters, NUL and bad UTF-8 decode to the right text,
 *         repeated attribute names get "#2", "#3".
 * jsonl   coroTracer's shape, byte for byte: one line per interval in
 *         start order, two per foreign span, losses counted not written.
 * folded  parked stacks weighted by their nanoseconds, outermost first,
 *         named by the callback (recorded names through hephnames,
 *         sanitized, as corotop convert does) or in hex.
 * speedscope  the profile folded gives, as a speedscope file: parsed
 *         strictly, each sample (root first) is one of folded's lines
 *         with its weight, in the same order, the frames are folded's
 *         words, endValue is folded's total, the name the recorded
 *         command's.
 * errors  an unknown format; an output that can not be written (every
 *         format says so, none says "out of memory").
 */
#define _GNU_SOURCE
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/jsonstr.h"
#include "convert/convert.h"
#include "engine/symbols/framenames.h"
#include "engine/names/symname.h"
#include "engine/heph/heph.h"
#include "engine/heph/hephnames.h"
#include "json-check.h"

static uint8_t buf[1 << 16];

/* ---- building traces ---- */

static void put(struct heph_enc *e, const void *p, size_t n)
{
	assert_true(e->len + n <= e->cap);
	memcpy(e->buf + e->len, p, n);
	e->len += n;
}

static void put16(struct heph_enc *e, uint16_t v)
{
	uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};

	put(e, b, 2);
}

static void put64(struct heph_enc *e, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (56 - 8 * i));
	put(e, b, 8);
}

/* An attribute's name and type, by hand (the encoder has no i64 or
 * string arrays, and no strings with a NUL in them). */
static void attr_head(struct heph_enc *e, const char *name, size_t nlen,
		      uint8_t type)
{
	assert_true(e->open);
	put16(e, (uint16_t)nlen);
	put(e, name, nlen);
	put(e, &type, 1);
}

static void attr_rawstr(struct heph_enc *e, const char *name, const char *s,
			size_t len)
{
	attr_head(e, name, strlen(name), HEPH_STR);
	put16(e, (uint16_t)len);
	put(e, s, len);
}

static void attr_i64s(struct heph_enc *e, const char *name, const int64_t *v,
		      size_t n)
{
	attr_head(e, name, strlen(name), HEPH_ARRAY | HEPH_I64);
	put16(e, (uint16_t)n);
	for (size_t i = 0; i < n; i++)
		put64(e, (uint64_t)v[i]);
}

/* An array of n strings, each NUL-terminated in s. */
static void attr_strs(struct heph_enc *e, const char *name,
		      const char *const *s, size_t n)
{
	attr_head(e, name, strlen(name), HEPH_ARRAY | HEPH_STR);
	put16(e, (uint16_t)n);
	for (size_t i = 0; i < n; i++) {
		put16(e, (uint16_t)strlen(s[i]));
		put(e, s[i], strlen(s[i]));
	}
}

/* An event with a description of len raw bytes. */
static void ev_raw(struct heph_enc *e, uint32_t stream, uint64_t sub,
		   uint64_t start, uint64_t end, const char *desc, size_t len)
{
	char fill[256];

	assert_true(len < sizeof(fill));
	memset(fill, 'x', len);
	fill[len] = 0;
	assert_true(heph_enc_event_begin(e, stream, 0, sub, start, end, fill));
	memcpy(e->buf + e->start + HEPH_EVENT_FIXED, desc, len);
}

static void ev(struct heph_enc *e, uint32_t stream, uint64_t sub,
	       uint64_t start, uint64_t end, const char *desc)
{
	ev_raw(e, stream, sub, start, end, desc, strlen(desc));
}

static void ev_end(struct heph_enc *e)
{
	assert_true(heph_enc_event_end(e) > 0);
}

static void index_bytes(struct heph_file *f, const struct heph_enc *e)
{
	char err[128] = "";

	assert_false(e->overflow);
	if (!heph_file_index_bytes(f, e->buf, e->len, err, sizeof(err)))
		fail_msg("index: %s", err);
	assert_int_equal(f->nproblems, 0);
}

/* f as `to`, NUL-terminated (free it). */
static char *convert(const struct heph_file *f, enum convert_to to,
		     convert_name_fn fn, void *ctx, struct convert_stats *st)
{
	char *s = NULL, err[128] = "";
	size_t len = 0;
	FILE *out = open_memstream(&s, &len);

	assert_non_null(out);
	if (!convert_write(f, to, out, fn, ctx, st, err, sizeof(err)))
		fail_msg("convert_write: %s", err);
	fclose(out);
	return s;
}

/* ---- chrome ---- */

static const struct jv *item(const struct jv *a, size_t i)
{
	assert_int_equal(a->t, J_ARR);
	assert_true(i < a->n);
	return &a->items[i];
}

static void want_num(const struct jv *v, const char *path, const char *text)
{
	const struct jv *m = json_need(v, path, J_NUM);

	if (strcmp(m->s, text))
		fail_msg("%s is %s, want %s", path, m->s, text);
}

static void want_str(const struct jv *v, const char *path, const char *text)
{
	const struct jv *m = json_need(v, path, J_STR);

	if (m->len != strlen(text) || memcmp(m->s, text, m->len))
		fail_msg("%s is \"%s\", want \"%s\"", path, m->s, text);
}

static const char *m_name(const struct jv *evs, const char *what, uint64_t pid,
			  uint64_t tid);

/* Every trace event has the keys its phase needs (the Trace Event
 * Format's: name, ph, pid, tid; ts and dur for X, id and ts for the flow
 * phases s and f; args.name or args.sort_index for M); a track's X events
 * start in order; every pid and tid used is named by an M event.  nm:
 * process_name and thread_name events, nx: X events.  Returns the events. */
static const struct jv *chrome_events(const struct jv *root, size_t *nm,
				      size_t *nx)
{
	const struct jv *evs = json_need(root, "traceEvents", J_ARR);

	want_str(root, "displayTimeUnit", "ns");
	*nm = *nx = 0;
	for (size_t i = 0; i < evs->n; i++) {
		const struct jv *x = item(evs, i);
		const struct jv *ph = json_need(x, "ph", J_STR);
		const char *name = json_need(x, "name", J_STR)->s;
		uint64_t pid = json_u64(x, "pid"), tid = json_u64(x, "tid");

		if (!strcmp(ph->s, "M")) {
			if (!strcmp(name, "thread_sort_index")) {
				json_u64(x, "args.sort_index");
			} else {
				json_need(x, "args.name", J_STR);
				++*nm;
			}
			continue;
		}
		json_need(x, "ts", J_NUM);
		m_name(evs, "process_name", pid, 0);
		m_name(evs, "thread_name", pid, tid);
		m_name(evs, "thread_sort_index", pid, tid);
		if (!strcmp(ph->s, "s") || !strcmp(ph->s, "f")) {
			json_u64(x, "id");
			json_need(x, "cat", J_STR);
			if (!strcmp(ph->s, "f"))
				want_str(x, "bp", "e");
			continue;
		}
		assert_string_equal(ph->s, "X");
		json_need(x, "dur", J_NUM);
		json_need(x, "args", J_OBJ);
		/* In order on its track: the first X before on the same
		 * track starts no later. */
		for (size_t j = i; j-- > 0;) {
			const struct jv *y = &evs->items[j];

			if (strcmp(json_get(y, "ph")->s, "X") ||
			    json_u64(y, "pid") != pid ||
			    json_u64(y, "tid") != tid)
				continue;
			assert_true(json_get(y, "ts")->num <=
				    json_get(x, "ts")->num);
			break;
		}
		++*nx;
	}
	return evs;
}

/* The X event named `name` (the first). */
static const struct jv *x_named(const struct jv *evs, const char *name)
{
	for (size_t i = 0; i < evs->n; i++) {
		const struct jv *x = &evs->items[i];

		if (!strcmp(json_get(x, "ph")->s, "X") &&
		    !strcmp(json_get(x, "name")->s, name))
			return x;
	}
	fail_msg("no X event named %s", name);
	return NULL;
}

/* The M event naming (pid, tid) as `what` (process_name, thread_name). */
static const char *m_name(const struct jv *evs, const char *what, uint64_t pid,
			  uint64_t tid)
{
	const char *found = NULL;

	for (size_t i = 0; i < evs->n; i++) {
		const struct jv *x = &evs->items[i];

		if (strcmp(json_get(x, "ph")->s, "M") ||
		    strcmp(json_get(x, "name")->s, what) ||
		    json_u64(x, "pid") != pid || json_u64(x, "tid") != tid)
			continue;
		if (found)
			fail_msg("%s of %llu/%llu twice", what,
				 (unsigned long long)pid,
				 (unsigned long long)tid);
		found = json_get(x, "args.name")
				? json_get(x, "args.name")->s
				: json_get(x, "args.sort_index")->s;
	}
	if (!found)
		fail_msg("no %s for %llu/%llu", what, (unsigned long long)pid,
			 (unsigned long long)tid);
	return found;
}

/* The tid of the track named `name` (its thread_name) in process pid. */
static uint64_t tid_named(const struct jv *evs, uint64_t pid, const char *name)
{
	for (size_t i = 0; i < evs->n; i++) {
		const struct jv *x = &evs->items[i];

		if (!strcmp(json_get(x, "ph")->s, "M") &&
		    !strcmp(json_get(x, "name")->s, "thread_name") &&
		    json_u64(x, "pid") == pid &&
		    !strcmp(json_get(x, "args.name")->s, name))
			return json_u64(x, "tid");
	}
	fail_msg("no track named %s", name);
	return 0;
}

/* Another writer's trace: one process, a track per (stream, substream). */
static void test_chrome_shape(void **state)
{
	struct convert_stats st;
	struct heph_file f;
	struct heph_enc e;
	struct jv root;
	const struct jv *evs, *x;
	size_t nm, nx;
	char *out;

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_epoch(&e, 1700000000000000000ull));
	ev(&e, 1, 0, 1000, 3500, "poll");
	assert_true(heph_enc_u64(&e, "n", 7));
	ev_end(&e);
	ev(&e, 1, 5, 1234567, 1240000, "task");
	ev_end(&e);
	ev(&e, 2, 5, 2000, 2000, "mark");
	ev_end(&e);
	ev(&e, 1, 0, 5000, 6000, "poll2");
	ev_end(&e);
	ev(&e, 2, 1ull << 40, 7000, 8000, "big");
	ev_end(&e);
	ev(&e, 3, 1ull << 41, 7000, 8000, "bigger");
	ev_end(&e);
	ev(&e, 3, 1ull << 41, 9000, 8000, "backwards");
	ev_end(&e);
	index_bytes(&f, &e);
	out = convert(&f, CONVERT_CHROME, NULL, NULL, &st);
	json_must_parse(out, &root);
	evs = chrome_events(&root, &nm, &nx);
	assert_int_equal(nm, 1 + 5); /* the program, 5 (stream, substream) */
	assert_int_equal(nx, 7);
	assert_int_equal(st.events, 7);
	assert_int_equal(st.written, 7);
	assert_int_equal(st.nudged, 0);
	assert_int_equal(st.skipped, 0);
	assert_int_equal(st.coroutines, 5);
	assert_int_equal(st.streams, 3);
	assert_int_equal(st.migrations, 0);
	assert_string_equal(m_name(evs, "process_name", 1, 0), "Heph trace");
	/* Tracks in order of their first start, from 2 (pid 1 is the
	 * program's main thread), sorted that way. */
	assert_int_equal(tid_named(evs, 1, "substream 0 (stream 1)"), 2);
	assert_int_equal(tid_named(evs, 1, "substream 5 (stream 2)"), 3);
	assert_int_equal(
		tid_named(evs, 1, "substream 1099511627776 (stream 2)"), 4);
	assert_int_equal(
		tid_named(evs, 1, "substream 2199023255552 (stream 3)"), 5);
	assert_int_equal(tid_named(evs, 1, "substream 5 (stream 1)"), 6);
	assert_string_equal(m_name(evs, "thread_sort_index", 1, 2), "0");
	assert_string_equal(m_name(evs, "thread_sort_index", 1, 6), "4");

	x = x_named(evs, "poll");
	assert_int_equal(json_u64(x, "pid"), 1);
	assert_int_equal(json_u64(x, "tid"), 2);
	want_num(x, "ts", "1.000");
	want_num(x, "dur", "2.500");
	assert_int_equal(json_u64(x, "args.n"), 7);
	assert_int_equal(json_u64(x, "args.stream"), 1);
	assert_null(json_get(x, "args.os_tid")); /* not corotop's */
	x = x_named(evs, "task");
	assert_int_equal(json_u64(x, "tid"), 6);
	want_num(x, "ts", "1234.567");
	want_num(x, "dur", "5.433");
	assert_int_equal(json_need(x, "args", J_OBJ)->n, 1);
	x = x_named(evs, "mark");
	assert_int_equal(json_u64(x, "pid"), 1);
	assert_int_equal(json_u64(x, "args.stream"), 2);
	want_num(x, "ts", "2.000");
	want_num(x, "dur", "0.000");
	x = x_named(evs, "big");
	assert_int_equal(json_u64(x, "tid"), 4);
	want_num(x, "ts", "7.000");
	want_num(x, "dur", "1.000");
	x = x_named(evs, "backwards"); /* ends before it starts */
	want_num(x, "dur", "0.000");
	json_free(&root);
	free(out);
	heph_file_close(&f);
}

/* Equal starts on one track: 1 ns apart, same ends; not across tracks. */
static void test_chrome_nudge(void **state)
{
	struct convert_stats st;
	struct heph_file f;
	struct heph_enc e;
	struct jv root;
	const struct jv *evs;
	size_t nm, nx;
	char *out;

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	ev(&e, 1, 1, 1000, 2000, "a");
	ev_end(&e);
	ev(&e, 1, 1, 1000, 1500, "b");
	ev_end(&e);
	ev(&e, 1, 2, 1000, 1100, "d");
	ev_end(&e);
	ev(&e, 1, 1, 1000, 1800, "c");
	ev_end(&e);
	/* Later than the others' start, not than where they were moved. */
	ev(&e, 1, 1, 1001, 1900, "i");
	ev_end(&e);
	ev(&e, 2, 1, 1000, 1000, "e");
	ev_end(&e);
	ev(&e, 2, 1, 1000, 1000, "f");
	ev_end(&e);
	/* At the end of time there is no later nanosecond. */
	ev(&e, 3, 1, UINT64_MAX, UINT64_MAX, "g");
	ev_end(&e);
	ev(&e, 3, 1, UINT64_MAX, UINT64_MAX, "h");
	ev_end(&e);
	index_bytes(&f, &e);
	out = convert(&f, CONVERT_CHROME, NULL, NULL, &st);
	json_must_parse(out, &root);
	evs = chrome_events(&root, &nm, &nx);
	assert_int_equal(nx, 9);
	assert_int_equal(st.nudged, 4);
	want_num(x_named(evs, "a"), "ts", "1.000");
	want_num(x_named(evs, "a"), "dur", "1.000");
	want_num(x_named(evs, "b"), "ts", "1.001");
	want_num(x_named(evs, "b"), "dur", "0.499");
	want_num(x_named(evs, "c"), "ts", "1.002");
	want_num(x_named(evs, "c"), "dur", "0.798");
	want_num(x_named(evs, "i"), "ts", "1.003");
	want_num(x_named(evs, "i"), "dur", "0.897");
	want_num(x_named(evs, "d"), "ts", "1.000");
	want_num(x_named(evs, "e"), "ts", "1.000");
	want_num(x_named(evs, "f"), "ts", "1.001");
	want_num(x_named(evs, "f"), "dur", "0.000");
	want_num(x_named(evs, "g"), "ts", "18446744073709551.615");
	want_num(x_named(evs, "h"), "ts", "18446744073709551.615");
	json_free(&root);
	free(out);
	heph_file_close(&f);
}

static void test_chrome_values(void **state)
{
	static const int64_t ia[] = {-1, 5, INT64_MIN};
	static const char *const sa[] = {"a", "q\"b\\", "", "\xff"};
	const uint64_t ua[] = {1, 1ull << 60};
	const double fa[] = {1.5, NAN, -INFINITY};
	const uint64_t exact = 1ull << 53;
	struct convert_stats st;
	struct heph_file f;
	struct heph_enc e;
	struct jv root;
	const struct jv *x, *a;
	size_t nm, nx;
	char *out;

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	ev(&e, 1, 1, 0, 10, "values");
	assert_true(heph_enc_u64(&e, "small", exact - 1));
	assert_true(heph_enc_u64(&e, "big", exact));
	assert_true(heph_enc_u64(&e, "max", UINT64_MAX));
	assert_true(heph_enc_i64(&e, "neg", -(int64_t)(exact - 1)));
	assert_true(heph_enc_i64(&e, "negbig", -(int64_t)exact));
	assert_true(heph_enc_i64(&e, "min", INT64_MIN));
	assert_true(heph_enc_f64(&e, "half", 0.5));
	assert_true(heph_enc_f64(&e, "tenth", 0.1));
	assert_true(heph_enc_f64(&e, "nan", NAN));
	assert_true(heph_enc_f64(&e, "inf", INFINITY));
	assert_true(heph_enc_f64(&e, "ninf", -INFINITY));
	assert_true(heph_enc_u64_array(&e, "ua", ua, 2));
	attr_i64s(&e, "ia", ia, 3);
	assert_true(heph_enc_f64_array(&e, "fa", fa, 3));
	attr_strs(&e, "sa", sa, 4);
	assert_true(heph_enc_u64_array(&e, "ea", NULL, 0));
	assert_true(heph_enc_u64(&e, "x", 1));
	assert_true(heph_enc_str(&e, "x", "two"));
	assert_true(heph_enc_u64(&e, "x", 3));
	ev_end(&e);
	index_bytes(&f, &e);
	out = convert(&f, CONVERT_CHROME, NULL, NULL, &st);
	json_must_parse(out, &root);
	x = x_named(chrome_events(&root, &nm, &nx), "values");
	assert_int_equal(nx, 1);
	want_num(x, "args.small", "9007199254740991");
	want_str(x, "args.big", "9007199254740992");
	want_str(x, "args.max", "18446744073709551615");
	want_num(x, "args.neg", "-9007199254740991");
	want_str(x, "args.negbig", "-9007199254740992");
	want_str(x, "args.min", "-9223372036854775808");
	assert_true(json_need(x, "args.half", J_NUM)->num == 0.5);
	assert_true(json_need(x, "args.tenth", J_NUM)->num == 0.1);
	json_need(x, "args.nan", J_NULL);
	json_need(x, "args.inf", J_NULL);
	json_need(x, "args.ninf", J_NULL);
	a = json_need(x, "args.ua", J_ARR);
	assert_int_equal(a->n, 2);
	assert_string_equal(item(a, 0)->s, "1");
	assert_int_equal(item(a, 1)->t, J_STR);
	assert_string_equal(item(a, 1)->s, "1152921504606846976");
	a = json_need(x, "args.ia", J_ARR);
	assert_int_equal(a->n, 3);
	assert_string_equal(item(a, 0)->s, "-1");
	assert_string_equal(item(a, 1)->s, "5");
	assert_int_equal(item(a, 2)->t, J_STR);
	assert_string_equal(item(a, 2)->s, "-9223372036854775808");
	a = json_need(x, "args.fa", J_ARR);
	assert_int_equal(a->n, 3);
	assert_true(item(a, 0)->num == 1.5);
	assert_int_equal(item(a, 1)->t, J_NULL);
	assert_int_equal(item(a, 2)->t, J_NULL);
	a = json_need(x, "args.sa", J_ARR);
	assert_int_equal(a->n, 4);
	assert_string_equal(item(a, 0)->s, "a");
	assert_string_equal(item(a, 1)->s, "q\"b\\");
	assert_string_equal(item(a, 2)->s, "");
	assert_string_equal(item(a, 3)->s, "\xef\xbf\xbd");
	assert_int_equal(json_need(x, "args.ea", J_ARR)->n, 0);
	/* Repeated names: numbered, none lost. */
	assert_int_equal(json_u64(x, "args.x"), 1);
	want_str(x, "args.x#2", "two");
	assert_int_equal(json_u64(x, "args.x#3"), 3);
	assert_int_equal(json_need(x, "args", J_OBJ)->n, 19 + 1); /* stream */
	json_free(&root);
	free(out);
	heph_file_close(&f);
}

/* Many attributes (more than 32: their duplicates are found by sorting)
 * number repeated names in order, as few do: 40 attributes, names
 * "n0".."n9" four times each, value = position. */
static void test_chrome_many_attrs(void **state)
{
	struct convert_stats st;
	struct heph_file f;
	struct heph_enc e;
	struct jv root;
	const struct jv *x;
	size_t nm, nx;
	char *out, path[16], name[8];

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	ev(&e, 1, 1, 0, 10, "many");
	for (unsigned i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "n%u", i % 10);
		assert_true(heph_enc_u64(&e, name, i));
	}
	ev_end(&e);
	index_bytes(&f, &e);
	out = convert(&f, CONVERT_CHROME, NULL, NULL, &st);
	json_must_parse(out, &root);
	x = x_named(chrome_events(&root, &nm, &nx), "many");
	assert_int_equal(json_need(x, "args", J_OBJ)->n, 40 + 1);
	for (unsigned i = 0; i < 40; i++) {
		if (i < 10)
			snprintf(path, sizeof(path), "args.n%u", i);
		else
			snprintf(path, sizeof(path), "args.n%u#%u", i % 10,
				 i / 10 + 1);
		assert_int_equal(json_u64(x, path), i);
	}
	json_free(&root);
	free(out);
	heph_file_close(&f);
}

/* Raw bytes and what a JSON reader must get back from them. */
static const char raw_text[] =
	"q\"b\\n\n\x01\0\x7f"
	"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" /* e acute, euro, emoji */
	"\xff"				       /* never in UTF-8 */
	"\xe2\x82\x41"			       /* cut short, then 'A' */
	"\xc0\xaf"			       /* overlong '/' */
	"\xe0\x80\x80"			       /* overlong NUL */
	"\xed\xa0\x80"			       /* a surrogate */
	"\xf4\x90\x80\x80"		       /* beyond U+10FFFF */
	"\xf0\x80\x80\x80z";		       /* overlong, 4 bytes */
/* Each byte of a bad sequence is one U+FFFD (EF BF BD). */
static const char raw_decoded[] =
	"q\"b\\n\n\x01\0\x7f"
	"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
	"\xef\xbf\xbd"
	"\xef\xbf\xbd\xef\xbf\xbd\x41"
	"\xef\xbf\xbd\xef\xbf\xbd"
	"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
	"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
	"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
	"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz";

static void want_raw(const struct jv *v)
{
	assert_int_equal(v->t, J_STR);
	assert_int_equal(v->len, sizeof(raw_decoded) - 1);
	assert_memory_equal(v->s, raw_decoded, v->len);
}

static void test_chrome_strings(void **state)
{
	static const char key[] = "k\"\x01\xff";
	struct convert_stats st;
	struct heph_file f;
	struct heph_enc e;
	struct jv root;
	const struct jv *x, *args;
	size_t nm, nx;
	char *out, *s;
	size_t len;
	FILE *m;

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	ev_raw(&e, 1, 1, 0, 10, raw_text, sizeof(raw_text) - 1);
	attr_rawstr(&e, "s", raw_text, sizeof(raw_text) - 1);
	attr_head(&e, key, sizeof(key) - 1, HEPH_U64);
	put64(&e, 42);
	ev_end(&e);
	index_bytes(&f, &e);
	out = convert(&f, CONVERT_CHROME, NULL, NULL, &st);
	json_must_parse(out, &root);
	x = item(chrome_events(&root, &nm, &nx), 1);
	want_raw(json_need(x, "name", J_STR));
	args = json_need(x, "args", J_OBJ);
	assert_int_equal(args->n, 3);
	assert_string_equal(args->keys[0], "s");
	want_raw(&args->items[0]);
	assert_string_equal(args->keys[1], "k\"\x01\xef\xbf\xbd");
	json_free(&root);
	free(out);
	heph_file_close(&f);

	/* jsonstr_write (common/jsonstr.h) as convert uses it: whole bytes,
	 * empty, the last byte a lead byte. */
	m = open_memstream(&s, &len);
	jsonstr_write(m, "", 0);
	fputc(' ', m);
	jsonstr_write(m, "ab\xc3", 3);
	fputc(' ', m);
	jsonstr_write(m, "\xf0\x9f\x98\x80", 4);
	fclose(m);
	assert_string_equal(s, "\"\" \"ab\\ufffd\" \"\xf0\x9f\x98\x80\"");
	free(s);
}

/* ---- coroutines of a corotop recording ---- */

static void meta_u64s(struct heph_enc *e, const char *option, uint64_t a,
		      uint64_t b, uint64_t c, size_t n)
{
	uint8_t v[24];
	const uint64_t x[3] = {a, b, c};

	for (size_t k = 0; k < n; k++)
		for (int i = 0; i < 8; i++)
			v[8 * k + (size_t)i] = (uint8_t)(x[k] >> (56 - 8 * i));
	assert_true(heph_enc_meta(e, option, v, 8 * n));
}

static void meta_name(struct heph_enc *e, uint64_t id, const char *name)
{
	uint8_t v[8 + 47];
	size_t n = strlen(name);

	assert_true(n <= 47);
	for (int i = 0; i < 8; i++)
		v[i] = (uint8_t)(id >> (56 - 8 * i));
	memcpy(v + 8, name, n);
	assert_true(heph_enc_meta(e, "corotop_name", v, 8 + n));
}

/* An interval of a corotop recording, maybe with a symbol. */
static void civ(struct heph_enc *e, uint32_t os_tid, uint64_t probe,
		uint64_t start, uint64_t stop, bool running, const char *sym)
{
	ev(e, os_tid, probe, start, stop, running ? "running" : "suspended");
	assert_true(heph_enc_u64(e, "addr", 0xA0));
	assert_true(heph_enc_u64(e, "seq", start));
	if (sym)
		assert_true(heph_enc_str(e, "symbol", sym));
	ev_end(e);
}

static const char *stack_name(void *ctx, uint64_t addr, bool leaf)
{
	(void)ctx;
	return addr == 0xAAA && leaf ? "parked_in_stack" : NULL;
}

/* A recording of six coroutines, on three OS threads:
 *   id 1 "acceptor" (probe 0x5000) runs on 101, parks, runs on 102;
 *   id 3, probe 0x5000 again (born at 1000), unnamed, parks at reader;
 *   id 2 (probe 0x6000) parks at worker_wait, runs on 101 both times;
 *   id 4 (probe 0x7000) parks on a stack only the name callback knows;
 *   probe 0x8000 was never born (no id);
 * and the recorder's own losses (stream 0, substream 0). */
static void build_recording(struct heph_enc *e)
{
	heph_enc_init(e, buf, sizeof(buf));
	assert_true(heph_enc_meta(e, "corotop", "1", 1));
	assert_true(heph_enc_meta(e, "corotop_command", "./prog -x\x01", 10));
	meta_u64s(e, "corotop_pid", 4242, 0, 0, 1);
	meta_u64s(e, "corotop_birth", 0x5000, 100, 1, 3);
	meta_name(e, 1, "acceptor");
	meta_u64s(e, "corotop_birth", 0x6000, 100, 2, 3);
	meta_u64s(e, "corotop_birth", 0x7000, 100, 4, 3);
	meta_u64s(e, "corotop_birth", 0x5000, 1000, 3, 3);
	/* File order is end order, as the recorder writes them. */
	civ(e, 101, 0x8000, 50, 60, true, NULL);
	civ(e, 103, 0x7000, 100, 120, true, NULL);
	civ(e, 101, 0x5000, 100, 200, true, NULL);
	civ(e, 101, 0x6000, 150, 250, true, NULL);
	civ(e, 101, 0x5000, 200, 300, false, "park_here+0x1 (a.c:1)");
	civ(e, 102, 0x5000, 300, 400, true, NULL);
	ev(e, 101, 0x6000, 250, 500, "suspended");
	assert_true(heph_enc_u64(e, "os_tid", 1)); /* a key of ours */
	assert_true(heph_enc_str(e, "symbol", "worker_wait+0x3 (c.c:3)"));
	ev_end(e);
	civ(e, 101, 0x6000, 500, 600, true, "not_the_first");
	ev(e, 0, 0, 700, 700, "lost");
	assert_true(heph_enc_u64(e, "count", 3));
	ev_end(e);
	ev(e, 103, 0x7000, 120, 900, "suspended");
	{
		const uint64_t stack[] = {0xAAA, 0xBBB};

		assert_true(heph_enc_u64_array(e, "stack", stack, 2));
	}
	ev_end(e);
	civ(e, 102, 0x5000, 400, 1000, false, "later+0x9 (a.c:9)");
	civ(e, 102, 0x5000, 1000, 1100, true, NULL);
	civ(e, 102, 0x5000, 1100, 1200, false, "reader+0x2 (b.c:2)");
}

static void test_chrome_coroutines(void **state)
{
	struct convert_stats st, sj;
	struct heph_file f;
	struct heph_enc e;
	struct jv root;
	const struct jv *evs, *x, *s = NULL, *fl = NULL;
	uint64_t acc, reader, worker, stacked, probe, own;
	size_t nm, nx;
	char *out, *jl, a[200], b[200];

	(void)state;
	build_recording(&e);
	index_bytes(&f, &e);
	out = convert(&f, CONVERT_CHROME, stack_name, NULL, &st);
	json_must_parse(out, &root);
	evs = chrome_events(&root, &nm, &nx);
	assert_int_equal(nx, 13);
	assert_int_equal(nm, 1 + 6);
	/* One process: the program, by its pid. */
	assert_string_equal(m_name(evs, "process_name", 4242, 0),
			    "./prog -x? (pid 4242)");
	/* A track per coroutine, named by name, else WHERE, else number. */
	acc = tid_named(evs, 4242, "acceptor");
	reader = tid_named(evs, 4242, "reader+0x2 (b.c:2)");
	worker = tid_named(evs, 4242, "worker_wait+0x3 (c.c:3)");
	stacked = tid_named(evs, 4242, "parked_in_stack");
	probe = tid_named(evs, 4242, "coroutine 8000");
	own = tid_named(evs, 4242, "corotop");
	assert_true(acc != reader); /* a reused probe id: a new track */
	/* Numbered in order of first start. */
	assert_int_equal(probe, 1);
	assert_int_equal(stacked, 2);
	assert_int_equal(acc, 3);
	assert_int_equal(worker, 4);
	assert_int_equal(own, 5);
	assert_int_equal(reader, 6);
	assert_string_equal(m_name(evs, "thread_sort_index", 4242, reader),
			    "5");
	for (size_t i = 0; i < evs->n; i++) {
		x = &evs->items[i];
		assert_int_equal(json_u64(x, "pid"), 4242);
		if (!strcmp(json_get(x, "ph")->s, "s"))
			s = x;
		if (!strcmp(json_get(x, "ph")->s, "f"))
			fl = x;
		if (strcmp(json_get(x, "ph")->s, "X"))
			continue;
		if (!strcmp(json_get(x, "name")->s, "lost")) {
			assert_int_equal(json_u64(x, "tid"), own);
			continue;
		}
		/* Every slice: the OS thread it ran on; a named one's name. */
		json_u64(x, "args.os_tid");
		if (json_u64(x, "tid") == acc)
			want_str(x, "args.coroutine", "acceptor");
		else
			assert_null(json_get(x, "args.coroutine"));
		if (json_u64(x, "tid") == reader)
			assert_int_equal(json_u64(x, "args.os_tid"), 102);
	}
	/* The one migration: acceptor from 101 to 102, as an arg of the
	 * slice it arrived in and as a flow from the one it left. */
	assert_non_null(s);
	assert_non_null(fl);
	assert_int_equal(json_u64(s, "id"), json_u64(fl, "id"));
	assert_int_equal(json_u64(s, "tid"), acc);
	assert_int_equal(json_u64(fl, "tid"), acc);
	want_num(s, "ts", "0.100");
	want_num(fl, "ts", "0.300");
	for (size_t i = 0; i < evs->n; i++) {
		x = &evs->items[i];
		if (strcmp(json_get(x, "ph")->s, "X"))
			continue;
		if (json_u64(x, "tid") == acc &&
		    !strcmp(json_get(x, "ts")->s, "0.300")) {
			assert_int_equal(json_u64(x, "args.migrated_from"),
					 101);
			assert_int_equal(json_u64(x, "args.os_tid"), 102);
		} else {
			assert_null(json_get(x, "args.migrated_from"));
		}
	}
	/* The packet's own os_tid stays, ours is left out (no key twice:
	 * the parser refuses that). */
	for (size_t i = 0; i < evs->n; i++) {
		x = &evs->items[i];
		if (!strcmp(json_get(x, "ph")->s, "X") &&
		    json_u64(x, "tid") == worker &&
		    !strcmp(json_get(x, "ts")->s, "0.250"))
			assert_int_equal(json_u64(x, "args.os_tid"), 1);
	}
	assert_int_equal(st.events, 13);
	assert_int_equal(st.written, 13);
	assert_int_equal(st.coroutines, 5); /* not the recorder's own */
	assert_int_equal(st.streams, 3);
	assert_int_equal(st.migrations, 1);
	assert_int_equal(st.lost, 3);
	json_free(&root);

	/* jsonl counts the same file the same way, and names only the
	 * lines of the coroutine that has the name. */
	jl = convert(&f, CONVERT_JSONL, NULL, NULL, &sj);
	assert_string_equal(convert_summary(&st, a, sizeof(a)),
			    "13 events, 5 coroutines on 3 streams, "
			    "1 migrations, 3 lost");
	assert_string_equal(convert_summary(&sj, b, sizeof(b)), a);
	assert_int_equal(sj.written, 12);
	for (char *line = strtok(jl, "\n"); line; line = strtok(NULL, "\n")) {
		struct jv v;
		uint64_t ts;

		json_must_parse(line, &v);
		ts = json_u64(&v, "ts");
		if (json_u64(&v, "probe_id") == 0x5000 && ts < 1000)
			want_str(&v, "name", "acceptor");
		else
			assert_null(json_get(&v, "name"));
		json_free(&v);
	}
	free(jl);
	free(out);
	/* The same file twice: the same bytes (a stable order). */
	out = convert(&f, CONVERT_CHROME, stack_name, NULL, &st);
	jl = convert(&f, CONVERT_CHROME, stack_name, NULL, &st);
	assert_string_equal(out, jl);
	free(jl);
	free(out);
	heph_file_close(&f);
}

/* An unknown format, and an output that can not be written. */
static void test_write_errors(void **state)
{
	struct convert_stats st;
	struct heph_file f;
	struct heph_enc e;
	char err[128] = "";
	FILE *full;

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	for (uint64_t i = 0; i < 200; i++) {
		ev(&e, 1, 1, 10 * i, 10 * i + 5, "suspended");
		assert_true(heph_enc_u64_array(&e, "stack", &i, 1));
		ev_end(&e);
	}
	index_bytes(&f, &e);
	assert_false(convert_write(&f, (enum convert_to)42, stdout, NULL, NULL,
				   &st, err, sizeof(err)));
	assert_string_equal(err, "unknown format");
	full = fopen("/dev/full", "w");
	if (full) {
		for (size_t k = 0; k < convert_nformats; k++) {
			err[0] = 0;
			assert_false(convert_write(&f, convert_formats[k].to,
						   full, NULL, NULL, &st, err,
						   sizeof(err)));
			if (!strstr(err, "writing the output"))
				fail_msg("%s: %s", convert_formats[k].name,
					 err);
		}
		fclose(full);
	}
	heph_file_close(&f);
}

/* ---- jsonl ---- */

static void iv(struct heph_enc *e, uint32_t stream, uint64_t sub,
	       uint64_t start, uint64_t stop, bool running, uint64_t addr,
	       uint64_t seq)
{
	ev(e, stream, sub, start, stop, running ? "running" : "suspended");
	assert_true(heph_enc_u64(e, "addr", addr));
	assert_true(heph_enc_u64(e, "seq", seq));
	ev_end(e);
}

static void test_jsonl(void **state)
{
	static const char want[] =
		"{\"probe_id\":7,\"tid\":101,\"addr\":\"0x00000000000000a1\","
		"\"seq\":2,\"is_active\":true,\"ts\":10}\n"
		"{\"probe_id\":8,\"tid\":102,\"addr\":\"0xffffffffffffffff\","
		"\"seq\":18446744073709551615,\"is_active\":true,\"ts\":20}\n"
		"{\"probe_id\":7,\"tid\":101,\"addr\":\"0x00000000000000a2\","
		"\"seq\":4,\"is_active\":false,\"ts\":30}\n"
		"{\"probe_id\":9,\"tid\":2,\"addr\":\"0x0000000000000000\","
		"\"seq\":0,\"is_active\":true,\"ts\":50}\n"
		"{\"probe_id\":9,\"tid\":2,\"addr\":\"0x0000000000000000\","
		"\"seq\":0,\"is_active\":false,\"ts\":70}\n";
	struct convert_stats st;
	struct heph_file f;
	struct heph_enc e;
	char *out, *line;

	(void)state;
	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_meta(&e, "corotop", "1", 1));
	iv(&e, 101, 7, 30, 40, false, 0xA2, 4);
	iv(&e, 101, 7, 10, 30, true, 0xA1, 2);
	ev(&e, 101, 7, 35, 35, "lost");
	assert_true(heph_enc_u64(&e, "count", 5));
	ev_end(&e);
	ev(&e, 2, 9, 50, 70, "poll");
	ev_end(&e);
	iv(&e, 102, 8, 20, 60, true, UINT64_MAX, UINT64_MAX);
	index_bytes(&f, &e);
	out = convert(&f, CONVERT_JSONL, NULL, NULL, &st);
	assert_string_equal(out, want);
	assert_int_equal(st.events, 5);
	assert_int_equal(st.written, 5);
	assert_int_equal(st.lost, 5);
	assert_int_equal(st.skipped, 1);
	/* Each line is JSON of its own. */
	for (line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		struct jv v;

		json_must_parse(line, &v);
		assert_int_equal(v.n, 6);
		json_free(&v);
	}
	free(out);
	heph_file_close(&f);

	/* Nothing in, nothing out. */
	assert_true(heph_file_index_bytes(&f, NULL, 0, NULL, 0));
	out = convert(&f, CONVERT_JSONL, NULL, NULL, &st);
	assert_string_equal(out, "");
	free(out);
	out = convert(&f, CONVERT_CHROME, NULL, NULL, &st);
	assert_string_equal(out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":["
				 "\n{\"ph\":\"M\",\"name\":\"process_name\","
				 "\"pid\":1,\"tid\":0,\"args\":{\"name\":"
				 "\"Heph trace\"}}\n]}\n");
	free(out);
	heph_file_close(&f);
}

/* ---- folded and names ---- */

static void sym(struct heph_enc *e, uint64_t addr, const char *name, size_t len)
{
	uint8_t val[8 + 400];

	assert_true(len <= 400);
	for (int i = 0; i < 8; i++)
		val[i] = (uint8_t)(addr >> (56 - 8 * i));
	memcpy(val + 8, name, len);
	assert_true(heph_enc_meta(e, "corotop_symbol", val, 8 + len));
}

/* Like corotop convert: the recorded name of the frame's key, its
 * function only (symname_function_len: a C++ name holds spaces and '+'),
 * in one buffer reused from call to call. */
static const char *name_of(void *ctx, uint64_t addr, bool leaf)
{
	static char one[HEPH_NAME_LEN + 1];
	const char *n = heph_names_find(ctx, framename_key(addr, leaf));

	if (!n)
		return NULL;
	snprintf(one, sizeof(one), "%.*s", (int)symname_function_len(n), n);
	return one;
}

static void parked(struct heph_enc *e, uint64_t start, uint64_t stop,
		   const char *desc, const uint64_t *stack, size_t n)
{
	ev(e, 1, 7, start, stop, desc);
	assert_true(heph_enc_u64(e, "addr", 0x10));
	if (n)
		assert_true(heph_enc_u64_array(e, "stack", stack, n));
	ev_end(e);
}

static size_t build_folded(void)
{
	static const uint64_t deep[] = {0x111, 0x222, 0x333};
	static const uint64_t leaf[] = {0x111};
	static const uint64_t cxx[] = {0x111, 0x444};
	static const char vec[] = "std::vector<int, std::allocator<int> "
				  ">::push_back(int const&)+0x1a (v.cpp:3)";
	struct heph_enc e;

	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_meta(&e, "corotop", "1", 1));
	sym(&e, 0x111, "leaf_fn+0x4 (a.c:3)", 19);
	sym(&e, 0x221, "mid;fn\x01 (b.c:9)", 15);
	sym(&e, 0x333, "", 0); /* no name: ignored */
	sym(&e, 0x443, vec, sizeof(vec) - 1);
	parked(&e, 100, 400, "suspended", deep, 3);
	parked(&e, 500, 600, "suspended", deep, 3);
	parked(&e, 700, 750, "suspended", leaf, 1);
	parked(&e, 0, 100, "running", leaf, 1);	     /* not parked */
	parked(&e, 800, 800, "suspended", leaf, 1);  /* no time */
	parked(&e, 900, 1000, "suspended", NULL, 0); /* no stack */
	parked(&e, 1100, 1120, "suspended", cxx, 2);
	ev(&e, 1, 7, 1000, 1010, "suspended");
	assert_true(heph_enc_u64(&e, "stack", 0x111)); /* not an array */
	ev_end(&e);
	assert_false(e.overflow);
	return e.len;
}

static void test_folded(void **state)
{
	struct convert_stats st;
	struct heph_names names;
	struct heph_file f;
	char err[64];
	char *out;

	(void)state;
	assert_true(heph_file_index_bytes(&f, buf, build_folded(), err,
					  sizeof(err)));
	assert_int_equal(f.nproblems, 0);
	heph_names_init(&names, &f);
	assert_int_equal(names.n, 3);
	out = convert(&f, CONVERT_FOLDED, name_of, &names, &st);
	assert_string_equal(out, "0x333;mid?fn?;leaf_fn 400\n"
				 "leaf_fn 50\n"
				 "std::vector<int, std::allocator<int> "
				 ">::push_back(int const&);leaf_fn 20\n");
	assert_int_equal(st.written, 4);
	assert_int_equal(st.events, 8);
	free(out);
	out = convert(&f, CONVERT_FOLDED, NULL, NULL, &st);
	assert_string_equal(out, "0x111 50\n"
				 "0x333;0x222;0x111 400\n"
				 "0x444;0x111 20\n");
	free(out);
	heph_names_finish(&names);
	heph_file_close(&f);
}

/* The speedscope file of a trace as folded lines: each sample's frame
 * names root first joined by ';', then its weight; *total: endValue. */
static char *speedscope_as_folded(const char *json, const char *name,
				  uint64_t *total)
{
	const struct jv *frames, *prof, *samples, *weights;
	char *s = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&s, &len);
	uint64_t sum = 0;
	struct jv v;

	assert_non_null(m);
	json_must_parse(json, &v);
	want_str(&v, "$schema",
		 "https://www.speedscope.app/file-format-schema.json");
	frames = json_need(&v, "shared.frames", J_ARR);
	prof = json_need(&v, "profiles", J_ARR);
	assert_int_equal(prof->n, 1);
	prof = item(prof, 0);
	want_str(prof, "type", "sampled");
	want_str(prof, "name", name);
	want_str(&v, "name", name);
	samples = json_need(prof, "samples", J_ARR);
	weights = json_need(prof, "weights", J_ARR);
	assert_int_equal(samples->n, weights->n);
	for (size_t i = 0; i < samples->n; i++) {
		const struct jv *smp = item(samples, i);

		assert_int_equal(smp->t, J_ARR);
		for (size_t k = 0; k < smp->n; k++) {
			uint64_t at = json_u64(item(smp, k), "");
			const struct jv *fr = item(frames, (size_t)at);

			assert_null(json_get(fr, "file"));
			fprintf(m, "%s%s", k ? ";" : "",
				json_need(fr, "name", J_STR)->s);
		}
		fprintf(m, " %s\n", item(weights, i)->s);
		sum += json_u64(item(weights, i), "");
	}
	assert_int_equal(sum, json_u64(prof, "endValue"));
	assert_int_equal(json_u64(prof, "startValue"), 0);
	*total = sum;
	/* Every frame is a sample's: no name folded has not. */
	for (size_t f = 0; f < frames->n; f++) {
		bool used = false;

		for (size_t i = 0; i < samples->n && !used; i++)
			for (size_t k = 0; k < samples->items[i].n; k++)
				used |= json_u64(&samples->items[i].items[k],
						 "") == f;
		assert_true(used);
	}
	json_free(&v);
	fclose(m);
	return s;
}

/* The sum of a folded text's weights (each line's last word). */
static uint64_t folded_total(const char *folded)
{
	const char *l = folded, *nl;
	uint64_t sum = 0;

	while ((nl = strchr(l, '\n')) != NULL) {
		const char *w = nl;

		while (w > l && w[-1] != ' ')
			w--;
		sum += strtoull(w, NULL, 10);
		l = nl + 1;
	}
	return sum;
}

static void test_speedscope(void **state)
{
	struct convert_stats st, sf;
	struct heph_names names;
	struct heph_file f;
	struct heph_enc e;
	char err[64], *folded, *json, *got;
	uint64_t total;

	(void)state;
	assert_true(heph_file_index_bytes(&f, buf, build_folded(), err,
					  sizeof(err)));
	heph_names_init(&names, &f);
	/* Named frames, and hex ones: the same words as folded's. */
	for (int named = 1; named >= 0; named--) {
		folded = convert(&f, CONVERT_FOLDED, named ? name_of : NULL,
				 named ? &names : NULL, &sf);
		json = convert(&f, CONVERT_SPEEDSCOPE, named ? name_of : NULL,
			       named ? &names : NULL, &st);
		got = speedscope_as_folded(json, "parked", &total);
		assert_string_equal(got, folded);
		assert_int_equal(total, folded_total(folded));
		assert_int_equal(total, 300 + 100 + 50 + 20);
		assert_int_equal(st.written, sf.written);
		assert_int_equal(st.events, sf.events);
		free(got);
		free(json);
		free(folded);
	}
	heph_names_finish(&names);
	heph_file_close(&f);

	/* A recording says what it traced: the profile's name. */
	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_meta(&e, "corotop", "1", 1));
	assert_true(heph_enc_meta(&e, "corotop_command", "./srv -p\n1", 10));
	parked(&e, 10, 30, "suspended", (const uint64_t[]){0xabc}, 1);
	parked(&e, 40, 45, "suspended", (const uint64_t[]){0xabc}, 1);
	index_bytes(&f, &e);
	json = convert(&f, CONVERT_SPEEDSCOPE, NULL, NULL, &st);
	got = speedscope_as_folded(json, "parked: ./srv -p?1", &total);
	assert_string_equal(got, "0xabc 25\n");
	free(got);
	free(json);
	heph_file_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chrome_shape),
		cmocka_unit_test(test_chrome_nudge),
		cmocka_unit_test(test_chrome_values),
		cmocka_unit_test(test_chrome_many_attrs),
		cmocka_unit_test(test_chrome_strings),
		cmocka_unit_test(test_chrome_coroutines),
		cmocka_unit_test(test_write_errors),
		cmocka_unit_test(test_jsonl),
		cmocka_unit_test(test_folded),
		cmocka_unit_test(test_speedscope),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
