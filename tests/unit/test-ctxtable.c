/*
 * test-ctxtable: the preload's context records and the address maps that
 * find them (src/preload/ctxtable.c, addrmap.c) -- alone, then hammered by
 * threads.
 *
 * Alone:
 *   - addrmap: set and get at a granularity, a range across leaves,
 *     overwrite, nothing beyond the mapped address space;
 *   - records in chunks: more than one chunk handed out, each record's
 *     address stable while others come and go; fresh, then from the free
 *     list, then refused at cap (counted untracked);
 *   - lookups check the record: a page map entry left by a closed context
 *     finds nothing, nor one whose record went to a context elsewhere; a
 *     ucontext_t finds the record last saved in it, and nothing once it
 *     was saved elsewhere; a root is found where it suspended;
 *   - malloc'd stacks sharing a page are each found on it; a record
 *     closed twice goes back to the free list once;
 *   - churn (issue 25): 3,000,000 contexts made and finished, each on a
 *     stack at another address of a 1 GiB span, found by every switch's
 *     lookup -- the maps take no more memory after the last million than
 *     after the first (no removal leaves anything behind, so nothing can
 *     grow with the contexts that came before: the old open-addressing
 *     maps ran out of empty slots and then searched the whole table).
 *
 * Threads (suite concurrency, run under TSan): each sets and looks up its
 * own pages, in leaves the others share, while records are allocated and
 * freed by all threads at once: no index is ever held by two threads, and
 * the allocations balance the frees exactly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "preload/ctxtable.h"

static void test_addrmap(void **state)
{
	struct addrmap m;
	uint64_t b0;

	(void)state;
	assert_true(addrmap_init(&m, 12));
	b0 = addrmap_bytes(&m);
	assert_int_equal(addrmap_get(&m, 0x7f0000001000), ADDRMAP_NONE);
	/* Nothing was mapped by a lookup. */
	assert_int_equal(addrmap_bytes(&m), b0);
	/* A range over a leaf boundary (a leaf: 4096 pages, 16 MiB). */
	assert_true(addrmap_set(&m, 0x7f0000fff000, 0x7f0001002000, 7));
	assert_int_equal(addrmap_get(&m, 0x7f0000fff123), 7);
	assert_int_equal(addrmap_get(&m, 0x7f0001000000), 7);
	assert_int_equal(addrmap_get(&m, 0x7f0001001fff), 7);
	assert_int_equal(addrmap_get(&m, 0x7f0001002000), ADDRMAP_NONE);
	assert_int_equal(addrmap_get(&m, 0x7f0000ffefff), ADDRMAP_NONE);
	/* Overwritten, never removed. */
	assert_true(addrmap_set(&m, 0x7f0001000000, 0x7f0001000001, 9));
	assert_int_equal(addrmap_get(&m, 0x7f0001000abc), 9);
	assert_int_equal(addrmap_get(&m, 0x7f0001001000), 7);
	/* Index 0 is a value like any other. */
	assert_true(addrmap_set(&m, 0x1000, 0x2000, 0));
	assert_int_equal(addrmap_get(&m, 0x1fff), 0);
	/* Beyond 48 bits: not mapped, never found. */
	assert_false(addrmap_set(&m, 1ull << 48, (1ull << 48) + 1, 1));
	assert_int_equal(addrmap_get(&m, 1ull << 48), ADDRMAP_NONE);
	assert_int_equal(addrmap_get(&m, UINT64_MAX), ADDRMAP_NONE);
	addrmap_finish(&m);
}

static void test_records(void **state)
{
	static struct ctxtable t;
	uint32_t a, b, n = 0;
	struct ctx *pa;

	(void)state;
	assert_true(ctxtable_init(&t, CTXTABLE_CHUNK + 8));
	a = ctxtable_alloc(&t, CTX_UCONTEXT);
	b = ctxtable_alloc(&t, CTX_FCONTEXT);
	assert_int_equal(a, 0);
	assert_int_equal(b, 1);
	pa = ctxtable_ctx(&t, a);
	/* Past the first chunk: a second one is mapped, the first record
	 * has not moved. */
	while (ctxtable_alloc(&t, CTX_FCONTEXT) != CTXTABLE_NONE)
		n++;
	assert_int_equal(n + 2, CTXTABLE_CHUNK + 8);
	assert_ptr_equal(ctxtable_ctx(&t, a), pa);
	assert_true(ctxtable_ctx(&t, CTXTABLE_CHUNK + 1) !=
		    ctxtable_ctx(&t, 1) + CTXTABLE_CHUNK); /* another chunk */
	assert_int_equal(atomic_load(&t.untracked), 1);
	assert_int_equal(atomic_load(&t.live), CTXTABLE_CHUNK + 8);
	/* Freed, then handed out again (the free list is a stack). */
	ctxtable_free(&t, b);
	assert_int_equal(atomic_load(&t.live), CTXTABLE_CHUNK + 7);
	assert_int_equal(ctxtable_alloc(&t, CTX_ROOT), b);
	assert_int_equal(atomic_load(&ctxtable_ctx(&t, b)->kind), CTX_ROOT);
	ctxtable_finish(&t);
}

