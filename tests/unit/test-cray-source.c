/*
 * cray_source: the memory view's input -- a directory and a terminal are
 * refused before any curses starts, a missing file is an error; a
 * regular file is read a budget at a time with its percentage; stdin as a
 * pipe is made non-blocking (EAGAIN is "wait") and its flags restored; a
 * FIFO opened before its writer reads nothing until one comes, and its
 * writer closing is the end; a record cut at the end is "truncated"; a
 * bad record stops reading at its offset and closes the FIFO; the rate
 * as the header shows it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cacheray-trace.h"
#include "cray-fixture.h"
#include "cacheray/cray_source.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-cray-source-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static const char *path(const char *name)
{
	static char p[128];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static void write_file(const char *p, const void *b, size_t n)
{
	FILE *f = fopen(p, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	fclose(f);
}

static uint64_t records(const struct cray_source *s)
{
	struct cacheray_totals t;

	cacheray_totals(s->c, &t);
	return t.records;
}

static void test_refused(void **state)
{
	struct cray_source s;
	char err[256];
	bool usage;
	int pt;

	(void)state;
	assert_false(cray_source_open(&s, dir, err, sizeof(err), &usage));
	assert_true(usage);
	assert_non_null(strstr(err, "is a directory"));
	assert_false(cray_source_open(&s, path("missing"), err, sizeof(err),
				      &usage));
	assert_false(usage);
	assert_non_null(strstr(err, "cannot open Cacheray trace"));
	assert_non_null(strstr(err, strerror(ENOENT)));
	/* A terminal: the slave side of a new pseudo-terminal. */
	pt = posix_openpt(O_RDWR | O_NOCTTY);
	if (pt < 0 || grantpt(pt) || unlockpt(pt))
		skip();
	assert_false(
		cray_source_open(&s, ptsname(pt), err, sizeof(err), &usage));
	assert_true(usage);
	assert_non_null(strstr(err, "is a terminal"));
	close(pt);
}

/* 40,000 accesses: 720,000 bytes, three reads of 256 KiB. */
static void test_file(void **state)
{
	size_t n = 40000 * CACHERAY_ACCESS_SIZE;
	uint8_t *b = malloc(n);
	struct cray_source s;
	char err[256];
	bool usage;

	(void)state;
	assert_non_null(b);
	for (size_t i = 0; i < 40000; i++) {
		uint64_t addr = 0x1000 + 8 * (i % 64), tid = 1;

		b[i * 18] = CACHERAY_EVENT_WRITE;
		memcpy(b + i * 18 + 1, &addr, 8);
		b[i * 18 + 9] = 8;
		memcpy(b + i * 18 + 10, &tid, 8);
	}
	write_file(path("big.cray"), b, n);
	assert_true(cray_source_open(&s, path("big.cray"), err, sizeof(err),
				     &usage));
	assert_false(s.pollable);
	assert_int_equal(s.size, n);
	assert_int_equal(cray_source_percent(&s), 0);
	/* A budget of 1 still reads one chunk. */
	assert_int_equal(cray_source_read(&s, 1), CRAY_STEP_MORE);
	assert_int_equal(s.got, 256 * 1024);
	assert_int_equal(cray_source_percent(&s), 256 * 1024 * 100 / n);
	assert_int_equal(s.state, CRAY_READING);
	assert_int_equal(cray_source_read(&s, 8u << 20), CRAY_STEP_DONE);
	assert_int_equal(s.state, CRAY_COMPLETE);
	assert_int_equal(s.got, n);
	assert_int_equal(records(&s), 40000);
	assert_int_equal(s.fd, -1);
	assert_int_equal(cray_source_read(&s, 1), CRAY_STEP_DONE);
	cray_source_close(&s);
	free(b);
}

