/*
 * cttable, ctslot, ctwriter: the writer's half of CallTrace storage, on a
 * table in private memory and on the slots of a zeroed region image.
 *
 *   probing     every prime step visits every bucket of a power-of-two
 *               table and every one of the 8192 protection slots;
 *   equality    two different stacks forced onto one hash land in two
 *               buckets, and each lookup finds its own (frames compared,
 *               not only the hash); same frames, same bucket;
 *   full        max_traces reached, pool exhausted, probe bound reached:
 *               each refused with its own code, existing stacks still found;
 *   slots       claim, nesting on the same owner, the Dekker re-check
 *               against a moved ACTIVE, slot exhaustion;
 *   view        ct_view_init refuses headers whose geometry disagrees with
 *               the size.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/ctwriter.h"

struct fixture {
	struct ct_geometry g;
	struct ct_table_meta meta;
	void *mem;
	struct cttable t;
};

static void fixture_init(struct fixture *f, uint32_t traces, uint32_t frames)
{
	memset(f, 0, sizeof(*f));
	assert_int_equal(ct_geometry(&f->g, traces, frames), 0);
	f->mem = aligned_alloc(4096, f->g.table_stride);
	assert_non_null(f->mem);
	memset(f->mem, 0, f->g.table_stride);
	cttable_view(&f->t, &f->meta, f->mem, &f->g);
}

static void fixture_finish(struct fixture *f)
{
	free(f->mem);
}

static void stack(uint64_t *f, unsigned n, uint64_t seed)
{
	for (unsigned i = 0; i < n; i++)
		f[i] = ct_mix64(seed * 131 + i) | 1;
}

static void test_probe_visits_every_position(void **state)
{
	const uint32_t sizes[] = {64, 1u << 17, CT_SLOTS};
	uint8_t *seen = malloc(1u << 17);

	(void)state;
	assert_non_null(seen);
	for (unsigned s = 0; s < 3; s++) {
		uint32_t size = sizes[s];

		for (unsigned k = 0; k < CT_PRIME_STEP_COUNT; k++) {
			uint32_t step = ct_prime_steps[k], start = 12345 % size;
			uint32_t distinct = 0;

			assert_true(step & 1); /* coprime to 2^n */
			memset(seen, 0, size);
			for (uint32_t i = 0; i < size; i++) {
				uint32_t p =
					ct_probe_pos(start, step, i, size - 1);

				distinct += !seen[p];
				seen[p] = 1;
			}
			assert_int_equal(distinct, size);
		}
	}
	/* The step is picked from the hash: all 16 are reachable. */
	memset(seen, 0, 16);
	for (uint64_t h = 0; h < 16; h++)
		for (unsigned k = 0; k < CT_PRIME_STEP_COUNT; k++)
			if (ct_step(h << 28) == ct_prime_steps[k])
				seen[k] = 1;
	for (unsigned k = 0; k < CT_PRIME_STEP_COUNT; k++)
		assert_true(seen[k]);
	free(seen);
}

static void test_hash_and_key(void **state)
{
	uint64_t a[16], b[16];
	uint64_t k;

	(void)state;
	stack(a, 16, 1);
	memcpy(b, a, sizeof(a));
	assert_true(ct_hash(a, 16) == ct_hash(b, 16));
	b[15] ^= 1;
	assert_true(ct_hash(a, 16) != ct_hash(b, 16));
	assert_true(ct_hash(a, 15) != ct_hash(a, 16));
	k = ct_key(0x12345678ull << 32, 77, 0xabcdef);
	assert_int_equal(ct_key_n(k), 77);
	assert_int_equal(ct_key_off(k), 0xabcdef);
	assert_true(ct_key(0, 0, 0) != 0); /* a key is never empty */
}

