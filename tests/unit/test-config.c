/*
 * config: the corotop config file (src/ui/settings/config.c).  Each test works
 * in a fresh temporary directory.  Loading: a missing file gives the defaults;
 * comments, blank lines, blanks and CRLF are accepted; every bad line is
 * reported once as "path:line: message" and skipped while the rest still
 * applies.  Saving one key (config_set) is checked byte for byte: every
 * other line, comment and the order survive, the key's line keeps its
 * spacing and trailing comment, new keys are appended, a new file and its
 * directories are created 0600/0700, the write leaves no temp file, and a
 * refused value leaves the file alone.  Path resolution follows
 * XDG_CONFIG_HOME, then HOME.
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

#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ui/settings/config.h"

static char dir[256];

static int rm_one(const char *p, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int setup(void **state)
{
	const char *tmp = getenv("TMPDIR");

	(void)state;
	snprintf(dir, sizeof(dir), "%s/corotop-config-XXXXXX",
		 tmp && tmp[0] ? tmp : "/tmp");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void in_dir(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", dir, name);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* The whole file (caller frees), or NULL when missing. */
static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;

	if (!f)
		return NULL;
	{
		FILE *m = open_memstream(&buf, &len);
		int ch;

		while ((ch = fgetc(f)) != EOF)
			fputc(ch, m);
		fclose(m);
	}
	fclose(f);
	return buf;
}

static void assert_file(const char *path, const char *want)
{
	char *got = read_file(path);

	if (!got)
		fail_msg("%s is missing", path);
	if (strcmp(got, want) != 0) {
		print_error("--- want\n%s--- got\n%s---\n", want, got);
		free(got);
		fail_msg("%s differs", path);
	}
	free(got);
}

/* Warnings collected by config_load. */
struct warns {
	char msg[16][512];
	int n;
};

static void collect(void *ctx, const char *msg)
{
	struct warns *w = ctx;

	if (w->n < 16)
		snprintf(w->msg[w->n], sizeof(w->msg[0]), "%s", msg);
	w->n++;
}

static void assert_warn(const struct warns *w, int i, const char *path,
			int line, const char *part)
{
	char prefix[512];

	assert_true(i < w->n);
	snprintf(prefix, sizeof(prefix), "%s:%d: ", path, line);
	if (strncmp(w->msg[i], prefix, strlen(prefix)) != 0 ||
	    !strstr(w->msg[i] + strlen(prefix), part))
		fail_msg("warning %d is '%s'; want '%s...%s...'", i, w->msg[i],
			 prefix, part);
}

static void assert_defaults(const struct config *c)
{
	struct config d;

	config_defaults(&d);
	assert_memory_equal(c, &d, sizeof(d));
}

/* ---- loading ---- */

static void test_defaults(void **state)
{
	struct config c;

	(void)state;
	memset(&c, 0x5A, sizeof(c));
	config_defaults(&c);
	assert_int_equal(c.delay_tenths, 10);
	assert_int_equal(c.linger_s, 3);
	assert_string_equal(c.sort_key, "id");
	assert_false(c.sort_invert);
	assert_true(c.color);
	assert_true(c.mouse);
	assert_string_equal(c.columns, "");
	for (int k = 0; k < LINT_COUNT; k++)
		assert_true(c.lints.enabled[k]);
	assert_true(c.lints.suspended_ns == 5000000000ull);
	assert_true(c.lints.running_ns == 1000000000ull);
	assert_true(c.lints.storm_per_sec == 10000.0);
	assert_true(c.lints.dead_ns == 1000000000ull);
}

static void test_missing_file_is_defaults(void **state)
{
	struct warns w = {0};
	struct config c;
	char path[300];

	(void)state;
	in_dir(path, sizeof(path), "nope/config");
	memset(&c, 0x5A, sizeof(c));
	assert_true(config_load(&c, path, collect, &w));
	assert_int_equal(w.n, 0);
	assert_defaults(&c);
	/* No callback is fine too. */
	assert_true(config_load(&c, path, NULL, NULL));
}

