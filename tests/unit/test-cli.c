/*
 * cli: corotop's command line (src/ui/settings/cli.c).  Happy paths check every
 * field cli_parse fills in, for short and long spellings and both modes
 * (launch a command, observe --shm).  Every error path must return
 * CLI_ERROR with a single message that starts with "corotop: " and names
 * what the user typed wrong.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "ui/settings/cli.h"

static struct cli cli;
static char err[256];

/* Parse a NULL-terminated argument list; argv[0] is "corotop". */
static enum cli_result parse_list(char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	memset(err, 0, sizeof(err));
	return cli_parse(argc, argv, &cli, err, sizeof(err));
}

#define ARGV(...) ((char *[]){"corotop", __VA_ARGS__, NULL})
#define PARSE(...) parse_list(ARGV(__VA_ARGS__))

/* CLI_ERROR, message "corotop: ..." that mentions `what`. */
static void expect_error(enum cli_result res, const char *what)
{
	assert_int_equal(res, CLI_ERROR);
	assert_memory_equal(err, "corotop: ", 9);
	assert_null(strchr(err, '\n'));
	for (const char *p = err; *p; p++)
		if ((unsigned char)*p < 0x20)
			fail_msg("control character in message: %s", err);
	if (!strstr(err, what))
		fail_msg("message '%s' does not mention '%s'", err, what);
}

static void test_launch_with_double_dash(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--", "./srv", "--port", "80"), CLI_OK);
	assert_non_null(cli.command);
	assert_string_equal(cli.command[0], "./srv");
	assert_string_equal(cli.command[1], "--port");
	assert_string_equal(cli.command[2], "80");
	assert_null(cli.command[3]);
	assert_null(cli.shm);
	/* defaults */
	assert_false(cli.batch);
	assert_int_equal(cli.iterations, 0);
	assert_int_equal(cli.delay_tenths, 10);
	assert_int_equal(cli.format, CLI_TEXT);
	assert_int_equal(cli.stations, 4096);
	assert_null(cli.jsonl);
	/* after "--" even option-looking words belong to the command */
	assert_int_equal(PARSE("-b", "--", "-x", "-n"), CLI_OK);
	assert_string_equal(cli.command[0], "-x");
	assert_true(cli.batch);
}

static void test_launch_without_double_dash(void **state)
{
	(void)state;
	/* The first non-option starts the command; its options are its. */
	assert_int_equal(PARSE("-b", "./srv", "-n", "3", "--shm", "x"), CLI_OK);
	assert_true(cli.batch);
	assert_string_equal(cli.command[0], "./srv");
	assert_string_equal(cli.command[1], "-n");
	assert_int_equal(cli.iterations, 0);
	assert_null(cli.shm);
}

static void test_all_short_options(void **state)
{
	(void)state;
	assert_int_equal(PARSE("-b", "-n", "5", "-d", "3", "-f", "json",
			       "--stations", "128", "--jsonl", "ev.jsonl", "--",
			       "prog"),
			 CLI_OK);
	assert_true(cli.batch);
	assert_int_equal(cli.iterations, 5);
	assert_int_equal(cli.delay_tenths, 3);
	assert_int_equal(cli.format, CLI_JSON);
	assert_int_equal(cli.stations, 128);
	assert_string_equal(cli.jsonl, "ev.jsonl");
	assert_string_equal(cli.command[0], "prog");
	/* attached values and clusters */
	assert_int_equal(
		PARSE("-bn7", "-d1", "-ftext", "--stations=1048576", "p"),
		CLI_OK);
	assert_true(cli.batch);
	assert_int_equal(cli.iterations, 7);
	assert_int_equal(cli.delay_tenths, 1);
	assert_int_equal(cli.format, CLI_TEXT);
	assert_int_equal(cli.stations, 1048576);
	/* -s COLUMN sorts (htop's -s), and only sorts (CHANGELOG.md). */
	assert_int_equal(PARSE("-s", "in-state", "p"), CLI_OK);
	assert_string_equal(cli.sort, "in-state");
	assert_int_equal(cli.stations, 4096);
	assert_int_equal(PARSE("-sswitches", "--stations", "64", "p"), CLI_OK);
	assert_string_equal(cli.sort, "switches");
	assert_int_equal(cli.stations, 64);
	/* --stations is a count only. */
	assert_int_equal(PARSE("--stations", "in-state", "p"), CLI_ERROR);
	assert_int_equal(PARSE("--stations", "-5", "p"), CLI_ERROR);
}

