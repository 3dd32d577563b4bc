/*
 * batch: the no-curses output (src/ui/batch/batch.c) and the per-event
 * JSON-lines log (src/engine/export/jsonl.c).  A hand-built snapshot is
 * printed; the JSON is parsed by the small strict RFC 8259 parser of
 * tests/common/json-check.h (itself checked here to reject bad input, saying
 * why and where) and its keys, types and values are compared with the snapshot.
 * Text output must have the header and one row per coroutine; jsonl lines
 * must match the upstream engine's record shape byte for byte.
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
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/export/jsonl.h"
#include "ui/batch/batch.h"

#include "json-check.h"

/* ---- snapshot fixture ---- */

static struct snapshot snap;

static int setup(void **state)
{
	struct model_coro *c;

	(void)state;
	snapshot_init(&snap);
	snap.ts = 5000000000ull;
	snap.wall_ns = 1700000000000000000ull;
	snap.t.events = 1234;
	snap.t.lost = 5;
	snap.t.untraced = 6;
	snap.t.torn = 7;
	snap.t.events_per_sec = 99.25;
	snap.t.stations_allocated = 3;
	snap.t.stations_max = 4096;
	snap.t.running = 1;
	snap.t.dead = 1;
	snap.t.coroutines_seen = 2;
	snap.target.pid = 42;
	snap.target.running = true;
	snap.coro = c = calloc(3, sizeof(*c));
	snap.count = 2;
	snap.cap = 3;
	c[0].id = 1;
	c[0].probe_id = 0xABC;
	c[0].station = 3;
	c[0].state = MODEL_RUNNING;
	c[0].last_tid = 4242;
	c[0].last_addr = 0xDEADBEEF;
	c[0].last_seq = 42;
	c[0].switches = 20;
	c[0].lost = 2;
	c[0].sw_per_sec = 12.0;
	c[0].birth_ts = 1000000000ull;
	c[0].state_ts = 4000000000ull;
	c[0].run_ns = c[0].susp_ns = 1000000000ull;
	c[1].id = 2;
	c[1].probe_id = UINT64_MAX;
	c[1].state = MODEL_DEAD;
	c[1].last_tid = 7;
	c[1].switches = 1;
	c[1].birth_ts = 2000000000ull;
	c[1].state_ts = c[1].dead_ts = 4500000000ull;
	c[1].warn = (1u << LINT_LOST_WAKEUP) | (1u << LINT_DEAD_STATION);
	snap.warn_counts[LINT_LOST_WAKEUP] = 1;
	snap.warn_counts[LINT_DEAD_STATION] = 1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	snapshot_finish(&snap);
	return 0;
}

/* snap as a JSON snapshot (ppt: its "ppt" member, or NULL), or, with a
 * buffer list l, that list as --list-buffers -f json prints it. */
static char *print_json_of(const struct batch_ppt *ppt,
			   const struct engine_buffer_list *l)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	if (l)
		batch_print_buffers_json(f, 42, l);
	else
		batch_print_json(f, &snap, NULL, 0, NULL, ppt);
	fclose(f);
	return buf;
}

static char *print_json(void)
{
	return print_json_of(NULL, NULL);
}

static char *print_text(unsigned max_rows)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	batch_print_text(f, &snap, NULL, 0, max_rows);
	fclose(f);
	return buf;
}

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