static void test_parse_everything(void **state)
{
	struct warns w = {0};
	struct config c;
	char path[300];

	(void)state;
	in_dir(path, sizeof(path), "config");
	write_file(path, "# corotop\n"
			 "\n"
			 "   \t\n"
			 "  # indented comment = with an equals sign\n"
			 "delay=5\n"
			 "  sort   =   in-state   # longest first\n"
			 "sort_invert = yes\n"
			 "color\t=\tOFF\r\n"
			 "mouse = false\n"
			 "columns = id, state ,in-state,sw/s,RUN%\n"
			 "lint.stall = off\n"
			 "lint.lost-wakeup.threshold = 0.5\n"
			 "lint.storm.threshold = 2.5e3 # switches/s\n"
			 "lint.dead-station.threshold = 0\n"
			 "delay = 7\n"	     /* a later line wins */
			 "lint.storm = on"); /* no final newline */
	assert_true(config_load(&c, path, collect, &w));
	for (int i = 0; i < w.n && i < 16; i++)
		print_error("unexpected: %s\n", w.msg[i]);
	assert_int_equal(w.n, 0);
	assert_int_equal(c.delay_tenths, 7);
	assert_string_equal(c.sort_key, "in-state");
	assert_true(c.sort_invert);
	assert_false(c.color);
	assert_false(c.mouse);
	assert_string_equal(c.columns, "id,state,in-state,sw/s,RUN%");
	assert_false(c.lints.enabled[LINT_STALL]);
	assert_true(c.lints.enabled[LINT_STORM]);
	assert_true(c.lints.enabled[LINT_LOST_WAKEUP]);
	assert_true(c.lints.suspended_ns == 500000000ull);
	assert_true(c.lints.storm_per_sec == 2500.0);
	assert_true(c.lints.dead_ns == 0);
	assert_true(c.lints.running_ns == 1000000000ull); /* untouched */

	/* Loading starts from the defaults, not from what c held. */
	write_file(path, "mouse = off\n");
	assert_true(config_load(&c, path, collect, &w));
	assert_int_equal(c.delay_tenths, 10);
	assert_true(c.color);
	assert_false(c.mouse);
}

static void test_bad_lines_reported_and_skipped(void **state)
{
	struct warns w = {0};
	struct config c;
	char path[300];

	(void)state;
	in_dir(path, sizeof(path), "config");
	write_file(path, "delay = 3\n"			 /* 1 ok */
			 "delay = 0\n"			 /* 2 range */
			 "delay = 2x\n"			 /* 3 junk */
			 "# fine\n"			 /* 4 */
			 "colour = on\n"		 /* 5 unknown key */
			 "just some words\n"		 /* 6 no '=' */
			 "= 4\n"			 /* 7 no key */
			 "mouse = maybe\n"		 /* 8 bad bool */
			 "sort = \n"			 /* 9 empty */
			 "columns = id,,state\n"	 /* 10 empty name */
			 "lint.nope = on\n"		 /* 11 unknown lint */
			 "lint.stall.threshold = -1\n"	 /* 12 negative */
			 "lint.storm.threshold = fast\n" /* 13 not a number */
			 "lint.stall.threshold = 1e99\n" /* 14 too big */
			 "lint.stall.threshold =  nan\n" /* 15 nan */
			 "sort = in state\n"		 /* 16 blank inside */
			 "color = off\n"		 /* 17 ok */
			 "delay = -5\n");		 /* 18 sign */
	assert_true(config_load(&c, path, collect, &w));
	assert_int_equal(w.n, 15);
	assert_warn(&w, 0, path, 2,
		    "delay: expected tenths of a second from "
		    "1 to 36000, got '0'");
	assert_warn(&w, 1, path, 3, "got '2x'");
	assert_warn(&w, 2, path, 5, "unknown key 'colour'");
	assert_warn(&w, 3, path, 6, "expected 'key = value', got 'just some");
	assert_warn(&w, 4, path, 7, "expected 'key = value'");
	assert_warn(&w, 5, path, 8, "mouse: expected on or off, got 'maybe'");
	assert_warn(&w, 6, path, 9, "sort: expected a column name");
	assert_warn(&w, 7, path, 10, "columns: expected column names");
	assert_warn(&w, 8, path, 11, "unknown key 'lint.nope'");
	assert_warn(&w, 9, path, 12,
		    "lint.stall.threshold: expected a number "
		    "of seconds, got '-1'");
	assert_warn(&w, 10, path, 13,
		    "expected a number of switches per "
		    "second, got 'fast'");
	assert_warn(&w, 11, path, 14, "got '1e99'");
	assert_warn(&w, 12, path, 15, "got 'nan'");
	assert_warn(&w, 13, path, 16, "got 'in state'");
	assert_warn(&w, 14, path, 18, "got '-5'");
	/* Skipped: the earlier good value stands; later lines still apply. */
	assert_int_equal(c.delay_tenths, 3);
	assert_true(c.mouse);
	assert_string_equal(c.sort_key, "id");
	assert_string_equal(c.columns, "");
	assert_true(c.lints.running_ns == 1000000000ull);
	assert_true(c.lints.storm_per_sec == 10000.0);
	assert_false(c.color);
}

