/*
 * rtta: the interval map behind Cacheray's type annotations
 * (src/engine/rtta.c), against a byte-per-address model: random adds
 * (overlapping ones drop the older regions whole), removes of live starts
 * and of random addresses, and after each step a lookup of every address --
 * the right region, or a gap that is free and as large as it can be.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/rtta.h"

/* The interval map against a byte-per-address model. */
static void test_rtta_model(void **state)
{
	enum { SPACE = 256 };
	int32_t owner[SPACE]; /* region serial, or -1 */
	uint64_t start_of[4096];
	struct rtta r;
	uint64_t rng = 12345;

	(void)state;
	memset(owner, -1, sizeof(owner));
	rtta_init(&r, 0);
	for (uint32_t serial = 1; serial < 4000; serial++) {
		uint64_t a, len;
		uint32_t dropped, want = 0;

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		a = (rng >> 33) % SPACE;
		len = 1 + (rng >> 45) % 24;
		if (a + len > SPACE)
			len = SPACE - a;
		if ((rng >> 20) % 3 == 0) {
			/* remove: a live start, or a random address */
			bool live = owner[a] >= 0 && start_of[owner[a]] == a;
			int32_t s = owner[a];

			assert_int_equal(rtta_remove(&r, a), live);
			for (unsigned i = 0; live && i < SPACE; i++)
				if (owner[i] == s)
					owner[i] = -1;
		} else {
			bool seen[4096] = {false};

			for (uint64_t i = a; i < a + len; i++)
				if (owner[i] >= 0 && !seen[owner[i]]) {
					seen[owner[i]] = true;
					want++;
				}
			for (unsigned i = 0; i < SPACE; i++)
				if (owner[i] >= 0 && seen[owner[i]])
					owner[i] = -1;
			assert_int_equal(rtta_add(&r, a, len, serial % 7,
						  serial % 5 + 1, serial,
						  &dropped),
					 RTTA_ADDED);
			assert_int_equal(dropped, want);
			for (uint64_t i = a; i < a + len; i++)
				owner[i] = (int32_t)serial;
			start_of[serial] = a;
		}
		for (unsigned i = 0; i < SPACE; i++) {
			struct rtta_hit h;

			rtta_lookup(&r, i, &h);
			assert_true(h.start <= i && i <= h.last);
			if (owner[i] >= 0) {
				assert_true(h.region);
				assert_int_equal(h.serial, owner[i]);
				assert_int_equal(h.start, start_of[owner[i]]);
				assert_int_equal(h.type, owner[i] % 7);
				continue;
			}
			assert_false(h.region);
			/* A gap: untyped throughout, maximal. */
			for (uint64_t k = h.start; k <= h.last && k < SPACE;
			     k++)
				assert_int_equal(owner[k], -1);
			assert_true(h.start == 0 || owner[h.start - 1] >= 0);
			assert_true(h.last >= SPACE - 1 ||
				    owner[h.last + 1] >= 0);
			if (h.last >= SPACE)
				assert_int_equal(h.last, UINT64_MAX);
		}
	}
	rtta_finish(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rtta_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
