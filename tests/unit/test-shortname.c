/*
 * shortname: long C++ names fit a thread meter's label by losing their
 * place, parameters, template arguments and leading qualifiers, in that
 * order and only as far as needed (src/ui/rows/shortname.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ui/rows/shortname.h"

static const char *fit(const char *name, size_t width)
{
	static char out[256];

	return shortname_fit(name, width, out, sizeof(out));
}

/* What the issue met: a Boost.Fiber WHERE read "boost::fibers:" in an
 * 18-column label; a lambda's name stays whole. */
static void test_cxx(void **state)
{
	(void)state;
	assert_string_equal(fit("boost::fibers::context::resume()+0x52", 18),
			    "context::resume");
	assert_string_equal(
		fit("boost::fibers::context::resume(std::unique_lock<boost::"
		    "fibers::detail::spinlock_ttas>&)+0x60",
		    18),
		"context::resume");
	assert_string_equal(fit("main::{lambda()#2}", 18),
			    "main::{lambda()#2}");
	/* narrower: the qualifier goes, the braces' "()" stays */
	assert_string_equal(fit("main::{lambda()#2}", 14), "{lambda()#2}");
	assert_string_equal(
		fit("stuck_wait_for_signal()+0x45 (condition_variable.hpp:151)",
		    24),
		"stuck_wait_for_signal()");
	assert_string_equal(fit("void boost::context::detail::fiber_entry<"
				"boost::context::detail::fiber_record<...>>"
				"(boost::context::detail::transfer_t)",
				18),
			    "fiber_entry");
	/* still too wide: the caller cuts */
	assert_string_equal(fit("a_very_long_c_function_name", 10),
			    "a_very_long_c_function_name");
}

/* What fits is left alone, at every step. */
static void test_fits(void **state)
{
	(void)state;
	assert_string_equal(fit("acceptor", 14), "acceptor");
	assert_string_equal(fit("parse()+0x1a", 14), "parse()+0x1a");
	assert_string_equal(fit("ns::parse(int)+0x1a", 16), "ns::parse(int)");
	assert_string_equal(fit("(anonymous namespace)::run()", 26),
			    "(anonymous namespace)::run");
	assert_string_equal(fit("(anonymous namespace)::run()", 25), "run");
	assert_string_equal(fit("0x401600", 4), "0x401600");
	assert_string_equal(fit("", 4), "");
}

/* A small buffer truncates, NUL-terminated. */
static void test_small_buffer(void **state)
{
	char out[6];

	(void)state;
	assert_string_equal(shortname_fit("acceptor", 20, out, sizeof(out)),
			    "accep");
	assert_ptr_equal(shortname_fit("x", 1, out, 0), out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cxx),
		cmocka_unit_test(test_fits),
		cmocka_unit_test(test_small_buffer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