/* Every numeric option at its bounds: min and max taken, one beyond
 * either refused with a message naming the option and the value (the
 * bounds are written out here, not read from cli.c's table). */
static void test_numeric_bounds(void **state)
{
	static struct {
		char *opt;
		unsigned long min, max;
	} num[] = {
		{"--iterations", 1, UINT_MAX}, {"--delay", 1, 36000},
		{"--stations", 1, 1048576},    {"--hot-stacks", 0, 10000},
		{"--hot-window", 1, 3600},     {"--hot-half-life", 0, 3600},
		{"--sample", 1, 10000},	       {"--pid", 1, INT_MAX},
		{"--ppt-block", 1, 4194304},   {"--ppt-frames", 0, 100000},
	};
	char a[32], b[32];

	(void)state;
	for (size_t i = 0; i < sizeof(num) / sizeof(*num); i++) {
		/* --pid and the ppt options want attach mode: -p 1 first
		 * (then --pid itself replaces it). */
		bool attach = !strncmp(num[i].opt, "--ppt", 5) ||
			      !strcmp(num[i].opt, "--pid");

		snprintf(a, sizeof(a), "%lu", num[i].min);
		snprintf(b, sizeof(b), "%lu", num[i].max);
		if (attach) {
			assert_int_equal(PARSE("-p", "1", num[i].opt, a),
					 CLI_OK);
			assert_int_equal(PARSE("-p", "1", num[i].opt, b),
					 CLI_OK);
		} else {
			assert_int_equal(PARSE(num[i].opt, a, "x"), CLI_OK);
			assert_int_equal(PARSE(num[i].opt, b, "x"), CLI_OK);
		}
		snprintf(b, sizeof(b), "%lu", num[i].max + 1);
		expect_error(PARSE(num[i].opt, b, "x"), num[i].opt);
		assert_non_null(strstr(err, b));
		if (num[i].min) {
			snprintf(a, sizeof(a), "%lu", num[i].min - 1);
			expect_error(PARSE(num[i].opt, a, "x"), num[i].opt);
		}
	}
}

/* CHANGELOG.md: -s no longer takes a station count; a number given to it
 * is refused with a message that names --stations, and sizes nothing. */
static void test_s_is_sort_only(void **state)
{
	(void)state;
	expect_error(PARSE("-s", "64", "p"), "--stations N");
	assert_non_null(strstr(err, "'64'"));
	expect_error(PARSE("-s64", "p"), "--stations N");
	assert_int_equal(PARSE("--sort", "state", "p"), CLI_OK);
	assert_string_equal(cli.sort, "state");
	assert_int_equal(cli.stations, 4096);
}

static void test_all_long_options(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--batch", "--iterations=9", "--delay", "36000",
			       "--format=json", "--stations", "1", "--jsonl=j",
			       "--shm", "/r/ctp.shm", "--sock", "/r/ctp.sock"),
			 CLI_OK);
	assert_true(cli.batch);
	assert_int_equal(cli.iterations, 9);
	assert_int_equal(cli.delay_tenths, 36000);
	assert_int_equal(cli.format, CLI_JSON);
	assert_int_equal(cli.stations, 1);
	assert_string_equal(cli.jsonl, "j");
	assert_string_equal(cli.shm, "/r/ctp.shm");
	assert_string_equal(cli.sock, "/r/ctp.sock");
	assert_null(cli.command);
	assert_int_equal(PARSE("--iterations", "4294967295", "--shm", "s"),
			 CLI_OK);
	assert_int_equal(cli.iterations, 4294967295u);
}

static void test_help_version_and_reparse(void **state)
{
	(void)state;
	assert_int_equal(PARSE("-h"), CLI_HELP);
	assert_int_equal(PARSE("--help"), CLI_HELP);
	assert_int_equal(PARSE("-V"), CLI_VERSION);
	assert_int_equal(PARSE("--version"), CLI_VERSION);
	assert_non_null(strstr(cli_usage_text(), "--shm"));
	/* A second parse starts from scratch (getopt state reset). */
	assert_int_equal(PARSE("-n", "2", "-b", "x"), CLI_OK);
	assert_int_equal(PARSE("-d", "4", "y"), CLI_OK);
	assert_int_equal(cli.iterations, 0);
	assert_false(cli.batch);
	assert_string_equal(cli.command[0], "y");
}

