/*
 * unwind: the probe's bounded, checked frame-pointer walk (src/probe/
 * unwind.h), on real call chains and on forged ones.
 *
 *   real chain   unw_top -> unw_a -> unw_b -> unw_c, noinline, with frame
 *                pointers: the walk from unw_c's frame yields exactly the
 *                return addresses each function's __builtin_return_address
 *                saw, and dladdr1 puts each inside its caller's symbol;
 *   depth        a 200-deep recursion walked with max 16 and 64 stops at
 *                exactly that many frames;
 *   forged       records laid out by hand in a mapping whose next page is
 *                PROT_NONE: a decreasing, a misaligned, a self-looping, a
 *                huge-step, a past-the-range and a straddling fp each end
 *                the walk where they should, and none is dereferenced (a
 *                read of the guard page would kill the test);
 *   tags         a return address with bit 63 set (a CallTrace tag frame's
 *                range), 0 or below UNWIND_MIN_CODE ends the walk, unstored;
 *   range        unwind_range picks the declared coroutine stack first,
 *                then the thread's, else the 4 KiB page of sp.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "probe/unwind.h"

#define MAXF 64

/* The calling thread's stack, as the probe captures it. */
static struct unwind_stack thread_stack(void)
{
	struct unwind_stack s = {0, 0};
	pthread_attr_t a;
	void *addr;
	size_t size;

	assert_int_equal(pthread_getattr_np(pthread_self(), &a), 0);
	assert_int_equal(pthread_attr_getstack(&a, &addr, &size), 0);
	pthread_attr_destroy(&a);
	s.lo = (uintptr_t)addr;
	s.hi = (uintptr_t)addr + size;
	return s;
}

/* ---- a real chain ---- */

__attribute__((noinline)) void unw_top(void);
__attribute__((noinline)) void unw_a(void);
__attribute__((noinline)) void unw_b(void);
__attribute__((noinline)) void unw_c(void);
__attribute__((noinline)) void unw_rec(unsigned depth);

static uint64_t got[MAXF];
static unsigned ngot;
/* __builtin_return_address(0) of unw_c, unw_b, unw_a. */
static uint64_t want[3];

#define NO_TAILCALL() __asm__ volatile("" ::: "memory")

__attribute__((noinline)) void unw_c(void)
{
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
	struct unwind_stack t = thread_stack();

	want[0] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	ngot = unwind_fp(fp, unwind_range(fp, NULL, &t), got, MAXF);
	NO_TAILCALL();
}

