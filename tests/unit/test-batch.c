/*
 * batch: the no-curses output (src/ui/batch.c) and the per-event JSON-lines
 * log (src/engine/jsonl.c).  A hand-built snapshot is printed; the JSON is
 * parsed by a small strict RFC 8259 parser below (itself checked to reject
 * bad input) and its keys, types and values are compared with the snapshot.
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

#include <sys/stat.h>
#include <unistd.h>

#include "engine/jsonl.h"
#include "ui/batch.h"

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
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	snapshot_finish(&snap);
	return 0;
}

static char *print_json(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	batch_print_json(f, &snap);
	fclose(f);
	return buf;
}

static char *print_text(unsigned max_rows)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	batch_print_text(f, &snap, max_rows);
	fclose(f);
	return buf;
}

static void test_parser_rejects_bad_json(void **state)
{
	static const char *bad[] = {
		"",
		"{",
		"{\"a\":1,}",
		"[1,]",
		"{\"a\":nan}",
		"{\"a\":01}",
		"{\"a\":-}",
		"{\"a\":1.}",
		"\"\x01\"",
		"{\"a\":1}x",
		"{\"a\":1,\"a\":2}",
		"{a:1}",
		"\"\\x\"",
		"[1 2]",
		"{\"a\" 1}",
		"tru",
	};
	static const char *good[] = {
		"{}", "[]",  "{\"a\":[1,-2.5e3,true,null]}", "\"\\u0041\\n\"",
		"0",  "-0.5"};
	struct jv v;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		if (jparse(bad[i], &v))
			fail_msg("parser accepted %s", bad[i]);
		jfree(&v);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		if (!jparse(good[i], &v))
			fail_msg("parser rejected %s", good[i]);
		jfree(&v);
	}
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
	if (!jparse(out, &v))
		fail_msg("invalid JSON: %s", out);
	assert_true(ju64(&v, "ts") == 5000000000ull);
	o = jget(&v, "stations", J_OBJ);
	assert_true(ju64(o, "allocated") == 3);
	assert_true(ju64(o, "max") == 4096);
	o = jget(&v, "events", J_OBJ);
	assert_true(ju64(o, "harvested") == 1234);
	assert_true(ju64(o, "lost") == 5);
	assert_true(ju64(o, "untraced") == 6);
	assert_true(strtod(jget(o, "per_sec", J_NUM)->s, NULL) > 99.0);
	o = jget(&v, "engine", J_OBJ);
	assert_false(jget(o, "sleeping", J_BOOL)->b);
	jget(o, "error", J_NULL);
	o = jget(&v, "target", J_OBJ);
	assert_true(ju64(o, "pid") == 42);
	assert_true(jget(o, "running", J_BOOL)->b);
	jget(o, "exit_status", J_NULL);
	o = jget(&v, "coroutines", J_ARR);
	assert_int_equal(o->n, 2);
	c = &o->v[0];
	assert_true(ju64(c, "probe_id") == 0xABC);
	assert_string_equal(jget(c, "state", J_STR)->s, "running");
	assert_true(ju64(c, "tid") == 4242);
	assert_string_equal(jget(c, "addr", J_STR)->s, "0x00000000deadbeef");
	assert_true(ju64(c, "seq") == 42);
	assert_true(ju64(c, "switches") == 20);
	assert_true(ju64(c, "age_ns") == 4000000000ull);
	assert_true(ju64(c, "in_state_ns") == 1000000000ull);
	c = &o->v[1];
	/* Exact 64-bit integers, not rounded through a double. */
	assert_string_equal(jget(c, "probe_id", J_NUM)->s,
			    "18446744073709551615");
	assert_string_equal(jget(c, "state", J_STR)->s, "dead");
	assert_true(ju64(c, "age_ns") == 2500000000ull); /* ends at death */
	assert_true(ju64(c, "in_state_ns") == 500000000ull);
	jfree(&v);
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
	if (!jparse(out, &v))
		fail_msg("invalid JSON: %s", out);
	o = jget(&v, "target", J_OBJ);
	assert_true(ju64(o, "exit_status") == 3);
	assert_false(jget(o, "running", J_BOOL)->b);
	o = jget(&v, "engine", J_OBJ);
	assert_true(jget(o, "sleeping", J_BOOL)->b);
	assert_string_equal(jget(o, "error", J_STR)->s, nasty);
	assert_int_equal(jget(&v, "coroutines", J_ARR)->n, 0);
	jfree(&v);
	free(out);

	snap.target.term_signal = 9;
	snap.target.exit_code = -1;
	out = print_json();
	if (!jparse(out, &v))
		fail_msg("invalid JSON: %s", out);
	o = jget(&v, "target", J_OBJ);
	jget(o, "exit_status", J_NULL);
	assert_true(ju64(o, "term_signal") == 9);
	jfree(&v);
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
	assert_int_equal(nh, 11);
	assert_string_equal(hdr[0], "ID");
	assert_string_equal(hdr[1], "S");
	assert_string_equal(hdr[2], "TID");
	assert_string_equal(hdr[10], "ADDR");
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
	assert_int_equal(tokens(line[6], tok, 32), nh);
	assert_string_equal(tok[0], "ffffffffffffffff");
	assert_string_equal(tok[1], "D");
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
	assert_string_equal(line[0], "corotop - pid 42 killed by signal 9 - "
				     "engine asleep - error: region truncated");
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
		static const enum jt types[] = {J_NUM, J_NUM,  J_STR,
						J_NUM, J_BOOL, J_NUM};

		assert_true(jparse(line[i], &v));
		assert_int_equal(v.n, 6);
		for (size_t k = 0; k < 6; k++) {
			assert_string_equal(v.k[k], keys[k]);
			assert_int_equal(v.v[k].t, types[k]);
		}
		jfree(&v);
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
	/* An unopened log ignores writes and closes cleanly. */
	jsonl_write(&j, 1, 1, 1, 1, true, 1);
	assert_true(j.written == 0);
	assert_true(jsonl_close(&j));
	unlink(link);
	unlink(path);
	rmdir(dir);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parser_rejects_bad_json),
		T(test_json_snapshot),
		T(test_json_target_states_and_error),
		T(test_text_output),
		T(test_text_header_variants),
		cmocka_unit_test(test_jsonl_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
