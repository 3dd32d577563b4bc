/*
 * fuzz-traceset: the CallTrace collector against tables made of arbitrary
 * bytes -- what a hostile or broken target can leave in the region.
 *
 * The input is read as the image of two small tables (FUZZ_BUCKETS buckets,
 * FUZZ_POOL pool frames): per bucket a key seed and a weight, then the pool.
 * Most key seeds are turned into plausible keys (a frame count, an offset
 * that is sometimes past the pool), some are used raw, some mean empty, so
 * random inputs reach the interesting paths and not only "corrupt".  Both
 * tables are collected into one set (as a rotation does with STANDBY and
 * the old ACTIVE, sharing some preserved ids), then sealed.  The collector
 * must not crash or read outside the image, and:
 *   - afterwards both tables are all zero (taking empties them);
 *   - every entry has at most CT_MAX_FRAMES frames, inside the set's arena;
 *   - sealing folds duplicates without losing or inventing weight;
 *   - after the seal every id is found, and found once.
 *
 * Built as a libFuzzer target with clang (-Dfuzz=true) and, always, with
 * tests/fuzz/driver.c, which replays a seeded pseudo-random corpus.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wire/cttable.h"
#include "engine/calltrace/traceset.h"

#define FUZZ_BUCKETS 32u
#define FUZZ_POOL 256u

struct fuzz_table {
	struct ct_bucket b[FUZZ_BUCKETS];
	uint64_t pool[FUZZ_POOL];
	struct traceset_kept kept[4];
	size_t nkept;
};

static uint64_t fuzz_u64(const uint8_t *data, size_t size, size_t *pos)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | (*pos < size ? data[(*pos)++] : 0);
	return v;
}

static void fuzz_table(struct fuzz_table *t, const uint8_t *data, size_t size,
		       size_t *pos, uint64_t shared_id)
{
	memset(t, 0, sizeof(*t));
	for (uint32_t i = 0; i < FUZZ_BUCKETS; i++) {
		uint64_t seed = fuzz_u64(data, size, pos), key;

		switch (seed & 7) {
		case 0:
			key = 0;
			break;
		case 1:
			key = seed; /* raw: any count, any offset */
			break;
		default:
			key = ct_key(seed, (unsigned)(seed >> 8) % 24,
				     (uint32_t)(seed >> 16) % (FUZZ_POOL + 24));
			break;
		}
		atomic_store_explicit(&t->b[i].key, key, memory_order_relaxed);
		atomic_store_explicit(&t->b[i].weight,
				      fuzz_u64(data, size, pos) & 0xffffffff,
				      memory_order_relaxed);
		atomic_store_explicit(&t->b[i].hits, 1, memory_order_relaxed);
		/* The engine's own list of preserved buckets: sorted, and
		 * sharing an id between the two tables. */
		if ((seed >> 60) == 0xf && t->nkept < 4) {
			t->kept[t->nkept].index = i;
			t->kept[t->nkept].id =
				t->nkept == 0 ? shared_id : seed | 1;
			t->nkept++;
		}
	}
	for (uint32_t i = 0; i < FUZZ_POOL; i++)
		t->pool[i] = fuzz_u64(data, size, pos);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fuzz_table a, b;
	struct traceset s;
	size_t pos = 0;
	uint64_t before = 0, after = 0;

	fuzz_table(&a, data, size, &pos, 77ull << 32);
	fuzz_table(&b, data, size, &pos, 77ull << 32);
	traceset_init(&s, 2 * FUZZ_BUCKETS, 2 * FUZZ_POOL);
	traceset_take(&s, a.b, FUZZ_BUCKETS, a.pool, FUZZ_POOL, 5, a.kept,
		      a.nkept);
	/* Same epoch on purpose: a lying region can make ids collide. */
	traceset_take(&s, b.b, FUZZ_BUCKETS, b.pool, FUZZ_POOL,
		      size % 2 ? 5 : 6, b.kept, b.nkept);
	if (s.n + s.corrupt + s.overflow > 2 * FUZZ_BUCKETS)
		abort();
	for (uint32_t i = 0; i < FUZZ_BUCKETS; i++)
		if (atomic_load(&a.b[i].key) || atomic_load(&b.b[i].weight) ||
		    a.b[i].id || atomic_load(&b.b[i].hits))
			abort();
	for (size_t i = 0; i < s.n; i++)
		before += s.e[i].weight;
	traceset_seal(&s);
	for (size_t i = 0; i < s.n; i++) {
		const struct traceset_entry *e = &s.e[i];

		after += e->weight;
		if (e->nframes > CT_MAX_FRAMES ||
		    e->frames_off + e->nframes > s.nframes ||
		    (s.frames && e->frames != s.frames + e->frames_off))
			abort();
		if (traceset_find(&s, e->id) != e)
			abort();
	}
	if (before != after || traceset_weight(&s) != after)
		abort();
	traceset_finish(&s);
	return 0;
}
