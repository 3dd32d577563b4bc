/*
 * framecheck: is a word a walk found a return address into the target's
 * code (src/engine/target/framecheck.c)?  Checked:
 *   - the call decoders on byte patterns: every x86-64 form of E8 and FF /2
 *     that ends at the address is a call, and ret, jmp, nops, ASCII text
 *     and a call that ends a byte early are not; aarch64's BL, BLR and
 *     BLRA* are, RET, BR, B and NOP are not;
 *   - verdicts on this process: the words seen in corotop's table
 *     (0xa0d0a, 0x74736574, 0x3000000010), a pointer into data and 0 are
 *     not code; in a page of code the test writes, an address a call ends
 *     at is kept and one after nops is not; a leaf (an interrupted pc) is
 *     kept after nops; a real return address of the test's own is kept;
 *   - framecheck_walk keeps the frames before the first refused one (a
 *     stored stack's frames, FRAMECHECK_IN_CODE, need only lie in code) and
 *     says why; framecheck_count counts by why.
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

#include "engine/target/framecheck.h"
#include "fakecode.h"

static bool x86(const char *hex)
{
	unsigned char b[32];
	size_t n = 0;

	for (const char *p = hex; *p && n < sizeof(b);) {
		unsigned v;

		if (*p == ' ') {
			p++;
			continue;
		}
		assert_int_equal(sscanf(p, "%2x", &v), 1);
		b[n++] = (unsigned char)v;
		p += 2;
	}
	return framecheck_call_x86_64(b, n);
}

static void test_x86_calls(void **state)
{
	(void)state;
	assert_true(x86("e8 10 20 30 40"));		/* call rel32 */
	assert_true(x86("90 90 e8 10 20 30 40"));	/* ... after nops */
	assert_true(x86("67 e8 10 20 30 40"));		/* addr32 call */
	assert_true(x86("ff d0"));			/* call *%rax */
	assert_true(x86("41 ff d3"));			/* call *%r11 */
	assert_true(x86("3e ff d0"));			/* notrack call */
	assert_true(x86("ff 10"));			/* call *(%rax) */
	assert_true(x86("ff 14 24"));			/* call *(%rsp) */
	assert_true(x86("ff 50 08"));			/* call *8(%rax) */
	assert_true(x86("ff 54 24 08"));		/* call *8(%rsp) */
	assert_true(x86("41 ff 54 24 08"));		/* call *8(%r12) */
	assert_true(x86("ff 15 00 10 00 00"));		/* call *x(%rip) */
	assert_true(x86("ff 90 00 01 00 00"));		/* *0x100(%rax) */
	assert_true(x86("ff 94 c8 00 01 00 00"));	/* (%rax,%rcx,8) */
	assert_true(x86("41 ff 94 24 00 01 00 00"));	/* 0x100(%r12) */
	assert_true(x86("ff 14 25 00 10 40 00"));	/* *0x401000 */
	assert_true(x86("3e 41 ff 94 c4 00 01 00 00")); /* both prefixes */

	assert_false(x86("c3"));		   /* ret */
	assert_false(x86("90 90 90 90 90 90 90")); /* nops */
	assert_false(x86("0f 1f 44 00 00"));	   /* a long nop */
	assert_false(x86("ff e3"));		   /* jmp *%rbx */
	assert_false(x86("ff 25 00 10 00 00"));	   /* jmp *x(%rip) */
	assert_false(x86("e9 10 20 30 40"));	   /* jmp rel32 */
	assert_false(x86("eb 10"));		   /* jmp rel8 */
	assert_false(x86("ff d8"));		   /* FF /3 (lcall) */
	assert_false(x86("e8 10 20 30"));	   /* a call one byte short */
	assert_false(x86("e8 10 20 30 40 90"));	   /* ... one byte past */
	assert_false(x86("ff 50"));		   /* disp8 missing */
	assert_false(x86("ff 15 00 10 00"));	   /* disp32 short */
	/* The bytes of the junk seen in the table, as code before it. */
	assert_false(x86("0a 0d 0a 00 00 00 00 00"));
	assert_false(x86("74 65 73 74 00 00 00 00"));
	assert_false(x86(""));
	assert_false(x86("ff"));
}

static bool a64(uint32_t insn)
{
	unsigned char b[8] = {0xd5, 0x03, 0x20, 0x1f}; /* any word before */

	b[4] = (unsigned char)insn;
	b[5] = (unsigned char)(insn >> 8);
	b[6] = (unsigned char)(insn >> 16);
	b[7] = (unsigned char)(insn >> 24);
	return framecheck_call_aarch64(b, sizeof(b));
}

static void test_aarch64_calls(void **state)
{
	(void)state;
	assert_true(a64(0x94000001u));	/* bl .+4 */
	assert_true(a64(0x97ffffffu));	/* bl .-4 */
	assert_true(a64(0xd63f0020u));	/* blr x1 */
	assert_true(a64(0xd63f081fu));	/* blraaz x0 */
	assert_true(a64(0xd63f0c3fu));	/* blrabz x1 */
	assert_true(a64(0xd73f0821u));	/* blraa x1, x1 */
	assert_false(a64(0xd65f03c0u)); /* ret */
	assert_false(a64(0xd61f0020u)); /* br x1 */
	assert_false(a64(0x14000001u)); /* b .+4 */
	assert_false(a64(0xd503201fu)); /* nop */
	assert_false(a64(0x000a0d0au)); /* the junk's bytes */
	assert_false(framecheck_call_aarch64((const unsigned char *)"\x94", 1));
}