static void test_collision_compares_frames(void **state)
{
	struct fixture f;
	uint64_t a[16], b[16];
	const uint64_t h = 0x0badc0de12345678ull; /* forced for both */
	uint32_t ia, ib, i2;

	(void)state;
	fixture_init(&f, 64, 4096);
	stack(a, 16, 1);
	stack(b, 16, 2);
	assert_int_equal(cttable_claim(&f.t, a, 16, h, true, &ia),
			 CT_CLAIM_INSERTED);
	/* Same hash, different frames: a new bucket, not a's. */
	assert_int_equal(cttable_claim(&f.t, b, 16, h, true, &ib),
			 CT_CLAIM_INSERTED);
	assert_int_not_equal(ia, ib);
	assert_int_equal(cttable_claim(&f.t, a, 16, h, true, &i2),
			 CT_CLAIM_FOUND);
	assert_int_equal(i2, ia);
	assert_int_equal(cttable_claim(&f.t, b, 16, h, true, &i2),
			 CT_CLAIM_FOUND);
	assert_int_equal(i2, ib);
	/* Same hash and frames but a different length: different. */
	assert_int_equal(cttable_claim(&f.t, a, 15, h, true, &i2),
			 CT_CLAIM_INSERTED);
	assert_true(i2 != ia && i2 != ib);
	/* match = false always inserts (preserved ids sharing frames). */
	assert_int_equal(cttable_claim(&f.t, a, 16, h, false, &i2),
			 CT_CLAIM_INSERTED);
	assert_true(i2 != ia);
	assert_int_equal(atomic_load(&f.meta.traces), 4);
	/* An empty stack is a stack too. */
	assert_int_equal(cttable_claim(&f.t, NULL, 0, ct_hash(a, 0), true, &i2),
			 CT_CLAIM_INSERTED);
	assert_int_equal(cttable_claim(&f.t, NULL, 0, ct_hash(a, 0), true, &ia),
			 CT_CLAIM_FOUND);
	assert_int_equal(ia, i2);
	fixture_finish(&f);
}

static void test_full_table_and_pool(void **state)
{
	struct fixture f;
	uint64_t s[16];
	uint32_t idx, first;

	(void)state;
	fixture_init(&f, 8, 4096);
	stack(s, 16, 100);
	assert_int_equal(
		cttable_claim(&f.t, s, 16, ct_hash(s, 16), true, &first),
		CT_CLAIM_INSERTED);
	for (uint64_t k = 1; k < 8; k++) {
		stack(s, 16, 100 + k);
		assert_int_equal(
			cttable_claim(&f.t, s, 16, ct_hash(s, 16), true, &idx),
			CT_CLAIM_INSERTED);
	}
	stack(s, 16, 999);
	assert_int_equal(cttable_claim(&f.t, s, 16, ct_hash(s, 16), true, &idx),
			 CT_CLAIM_FULL);
	/* Known stacks are still found when the table is full. */
	stack(s, 16, 100);
	assert_int_equal(cttable_claim(&f.t, s, 16, ct_hash(s, 16), true, &idx),
			 CT_CLAIM_FOUND);
	assert_int_equal(idx, first);
	fixture_finish(&f);

	/* Pool: 40 frames hold two 16-frame stacks, not three. */
	fixture_init(&f, 64, 40);
	for (uint64_t k = 0; k < 2; k++) {
		stack(s, 16, k);
		assert_int_equal(
			cttable_claim(&f.t, s, 16, ct_hash(s, 16), true, &idx),
			CT_CLAIM_INSERTED);
	}
	stack(s, 16, 2);
	assert_int_equal(cttable_claim(&f.t, s, 16, ct_hash(s, 16), true, &idx),
			 CT_CLAIM_POOL_FULL);
	fixture_finish(&f);

	/* Probe bound: 64+ stacks on one forced hash exhaust the sequence. */
	fixture_init(&f, 1024, 1 << 16);
	for (uint64_t k = 0; k < CT_BUCKET_PROBES; k++) {
		stack(s, 4, k);
		assert_int_equal(cttable_claim(&f.t, s, 4, 42, true, &idx),
				 CT_CLAIM_INSERTED);
	}
	stack(s, 4, 5000);
	assert_int_equal(cttable_claim(&f.t, s, 4, 42, true, &idx),
			 CT_CLAIM_NO_BUCKET);
	fixture_finish(&f);
}

static void test_hostile_key_is_bounded(void **state)
{
	struct fixture f;
	uint64_t s[4];
	uint32_t idx;
	const uint64_t h = 0x1111111100000005ull;

	(void)state;
	fixture_init(&f, 64, 256);
	stack(s, 4, 7);
	/* A key whose offset points past the pool, at the first bucket of
	 * the sequence and with the right hash and count: never equal. */
	atomic_store(&f.t.b[h & f.t.mask].key,
		     ct_key(h, 4, (1u << CT_KEY_OFF_BITS) - 2));
	assert_null(
		cttable_frames(&f.t, atomic_load(&f.t.b[h & f.t.mask].key)));
	assert_int_equal(cttable_claim(&f.t, s, 4, h, true, &idx),
			 CT_CLAIM_INSERTED);
	assert_int_not_equal(idx, h & f.t.mask);
	fixture_finish(&f);
}

