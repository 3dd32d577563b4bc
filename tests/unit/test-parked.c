/*
 * parked: frames of the stacks live coroutines are parked at, by trace id
 * (src/engine/calltrace/parked.c).
 *
 *   keep     untagged traces whose ids are listed are kept with their
 *            frames, and stay while listed even when later unions do not
 *            carry them; tagged traces (samples) never are; an id listed
 *            one rotation late is found in the previous union;
 *   sweep    ids no longer listed are forgotten -- but for a stack the
 *            engine put itself since the last sweep (young: the list may
 *            have been taken before its put), which the next sweep keeps;
 *   bound    past max, new ones are dropped and counted;
 *   check    a stored stack is cut by the configured check when first
 *            kept, and checked only then; the engine's own are not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/calltrace/parked.h"

#define ID(e, b) (((uint64_t)(e) << 32) | (b))

static void union_of(struct traceset *u, const uint64_t *ids, size_t n,
		     bool tagged)
{
	traceset_clear(u);
	for (size_t i = 0; i < n; i++) {
		uint64_t f[3] = {0x100 + ids[i], 0x200, CT_TAG_THREAD | 7};

		assert_true(traceset_add(u, ids[i], 0, 1, f, tagged ? 3 : 2));
	}
	traceset_seal(u);
}

static void test_keep_and_sweep(void **state)
{
	struct parked *p = parked_create(8, NULL, NULL);
	struct parked_stats st;
	struct traceset u;
	uint64_t f[8];
	uint64_t all[3] = {ID(1, 1), ID(1, 2), ID(1, 3)};
	uint64_t some[2] = {ID(1, 1), ID(1, 3)};

	(void)state;
	assert_non_null(p);
	traceset_init(&u, 64, 1024);
	union_of(&u, all, 3, false);
	parked_update(p, &u, NULL, some, 2);
	assert_int_equal(parked_frames(p, ID(1, 1), f, 8), 2);
	assert_int_equal(f[0], 0x100 + ID(1, 1));
	assert_int_equal(f[1], 0x200);
	assert_int_equal(parked_frames(p, ID(1, 2), f, 8), 0); /* unlisted */
	assert_int_equal(parked_frames(p, ID(1, 3), f, 1), 1); /* max */
	/* Still listed, absent from the next union: kept. */
	union_of(&u, NULL, 0, false);
	parked_update(p, &u, NULL, some, 2);
	assert_int_equal(parked_frames(p, ID(1, 3), f, 8), 2);
	/* No longer listed: gone. */
	parked_update(p, &u, NULL, some, 1);
	assert_int_equal(parked_frames(p, ID(1, 3), f, 8), 0);
	assert_int_equal(parked_frames(p, ID(1, 1), f, 8), 2);
	parked_stats(p, &st);
	assert_int_equal(st.kept, 1);
	/* Tagged traces are samples, never parked stacks. */
	union_of(&u, all + 1, 1, true);
	parked_update(p, &u, NULL, all + 1, 1);
	assert_int_equal(parked_frames(p, ID(1, 2), f, 8), 0);
	assert_int_equal(parked_frames(p, 0, f, 8), 0);
	traceset_finish(&u);
	parked_destroy(p);
}

/* The check: frames from 0x9000 up are refused (not in code). */
static size_t checks;
static size_t below_9000(void *ctx, const uint64_t *f, size_t n)
{
	size_t k = 0;

	(void)ctx;
	checks++;
	while (k < n && f[k] < 0x9000)
		k++;
	return k;
}

/* A stored stack is cut by the check when first kept, and checked once;
 * a stack the engine walked itself (parked_put) is not checked again. */
static void test_keep_cuts_once(void **state)
{
	struct parked *p = parked_create(8, below_9000, NULL);
	uint64_t junk[3] = {0x100, 0x74736574, 0x200};
	uint64_t own[2] = {0x100, 0xa0d0a};
	uint64_t ids[1] = {ID(1, 1)}, f[8];
	struct traceset u;

	(void)state;
	assert_non_null(p);
	traceset_init(&u, 64, 1024);
	assert_true(traceset_add(&u, ids[0], 0, 1, junk, 3));
	traceset_seal(&u);
	checks = 0;
	parked_update(p, &u, NULL, ids, 1);
	assert_int_equal(parked_frames(p, ids[0], f, 8), 1);
	assert_int_equal(f[0], 0x100);
	parked_update(p, &u, NULL, ids, 1); /* kept: not checked again */
	assert_int_equal(checks, 1);
	parked_put(p, PARKED_OWN_ID | 5, own, 2);
	assert_int_equal(parked_frames(p, PARKED_OWN_ID | 5, f, 8), 2);
	assert_int_equal(checks, 1);
	traceset_finish(&u);
	parked_destroy(p);
}

/* An id listed only after the rotation whose union carried its stack (the
 * park harvested just after it): found in the previous union; an id
 * neither union has, or a tagged trace there, is not kept. */
