/*
 * test-replayctl: the replay go-to line's time syntax and the position
 * text (src/ui/tui/replay_ctl.c): every form (seconds, [h:]m:s, units,
 * relative +/-, percent, start/end), clamping to the recording, exact
 * nanoseconds (no float truncation), what is refused and why, and
 * replay_ctl_format, also read back by replay_ctl_parse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ui/tui/replay_ctl.h"

#define S 1000000000ull
#define T0 (5 * S)	    /* the recording's first moment */
#define T1 (T0 + 7200 * S)  /* two hours long */
#define POS (T0 + 3600 * S) /* where we are */

/* text, parsed at POS in [T0, T1]: want (absolute). */
static void ok(const char *text, uint64_t want)
{
	char err[160] = "";
	uint64_t out = 1;

	if (!replay_ctl_parse(text, POS, T0, T1, T1, &out, err, sizeof(err)))
		fail_msg("'%s' refused: %s", text, err);
	if (out != want)
		fail_msg("'%s' is %llu, want %llu (%+lld)", text,
			 (unsigned long long)out, (unsigned long long)want,
			 (long long)(out - want));
}

static void bad(const char *text)
{
	char err[160] = "";
	uint64_t out = 77;

	if (replay_ctl_parse(text, POS, T0, T1, T1, &out, err, sizeof(err)))
		fail_msg("'%s' accepted as %llu", text,
			 (unsigned long long)out);
	assert_int_equal(out, 77); /* untouched */
	/* The message quotes the text and shows the syntax. */
	assert_non_null(strstr(err, "is not a time"));
	assert_non_null(strstr(err, "12.5s"));
	if (*text)
		assert_non_null(strstr(err, text));
}

static void test_absolute(void **state)
{
	(void)state;
	ok("12.5", T0 + 12500000000ull);
	ok("12.5s", T0 + 12500000000ull);
	ok("0", T0);
	ok("0s", T0);
	ok(".5", T0 + S / 2);
	ok("  7s", T0 + 7 * S);
	ok("7s  ", T0 + 7 * S);
	ok("1:30", T0 + 90 * S);
	ok("0:05.25", T0 + 5250000000ull);
	ok("1:02:03", T0 + 3723 * S);
	ok("1:02:03.5", T0 + 3723 * S + S / 2);
	ok("250ms", T0 + 250000000ull);
	ok("40us", T0 + 40000);
	ok("9ns", T0 + 9);
	ok("2m", T0 + 120 * S);
	ok("2min", T0 + 120 * S);
	ok("1h", T0 + 3600 * S);
	ok("1.5h", T0 + 5400 * S);
	ok("50%", T0 + 3600 * S);
	ok("0%", T0);
	ok("12.5%", T0 + 900 * S);
	ok("100%", T1);
	ok("start", T0);
	ok("begin", T0);
	ok("end", T1);
	ok(" end", T1);
	/* Spaces after a unit, as after seconds. */
	ok("250ms  ", T0 + 250000000ull);
	ok("2min ", T0 + 120 * S);
	ok("50% ", T0 + 3600 * S);
	ok("end ", T1);
	ok("start ", T0);
}

/* Decimal fractions are not exact in binary: still the nanosecond meant. */
static void test_exact(void **state)
{
	(void)state;
	ok("1.001", T0 + 1001000000ull);
	ok("0.3", T0 + 300000000ull);
	ok("4.35s", T0 + 4350000000ull);
	ok("1:02:03.004", T0 + 3723004000000ull);
	ok("0.000000007", T0 + 7);
	ok("1.1ms", T0 + 1100000);
	ok("2.7us", T0 + 2700);
}

static void test_relative(void **state)
{
	(void)state;
	ok("+5s", POS + 5 * S);
	ok("-2.5s", POS - 2500000000ull);
	ok("+0", POS);
	ok("-0s", POS);
	ok("+1:00", POS + 60 * S);
	ok("-1:00:00", T0);
	ok("+250ms", POS + 250000000ull);
	ok("-9ns", POS - 9);
	ok("+25%", POS + 1800 * S);
	ok("-50%", T0);
	ok(" +5s", POS + 5 * S);
}

