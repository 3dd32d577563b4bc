/*
 * symtab: the engine's shared symbols (src/engine/symbols/symtab.c), here
 * the names a recording carries, which replay shows when there is no
 * process: "func+0xOFF (file:N)" as the recorder wrote it, where func is
 * a demangled C++ name with spaces, '+' and parentheses of its own.  The
 * brief form (the WHERE column) leaves out only " (file:N)"; a lookup
 * splits the text into function, offset, file and line.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "engine/symbols/symtab.h"

static const struct {
	uint64_t addr;
	const char *name;
} recorded[] = {
	{0x10, "std::vector<int, std::allocator<int> >::push_back(int "
	       "const&)+0x1a (vector.cpp:31)"},
	{0x20, "operator+(Foo const&, Foo const&)+0x4 (foo.cpp:7)"},
	{0x30, "f(void (*)(int))+0x0"},
	{0x40, "plain_c+0x2c (a.c:3)"},
};

static const char *lookup(void *ctx, uint64_t addr)
{
	(void)ctx;
	for (size_t i = 0; i < sizeof(recorded) / sizeof(recorded[0]); i++)
		if (recorded[i].addr == addr)
			return recorded[i].name;
	return NULL;
}

static void test_recorded_forms(void **state)
{
	static const char *const brief[] = {
		"std::vector<int, std::allocator<int> >::push_back(int "
		"const&)+0x1a",
		"operator+(Foo const&, Foo const&)+0x4",
		"f(void (*)(int))+0x0",
		"plain_c+0x2c",
	};
	struct symtab t;
	char buf[256];

	(void)state;
	symtab_init(&t);
	symtab_set_recorded(&t, lookup, NULL);
	for (size_t i = 0; i < sizeof(recorded) / sizeof(recorded[0]); i++) {
		symtab_where(&t, recorded[i].addr, false, true, buf,
			     sizeof(buf));
		assert_string_equal(buf, recorded[i].name);
		symtab_where(&t, recorded[i].addr, false, false, buf,
			     sizeof(buf));
		assert_string_equal(buf, brief[i]);
	}
	symtab_where(&t, 0x99, false, false, buf, sizeof(buf));
	assert_string_equal(buf, "0x99");
	/* A where (a return address) is named at its call site, addr - 1:
	 * 0x41 is the call ending at 0x40; hex stays addr itself.  A
	 * recording made before call sites keeps it under addr: 0x30. */
	symtab_where(&t, 0x41, true, false, buf, sizeof(buf));
	assert_string_equal(buf, "plain_c+0x2c");
	symtab_where(&t, 0x30, true, true, buf, sizeof(buf));
	assert_string_equal(buf, "f(void (*)(int))+0x0");
	symtab_where(&t, 0x99, true, false, buf, sizeof(buf));
	assert_string_equal(buf, "0x99");
	symtab_where(&t, 0x41, false, false, buf, sizeof(buf));
	assert_string_equal(buf, "0x41");
	symtab_finish(&t);
}

static void test_recorded_lookup(void **state)
{
	struct symtab t;
	struct symtab_sym y;

	(void)state;
	symtab_init(&t);
	symtab_set_recorded(&t, lookup, NULL);
	assert_true(symtab_lookup(&t, 0x10, &y));
	assert_string_equal(y.function, "std::vector<int, std::allocator<int> "
					">::push_back(int const&)");
	assert_true(y.offset == 0x1a);
	assert_string_equal(y.file, "vector.cpp");
	assert_int_equal(y.line, 31);
	assert_string_equal(y.module, "recorded");
	assert_true(symtab_lookup(&t, 0x20, &y));
	assert_string_equal(y.function, "operator+(Foo const&, Foo const&)");
	assert_true(y.offset == 4);
	assert_string_equal(y.file, "foo.cpp");
	assert_int_equal(y.line, 7);
	assert_true(symtab_lookup(&t, 0x30, &y));
	assert_string_equal(y.function, "f(void (*)(int))");
	assert_true(y.offset == 0);
	assert_string_equal(y.file, ""); /* " (*)(int)" is no file */
	assert_int_equal(y.line, 0);
	assert_false(symtab_lookup(&t, 0x99, &y));
	symtab_finish(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recorded_forms),
		cmocka_unit_test(test_recorded_lookup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