static void test_unreadable_file(void **state)
{
	struct warns w = {0};
	struct config c;

	(void)state;
	/* A directory opens but cannot be read as a file. */
	assert_false(config_load(&c, dir, collect, &w));
	assert_int_equal(w.n, 1);
	assert_non_null(strstr(w.msg[0], dir));
	assert_defaults(&c);
}

static void test_apply(void **state)
{
	char err[256], longcols[400];
	struct config c;

	(void)state;
	config_defaults(&c);
	assert_true(config_apply(&c, "columns", "", err, sizeof(err)));
	assert_string_equal(c.columns, "");
	assert_true(
		config_apply(&c, "columns", " id ,\tstate", err, sizeof(err)));
	assert_string_equal(c.columns, "id,state");
	assert_false(config_apply(&c, "columns", "id,", err, sizeof(err)));
	assert_false(config_apply(&c, "columns", "id;state", err, sizeof(err)));
	memset(longcols, 'a', sizeof(longcols) - 1);
	longcols[sizeof(longcols) - 1] = '\0';
	assert_false(config_apply(&c, "columns", longcols, err, sizeof(err)));
	assert_non_null(strstr(err, "longer than 255"));
	assert_false(config_apply(&c, "sort", longcols, err, sizeof(err)));
	assert_string_equal(c.columns, "id,state"); /* unchanged */
	assert_true(config_apply(&c, "delay", "36000", err, sizeof(err)));
	assert_false(config_apply(&c, "delay", "36001", err, sizeof(err)));
	assert_false(config_apply(&c, "delay", " 5", err, sizeof(err)));
	assert_int_equal(c.delay_tenths, 36000);
	/* linger: whole seconds, 0 to a day. */
	assert_true(config_apply(&c, "linger", "0", err, sizeof(err)));
	assert_int_equal(c.linger_s, 0);
	assert_true(config_apply(&c, "linger", "86400", err, sizeof(err)));
	assert_false(config_apply(&c, "linger", "86401", err, sizeof(err)));
	assert_non_null(strstr(err, "expected seconds from 0 to 86400"));
	assert_false(config_apply(&c, "linger", "1.5", err, sizeof(err)));
	assert_false(config_apply(&c, "linger", "-1", err, sizeof(err)));
	assert_false(config_apply(&c, "linger", "", err, sizeof(err)));
	assert_int_equal(c.linger_s, 86400);
	assert_false(config_apply(&c, "lint.storm.threshold", " 5", err,
				  sizeof(err)));
	assert_false(
		config_apply(&c, "lint.storm.threshold", "", err, sizeof(err)));
	assert_false(
		config_apply(&c, "lint..threshold", "1", err, sizeof(err)));
	assert_false(config_apply(&c, "lint.threshold", "1", err, sizeof(err)));
	assert_false(config_apply(&c, "Delay", "5", err, sizeof(err)));
	assert_string_equal(err, "unknown key 'Delay'");
	assert_true(
		config_apply(&c, "lint.dead-station", "0", err, sizeof(err)));
	assert_false(c.lints.enabled[LINT_DEAD_STATION]);
	assert_true(config_apply(&c, "lint.dead-station.threshold", "2", err,
				 sizeof(err)));
	assert_true(c.lints.dead_ns == 2000000000ull);
}

/* ---- saving ---- */

static const char hand_edited[] = "# my corotop settings\n"
				  "\n"
				  "color = off   # the terminal is ugly\n"
				  "  delay=20\n"
				  "# delay = 99 (an old idea)\n"
				  "lint.stall = off\r\n"
				  "mouse = on\n";