static void test_json_snapshot(void **state)
{
	char *out = print_json();
	const struct jv *o, *c;
	struct jv v;

	(void)state;
	/* One object on one line. */
	assert_true(strlen(out) > 2);
	assert_int_equal(out[strlen(out) - 1], '\n');
	assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1);
	json_must_parse(out, &v);
	assert_true(json_u64(&v, "ts") == 5000000000ull);
	o = json_need(&v, "stations", J_OBJ);
	assert_true(json_u64(o, "allocated") == 3);
	assert_true(json_u64(o, "max") == 4096);
	o = json_need(&v, "events", J_OBJ);
	assert_true(json_u64(o, "harvested") == 1234);
	assert_true(json_u64(o, "lost") == 5);
	assert_true(json_u64(o, "untraced") == 6);
	assert_true(strtod(json_need(o, "per_sec", J_NUM)->s, NULL) > 99.0);
	o = json_need(&v, "engine", J_OBJ);
	assert_false(json_need(o, "sleeping", J_BOOL)->b);
	json_need(o, "error", J_NULL);
	o = json_need(&v, "target", J_OBJ);
	assert_true(json_u64(o, "pid") == 42);
	assert_true(json_need(o, "running", J_BOOL)->b);
	json_need(o, "exit_status", J_NULL);
	o = json_need(&v, "coroutines", J_ARR);
	assert_int_equal(o->n, 2);
	c = &o->items[0];
	assert_true(json_u64(c, "probe_id") == 0xABC);
	assert_string_equal(json_need(c, "state", J_STR)->s, "running");
	assert_true(json_u64(c, "tid") == 4242);
	assert_string_equal(json_need(c, "addr", J_STR)->s,
			    "0x00000000deadbeef");
	assert_true(json_u64(c, "seq") == 42);
	assert_true(json_u64(c, "switches") == 20);
	assert_true(json_u64(c, "age_ns") == 4000000000ull);
	assert_true(json_u64(c, "in_state_ns") == 1000000000ull);
	assert_int_equal(json_need(c, "warn", J_ARR)->n, 0);
	c = &o->items[1];
	/* Exact 64-bit integers, not rounded through a double. */
	assert_string_equal(json_need(c, "probe_id", J_NUM)->s,
			    "18446744073709551615");
	assert_string_equal(json_need(c, "state", J_STR)->s, "dead");
	assert_true(json_u64(c, "age_ns") == 2500000000ull); /* ends at death */
	assert_true(json_u64(c, "in_state_ns") == 500000000ull);
	/* Lint names, in lint order. */
	o = json_need(c, "warn", J_ARR);
	assert_int_equal(o->n, 2);
	assert_string_equal(o->items[0].s, "lost-wakeup");
	assert_string_equal(o->items[1].s, "dead-station");
	/* Totals: every lint, always. */
	o = json_need(&v, "warnings", J_OBJ);
	assert_true(json_u64(o, "lost-wakeup") == 1);
	assert_true(json_u64(o, "stall") == 0);
	assert_true(json_u64(o, "storm") == 0);
	assert_true(json_u64(o, "dead-station") == 1);
	json_free(&v);
	free(out);
}

static void test_json_target_states_and_error(void **state)
{
	static const char nasty[] = "disk \"full\" \\ now\n\t\x01 end";
	const struct jv *o;
	struct jv v;
	char *out;

	(void)state;
	snap.target.running = false;
	snap.target.exited = true;
	snap.target.exit_code = 3;
	snap.sleeping = true;
	snap.error = nasty;
	snap.count = 0;
	out = print_json();
	json_must_parse(out, &v);
	o = json_need(&v, "target", J_OBJ);
	assert_true(json_u64(o, "exit_status") == 3);
	assert_false(json_need(o, "running", J_BOOL)->b);
	o = json_need(&v, "engine", J_OBJ);
	assert_true(json_need(o, "sleeping", J_BOOL)->b);
	assert_string_equal(json_need(o, "error", J_STR)->s, nasty);
	assert_int_equal(json_need(&v, "coroutines", J_ARR)->n, 0);
	json_free(&v);
	free(out);

	snap.target.term_signal = 9;
	snap.target.exit_code = -1;
	out = print_json();
	json_must_parse(out, &v);
	o = json_need(&v, "target", J_OBJ);
	json_need(o, "exit_status", J_NULL);
	assert_true(json_u64(o, "term_signal") == 9);
	json_free(&v);
	free(out);
}

