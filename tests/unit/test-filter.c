/*
 * filter: the table filter language (src/ui/rows/filter.c) against hand-built
 * coroutine records: substrings over the name cells, !regex, field terms by
 * column name (numbers compared as numbers), combinations, errors, clearing,
 * and filter_select's per-slot memo agreeing with filter_match while records
 * and the filter change; a live table's rows leaving out the coroutines just
 * made (no transition yet, younger than unswitched_ns) whatever the filter,
 * and showing the ones that stayed unswitched that long, or died.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "engine/model/namepool.h"
#include "engine/names/namecache.h"
#include "ui/rows/column.h"
#include "ui/rows/filter.h"

static struct snapshot snap;
static struct model_coro coro[3];

static int setup(void **state)
{
	(void)state;
	memset(&snap, 0, sizeof(snap));
	memset(coro, 0, sizeof(coro));
	snap.ts = 10000000000ull;
	coro[0] = (struct model_coro){.id = 1,
				      .probe_id = 0xabc123,
				      .state = MODEL_SUSPENDED,
				      .last_tid = 4242,
				      .last_addr = 0x401000,
				      .switches = 7,
				      .birth_ts = 1};
	coro[1] = (struct model_coro){.id = 2,
				      .probe_id = 0xdef456,
				      .state = MODEL_RUNNING,
				      .last_tid = 77,
				      .last_addr = 0x402000,
				      .switches = 3,
				      .birth_ts = 1};
	coro[2] = (struct model_coro){.id = 3,
				      .probe_id = 0x99,
				      .state = MODEL_DEAD,
				      .last_tid = 4242,
				      .last_addr = 0x403000,
				      .switches = 1,
				      .birth_ts = 1,
				      .dead_ts = 2};
	return 0;
}

/* Which of the three records the filter text keeps, as a bit mask. */
static unsigned kept(const char *text)
{
	struct filter f;
	char err[160] = "";
	unsigned mask = 0;

	filter_init(&f);
	if (!filter_set(&f, text, err, sizeof(err)))
		fail_msg("filter '%s' rejected: %s", text, err);
	for (int i = 0; i < 3; i++)
		if (filter_match(&f, &snap, &coro[i]))
			mask |= 1u << i;
	filter_finish(&f);
	return mask;
}

static void test_substring(void **state)
{
	(void)state;
	assert_int_equal(kept(""), 7);
	assert_int_equal(kept("abc1"), 1);  /* id cell, hex */
	assert_int_equal(kept("ABC1"), 1);  /* case-insensitive */
	assert_int_equal(kept("4242"), 5);  /* tid cell */
	assert_int_equal(kept("0x402"), 2); /* where cell */
	assert_int_equal(kept("nothing-like-this"), 0);
	/* Cells that move with time are not searched: AGE is "10.0s". */
	assert_int_equal(kept("10.0s"), 0);
}

static void test_regex(void **state)
{
	(void)state;
	assert_int_equal(kept("!^abc"), 1);
	assert_int_equal(kept("!(abc|def)"), 3);
	assert_int_equal(kept("!^99$"), 4);	   /* the whole id cell */
	assert_int_equal(kept("!0x40[13]000"), 5); /* the where cell */
	assert_int_equal(kept("!^77$"), 2);	   /* the whole tid cell */
	assert_int_equal(kept("!^42"), 5);	   /* anchors at each cell */
	/* Cell by cell: nothing spans two cells. */
	assert_int_equal(kept("!123 4242"), 0);
	assert_int_equal(kept("!^ABC123$"), 1); /* case-insensitive */
}

/* Text with a space is looked for in the joined name cells. */
static void test_joined(void **state)
{
	(void)state;
	assert_int_equal(kept("123 4242"), 1); /* id, then tid */
	assert_int_equal(kept("4242 0x40"), 5);
	assert_int_equal(kept("4242   0x403"), 4); /* spaces collapse */
	assert_int_equal(kept("77 0x401"), 0);
}