static void test_set_replaces_and_keeps_everything_else(void **state)
{
	char path[300], err[256];
	struct config c;

	(void)state;
	in_dir(path, sizeof(path), "config");
	write_file(path, hand_edited);
	assert_true(config_set(path, "delay", "5", err, sizeof(err)));
	assert_file(path, "# my corotop settings\n"
			  "\n"
			  "color = off   # the terminal is ugly\n"
			  "  delay=5\n"
			  "# delay = 99 (an old idea)\n"
			  "lint.stall = off\r\n"
			  "mouse = on\n");
	/* The trailing comment and the CRLF of the changed line survive. */
	assert_true(config_set(path, "color", "on", err, sizeof(err)));
	assert_true(config_set(path, "lint.stall", "on", err, sizeof(err)));
	assert_file(path, "# my corotop settings\n"
			  "\n"
			  "color = on   # the terminal is ugly\n"
			  "  delay=5\n"
			  "# delay = 99 (an old idea)\n"
			  "lint.stall = on\r\n"
			  "mouse = on\n");
	assert_true(config_load(&c, path, NULL, NULL));
	assert_int_equal(c.delay_tenths, 5);
	assert_true(c.color);
	assert_true(c.lints.enabled[LINT_STALL]);
}

static void test_set_appends_new_keys(void **state)
{
	char path[300], err[256];

	(void)state;
	in_dir(path, sizeof(path), "config");
	write_file(path, hand_edited);
	assert_true(config_set(path, "columns", "id,state,where", err,
			       sizeof(err)));
	assert_true(config_set(path, "lint.storm.threshold", "500", err,
			       sizeof(err)));
	assert_file(path, "# my corotop settings\n"
			  "\n"
			  "color = off   # the terminal is ugly\n"
			  "  delay=20\n"
			  "# delay = 99 (an old idea)\n"
			  "lint.stall = off\r\n"
			  "mouse = on\n"
			  "columns = id,state,where\n"
			  "lint.storm.threshold = 500\n");
	/* A file without a final newline gets one before the new line. */
	write_file(path, "delay = 3");
	assert_true(config_set(path, "sort", "age", err, sizeof(err)));
	assert_file(path, "delay = 3\nsort = age\n");
	assert_true(config_set(path, "delay", "4", err, sizeof(err)));
	assert_file(path, "delay = 4\nsort = age\n");
}

static void test_set_edge_lines(void **state)
{
	char path[300], err[256];
	struct config c;

	(void)state;
	in_dir(path, sizeof(path), "config");
	/* Repeated key: the last one is the one that counts, and changes. */
	write_file(path, "sort = id\nsort = age\n");
	assert_true(config_set(path, "sort", "tid", err, sizeof(err)));
	assert_file(path, "sort = id\nsort = tid\n");
	/* An empty value followed by a comment: the comment stays apart. */
	write_file(path, "sort = # pick one\n");
	assert_true(config_set(path, "sort", "seq", err, sizeof(err)));
	assert_file(path, "sort = seq # pick one\n");
	assert_true(config_load(&c, path, NULL, NULL));
	assert_string_equal(c.sort_key, "seq");
	/* A key that only occurs in a comment or as a prefix is not it. */
	write_file(path, "# mouse = on\nmouse_speed = 3\n");
	assert_true(config_set(path, "mouse", "off", err, sizeof(err)));
	assert_file(path, "# mouse = on\nmouse_speed = 3\nmouse = off\n");
}