static void test_unknown_options(void **state)
{
	(void)state;
	expect_error(PARSE("--bogus", "--", "x"), "--bogus");
	expect_error(PARSE("-x", "--", "x"), "-x");
	expect_error(PARSE("-bq", "x"), "-q");
	expect_error(PARSE("--nope=3", "x"), "--nope");
	expect_error(PARSE("--s", "x"), "--s"); /* ambiguous prefix */
	assert_non_null(strstr(err, "unknown option"));
}

/* -c names are checked while parsing: a usage error, before any process
 * is looked at. */
static void test_counters_named(void **state)
{
	(void)state;
	expect_error(PARSE("-p", "1", "-c", "bogus"), "bogus");
	assert_non_null(strstr(err, "-c"));
	expect_error(PARSE("-p", "1", "-c", "cycles,bogus"), "bogus");
	expect_error(PARSE("-p", "1", "-c", ""), "-c");
	assert_int_equal(PARSE("-p", "1", "-c", "cycles"), CLI_OK);
	assert_string_equal(cli.counters, "cycles");
}

static void test_missing_values_short(void **state)
{
	(void)state;
	expect_error(PARSE("-n"), "-n");
	assert_non_null(strstr(err, "needs a value"));
	expect_error(PARSE("-d"), "-d");
	expect_error(PARSE("-f"), "-f");
	expect_error(PARSE("-s"), "-s");
	/* Long spellings are named as the user typed them. */
	expect_error(PARSE("--iterations"), "--iterations");
	expect_error(PARSE("--stations"), "--stations");
}

/*
 * Regression (fixed; was src/ui/settings/cli.c:156-163, case ':'): for a long
 * option without its value glibc's getopt_long sets optopt to the option's
 * `val`.  For
 * --jsonl/--shm/--sock that is 256/257/258 (OPT_JSONL...), and
 * `(char)optopt` prints "option '-' needs a value" (with a raw 0x01/0x02
 * byte for --shm/--sock) instead of naming the option.
 */
static void test_missing_values_long_only_options(void **state)
{
	(void)state;
	expect_error(PARSE("--jsonl"), "--jsonl");
	expect_error(PARSE("--shm"), "--shm");
	expect_error(PARSE("--sock"), "--sock");
}

/*
 * Regression (fixed; was src/ui/settings/cli.c:169-176, default case): a value
 * given to a long option that takes none ("--batch=1") makes getopt_long return
 * '?' with optopt = 'b', and the message becomes "unknown option '-b'", naming
 * a valid option the user never typed.
 */
static void test_value_for_flag_option(void **state)
{
	(void)state;
	expect_error(PARSE("--batch=1", "x"), "--batch");
	expect_error(PARSE("--help=yes"), "--help");
}

static void test_bad_numbers(void **state)
{
	static const char *bad_n[] = {"0",  "-1", "abc", "4294967296", "",
				      "+5", "5x", "1.5", "0x10"};
	static const char *bad_d[] = {"0",   "-5", "36001",
				      "ten", "",   "99999999999999999999"};
	static const char *bad_s[] = {"0",   "-1", "1048577",
				      "12x", "",   "4294967297"};

	(void)state;
	for (size_t i = 0; i < sizeof(bad_n) / sizeof(*bad_n); i++) {
		char quoted[64];

		snprintf(quoted, sizeof(quoted), "'%s'", bad_n[i]);
		expect_error(PARSE("-n", (char *)bad_n[i], "x"), quoted);
		assert_non_null(strstr(err, "--iterations"));
	}
	for (size_t i = 0; i < sizeof(bad_d) / sizeof(*bad_d); i++) {
		char quoted[64];

		snprintf(quoted, sizeof(quoted), "'%s'", bad_d[i]);
		expect_error(PARSE("--delay", (char *)bad_d[i], "x"), quoted);
		assert_non_null(strstr(err, "--delay"));
	}
	for (size_t i = 0; i < sizeof(bad_s) / sizeof(*bad_s); i++) {
		char quoted[64];

		snprintf(quoted, sizeof(quoted), "'%s'", bad_s[i]);
		expect_error(PARSE("--stations", (char *)bad_s[i], "x"),
			     quoted);
		assert_non_null(strstr(err, "--stations"));
	}
}