static void test_fields(void **state)
{
	(void)state;
	assert_int_equal(kept("state=S"), 1);
	assert_int_equal(kept("state=running"), 2);
	assert_int_equal(kept("state=d"), 4);
	assert_int_equal(kept("tid=4242"), 5);
	assert_int_equal(kept("tid=42"), 0); /* exact, not substring */
	assert_int_equal(kept("id=0xabc123"), 1);
	assert_int_equal(kept("id=ABC123"), 1);
	assert_int_equal(kept("ID=99"), 4); /* keys by title too */
	assert_int_equal(kept("tid=4242 state=D"), 4);
	assert_int_equal(kept("tid=4242 abc"), 1); /* term and substring */
	/* Integer columns compare numbers: leading zeros, 0x optional. */
	assert_int_equal(kept("where=0x402000"), 2);
	assert_int_equal(kept("where=402000"), 2);
	assert_int_equal(kept("switches=07"), 1);
	assert_int_equal(kept("switches=7x"), 0); /* not a number: as text */
	assert_int_equal(kept("id=0x0099"), 4);
	assert_int_equal(kept("lost=0"), 7);
}

/* NAME is a name cell: substring, regex and joined text reach it, and
 * name= looks for a substring of it (name== compares it whole); an unnamed
 * row's empty cell adds no blank to the joined text.  filter_select (its NAME
 * cache by name id) agrees. */
static void test_name(void **state)
{
	struct namepool *p = namepool_create(8);
	struct filter f;
	char err[160];
	uint32_t idx[3];

	(void)state;
	snap.coro_names = p;
	coro[0].name = namepool_intern(p, "Acceptor", 0);
	coro[2].name = namepool_intern(p, "conn worker", 0);
	assert_int_equal(kept("accept"), 1);
	assert_int_equal(kept("!^conn"), 4);
	assert_int_equal(kept("name=acceptor"), 1);
	assert_int_equal(kept("name=accept"), 1); /* a substring, as htop */
	assert_int_equal(kept("name=CEPT"), 1);
	assert_int_equal(kept("name=worker"), 4);
	assert_int_equal(kept("name==accept"), 0); /* the exact form */
	assert_int_equal(kept("name==ACCEPTOR"), 1);
	assert_int_equal(kept("name==conn worker"), 0); /* two terms */
	assert_int_equal(kept("4242 conn worker 0x403"), 4);
	assert_int_equal(kept("77 0x402000"), 2); /* no name: no blank */
	snap.coro = coro;
	snap.count = snap.cap = 3;
	filter_init(&f);
	assert_true(filter_set(&f, "worker", err, sizeof(err)));
	assert_int_equal(filter_select(&f, &snap, idx), 1);
	assert_int_equal(idx[0], 2);
	assert_int_equal(filter_select(&f, &snap, idx), 1); /* cached */
	filter_finish(&f);
	/* Sorted by name: unnamed first, then as text sorts. */
	assert_true(column_table[COL_NAME].key(&snap, &coro[1]) <
		    column_table[COL_NAME].key(&snap, &coro[0]));
	assert_true(column_table[COL_NAME].key(&snap, &coro[0]) <
		    column_table[COL_NAME].key(&snap, &coro[2]));
	snap.coro_names = NULL;
	snap.coro = NULL;
	snap.count = snap.cap = 0;
	namepool_destroy(p);
}

/* filter_select (memoised by record slot) keeps exactly the records
 * filter_match keeps, as the records and the filter change. */
static void test_select_memo(void **state)
{
	static const char *const texts[] = {
		"40",	   "!^abc",   "0x403",	   "state=S 42", "",
		"!^4242$", "42 0x40", "!0x40[12]", "7"};
	const size_t ntexts = sizeof(texts) / sizeof(texts[0]);
	struct filter f;
	char err[160];
	uint32_t idx[3];

	(void)state;
	snap.coro = coro;
	snap.count = snap.cap = 3;
	for (int i = 0; i < 3; i++)
		coro[i].slot = (uint32_t)i;
	filter_init(&f);
	for (int round = 0; round < 9 * 12; round++) {
		size_t n, k = 0;

		/* Each filter stays for 12 rounds of changes, so the per-value
		 * caches and the memo outlive the records' changes. */
		if (round % 12 == 0)
			assert_true(filter_set(
				&f, texts[(size_t)round / 12 % ntexts], err,
				sizeof(err)));
		/* Mutate what the name cells show, or reuse a slot. */
		if (round % 3 == 0)
			coro[round % 3].last_addr ^= 0x1000;
		if (round % 4 == 1)
			coro[1].last_tid = coro[1].last_tid == 77 ? 4242 : 77;
		if (round % 7 == 2)
			coro[2].id += 10; /* another coroutine in slot 2 */
		if (round % 5 == 3)
			coro[0].warn ^= 1;
		if (round % 6 == 4)
			coro[1].last_tid = coro[1].last_tid ? 0 : 77; /* "-" */
		if (round % 11 == 5)
			snap.names_gen++;
		n = filter_select(&f, &snap, idx);
		for (uint32_t i = 0; i < 3; i++)
			if (filter_match(&f, &snap, &coro[i])) {
				assert_true(k < n);
				assert_int_equal(idx[k++], i);
			}
		assert_int_equal(k, n);
		/* Again without a change: the memo answers the same. */
		assert_int_equal(filter_select(&f, &snap, idx), n);
	}
	/* A slot beyond the snapshot's bound is matched without the memo. */
	coro[2].slot = 1000;
	assert_true(filter_set(&f, "99", err, sizeof(err)));
	assert_int_equal(filter_select(&f, &snap, idx), 1);
	assert_int_equal(idx[0], 2);
	filter_finish(&f);
}