static void test_stdin_pipe(void **state)
{
	struct tw w;
	struct cray_source s;
	char err[256];
	bool usage;
	int p[2], saved = dup(STDIN_FILENO), flags;

	(void)state;
	tw_cray_fixture(&w);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(dup2(p[0], STDIN_FILENO), STDIN_FILENO);
	close(p[0]);
	flags = fcntl(STDIN_FILENO, F_GETFL);
	assert_true(cray_source_open(&s, "-", err, sizeof(err), &usage));
	assert_string_equal(s.name, "(stdin)");
	assert_true(s.pollable);
	assert_int_equal(cray_source_percent(&s), -1);
	assert_true(fcntl(STDIN_FILENO, F_GETFL) & O_NONBLOCK);
	/* Nothing written yet: wait (a pipe's writer is there). */
	assert_int_equal(cray_source_read(&s, 8u << 20), CRAY_STEP_WAIT);
	assert_int_equal(write(p[1], w.b, 988), 988);
	assert_int_equal(cray_source_read(&s, 8u << 20), CRAY_STEP_WAIT);
	assert_int_equal(s.got, 988);
	assert_int_equal(records(&s), 53);
	assert_int_equal(write(p[1], w.b + 988, w.n - 988),
			 (ssize_t)(w.n - 988));
	close(p[1]);
	assert_int_equal(cray_source_read(&s, 8u << 20), CRAY_STEP_DONE);
	assert_int_equal(s.state, CRAY_COMPLETE);
	assert_int_equal(records(&s), 106);
	/* stdin has its flags back (and is not closed). */
	assert_int_equal(fcntl(STDIN_FILENO, F_GETFL), flags);
	cray_source_close(&s);
	assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
	close(saved);
}

static void test_fifo_truncated(void **state)
{
	struct tw w;
	struct cray_source s;
	char err[256];
	bool usage;
	int wfd;

	(void)state;
	tw_cray_fixture(&w);
	assert_int_equal(mkfifo(path("fifo"), 0600), 0);
	/* Opened before any writer: that must not block. */
	assert_true(
		cray_source_open(&s, path("fifo"), err, sizeof(err), &usage));
	assert_true(s.pollable);
	wfd = open(path("fifo"), O_WRONLY | O_NONBLOCK);
	assert_true(wfd >= 0);
	assert_int_equal(cray_source_read(&s, 8u << 20), CRAY_STEP_WAIT);
	/* All but the last 5 bytes, then the writer goes. */
	assert_int_equal(write(wfd, w.b, w.n - 5), (ssize_t)(w.n - 5));
	assert_int_equal(cray_source_read(&s, 8u << 20), CRAY_STEP_WAIT);
	assert_int_equal(records(&s), 105);
	close(wfd);
	assert_int_equal(cray_source_read(&s, 8u << 20), CRAY_STEP_DONE);
	assert_int_equal(s.state, CRAY_TRUNCATED);
	assert_int_equal(cacheray_pending(s.c), CACHERAY_ACCESS_SIZE - 5);
	cray_source_close(&s);
}

static void test_bad_fifo(void **state)
{
	struct tw w;
	struct cray_source s;
	char err[256];
	bool usage;
	int wfd;
	uint8_t bad[CACHERAY_ACCESS_SIZE] = {0x07};

	(void)state;
	tw_cray_fixture(&w);
	memcpy(w.b + w.n, bad, sizeof(bad));
	w.n += sizeof(bad);
	assert_int_equal(mkfifo(path("bad"), 0600), 0);
	assert_true(
		cray_source_open(&s, path("bad"), err, sizeof(err), &usage));
	wfd = open(path("bad"), O_WRONLY | O_NONBLOCK);
	assert_true(wfd >= 0);
	assert_int_equal(write(wfd, w.b, w.n), (ssize_t)w.n);
	assert_int_equal(cray_source_read(&s, 8u << 20), CRAY_STEP_DONE);
	assert_int_equal(s.state, CRAY_BAD);
	assert_non_null(strstr(s.problem, "byte 1976: unknown record type "
					  "0x07"));
	assert_int_equal(records(&s), 106);
	/* The FIFO is closed: its writer is told (EPIPE), never blocked. */
	assert_int_equal(s.fd, -1);
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(write(wfd, "x", 1), -1);
	assert_int_equal(errno, EPIPE);
	close(wfd);
	cray_source_close(&s);
}

/* The header's rate, scaled: a slow FIFO is not "0.0 M records/s". */
static void test_rate_text(void **state)
{
	static const struct {
		double rate;
		const char *text;
	} cases[] = {
		{0, "0.0 records/s"},	       {0.5, "0.5 records/s"},
		{9.9, "9.9 records/s"},	       {9.96, "10 records/s"},
		{42, "42 records/s"},	       {999.4, "999 records/s"},
		{999.6, "1.0 K records/s"},    {12345, "12.3 K records/s"},
		{999949, "999.9 K records/s"}, {999950, "1.0 M records/s"},
		{51.8e6, "51.8 M records/s"},
	};
	char b[48];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cray_source_rate_text(cases[i].rate, b, sizeof(b));
		assert_string_equal(b, cases[i].text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rate_text),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_stdin_pipe),
		cmocka_unit_test(test_fifo_truncated),
		cmocka_unit_test(test_bad_fifo),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