/* A zeroed region image with a valid header, for slot and writer tests. */
static void *image_make(uint32_t traces, uint32_t frames, struct ct_view *v)
{
	struct ct_geometry g;
	struct ct_header *h;
	void *mem;

	assert_int_equal(ct_geometry(&g, traces, frames), 0);
	mem = aligned_alloc(4096, g.region_size);
	assert_non_null(mem);
	memset(mem, 0, g.region_size);
	h = mem;
	h->magic = CT_MAGIC;
	h->version = CT_VERSION;
	h->header_size = CT_HEADER_SIZE;
	h->tables = CT_TABLES;
	h->slots = CT_SLOTS;
	h->max_traces = traces;
	h->buckets = g.buckets;
	h->pool_frames = frames;
	h->max_frames = CT_MAX_FRAMES;
	h->slots_offset = g.slots_offset;
	h->tables_offset = g.tables_offset;
	h->table_stride = g.table_stride;
	h->pool_offset = g.pool_offset;
	h->region_size = g.region_size;
	h->table[0].epoch = 7;
	assert_true(ct_view_init(v, mem, g.region_size));
	return mem;
}

static void test_view_validation(void **state)
{
	struct ct_view v;
	void *mem = image_make(64, 1024, &v);
	struct ct_header *h = mem;
	uint64_t size = v.g.region_size;

	(void)state;
	assert_false(ct_view_init(&v, mem, size - 4096)); /* short file */
	assert_false(ct_view_init(&v, mem, 100));
	h->buckets = 64; /* lies about its geometry */
	assert_false(ct_view_init(&v, mem, size));
	h->buckets = v.g.buckets;
	assert_true(ct_view_init(&v, mem, size));
	h->max_traces = CT_MAX_TRACES_LIMIT + 1;
	assert_false(ct_view_init(&v, mem, size));
	h->max_traces = 64;
	h->magic ^= 1;
	assert_false(ct_view_init(&v, mem, size));
	free(mem);
}

static void test_slots_nest_and_recheck(void **state)
{
	struct ct_view v;
	void *mem = image_make(64, 1024, &v);
	struct ctslot_ticket outer, inner;
	const uint64_t me = (1ull << 32) | 77;
	uint64_t s[8], id, owner;

	(void)state;
	assert_int_equal(ctslot_enter(v.hdr, v.slots, me, &outer), CTSLOT_OK);
	assert_false(outer.nested);
	assert_int_equal(atomic_load(&outer.slot->refs), 1);
	assert_true(ctslot_holds(outer.slot, 0, &owner));
	assert_true(owner == me);
	assert_false(ctslot_holds(outer.slot, 1, &owner));
	/* A "signal handler" putting on the same thread nests. */
	stack(s, 8, 3);
	id = ct_writer_put(&v, me, s, 8, 5);
	assert_int_equal(id >> 32, 7);
	assert_int_equal(atomic_load(&outer.slot->refs), 1);
	assert_true(atomic_load(&outer.slot->owner) == me);
	assert_int_equal(ctslot_enter(v.hdr, v.slots, me, &inner), CTSLOT_OK);
	assert_true(inner.nested);
	assert_ptr_equal(inner.slot, outer.slot);
	ctslot_leave(&inner);
	/* ACTIVE moves while the outer put is inside: a nested put must not
	 * follow the slot's stale word into a table being retired. */
	atomic_store(&v.hdr->active, CT_ROLE(1, 1));
	assert_int_equal(ct_writer_put(&v, me, s, 8, 9), CT_DROPPED_TRACE_ID);
	assert_int_equal(atomic_load(&v.hdr->drop_raced), 1);
	assert_int_equal(atomic_load(&v.hdr->dropped_weight), 9);
	ctslot_leave(&outer);
	assert_int_equal(atomic_load(&outer.slot->refs), 0);
	assert_true(atomic_load(&outer.slot->owner) == 0);
	/* A fresh put goes to the new ACTIVE. */
	v.hdr->table[1].epoch = 8;
	id = ct_writer_put(&v, me, s, 8, 1);
	assert_int_equal(id >> 32, 8);
	assert_int_equal(atomic_load(&v.t[1].b[(uint32_t)id].hits), 1);
	/* A word naming no table: refused. */
	atomic_store(&v.hdr->active, CT_ROLE(2, 9));
	assert_int_equal(ctslot_enter(v.hdr, v.slots, me, &outer), CTSLOT_BAD);
	assert_true(atomic_load(&outer.slot->owner) == 0);
	free(mem);
}

