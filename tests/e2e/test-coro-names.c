/*
 * test-coro-names: coroutine names through the corotop binary, against the
 * writer's `named` mode (tests/targets/writer.c): "acceptor" (a static
 * name), "conn 42" (copied, its buffer overwritten after the open),
 * "bad\x1b[31m\x7f" (control bytes), 60 'x' (too long) and one unnamed.
 *
 *   - batch JSON: each coroutine's "name" is what the program gave, cut at
 *     47 bytes, control bytes as '?', "" for none -- waited for with a
 *     deadline, as every snapshot on the way is checked for its shape;
 *     `-s name` orders them: the unnamed first, then as text sorts;
 *   - batch text: NAME is a column of its own, before WHERE as in the
 *     table, one word ("conn_42", "-"), and
 *     `-F name=acceptor` keeps that row alone -- text snapshots read until
 *     the row shows, every table on the way holding that row or none;
 *   - --record, then corotop convert: jsonl lines carry "name", and
 *     chrome names the coroutines' threads after them.  The live run is
 *     stopped (SIGINT) once a snapshot shows all five named and switched,
 *     so the recording holds an interval of each, however slow the start.
 *
 * No test counts snapshots: the writer may open its coroutines seconds
 * after corotop started on a loaded machine.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../common/itest.h"
#include "json-check.h"

#ifndef ITEST_WRITER
#error "ITEST_WRITER must name the writer program"
#endif

#include "e2e.h"

/* The names the writer's coroutines c = 0..4 must show. */
static const char *want_name(unsigned c)
{
	static char xs[48];

	switch (c) {
	case 0:
		return "acceptor";
	case 1:
		return "conn 42";
	case 2:
		return "bad?[31m?";
	case 3:
		memset(xs, 'x', 47);
		xs[47] = '\0';
		return xs;
	default:
		return "";
	}
}

/* All five, each named as it should be; false while some are missing. */
static bool five_named(const struct jv *v)
{
	const struct jv *co = json_get(v, "coroutines");
	unsigned seen = 0;

	for (size_t i = 0; co && i < co->n; i++) {
		const struct jv *c = &co->items[i];
		uint64_t id = json_u64(c, "probe_id");
		unsigned k = (unsigned)(id - IT_PROBE_ID(0));

		assert_true(id >= IT_PROBE_ID(0) && k < 5);
		assert_string_equal(json_need(c, "name", J_STR)->s,
				    want_name(k));
		seen |= 1u << k;
	}
	return seen == 31;
}

/* A stopped process, continued stall_ms later (on a thread of its own, so
 * the test thread reads meanwhile). */
struct stall {
	pid_t pid;
	unsigned ms;
};

static void *stall_main(void *arg)
{
	const struct stall *s = arg;

	it_sleep_ms(s->ms);
	kill(s->pid, SIGCONT);
	return NULL;
}

/* All five named (above), each switched twice at least: a recording
 * made until this snapshot holds intervals of all five (recorder_stop
 * closes the open ones), more than five in all. */
static bool five_named_switched(const struct jv *v)
{
	const struct jv *co = json_get(v, "coroutines");

	if (!five_named(v))
		return false;
	for (size_t i = 0; i < co->n; i++)
		if (json_u64(&co->items[i], "switches") < 2)
			return false;
	return true;
}

/* Read snapshots as they come until `done` says so (60 s at most), then
 * SIGINT.  stall_ms: corotop is stopped (SIGSTOP) that long from its start
 * while the test reads, as a loaded machine may leave it unscheduled: the
 * reader waits for the first snapshot however late it comes.  Returns the
 * line that did, to free. */
static char *until(char *const argv[], bool (*done)(const struct jv *),
		   unsigned stall_ms)
{
	uint64_t end = it_now() + 60ull * 1000000000u;
	char *line, *found = NULL;
	struct stall st;
	size_t off = 0;
	pthread_t th;
	struct proc p;

	proc_start(&p, argv);
	if (stall_ms) {
		st = (struct stall){p.pid, stall_ms};
		assert_int_equal(kill(p.pid, SIGSTOP), 0);
		assert_int_equal(pthread_create(&th, NULL, stall_main, &st), 0);
	}
	while (!found && it_now() < end &&
	       (line = proc_line_by(&p, &off, end)) != NULL) {
		struct jv v;

		check_snapshot(line, false, &v);
		if (done(&v))
			found = line;
		else
			free(line);
		json_free(&v);
	}
	if (stall_ms)
		pthread_join(th, NULL);
	kill(p.pid, SIGINT);
	assert_int_equal(exit_code(proc_finish(&p, 30000)), 130);
	if (!found)
		fail_msg("no snapshot with the five named (and, if asked, "
			 "switched) within 60 s; stderr: %s",
			 p.ebuf);
	assert_xdg_empty();
	proc_free(&p);
	return found;
}

static void test_json_names(void **state)
{
	char *argv[] = {ITEST_COROTOP, "-b",	"-d", "2", "-f", "json", "--",
			ITEST_WRITER,  "named", "60", NULL};

	(void)state;
	free(until(argv, five_named, 0));
}

/* As above, corotop held still for 3 s from its start: longer than the
 * 1 s the reader once waited for a line before it gave up and sent SIGINT
 * (which killed a corotop that had not yet blocked it: e2e-coro-names, then
 * e2e-names, on a loaded machine). */
static void test_json_names_slow_start(void **state)
{
	char *argv[] = {ITEST_COROTOP, "-b",	"-d", "2", "-f", "json", "--",
			ITEST_WRITER,  "named", "60", NULL};

	(void)state;
	free(until(argv, five_named, 3000));
}

