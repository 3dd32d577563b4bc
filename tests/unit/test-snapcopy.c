/*
 * snapcopy: a snapshot's records copied from the model, only the ones
 * changed since its last copy (src/engine/model/snapcopy.c).
 *
 *   same     driven by a random mix of every model call that changes a
 *            record (births, switches, census, losses, names, WHERE,
 *            deaths, reclaims with reuse, rates, rate resets) and by the
 *            copier's own fix-ups, a snapshot copied again and again
 *            always equals a whole copy of the model at that moment,
 *            record for record, in slot order, with room for every
 *            record's slot;
 *   less     a copy with nothing changed copies no record; with one
 *            switch, one; with more than half the records changed, or
 *            asked for, a whole copy copies every record;
 *   other    a snapshot that holds another model's copy, or a truncated
 *            one, gets a whole copy;
 *   seed     a snapshot given another's settled records (snapshot_seed)
 *            copies only what changed since that one's copy; one that
 *            holds no copy seeds nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/model/model.h"
#include "engine/model/snapcopy.h"

#define STATIONS 300
#define MS 1000000ull
#define LINGER (50 * MS)

/* A stand-in for the engine's fix-ups: a WHERE per record, which the test
 * changes (touching the record, as engine/stacks does). */
static uint64_t fix_where[4 * STATIONS];

