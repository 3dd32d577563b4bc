/*
 * stackwalk: the engine's walk of a parked coroutine's stack in another
 * process's memory (src/engine/target/stackwalk.c), here over stacks the
 * test lays out in its own memory and reads back through procmem on its
 * own pid -- the same process_vm_readv path as for a target.  Checked:
 *   - a chain of frame records ending in a zero frame pointer gives pc,
 *     then each return address, innermost first;
 *   - the walk stops at a record outside [sp, stack_hi), a misaligned one,
 *     one that does not go up (after its return address), a return
 *     address that is no code address (before it), at max frames;
 *   - an unknown stack (nothing declared, or sp outside it) or a pc that
 *     is no code address gives nothing;
 *   - a chunk that runs into an unmapped page falls back to the record
 *     alone, and a record on an unmapped page ends the walk without a
 *     fault;
 *   - with a framecheck, a stack full of junk (the words corotop's table
 *     once showed: 0xa0d0a, 0x74736574, 0x3000000010; a pointer into
 *     data; the address of a function, which no call returns to) stops
 *     the walk at the first of them, after the real return addresses,
 *     and says why; a junk pc gives nothing; every junk word at any
 *     position, in a stack of random words too, stops it there.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/target/stackwalk.h"

#define PAGE 4096u

static struct procmem pm;
static unsigned char *pages; /* two pages; the second PROT_NONE */

/* A record at offset off of the first page: next fp, return address. */
static uint64_t rec(size_t off, uint64_t next, uint64_t ret)
{
	uint64_t *r = (uint64_t *)(void *)(pages + off);

	r[0] = next;
	r[1] = ret;
	return (uint64_t)(uintptr_t)r;
}

static uint64_t at(size_t off)
{
	return (uint64_t)(uintptr_t)(pages + off);
}

static int setup(void **state)
{
	char err[256];

	(void)state;
	if (!procmem_open(&pm, getpid(), err, sizeof(err)))
		return -1;
	pages = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED)
		return -1;
	return mprotect(pages + PAGE, PAGE, PROT_NONE);
}

static int teardown(void **state)
{
	(void)state;
	munmap(pages, 2 * PAGE);
	procmem_finish(&pm);
	return 0;
}

/* The declared stack is the whole first page. */
static struct stackwalk_start start(uint64_t sp, uint64_t fp)
{
	return (struct stackwalk_start){
		.sp = sp,
		.fp = fp,
		.pc = 0x401000,
		.stack_lo = at(0),
		.stack_hi = at(PAGE),
	};
}

static void test_chain(void **state)
{
	uint64_t f[8];
	struct stackwalk_start s;
	struct stackwalk_stats st = {0};

	(void)state;
	rec(0x300, 0, 0x403000); /* the outermost: fp 0 ends it */
	rec(0x200, at(0x300), 0x402000);
	s = start(at(0x100), rec(0x100, at(0x200), 0x401100));
	assert_int_equal(stackwalk_fp(&pm, &s, NULL, f, 8, &st), 4);
	assert_int_equal(f[0], 0x401000);
	assert_int_equal(f[1], 0x401100);
	assert_int_equal(f[2], 0x402000);
	assert_int_equal(f[3], 0x403000);
	/* One chunk read covered all three records. */
	assert_int_equal(st.reads, 1);
	/* At most max frames. */
	assert_int_equal(stackwalk_fp(&pm, &s, NULL, f, 2, NULL), 2);
	assert_int_equal(f[1], 0x401100);
}

static void test_stops(void **state)
{
	uint64_t f[8];
	struct stackwalk_start s;

	(void)state;
	/* Below sp: outside what the walk may read. */
	s = start(at(0x200), rec(0x100, 0, 0x401100));
	assert_int_equal(stackwalk_fp(&pm, &s, NULL, f, 8, NULL), 1);
	/* Misaligned. */
	s = start(at(0x100), at(0x108));
	assert_int_equal(stackwalk_fp(&pm, &s, NULL, f, 8, NULL), 1);
	/* Does not go up: its return address is kept, then the walk ends. */
	rec(0x180, at(0x100), 0x402000);
	s = start(at(0x100), at(0x180));
	assert_int_equal(stackwalk_fp(&pm, &s, NULL, f, 8, NULL), 2);
	assert_int_equal(f[1], 0x402000);
	/* Not a code address: ends before it. */
	s = start(at(0x100), rec(0x100, at(0x200), 0x42));
	assert_int_equal(stackwalk_fp(&pm, &s, NULL, f, 8, NULL), 1);
	s = start(at(0x100), rec(0x100, at(0x200), 0x8000000000401000ull));
	assert_int_equal(stackwalk_fp(&pm, &s, NULL, f, 8, NULL), 1);
	/* The record must end inside the stack. */
	s = start(at(0x100), rec(PAGE - 16, 0, 0x402000));
	s.stack_hi = at(PAGE - 8);
	assert_int_equal(stackwalk_fp(&pm, &s, NULL, f, 8, NULL), 1);
	s.stack_hi = at(PAGE);
	assert_int_equal(stackwalk_fp(&pm, &s, NULL, f, 8, NULL), 2);
}

