/*
 * batch_cacheray: the memory report of a Cacheray trace
 * (src/ui/batch/batch_cacheray.c): the JSON parses and holds the exact counts
 * and the false-sharing suspects, the text has its sections, the thread-id-0
 * note, odd typename bytes, and batch_cacheray_run on a file, stdin, a
 * missing file, a corrupt file and a FIFO still being written; a
 * directory and a terminal (a path, or stdin) refused as the memory view
 * refuses them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "json-check.h"
#include "cacheray-trace.h"
#include "cacheray/cray_source.h"

static void test_json(void **state)
{
	struct tw w;
	struct cacheray *c;
	char *s;
	struct jv v;
	const struct jv *fs, *types, *members, *thr;

	(void)state;
	tw_main(&w);
	c = feed_all(w.b, w.n);
	s = report(c, true);
	json_must_parse(s, &v);
	assert_int_equal(json_u64(&v, "records"), 27);
	assert_int_equal(json_u64(&v, "totals.accesses"), 20);
	assert_int_equal(json_u64(&v, "totals.atomic_rmw"), 1);
	assert_int_equal(json_u64(&v, "rtta.remove_unknown"), 1);
	assert_int_equal(json_need(&v, "error", J_NULL)->t, J_NULL);
	json_need(&v, "threads_note", J_NULL);
	types = json_need(&v, "types", J_ARR);
	/* Sorted by accesses: struct pair (11) first. */
	assert_string_equal(json_need(&types->items[0], "name", J_STR)->s,
			    "struct pair");
	members = json_need(&types->items[0], "members", J_ARR);
	assert_int_equal(members->n, 3);
	assert_int_equal(json_u64(&members->items[2], "offset"), 4);
	assert_int_equal(json_u64(&members->items[2], "writes"), 2);
	fs = json_need(&v, "false_sharing", J_ARR);
	assert_int_equal(fs->n, 2);
	assert_string_equal(json_need(&fs->items[0], "addr", J_STR)->s,
			    "0x0000000000001000");
	assert_string_equal(json_need(&fs->items[0], "layout", J_STR)->s,
			    "elements");
	assert_true(json_need(&fs->items[0], "bytes_disjoint", J_BOOL)->b);
	thr = json_need(&fs->items[0], "threads", J_ARR);
	assert_int_equal(thr->n, 2);
	assert_int_equal(json_u64(&thr->items[0], "id"), 1);
	assert_int_equal(json_u64(&thr->items[1], "id"), 2);
	assert_string_equal(json_need(&thr->items[1], "bytes", J_STR)->s,
			    "0x00000000007fff00");
	assert_int_equal(json_need(&v, "hot_lines", J_ARR)->n, 4);
	json_free(&v);
	free(s);

	s = report(c, false);
	assert_non_null(strstr(s, "\nTotals\n"));
	assert_non_null(strstr(s, "\nTypes\n"));
	assert_non_null(strstr(s, "\nThreads\n"));
	assert_non_null(strstr(s, "\nHot lines\n"));
	assert_non_null(strstr(s, "\nFalse-sharing suspects\n"));
	assert_non_null(strstr(s, "1(w),2(w)"));
	assert_non_null(strstr(s, "diff-elements"));
	free(s);
	cacheray_destroy(c);
}

/* The shipped runtime's thread id 0 everywhere: no suspect, and a note. */
static void test_thread_zero(void **state)
{
	struct tw w = {.n = 0};
	struct cacheray *c;
	struct cacheray_line l[2];
	char *s;

	(void)state;
	tw_add(&w, 0x2000, 4, 16, "int");
	tw_accesses(&w, 2, W, 0x2000, 4, 0);
	tw_accesses(&w, 2, R, 0x2004, 4, 0);
	c = feed_all(w.b, w.n);
	assert_int_equal(cacheray_top_lines(c, true, l, 2), 0);
	s = report(c, false);
	assert_non_null(strstr(s, "thread id 0"));
	free(s);
	s = report(c, true);
	assert_non_null(strstr(s, "\"threads_note\":\"every access carries "
				  "thread id 0"));
	free(s);
	cacheray_destroy(c);
}

