/*
 * test-fiberfn: the function a Boost.Fiber fiber of a plain function was
 * made for, read where make_fcontext's sp says its worker_context is
 * (src/preload/fiberfn.c) -- found in a stack laid out as Boost 1.74 lays
 * one out, refused when the record does not point at the worker or its
 * stack_context does not hold it, when sp is not where a fiber's is, and
 * read without a fault when the bytes lie on an unmapped page.  The
 * layout of the process: none without a libboost_fiber loaded, 1.74's
 * with Debian's; then each entry's verdict is kept (a worker's read
 * again, any other's never).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "preload/fiberfn.h"

static const struct fiberfn_layout l174 = {
	.lib = "test",
	.record_at = 64,
	.record_len = 128,
	.sctx_size_at = 0,
	.sctx_sp_at = 8,
	.worker_at = 256,
	.fn_at = 232,
	.record_fn_at = 24,
	.record_top_max = 384,
};

static __attribute__((noinline)) void fiber_fn(void)
{
}

/* A stack top as make_worker_context and create_fiber2 leave it, in buf
 * (at least 1024 bytes, 256-aligned): the worker at buf + 512, its fn_ =
 * fn; the record 256 bytes under it, its bind's `this` at word `this_at`
 * (or none: -1); returns make_fcontext's sp. */
static uint64_t lay_out(uint8_t *buf, uint64_t fn, int this_at)
{
	uint64_t worker = (uint64_t)(uintptr_t)(buf + 512);
	uint64_t *rec = (uint64_t *)(buf + 256);

	memset(buf, 0xa5, 1024);
	rec[0] = 65536;	       /* stack_context.size */
	rec[1] = worker + 512; /* stack_context.sp: the allocation's top */
	rec[2] = 65536;	       /* the allocator */
	if (this_at >= 0)
		rec[this_at] = worker; /* the bind's this */
	memcpy(buf + 512 + 232, &fn, sizeof(fn));
	return (uint64_t)(uintptr_t)buf + 256 - 64;
}

/* A Boost.Context fiber's own record at the top of the page that ends m's
 * mapping (create_fiber1), fn_ = fn; returns make_fcontext's sp. */
static uint64_t lay_out_record(uint8_t *page_end, uint64_t fn)
{
	uint64_t *rec = (uint64_t *)(page_end - 256);

	rec[0] = 65536;				 /* stack_context.size */
	rec[1] = (uint64_t)(uintptr_t)(rec + 4); /* top: past the record */
	rec[2] = 65536;				 /* the allocator */
	rec[3] = fn;				 /* fn_ */
	return (uint64_t)(uintptr_t)rec - 64;
}

/* peek (the safe read) and read (the direct one) agree. */
static uint64_t both(uint64_t sp, enum fiberfn_kind want)
{
	enum fiberfn_kind kind = FIBERFN_RECORD + 1;
	uint64_t fn = fiberfn_peek(&l174, sp, &kind);

	assert_int_equal(kind, want);
	if (want != FIBERFN_NONE)
		assert_true(fiberfn_read(&l174, sp, want) == fn);
	return fn;
}

static void test_found(void **state)
{
	uint8_t *buf = aligned_alloc(256, 1024);
	uint64_t fn = (uint64_t)(uintptr_t)fiber_fn, sp;
	uint64_t *rec = (uint64_t *)(buf + 256);
	enum fiberfn_kind kind;

	(void)state;
	assert_non_null(buf);
	/* `this` anywhere in the record's first 128 bytes. */
	for (int at = 3; at < 16; at++)
		assert_true(both(lay_out(buf, fn, at), FIBERFN_WORKER) == fn);
	/* A record that does not point at the worker: not Boost.Fiber's. */
	assert_true(both(lay_out(buf, fn, -1), FIBERFN_NONE) == 0);
	/* ... nor beyond the bytes searched. */
	sp = lay_out(buf, fn, -1);
	rec[16] = (uint64_t)(uintptr_t)(buf + 512);
	assert_true(both(sp, FIBERFN_NONE) == 0);
	/* A stack_context that does not hold the worker's fn_ (its top
	 * under it, its bottom over the record, a size past 0). */
	sp = lay_out(buf, fn, 5);
	rec[1] = (uint64_t)(uintptr_t)(buf + 512 + 239);
	assert_true(both(sp, FIBERFN_NONE) == 0);
	sp = lay_out(buf, fn, 5);
	rec[0] = 64;
	assert_true(both(sp, FIBERFN_NONE) == 0);
	sp = lay_out(buf, fn, 5);
	rec[0] = rec[1] + 1;
	assert_true(both(sp, FIBERFN_NONE) == 0);
	/* sp where no fiber's is (its record would not be 256-aligned). */
	sp = lay_out(buf, fn, 5);
	assert_true(both(sp + 16, FIBERFN_NONE) == 0);
	assert_true(fiberfn_of(sp + 16, 0x1000) == 0);
	/* No layout, and an sp at the top of the address space. */
	assert_true(fiberfn_peek(NULL, sp, &kind) == 0 && !kind);
	assert_true(fiberfn_read(NULL, sp, FIBERFN_WORKER) == 0);
	assert_true(fiberfn_read(&l174, sp, FIBERFN_NONE) == 0);
	assert_true(fiberfn_peek(&l174, UINT64_MAX - 64 - 255, &kind) == 0);
	free(buf);
}