static void test_lookups(void **state)
{
	static struct ctxtable t;
	uint64_t lo = 0x7f1230000000, hi = lo + 0x10000;
	uint32_t a, b, r;

	(void)state;
	assert_true(ctxtable_init(&t, 16));
	assert_int_equal(ctxtable_stacks_gen(&t), 0);
	a = ctxtable_alloc(&t, CTX_FCONTEXT);
	assert_true(ctxtable_set_stack(&t, a, lo, hi));
	/* Every stack set moves it (preload_here's root cache); a stack
	 * refused (empty) does not. */
	assert_int_equal(ctxtable_stacks_gen(&t), 1);
	assert_false(ctxtable_set_stack(&t, a, hi, lo));
	assert_int_equal(ctxtable_stacks_gen(&t), 1);
	assert_int_equal(ctxtable_by_stack(&t, hi - 0x48), a);
	assert_int_equal(ctxtable_by_stack(&t, lo), a);
	assert_int_equal(ctxtable_by_stack(&t, hi), CTXTABLE_NONE);
	/* Closed: its pages still name it, the lookup finds nothing. */
	ctxtable_free(&t, a);
	assert_int_equal(ctxtable_by_stack(&t, hi - 0x48), CTXTABLE_NONE);
	/* The record reused for a context on another stack: the old pages
	 * still name it, and still find nothing. */
	b = ctxtable_alloc(&t, CTX_FCONTEXT);
	assert_int_equal(b, a);
	assert_true(ctxtable_set_stack(&t, b, hi + 0x100000, hi + 0x110000));
	assert_int_equal(ctxtable_stacks_gen(&t), 2);
	assert_int_equal(ctxtable_by_stack(&t, hi - 0x48), CTXTABLE_NONE);
	assert_int_equal(ctxtable_by_stack(&t, hi + 0x10fff0), b);
	/* A ucontext_t: the record last saved in it. */
	atomic_store(&ctxtable_ctx(&t, b)->saved_key, 0x5000a0);
	ctxtable_set_uc(&t, b, 0x5000a0);
	assert_int_equal(ctxtable_by_uc(&t, 0x5000a0), b);
	assert_int_equal(ctxtable_by_uc(&t, 0x5000a8), CTXTABLE_NONE);
	atomic_store(&ctxtable_ctx(&t, b)->saved_key, 0x9000c0);
	assert_int_equal(ctxtable_by_uc(&t, 0x5000a0), CTXTABLE_NONE);
	/* A root: no stack, found where it suspended. */
	r = ctxtable_alloc(&t, CTX_ROOT);
	atomic_store(&ctxtable_ctx(&t, r)->saved_key, 0x7ffd00001230);
	ctxtable_root_saved_at(&t, r, 0x7ffd00001230);
	assert_int_equal(ctxtable_by_stack(&t, 0x7ffd00001230), r);
	assert_int_equal(ctxtable_by_stack(&t, 0x7ffd00001238), CTXTABLE_NONE);
	ctxtable_finish(&t);
}

/* A stack found by its lowest address (free() of its block), when malloc
 * put it right above another stack that shares its first page, and the
 * other was registered later: the page names the other one. */