/* Typenames are bytes from the trace: the JSON stays valid, text clean. */
static void test_odd_names(void **state)
{
	struct tw w = {.n = 0};
	struct cacheray *c;
	struct jv v;
	const struct jv *types;
	char *s;

	(void)state;
	tw_add(&w, 0x100, 4, 1, "a\"b\\c\x1b[2J\xff");
	tw_access(&w, W, 0x100, 4, 0);
	c = feed_all(w.b, w.n);
	s = report(c, true);
	json_must_parse(s, &v);
	types = json_need(&v, "types", J_ARR);
	/* A byte that is not UTF-8 is U+FFFD (not read as Latin-1). */
	assert_string_equal(json_need(&types->items[0], "name", J_STR)->s,
			    "a\"b\\c\x1b[2J\xef\xbf\xbd");
	json_free(&v);
	free(s);
	s = report(c, false);
	assert_non_null(strstr(s, "a\"b\\c?[2J?\n"));
	assert_null(strchr(s, 0x1b));
	free(s);
	cacheray_destroy(c);
	/* A UTF-8 name stays itself, byte for byte (it used to come out as
	 * "Gr\u00c3\u00bc..."). */
	w.n = 0;
	tw_add(&w, 0x100, 4, 1, "Gr\xc3\xbc\xc3\x9f\xe2\x82\xac");
	tw_access(&w, W, 0x100, 4, 0);
	c = feed_all(w.b, w.n);
	s = report(c, true);
	assert_non_null(strstr(s, "\"Gr\xc3\xbc\xc3\x9f\xe2\x82\xac\""));
	assert_null(strstr(s, "\\u00c3"));
	json_must_parse(s, &v);
	json_free(&v);
	free(s);
	cacheray_destroy(c);
}

/* ---- batch_cacheray_run: a file, a FIFO being written, errors ---- */

static char tmpdir[64];

static int setup_dir(void **state)
{
	(void)state;
	strcpy(tmpdir, "/tmp/test-cacheray-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
	char p[128];

	(void)state;
	snprintf(p, sizeof(p), "%s/trace", tmpdir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/fifo", tmpdir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/bad", tmpdir);
	unlink(p);
	return rmdir(tmpdir);
}

static char *run(const char *path, bool json, int *rc, char *err, size_t n)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	assert_non_null(f);
	*rc = batch_cacheray_run(path, json, f, err, n);
	fclose(f);
	return s;
}

static void write_file(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	fclose(f);
}

