/*
 * test-jsonl: the per-event JSON-lines log (src/engine/export/jsonl.c) --
 * the upstream engine's record shape byte for byte, appending on reopen,
 * refusing links and FIFOs, and cut back to its last whole line when the
 * file stops growing.
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

#include "json-check.h"
#include "lines.h"

/* A small file's whole text. */
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
	assert_int_equal(split_lines(buf, line, 8), 2);
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
	assert_int_equal(split_lines(buf, line, 8), 3);
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
	n = split_lines(buf, line, 64);
	assert_true(n >= 1);
	for (size_t i = 0; i < n; i++) {
		json_must_parse(line[i], &v);
		json_free(&v);
	}
	free(buf);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jsonl_lines),
		cmocka_unit_test(test_jsonl_cut_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