static void test_clamp(void **state)
{
	char err[160];
	uint64_t out;

	(void)state;
	ok("3h", T1);
	ok("2:00:00.000000001", T1);
	ok("+3h", T1);
	ok("+1:00:00.001", T1);
	ok("-3h", T0);
	ok("-1:00:00.001", T0);
	ok("999999999", T1);
	/* A position outside the recording is taken to its nearest end. */
	assert_true(replay_ctl_parse("+1s", T1 + 10 * S, T0, T1, T1, &out, err,
				     sizeof(err)));
	assert_int_equal(out, T1);
	assert_true(replay_ctl_parse("-1s", T1 + 10 * S, T0, T1, T1, &out, err,
				     sizeof(err)));
	assert_int_equal(out, T1 - S);
	assert_true(
		replay_ctl_parse("-1s", 0, T0, T1, T1, &out, err, sizeof(err)));
	assert_int_equal(out, T0);
	assert_true(
		replay_ctl_parse("+1s", 0, T0, T1, T1, &out, err, sizeof(err)));
	assert_int_equal(out, T0 + S);
	/* An empty recording: everything is its one moment. */
	assert_true(replay_ctl_parse("50%", T0, T0, T0, T0, &out, err,
				     sizeof(err)));
	assert_int_equal(out, T0);
	assert_true(replay_ctl_parse("+5s", T0, T0, T0, T0, &out, err,
				     sizeof(err)));
	assert_int_equal(out, T0);
	/* At the very end of the u64 range. */
	assert_true(replay_ctl_parse("+1s", UINT64_MAX - 5, 0, UINT64_MAX,
				     UINT64_MAX, &out, err, sizeof(err)));
	assert_int_equal(out, UINT64_MAX);
	assert_true(replay_ctl_parse("end", 0, 0, UINT64_MAX, UINT64_MAX, &out,
				     err, sizeof(err)));
	assert_int_equal(out, UINT64_MAX);
}

/* "end" is the last moment the program ran, not the recording's stop,
 * where everything is dead; the length (%) is still the recording's. */
static void test_end_is_last_run(void **state)
{
	uint64_t out;
	char err[160];

	(void)state;
	assert_true(replay_ctl_parse("end", POS, T0, T1, T1 - 3 * S, &out, err,
				     sizeof(err)));
	assert_int_equal(out, T1 - 3 * S);
	assert_true(replay_ctl_parse("100%", POS, T0, T1, T1 - 3 * S, &out, err,
				     sizeof(err)));
	assert_int_equal(out, T1);
	/* A lying `ran` outside the recording: the recording's end. */
	assert_true(replay_ctl_parse("end", POS, T0, T1, T1 + S, &out, err,
				     sizeof(err)));
	assert_int_equal(out, T1);
}

static void test_refused(void **state)
{
	static const char *const refused[] = {
		"abc",	 "1:",	    "-",    "+",	 "101%", "5x",	  "",
		"   ",	 "1:2:",    ":30",  "5 s",	 "5ss",	 "1:30%", "inf",
		"nan",	 "1e400",   "--5",  "+-5",	 "5%%",	 "s",	  "ms",
		"0x10s", "1:2:3:4", "ends", "start now",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		bad(refused[i]);
}

static void test_format(void **state)
{
	static const struct {
		uint64_t ns;
		const char *text;
	} cases[] = {
		{0, "0:00.000"},
		{999999, "0:00.000"}, /* cut, not rounded */
		{1234567890, "0:01.234"},
		{61500000000ull, "1:01.500"},
		{3599999000000ull, "59:59.999"},
		{3600 * S, "1:00:00.000"},
		{3723004000000ull, "1:02:03.004"},
		{360000 * S, "100:00:00.000"},
		{UINT64_MAX, "5124095:34:33.709"},
	};
	char buf[32];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		replay_ctl_format(cases[i].ns, buf, sizeof(buf));
		assert_string_equal(buf, cases[i].text);
	}
	/* A short buffer: cut, terminated. */
	replay_ctl_format(61500000000ull, buf, 4);
	assert_string_equal(buf, "1:0");
}

/* What the header shows, typed back in, is that millisecond. */
static void test_round_trip(void **state)
{
	uint64_t ms = 0;

	(void)state;
	for (int i = 0; i < 2000; i++) {
		char text[32], err[160];
		uint64_t out;

		ms = (ms * 6364136223846793005ull + 1442695040888963407ull);
		replay_ctl_format((ms >> 20) % (7200000ull) * 1000000ull, text,
				  sizeof(text));
		assert_true(replay_ctl_parse(text, POS, T0, T1, T1, &out, err,
					     sizeof(err)));
		assert_int_equal(out - T0,
				 (ms >> 20) % 7200000ull * 1000000ull);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_absolute),
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_relative),
		cmocka_unit_test(test_clamp),
		cmocka_unit_test(test_end_is_last_run),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
