/*
 * test-jmpbuf: the stack pointer a glibc jmp_buf resumes with, decoded
 * (src/preload/jmpbuf.c) -- from a frame of this thread's stack, from a
 * context's own stack, and refused when the layout was never checked.
 * A wrong guard, rotation or index gives an address nowhere near the
 * frame that made the buffer, and these fail.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <ucontext.h>

#include <cmocka.h>

#include "preload/jmpbuf.h"

#define STACK (64 * 1024)

/* Set by the function that made the buffer: where its local lies. */
static uintptr_t made_at;

static __attribute__((noinline, noipa)) void make_here(jmp_buf *b)
{
	volatile int local = 0;

	made_at = (uintptr_t)&local;
	if (_setjmp(*b))
		abort(); /* never jumped to */
	(void)local;
}

static void assert_just_below(uint64_t sp, uintptr_t at)
{
	assert_true(sp <= at);
	assert_true(at - sp < 4096);
}

static void test_not_checked_refuses(void **state)
{
	uint64_t sp = 0;
	jmp_buf b;

	(void)state;
	/* Before jmpbuf_init: never decoded. */
	make_here(&b);
	assert_false(jmpbuf_sp(b, &sp));
	assert_int_equal(sp, 0);
}

static void test_this_stack(void **state)
{
	uint64_t sp;
	jmp_buf b;

	(void)state;
#if !defined(__x86_64__) || !defined(__GLIBC__)
	skip();
#endif
	assert_true(jmpbuf_init());
	make_here(&b);
	assert_true(jmpbuf_sp(b, &sp));
	assert_just_below(sp, made_at);
	assert_false(jmpbuf_sp(NULL, &sp));
}

static ucontext_t main_uc, co_uc;
static jmp_buf co_buf;

static void co_entry(void)
{
	make_here(&co_buf);
	swapcontext(&co_uc, &main_uc);
}

/* A buffer made on a context's own stack decodes to that stack. */
static void test_context_stack(void **state)
{
	char *stack = malloc(STACK);
	uint64_t sp;

	(void)state;
#if !defined(__x86_64__) || !defined(__GLIBC__)
	skip();
#endif
	assert_non_null(stack);
	assert_true(jmpbuf_init());
	getcontext(&co_uc);
	co_uc.uc_stack.ss_sp = stack;
	co_uc.uc_stack.ss_size = STACK;
	co_uc.uc_link = &main_uc;
	makecontext(&co_uc, co_entry, 0);
	swapcontext(&main_uc, &co_uc);
	assert_true(jmpbuf_sp(co_buf, &sp));
	assert_true(sp >= (uintptr_t)stack && sp < (uintptr_t)stack + STACK);
	assert_just_below(sp, made_at);
	free(stack);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_checked_refuses),
		cmocka_unit_test(test_this_stack),
		cmocka_unit_test(test_context_stack),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