/* A coroutine found at a late attach has a thread but no switch yet (a
 * census): its TID shows and matches; one that never ran shows "-". */
static void test_census_tid(void **state)
{
	(void)state;
	coro[0].switches = 0; /* found at the attach, thread 4242 */
	coro[2].last_tid = 0; /* never ran */
	assert_int_equal(kept("tid=4242"), 1);
	assert_int_equal(kept("4242"), 1);
	assert_int_equal(kept("tid=0"), 0);
}

static void test_errors(void **state)
{
	struct filter f;
	char err[160] = "";

	(void)state;
	filter_init(&f);
	assert_true(filter_set(&f, "state=S", err, sizeof(err)));
	assert_false(filter_set(&f, "colour=red", err, sizeof(err)));
	assert_non_null(strstr(err, "colour"));
	/* A rejected filter leaves the previous one in place. */
	assert_true(f.active);
	assert_string_equal(f.text, "state=S");
	assert_false(filter_set(&f, "!(unclosed", err, sizeof(err)));
	assert_non_null(strstr(err, "regex"));
	assert_string_equal(f.text, "state=S");
	assert_false(filter_set(&f, "a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1 a=1", err,
				sizeof(err)));
	assert_true(filter_set(&f, "", err, sizeof(err)));
	assert_false(f.active);
	assert_true(filter_match(&f, &snap, &coro[2]));
	filter_finish(&f);
}

static void test_column_find(void **state)
{
	(void)state;
	assert_int_equal(column_find("in-state"), COL_IN_STATE);
	assert_int_equal(column_find("IN-STATE"), COL_IN_STATE);
	assert_int_equal(column_find("sw/s"), COL_SWPS);
	assert_int_equal(column_find("nope"), -1);
	/* Every column has a unique name, a title and help. */
	for (int i = 0; i < COL_COUNT; i++) {
		assert_non_null(column_table[i].help);
		assert_int_equal(column_find(column_table[i].name), i);
	}
}

/* Names that come later (the TUI's): a resolver the test holds at a gate
 * until it has filtered once, so "still in hex" is a state, not a race. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static bool gate_held;

static bool gate_resolve(void *ctx, uint64_t addr, char *full, char *brief,
			 uint32_t *gen)
{
	(void)ctx;
	addr &= ~SNAPSHOT_WHERE_TAG; /* a where's key names its address */
	pthread_mutex_lock(&gate_lock);
	while (gate_held)
		pthread_cond_wait(&gate_cond, &gate_lock);
	pthread_mutex_unlock(&gate_lock);
	snprintf(full, NAMECACHE_NAME_MAX, "named_%llx+0x1 (n.c:1)",
		 (unsigned long long)addr);
	snprintf(brief, NAMECACHE_NAME_MAX, "named_%llx+0x1",
		 (unsigned long long)addr);
	*gen = 1;
	return true;
}

/*
 * A filter result from a WHERE still in hex is not kept: once the name
 * comes, the same snapshot (names_gen unchanged: a first name forgets
 * nothing) matches on it -- cell by cell, and by the joined row.
 */