/* Split into lines (modifies buf); returns the count. */
static size_t lines(char *buf, char **line, size_t max)
{
	size_t n = 0;

	for (char *p = buf; *p && n < max;) {
		char *nl = strchr(p, '\n');

		line[n++] = p;
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	return n;
}

static size_t tokens(char *s, char **tok, size_t max)
{
	size_t n = 0;

	for (char *t = strtok(s, " "); t && n < max; t = strtok(NULL, " "))
		tok[n++] = t;
	return n;
}

static void test_text_output(void **state)
{
	char *out = print_text(0), *line[32], *tok[32], *hdr[32];
	size_t nl, nh;

	(void)state;
	nl = lines(out, line, 32);
	assert_string_equal(line[0],
			    "corotop - pid 42 running - engine harvesting");
	assert_memory_equal(line[1], "Events: 1234 total", 18);
	assert_memory_equal(line[2], "Coroutines: 2 shown", 19);
	assert_string_equal(line[3], "");
	nh = tokens(line[4], hdr, 32);
	assert_int_equal(nh, 12);
	assert_string_equal(hdr[0], "ID");
	assert_string_equal(hdr[1], "S");
	assert_string_equal(hdr[2], "TID");
	assert_string_equal(hdr[10], "ADDR");
	assert_string_equal(hdr[11], "WARN");
	/* Exactly one row per coroutine, then a blank line. */
	assert_int_equal(nl, 5 + 2 + 1);
	assert_string_equal(line[7], "");
	assert_int_equal(tokens(line[5], tok, 32), nh);
	assert_string_equal(tok[0], "abc");
	assert_string_equal(tok[1], "R");
	assert_string_equal(tok[2], "4242");
	assert_string_equal(tok[3], "4.0s");
	assert_string_equal(tok[4], "1.0s");
	assert_string_equal(tok[5], "20");
	assert_string_equal(tok[8], "42");
	assert_string_equal(tok[10], "0x00000000deadbeef");
	assert_string_equal(tok[11], "-"); /* no warnings */
	assert_int_equal(tokens(line[6], tok, 32), nh);
	assert_string_equal(tok[0], "ffffffffffffffff");
	assert_string_equal(tok[1], "D");
	assert_string_equal(tok[11], "WAKE?,DEAD");
	free(out);

	out = print_text(1); /* max_rows */
	nl = lines(out, line, 32);
	assert_int_equal(nl, 5 + 1 + 1);
	free(out);
}

static void test_text_header_variants(void **state)
{
	char *out, *line[32];

	(void)state;
	snap.observer = true;
	out = print_text(0);
	lines(out, line, 32);
	assert_string_equal(line[0], "corotop - observer - engine harvesting");
	free(out);
	snap.observer = false;
	snap.target.running = false;
	snap.target.exited = true;
	snap.target.term_signal = 9;
	snap.sleeping = true;
	snap.error = "region truncated";
	snap.coro[0].switches = 0;
	out = print_text(0);
	lines(out, line, 32);
	/* An error stops the engine: never "harvesting" or "asleep". */
	assert_string_equal(line[0],
			    "corotop - pid 42 killed by signal 9 - "
			    "engine stopped - error: region truncated");
	assert_non_null(strstr(line[5], " - ")); /* no tid before a switch */
	free(out);
	snap.target.term_signal = 0;
	snap.target.exit_code = 3;
	snap.error = NULL;
	out = print_text(0);
	lines(out, line, 32);
	assert_string_equal(line[0],
			    "corotop - pid 42 exited 3 - engine asleep");
	free(out);
	/* A 20-digit TID: the column widens, rows stay under the header. */
	snap.coro[0].last_tid = UINT64_MAX;
	snap.coro[0].switches = 20;
	out = print_text(0);
	lines(out, line, 32);
	{
		const char *h = strstr(line[4], "TID"), *v;

		assert_non_null(h);
		v = strstr(line[5], "18446744073709551615");
		assert_non_null(v);
		/* Right aligned: the value ends where the title ends. */
		assert_int_equal(v - line[5] + 20, h - line[4] + 3);
		assert_int_equal(strlen(line[5]) > 0, 1);
	}
	free(out);
	snap.coro[0].last_tid = 4242;
	/* A newline in the --record path: the header stays one line. */
	snap.record.on = true;
	snap.record.path = "rec\nfake line\x01.heph";
	out = print_text(0);
	lines(out, line, 32);
	assert_non_null(
		strstr(line[0], "recording rec\\nfake line\\x01.heph: "));
	assert_true(!strncmp(line[1], "Events: ", 8));
	free(out);
	snap.record.on = false;
	snap.record.path = NULL;
}

/* ---- jsonl ---- */

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 4096);

	assert_non_null(f);
	assert_true(fread(buf, 1, 4095, f) < 4095);
	fclose(f);
	return buf;
}

