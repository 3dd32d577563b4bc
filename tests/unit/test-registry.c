/*
 * registry: the probe's list of live coroutines (src/probe/registry.c),
 * one thread, every transition of a slot's word by hand -- what the owner
 * and the census walker each do, and what the other then finds.  The
 * races themselves are forced in tests/stress/test-census-stress.c; here
 * each outcome is checked once, exactly:
 *   - add publishes LIVE at attachment 0, remove returns the word and
 *     frees the slot (the next add reuses it), unless a walker pins it;
 *   - claim moves an older attachment to the new one (own), says what a
 *     walker handed over (handoff, with its station), and never moves a
 *     newer one back (stale);
 *   - pin only takes a live slot not yet claimed under the attachment,
 *     and not one pinned already; hand succeeds only on the pinned word;
 *     an owner's claim or close in between makes it fail, drops the pin,
 *     and a slot closed under the pin is freed by the unpin;
 *   - the fork handler drops pins nobody will drop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "probe/registry.h"

static struct corotop_coro co[4];

static uint32_t slot_of(uint32_t reg)
{
	return reg - 1;
}

static void test_add_remove_reuse(void **state)
{
	struct registry_stats st0, st;
	uint32_t a, b, c;
	uint64_t w;

	(void)state;
	registry_stats(&st0);
	a = registry_add(&co[0]);
	b = registry_add(&co[1]);
	assert_true(a && b && a != b);
	assert_int_equal(registry_word(slot_of(a)), REGISTRY_LIVE);
	registry_stats(&st);
	assert_int_equal(st.live, st0.live + 2);
	w = registry_remove(a);
	assert_int_equal(w, REGISTRY_LIVE);
	assert_int_equal(registry_word(slot_of(a)), 0);
	/* The free list hands the slot out again. */
	c = registry_add(&co[2]);
	assert_int_equal(c, a);
	registry_remove(b);
	registry_remove(c);
	registry_stats(&st);
	assert_int_equal(st.live, st0.live);
	assert_int_equal(st.pins, 0);
	assert_int_equal(registry_remove(0), 0);
}

static void test_claim(void **state)
{
	uint32_t r = registry_add(&co[0]), station = 77;

	(void)state;
	assert_int_equal(registry_claim(r, 5, &station), REGISTRY_CLAIM_OWN);
	assert_int_equal(REGISTRY_ATTACH(registry_word(slot_of(r))), 5);
	assert_true(registry_word(slot_of(r)) & REGISTRY_LIVE);
	/* Again under the same attachment: still ours, nothing moved. */
	assert_int_equal(registry_claim(r, 5, &station), REGISTRY_CLAIM_OWN);
	/* An older attachment (a record that loaded a retired region). */
	assert_int_equal(registry_claim(r, 4, &station), REGISTRY_CLAIM_STALE);
	assert_int_equal(REGISTRY_ATTACH(registry_word(slot_of(r))), 5);
	assert_int_equal(station, 77);
	registry_remove(r);
	/* Serial order across the wrap of the attach counter; 0 (never
	 * claimed) comes before any. */
	r = registry_add(&co[0]);
	assert_int_equal(registry_claim(r, 0xfffffffeu, &station),
			 REGISTRY_CLAIM_OWN);
	assert_int_equal(registry_claim(r, 3, &station), REGISTRY_CLAIM_OWN);
	assert_int_equal(registry_claim(r, 0xfffffffdu, &station),
			 REGISTRY_CLAIM_STALE);
	/* Not registered: always take a station yourself. */
	assert_int_equal(registry_claim(0, 9, &station), REGISTRY_CLAIM_OWN);
	registry_remove(r);
}

static void test_pin_hand_adopt(void **state)
{
	uint32_t r = registry_add(&co[1]), s = slot_of(r), station = 0;
	struct corotop_coro *c = NULL;
	uint64_t w;

	(void)state;
	assert_true(registry_pin(s, 3, &w, &c));
	assert_ptr_equal(c, &co[1]);
	assert_true(w & REGISTRY_PIN);
	/* Pinned already: a second walker skips it. */
	assert_false(registry_pin(s, 3, &w, &c));
	assert_true(registry_hand(s, w, 3, 0x123456));
	w = registry_word(s);
	assert_int_equal(w, REGISTRY_LIVE | REGISTRY_HANDOFF |
				    (uint64_t)0x123456 << 8 |
				    (uint64_t)3 << 32);
	assert_int_equal(REGISTRY_STATION(w), 0x123456);
	/* Claimed under 3 now: the walk of 3 does not take it again. */
	assert_false(registry_pin(s, 3, &w, &c));
	/* The owner's first record under 3 adopts the station. */
	assert_int_equal(registry_claim(r, 3, &station),
			 REGISTRY_CLAIM_HANDOFF);
	assert_int_equal(station, 0x123456);
	/* A later attachment: the owner claims it for itself. */
	assert_int_equal(registry_claim(r, 4, &station), REGISTRY_CLAIM_OWN);
	assert_false(registry_word(s) & REGISTRY_HANDOFF);
	/* remove returns a hand-over the owner never adopted. */
	assert_true(registry_pin(s, 6, &w, &c));
	assert_true(registry_hand(s, w, 6, 9));
	w = registry_remove(r);
	assert_true((w & REGISTRY_HANDOFF) && REGISTRY_ATTACH(w) == 6 &&
		    REGISTRY_STATION(w) == 9);
}