static bool dir_has_only(const char *d, const char *name)
{
	struct dirent *de;
	bool ok = true;
	DIR *dp = opendir(d);

	assert_non_null(dp);
	while ((de = readdir(dp)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strcmp(de->d_name, name))
			ok = false;
	closedir(dp);
	return ok;
}

static void test_set_creates_file_and_dirs(void **state)
{
	char path[300], sub[300], sub2[300], err[256], want[1024];
	struct stat st;
	struct config c;
	mode_t old = umask(022);

	(void)state;
	in_dir(sub, sizeof(sub), "xdg");
	in_dir(sub2, sizeof(sub2), "xdg/corotop");
	in_dir(path, sizeof(path), "xdg/corotop/config");
	assert_true(config_set(path, "delay", "5", err, sizeof(err)));
	umask(old);
	assert_int_equal(stat(sub, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(stat(sub2, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	/* A commented header, then the setting. */
	snprintf(want, sizeof(want), "%s",
		 "# corotop configuration: one `key = value` per line, `#` "
		 "starts a\n"
		 "# comment.  corotop rewrites only the line of a setting you "
		 "change\n"
		 "# in its setup screen (F2); everything else here is kept as "
		 "is.\n"
		 "delay = 5\n");
	assert_file(path, want);
	assert_true(dir_has_only(sub2, "config")); /* no temp file left */
	assert_true(config_load(&c, path, NULL, NULL));
	assert_int_equal(c.delay_tenths, 5);
}

static void test_set_keeps_mode_and_symlink(void **state)
{
	char path[300], real[300], err[256];
	struct stat st;

	(void)state;
	in_dir(path, sizeof(path), "config");
	write_file(path, "delay = 1\n");
	assert_int_equal(chmod(path, 0640), 0);
	assert_true(config_set(path, "delay", "2", err, sizeof(err)));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_file(path, "delay = 2\n");
	assert_true(dir_has_only(dir, "config"));

	/* A symlinked config (dotfile managers): the target changes, the
	 * link stays a link. */
	in_dir(real, sizeof(real), "real");
	assert_int_equal(rename(path, real), 0);
	assert_int_equal(symlink("real", path), 0);
	assert_true(config_set(path, "delay", "3", err, sizeof(err)));
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_file(real, "delay = 3\n");
}

static void test_set_refuses_bad_input(void **state)
{
	char path[300], err[256];

	(void)state;
	in_dir(path, sizeof(path), "sub/config");
	assert_false(config_set(path, "colour", "on", err, sizeof(err)));
	assert_string_equal(err, "unknown key 'colour'");
	assert_false(
		config_set(path, "delay", "5\nmouse = off", err, sizeof(err)));
	assert_false(config_set(path, "sort", "id # x", err, sizeof(err)));
	assert_null(read_file(path)); /* nothing created */
	in_dir(path, sizeof(path), "config");
	write_file(path, "delay = 1\n");
	assert_false(config_set(path, "delay", "0", err, sizeof(err)));
	assert_non_null(strstr(err, "delay: expected tenths"));
	assert_file(path, "delay = 1\n");
	/* A directory where the file should be. */
	in_dir(path, sizeof(path), "adir");
	assert_int_equal(mkdir(path, 0700), 0);
	assert_false(config_set(path, "delay", "2", err, sizeof(err)));
	assert_non_null(strstr(err, "not a regular file"));
}

/* ---- path ---- */

static void test_path_resolution(void **state)
{
	char *xdg0 = getenv("XDG_CONFIG_HOME"), *home0 = getenv("HOME");
	char *xdg_save = xdg0 ? strdup(xdg0) : NULL;
	char *home_save = home0 ? strdup(home0) : NULL;
	char buf[256], tiny[8];

	(void)state;
	setenv("XDG_CONFIG_HOME", "/x/conf", 1);
	setenv("HOME", "/home/u", 1);
	assert_true(config_path(buf, sizeof(buf)));
	assert_string_equal(buf, "/x/conf/corotop/config");
	assert_false(config_path(tiny, sizeof(tiny))); /* too small */
	/* Empty or relative XDG_CONFIG_HOME is ignored (XDG spec). */
	setenv("XDG_CONFIG_HOME", "", 1);
	assert_true(config_path(buf, sizeof(buf)));
	assert_string_equal(buf, "/home/u/.config/corotop/config");
	setenv("XDG_CONFIG_HOME", "rel/conf", 1);
	assert_true(config_path(buf, sizeof(buf)));
	assert_string_equal(buf, "/home/u/.config/corotop/config");
	unsetenv("XDG_CONFIG_HOME");
	assert_true(config_path(buf, sizeof(buf)));
	assert_string_equal(buf, "/home/u/.config/corotop/config");
	unsetenv("HOME");
	assert_false(config_path(buf, sizeof(buf)));
	setenv("HOME", "", 1);
	assert_false(config_path(buf, sizeof(buf)));
	setenv("XDG_CONFIG_HOME", "/only/xdg", 1);
	assert_true(config_path(buf, sizeof(buf)));
	assert_string_equal(buf, "/only/xdg/corotop/config");

	if (xdg_save)
		setenv("XDG_CONFIG_HOME", xdg_save, 1);
	else
		unsetenv("XDG_CONFIG_HOME");
	if (home_save)
		setenv("HOME", home_save, 1);
	else
		unsetenv("HOME");
	free(xdg_save);
	free(home_save);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_defaults),
		T(test_missing_file_is_defaults),
		T(test_parse_everything),
		T(test_bad_lines_reported_and_skipped),
		T(test_unreadable_file),
		T(test_apply),
		T(test_set_replaces_and_keeps_everything_else),
		T(test_set_appends_new_keys),
		T(test_set_edge_lines),
		T(test_set_creates_file_and_dirs),
		T(test_set_keeps_mode_and_symlink),
		T(test_set_refuses_bad_input),
		T(test_path_resolution),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
