/*
 * test-output: the target's output through a pty (or pipe) corotop makes
 * and the keeper relays (engine/launch/output.c, keeper.c).  A forked
 * child plays the target: it writes through the descriptors output_create
 * hands out; a keeper started for it relays to the destination and copies
 * to the view, which the test drains until the end is read (with a
 * deadline).  Then it checks the kept lines, the destination (every byte,
 * as written), what the child saw, and what the keeper reported.
 *
 *   - a destination that fails (/dev/full) is reported once, with its
 *     errno and the bytes written before it, and the view still gets
 *     every line;
 *   - a view that falls behind misses text, and a line says exactly how
 *     many bytes; the destination has them all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/launch/keeper.h"
#include "engine/launch/output.h"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);

		if (w <= 0)
			_exit(3);
		s += w;
		n -= (size_t)w;
	}
}

/* The keeper's report at the end of the last run_child. */
static struct keeper_end last_end;

/* Run body() in a child whose 0 (view only), 1 and 2 are the output's,
 * with a keeper relaying to sink (-1: none; closed here); drain the view
 * until the end (60 s at most) -- after hold(o) returns, when not NULL --
 * and return the child's exit status. */
static int run_child_with(struct output *o, int sink,
			  void (*hold)(struct output *o), void (*body)(void))
{
	struct keeper_output ko;
	bool view = output_fd(o) >= 0;
	pid_t pid;
	int status = -1;
	uint64_t end = now_ms() + 60000;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (output_target_in(o) >= 0)
			dup2(output_target_in(o), 0);
		dup2(output_target_out(o), 1);
		dup2(output_target_out(o), 2);
		body();
		_exit(0);
	}
	output_spawned(o);
	ko = (struct keeper_output){output_source(o), sink, output_copy_end(o)};
	assert_true(keeper_start(NULL, pid, -1, &ko));
	if (sink >= 0)
		close(sink);
	output_handed(o);
	if (hold)
		hold(o);
	while (view && !output_ended(o) && now_ms() < end) {
		struct pollfd p = {.fd = output_fd(o), .events = POLLIN};

		poll(&p, 1, 100);
		output_drain(o);
	}
	assert_true(!view || output_ended(o));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	keeper_stop(true, 10000, &last_end);
	assert_true(last_end.synced);
	assert_true(last_end.ended);
	assert_int_equal(keeper_pid(), 0);
	return status;
}

static int run_child(struct output *o, void (*body)(void))
{
	return run_child_with(o, -1, NULL, body);
}

static void body_text(void)
{
	static const char text[] =
		"plain line\n"
		"\033[31mred\033[0m and \033]0;a title\007done\n"
		"tab\there\n"
		"progress 10%\rprogress 99%\n"
		"crlf line\r\n"
		"utf8 \xc3\xa9t\xc3\xa9\n"
		"bell\007 and del\177 gone\n"
		"no newline at the end";

	write_all(1, text, sizeof(text) - 1);
	write_all(2, "\nfrom stderr\n", 13);
	/* isatty(1): a pty is a terminal. */
	write_all(1, isatty(1) ? "tty=1\n" : "tty=0\n", 6);
}