static void test_late_listed_from_prev(void **state)
{
	struct parked *p = parked_create(8, NULL, NULL);
	struct traceset u, prev;
	uint64_t f[8];
	uint64_t old[2] = {ID(1, 1), ID(1, 2)}, now[1] = {ID(2, 1)};
	uint64_t late[3] = {ID(1, 1), ID(1, 7), ID(2, 1)};

	(void)state;
	assert_non_null(p);
	traceset_init(&u, 64, 1024);
	traceset_init(&prev, 64, 1024);
	union_of(&prev, old, 2, false);
	parked_update(p, &prev, NULL, NULL, 0); /* nobody parked yet */
	assert_int_equal(parked_frames(p, ID(1, 1), f, 8), 0);
	union_of(&u, now, 1, false);
	parked_update(p, &u, &prev, late, 3);
	assert_int_equal(parked_frames(p, ID(1, 1), f, 8), 2);
	assert_int_equal(f[0], 0x100 + ID(1, 1));
	assert_int_equal(parked_frames(p, ID(2, 1), f, 8), 2);
	assert_int_equal(parked_frames(p, ID(1, 7), f, 8), 0);
	assert_int_equal(parked_frames(p, ID(1, 2), f, 8), 0); /* unlisted */
	/* Kept from then on, with neither union carrying it. */
	union_of(&u, NULL, 0, false);
	union_of(&prev, NULL, 0, false);
	parked_update(p, &u, &prev, late, 1);
	assert_int_equal(parked_frames(p, ID(1, 1), f, 8), 2);
	/* A tagged trace in the previous union is a sample: not kept. */
	union_of(&prev, old + 1, 1, true);
	parked_update(p, &u, &prev, old + 1, 1);
	assert_int_equal(parked_frames(p, ID(1, 2), f, 8), 0);
	traceset_finish(&u);
	traceset_finish(&prev);
	parked_destroy(p);
}

/* Stacks the engine walked itself (a census): kept under their own ids,
 * swept by the same list, one id per distinct stack. */
static void test_own_stacks(void **state)
{
	struct parked *p = parked_create(8, NULL, NULL);
	uint64_t a[3] = {0x401000, 0x402000, 0x403000};
	uint64_t b[3] = {0x401000, 0x402000, 0x404000};
	uint64_t ida = parked_own_id(a, 3), idb = parked_own_id(b, 3);
	uint64_t ids[2], f[8];
	struct traceset u;

	(void)state;
	assert_non_null(p);
	assert_true(ida & PARKED_OWN_ID);
	assert_true(ida != idb);
	assert_true(ida == parked_own_id(a, 3));
	parked_put(p, ida, a, 3);
	parked_put(p, idb, b, 3);
	assert_int_equal(parked_frames(p, ida, f, 8), 3);
	assert_int_equal(f[2], 0x403000);
	/* Listed (sorted), kept across an update; unlisted, gone. */
	traceset_init(&u, 64, 1024);
	union_of(&u, NULL, 0, false);
	ids[0] = ida < idb ? ida : idb;
	ids[1] = ida < idb ? idb : ida;
	parked_update(p, &u, NULL, ids, 2);
	assert_int_equal(parked_frames(p, idb, f, 8), 3);
	parked_update(p, &u, NULL, &ida, 1);
	assert_int_equal(parked_frames(p, idb, f, 8), 0);
	assert_int_equal(parked_frames(p, ida, f, 8), 3);
	traceset_finish(&u);
	parked_destroy(p);
}

/* A stack put after the list the next sweep uses was taken (the walker's
 * thread puts while a rotation runs): that sweep keeps it, the one after
 * goes by the list alone.  Putting an id already kept makes it young
 * again. */
static void test_young_survives_one_sweep(void **state)
{
	struct parked *p = parked_create(8, NULL, NULL);
	uint64_t a[2] = {0x401000, 0x402000};
	uint64_t ida = parked_own_id(a, 2), f[8];
	struct traceset u;

	(void)state;
	assert_non_null(p);
	traceset_init(&u, 64, 1024);
	union_of(&u, NULL, 0, false);
	parked_put(p, ida, a, 2);
	parked_update(p, &u, NULL, NULL, 0); /* listed before the put */
	assert_int_equal(parked_frames(p, ida, f, 8), 2);
	parked_update(p, &u, NULL, NULL, 0); /* nobody parked at it */
	assert_int_equal(parked_frames(p, ida, f, 8), 0);
	/* Kept and listed; put again (another coroutine parked at the same
	 * place), then a sweep whose list predates that put. */
	parked_put(p, ida, a, 2);
	parked_update(p, &u, NULL, &ida, 1);
	parked_put(p, ida, a, 2);
	parked_update(p, &u, NULL, NULL, 0);
	assert_int_equal(parked_frames(p, ida, f, 8), 2);
	parked_update(p, &u, NULL, NULL, 0);
	assert_int_equal(parked_frames(p, ida, f, 8), 0);
	traceset_finish(&u);
	parked_destroy(p);
}

static void test_bound(void **state)
{
	struct parked *p = parked_create(4, NULL, NULL);
	struct parked_stats st;
	struct traceset u;
	uint64_t ids[10], f[4];
	size_t kept = 0;

	(void)state;
	traceset_init(&u, 64, 1024);
	for (int i = 0; i < 10; i++)
		ids[i] = ID(2, i);
	union_of(&u, ids, 10, false);
	parked_update(p, &u, NULL, ids, 10);
	parked_stats(p, &st);
	assert_int_equal(st.kept, 4);
	assert_int_equal(st.dropped, 6);
	for (int i = 0; i < 10; i++)
		kept += parked_frames(p, ids[i], f, 4) != 0;
	assert_int_equal(kept, 4);
	/* Forgetting makes room again. */
	parked_update(p, &u, NULL, ids + 9, 1);
	union_of(&u, ids + 9, 1, false);
	parked_update(p, &u, NULL, ids + 9, 1);
	assert_int_equal(parked_frames(p, ids[9], f, 4), 2);
	traceset_finish(&u);
	parked_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keep_and_sweep),
		cmocka_unit_test(test_young_survives_one_sweep),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_late_listed_from_prev),
		cmocka_unit_test(test_own_stacks),
		cmocka_unit_test(test_keep_cuts_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