/* ---- hot stacks ---- */

static const char *fake_name(void *ctx, uint64_t addr, bool leaf, bool full,
			     char *buf, size_t len)
{
	(void)ctx;
	snprintf(buf, len, "%s%llx%s%s", full ? "fn_" : "f",
		 (unsigned long long)addr, leaf ? "@leaf" : "",
		 full ? " (x.c:1) \"q\"" : "");
	return buf;
}

static void hot_fixture(struct engine_calltrace_stats *ct, struct hot_stack *hs)
{
	memset(ct, 0, sizeof(*ct));
	ct->enabled = true;
	ct->rotor.rotations = 4;
	ct->rotor.weight = 30;
	ct->hot.weight = 30;
	ct->hot.stacks = 2;
	memset(hs, 0, 2 * sizeof(*hs));
	hs[0] = (struct hot_stack){.stack_id = 7,
				   .trace_id = 1ull << 32 | 5,
				   .total = 20,
				   .weight = 12.5,
				   .self_pct = 66.7,
				   .total_pct = 70.0,
				   .nframes = 2,
				   .frames = {0xa1, 0xa2}};
	hs[1] = (struct hot_stack){.stack_id = 8,
				   .trace_id = 2ull << 32 | 9,
				   .total = 10,
				   .nframes = 0};
}

static void test_hot_json_and_text(void **state)
{
	struct engine_calltrace_stats ct;
	static struct hot_stack hs[2];
	struct batch_hot hot = {.s = hs, .n = 2, .ct = &ct, .name = fake_name};
	const struct jv *h, *fr;
	char *buf = NULL;
	size_t len = 0;
	struct jv v;
	FILE *f;

	(void)state;
	hot_fixture(&ct, hs);
	f = open_memstream(&buf, &len);
	batch_print_json(f, &snap, NULL, 0, &hot, NULL);
	fclose(f);
	json_must_parse(buf, &v);
	assert_int_equal(json_u64(&v, "calltrace.rotations"), 4);
	assert_int_equal(json_u64(&v, "calltrace.collected"), 30);
	json_need(&v, "calltrace.error", J_NULL);
	h = json_need(&v, "hot_stacks", J_ARR);
	assert_int_equal(h->n, 2);
	assert_true(json_u64(&h->items[0], "id") == (1ull << 32 | 5));
	assert_int_equal(json_u64(&h->items[0], "stack_id"), 7);
	assert_int_equal(json_u64(&h->items[0], "weight"), 20);
	assert_true(json_need(&h->items[0], "window_weight", J_NUM)->num ==
		    12.5);
	assert_true(json_need(&h->items[0], "total_pct", J_NUM)->num == 70.0);
	fr = json_need(&h->items[0], "frames", J_ARR);
	assert_int_equal(fr->n, 2);
	assert_string_equal(json_need(&fr->items[0], "addr", J_STR)->s,
			    "0x00000000000000a1");
	assert_string_equal(json_need(&fr->items[0], "symbol", J_STR)->s,
			    "fn_a1@leaf (x.c:1) \"q\"");
	assert_string_equal(json_need(&fr->items[1], "symbol", J_STR)->s,
			    "fn_a2 (x.c:1) \"q\"");
	assert_int_equal(json_need(&h->items[1], "frames", J_ARR)->n, 0);
	json_free(&v);
	free(buf);

	/* No CallTrace: null and an empty list. */
	buf = print_json();
	json_must_parse(buf, &v);
	json_need(&v, "calltrace", J_NULL);
	assert_int_equal(json_need(&v, "hot_stacks", J_ARR)->n, 0);
	json_free(&v);
	free(buf);

	/* Text: a header line, then one line per stack, at most max_rows. */
	buf = NULL;
	f = open_memstream(&buf, &len);
	batch_print_hot_text(f, &hot, 1);
	fclose(f);
	assert_string_equal(buf,
			    "Hot stacks: 2 kept, weight 30 in 4 rotations, 0 "
			    "puts dropped\n"
			    "   WEIGHT  SELF% TOTAL%  STACK (innermost first)\n"
			    "       20   66.7   70.0  fa1@leaf <- fa2\n");
	free(buf);
	/* A failure is said in the header. */
	snprintf(ct.warning, sizeof(ct.warning), "calltrace: truncated");
	ct.failed = true;
	buf = NULL;
	f = open_memstream(&buf, &len);
	batch_print_hot_text(f, &hot, 0);
	batch_print_json(f, &snap, NULL, 0, &hot, NULL);
	fclose(f);
	assert_non_null(strstr(buf, "dropped - calltrace: truncated\n"));
	assert_non_null(strstr(buf, "\"error\":\"calltrace: truncated\""));
	free(buf);
}