/* A page of code: nops, then a call whose end is `after_call`, then
 * nops again up to `after_nops`. */
static unsigned char *code;
static uint64_t after_call, after_nops;
static struct framecheck *fc;

static int setup(void **state)
{
	(void)state;
	code = fakecode_create(&after_call, &after_nops);
	if (!code)
		return -1;
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

static int data_word = 42;

static void test_junk_is_not_code(void **state)
{
	(void)state;
	assert_int_equal(framecheck_frame(fc, 0xa0d0a, false),
			 FRAMECHECK_NOT_CODE);
	assert_int_equal(framecheck_frame(fc, 0x74736574, false),
			 FRAMECHECK_NOT_CODE);
	assert_int_equal(framecheck_frame(fc, 0x3000000010ull, false),
			 FRAMECHECK_NOT_CODE);
	assert_int_equal(framecheck_frame(fc, 0, false), FRAMECHECK_NOT_CODE);
	assert_int_equal(
		framecheck_frame(fc, (uint64_t)(uintptr_t)&data_word, false),
		FRAMECHECK_NOT_CODE);
	/* A leaf is checked against the mappings too. */
	assert_int_equal(framecheck_frame(fc, 0xa0d0a, true),
			 FRAMECHECK_NOT_CODE);
	/* No check at all: everything kept. */
	assert_int_equal(framecheck_frame(NULL, 0xa0d0a, false), FRAMECHECK_OK);
}

static void test_code_verdicts(void **state)
{
	(void)state;
	if (!framecheck_call_before)
		skip();
	assert_int_equal(framecheck_frame(fc, after_call, false),
			 FRAMECHECK_OK);
	assert_int_equal(framecheck_frame(fc, after_nops, false),
			 FRAMECHECK_NOT_AFTER_CALL);
	/* An interrupted pc follows no call: its mapping is enough. */
	assert_int_equal(framecheck_frame(fc, after_nops, true), FRAMECHECK_OK);
	/* Again, from the cache. */
	assert_int_equal(framecheck_frame(fc, after_call, false),
			 FRAMECHECK_OK);
	assert_int_equal(framecheck_frame(fc, after_nops, false),
			 FRAMECHECK_NOT_AFTER_CALL);
}

static __attribute__((noinline)) uint64_t my_return_address(void)
{
	return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static void test_real_return_address(void **state)
{
	uint64_t ra = my_return_address();

	(void)state;
	assert_int_equal(framecheck_frame(fc, ra, false), FRAMECHECK_OK);
}

static void test_walk_stops_and_counts(void **state)
{
	uint64_t frames[] = {my_return_address(), after_call, 0xa0d0a,
			     after_call};
	uint64_t nops[] = {after_call, after_nops, after_call};
	struct framecheck_stats st0, st;
	enum framecheck_verdict why;

	(void)state;
	if (!framecheck_call_before)
		skip();
	framecheck_stats(fc, &st0);
	assert_int_equal(
		framecheck_walk(fc, frames, 4, FRAMECHECK_RETURNS, &why), 2);
	assert_int_equal(why, FRAMECHECK_NOT_CODE);
	framecheck_count(fc, why);
	assert_int_equal(framecheck_walk(fc, nops, 3, FRAMECHECK_RETURNS, &why),
			 1);
	assert_int_equal(why, FRAMECHECK_NOT_AFTER_CALL);
	framecheck_count(fc, why);
	/* A sample's first frame is a leaf. */
	assert_int_equal(
		framecheck_walk(fc, nops + 1, 2, FRAMECHECK_FROM_PC, &why), 2);
	assert_int_equal(why, FRAMECHECK_OK);
	framecheck_count(fc, why);
	assert_int_equal(
		framecheck_walk(fc, frames, 2, FRAMECHECK_RETURNS, &why), 2);
	assert_int_equal(why, FRAMECHECK_OK);
	/* A stored stack's frames need only lie in code: the nops pass,
	 * the junk does not. */
	assert_int_equal(framecheck_walk(fc, nops, 3, FRAMECHECK_IN_CODE, &why),
			 3);
	assert_int_equal(why, FRAMECHECK_OK);
	assert_int_equal(
		framecheck_walk(fc, frames, 4, FRAMECHECK_IN_CODE, &why), 2);
	assert_int_equal(why, FRAMECHECK_NOT_CODE);
	framecheck_stats(fc, &st);
	assert_int_equal(st.not_code - st0.not_code, 1);
	assert_int_equal(st.not_after_call - st0.not_after_call, 1);
	assert_true(st.maps_reads >= 1);
	assert_int_equal(
		framecheck_walk(NULL, frames, 4, FRAMECHECK_RETURNS, &why), 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_x86_calls),
		cmocka_unit_test(test_aarch64_calls),
		cmocka_unit_test(test_junk_is_not_code),
		cmocka_unit_test(test_code_verdicts),
		cmocka_unit_test(test_real_return_address),
		cmocka_unit_test(test_walk_stops_and_counts),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
