/*
 * namepool: coroutine names behind 32-bit ids (src/engine/model/namepool.c),
 * and how the model and a snapshot use them:
 *   - a name from untrusted bytes is cut at 47 bytes and shows printable
 *     ASCII only; no name and no pc is id 0;
 *   - equal (name, pc) pairs share one id and count references; the last
 *     drop frees the entry and its id never reads a name again, not even
 *     the same name interned anew;
 *   - a full pool refuses new names (counted) until one is dropped;
 *   - a reader thread and an interning thread meet only on the pool's lock
 *     (the concurrency suite runs this under TSan);
 *   - the model names a record from its station's header, keeps the name
 *     when a name_pc comes, and lets the reference go when the record is
 *     reclaimed; snapshot_name prefers the probe's name, else the function
 *     of name_pc (hex while it has no symbol), else "".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>

#include "engine/model/model.h"
#include "engine/model/namepool.h"
#include "engine/model/snapshot.h"

static void test_clean(void **state)
{
	char out[NAMEPOOL_TEXT_MAX], raw[64];

	(void)state;
	assert_int_equal(namepool_clean(out, "a\tb\x7f\xc3\xa9", 6), 6);
	assert_string_equal(out, "a?b???");
	/* len bounds the read; a NUL ends it sooner. */
	assert_int_equal(namepool_clean(out, "abcdef", 3), 3);
	assert_string_equal(out, "abc");
	assert_int_equal(namepool_clean(out, "ab\0cd", 5), 2);
	memset(raw, 'x', sizeof(raw));
	assert_int_equal(namepool_clean(out, raw, sizeof(raw)),
			 NAMEPOOL_TEXT_MAX - 1);
	assert_int_equal(namepool_clean(out, NULL, 5), 0);
	assert_string_equal(out, "");
}

static void test_intern_share_drop(void **state)
{
	struct namepool *p = namepool_create(0);
	struct namepool_stats st;
	uint32_t a, b, c, d, e;
	char buf[NAMEPOOL_TEXT_MAX];
	uint64_t pc;

	(void)state;
	assert_non_null(p);
	assert_int_equal(namepool_intern(p, "", 0), 0);
	assert_int_equal(namepool_intern(p, NULL, 0), 0);
	a = namepool_intern(p, "worker", 0);
	b = namepool_intern(p, "worker", 0);
	c = namepool_intern(p, "worker", 0x401000);
	d = namepool_intern(p, NULL, 0x401000);
	assert_true(a && a == b);
	assert_true(c && c != a && d && d != c);
	assert_true(namepool_get(p, c, buf, sizeof(buf), &pc));
	assert_string_equal(buf, "worker");
	assert_true(pc == 0x401000);
	assert_true(namepool_get(p, d, buf, sizeof(buf), &pc));
	assert_string_equal(buf, "");
	assert_true(pc == 0x401000);
	/* A short buffer gets a cut copy. */
	assert_true(namepool_get(p, a, buf, 4, NULL));
	assert_string_equal(buf, "wor");
	namepool_stats(p, &st);
	assert_int_equal(st.names, 3);
	/* Two references to a: the first drop keeps it. */
	namepool_drop(p, a);
	assert_true(namepool_get(p, b, buf, sizeof(buf), NULL));
	namepool_drop(p, b);
	assert_false(namepool_get(p, a, buf, sizeof(buf), &pc));
	assert_string_equal(buf, "");
	assert_true(pc == 0);
	/* Interned anew (in the same entry): another id; the old stays
	 * stale, and dropping it again does nothing. */
	e = namepool_intern(p, "worker", 0);
	assert_true(e && e != a);
	assert_false(namepool_get(p, a, buf, sizeof(buf), NULL));
	namepool_drop(p, a);
	assert_true(namepool_get(p, e, buf, sizeof(buf), NULL));
	namepool_hold(p, e);
	namepool_drop(p, e);
	assert_true(namepool_get(p, e, buf, sizeof(buf), NULL));
	/* Lying ids: never valid. */
	assert_false(namepool_get(p, 0xffffffffu, buf, sizeof(buf), NULL));
	assert_false(namepool_get(p, 12345, buf, sizeof(buf), NULL));
	namepool_drop(p, 0xffffffffu);
	namepool_destroy(p);
	namepool_destroy(NULL);
	assert_false(namepool_get(NULL, 1, buf, sizeof(buf), NULL));
	assert_int_equal(namepool_intern(NULL, "x", 0), 0);
}

static void test_full(void **state)
{
	struct namepool *p = namepool_create(2);
	struct namepool_stats st;
	uint32_t a, b;

	(void)state;
	a = namepool_intern(p, "a", 0);
	b = namepool_intern(p, "b", 0);
	assert_true(a && b);
	assert_int_equal(namepool_intern(p, "c", 0), 0);
	assert_int_equal(namepool_intern(p, "a", 0), a); /* shared: fine */
	namepool_stats(p, &st);
	assert_int_equal(st.full, 1);
	assert_int_equal(st.max, 2);
	namepool_drop(p, b);
	assert_true(namepool_intern(p, "c", 0) != 0);
	namepool_destroy(p);
}

