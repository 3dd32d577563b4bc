/*
 * test-batch: the no-curses output (src/ui/batch/batch.c, batch_ppt.c).  A
 * hand-built snapshot is printed; the JSON is parsed by the strict parser
 * of tests/common/json-check.h (tested in test-json-check.c) and its keys,
 * types and values are compared with the snapshot.  Text output must have
 * the header and one row per coroutine.  The JSONL log is test-jsonl.c.
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

#include "engine/model/namepool.h"
#include "ui/batch/batch.h"

#include "json-check.h"
#include "lines.h"

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
	snap.pass_gap_max_ns = 2104321;
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
	/* A name with a blank: one word in text, as given in JSON. */
	snap.coro_names = namepool_create(16);
	c[0].name = namepool_intern(snap.coro_names, "conn worker", 0);
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
	namepool_destroy(snap.coro_names);
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
	/* 2,104,321 ns, in ms to the microsecond */
	assert_string_equal(json_need(o, "pass_gap_max_ms", J_NUM)->s, "2.104");
	json_need(o, "error", J_NULL);
	o = json_need(&v, "target", J_OBJ);
	assert_true(json_u64(o, "pid") == 42);
	assert_true(json_need(o, "running", J_BOOL)->b);
	json_need(o, "exit_status", J_NULL);
	o = json_need(&v, "coroutines", J_ARR);
	assert_int_equal(o->n, 2);
	c = &o->items[0];
	assert_true(json_u64(c, "probe_id") == 0xABC);
	/* The table's spelling of the same id. */
	assert_string_equal(json_need(c, "probe_id_hex", J_STR)->s, "abc");
	assert_string_equal(json_need(c, "state", J_STR)->s, "running");
	assert_true(json_u64(c, "tid") == 4242);
	assert_string_equal(json_need(c, "addr", J_STR)->s,
			    "0x00000000deadbeef");
	assert_true(json_u64(c, "seq") == 42);
	assert_true(json_u64(c, "switches") == 20);
	assert_true(json_u64(c, "age_ns") == 4000000000ull);
	assert_true(json_u64(c, "in_state_ns") == 1000000000ull);
	assert_int_equal(json_need(c, "warn", J_ARR)->n, 0);
	assert_false(json_need(c, "long_wait", J_BOOL)->b);
	assert_string_equal(json_need(c, "name", J_STR)->s, "conn worker");
	c = &o->items[1];
	/* Exact 64-bit integers, not rounded through a double. */
	assert_string_equal(json_need(c, "probe_id", J_NUM)->s,
			    "18446744073709551615");
	assert_string_equal(json_need(c, "state", J_STR)->s, "dead");
	assert_string_equal(json_need(c, "name", J_STR)->s, ""); /* none */
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

/* A coroutine suspended at a suspend marked a long wait says so. */
static void test_json_long_wait(void **state)
{
	const struct jv *c;
	struct jv v;
	char *out;

	(void)state;
	snap.coro[0].state = MODEL_SUSPENDED;
	snap.coro[0].long_wait = 1;
	out = print_json();
	json_must_parse(out, &v);
	c = &json_need(&v, "coroutines", J_ARR)->items[0];
	assert_string_equal(json_need(c, "state", J_STR)->s, "suspended");
	assert_true(json_need(c, "long_wait", J_BOOL)->b);
	c = &json_need(&v, "coroutines", J_ARR)->items[1];
	assert_false(json_need(c, "long_wait", J_BOOL)->b);
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
	nl = split_lines(out, line, 32);
	assert_string_equal(line[0],
			    "corotop - pid 42 running - engine harvesting");
	assert_memory_equal(line[1], "Events: 1234 total", 18);
	assert_memory_equal(line[2], "Coroutines: 2 shown", 19);
	assert_string_equal(line[3], "");
	/* Aligned: every cell padded to its column's widest, so the header
	 * and the rows are as long, and NAME's cells start under its title
	 * (conn_worker is wider than its 4). */
	assert_int_equal(strlen(line[5]), strlen(line[4]));
	assert_int_equal(strlen(line[6]), strlen(line[4]));
	assert_true(strstr(line[5], "conn_worker") - line[5] ==
		    strstr(line[4], "NAME") - line[4]);
	nh = tokens(line[4], hdr, 32);
	assert_int_equal(nh, 13);
	assert_string_equal(hdr[0], "ID");
	assert_string_equal(hdr[1], "S");
	assert_string_equal(hdr[2], "TID");
	/* The TUI's order: NAME, WHERE, WARN. */
	assert_string_equal(hdr[10], "NAME");
	assert_string_equal(hdr[11], "WHERE");
	assert_string_equal(hdr[12], "WARN");
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
	assert_string_equal(tok[10], "conn_worker");
	assert_string_equal(tok[11], "0xdeadbeef"); /* no names here */
	assert_string_equal(tok[12], "-");	    /* no warnings */
	assert_int_equal(tokens(line[6], tok, 32), nh);
	assert_string_equal(tok[0], "ffffffffffffffff");
	assert_string_equal(tok[1], "D");
	assert_string_equal(tok[12], "WAKE?,DEAD");
	assert_string_equal(tok[10], "-"); /* no name */
	free(out);

	out = print_text(1); /* max_rows */
	nl = split_lines(out, line, 32);
	assert_int_equal(nl, 5 + 1 + 1);
	free(out);
}

