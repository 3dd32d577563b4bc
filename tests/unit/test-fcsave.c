/*
 * fcsave: the registers Boost.Context's switch saved for a parked
 * fcontext (src/engine/target/fcsave.c).  Checked:
 *   - the table: Boost 1.74's x86_64 layout (rbp at +0x30, the return
 *     address at +0x38, the caller's sp at +0x40), and no layout for a
 *     version nobody checked;
 *   - which layout a process's maps give: the one executable Boost.Context
 *     mapped, none for a version not in the table, for two versions at
 *     once, for a mapping that is not executable, for none;
 *   - fcsave_check on fake save areas in a fake stack: one that passes
 *     (the walk then starts at the area's end, from its rbp and return
 *     address) and ones that fail -- a return address after nops or in
 *     data, the area or the sp after it out of the stack, rbp out of the
 *     stack, an unknown layout, an area that could not be read.
 * Return addresses are checked by framecheck against a page of code the
 * test writes: a call ends at one address, nops at another.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/target/fcsave.h"
#include "engine/target/framecheck.h"
#include "fakecode.h"

/* Boost 1.74 x86_64 as the table has it, usable on any architecture:
 * fcsave_check takes the layout it is given. */
static const struct fcsave_layout boost174 = {
	.lib = "libboost_context.so.1.74.0",
	.arch = "x86_64",
	.size = 0x40,
	.fp_at = 0x30,
	.pc_at = 0x38,
	.sp_after = 0x40,
};

static unsigned char *code;
static uint64_t after_call, after_nops;
static struct framecheck *fc;
/* The fake stack, [lo, hi). */
static _Alignas(16) unsigned char stack[8192];
static uint64_t lo, hi;
static int data_word = 42;

static int setup(void **state)
{
	(void)state;
	code = fakecode_create(&after_call, &after_nops);
	if (!code)
		return -1;
	lo = (uint64_t)(uintptr_t)stack;
	hi = lo + sizeof(stack);
	fc = framecheck_create(getpid());
	return fc ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	framecheck_destroy(fc);
	munmap(code, FAKECODE_PAGE);
	return 0;
}

static void test_table(void **state)
{
	(void)state;
#if defined(__x86_64__)
	const struct fcsave_layout *l =
		fcsave_layout_named("libboost_context.so.1.74.0");

	assert_non_null(l);
	assert_int_equal(l->size, 0x40);
	assert_int_equal(l->fp_at, 0x30);
	assert_int_equal(l->pc_at, 0x38);
	assert_int_equal(l->sp_after, 0x40);
#else
	/* Only x86_64's layout is checked: every other falls back. */
	assert_null(fcsave_layout_named("libboost_context.so.1.74.0"));
#endif
	assert_null(fcsave_layout_named("libboost_context.so.1.83.0"));
	assert_null(fcsave_layout_named("libboost_context.so"));
	assert_null(fcsave_layout_named(""));
	assert_null(fcsave_layout_named(NULL));
}

#define MAP_LINE(range, perms, path)                                           \
	range " " perms " 00000000 fe:01 1234                       " path "\n"

static void test_maps(void **state)
{
	static const char one[] = MAP_LINE(
		"7f0000000000-7f0000001000", "r--p",
		"/usr/lib/x86_64-linux-gnu/libc.so.6")
		MAP_LINE("7f0000001000-7f0000002000", "r--p",
			 "/usr/lib/x86_64-linux-gnu/libboost_context.so.1.74.0")
			MAP_LINE("7f0000002000-7f0000003000", "r-xp",
				 "/usr/lib/x86_64-linux-gnu/"
				 "libboost_context.so.1.74.0")
				MAP_LINE("7ffd00000000-7ffd00021000", "rw-p",
					 "[stack]");
	static const char newer[] =
		MAP_LINE("7f0000002000-7f0000003000", "r-xp",
			 "/opt/boost/lib/libboost_context.so.1.83.0");
	static const char two[] =
		MAP_LINE("7f0000002000-7f0000003000", "r-xp",
			 "/usr/lib/x86_64-linux-gnu/libboost_context.so.1.74.0")
			MAP_LINE("7f0000012000-7f0000013000", "r-xp",
				 "/opt/boost/lib/libboost_context.so.1.83.0");
	static const char data_only[] = MAP_LINE(
		"7f0000001000-7f0000002000", "r--p",
		"/usr/lib/x86_64-linux-gnu/libboost_context.so.1.74.0");
	static const char none[] =
		MAP_LINE("7f0000000000-7f0000001000", "r-xp",
			 "/usr/lib/x86_64-linux-gnu/libc.so.6");

	(void)state;
#if defined(__x86_64__)
	assert_ptr_equal(fcsave_layout_in_maps(one),
			 fcsave_layout_named("libboost_context.so.1.74.0"));
	assert_non_null(fcsave_layout_in_maps(one));
#else
	assert_null(fcsave_layout_in_maps(one));
#endif
	assert_null(fcsave_layout_in_maps(newer));
	assert_null(fcsave_layout_in_maps(two));
	assert_null(fcsave_layout_in_maps(data_only));
	assert_null(fcsave_layout_in_maps(none));
	assert_null(fcsave_layout_in_maps(""));
	/* This test maps no Boost.Context. */
	assert_null(fcsave_layout_of(getpid()));
}