/* Many names, many drops: the chains and the free list hold up. */
static void test_many(void **state)
{
	struct namepool *p = namepool_create(0);
	static uint32_t id[5000];
	char name[32], buf[NAMEPOOL_TEXT_MAX];
	struct namepool_stats st;

	(void)state;
	for (unsigned i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "conn-%u", i);
		id[i] = namepool_intern(p, name, i % 7);
		assert_true(id[i] != 0);
	}
	for (unsigned i = 0; i < 5000; i += 2)
		namepool_drop(p, id[i]);
	for (unsigned i = 1; i < 5000; i += 2) {
		uint64_t pc;

		snprintf(name, sizeof(name), "conn-%u", i);
		assert_true(namepool_get(p, id[i], buf, sizeof(buf), &pc));
		assert_string_equal(buf, name);
		assert_true(pc == i % 7);
		assert_int_equal(namepool_intern(p, name, i % 7), id[i]);
	}
	namepool_stats(p, &st);
	assert_int_equal(st.names, 2500);
	namepool_destroy(p);
}

struct race {
	struct namepool *p;
	uint32_t id;
	int stop;
	unsigned bad; /* reads of another text (the reader's own count) */
};

static void *race_reader(void *arg)
{
	struct race *r = arg;
	char buf[NAMEPOOL_TEXT_MAX];

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		uint32_t id = __atomic_load_n(&r->id, __ATOMIC_RELAXED);

		/* cmocka's asserts are for the main thread: count. */
		if (namepool_get(r->p, id, buf, sizeof(buf), NULL) &&
		    strncmp(buf, "name-", 5))
			r->bad++;
	}
	return NULL;
}

static void test_reader_thread(void **state)
{
	struct race r = {.p = namepool_create(64)};
	char name[32];
	pthread_t th;

	(void)state;
	assert_int_equal(pthread_create(&th, NULL, race_reader, &r), 0);
	for (unsigned i = 0; i < 20000; i++) {
		uint32_t old = __atomic_load_n(&r.id, __ATOMIC_RELAXED);

		snprintf(name, sizeof(name), "name-%u", i % 100);
		__atomic_store_n(&r.id, namepool_intern(r.p, name, 0),
				 __ATOMIC_RELAXED);
		namepool_drop(r.p, old);
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	assert_int_equal(r.bad, 0);
	namepool_destroy(r.p);
}

static void test_model_names(void **state)
{
	struct model m;
	struct namepool_stats st;
	struct snapshot s;
	struct model_coro copy;
	char buf[64];
	uint32_t r;

	(void)state;
	assert_true(model_init(&m, 4, 100));
	model_open(&m, 0, 0xA, 10);
	model_occupant(&m, 0, "acceptor", 0x5000);
	model_open(&m, 1, 0xB, 10);
	model_occupant(&m, 1, "", 0);
	model_open(&m, 2, 0xC, 10);
	model_occupant(&m, 2, NULL, 0);
	model_name_pc(&m, 2, 0x401000);
	r = m.by_station[0];
	assert_true(m.coro[r].name != 0);
	assert_true(model_coro_at(&m, r) == 0x5000);
	assert_int_equal(m.coro[m.by_station[1]].name, 0);

	snapshot_init(&s);
	s.coro_names = m.names;
	copy = m.coro[r];
	assert_string_equal(snapshot_name(&s, &copy, buf, sizeof(buf)),
			    "acceptor");
	/* A name_pc later: the probe's name still wins. */
	model_name_pc(&m, 0, 0x402000);
	copy = m.coro[r];
	assert_string_equal(snapshot_name(&s, &copy, buf, sizeof(buf)),
			    "acceptor");
	/* No probe name: the pc's function, hex without a name cache. */
	copy = m.coro[m.by_station[2]];
	assert_string_equal(snapshot_name(&s, &copy, buf, sizeof(buf)),
			    "0x401000");
	copy = m.coro[m.by_station[1]];
	assert_string_equal(snapshot_name(&s, &copy, buf, sizeof(buf)), "");
	/* The function its entry was made for rides with the pc: another
	 * id, the same pc; model_name_pc (a walk's) drops it. */
	{
		uint32_t was = m.coro[m.by_station[2]].name;

		model_name_made(&m, 2, 0x401000, 0x403000);
		assert_int_not_equal(m.coro[m.by_station[2]].name, was);
		assert_true(namepool_made_for(m.names,
					      m.coro[m.by_station[2]].name) ==
			    0x403000);
		assert_true(namepool_made_for(m.names, was) == 0);
		model_name_pc(&m, 2, 0x401000);
		assert_true(namepool_made_for(m.names,
					      m.coro[m.by_station[2]].name) ==
			    0);
		/* Without a pc, none is kept. */
		assert_int_equal(namepool_intern_made(m.names, "", 0, 0x5), 0);
	}

	/* Dead and reclaimed: every reference goes. */
	for (uint32_t k = 0; k < 3; k++)
		model_close(&m, k, 20, true);
	model_tick(&m, 1000);
	namepool_stats(m.names, &st);
	assert_int_equal(st.names, 0);
	model_finish(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_intern_share_drop),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_reader_thread),
		cmocka_unit_test(test_model_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