/* The parked-stack callback gets the row itself (its slot finds the
 * record at once): frames here depend on the slot. */
static int parked_calls;

static size_t fake_parked(void *ctx, const struct model_coro *c,
			  uint64_t *frames, size_t max, uint64_t *trace_id)
{
	(void)ctx;
	parked_calls++;
	*trace_id = 0;
	if (c->slot % 2) /* odd slots: nothing captured */
		return 0;
	*trace_id = 1000 + c->id;
	for (size_t k = 0; k < 2 && k < max; k++)
		frames[k] = 0xa1 + k;
	return 2;
}

static bool interrupt_now(void *ctx)
{
	(void)ctx;
	return true;
}

static void test_json_parked_rows(void **state)
{
	enum { N = BATCH_POLL_ROWS + 100 };
	struct engine_calltrace_stats ct;
	struct batch_hot hot = {
		.ct = &ct, .name = fake_name, .parked = fake_parked};
	struct model_coro *c = calloc(N, sizeof(*c));
	const struct jv *rows, *ps;
	char *buf = NULL;
	size_t len = 0;
	struct jv v;
	FILE *f;

	(void)state;
	memset(&ct, 0, sizeof(ct));
	assert_non_null(c);
	free(snap.coro);
	snap.coro = c;
	snap.count = snap.cap = N;
	for (uint32_t i = 0; i < N; i++) {
		c[i].id = 10 + i;
		c[i].slot = i;
		c[i].state = i % 3 == 2 ? MODEL_RUNNING : MODEL_SUSPENDED;
	}
	parked_calls = 0;
	f = open_memstream(&buf, &len);
	batch_print_json(f, &snap, NULL, 0, &hot, NULL);
	fclose(f);
	json_must_parse(buf, &v);
	rows = json_need(&v, "coroutines", J_ARR);
	assert_int_equal(rows->n, N);
	/* Asked once per suspended row, never for a running one. */
	assert_int_equal(parked_calls, N - N / 3);
	for (uint32_t i = 0; i < N; i++) {
		ps = json_get(&rows->items[i], "parked_stack");
		assert_int_equal(json_u64(&rows->items[i], "id"), 10 + i);
		if (i % 3 == 2 || i % 2) {
			assert_null(ps);
			continue;
		}
		assert_non_null(ps);
		assert_int_equal(json_u64(ps, "id"), 1010 + i);
		assert_int_equal(json_need(ps, "frames", J_ARR)->n, 2);
		assert_string_equal(
			json_need(&json_need(ps, "frames", J_ARR)->items[1],
				  "addr", J_STR)
				->s,
			"0x00000000000000a2");
	}
	json_free(&v);
	free(buf);

	/* A signal to quit: the rows stop at the first poll, and the line
	 * is still one whole JSON object. */
	hot.interrupted = interrupt_now;
	buf = NULL;
	f = open_memstream(&buf, &len);
	batch_print_json(f, &snap, NULL, 0, &hot, NULL);
	fclose(f);
	assert_int_equal(buf[len - 1], '\n');
	json_must_parse(buf, &v);
	assert_int_equal(json_need(&v, "coroutines", J_ARR)->n,
			 BATCH_POLL_ROWS);
	json_free(&v);
	free(buf);
}