static void test_by_base(void **state)
{
	static struct ctxtable t;
	uint64_t a_lo = 0x7f1230010010, a_hi = a_lo + 0x10000;
	uint64_t c_lo = a_lo - 0x8000; /* [c_lo, a_lo): shares a_lo's page */
	uint32_t a, c, r;

	(void)state;
	assert_true(ctxtable_init(&t, 16));
	assert_false(ctxtable_maybe_base(&t, a_lo));
	a = ctxtable_alloc(&t, CTX_FCONTEXT);
	assert_true(ctxtable_set_stack(&t, a, a_lo, a_hi));
	c = ctxtable_alloc(&t, CTX_UCONTEXT);
	assert_true(ctxtable_set_stack(&t, c, c_lo, a_lo));
	assert_true(ctxtable_maybe_base(&t, a_lo));
	assert_true(ctxtable_maybe_base(&t, c_lo));
	/* a_lo's page names c now; the page above still finds a, and so
	 * does the base. */
	assert_int_equal(ctxtable_by_stack(&t, a_lo), a);
	assert_int_equal(ctxtable_by_base(&t, a_lo), a);
	assert_int_equal(ctxtable_by_base(&t, c_lo), c);
	/* Not a base: inside a stack, or a block nobody made a stack of. */
	assert_int_equal(ctxtable_by_base(&t, a_lo + 0x10), CTXTABLE_NONE);
	assert_int_equal(ctxtable_by_base(&t, a_hi), CTXTABLE_NONE);
	/* Closed: not found (its bit stays: a hint only). */
	ctxtable_free(&t, a);
	assert_int_equal(ctxtable_by_base(&t, a_lo), CTXTABLE_NONE);
	assert_true(ctxtable_maybe_base(&t, a_lo));
	/* A root is never a made stack. */
	r = ctxtable_alloc(&t, CTX_ROOT);
	atomic_store(&ctxtable_ctx(&t, r)->saved_key, 0x7ffd00001230);
	ctxtable_root_saved_at(&t, r, 0x7ffd00001230);
	assert_int_equal(ctxtable_by_base(&t, 0x7ffd00001230), CTXTABLE_NONE);
	ctxtable_finish(&t);
}

/*
 * Malloc'd stacks side by side: the page where a's top (its fcontext_t,
 * the place Boost's first switch into it resumes) meets b's bottom names
 * b, made later -- a is still found there, and b too; a root that
 * suspends on that page (a switch missed) does not take it over.  Before,
 * a's first switch found nothing and its entry was lost.
 */
static void test_shared_pages(void **state)
{
	static struct ctxtable t;
	uint64_t a_lo = 0x7f1230000d90, a_hi = a_lo + 0x1fd30;
	uint64_t b_lo = a_hi + 0x10, b_hi = b_lo + 0x1fd30;
	uint32_t a, b, r;

	(void)state;
	assert_true(ctxtable_init(&t, 16));
	a = ctxtable_alloc(&t, CTX_FCONTEXT);
	assert_true(ctxtable_set_stack(&t, a, a_lo, a_hi));
	b = ctxtable_alloc(&t, CTX_FCONTEXT);
	assert_true(ctxtable_set_stack(&t, b, b_lo, b_hi));
	assert_int_equal(ctxtable_by_stack(&t, a_hi - 0x40), a);
	assert_int_equal(ctxtable_by_stack(&t, b_lo + 0x8), b);
	assert_int_equal(ctxtable_by_stack(&t, b_hi - 0x40), b);
	/* Between the two blocks: neither's. */
	assert_int_equal(ctxtable_by_stack(&t, a_hi + 0x8), CTXTABLE_NONE);
	r = ctxtable_alloc(&t, CTX_ROOT);
	atomic_store(&ctxtable_ctx(&t, r)->saved_key, b_lo + 0x100);
	ctxtable_root_saved_at(&t, r, b_lo + 0x100);
	assert_int_equal(ctxtable_by_stack(&t, b_lo + 0x8), b);
	assert_int_equal(ctxtable_by_stack(&t, a_hi - 0x40), a);
	ctxtable_finish(&t);
}

/*
 * A record closed twice -- Boost's fiber_exit frees the stack of the
 * context it ends (the free() closes it) before the exit itself does --
 * goes back to the free list once: the next two contexts get two records.
 * Pushed twice, both got the same one, and the first one's entry was
 * overwritten by the second's.
 */
static void test_freed_twice(void **state)
{
	static struct ctxtable t;
	uint32_t a, b, c;

	(void)state;
	assert_true(ctxtable_init(&t, 16));
	a = ctxtable_alloc(&t, CTX_FCONTEXT);
	ctxtable_free(&t, a);
	ctxtable_free(&t, a);
	b = ctxtable_alloc(&t, CTX_FCONTEXT);
	c = ctxtable_alloc(&t, CTX_FCONTEXT);
	assert_int_not_equal(b, CTXTABLE_NONE);
	assert_int_not_equal(c, CTXTABLE_NONE);
	assert_int_not_equal(b, c);
	ctxtable_finish(&t);
}

/* 3,000,000 contexts through a table of 64, each on a stack somewhere in a
 * 1 GiB span (a new place each time, wrapping), each found by the lookups
 * a switch makes; the maps stop growing once the span is covered. */
