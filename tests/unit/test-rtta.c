/*
 * rtta: the interval map behind Cacheray's type annotations
 * (src/cacheray/rtta.c), against a byte-per-address model: random adds
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

#include "cacheray/rtta.h"

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

struct gone {
	uint64_t start[8], last[8];
	unsigned n;
};

static void on_remove(void *ctx, uint64_t start, uint64_t last)
{
	struct gone *g = ctx;

	assert_true(g->n < 8);
	g->start[g->n] = start;
	g->last[g->n++] = last;
}

/* The hook hears of every region that leaves the map, removed or dropped
 * by an overlapping add, with its extent; serials are 64 bits (a counter
 * of adds never repeats, so rtta_still never takes a reused node for the
 * old region). */
static void test_rtta_hook_serial(void **state)
{
	struct rtta r;
	struct gone g = {.n = 0};
	struct rtta_hit h;
	uint32_t dropped;
	const uint64_t big = (1ull << 32) + 5;

	(void)state;
	rtta_init(&r, 0);
	r.on_remove = on_remove;
	r.ctx = &g;
	assert_int_equal(rtta_add(&r, 0x100, 0x40, 1, 8, 5, &dropped),
			 RTTA_ADDED);
	assert_int_equal(rtta_add(&r, 0x200, 0x10, 1, 8, 6, &dropped),
			 RTTA_ADDED);
	assert_false(rtta_remove(&r, 0x108)); /* not a start: nothing */
	assert_int_equal(g.n, 0);
	assert_true(rtta_remove(&r, 0x100));
	assert_int_equal(g.n, 1);
	assert_int_equal(g.start[0], 0x100);
	assert_int_equal(g.last[0], 0x13f);
	/* An add over the second drops it: the hook hears of it too. */
	assert_int_equal(rtta_add(&r, 0x1f0, 0x20, 2, 4, big, &dropped),
			 RTTA_ADDED);
	assert_int_equal(dropped, 1);
	assert_int_equal(g.n, 2);
	assert_int_equal(g.start[1], 0x200);
	assert_int_equal(g.last[1], 0x20f);
	rtta_lookup(&r, 0x1f8, &h);
	assert_true(h.region);
	assert_int_equal(h.serial, big);
	/* A serial 2^32 below (what a 32-bit counter would repeat) is
	 * another region's. */
	assert_true(rtta_still(&r, h.node, big));
	assert_false(rtta_still(&r, h.node, big - (1ull << 32)));
	rtta_finish(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rtta_model),
		cmocka_unit_test(test_rtta_hook_serial),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