/* A save area at stack offset `off` with rbp and the return address. */
static uint64_t area_at(size_t off, uint64_t fp, uint64_t pc)
{
	unsigned char *a = stack + off;

	memset(a, 0, boost174.size);
	memcpy(a + boost174.fp_at, &fp, 8);
	memcpy(a + boost174.pc_at, &pc, 8);
	return lo + off;
}

static enum fcsave_verdict check(uint64_t at, struct stackwalk_start *out)
{
	return fcsave_check(&boost174, at, stack + (at - lo), lo, hi, fc, out);
}

static void test_check_passes(void **state)
{
	struct stackwalk_start s = {0};
	uint64_t at = area_at(1024, lo + 2048, after_call);

	(void)state;
	assert_int_equal(check(at, &s), FCSAVE_OK);
	assert_int_equal(s.sp, at + 0x40);
	assert_int_equal(s.fp, lo + 2048);
	assert_int_equal(s.pc, after_call);
	assert_int_equal(s.stack_lo, lo);
	assert_int_equal(s.stack_hi, hi);
	/* rbp 0 (code without frame pointers used it for data: cleared) */
	at = area_at(1024, 0, after_call);
	assert_int_equal(check(at, &s), FCSAVE_OK);
	assert_int_equal(s.fp, 0);
	/* The area at the very top of the stack: its end is hi - 0, and the
	 * sp after it must still be inside. */
	at = area_at(sizeof(stack) - 0x48, 0, after_call);
	assert_int_equal(check(at, &s), FCSAVE_OK);
	assert_int_equal(s.sp, hi - 8);
}

static void test_check_fails(void **state)
{
	struct stackwalk_start s = {0}, was;
	uint64_t at;

	(void)state;
	memset(&s, 0x5a, sizeof(s));
	was = s;
	/* The return address follows no call. */
	at = area_at(1024, lo + 2048, after_nops);
	assert_int_equal(check(at, &s), FCSAVE_PC);
	/* ... is data, or below any code. */
	at = area_at(1024, lo + 2048, (uint64_t)(uintptr_t)&data_word);
	assert_int_equal(check(at, &s), FCSAVE_PC);
	at = area_at(1024, lo + 2048, 0x1234);
	assert_int_equal(check(at, &s), FCSAVE_PC);
	/* rbp out of the stack. */
	at = area_at(1024, hi + 64, after_call);
	assert_int_equal(check(at, &s), FCSAVE_FP);
	at = area_at(1024, lo - 16, after_call);
	assert_int_equal(check(at, &s), FCSAVE_FP);
	/* The area, or the sp after it, out of the stack. */
	area_at(1024, lo + 2048, after_call);
	assert_int_equal(
		fcsave_check(&boost174, lo - 64, stack + 1024, lo, hi, fc, &s),
		FCSAVE_STACK);
	assert_int_equal(fcsave_check(&boost174, hi - 0x40, stack + 1024, lo,
				      hi, fc, &s),
			 FCSAVE_STACK);
	assert_int_equal(
		fcsave_check(&boost174, hi, stack + 1024, lo, hi, fc, &s),
		FCSAVE_STACK);
	/* misaligned */
	assert_int_equal(fcsave_check(&boost174, lo + 1028, stack + 1024, lo,
				      hi, fc, &s),
			 FCSAVE_STACK);
	/* no stack known */
	assert_int_equal(
		fcsave_check(&boost174, lo + 1024, stack + 1024, 0, 0, fc, &s),
		FCSAVE_STACK);
	/* A layout nobody checked (a version not in the table): the walk
	 * falls back to the probe's registers. */
	assert_int_equal(
		fcsave_check(fcsave_layout_named("libboost_context.so.1.83.0"),
			     lo + 1024, stack + 1024, lo, hi, fc, &s),
		FCSAVE_UNKNOWN);
	/* In the stack, but not read. */
	assert_int_equal(
		fcsave_check(&boost174, lo + 1024, NULL, lo, hi, fc, &s),
		FCSAVE_UNREAD);
	/* Nothing written for any failure. */
	assert_memory_equal(&s, &was, sizeof(s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_maps),
		cmocka_unit_test(test_check_passes),
		cmocka_unit_test(test_check_fails),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