static void test_text_header_variants(void **state)
{
	char *out, *line[32];

	(void)state;
	snap.observer = true;
	out = print_text(0);
	split_lines(out, line, 32);
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
	split_lines(out, line, 32);
	/* An error stops the engine: never "harvesting" or "asleep". */
	assert_string_equal(line[0],
			    "corotop - pid 42 killed by SIGKILL - "
			    "engine stopped - error: region truncated");
	assert_non_null(strstr(line[5], " - ")); /* no tid before a switch */
	free(out);
	snap.target.term_signal = 0;
	snap.target.exit_code = 3;
	snap.error = NULL;
	out = print_text(0);
	split_lines(out, line, 32);
	assert_string_equal(
		line[0], "corotop - pid 42 exited (status 3) - engine asleep");
	free(out);
	/* A 20-digit TID: the column widens, rows stay under the header. */
	snap.coro[0].last_tid = UINT64_MAX;
	snap.coro[0].switches = 20;
	out = print_text(0);
	split_lines(out, line, 32);
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
	split_lines(out, line, 32);
	assert_non_null(
		strstr(line[0], "recording rec\\nfake line\\x01.heph: "));
	assert_true(!strncmp(line[1], "Events: ", 8));
	free(out);
	snap.record.on = false;
	snap.record.path = NULL;
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

static const char *fake_label(void *ctx, uint64_t addr, bool leaf,
			      enum engine_hot_by by, char *buf, size_t len)
{
	(void)ctx;
	snprintf(buf, len, "%s%llx%s", engine_hot_by_name(by),
		 (unsigned long long)addr, leaf ? "@leaf" : "");
	return buf;
}

static void hot_fixture(struct engine_calltrace_stats *ct,
			struct engine_hot_stack *hs)
{
	memset(ct, 0, sizeof(*ct));
	ct->enabled = true;
	ct->rotor.rotations = 4;
	ct->rotor.weight = 30;
	ct->hot.weight = 30;
	ct->hot.stacks = 2;
	ct->rotor.dropped_weight = 2;
	ct->snapshots.enabled = true;
	ct->snapshots.taken = 25;
	ct->snapshots.lapped = 3;
	ct->snapshots.torn = 1;
	ct->snapshots.skipped = 1;
	ct->snapshots.busy = 4;
	ct->snapshots.cfi = 20;
	ct->snapshots.spliced = 2;
	ct->snapshots.fp = 3;
	ct->snapshots.walk_ns = 777;
	memset(hs, 0, 2 * sizeof(*hs));
	hs[0] = (struct engine_hot_stack){.stack_id = 7,
					  .trace_id = 1ull << 32 | 5,
					  .total = 20,
					  .weight = 12.5,
					  .self_pct = 66.7,
					  .total_pct = 70.0,
					  .merged = 3,
					  .nframes = 2,
					  .frames = {0xa1, 0xa2}};
	hs[1] = (struct engine_hot_stack){.stack_id = 8,
					  .trace_id = 2ull << 32 | 9,
					  .total = 10,
					  .nframes = 0};
}

static void test_hot_json_and_text(void **state)
{
	struct engine_calltrace_stats ct;
	static struct engine_hot_stack hs[2];
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
	/* The snapshot ring's books, each under its own key. */
	assert_int_equal(json_u64(&v, "calltrace.snapshots.taken"), 25);
	assert_int_equal(json_u64(&v, "calltrace.snapshots.lapped"), 3);
	assert_int_equal(json_u64(&v, "calltrace.snapshots.torn"), 1);
	assert_int_equal(json_u64(&v, "calltrace.snapshots.skipped"), 1);
	assert_int_equal(json_u64(&v, "calltrace.snapshots.bad"), 0);
	assert_int_equal(json_u64(&v, "calltrace.snapshots.busy"), 4);
	assert_int_equal(json_u64(&v, "calltrace.snapshots.cfi"), 20);
	assert_int_equal(json_u64(&v, "calltrace.snapshots.spliced"), 2);
	assert_int_equal(json_u64(&v, "calltrace.snapshots.fp"), 3);
	assert_int_equal(json_u64(&v, "calltrace.snapshots.walk_ns"), 777);
	assert_false(json_need(&v, "calltrace.snapshots.failed", J_BOOL)->b);
	h = json_need(&v, "hot_stacks", J_ARR);
	assert_int_equal(h->n, 2);
	assert_true(json_u64(&h->items[0], "id") == (1ull << 32 | 5));
	assert_int_equal(json_u64(&h->items[0], "stack_id"), 7);
	assert_int_equal(json_u64(&h->items[0], "weight"), 20);
	assert_true(json_need(&h->items[0], "window_weight", J_NUM)->num ==
		    12.5);
	assert_true(json_need(&h->items[0], "total_pct", J_NUM)->num == 70.0);
	/* What a row merges, and how many stacks it holds (1 when unset). */
	assert_string_equal(json_need(&v, "hot_by", J_STR)->s, "function");
	assert_int_equal(json_u64(&h->items[0], "merged"), 3);
	assert_int_equal(json_u64(&h->items[1], "merged"), 1);
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
	json_need(&v, "hot_by", J_NULL);
	assert_int_equal(json_need(&v, "hot_stacks", J_ARR)->n, 0);
	json_free(&v);
	free(buf);

	/* Text: a header line, then one line per stack, at most max_rows. */
	buf = NULL;
	f = open_memstream(&buf, &len);
	batch_print_hot_text(f, &hot, 1);
	fclose(f);
	assert_string_equal(buf,
			    "Hot stacks by function: 2 kept, weight 30 in 4 "
			    "rotations, 7 samples dropped\n"
			    "   WEIGHT  SELF% TOTAL%  STACK by function "
			    "(innermost first)\n"
			    "       20   66.7   70.0  fa1@leaf <- fa2\n");
	free(buf);
	/* By line: the label names the frames, the header says so. */
	hot.by = ENGINE_HOT_BY_LINE;
	hot.label = fake_label;
	buf = NULL;
	f = open_memstream(&buf, &len);
	batch_print_hot_text(f, &hot, 1);
	batch_print_json(f, &snap, NULL, 0, &hot, NULL);
	fclose(f);
	assert_non_null(strstr(buf, "Hot stacks by line: 2 kept"));
	assert_non_null(strstr(buf, "  linea1@leaf <- linea2\n"));
	assert_non_null(strstr(buf, "\"hot_by\":\"line\""));
	free(buf);
	hot.by = ENGINE_HOT_BY_FUNCTION;
	hot.label = NULL;
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

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_json_snapshot),
		T(test_json_long_wait),
		T(test_json_target_states_and_error),
		T(test_text_output),
		T(test_text_header_variants),
		T(test_hot_json_and_text),
		T(test_json_parked_rows),
		T(test_json_invalid_utf8),
		T(test_json_ppt_invalid_utf8),
		cmocka_unit_test(test_list_buffers_json_invalid_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