static void test_unknown_stack(void **state)
{
	uint64_t f[8];
	struct stackwalk_start s = start(at(0x100), rec(0x100, 0, 0x401100));

	(void)state;
	s.stack_lo = s.stack_hi = 0;
	assert_int_equal(stackwalk_fp(&pm, &s, NULL, f, 8, NULL), 0);
	s = start(at(0x100), at(0x100));
	s.sp = at(PAGE) + 64; /* sp outside the declared stack */
	assert_int_equal(stackwalk_fp(&pm, &s, NULL, f, 8, NULL), 0);
	s = start(at(0x100), at(0x100));
	s.pc = 0x100;
	assert_int_equal(stackwalk_fp(&pm, &s, NULL, f, 8, NULL), 0);
	assert_int_equal(stackwalk_fp(&pm, &s, NULL, f, 0, NULL), 0);
}

static void test_unmapped(void **state)
{
	uint64_t f[8];
	struct stackwalk_start s;
	struct stackwalk_stats st = {0};

	(void)state;
	/* The declared stack runs into the PROT_NONE page: the chunk read
	 * fails, the record alone is read, the next record (on the unmapped
	 * page) ends the walk without a fault. */
	rec(PAGE - 16, at(PAGE + 0x100), 0x402000);
	s = start(at(PAGE - 16), at(PAGE - 16));
	s.stack_hi = at(2 * PAGE);
	assert_int_equal(stackwalk_fp(&pm, &s, NULL, f, 8, &st), 2);
	assert_int_equal(f[1], 0x402000);
	assert_true(st.reads >= 3);
}

static __attribute__((noinline)) uint64_t ret_addr(void)
{
	return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

static int data_word;

/* Walk a chain of records whose return addresses are want[0..n) with a
 * framecheck of this process; the frames kept and why the walk stopped. */
static size_t walk_words(struct framecheck *fc, uint64_t pc,
			 const uint64_t *words, size_t n, uint64_t *f,
			 struct stackwalk_stats *st)
{
	struct stackwalk_start s;

	for (size_t k = 0; k < n; k++)
		rec(64 + 32 * k, k + 1 < n ? at(64 + 32 * (k + 1)) : 0,
		    words[k]);
	s = start(at(64), at(64));
	s.pc = pc;
	return stackwalk_fp(&pm, &s, fc, f, 16, st);
}

static void test_junk(void **state)
{
	struct framecheck *fc = framecheck_create(getpid());
	uint64_t ra = ret_addr(), f[16];
	const uint64_t junk[] = {
		0xa0d0a,
		0x74736574,
		0x3000000010ull,
		(uint64_t)(uintptr_t)&data_word,
		(uint64_t)(uintptr_t)at(0),
	};
	struct stackwalk_stats st;

	(void)state;
	assert_non_null(fc);
	/* Real frames, then each junk word: the walk keeps the real ones. */
	for (size_t j = 0; j < sizeof(junk) / sizeof(junk[0]); j++) {
		uint64_t words[] = {ra, ra, junk[j], ra};

		assert_int_equal(walk_words(fc, ra, words, 4, f, &st), 3);
		assert_int_equal(f[0], ra);
		assert_int_equal(f[2], ra);
		assert_int_equal(st.stopped, FRAMECHECK_NOT_CODE);
		/* Without the check, the junk is a frame. */
		assert_int_equal(walk_words(NULL, ra, words, 4, f, &st), 5);
		assert_int_equal(f[3], junk[j]);
		/* A junk pc: nothing at all. */
		if (junk[j] >= STACKWALK_MIN_CODE) {
			assert_int_equal(
				walk_words(fc, junk[j], words, 4, f, &st), 0);
			assert_int_equal(st.stopped, FRAMECHECK_NOT_CODE);
		}
	}
	/* A function's own address is code, but no call returns there. */
	if (framecheck_call_before &&
	    framecheck_frame(fc, (uint64_t)(uintptr_t)test_junk, false) ==
		    FRAMECHECK_NOT_AFTER_CALL) {
		uint64_t words[] = {ra, (uint64_t)(uintptr_t)test_junk, ra};

		assert_int_equal(walk_words(fc, ra, words, 3, f, &st), 2);
		assert_int_equal(st.stopped, FRAMECHECK_NOT_AFTER_CALL);
	}
	/* A stack of random words (a fixed seed): whatever the walk keeps
	 * after pc is a return address into code. */
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (int round = 0; round < 200; round++) {
		uint64_t words[8];
		size_t n;

		for (size_t k = 0; k < 8; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			words[k] = (k == 0 || (x & 3) == 0) ? ra
				   : (x & 1) ? x & 0xffffffffffull
					     : junk[x % 5];
		}
		n = walk_words(fc, ra, words, 8, f, &st);
		for (size_t k = 0; k < n; k++)
			assert_int_equal(framecheck_frame(fc, f[k], false),
					 FRAMECHECK_OK);
		if (n < 9)
			assert_int_not_equal(st.stopped, FRAMECHECK_OK);
	}
	framecheck_destroy(fc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_stops),
		cmocka_unit_test(test_unknown_stack),
		cmocka_unit_test(test_unmapped),
		cmocka_unit_test(test_junk),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
