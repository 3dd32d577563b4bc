/*
 * freelist: the tagged Treiber stack of recycled stations that lives in the
 * region (src/wire/freelist.h).  Checked single-threaded against a
 * calloc'd region: LIFO order, the links written by push, the tag bumped by
 * every push and pop, empty and corrupt heads/links (untrusted shared
 * memory) and the ABA case the tag exists for: a CAS prepared from a stale
 * head must fail even when the same index is back on top.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/freelist.h"

#define NST 8u

struct fx {
	struct ctp_header *hdr;
	struct ctp_station *st;
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	size_t size = (size_t)ctp_region_size(NST);

	f->hdr = aligned_alloc(1024, size);
	memset(f->hdr, 0, size);
	f->hdr->magic = CTP_MAGIC;
	f->hdr->version = CTP_VERSION;
	f->hdr->max_stations = NST;
	f->hdr->ext.magic = CTP_HX_MAGIC;
	f->hdr->ext.flags = CTP_HX_FREELIST;
	f->st = (struct ctp_station *)((char *)f->hdr + CTP_HEADER_SIZE);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	free(f->hdr);
	free(f);
	return 0;
}

static uint64_t head(struct fx *f)
{
	return atomic_load(&f->hdr->ext.free_head);
}

static uint32_t tag(struct fx *f)
{
	return (uint32_t)(head(f) >> 32);
}

static void test_pack(void **state)
{
	(void)state;
	assert_true(freelist_pack(0, 0) == 0);
	assert_true(freelist_pack(1, 5) == 0x100000005ull);
	assert_true(freelist_pack(UINT32_MAX, UINT32_MAX) == UINT64_MAX);
	assert_true(FREELIST_EMPTY == UINT32_MAX);
}

static void test_pop_empty(void **state)
{
	struct fx *f = *state;

	assert_int_equal(freelist_pop(f->hdr, f->st, NST), FREELIST_EMPTY);
	/* A failed pop must not touch the head (no tag bump). */
	assert_true(head(f) == 0);
	/* Empty with a non-zero tag is still empty. */
	atomic_store(&f->hdr->ext.free_head, freelist_pack(77, 0));
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), FREELIST_EMPTY);
	assert_true(head(f) == freelist_pack(77, 0));
}

static void test_lifo_order_and_links(void **state)
{
	struct fx *f = *state;

	freelist_push(f->hdr, f->st, 2);
	freelist_push(f->hdr, f->st, 5);
	freelist_push(f->hdr, f->st, 0);
	/* head holds index + 1 of the last push; links are index + 1 too. */
	assert_int_equal((uint32_t)head(f), 1);
	assert_true(atomic_load(&f->st[0].ext.next_free) == 6);
	assert_true(atomic_load(&f->st[5].ext.next_free) == 3);
	assert_true(atomic_load(&f->st[2].ext.next_free) == 0);

	assert_int_equal(freelist_pop(f->hdr, f->st, NST), 0);
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), 5);
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), 2);
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), FREELIST_EMPTY);
	assert_int_equal((uint32_t)head(f), 0);
}

static void test_tag_bumps(void **state)
{
	struct fx *f = *state;

	assert_int_equal(tag(f), 0);
	freelist_push(f->hdr, f->st, 3);
	assert_int_equal(tag(f), 1);
	freelist_push(f->hdr, f->st, 4);
	assert_int_equal(tag(f), 2);
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), 4);
	assert_int_equal(tag(f), 3);
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), 3);
	assert_int_equal(tag(f), 4);
	/* Failed (empty) pops do not bump. */
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), FREELIST_EMPTY);
	assert_int_equal(tag(f), 4);
	/* The tag wraps at 32 bits without disturbing the index. */
	atomic_store(&f->hdr->ext.free_head, freelist_pack(UINT32_MAX, 0));
	freelist_push(f->hdr, f->st, 6);
	assert_true(head(f) == freelist_pack(0, 7));
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), 6);
}

static void test_all_stations_round_trip(void **state)
{
	struct fx *f = *state;
	unsigned seen = 0;

	for (uint32_t i = 0; i < NST; i++)
		freelist_push(f->hdr, f->st, i);
	for (uint32_t i = 0; i < NST; i++) {
		uint32_t got = freelist_pop(f->hdr, f->st, NST);

		assert_int_equal(got, NST - 1 - i);
		seen |= 1u << got;
	}
	assert_int_equal(seen, (1u << NST) - 1);
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), FREELIST_EMPTY);
	assert_int_equal(tag(f), 2 * NST);
}