static void test_run_file(void **state)
{
	struct tw w;
	struct cacheray *c;
	char path[128], err[512] = "", *got, *want;
	int rc;

	(void)state;
	tw_main(&w);
	c = feed_all(w.b, w.n);
	snprintf(path, sizeof(path), "%s/trace", tmpdir);
	write_file(path, w.b, w.n);
	got = run(path, true, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	/* The same report as feeding by hand, but for the source name. */
	want = report(c, true);
	assert_non_null(strstr(got, want + strlen("{\"source\":\"t\"")));
	free(got);
	free(want);
	got = run(path, false, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_non_null(strstr(got, "False-sharing suspects"));
	free(got);
	cacheray_destroy(c);

	/* "-": standard input. */
	{
		int saved = dup(STDIN_FILENO), fd = open(path, O_RDONLY);

		assert_true(saved >= 0 && fd >= 0);
		assert_int_equal(dup2(fd, STDIN_FILENO), STDIN_FILENO);
		close(fd);
		got = run("-", true, &rc, err, sizeof(err));
		assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
		close(saved);
		assert_int_equal(rc, 0);
		assert_non_null(
			strstr(got, "{\"source\":\"(stdin)\",\"bytes\":556,"));
		free(got);
	}

	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	got = run(path, true, &rc, err, sizeof(err));
	assert_int_equal(rc, 1);
	assert_string_equal(got, "");
	assert_non_null(strstr(err, "cannot open Cacheray trace"));
	assert_non_null(strstr(err, "missing"));
	free(got);

	/* A bad record: the report so far, the error in it and in err. */
	w.n = 0;
	tw_access(&w, W, 0x40, 8, 0);
	w.b[w.n++] = 0x07;
	snprintf(path, sizeof(path), "%s/bad", tmpdir);
	write_file(path, w.b, w.n);
	got = run(path, true, &rc, err, sizeof(err));
	assert_int_equal(rc, 1);
	assert_non_null(strstr(got, "\"error\":{\"offset\":18,"));
	assert_non_null(strstr(got, "\"accesses\":1,"));
	assert_non_null(strstr(err, "byte 18: unknown record type 0x07"));
	free(got);
}

/* A FIFO whose writer is still writing: read to its end, in pieces. */
static void test_run_fifo(void **state)
{
	struct tw w;
	char path[128], err[256] = "", *got;
	struct jv v;
	pid_t pid;
	int rc, status;

	(void)state;
	tw_main(&w);
	snprintf(path, sizeof(path), "%s/fifo", tmpdir);
	assert_int_equal(mkfifo(path, 0600), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(path, O_WRONLY);
		size_t cut[] = {0, 7, 100, 101, w.n};

		for (unsigned i = 0; fd >= 0 && i + 1 < 5; i++) {
			if (write(fd, w.b + cut[i], cut[i + 1] - cut[i]) < 0)
				_exit(1);
			usleep(20000);
		}
		_exit(fd >= 0 ? 0 : 1);
	}
	got = run(path, true, &rc, err, sizeof(err));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(rc, 0);
	json_must_parse(got, &v);
	assert_int_equal(json_u64(&v, "bytes"), w.n);
	assert_int_equal(json_u64(&v, "totals.accesses"), 20);
	assert_int_equal(json_need(&v, "false_sharing", J_ARR)->n, 2);
	json_free(&v);
	free(got);
}

/* What the memory view refuses, the report refuses: the same message,
 * exit code 2, nothing printed -- and a terminal on stdin does not wait
 * for typing. */
static void test_run_refused(void **state)
{
	struct cray_source src;
	char err[512], want[512], *got;
	bool usage;
	int rc, pt, saved, tty;

	(void)state;
	assert_false(
		cray_source_open(&src, tmpdir, want, sizeof(want), &usage));
	assert_true(usage);
	got = run(tmpdir, false, &rc, err, sizeof(err));
	assert_int_equal(rc, 2);
	assert_string_equal(got, "");
	assert_string_equal(err, want);
	free(got);

	pt = posix_openpt(O_RDWR | O_NOCTTY);
	if (pt < 0 || grantpt(pt) || unlockpt(pt))
		skip();
	assert_false(cray_source_open(&src, ptsname(pt), want, sizeof(want),
				      &usage));
	got = run(ptsname(pt), true, &rc, err, sizeof(err));
	assert_int_equal(rc, 2);
	assert_string_equal(got, "");
	assert_string_equal(err, want);
	free(got);

	/* "-" with the terminal on stdin (an alarm ends a read that
	 * waits). */
	tty = open(ptsname(pt), O_RDWR | O_NOCTTY);
	saved = dup(STDIN_FILENO);
	assert_true(tty >= 0 && saved >= 0);
	assert_int_equal(dup2(tty, STDIN_FILENO), STDIN_FILENO);
	assert_false(cray_source_open(&src, "-", want, sizeof(want), &usage));
	alarm(10);
	got = run("-", false, &rc, err, sizeof(err));
	alarm(0);
	assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
	close(saved);
	close(tty);
	close(pt);
	assert_int_equal(rc, 2);
	assert_string_equal(got, "");
	assert_string_equal(err, want);
	assert_non_null(strstr(err, "stdin is a terminal"));
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_thread_zero),
		cmocka_unit_test(test_odd_names),
		cmocka_unit_test(test_run_file),
		cmocka_unit_test(test_run_fifo),
		cmocka_unit_test(test_run_refused),
	};

	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
