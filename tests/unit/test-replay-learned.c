/*
 * test-replay-learned: what a recording says corotop learned after a
 * coroutine's birth, read back at each moment as the live view showed it
 * (replay.c, replay_moment.c, hephcoronames.c; docs/WIRE.md):
 *   - corotop_named: a name from its entry pc (named through the
 *     recording's corotop_symbol, as the live view names it) or a text,
 *     from its time on -- not before;
 *   - corotop_kind: a dispatcher at its birth; one found later by a walk;
 *   - a park's `where`, from `where_at` on, marked `where_learned`, and a
 *     learned frame a walk replaced (`where_before`, `where_before_at`);
 *   - a walked `stack` from `stack_at` on;
 *   - the last moment the program ran (`ran`): before the deaths that come
 *     after its last transition, not at the end where all are dead.
 *   - a stack named by id (`stack_id`), its frames in a `corotop_stack`
 *     option written after the interval (the engine collected them late).
 * A converter's name for the whole recording (heph_coronames_best) is the
 * birth's, else the one found later.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "engine/model/namepool.h"
#include "engine/heph/heph.h"
#include "engine/heph/hephcoronames.h"
#include "engine/heph/hephnames.h"
#include "engine/replay/replay.h"

#define MS 1000000ull
#define PC_ENTRY 0x5000ull
#define WHERE_A 0x6001ull /* a return address: named at 0x6000 */
#define WHERE_B 0x7001ull

static uint8_t buf[1 << 14];

/* An option of n big-endian u64s, then text (may be NULL). */
static void opt(struct heph_enc *e, const char *name, const uint64_t *v, int n,
		const char *text)
{
	uint8_t val[64];
	size_t len = text ? strlen(text) : 0;

	for (int k = 0; k < n; k++)
		for (int i = 0; i < 8; i++)
			val[8 * k + i] = (uint8_t)(v[k] >> (56 - 8 * i));
	if (len)
		memcpy(val + 8 * n, text, len);
	assert_true(heph_enc_meta(e, name, val, (uint32_t)(8 * n + len)));
}

static void symbol(struct heph_enc *e, uint64_t addr, const char *name)
{
	uint8_t val[HEPH_NAME_LEN + 8];
	size_t n = heph_names_value(addr, name, val, sizeof(val));

	assert_true(heph_enc_meta(e, "corotop_symbol", val, (uint32_t)n));
}

/* A suspended interval with what a walk or the learned table said. */
static void park(struct heph_enc *e, uint64_t sub, uint64_t start, uint64_t end,
		 uint64_t where, uint64_t where_at, bool learned,
		 uint64_t before, uint64_t before_at)
{
	static const uint64_t stack[] = {0x9000, WHERE_A, PC_ENTRY};

	assert_true(
		heph_enc_event_begin(e, 1, 0, sub, start, end, "suspended"));
	assert_true(heph_enc_u64(e, "addr", 0x9000));
	assert_true(heph_enc_u64(e, "seq", 2));
	if (where) {
		assert_true(heph_enc_u64(e, "where", where));
		assert_true(heph_enc_u64(e, "where_at", where_at));
	}
	if (learned)
		assert_true(heph_enc_u64(e, "where_learned", 1));
	if (before) {
		assert_true(heph_enc_u64(e, "where_before", before));
		assert_true(heph_enc_u64(e, "where_before_at", before_at));
		assert_true(heph_enc_u64_array(e, "stack", stack, 3));
		assert_true(heph_enc_u64(e, "stack_at", where_at));
		/* The stack the learned WHERE was found at, by id. */
		assert_true(heph_enc_u64(e, "stack_before_id", 88));
	}
	assert_true(heph_enc_event_end(e) > 0);
}

static void run(struct heph_enc *e, uint64_t sub, uint64_t start, uint64_t end)
{
	assert_true(heph_enc_event_begin(e, 1, 0, sub, start, end, "running"));
	assert_true(heph_enc_u64(e, "addr", 0x9100));
	assert_true(heph_enc_u64(e, "seq", 1));
	assert_true(heph_enc_event_end(e) > 0);
}

/*
 * Fiber F (probe 1, id 11), born 10 ms: runs [10,20], parks [20,60]
 * (learned WHERE_A at 21 ms, walked WHERE_B at 40 ms, its stack then),
 * runs [60,70], parks [70,100] (walked WHERE_A at 75 ms); named from its
 * entry at 30 ms, by a walk's text at 90 ms; killed at 100 ms.
 * Dispatcher D (probe 2, id 12), born 10 ms a dispatcher: parks [10,101].
 * Fiber G (probe 3, id 13), born 10 ms: runs [10,50], parks [50,102],
 * named "worker" (a text) at 55 ms, found a dispatcher at 80 ms.
 * Recording stopped at 150 ms.
 */