static void test_churn(void **state)
{
	static struct ctxtable t;
	const uint64_t base = 0x7e0000000000, span = 1ull << 30;
	const uint64_t stack = 64 * 1024;
	uint64_t bytes_at_1m = 0;
	uint32_t held[64];

	(void)state;
	assert_true(ctxtable_init(&t, 64));
	for (unsigned k = 0; k < 64; k++)
		held[k] = CTXTABLE_NONE;
	for (uint64_t n = 0; n < 3000000; n++) {
		unsigned slot = (unsigned)(n % 64);
		/* Tops vary by a page per context, stacks overlap others'
		 * old ones (a freed stack reused elsewhere). */
		uint64_t lo = base + (n * 4096 * 7) % (span - stack);
		uint32_t i;

		if (held[slot] != CTXTABLE_NONE)
			ctxtable_free(&t, held[slot]);
		i = ctxtable_alloc(&t, CTX_FCONTEXT);
		assert_true(i != CTXTABLE_NONE);
		assert_true(ctxtable_set_stack(&t, i, lo, lo + stack));
		if (ctxtable_by_stack(&t, lo + stack - 0x48) != i)
			fail_msg("context %llu not found at its stack",
				 (unsigned long long)n);
		held[slot] = i;
		if (n == 1000000)
			bytes_at_1m = addrmap_bytes(&t.by_page);
	}
	print_message("page map: %llu KiB after 1 M contexts, %llu KiB after "
		      "3 M\n",
		      (unsigned long long)(bytes_at_1m >> 10),
		      (unsigned long long)(addrmap_bytes(&t.by_page) >> 10));
	assert_int_equal(addrmap_bytes(&t.by_page), bytes_at_1m);
	assert_int_equal(atomic_load(&t.untracked), 0);
	ctxtable_finish(&t);
}

#define THREADS 4
#define ROUNDS 20000

static struct ctxtable shared;
static _Atomic uint32_t owner[256]; /* record -> thread + 1, 0: free */
static atomic_ulong allocs, frees, errors;

static void *hammer(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	uint32_t held[8];
	unsigned nheld = 0;

	for (unsigned r = 0; r < ROUNDS; r++) {
		/* Each thread's own pages, interleaved with the others' in
		 * the same leaves. */
		uint64_t page = 0x7f0000000000 +
				((uint64_t)((r % 512) * THREADS + id) << 12);
		uint32_t v = (id << 24) | r;

		if (!addrmap_set(&shared.by_page, page, page + 1, v) ||
		    addrmap_get(&shared.by_page, page + 0x123) != v)
			atomic_fetch_add(&errors, 1);
		if (nheld < 8 && (r & 1)) {
			uint32_t i = ctxtable_alloc(&shared, CTX_FCONTEXT);
			uint32_t none = 0;

			if (i != CTXTABLE_NONE) {
				if (!atomic_compare_exchange_strong(
					    &owner[i], &none, id + 1))
					atomic_fetch_add(&errors, 1);
				held[nheld++] = i;
				atomic_fetch_add(&allocs, 1);
			}
		} else if (nheld) {
			uint32_t i = held[--nheld];
			uint32_t me = id + 1;

			if (!atomic_compare_exchange_strong(&owner[i], &me, 0))
				atomic_fetch_add(&errors, 1);
			ctxtable_free(&shared, i);
			atomic_fetch_add(&frees, 1);
		}
	}
	while (nheld) {
		uint32_t i = held[--nheld];

		atomic_store(&owner[i], 0);
		ctxtable_free(&shared, i);
		atomic_fetch_add(&frees, 1);
	}
	return NULL;
}

static void test_threads(void **state)
{
	pthread_t th[THREADS];
	unsigned n = 0;

	(void)state;
	/* 24 records for 4 threads holding up to 8: some allocations fail,
	 * which is counted, never an index given twice. */
	assert_true(ctxtable_init(&shared, 24));
	for (unsigned i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, hammer, (void *)(uintptr_t)i);
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(atomic_load(&errors), 0);
	assert_int_equal(atomic_load(&allocs), atomic_load(&frees));
	assert_true(atomic_load(&allocs) > 0);
	/* Every record is free again: exactly cap can be handed out. */
	while (ctxtable_alloc(&shared, CTX_ROOT) != CTXTABLE_NONE)
		n++;
	assert_int_equal(n, 24);
	ctxtable_finish(&shared);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addrmap),
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_lookups),
		cmocka_unit_test(test_by_base),
		cmocka_unit_test(test_shared_pages),
		cmocka_unit_test(test_freed_twice),
		cmocka_unit_test(test_churn),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