static void test_lines(void **state)
{
	char err[200] = "";
	struct output *o = output_create(true, true, 100, 30, err, sizeof(err));
	static const char *const want[] = {
		"plain line",	     "red and done",
		"tab     here",	     "progress 99%",
		"crlf line",	     "utf8 \xc3\xa9t\xc3\xa9",
		"bell and del gone", "no newline at the end",
		"from stderr",	     "tty=1",
	};

	(void)state;
	assert_non_null(o);
	assert_int_equal(run_child(o, body_text), 0);
	assert_int_equal(last_end.err, 0);
	assert_int_equal(output_total(o), sizeof(want) / sizeof(want[0]));
	assert_int_equal(output_first(o), 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_string_equal(output_line(o, i), want[i]);
	assert_string_equal(output_line(o, output_total(o)), "");
	assert_string_equal(output_partial(o), "");
	assert_int_equal(output_fd(o), -1);
	output_destroy(o);
}

static void body_many(void)
{
	char line[64];

	for (int i = 0; i < OUTPUT_LINES + 10; i++) {
		int n = snprintf(line, sizeof(line), "line %d\n", i);

		write_all(1, line, (size_t)n);
	}
	/* A line longer than OUTPUT_LINE_MAX is kept as several. */
	for (int i = 0; i < OUTPUT_LINE_MAX + 5; i++)
		write_all(1, "x", 1);
	write_all(1, "\n", 1);
}

static void test_ring(void **state)
{
	char err[200] = "";
	struct output *o = output_create(true, true, 0, 0, err, sizeof(err));
	uint64_t total;
	char want[64];

	(void)state;
	assert_non_null(o);
	assert_int_equal(run_child(o, body_many), 0);
	total = output_total(o);
	assert_int_equal(total, OUTPUT_LINES + 10 + 2);
	assert_int_equal(output_first(o), total - OUTPUT_LINES);
	/* The oldest kept, and the one before it is gone. */
	snprintf(want, sizeof(want), "line %d", 12);
	assert_string_equal(output_line(o, output_first(o)), want);
	assert_string_equal(output_line(o, output_first(o) - 1), "");
	snprintf(want, sizeof(want), "line %d", OUTPUT_LINES + 9);
	assert_string_equal(output_line(o, total - 3), want);
	assert_int_equal(strlen(output_line(o, total - 2)), OUTPUT_LINE_MAX);
	assert_string_equal(output_line(o, total - 1), "xxxxx");
	output_destroy(o);
}

static void test_file(void **state)
{
	char dir[] = "/tmp/corotop-test-output-XXXXXX";
	char path[128], link[128], err[200] = "", buf[1024];
	struct output *o;
	struct stat st;
	ssize_t got;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.log", dir);
	snprintf(link, sizeof(link), "%s/link.log", dir);
	/* Appended to: what was there stays. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	write_all(fd, "before\n", 7);
	close(fd);
	o = output_create(true, true, 0, 0, err, sizeof(err));
	assert_non_null(o);
	fd = output_file_open(path, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(run_child_with(o, fd, NULL, body_text), 0);
	assert_int_equal(last_end.err, 0);
	output_destroy(o);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(got > 0);
	buf[got] = '\0';
	/* Every byte as the target wrote it, escapes included. */
	assert_non_null(strstr(buf, "before\nplain line\n\033[31mred"));
	assert_non_null(strstr(buf, "progress 10%\rprogress 99%\n"));
	assert_non_null(strstr(buf, "from stderr\ntty=1\n"));

	/* Never through a symbolic link; never a directory. */
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(output_file_open(link, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot open --output file"));
	assert_int_equal(output_file_open(dir, err, sizeof(err)), -1);
	/* A new file is the user's alone. */
	unlink(path);
	fd = output_file_open(path, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	close(fd);
	unlink(link);
	unlink(path);
	rmdir(dir);
}

/* The target's stdin is the pty: a read waits (nobody types into it), it
 * does not read the TUI's keys or see EOF. */
static void body_stdin(void)
{
	struct pollfd p = {.fd = 0, .events = POLLIN};
	int r = poll(&p, 1, 200);

	write_all(1, r == 0 ? "stdin waits\n" : "stdin ready\n", 12);
}

static void test_stdin(void **state)
{
	char err[200] = "";
	struct output *o = output_create(true, true, 0, 0, err, sizeof(err));

	(void)state;
	assert_non_null(o);
	assert_true(output_target_in(o) >= 0);
	assert_int_equal(run_child(o, body_stdin), 0);
	assert_int_equal(output_total(o), 1);
	assert_string_equal(output_line(o, 0), "stdin waits");
	output_destroy(o);
	output_destroy(NULL);
}

/* Batch mode's shape: a pipe, no view, stdin left alone; the target sees
 * no terminal.  The destination fails: reported once, with its errno and
 * what was written before it. */
static void body_short(void)
{
	write_all(1, isatty(1) ? "tty=1\n" : "tty=0\n", 6);
}

static void test_failed_destination(void **state)
{
	char dir[] = "/tmp/corotop-test-output-XXXXXX";
	char path[128], err[200] = "", buf[64];
	struct output *o = output_create(false, false, 0, 0, err, sizeof(err));
	uint64_t at = 7;
	int fd;

	(void)state;
	assert_non_null(o);
	assert_int_equal(output_target_in(o), -1);
	assert_int_equal(output_fd(o), -1); /* no view */
	fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(run_child_with(o, fd, NULL, body_short), 0);
	assert_int_equal(last_end.err, ENOSPC);
	assert_int_equal(last_end.at, 0);
	assert_int_equal(keeper_sink_error(&at), 0); /* stopped: reset */
	output_destroy(o);

	/* The same shape into a file: every byte, and no terminal. */
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.log", dir);
	o = output_create(false, false, 0, 0, err, sizeof(err));
	assert_non_null(o);
	fd = output_file_open(path, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(run_child_with(o, fd, NULL, body_short), 0);
	assert_int_equal(last_end.err, 0);
	output_destroy(o);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf)), 6);
	close(fd);
	assert_memory_equal(buf, "tty=0\n", 6);
	unlink(path);
	rmdir(dir);
}

/* 3 MiB of 12-byte lines while nobody drains the view: it misses most,
 * and its last line says exactly how many bytes; the file has them all.
 * The child then holds its output open until the test has started to
 * drain the view (flood_gate): the keeper writes that line when the output
 * ends, if the view makes room within a second, and the test must not
 * depend on being that quick. */
#define MANY_LINES (3 * 1024 * 1024 / 12)

static int flood_gate[2];
static char flood_path[128];

static void body_flood(void)
{
	static char chunk[12 * 1024 + 1]; /* snprintf's last NUL */
	char c;

	for (int i = 0; i < MANY_LINES; i += 1024) {
		for (int k = 0; k < 1024; k++)
			snprintf(chunk + 12 * k, 13, "line %06d\n", i + k);
		write_all(1, chunk, 12 * 1024);
	}
	(void)!read(flood_gate[0], &c, 1);
}

/* Until the keeper wrote it all to the file (deadline), then the view
 * drained once, then the child let go. */
static void hold_flooded(struct output *o)
{
	uint64_t end = now_ms() + 60000;
	struct stat st;

	while (stat(flood_path, &st) == 0 && st.st_size < 12 * MANY_LINES &&
	       now_ms() < end)
		usleep(1000);
	output_drain(o);
	assert_int_equal(write(flood_gate[1], "g", 1), 1);
}

static void test_view_behind(void **state)
{
	char dir[] = "/tmp/corotop-test-output-XXXXXX";
	char path[128], err[200] = "";
	struct output *o = output_create(false, true, 0, 0, err, sizeof(err));
	unsigned long long lost = 0;
	uint64_t total, shown;
	const char *before;
	struct stat st;
	int fd;

	(void)state;
	assert_non_null(o);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.log", dir);
	snprintf(flood_path, sizeof(flood_path), "%s", path);
	assert_int_equal(pipe(flood_gate), 0);
	fd = output_file_open(path, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(run_child_with(o, fd, hold_flooded, body_flood), 0);
	close(flood_gate[0]);
	close(flood_gate[1]);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 12ull * MANY_LINES);
	total = output_total(o);
	assert_true(total >= 2);
	assert_int_equal(sscanf(output_line(o, total - 1),
				"[corotop: %llu bytes of output not shown "
				"here",
				&lost),
			 1);
	/* The lines before it: whole ones, maybe a cut one last. */
	before = output_line(o, total - 2);
	shown = 12 * (total - 2) + strlen(before);
	assert_true(lost > 0);
	/* "line 012345" is whole, or cut just before its newline. */
	assert_true(shown + lost == 12ull * MANY_LINES ||
		    (strlen(before) == 11 &&
		     shown + 1 + lost == 12ull * MANY_LINES));
	output_destroy(o);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_ring),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_stdin),
		cmocka_unit_test(test_failed_destination),
		cmocka_unit_test(test_view_behind),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