static size_t build(void)
{
	struct heph_enc e;
	uint64_t end = 150 * MS;

	heph_enc_init(&e, buf, sizeof(buf));
	assert_true(heph_enc_epoch(&e, 1));
	assert_true(heph_enc_meta(&e, "corotop", "1", 1));
	opt(&e, "corotop_birth", (uint64_t[]){1, 10 * MS, 11}, 3, NULL);
	opt(&e, "corotop_birth", (uint64_t[]){2, 10 * MS, 12}, 3, NULL);
	opt(&e, "corotop_kind", (uint64_t[]){12, 10 * MS, 1}, 3, NULL);
	opt(&e, "corotop_birth", (uint64_t[]){3, 10 * MS, 13}, 3, NULL);
	symbol(&e, PC_ENTRY, "fiber_main(int)+0x0 (f.cpp:3)");
	symbol(&e, WHERE_A - 1, "wait_reply+0x10 (f.cpp:20)");
	symbol(&e, WHERE_B - 1, "send_request+0x20 (f.cpp:30)");
	opt(&e, "corotop_named", (uint64_t[]){11, 30 * MS, PC_ENTRY}, 3, NULL);
	run(&e, 1, 10 * MS, 20 * MS);
	run(&e, 3, 10 * MS, 50 * MS);
	opt(&e, "corotop_named", (uint64_t[]){13, 55 * MS, 0}, 3, "worker");
	park(&e, 1, 20 * MS, 60 * MS, WHERE_B, 40 * MS, false, WHERE_A,
	     21 * MS);
	run(&e, 1, 60 * MS, 70 * MS);
	opt(&e, "corotop_kind", (uint64_t[]){13, 80 * MS, 1}, 3, NULL);
	opt(&e, "corotop_named", (uint64_t[]){11, 90 * MS, 0}, 3, "walked");
	park(&e, 1, 70 * MS, 100 * MS, WHERE_A, 75 * MS, false, 0, 0);
	/* D's stack by id, its frames after it (and a second, ignored). */
	assert_true(heph_enc_event_begin(&e, 1, 0, 2, 10 * MS, 101 * MS,
					 "suspended"));
	assert_true(heph_enc_u64(&e, "addr", 0x9000));
	assert_true(heph_enc_u64(&e, "stack_id", 77));
	assert_true(heph_enc_event_end(&e) > 0);
	opt(&e, "corotop_stack", (uint64_t[]){77, 0xa1, 0xa2}, 3, NULL);
	opt(&e, "corotop_stack", (uint64_t[]){88, 0xb1}, 2, NULL);
	opt(&e, "corotop_stack", (uint64_t[]){77, 0xbad}, 2, NULL);
	park(&e, 3, 50 * MS, 102 * MS, 0, 0, false, 0, 0);
	opt(&e, "corotop_end", &end, 1, NULL);
	assert_false(e.overflow);
	return e.len;
}

struct fixture {
	struct replay r;
	struct snapshot s;
};

static const struct model_coro *at(struct fixture *f, uint64_t t, uint64_t id)
{
	replay_snapshot(&f->r, t, &f->s);
	for (size_t i = 0; i < f->s.count; i++)
		if (f->s.coro[i].id == id)
			return &f->s.coro[i];
	fail_msg("no coroutine %llu at %llu ms", (unsigned long long)id,
		 (unsigned long long)(t / MS));
	return NULL;
}