/* The worker past the end of a mapping (a record at the top of a stack
 * that is not a fiber's: Boost.Context's own fiber, a program's), or the
 * record itself unmapped: 0, and no fault. */
static void test_unmapped(void **state)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t *rec;
	uint64_t sp;

	(void)state;
	assert_true(m != MAP_FAILED);
	assert_int_equal(munmap(m + page, (size_t)page), 0);
	rec = (uint64_t *)(m + page - 256);
	enum fiberfn_kind kind;

	rec[0] = 2 * (uint64_t)page;
	rec[1] = (uint64_t)(uintptr_t)(m + 2 * page); /* a top that lies */
	rec[5] = (uint64_t)(uintptr_t)(m + page);     /* this: unmapped */
	sp = (uint64_t)(uintptr_t)rec - 64;
	assert_true(fiberfn_peek(&l174, sp, &kind) == 0 && !kind);
	/* The record on the unmapped page. */
	assert_true(fiberfn_peek(&l174, (uint64_t)(uintptr_t)(m + page),
				 &kind) == 0);
	assert_int_equal(kind, FIBERFN_NONE);
	munmap(m, (size_t)page);
}

/* A Boost.Context fiber's own record at the top of its allocation (Boost's
 * jump_void.cpp: fiber f{fn}): its fn_, read past it though the worker's
 * place is unmapped; refused when its stack_context does not end just past
 * it or does not reach under sp. */
static void test_record(void **state)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t fn = (uint64_t)(uintptr_t)fiber_fn, sp, *rec;

	(void)state;
	assert_true(m != MAP_FAILED);
	assert_int_equal(munmap(m + page, (size_t)page), 0);
	sp = lay_out_record(m + page, fn);
	rec = (uint64_t *)(uintptr_t)(sp + 64);
	assert_true(both(sp, FIBERFN_RECORD) == fn);
	/* The top farther than a record's place under it: not create_fiber1's.
	 */
	rec[1] = (uint64_t)(uintptr_t)rec + 385;
	assert_true(both(sp, FIBERFN_NONE) == 0);
	/* ... or before the record's fn_ ends. */
	rec[1] = (uint64_t)(uintptr_t)rec + 31;
	assert_true(both(sp, FIBERFN_NONE) == 0);
	/* A size that leaves sp outside the allocation. */
	sp = lay_out_record(m + page, fn);
	rec[0] = 64;
	assert_true(both(sp, FIBERFN_NONE) == 0);
	munmap(m, (size_t)page);
}

/* The process's layout: none while no listed libboost_fiber is loaded;
 * once Debian's 1.74 is, its own. */
static void test_layout(void **state)
{
	const struct fiberfn_layout *l;
	void *h;

	(void)state;
	assert_null(fiberfn_layout());
	h = dlopen("libboost_fiber.so.1.74.0", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		print_message("no libboost_fiber.so.1.74.0: %s\n", dlerror());
		skip();
	}
	l = fiberfn_layout();
	assert_non_null(l);
	assert_string_equal(l->lib, "libboost_context.so.1.74.0");
	assert_int_equal(l->fn_at, 232);
	/* Kept: the same answer without asking again. */
	assert_ptr_equal(fiberfn_layout(), l);
	dlclose(h);
}

/* Each entry's first context decides for the entry: a worker's entry is
 * read at each context it makes; another's never again, even where a
 * worker's bytes would be. */
static void test_verdict_per_entry(void **state)
{
	uint8_t *a = aligned_alloc(256, 1024), *b = aligned_alloc(256, 1024);
	uint64_t fn = (uint64_t)(uintptr_t)fiber_fn;
	const uint64_t worker_entry = 0x7000, other_entry = 0x7010;
	void *h = dlopen("libboost_fiber.so.1.74.0", RTLD_NOW | RTLD_LOCAL);

	(void)state;
	if (!h) {
		free(a);
		free(b);
		skip();
	}
	assert_true(fiberfn_of(lay_out(a, fn, 5), worker_entry) == fn);
	assert_true(fiberfn_of(lay_out(b, fn + 16, 7), worker_entry) ==
		    fn + 16);
	/* Checked again each time: not a worker's record, nothing. */
	assert_true(fiberfn_of(lay_out(b, fn, -1), worker_entry) == 0);
	assert_true(fiberfn_of(lay_out(a, fn, -1), other_entry) == 0);
	assert_true(fiberfn_of(lay_out(b, fn, 5), other_entry) == 0);
	/* No entry, or one that is no user-space address: never read. */
	assert_true(fiberfn_of(lay_out(b, fn, 5), 0) == 0);
	assert_true(fiberfn_of(lay_out(b, fn, 5), 1ull << 63) == 0);
	/* A Boost.Context record's entry: read again directly, as a record
	 * (a worker's layout there is not taken for one). */
	{
		long page = sysconf(_SC_PAGESIZE);
		uint8_t *m = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		const uint64_t record_entry = 0x7020;

		assert_true(m != MAP_FAILED);
		assert_true(fiberfn_of(lay_out_record(m + page, fn),
				       record_entry) == fn);
		assert_true(fiberfn_of(lay_out_record(m + page, fn + 32),
				       record_entry) == fn + 32);
		assert_true(fiberfn_of(lay_out(a, fn, 5), record_entry) == 0);
		munmap(m, (size_t)page);
	}
	dlclose(h);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_found),
		cmocka_unit_test(test_unmapped),
		cmocka_unit_test(test_record),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_verdict_per_entry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