/*
 * Regression (fixed; was src/ui/settings/cli.c:69-72, cli_number): the sign
 * check looks only at the first character, but strtoul skips leading blanks and
 * then accepts '-', negating modulo 2^64.  " -18446744073709551615" therefore
 * parses as 1 and is accepted as a count.
 */
static void test_negative_after_blank(void **state)
{
	(void)state;
	expect_error(PARSE("-n", " -18446744073709551615", "x"),
		     "-18446744073709551615");
	expect_error(PARSE("--stations", " -18446744073709551615", "x"),
		     "-18446744073709551615");
}

static void test_bad_format(void **state)
{
	(void)state;
	expect_error(PARSE("-f", "xml", "x"), "'xml'");
	expect_error(PARSE("--format=JSON", "x"), "'JSON'");
	expect_error(PARSE("--format", "", "x"), "''");
	assert_non_null(strstr(err, "text"));
}

static void test_sample(void **state)
{
	static const char *bad[] = {"0",   "-1", "10001",
				    "abc", "",	 "5x",
				    "1.5", " 5", "99999999999999999999"};

	(void)state;
	assert_int_equal(PARSE("x"), CLI_OK);
	assert_int_equal(cli.sample_hz, 0); /* off by default */
	assert_int_equal(PARSE("--sample", "1000", "--", "x"), CLI_OK);
	assert_int_equal(cli.sample_hz, 1000);
	assert_int_equal(PARSE("--sample=1", "x"), CLI_OK);
	assert_int_equal(cli.sample_hz, 1);
	assert_int_equal(PARSE("--sample", "10000", "x"), CLI_OK);
	assert_int_equal(cli.sample_hz, 10000);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		char quoted[64];

		snprintf(quoted, sizeof(quoted), "'%s'", bad[i]);
		expect_error(PARSE("--sample", (char *)bad[i], "x"), quoted);
		assert_non_null(strstr(err, "--sample"));
	}
	expect_error(PARSE("--sample"), "--sample");
	/* Only a launched target can be told to sample. */
	expect_error(PARSE("--sample", "100", "--shm", "/r/x.shm"),
		     "only go with a command");
	/* Parked stacks: off unless asked for. */
	assert_int_equal(PARSE("x"), CLI_OK);
	assert_false(cli.parked_stacks);
	assert_int_equal(PARSE("--parked-stacks", "x"), CLI_OK);
	assert_true(cli.parked_stacks);
	expect_error(PARSE("--parked-stacks=1", "x"), "takes no value");
	expect_error(PARSE("--parked-stacks", "--shm", "/r/x.shm"),
		     "only go with a command");
}

/* --runtime and --own-lib: one comma-separated list each, checked up
 * front (a usage error), with a running target only. */
static void test_runtime_patterns(void **state)
{
	(void)state;
	assert_int_equal(PARSE("x"), CLI_OK);
	assert_null(cli.runtime);
	assert_null(cli.own_libs);
	assert_int_equal(PARSE("--runtime=libmysched,mysched::,sched_*",
			       "--own-lib", "libmyapp", "--", "x"),
			 CLI_OK);
	assert_string_equal(cli.runtime, "libmysched,mysched::,sched_*");
	assert_string_equal(cli.own_libs, "libmyapp");
	assert_int_equal(PARSE("--runtime", "pth_", "-p", "42"), CLI_OK);
	expect_error(PARSE("--runtime=", "x"), "--runtime");
	expect_error(PARSE("--runtime=a,,b", "x"), "''");
	expect_error(PARSE("--own-lib=lib my", "x"), "--own-lib");
	expect_error(PARSE("--runtime=a", "--runtime=b", "x"), "given twice");
	expect_error(PARSE("--runtime"), "needs a value");
	expect_error(PARSE("--runtime=a", "--replay", "r.heph"), "--runtime");
	assert_non_null(strstr(cli_usage_text(), "--runtime LIST"));
	assert_non_null(strstr(cli_usage_text(), "--own-lib LIST"));
}