static void test_json_sort_by_name(void **state)
{
	char *argv[] = {ITEST_COROTOP, "-b", "-d",   "2",  "-f",
			"json",	       "-s", "name", "--", ITEST_WRITER,
			"named",       "60", NULL};
	static const unsigned order[] = {4, 0, 2, 1, 3};
	char *line = NULL;
	const struct jv *co;
	struct jv v;

	(void)state;
	line = until(argv, five_named, 0);
	json_must_parse(line, &v);
	co = json_need(&v, "coroutines", J_ARR);
	assert_int_equal(co->n, 5);
	for (size_t i = 0; i < 5; i++)
		assert_string_equal(json_need(&co->items[i], "name", J_STR)->s,
				    want_name(order[i]));
	json_free(&v);
	free(line);
}

/* Word k (from 0) of a text row, cut out of it in place; "" past the
 * last. */
static const char *nth_word(char *row, size_t k)
{
	char *p = row;

	for (;;) {
		size_t len;

		p += strspn(p, " ");
		len = strcspn(p, " ");
		if (!len)
			return "";
		if (!k--) {
			p[len] = '\0';
			return p;
		}
		p += len;
	}
}

/* Which word of the column titles is NAME; SIZE_MAX when none is. */
static size_t name_word(const char *titles)
{
	char buf[512];

	for (size_t k = 0; k < 64; k++) {
		const char *w;

		snprintf(buf, sizeof(buf), "%s", titles);
		w = nth_word(buf, k);

		if (!*w)
			break;
		if (!strcmp(w, "NAME"))
			return k;
	}
	return SIZE_MAX;
}

/*
 * Batch text with `-F name=acceptor`, read table by table as snapshots
 * come (the column titles, then rows up to a blank line): every table
 * has a NAME column, before WHERE as in the table, and holds acceptor's
 * row or none (the writer may not have opened it yet), until one holds
 * it; then SIGINT.
 */
static void test_text_name_column_and_filter(void **state)
{
	char *argv[] = {
		ITEST_COROTOP, "-b",	"-d", "5", "-F", "name=acceptor", "--",
		ITEST_WRITER,  "named", "60", NULL};
	uint64_t end = it_now() + 60ull * 1000000000u;
	size_t off = 0, tables = 0, rows = 0, name_at = SIZE_MAX;
	bool in_table = false, found = false;
	struct proc p;
	char *line;

	(void)state;
	proc_start(&p, argv);
	while (!found && it_now() < end &&
	       (line = proc_line_by(&p, &off, end)) != NULL) {
		if (!strncmp(line + strspn(line, " "), "ID ", 3)) {
			name_at = name_word(line);
			if (name_at == SIZE_MAX ||
			    strcmp(nth_word(line, name_at + 1), "WHERE"))
				fail_msg("no NAME before WHERE: %s", line);
			in_table = true;
			rows = 0;
		} else if (in_table && !*line) {
			/* The table's end: acceptor's row, or none yet. */
			in_table = false;
			tables++;
			found = rows == 1;
		} else if (in_table) {
			if (strcmp(nth_word(line, name_at), "acceptor"))
				fail_msg("a row that is not acceptor's: %s",
					 line);
			rows++;
			assert_int_equal(rows, 1);
		}
		free(line);
	}
	kill(p.pid, SIGINT);
	assert_int_equal(exit_code(proc_finish(&p, 30000)), 130);
	if (!found)
		fail_msg("no table with acceptor's row within 60 s (%zu read); "
			 "stderr: %s",
			 tables, p.ebuf);
	assert_xdg_empty();
	proc_free(&p);
}

static void test_record_convert(void **state)
{
	char rec[300], *lines[4096];
	char *live[] = {ITEST_COROTOP, "-b",	   "-f", "json", "-d",
			"5",	       "--record", rec,	 "--",	 ITEST_WRITER,
			"named",       "60",	   NULL};
	char *jsonl[] = {ITEST_COROTOP, "convert", "--to", "jsonl",
			 "-q",		rec,	   NULL};
	char *chrome[] = {ITEST_COROTOP, "convert", "--to", "chrome",
			  "-q",		 rec,	    NULL};
	bool named[5] = {false};
	struct proc p;
	size_t n;

	(void)state;
	snprintf(rec, sizeof(rec), "%s.names.heph", xdg);
	/* Recorded until a snapshot shows all five named and switched,
	 * then SIGINT: the file is completed on the way out. */
	free(until(live, five_named_switched, 0));
	assert_int_equal(run(&p, jsonl, 60000), 0);
	n = split_lines(p.obuf, lines, 4096);
	assert_true(n > 5);
	for (size_t i = 0; i < n && i < 4096; i++) {
		struct jv v;
		const struct jv *nm;
		unsigned k;

		json_must_parse(lines[i], &v);
		k = (unsigned)(json_u64(&v, "probe_id") - IT_PROBE_ID(0));
		assert_true(k < 5);
		nm = json_get(&v, "name");
		if (k == 4) {
			assert_null(nm); /* unnamed: the upstream shape */
		} else {
			assert_non_null(nm);
			assert_string_equal(nm->s, want_name(k));
			named[k] = true;
		}
		json_free(&v);
	}
	assert_true(named[0] && named[1] && named[2] && named[3]);
	proc_free(&p);
	assert_int_equal(run(&p, chrome, 60000), 0);
	/* Each named coroutine's track is named by it (thread_name). */
	assert_non_null(strstr(p.obuf, "{\"name\":\"acceptor\"}"));
	assert_non_null(strstr(p.obuf, "{\"name\":\"conn 42\"}"));
	proc_free(&p);
	unlink(rec);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_names),
		cmocka_unit_test(test_json_names_slow_start),
		cmocka_unit_test(test_json_sort_by_name),
		cmocka_unit_test(test_text_name_column_and_filter),
		cmocka_unit_test(test_record_convert),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup_xdg, teardown_xdg);
}