/* Free text with a byte that is not UTF-8 (a Heph "where" may hold one):
 * U+FFFD, and the line is strict JSON. */
static void test_json_invalid_utf8(void **state)
{
	char *buf;
	struct jv v;

	(void)state;
	snap.error = "bad \x9b name \xc3\xbc";
	buf = print_json();
	assert_non_null(strstr(buf, "bad \\ufffd name \xc3\xbc"));
	json_must_parse(buf, &v);
	json_free(&v);
	free(buf);
	snap.error = NULL;
}

/* The "ppt" member: a buffer's object path comes from the target's maps;
 * a byte that is not UTF-8 is U+FFFD (it used to pass raw). */
static void test_json_ppt_invalid_utf8(void **state)
{
	struct batch_ppt_buffer pb = {
		.b = {.name = "tick", .object = "/opt/b\xff.so"},
	};
	struct batch_ppt ppt = {
		.info = {.enabled = true, .pid = 7}, .buf = &pb, .n = 1};
	char *buf = print_json_of(&ppt, NULL);
	const struct jv *b;
	struct jv v;

	(void)state;
	assert_non_null(strstr(buf, "\"object\":\"/opt/b\\ufffd.so\""));
	json_must_parse(buf, &v);
	b = &json_need(&v, "ppt.buffers", J_ARR)->items[0];
	assert_string_equal(json_need(b, "object", J_STR)->s,
			    "/opt/b\xef\xbf\xbd.so");
	json_free(&v);
	free(buf);
}

/* --list-buffers -f json: a buffer's object path and error come from the
 * target (its maps, its memory); a byte that is not UTF-8 is U+FFFD (it
 * used to pass raw, and the line was not JSON), DEL is \u007f. */
static void test_list_buffers_json_invalid_utf8(void **state)
{
	struct engine_listed_buffer e = {
		.name = "tick",
		.object = "/opt/bad\xff\x7f.so",
		.abi = "1.0.0",
		.frame_size = 64,
		.types = "tick(count)",
		.error = "ok \xc3\xbc",
	};
	struct engine_buffer_list l = {.e = &e, .n = 1};
	char *buf = print_json_of(NULL, &l);
	const struct jv *b;
	struct jv v;

	(void)state;
	assert_non_null(strstr(buf, "\"/opt/bad\\ufffd\\u007f.so\""));
	json_must_parse(buf, &v);
	assert_int_equal(json_u64(&v, "pid"), 42);
	b = &json_need(&v, "buffers", J_ARR)->items[0];
	assert_string_equal(json_need(b, "object", J_STR)->s,
			    "/opt/bad\xef\xbf\xbd\x7f.so");
	assert_string_equal(json_need(b, "error", J_STR)->s, "ok \xc3\xbc");
	json_free(&v);
	free(buf);
}