static int setup(void **state)
{
	static struct fixture f;
	char err[160];

	memset(&f, 0, sizeof(f));
	if (!replay_open_bytes(&f.r, buf, build(), 20 * MS, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(f.r.f.nproblems, 0);
	snapshot_init(&f.s);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	snapshot_finish(&f->s);
	replay_close(&f->r);
	return 0;
}

/* The name's text and pc at t (namepool: the snapshot names a pc). */
static void name_at(struct fixture *f, uint64_t t, uint64_t id, char *text,
		    uint64_t *pc)
{
	const struct model_coro *c = at(f, t, id);

	*pc = 0;
	text[0] = '\0';
	if (c->name)
		assert_true(namepool_get(f->s.coro_names, c->name, text,
					 NAMEPOOL_TEXT_MAX, pc));
}

static void test_named_from_its_time(void **state)
{
	struct fixture *f = *state;
	char text[NAMEPOOL_TEXT_MAX];
	uint64_t pc;

	name_at(f, 29 * MS, 11, text, &pc);
	assert_string_equal(text, "");
	assert_int_equal(pc, 0);
	name_at(f, 30 * MS, 11, text, &pc);
	assert_string_equal(text, "");
	assert_int_equal(pc, PC_ENTRY); /* named at its entry, as live */
	name_at(f, 89 * MS, 11, text, &pc);
	assert_int_equal(pc, PC_ENTRY);
	name_at(f, 90 * MS, 11, text, &pc);
	assert_string_equal(text, "walked"); /* each name from its time */
	name_at(f, 54 * MS, 13, text, &pc);
	assert_string_equal(text, "");
	name_at(f, 55 * MS, 13, text, &pc);
	assert_string_equal(text, "worker");
}

static void test_kinds(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(at(f, 10 * MS, 12)->kind, MODEL_DISPATCHER);
	assert_int_equal(at(f, 79 * MS, 13)->kind, MODEL_COROUTINE);
	assert_int_equal(at(f, 80 * MS, 13)->kind, MODEL_DISPATCHER);
	assert_int_equal(at(f, 50 * MS, 11)->kind, MODEL_COROUTINE);
}

static void test_where_as_live(void **state)
{
	struct fixture *f = *state;
	const struct model_coro *c;
	uint64_t fr[4];

	/* Parked at 20 ms: the switch until 21, learned A, walked B at 40. */
	c = at(f, 20 * MS, 11);
	assert_int_equal(c->last_addr, 0x9000);
	assert_false(c->where_learned);
	c = at(f, 30 * MS, 11);
	assert_int_equal(c->last_addr, WHERE_A);
	assert_true(c->where_learned);
	/* ... with the stack it was learned at, until the walk's. */
	assert_int_equal(replay_parked_stack(&f->r, 11, 30 * MS, fr, 4), 1);
	assert_int_equal(fr[0], 0xb1);
	assert_int_equal(replay_parked_stack(&f->r, 11, 20 * MS, fr, 4), 0);
	c = at(f, 45 * MS, 11);
	assert_int_equal(c->last_addr, WHERE_B);
	assert_false(c->where_learned);
	assert_int_equal(replay_parked_stack(&f->r, 11, 45 * MS, fr, 4), 3);
	assert_int_equal(fr[1], WHERE_A);
	/* Its next park: the switch, then the walk's at 75 ms. */
	assert_int_equal(at(f, 72 * MS, 11)->last_addr, 0x9000);
	c = at(f, 80 * MS, 11);
	assert_int_equal(c->last_addr, WHERE_A);
	assert_false(c->where_learned);
	/* Running: its transition's address. */
	assert_int_equal(at(f, 65 * MS, 11)->last_addr, 0x9100);
}

static void test_stack_by_id(void **state)
{
	struct fixture *f = *state;
	uint64_t fr[4] = {0};

	assert_int_equal(replay_parked_stack(&f->r, 12, 50 * MS, fr, 4), 2);
	assert_int_equal(fr[0], 0xa1);
	assert_int_equal(fr[1], 0xa2);
	assert_int_equal(replay_parked_stack(&f->r, 12, 50 * MS, fr, 1), 1);
	/* G's park names none. */
	assert_int_equal(replay_parked_stack(&f->r, 13, 60 * MS, fr, 4), 0);
}

static void test_ran_before_the_kill(void **state)
{
	struct fixture *f = *state;
	const struct model_coro *c;

	/* The last transition is F's park at 70 ms; the deaths of the end
	 * begin at 100 ms. */
	assert_int_equal(f->r.t1, 150 * MS);
	assert_int_equal(f->r.ran, 100 * MS - 1);
	c = at(f, f->r.ran, 11);
	assert_int_equal(c->state, MODEL_SUSPENDED);
	assert_int_equal(at(f, f->r.ran, 13)->state, MODEL_SUSPENDED);
	assert_int_equal(at(f, 105 * MS, 12)->state, MODEL_DEAD);
}

static void test_converter_names(void **state)
{
	struct fixture *f = *state;
	struct heph_coronames cn;

	heph_coronames_init(&cn, &f->r.f);
	assert_string_equal(heph_coronames_best(&cn, 11), "walked"); /* last */
	assert_string_equal(heph_coronames_best(&cn, 13), "worker");
	assert_null(heph_coronames_best(&cn, 12));
	assert_null(heph_coronames_id(&cn, 11)); /* none at its birth */
	/* By substream and time: not before it was found. */
	assert_null(heph_coronames_at(&cn, 1, 25 * MS));
	assert_string_equal(heph_coronames_at(&cn, 1, 35 * MS),
			    "fiber_main(int)");
	heph_coronames_finish(&cn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_named_from_its_time),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_where_as_live),
		cmocka_unit_test(test_stack_by_id),
		cmocka_unit_test(test_ran_before_the_kill),
		cmocka_unit_test(test_converter_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