static void fix(void *ctx, struct model_coro *c, uint32_t r, bool whole)
{
	(void)ctx;
	(void)whole;
	if (c->state == MODEL_SUSPENDED && r < 4 * STATIONS && fix_where[r]) {
		c->last_addr = fix_where[r];
		c->where_learned = 1;
	}
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void same_record(const struct model_coro *a, const struct model_coro *b)
{
	assert_int_equal(a->id, b->id);
	assert_int_equal(a->probe_id, b->probe_id);
	assert_int_equal(a->birth_ts, b->birth_ts);
	assert_int_equal(a->state_ts, b->state_ts);
	assert_int_equal(a->dead_ts, b->dead_ts);
	assert_int_equal(a->last_tid, b->last_tid);
	assert_int_equal(a->last_addr, b->last_addr);
	assert_int_equal(a->last_seq, b->last_seq);
	assert_int_equal(a->switches, b->switches);
	assert_int_equal(a->lost, b->lost);
	assert_int_equal(a->run_ns, b->run_ns);
	assert_int_equal(a->susp_ns, b->susp_ns);
	assert_true(a->sw_per_sec == b->sw_per_sec);
	assert_int_equal(a->pending_lost, b->pending_lost);
	assert_int_equal(a->pid, b->pid);
	assert_int_equal(a->station, b->station);
	assert_int_equal(a->slot, b->slot);
	assert_int_equal(a->name, b->name);
	assert_int_equal(a->state, b->state);
	assert_int_equal(a->in_use, b->in_use);
	assert_int_equal(a->recycled, b->recycled);
	assert_int_equal(a->long_wait, b->long_wait);
	assert_int_equal(a->inferred, b->inferred);
	assert_int_equal(a->context, b->context);
	assert_int_equal(a->where_learned, b->where_learned);
	assert_int_equal(a->kind, b->kind);
}

/* s, copied again, is what a whole copy of m is now. */
static size_t check_same(struct snapshot *s, const struct model *m)
{
	struct snapshot whole;
	size_t copied;

	snapcopy_take(s, m, false, fix, NULL);
	copied = snapcopy_settle(s);
	snapshot_init(&whole);
	snapcopy_take(&whole, m, true, fix, NULL);
	assert_int_equal(snapcopy_settle(&whole), whole.count);
	assert_int_equal(s->count, whole.count);
	/* The room bounds every record's slot (snapshot.h), as a whole
	 * copy's does. */
	assert_true(s->cap >= m->used);
	for (size_t k = 0; k < s->count; k++)
		same_record(&s->coro[k], &whole.coro[k]);
	snapshot_finish(&whole);
	return copied;
}

/* One random change of the model, at time *ts. */
static void step(struct model *m, uint64_t *ts, uint64_t *seq)
{
	uint32_t st = rnd(STATIONS), r = m->by_station[st];
	bool open = r != MODEL_NONE;
	char name[16];

	*ts += MS * (1 + rnd(5));
	switch (rnd(12)) {
	case 0:
	case 1:
		model_open(m, st, ++*seq, *ts); /* a recycle, if open */
		break;
	case 2:
	case 3:
	case 4:
		if (rnd(4) == 0)
			model_context(m, st);
		++*seq;
		model_event(m, st, *ts, 1 + rnd(4), 0x1000 + rnd(64), *seq,
			    *seq, rnd(8), rnd(2));
		break;
	case 5:
		model_census(m, st, *ts, 1 + rnd(4), 0x2000 + rnd(64), ++*seq,
			     rnd(2));
		break;
	case 6:
		if (open)
			model_close(m, st, *ts, rnd(2));
		break;
	case 7:
		model_tick(m, *ts); /* reclaims after LINGER, rates */
		break;
	case 8:
		model_lost(m, st, 1 + rnd(3));
		model_long_wait(m, st, rnd(2));
		break;
	case 9:
		snprintf(name, sizeof(name), "n%u", rnd(20));
		if (rnd(2))
			model_occupant(m, st, name, 0x7000 + rnd(9));
		else
			model_name_pc(m, st, 0x4000 + rnd(9));
		model_where(m, st, 0x3000 + rnd(64));
		break;
	case 10:
		/* A walk's learned WHERE, changed and said so. */
		if (open) {
			fix_where[r] = rnd(3) ? 0x5000 + rnd(64) : 0;
			model_touch(m, r);
		}
		break;
	default:
		if (rnd(40) == 0)
			model_reset_rates(m, *ts);
		break;
	}
}

static void test_same(void **state)
{
	struct model m;
	struct snapshot s;
	uint64_t ts = 1000, seq = 0, copied = 0, whole = 0;

	(void)state;
	memset(fix_where, 0, sizeof(fix_where));
	assert_true(model_init(&m, STATIONS, LINGER));
	snapshot_init(&s);
	for (int round = 0; round < 3000; round++) {
		int changes = (int)rnd(round % 100 == 0 ? 400 : 6);

		for (int i = 0; i < changes; i++)
			step(&m, &ts, &seq);
		copied += check_same(&s, &m);
		whole += s.count;
	}
	/* The rounds did change records, in every way, and the copies took
	 * far fewer than whole copies would have. */
	assert_true(m.t.coroutines_seen > 1000);
	assert_true(copied > 0);
	assert_true(copied < whole / 4);
	snapshot_finish(&s);
	model_finish(&m);
}

static void test_less(void **state)
{
	struct model m;
	struct snapshot s;
	uint64_t ts = 1000;

	(void)state;
	memset(fix_where, 0, sizeof(fix_where));
	assert_true(model_init(&m, STATIONS, LINGER));
	snapshot_init(&s);
	for (uint32_t st = 0; st < 200; st++)
		model_open(&m, st, st + 1, ts);
	assert_int_equal(check_same(&s, &m), 200); /* the first: whole */
	assert_int_equal(check_same(&s, &m), 0);
	model_event(&m, 17, ++ts, 1, 0x1000, 1, 1, 0, true);
	assert_int_equal(check_same(&s, &m), 1);
	/* A tick that changes no rate changes nothing; a death and, past
	 * the linger, its reclaim, one record each. */
	model_tick(&m, ++ts);
	assert_int_equal(check_same(&s, &m), 0);
	model_close(&m, 40, ++ts, false);
	assert_int_equal(check_same(&s, &m), 1);
	ts += 10 * LINGER;
	model_tick(&m, ts);
	assert_int_equal(check_same(&s, &m), 1);
	assert_int_equal(s.count, 199);
	/* Rates: record 17's rises with a switch and falls back to 0; the
	 * others' stay 0 and are not copied. */
	model_event(&m, 17, ++ts, 1, 0x1000, 2, 2, 1, false);
	ts += 100 * MS;
	model_tick(&m, ts);
	assert_int_equal(check_same(&s, &m), 1);
	assert_true(s.coro[17].sw_per_sec > 0);
	ts += 100 * MS;
	model_tick(&m, ts);
	assert_int_equal(check_same(&s, &m), 1);
	assert_true(s.coro[17].sw_per_sec == 0);
	/* The reclaimed slot reused: the merge puts it back in order. */
	model_open(&m, 250, 999, ++ts);
	assert_int_equal(check_same(&s, &m), 1);
	assert_int_equal(s.count, 200);
	assert_int_equal(s.coro[40].station, 250);
	/* Half the records changed: still the list; more: whole. */
	for (uint32_t st = 100; st < 200; st++)
		model_event(&m, st, ++ts, 1, 0x1000, 3, 3, 2, true);
	assert_int_equal(check_same(&s, &m), 100);
	for (uint32_t st = 0; st < 102; st++) /* station 40 has none */
		model_event(&m, st, ++ts, 1, 0x1000, 4, 4, 3, false);
	assert_int_equal(check_same(&s, &m), 200);
	assert_int_equal(check_same(&s, &m), 0);
	/* Asked for whole: every record. */
	snapcopy_take(&s, &m, true, fix, NULL);
	assert_int_equal(snapcopy_settle(&s), 200);
	snapshot_finish(&s);
	model_finish(&m);
}

static void test_other(void **state)
{
	struct model a, b;
	struct snapshot s;

	(void)state;
	memset(fix_where, 0, sizeof(fix_where));
	assert_true(model_init(&a, STATIONS, LINGER));
	assert_true(model_init(&b, STATIONS, LINGER));
	assert_true(a.uid != b.uid);
	snapshot_init(&s);
	for (uint32_t st = 0; st < 100; st++)
		model_open(&a, st, st + 1, 10);
	for (uint32_t st = 0; st < 30; st++)
		model_open(&b, st + 5, st + 1, 20);
	assert_int_equal(check_same(&s, &a), 100);
	/* Another model's copy, though b's gen is lower: whole. */
	assert_int_equal(check_same(&s, &b), 30);
	assert_int_equal(check_same(&s, &b), 0);
	/* A copy some other writer (a replay) made: not built on. */
	s.copy_of = 0;
	assert_int_equal(check_same(&s, &b), 30);
	snapshot_finish(&s);
	model_finish(&a);
	model_finish(&b);
}

static void test_seed(void **state)
{
	struct model m;
	struct snapshot a, b, none;
	uint64_t ts = 10;

	(void)state;
	memset(fix_where, 0, sizeof(fix_where));
	assert_true(model_init(&m, STATIONS, LINGER));
	snapshot_init(&a);
	snapshot_init(&b);
	snapshot_init(&none);
	for (uint32_t st = 0; st < 150; st++)
		model_open(&m, st, st + 1, ts);
	assert_int_equal(check_same(&a, &m), 150);
	model_event(&m, 3, ++ts, 1, 0x1000, 1, 1, 0, true);
	model_close(&m, 9, ++ts, false);
	/* b starts from a's records: its first copy takes the two changed
	 * since a's, and is then a whole copy's equal. */
	assert_true(snapshot_seed(&b, &a));
	assert_int_equal(check_same(&b, &m), 2);
	/* From a snapshot that holds no copy: nothing to build on, b as it
	 * was. */
	assert_false(snapshot_seed(&b, &none));
	assert_int_equal(b.count, 150);
	assert_int_equal(check_same(&b, &m), 0);
	snapshot_finish(&a);
	snapshot_finish(&b);
	snapshot_finish(&none);
	model_finish(&m);
}

/* A seeded copy has room for every record's slot, the reclaimed ones'
 * included (its count is below the model's records handed out). */
static void test_seed_room(void **state)
{
	struct model m;
	struct snapshot a, b;
	uint64_t ts = 10;

	(void)state;
	memset(fix_where, 0, sizeof(fix_where));
	assert_true(model_init(&m, STATIONS, LINGER));
	snapshot_init(&a);
	snapshot_init(&b);
	for (uint32_t st = 0; st < 150; st++)
		model_open(&m, st, st + 1, ts);
	model_close(&m, 149, ++ts, false);
	model_tick(&m, ts + 10 * LINGER); /* reclaimed: 149 live of 150 */
	assert_int_equal(check_same(&a, &m), 149);
	assert_true(snapshot_seed(&b, &a));
	assert_int_equal(check_same(&b, &m), 0);
	snapshot_finish(&a);
	snapshot_finish(&b);
	model_finish(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same),	  cmocka_unit_test(test_less),
		cmocka_unit_test(test_other),	  cmocka_unit_test(test_seed),
		cmocka_unit_test(test_seed_room),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