static void test_jsonl_lines(void **state)
{
	char dir[] = "/tmp/ctp-jsonl-test.XXXXXX", path[128], link[128];
	char err[256] = "", *buf, *line[8];
	struct jsonl j;
	struct stat st;
	struct jv v;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ev.jsonl", dir);
	snprintf(link, sizeof(link), "%s/link.jsonl", dir);
	assert_true(jsonl_open(&j, path, err, sizeof(err)));
	jsonl_write(&j, 1, 2, 0xff, 4, true, 5);
	jsonl_write(&j, UINT64_MAX, 0, UINT64_MAX, 0, false, 0);
	assert_true(j.written == 2);
	assert_true(jsonl_close(&j));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	buf = slurp(path);
	assert_string_equal(
		buf,
		"{\"probe_id\":1,\"tid\":2,\"addr\":\"0x00000000000000ff\","
		"\"seq\":4,\"is_active\":true,\"ts\":5}\n"
		"{\"probe_id\":18446744073709551615,\"tid\":0,\"addr\":"
		"\"0xffffffffffffffff\",\"seq\":0,\"is_active\":false,"
		"\"ts\":0}\n");
	assert_int_equal(lines(buf, line, 8), 2);
	for (int i = 0; i < 2; i++) {
		/* The upstream record: these keys, in this order. */
		static const char *keys[] = {"probe_id", "tid",	      "addr",
					     "seq",	 "is_active", "ts"};
		static const enum json_type types[] = {J_NUM, J_NUM,  J_STR,
						       J_NUM, J_BOOL, J_NUM};

		json_must_parse(line[i], &v);
		assert_int_equal(v.n, 6);
		for (size_t k = 0; k < 6; k++) {
			assert_string_equal(v.keys[k], keys[k]);
			assert_int_equal(v.items[k].t, types[k]);
		}
		json_free(&v);
	}
	free(buf);
	/* Reopening appends, never truncates. */
	assert_true(jsonl_open(&j, path, err, sizeof(err)));
	jsonl_write(&j, 9, 9, 9, 9, true, 9);
	assert_true(jsonl_flush(&j));
	assert_true(jsonl_close(&j));
	buf = slurp(path);
	assert_int_equal(lines(buf, line, 8), 3);
	assert_memory_equal(line[2], "{\"probe_id\":9,", 14);
	free(buf);
	/* A symlink is refused (O_NOFOLLOW) with a message naming it. */
	assert_int_equal(symlink(path, link), 0);
	assert_false(jsonl_open(&j, link, err, sizeof(err)));
	assert_non_null(strstr(err, link));
	assert_null(j.f);
	/* A FIFO with no reader is refused at once, not waited on. */
	unlink(link);
	assert_int_equal(mkfifo(link, 0600), 0);
	assert_false(jsonl_open(&j, link, err, sizeof(err)));
	assert_non_null(strstr(err, link));
	unlink(link);
	/* An unopened log ignores writes and closes cleanly. */
	jsonl_write(&j, 1, 1, 1, 1, true, 1);
	assert_true(j.written == 0);
	assert_true(jsonl_close(&j));
	unlink(link);
	unlink(path);
	rmdir(dir);
}

/* A file that stops growing (RLIMIT_FSIZE, as a full disk): the log is
 * cut back to its last whole line, stops, and says why. */
static void test_jsonl_cut_back(void **state)
{
	char dir[] = "/tmp/ctp-jsonl-test.XXXXXX", path[128], err[256] = "";
	struct rlimit lim, old;
	struct jsonl j;
	struct stat st;
	char *buf, *line[64];
	size_t n;
	struct jv v;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ev.jsonl", dir);
	assert_true(jsonl_open(&j, path, err, sizeof(err)));
	for (uint64_t i = 0; i < 1000; i++)
		jsonl_write(&j, i, i, i, i, true, i);
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = (struct rlimit){1000, old.rlim_max}; /* inside a line */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	errno = 0;
	assert_false(jsonl_flush(&j));
	assert_int_equal(errno, EFBIG);
	/* Stopped: nothing more is written, even with room again. */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	jsonl_write(&j, 1, 1, 1, 1, true, 1);
	assert_false(jsonl_flush(&j));
	assert_false(jsonl_close(&j));
	assert_int_equal(errno, EFBIG);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_size > 0 && st.st_size <= 1000);
	buf = slurp(path);
	assert_int_equal(buf[st.st_size - 1], '\n');
	n = lines(buf, line, 64);
	assert_true(n >= 1);
	for (size_t i = 0; i < n; i++) {
		json_must_parse(line[i], &v);
		json_free(&v);
	}
	free(buf);
	unlink(path);
	rmdir(dir);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parser_rejects_bad_json),
		cmocka_unit_test(test_parser_values),
		T(test_json_snapshot),
		T(test_json_target_states_and_error),
		T(test_text_output),
		T(test_text_header_variants),
		T(test_hot_json_and_text),
		T(test_json_parked_rows),
		T(test_json_invalid_utf8),
		T(test_json_ppt_invalid_utf8),
		cmocka_unit_test(test_list_buffers_json_invalid_utf8),
		cmocka_unit_test(test_jsonl_lines),
		cmocka_unit_test(test_jsonl_cut_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