static void test_corrupt_head(void **state)
{
	struct fx *f = *state;

	/* index + 1 == max + 1: one past the last station. */
	atomic_store(&f->hdr->ext.free_head, freelist_pack(9, NST + 1));
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), FREELIST_EMPTY);
	assert_true(head(f) == freelist_pack(9, NST + 1)); /* untouched */
	atomic_store(&f->hdr->ext.free_head, freelist_pack(9, UINT32_MAX));
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), FREELIST_EMPTY);
	/* The bound is the caller's station count, not the array behind it. */
	atomic_store(&f->hdr->ext.free_head, freelist_pack(0, 5));
	assert_int_equal(freelist_pop(f->hdr, f->st, 4), FREELIST_EMPTY);
	/* index + 1 == max is the last valid station. */
	atomic_store(&f->hdr->ext.free_head, freelist_pack(0, NST));
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), NST - 1);
}

static void test_corrupt_link_truncates(void **state)
{
	struct fx *f = *state;

	freelist_push(f->hdr, f->st, 1);
	freelist_push(f->hdr, f->st, 3);
	/* Someone scribbles on station 3's link: past the end. */
	atomic_store(&f->st[3].ext.next_free, NST + 1);
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), 3);
	/* The list was cut at the bad link: station 1 is not reachable. */
	assert_int_equal((uint32_t)head(f), 0);
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), FREELIST_EMPTY);

	/* A 64-bit link whose low half looks valid is also rejected. */
	freelist_push(f->hdr, f->st, 2);
	freelist_push(f->hdr, f->st, 4);
	atomic_store(&f->st[4].ext.next_free, (1ull << 32) | 3);
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), 4);
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), FREELIST_EMPTY);

	/* A link equal to max (index max - 1) is valid and followed. */
	freelist_push(f->hdr, f->st, 0);
	atomic_store(&f->st[0].ext.next_free, NST);
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), 0);
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), NST - 1);
}

/*
 * ABA: popper P reads head = A (next B) and is preempted.  Meanwhile A and B
 * are popped, B stays in use and A is pushed back, so the head shows index A
 * again.  P's CAS (expect old head, install B) would hand out B twice; the
 * tag makes it fail.
 */
static void test_aba_stale_cas_fails(void **state)
{
	struct fx *f = *state;
	const uint32_t a = 4, b = 6, c = 2;
	uint64_t stale, stale_link, now, expect;

	freelist_push(f->hdr, f->st, c);
	freelist_push(f->hdr, f->st, b);
	freelist_push(f->hdr, f->st, a);
	/* P: load head and the link of its top. */
	stale = head(f);
	stale_link = atomic_load(&f->st[(uint32_t)stale - 1].ext.next_free);
	assert_int_equal((uint32_t)stale, a + 1);
	assert_true(stale_link == b + 1);

	/* Other threads: pop A, pop B (kept), push A back. */
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), a);
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), b);
	freelist_push(f->hdr, f->st, a);
	now = head(f);
	/* The ABA situation is real: same index on top, same low word... */
	assert_int_equal((uint32_t)now, (uint32_t)stale);
	/* ...so an untagged comparison would wrongly succeed... */
	assert_true((now & 0xffffffffu) == (stale & 0xffffffffu));
	/* ...but the tagged CAS of P fails. */
	expect = stale;
	assert_false(atomic_compare_exchange_strong(
		&f->hdr->ext.free_head, &expect,
		freelist_pack((uint32_t)(stale >> 32) + 1,
			      (uint32_t)stale_link)));
	assert_true(expect == now);
	assert_true(head(f) == now);

	/* The real list is A -> C: B (in use) is never handed out again. */
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), a);
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), c);
	assert_int_equal(freelist_pop(f->hdr, f->st, NST), FREELIST_EMPTY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pack),
		cmocka_unit_test_setup_teardown(test_pop_empty, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lifo_order_and_links,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_tag_bumps, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_all_stations_round_trip,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_head, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_link_truncates,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_aba_stale_cas_fails, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
