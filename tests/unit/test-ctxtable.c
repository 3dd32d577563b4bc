/*
 * test-ctxtable: the preload's context records and maps (src/preload/
 * ctxtable.c) -- alone, then hammered by threads.
 *
 * Alone: put, get, take and replace; a taken key's tomb reused without a
 * duplicate; a full map refusing; records handed out fresh, then from the
 * free list, then refused when all are in use (counted).
 *
 * Threads (suite concurrency, run under TSan): each owns a disjoint set of
 * keys and cycles them through put / get / take while the others do the
 * same on the same slots (the keys collide on purpose); every get of a key
 * the thread holds must return the value it put, every take must return
 * it once, and at the end the map is empty.  Records are allocated and
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

static void test_map_basics(void **state)
{
	struct ctxtable t;

	(void)state;
	assert_true(ctxtable_init(&t, 4)); /* 16 slots per map */
	assert_int_equal(ctxmap_get(&t.by_ptr, 0x1000), CTXTABLE_NONE);
	assert_true(ctxmap_put(&t.by_ptr, 0x1000, 1));
	assert_true(ctxmap_put(&t.by_ptr, 0x2000, 2));
	assert_int_equal(ctxmap_get(&t.by_ptr, 0x1000), 1);
	assert_true(ctxmap_put(&t.by_ptr, 0x1000, 3)); /* replaces */
	assert_int_equal(ctxmap_get(&t.by_ptr, 0x1000), 3);
	assert_int_equal(ctxmap_take(&t.by_ptr, 0x1000), 3);
	assert_int_equal(ctxmap_take(&t.by_ptr, 0x1000), CTXTABLE_NONE);
	assert_int_equal(ctxmap_get(&t.by_ptr, 0x1000), CTXTABLE_NONE);
	assert_int_equal(ctxmap_get(&t.by_ptr, 0x2000), 2);
	/* Fill it: 16 slots, one of them a tomb that a put reuses. */
	for (uint64_t k = 1; k <= 15; k++)
		assert_true(ctxmap_put(&t.by_ptr, 0x10000 * k, (uint32_t)k));
	assert_false(ctxmap_put(&t.by_ptr, 0x999000, 9)); /* full */
	for (uint64_t k = 1; k <= 15; k++)
		assert_int_equal(ctxmap_get(&t.by_ptr, 0x10000 * k), k);
	assert_int_equal(ctxmap_get(&t.by_ptr, 0x2000), 2);
	ctxtable_finish(&t);
}

/* A key put again after a take is found once (no stale duplicate). */
static void test_map_tomb_reuse(void **state)
{
	struct ctxtable t;

	(void)state;
	assert_true(ctxtable_init(&t, 64));
	for (int round = 0; round < 1000; round++) {
		uint64_t k = 0x5000 + (uint64_t)(round % 7) * 16;

		assert_true(ctxmap_put(&t.by_ptr, k, (uint32_t)round));
		assert_int_equal(ctxmap_get(&t.by_ptr, k), round);
		assert_int_equal(ctxmap_take(&t.by_ptr, k), round);
		assert_int_equal(ctxmap_get(&t.by_ptr, k), CTXTABLE_NONE);
	}
	ctxtable_finish(&t);
}

static void test_records(void **state)
{
	struct ctxtable t;
	uint32_t a, b, c;

	(void)state;
	assert_true(ctxtable_init(&t, 2));
	a = ctxtable_alloc(&t, CTX_UCONTEXT);
	b = ctxtable_alloc(&t, CTX_FCONTEXT);
	assert_int_not_equal(a, b);
	assert_true(a < 2 && b < 2);
	assert_int_equal(ctxtable_alloc(&t, CTX_ROOT), CTXTABLE_NONE);
	assert_int_equal(atomic_load(&t.dropped), 1);
	ctxtable_free(&t, a);
	c = ctxtable_alloc(&t, CTX_ROOT);
	assert_int_equal(c, a);
	assert_int_equal(atomic_load(&t.ctx[c].kind), CTX_ROOT);
	ctxtable_finish(&t);
}

/* ---- threads ---- */

#define THREADS 4
#define KEYS 64 /* per thread */
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
		/* Keys of all threads share slots: the hash sees only the
		 * low bits, which are the round's for everyone. */
		uint64_t key = ((uint64_t)(r % KEYS) << 4) |
			       ((uint64_t)(id + 1) << 40);
		uint32_t v = (id << 24) | r;

		if (!ctxmap_put(&shared.by_ptr, key, v) ||
		    ctxmap_get(&shared.by_ptr, key) != v ||
		    ctxmap_take(&shared.by_ptr, key) != v ||
		    ctxmap_get(&shared.by_ptr, key) != CTXTABLE_NONE)
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
	for (uint64_t k = 0; k < KEYS; k++)
		for (unsigned i = 0; i < THREADS; i++)
			assert_int_equal(
				ctxmap_get(&shared.by_ptr,
					   (k << 4) |
						   ((uint64_t)(i + 1) << 40)),
				CTXTABLE_NONE);
	/* Every record is free again: exactly cap can be handed out. */
	while (ctxtable_alloc(&shared, CTX_ROOT) != CTXTABLE_NONE)
		n++;
	assert_int_equal(n, 24);
	ctxtable_finish(&shared);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map_basics),
		cmocka_unit_test(test_map_tomb_reuse),
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