static void test_where_named_later(void **state)
{
	struct namecache_config c = {.resolve = gate_resolve,
				     .later = true,
				     .max_names = 64,
				     .max_queued = 64};
	const char *texts[] = {"named_401000", "4242 named_401000"};
	struct filter f;
	char err[160], buf[128];
	uint32_t idx[3];

	(void)state;
	snap.coro = coro;
	snap.count = snap.cap = 3;
	for (size_t t = 0; t < 2; t++) {
		struct timespec end;

		gate_held = true;
		snap.names = namecache_create(&c);
		assert_non_null(snap.names);
		filter_init(&f);
		assert_true(filter_set(&f, texts[t], err, sizeof(err)));
		assert_int_equal(filter_select(&f, &snap, idx), 0); /* hex */
		pthread_mutex_lock(&gate_lock);
		gate_held = false;
		pthread_cond_broadcast(&gate_cond);
		pthread_mutex_unlock(&gate_lock);
		clock_gettime(CLOCK_MONOTONIC, &end);
		end.tv_sec += 30;
		while (!namecache_name(snap.names, SNAPSHOT_WHERE_KEY(0x401000),
				       true, buf, sizeof(buf), NULL)) {
			struct timespec now;

			clock_gettime(CLOCK_MONOTONIC, &now);
			assert_true(now.tv_sec < end.tv_sec);
			nanosleep(&(struct timespec){0, 1000000}, NULL);
		}
		assert_int_equal(filter_select(&f, &snap, idx), 1);
		assert_int_equal(idx[0], 0);
		filter_finish(&f);
		namecache_destroy(snap.names);
		snap.names = NULL;
	}
}

/* A live table: a coroutine with no transition harvested yet (TID "-")
 * is left out while younger than unswitched_ns, counted in held; older
 * (it never ran), dead, or switched, it is a row; 0 shows every one. */
static void test_just_made(void **state)
{
	struct model_coro c[6];
	struct snapshot s = snap;
	struct filter f;
	uint32_t idx[6];
	char err[160];
	size_t n;

	(void)state;
	memcpy(c, coro, sizeof(coro));
	/* 3: just made (1 ms old); 4: a second old, never switched; 5:
	 * just made, switched once (its first transition is known). */
	c[3] = (struct model_coro){.id = 4,
				   .probe_id = 0x1004,
				   .state = MODEL_SUSPENDED,
				   .birth_ts = s.ts - 1000000};
	c[4] = (struct model_coro){.id = 5,
				   .probe_id = 0x1005,
				   .state = MODEL_SUSPENDED,
				   .birth_ts = s.ts - FILTER_UNSWITCHED_NS};
	c[5] = (struct model_coro){.id = 6,
				   .probe_id = 0x1006,
				   .state = MODEL_RUNNING,
				   .last_tid = 9,
				   .last_addr = 0x404000,
				   .switches = 1,
				   .birth_ts = s.ts - 1000000};
	s.coro = c;
	s.count = 6;
	filter_init(&f);
	assert_int_equal(filter_select(&f, &s, idx), 6); /* JSON, replay */
	assert_int_equal(f.held, 0);
	f.unswitched_ns = FILTER_UNSWITCHED_NS;
	n = filter_select(&f, &s, idx);
	assert_int_equal(n, 5);
	assert_int_equal(f.held, 1);
	for (size_t i = 0; i < n; i++)
		assert_int_not_equal(idx[i], 3);
	/* A filter keeps the table's wait (and a filter that matches the
	 * just-made one by id still does not show it). */
	assert_true(filter_set(&f, "id=1004", err, sizeof(err)));
	assert_int_equal(f.unswitched_ns, FILTER_UNSWITCHED_NS);
	assert_int_equal(filter_select(&f, &s, idx), 0);
	assert_int_equal(f.held, 1);
	assert_true(filter_set(&f, "id=1005", err, sizeof(err)));
	assert_int_equal(filter_select(&f, &s, idx), 1);
	assert_int_equal(idx[0], 4);
	/* Dead before its first switch: shown (a fact, not a wait). */
	c[3].state = MODEL_DEAD;
	c[3].dead_ts = s.ts;
	assert_true(filter_set(&f, "", err, sizeof(err)));
	assert_int_equal(filter_select(&f, &s, idx), 6);
	assert_int_equal(f.held, 0);
	filter_finish(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_substring, setup),
		cmocka_unit_test_setup(test_regex, setup),
		cmocka_unit_test_setup(test_joined, setup),
		cmocka_unit_test_setup(test_fields, setup),
		cmocka_unit_test_setup(test_name, setup),
		cmocka_unit_test_setup(test_errors, setup),
		cmocka_unit_test_setup(test_select_memo, setup),
		cmocka_unit_test_setup(test_column_find, setup),
		cmocka_unit_test_setup(test_where_named_later, setup),
		cmocka_unit_test_setup(test_census_tid, setup),
		cmocka_unit_test_setup(test_just_made, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