__attribute__((noinline)) void unw_b(void)
{
	want[1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	unw_c();
	NO_TAILCALL();
}

__attribute__((noinline)) void unw_a(void)
{
	want[2] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	unw_b();
	NO_TAILCALL();
}

/* dladdr1 says addr lies inside the function fn. */
static void assert_inside(uint64_t addr, void *fn, const char *name)
{
	const ElfW(Sym) *sym = NULL;
	Dl_info info;

	assert_true(dladdr1(fn, &info, (void **)&sym, RTLD_DL_SYMENT));
	assert_non_null(sym);
	assert_true(sym->st_size > 0);
	if (addr <= (uintptr_t)fn || addr >= (uintptr_t)fn + sym->st_size)
		fail_msg("0x%llx is not inside %s [%p, +%zu)",
			 (unsigned long long)addr, name, fn,
			 (size_t)sym->st_size);
}

__attribute__((noinline)) void unw_top(void)
{
	unw_a();
	NO_TAILCALL();
}

static void test_real_chain(void **state)
{
	(void)state;
	unw_top();
	print_message("walked %u frames\n", ngot);
	assert_true(ngot >= 3);
	assert_int_equal(got[0], want[0]);
	assert_int_equal(got[1], want[1]);
	assert_int_equal(got[2], want[2]);
	assert_inside(got[0], (void *)unw_b, "unw_b");
	assert_inside(got[1], (void *)unw_a, "unw_a");
	assert_inside(got[2], (void *)unw_top, "unw_top");
}

static unsigned rec_max;

__attribute__((noinline)) void unw_rec(unsigned depth)
{
	if (depth) {
		unw_rec(depth - 1);
	} else {
		uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
		struct unwind_stack t = thread_stack();

		ngot = unwind_fp(fp, unwind_range(fp, NULL, &t), got, rec_max);
	}
	NO_TAILCALL();
}

static void test_depth_bound(void **state)
{
	(void)state;
	rec_max = 16;
	unw_rec(200);
	assert_int_equal(ngot, 16);
	rec_max = MAXF;
	unw_rec(200);
	assert_int_equal(ngot, MAXF);
	/* All but the outermost few are the recursion itself. */
	for (unsigned i = 0; i < MAXF; i++)
		assert_inside(got[i], (void *)unw_rec, "unw_rec");
	rec_max = 0;
	unw_rec(3);
	assert_int_equal(ngot, 0);
}

/* ---- forged records ---- */

struct forge {
	char *map;   /* two readable pages, then a PROT_NONE one */
	size_t page; /* system page size */
	struct unwind_stack r;
};

static struct forge F;

static int forge_setup(void **state)
{
	(void)state;
	F.page = (size_t)sysconf(_SC_PAGESIZE);
	F.map = mmap(NULL, 3 * F.page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(F.map != MAP_FAILED);
	assert_int_equal(mprotect(F.map + 2 * F.page, F.page, PROT_NONE), 0);
	memset(F.map, 0, 2 * F.page);
	F.r.lo = (uintptr_t)F.map;
	F.r.hi = (uintptr_t)F.map + 2 * F.page;
	return 0;
}

static int forge_teardown(void **state)
{
	(void)state;
	munmap(F.map, 3 * F.page);
	return 0;
}

/* A record at byte offset off: next frame pointer and return address. */
static uintptr_t rec(size_t off, uintptr_t next, uintptr_t ret)
{
	uintptr_t *w = (uintptr_t *)(void *)(F.map + off);

	w[0] = next;
	w[1] = ret;
	return (uintptr_t)w;
}

#define RET(i) ((uintptr_t)0x401000 + (uintptr_t)(i)*16)

static unsigned walk(uintptr_t fp)
{
	memset(got, 0, sizeof(got));
	return unwind_fp(fp, F.r, got, MAXF);
}

static void test_forged_good(void **state)
{
	uintptr_t a, b, c;

	(void)state;
	c = rec(512, 0, RET(3)); /* outermost: next = 0 ends it */
	b = rec(256, c, RET(2));
	a = rec(64, b, RET(1));
	assert_int_equal(walk(a), 3);
	assert_int_equal(got[0], RET(1));
	assert_int_equal(got[1], RET(2));
	assert_int_equal(got[2], RET(3));
	/* A long valid chain still stops at max. */
	for (unsigned i = 0; i < 200; i++)
		rec((size_t)i * 32, (uintptr_t)F.map + (size_t)(i + 1) * 32,
		    RET(i));
	assert_int_equal(walk((uintptr_t)F.map), MAXF);
	assert_int_equal(got[MAXF - 1], RET(MAXF - 1));
}

static void test_forged_bad(void **state)
{
	uintptr_t a, b;

	(void)state;
	/* Decreasing: the second record lies below the first. */
	b = rec(64, 0, RET(2));
	a = rec(1024, b, RET(1));
	assert_int_equal(walk(a), 1);
	assert_int_equal(got[0], RET(1));
	/* Pointing at itself: would loop forever without "strictly up". */
	a = rec(128, (uintptr_t)F.map + 128, RET(1));
	assert_int_equal(walk(a), 1);
	/* Misaligned: next is 8 past a 16-aligned record (x86_64 rejects
	 * it; elsewhere 8 is aligned, so the walk takes one more step). */
	rec(264, 0, RET(2));
	a = rec(64, (uintptr_t)F.map + 264, RET(1));
	assert_int_equal(walk(a), UNWIND_ALIGN == 16 ? 1 : 2);
	assert_int_equal(walk((uintptr_t)F.map + 4), 0);
	/* Huge step: 1 MiB and more is garbage, whatever it points to. */
	a = rec(64, (uintptr_t)F.map + 64 + UNWIND_MAX_STEP, RET(1));
	assert_int_equal(walk(a), 1);
	/* Past the range: into the PROT_NONE page, aligned, small step.  A
	 * read there would fault and end this test. */
	a = rec(2 * F.page - 64, (uintptr_t)F.map + 2 * F.page, RET(1));
	assert_int_equal(walk(a), 1);
	assert_int_equal(walk((uintptr_t)F.map + 2 * F.page), 0);
	assert_int_equal(walk((uintptr_t)F.map + 2 * F.page + 64), 0);
	/* Straddling the end: the record's second word would be outside. */
	assert_int_equal(walk((uintptr_t)F.map + 2 * F.page - 8), 0);
	a = rec(2 * F.page - 48, (uintptr_t)F.map + 2 * F.page - 16, RET(1));
	assert_int_equal(walk(a), 1);
	/* Below the range. */
	assert_int_equal(unwind_fp((uintptr_t)F.map + 64,
				   (struct unwind_stack){F.r.lo + 128, F.r.hi},
				   got, MAXF),
			 0);
	/* No fp, and empty or inverted ranges. */
	assert_int_equal(walk(0), 0);
	assert_int_equal(unwind_fp((uintptr_t)F.map,
				   (struct unwind_stack){F.r.lo, F.r.lo + 8},
				   got, MAXF),
			 0);
	assert_int_equal(unwind_fp((uintptr_t)F.map,
				   (struct unwind_stack){F.r.hi, F.r.lo}, got,
				   MAXF),
			 0);
}

static void test_forged_tags(void **state)
{
	uintptr_t a, b;

	(void)state;
	/* A tag-like return address (bit 63) ends the walk, unstored. */
	b = rec(256, 0, (uintptr_t)0xc0c0000100000007ull);
	a = rec(64, b, RET(1));
	assert_int_equal(walk(a), 1);
	assert_int_equal(got[0], RET(1));
	assert_int_equal(got[1], 0);
	/* A zero return address ends it too, and so does one below the
	 * lowest address code can have (data, not a return address). */
	b = rec(256, 0, 0);
	assert_int_equal(walk(a), 1);
	b = rec(256, 0, UNWIND_MIN_CODE - 1);
	assert_int_equal(walk(a), 1);
	b = rec(256, 0, UNWIND_MIN_CODE);
	assert_int_equal(walk(a), 2);
}

static void test_range(void **state)
{
	struct unwind_stack coro = {0x10000, 0x20000};
	struct unwind_stack thread = {0x100000, 0x200000};
	struct unwind_stack none = {0, 0}, r;

	(void)state;
	r = unwind_range(0x18000, &coro, &thread);
	assert_int_equal(r.lo, 0x18000);
	assert_int_equal(r.hi, 0x20000);
	r = unwind_range(0x180010, &coro, &thread);
	assert_int_equal(r.lo, 0x180010);
	assert_int_equal(r.hi, 0x200000);
	/* Neither: sp's own 4 KiB page only. */
	r = unwind_range(0x30010, &coro, &thread);
	assert_int_equal(r.lo, 0x30010);
	assert_int_equal(r.hi, 0x31000);
	r = unwind_range(0x30010, &none, NULL);
	assert_int_equal(r.hi, 0x31000);
	/* Page-aligned sp: the whole page above it. */
	r = unwind_range(0x30000, NULL, NULL);
	assert_int_equal(r.hi, 0x31000);
	/* The end of a range is outside it. */
	r = unwind_range(0x20000, &coro, &thread);
	assert_int_equal(r.hi, 0x21000);
	/* A coroutine stack inside the thread's range wins (declared first). */
	coro = (struct unwind_stack){0x140000, 0x150000};
	r = unwind_range(0x148000, &coro, &thread);
	assert_int_equal(r.hi, 0x150000);
	/* An inverted declaration is ignored. */
	coro = (struct unwind_stack){0x20000, 0x10000};
	r = unwind_range(0x18000, &coro, NULL);
	assert_int_equal(r.hi, 0x19000);
	/* Near the top of the address space: never wraps. */
	r = unwind_range(UINTPTR_MAX - 100, NULL, NULL);
	assert_true(r.hi >= r.lo);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_chain),
		cmocka_unit_test(test_depth_bound),
		cmocka_unit_test_setup_teardown(test_forged_good, forge_setup,
						forge_teardown),
		cmocka_unit_test_setup_teardown(test_forged_bad, forge_setup,
						forge_teardown),
		cmocka_unit_test_setup_teardown(test_forged_tags, forge_setup,
						forge_teardown),
		cmocka_unit_test(test_range),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