static void test_owner_claims_under_pin(void **state)
{
	uint32_t r = registry_add(&co[2]), s = slot_of(r), station;
	struct registry_stats st;
	struct corotop_coro *c;
	uint64_t w;

	(void)state;
	assert_true(registry_pin(s, 8, &w, &c));
	/* The owner records under 8 meanwhile: it claims, keeping PIN. */
	assert_int_equal(registry_claim(r, 8, &station), REGISTRY_CLAIM_OWN);
	assert_true(registry_word(s) & REGISTRY_PIN);
	/* The hand-over fails and drops the pin; the owner keeps it. */
	assert_false(registry_hand(s, w, 8, 1));
	assert_int_equal(registry_word(s), REGISTRY_LIVE | (uint64_t)8 << 32);
	registry_stats(&st);
	assert_int_equal(st.pins, 0);
	registry_remove(r);
}

static void test_close_under_pin(void **state)
{
	uint32_t r = registry_add(&co[3]), s = slot_of(r), r2, r3;
	struct corotop_coro *c;
	uint64_t w;

	(void)state;
	assert_true(registry_pin(s, 2, &w, &c));
	/* The owner closes: LIVE goes, PIN stays, the slot is not freed. */
	assert_true(registry_remove(r) & REGISTRY_PIN);
	assert_int_equal(registry_word(s), REGISTRY_PIN);
	r2 = registry_add(&co[0]);
	assert_int_not_equal(r2, r);
	/* The walker's hand-over fails; its unpin frees the slot. */
	assert_false(registry_hand(s, w, 2, 1));
	assert_int_equal(registry_word(s), 0);
	r3 = registry_add(&co[1]);
	assert_int_equal(r3, r);
	registry_remove(r2);
	registry_remove(r3);
}

static void test_pin_skips(void **state)
{
	uint32_t r = registry_add(&co[0]), s = slot_of(r), station;
	struct corotop_coro *c;
	uint64_t w;

	(void)state;
	/* Claimed under 10 already: the walks of 10 and older skip it. */
	assert_int_equal(registry_claim(r, 10, &station), REGISTRY_CLAIM_OWN);
	assert_false(registry_pin(s, 10, &w, &c));
	assert_false(registry_pin(s, 9, &w, &c));
	assert_true(registry_pin(s, 11, &w, &c));
	registry_unpin(s);
	registry_remove(r);
	/* Dead: nothing to pin; out of range: neither. */
	assert_false(registry_pin(s, 12, &w, &c));
	assert_false(registry_pin(registry_size(), 12, &w, &c));
}

static void test_atfork_drops_pins(void **state)
{
	uint32_t a = registry_add(&co[0]), b = registry_add(&co[1]), c2;
	struct registry_stats st;
	struct corotop_coro *c;
	uint64_t w;

	(void)state;
	assert_true(registry_pin(slot_of(a), 1, &w, &c));
	assert_true(registry_pin(slot_of(b), 1, &w, &c));
	registry_remove(b); /* closed under the pin */
	registry_atfork_child();
	registry_stats(&st);
	assert_int_equal(st.pins, 0);
	assert_int_equal(registry_word(slot_of(a)), REGISTRY_LIVE);
	/* b's slot was freed by the handler. */
	c2 = registry_add(&co[2]);
	assert_int_equal(c2, b);
	registry_remove(a);
	registry_remove(c2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_remove_reuse),
		cmocka_unit_test(test_claim),
		cmocka_unit_test(test_pin_hand_adopt),
		cmocka_unit_test(test_owner_claims_under_pin),
		cmocka_unit_test(test_close_under_pin),
		cmocka_unit_test(test_pin_skips),
		cmocka_unit_test(test_atfork_drops_pins),
	};

	if (!registry_init())
		return 77;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