static void test_mode_errors(void **state)
{
	(void)state;
	expect_error(PARSE("-b"), "nothing to watch");
	expect_error(PARSE("-b", "--"), "nothing to watch");
	expect_error(PARSE("--shm", "/r/x.shm", "--", "prog"), "/r/x.shm");
	expect_error(PARSE("--shm", "/r/y.shm", "prog"), "/r/y.shm");
	expect_error(PARSE("--sock", "/r/s", "--", "prog"), "--sock");
	expect_error(PARSE("--sock", "/r/s"), "corotop: ");
}

static void test_hot_stack_options(void **state)
{
	(void)state;
	assert_int_equal(PARSE("--", "./srv"), CLI_OK);
	assert_null(cli.folded);
	assert_null(cli.speedscope);
	assert_int_equal(cli.hot_stacks, 50);
	assert_int_equal(PARSE("--folded", "a.folded", "--speedscope=b.json",
			       "--hot-stacks", "0", "--", "./srv"),
			 CLI_OK);
	assert_string_equal(cli.folded, "a.folded");
	assert_string_equal(cli.speedscope, "b.json");
	assert_int_equal(cli.hot_stacks, 0);
	expect_error(PARSE("--hot-stacks", "10001", "--", "./srv"),
		     "--hot-stacks");
	/* --hot-by: function by default, then as named. */
	assert_int_equal(cli.hot_by, ENGINE_HOT_BY_FUNCTION);
	assert_int_equal(PARSE("--hot-by", "line", "--", "./srv"), CLI_OK);
	assert_int_equal(cli.hot_by, ENGINE_HOT_BY_LINE);
	assert_int_equal(PARSE("--hot-by=address", "--", "./srv"), CLI_OK);
	assert_int_equal(cli.hot_by, ENGINE_HOT_BY_ADDRESS);
	expect_error(PARSE("--hot-by", "pc", "--", "./srv"), "'pc'");
	expect_error(PARSE("--hot-stacks", "-1", "--", "./srv"), "'-1'");
	expect_error(PARSE("--folded"), "--folded");
	/* An observer has no CallTrace region. */
	expect_error(PARSE("--shm", "/x", "--folded", "f"), "--shm");
	expect_error(PARSE("--shm", "/x", "--speedscope", "f"), "--speedscope");
	/* Window and half-life: 0 half-life is "no decay", not "unset". */
	assert_int_equal(PARSE("--", "./srv"), CLI_OK);
	assert_int_equal(cli.hot_window_s, 0);
	assert_false(cli.hot_half_life_set);
	assert_int_equal(PARSE("--hot-window", "60", "--hot-half-life", "0",
			       "--", "./srv"),
			 CLI_OK);
	assert_int_equal(cli.hot_window_s, 60);
	assert_true(cli.hot_half_life_set);
	assert_int_equal(cli.hot_half_life_s, 0);
	expect_error(PARSE("--hot-window", "0", "--", "./srv"), "--hot-window");
	expect_error(PARSE("--hot-window", "3601", "--", "./srv"), "'3601'");
	expect_error(PARSE("--hot-half-life", "x", "--", "./srv"),
		     "--hot-half-life");
}

static void test_tiny_error_buffer(void **state)
{
	char small[12];
	char **a = ARGV("-f", "xml", "x");

	(void)state;
	memset(small, 'Z', sizeof(small));
	assert_int_equal(cli_parse(4, a, &cli, small, sizeof(small)),
			 CLI_ERROR);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_memory_equal(small, "corotop: ", 9);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_launch_with_double_dash),
		cmocka_unit_test(test_launch_without_double_dash),
		cmocka_unit_test(test_all_short_options),
		cmocka_unit_test(test_all_long_options),
		cmocka_unit_test(test_s_is_sort_only),
		cmocka_unit_test(test_numeric_bounds),
		cmocka_unit_test(test_help_version_and_reparse),
		cmocka_unit_test(test_unknown_options),
		cmocka_unit_test(test_counters_named),
		cmocka_unit_test(test_missing_values_short),
		cmocka_unit_test(test_missing_values_long_only_options),
		cmocka_unit_test(test_value_for_flag_option),
		cmocka_unit_test(test_bad_numbers),
		cmocka_unit_test(test_negative_after_blank),
		cmocka_unit_test(test_bad_format),
		cmocka_unit_test(test_sample),
		cmocka_unit_test(test_runtime_patterns),
		cmocka_unit_test(test_mode_errors),
		cmocka_unit_test(test_hot_stack_options),
		cmocka_unit_test(test_tiny_error_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