/* A signal lands between an outer put's claim/word store and its count. */
static void test_nested_before_count(void **state)
{
	struct ct_view v;
	void *mem = image_make(64, 1024, &v);
	const uint64_t me = (4ull << 32) | 12;
	const uint64_t outer_word = CT_ROLE(0, 0);
	struct ctslot_ticket outer;
	uint64_t s[6], id;
	bool nested;

	(void)state;
	outer.slot = ctslot_claim(v.slots, me, &nested);
	assert_non_null(outer.slot);
	assert_false(nested);
	atomic_store(&outer.slot->word, outer_word); /* (c) done, (d) not */
	atomic_store(&v.hdr->active, CT_ROLE(3, 1)); /* moved meanwhile */
	v.hdr->table[1].epoch = 9;
	stack(s, 6, 4);
	id = ct_writer_put(&v, me, s, 6, 2); /* the "handler" */
	assert_int_equal(id >> 32, 9);
	/* The handler left the slot to its owner as it found it. */
	assert_true(atomic_load(&outer.slot->owner) == me);
	assert_int_equal(atomic_load(&outer.slot->refs), 0);
	assert_true(atomic_load(&outer.slot->word) == outer_word);
	ctslot_release(outer.slot);
	free(mem);
}

static void test_slot_exhaustion(void **state)
{
	struct ct_view v;
	void *mem = image_make(64, 1024, &v);
	const uint64_t me = (2ull << 32) | 5;
	uint64_t s[4];

	(void)state;
	/* Every slot taken by someone else: dropped, counted. */
	for (uint32_t i = 0; i < CT_SLOTS; i++)
		atomic_store(&v.slots[i].owner, (9ull << 32) | (i + 1000));
	stack(s, 4, 1);
	assert_int_equal(ct_writer_put(&v, me, s, 4, 3), CT_DROPPED_TRACE_ID);
	assert_int_equal(atomic_load(&v.hdr->drop_no_slot), 1);
	assert_int_equal(atomic_load(&v.hdr->dropped), 1);
	assert_int_equal(atomic_load(&v.hdr->dropped_weight), 3);
	free(mem);
}

static void test_writer_exact_drop_accounting(void **state)
{
	struct ct_view v;
	void *mem = image_make(4, 1024, &v);
	const uint64_t me = (3ull << 32) | 8;
	uint64_t s[16], put = 0, dropped = 0, stored = 0, ids[4];

	(void)state;
	for (uint64_t k = 0; k < 10; k++) {
		uint64_t id;

		stack(s, 16, k % 6);
		id = ct_writer_put(&v, me, s, 16, k + 1);
		put += k + 1;
		if (id == CT_DROPPED_TRACE_ID)
			dropped += k + 1;
		else if (k < 4)
			ids[k] = id;
		else
			assert_true(id == ids[k % 6]); /* stable */
	}
	for (uint32_t b = 0; b < v.g.buckets; b++)
		stored += atomic_load(&v.t[0].b[b].weight);
	/* Stacks 4 and 5 (k = 4, 5) never fit: max 4 traces. */
	assert_int_equal(dropped, 5 + 6);
	assert_int_equal(atomic_load(&v.hdr->dropped_weight), dropped);
	assert_int_equal(atomic_load(&v.hdr->dropped), 2);
	assert_int_equal(atomic_load(&v.hdr->drop_full), 2);
	assert_int_equal(stored + dropped, put);
	/* Frames too long are truncated, not refused. */
	{
		uint64_t big[CT_MAX_FRAMES + 10];

		memset(big, 0, sizeof(big));
		stack(big, CT_MAX_FRAMES, 0);
		assert_true(ct_writer_put(&v, me, big, CT_MAX_FRAMES + 10, 1) ==
			    ct_writer_put(&v, me, big, CT_MAX_FRAMES, 1));
	}
	free(mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe_visits_every_position),
		cmocka_unit_test(test_hash_and_key),
		cmocka_unit_test(test_collision_compares_frames),
		cmocka_unit_test(test_full_table_and_pool),
		cmocka_unit_test(test_hostile_key_is_bounded),
		cmocka_unit_test(test_view_validation),
		cmocka_unit_test(test_slots_nest_and_recheck),
		cmocka_unit_test(test_nested_before_count),
		cmocka_unit_test(test_slot_exhaustion),
		cmocka_unit_test(test_writer_exact_drop_accounting),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
