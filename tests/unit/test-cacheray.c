/*
 * cacheray: the Cacheray trace reader and its memory report
 * (src/engine/cacheray.c, rtta.c, linetab.c, src/ui/batch_cacheray.c).
 *
 * Traces are written here field by field in native byte order, as the
 * Cacheray runtime does.  The main synthetic trace has two threads writing
 * two elements of one array on one cache line, types added, removed and
 * reallocated, atomic and unaligned accesses; the tests check the exact
 * per-type, per-member, per-thread and per-line counts, that the shared
 * lines are flagged with their threads, that every way of cutting the
 * trace into chunks gives the same report, and that bad records stop the
 * reader at their exact offset.
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

#include "engine/cacheray.h"
#include "engine/rtta.h"
#include "json-check.h"
#include "ui/batch_cacheray.h"

/* ---- a trace writer ---- */

struct tw {
	uint8_t b[8192];
	size_t n;
};

static void tw_put(struct tw *w, const void *p, size_t n)
{
	assert_true(w->n + n <= sizeof(w->b));
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

static void tw_access(struct tw *w, uint8_t type, uint64_t addr, uint8_t size,
		      uint64_t tid)
{
	tw_put(w, &type, 1);
	tw_put(w, &addr, 8);
	tw_put(w, &size, 1);
	tw_put(w, &tid, 8);
}

static void tw_accesses(struct tw *w, unsigned times, uint8_t type,
			uint64_t addr, uint8_t size, uint64_t tid)
{
	while (times--)
		tw_access(w, type, addr, size, tid);
}

static void tw_add(struct tw *w, uint64_t addr, uint32_t elemsize,
		   uint32_t count, const char *name)
{
	uint8_t type = CACHERAY_EVENT_RTTA_ADD;
	uint64_t tid = 0;
	uint32_t len = (uint32_t)strlen(name);

	tw_put(w, &type, 1);
	tw_put(w, &addr, 8);
	tw_put(w, &tid, 8);
	tw_put(w, &elemsize, 4);
	tw_put(w, &count, 4);
	tw_put(w, &len, 4);
	tw_put(w, name, len);
}

static void tw_remove(struct tw *w, uint64_t addr)
{
	uint8_t type = CACHERAY_EVENT_RTTA_REMOVE;
	uint64_t tid = 0;

	tw_put(w, &type, 1);
	tw_put(w, &addr, 8);
	tw_put(w, &tid, 8);
}

#define R CACHERAY_EVENT_READ
#define W CACHERAY_EVENT_WRITE
#define ATOMIC CACHERAY_EVENT_MASK_ATOMIC
#define UNALIGNED CACHERAY_EVENT_MASK_UNALIGNED

/*
 * The main trace.  Lines: 0x1000 holds pair[0..7], 0x1040 pair[8..15],
 * 0x1080 an int[4] at +0 and a long at +0x20.
 */
static void tw_main(struct tw *w)
{
	w->n = 0;
	tw_add(w, 0x1000, 8, 16, "struct pair");
	tw_add(w, 0x1080, 4, 4, "int");
	tw_add(w, 0x10a0, 8, 1, "long");
	/* Line 0x1000: thread 1 writes pair[0].a, thread 2 pair[1].b and
	 * reads pair[1].a: two elements, disjoint bytes. */
	tw_accesses(w, 3, W, 0x1000, 4, 1);
	tw_accesses(w, 2, W, 0x100c, 4, 2);
	tw_accesses(w, 1, R, 0x1008, 4, 2);
	/* A read-modify-write atomic on pair[2].a, an unaligned write. */
	tw_access(w, R | ATOMIC, 0x1010, 4, 2);
	tw_access(w, W | ATOMIC, 0x1010, 4, 2);
	tw_access(w, W | UNALIGNED, 0x1013, 4, 2);
	/* Line 0x1040: one thread only. */
	tw_accesses(w, 2, W, 0x1040, 4, 1);
	/* Line 0x1080: int[1] read by 1, long written by 1, int[2] read by
	 * 3: two regions. */
	tw_accesses(w, 4, R, 0x1084, 4, 1);
	tw_accesses(w, 1, W, 0x10a0, 8, 1);
	tw_accesses(w, 1, R, 0x1088, 4, 3);
	/* Untyped. */
	tw_accesses(w, 1, R, 0x5000, 8, 1);
	/* The long is freed: its bytes are untyped now. */
	tw_remove(w, 0x10a0);
	tw_accesses(w, 1, R, 0x10a0, 8, 1);
	/* realloc of the int array: remove + add, another type. */
	tw_remove(w, 0x1080);
	tw_add(w, 0x1080, 16, 1, "struct quad");
	tw_accesses(w, 1, W, 0x1084, 4, 3);
	tw_remove(w, 0x9999); /* never added */
}

static struct cacheray *feed_all(const uint8_t *b, size_t n)
{
	struct cacheray *c = cacheray_create(NULL);

	assert_non_null(c);
	assert_true(cacheray_feed(c, b, n));
	return c;
}

static const struct cacheray_type *find_type(const struct cacheray *c,
					     const char *name)
{
	for (size_t i = 0; i < cacheray_ntypes(c); i++) {
		const struct cacheray_type *t = cacheray_type_at(c, i);

		if (!strcmp(t->name, name))
			return t;
	}
	fail_msg("type %s not found", name);
	return NULL;
}

static const struct cacheray_thread *find_thread(const struct cacheray *c,
						 uint64_t id)
{
	for (size_t i = 0; i < cacheray_nthreads(c); i++)
		if (cacheray_thread_at(c, i)->id == id &&
		    !cacheray_thread_at(c, i)->other)
			return cacheray_thread_at(c, i);
	fail_msg("thread %llu not found", (unsigned long long)id);
	return NULL;
}

static void assert_rw(const uint64_t n[2], uint64_t r, uint64_t w)
{
	assert_int_equal(n[0], r);
	assert_int_equal(n[1], w);
}

static void test_counts(void **state)
{
	struct tw w;
	struct cacheray *c;
	struct cacheray_totals t;
	const struct cacheray_type *pair, *in, *lng, *quad, *none;

	(void)state;
	tw_main(&w);
	c = feed_all(w.b, w.n);
	assert_null(cacheray_error(c, NULL));
	assert_int_equal(cacheray_pending(c), 0);
	cacheray_totals(c, &t);
	assert_int_equal(t.bytes_read, w.n);
	assert_int_equal(t.accesses, 20);
	assert_int_equal(t.reads, 9);
	assert_int_equal(t.writes, 11);
	assert_int_equal(t.atomics, 2);
	assert_int_equal(t.atomic_rmw, 1);
	assert_int_equal(t.unaligned, 1);
	assert_int_equal(t.untyped, 2);
	assert_int_equal(t.records, 20 + 4 + 3);
	assert_int_equal(t.rtta_adds, 4);
	assert_int_equal(t.rtta_removes, 3);
	assert_int_equal(t.rtta_remove_unknown, 1);
	assert_int_equal(t.rtta_live, 2);
	assert_int_equal(t.rtta_overlaps, 0);
	assert_int_equal(t.lines, 4);
	assert_int_equal(t.cross_line, 0);

	pair = find_type(c, "struct pair");
	assert_int_equal(pair->elemsize, 8);
	assert_rw(pair->n, 2, 9);
	assert_non_null(pair->members);
	assert_rw(pair->members[0].n, 2, 6);
	assert_rw(pair->members[3].n, 0, 1);
	assert_rw(pair->members[4].n, 0, 2);
	for (unsigned o = 0; o < 8; o++)
		if (o != 0 && o != 3 && o != 4)
			assert_rw(pair->members[o].n, 0, 0);
	in = find_type(c, "int");
	assert_rw(in->n, 5, 0);
	assert_rw(in->members[0].n, 5, 0);
	lng = find_type(c, "long");
	assert_rw(lng->n, 0, 1);
	quad = find_type(c, "struct quad");
	assert_rw(quad->n, 0, 1);
	assert_rw(quad->members[4].n, 0, 1);
	none = cacheray_type_at(c, 0);
	assert_true(none->special);
	assert_rw(none->n, 2, 0);

	assert_int_equal(cacheray_nthreads(c), 3);
	assert_rw(find_thread(c, 1)->n, 6, 6);
	assert_rw(find_thread(c, 2)->n, 2, 4);
	assert_rw(find_thread(c, 3)->n, 1, 1);
	cacheray_destroy(c);
}

static void test_lines(void **state)
{
	struct tw w;
	struct cacheray *c;
	struct cacheray_line l[8];
	size_t n;

	(void)state;
	tw_main(&w);
	c = feed_all(w.b, w.n);
	n = cacheray_top_lines(c, false, l, 8);
	assert_int_equal(n, 4);
	assert_int_equal(l[0].addr, 0x1000);
	assert_int_equal(l[0].reads, 2);
	assert_int_equal(l[0].writes, 7);
	assert_int_equal(l[1].addr, 0x1080);
	assert_int_equal(l[1].reads, 6);
	assert_int_equal(l[1].writes, 2);
	assert_int_equal(l[2].addr, 0x1040);
	assert_int_equal(l[3].addr, 0x5000);
	assert_int_equal(l[3].layout, CACHERAY_LAYOUT_UNTYPED);
	assert_int_equal(l[2].layout, CACHERAY_LAYOUT_ELEMENT);

	/* Only the two lines written by one thread and touched by another. */
	n = cacheray_top_lines(c, true, l, 8);
	assert_int_equal(n, 2);
	assert_int_equal(l[0].addr, 0x1000);
	assert_int_equal(l[0].nthreads, 2);
	assert_int_equal(l[0].thread[0].t->id, 1);
	assert_true(l[0].thread[0].wrote);
	assert_int_equal(l[0].thread[0].bytes, 0xfull);
	assert_int_equal(l[0].thread[1].t->id, 2);
	assert_true(l[0].thread[1].wrote);
	/* bytes 8..15 (pair[1]), 16..19 (atomic), 19..22 (unaligned) */
	assert_int_equal(l[0].thread[1].bytes, 0x7fff00ull);
	assert_false(l[0].more_threads);
	assert_int_equal(l[0].layout, CACHERAY_LAYOUT_ELEMENTS);
	assert_true(l[0].disjoint);
	assert_int_equal(l[0].ntypes, 1);
	assert_string_equal(l[0].type[0]->name, "struct pair");

	assert_int_equal(l[1].addr, 0x1080);
	assert_int_equal(l[1].thread[0].t->id, 1);
	assert_true(l[1].thread[0].wrote);
	assert_int_equal(l[1].thread[1].t->id, 3);
	assert_true(l[1].thread[1].wrote); /* the struct quad write */
	assert_int_equal(l[1].layout, CACHERAY_LAYOUT_REGIONS);
	assert_false(l[1].disjoint); /* both touched bytes 4..7 */
	assert_int_equal(l[1].ntypes, 2);
	assert_string_equal(l[1].type[0]->name, "int");
	assert_string_equal(l[1].type[1]->name, "long");
	assert_true(l[1].more_types); /* then (untyped), struct quad */
	cacheray_destroy(c);
}

static char *report(const struct cacheray *c, bool json)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	assert_non_null(f);
	if (json)
		batch_cacheray_print_json(f, c, "t");
	else
		batch_cacheray_print_text(f, c, "t");
	fclose(f);
	return s;
}

/* Every split point (and byte by byte) gives the same report. */
static void test_chunks(void **state)
{
	struct tw w;
	struct cacheray *c;
	char *whole, *got;

	(void)state;
	tw_main(&w);
	c = feed_all(w.b, w.n);
	whole = report(c, true);
	cacheray_destroy(c);
	for (size_t k = 0; k <= w.n; k++) {
		c = cacheray_create(NULL);
		assert_true(cacheray_feed(c, w.b, k));
		assert_true(cacheray_feed(c, w.b + k, w.n - k));
		got = report(c, true);
		if (strcmp(got, whole))
			fail_msg("split at %zu differs:\n%s\n%s", k, got,
				 whole);
		free(got);
		cacheray_destroy(c);
	}
	c = cacheray_create(NULL);
	for (size_t k = 0; k < w.n; k++)
		assert_true(cacheray_feed(c, w.b + k, 1));
	assert_int_equal(cacheray_pending(c), 0);
	got = report(c, true);
	assert_string_equal(got, whole);
	free(got);
	cacheray_destroy(c);
	free(whole);
}

static void test_json(void **state)
{
	struct tw w;
	struct cacheray *c;
	char *s;
	struct jv v;
	const struct jv *fs, *types, *members, *thr;

	(void)state;
	tw_main(&w);
	c = feed_all(w.b, w.n);
	s = report(c, true);
	json_must_parse(s, &v);
	assert_int_equal(json_u64(&v, "records"), 27);
	assert_int_equal(json_u64(&v, "totals.accesses"), 20);
	assert_int_equal(json_u64(&v, "totals.atomic_rmw"), 1);
	assert_int_equal(json_u64(&v, "rtta.remove_unknown"), 1);
	assert_int_equal(json_need(&v, "error", J_NULL)->t, J_NULL);
	json_need(&v, "threads_note", J_NULL);
	types = json_need(&v, "types", J_ARR);
	/* Sorted by accesses: struct pair (11) first. */
	assert_string_equal(json_need(&types->items[0], "name", J_STR)->s,
			    "struct pair");
	members = json_need(&types->items[0], "members", J_ARR);
	assert_int_equal(members->n, 3);
	assert_int_equal(json_u64(&members->items[2], "offset"), 4);
	assert_int_equal(json_u64(&members->items[2], "writes"), 2);
	fs = json_need(&v, "false_sharing", J_ARR);
	assert_int_equal(fs->n, 2);
	assert_string_equal(json_need(&fs->items[0], "addr", J_STR)->s,
			    "0x0000000000001000");
	assert_string_equal(json_need(&fs->items[0], "layout", J_STR)->s,
			    "elements");
	assert_true(json_need(&fs->items[0], "bytes_disjoint", J_BOOL)->b);
	thr = json_need(&fs->items[0], "threads", J_ARR);
	assert_int_equal(thr->n, 2);
	assert_int_equal(json_u64(&thr->items[0], "id"), 1);
	assert_int_equal(json_u64(&thr->items[1], "id"), 2);
	assert_string_equal(json_need(&thr->items[1], "bytes", J_STR)->s,
			    "0x00000000007fff00");
	assert_int_equal(json_need(&v, "hot_lines", J_ARR)->n, 4);
	json_free(&v);
	free(s);

	s = report(c, false);
	assert_non_null(strstr(s, "\nTotals\n"));
	assert_non_null(strstr(s, "\nTypes\n"));
	assert_non_null(strstr(s, "\nThreads\n"));
	assert_non_null(strstr(s, "\nHot lines\n"));
	assert_non_null(strstr(s, "\nFalse-sharing suspects\n"));
	assert_non_null(strstr(s, "1(w),2(w)"));
	assert_non_null(strstr(s, "diff-elements"));
	free(s);
	cacheray_destroy(c);
}

/* The shipped runtime's thread id 0 everywhere: no suspect, and a note. */
static void test_thread_zero(void **state)
{
	struct tw w = {.n = 0};
	struct cacheray *c;
	struct cacheray_line l[2];
	char *s;

	(void)state;
	tw_add(&w, 0x2000, 4, 16, "int");
	tw_accesses(&w, 2, W, 0x2000, 4, 0);
	tw_accesses(&w, 2, R, 0x2004, 4, 0);
	c = feed_all(w.b, w.n);
	assert_int_equal(cacheray_top_lines(c, true, l, 2), 0);
	s = report(c, false);
	assert_non_null(strstr(s, "thread id 0"));
	free(s);
	s = report(c, true);
	assert_non_null(strstr(s, "\"threads_note\":\"every access carries "
				  "thread id 0"));
	free(s);
	cacheray_destroy(c);
}

/* Typenames are bytes from the trace: the JSON stays valid, text clean. */
static void test_odd_names(void **state)
{
	struct tw w = {.n = 0};
	struct cacheray *c;
	struct jv v;
	const struct jv *types;
	char *s;

	(void)state;
	tw_add(&w, 0x100, 4, 1, "a\"b\\c\x1b[2J\xff");
	tw_access(&w, W, 0x100, 4, 0);
	c = feed_all(w.b, w.n);
	s = report(c, true);
	json_must_parse(s, &v);
	types = json_need(&v, "types", J_ARR);
	assert_string_equal(json_need(&types->items[0], "name", J_STR)->s,
			    "a\"b\\c\x1b[2J\xc3\xbf");
	json_free(&v);
	free(s);
	s = report(c, false);
	assert_non_null(strstr(s, "a\"b\\c?[2J?\n"));
	assert_null(strchr(s, 0x1b));
	free(s);
	cacheray_destroy(c);
}

/* Feed b whole and byte by byte: both stop at `off` with `msg` in the
 * error, having counted the `accesses` before it. */
static void expect_bad(const struct tw *w, uint64_t off, const char *msg,
		       uint64_t accesses)
{
	for (int bytewise = 0; bytewise < 2; bytewise++) {
		struct cacheray *c = cacheray_create(NULL);
		struct cacheray_totals t;
		uint64_t at = 0;
		bool ok = true;
		const char *e;

		if (bytewise)
			for (size_t k = 0; k < w->n && ok; k++)
				ok = cacheray_feed(c, w->b + k, 1);
		else
			ok = cacheray_feed(c, w->b, w->n);
		assert_false(ok);
		e = cacheray_error(c, &at);
		assert_non_null(e);
		assert_int_equal(at, off);
		if (!strstr(e, msg))
			fail_msg("error '%s' lacks '%s'", e, msg);
		/* Stopped for good. */
		assert_false(cacheray_feed(c, w->b, w->n));
		cacheray_totals(c, &t);
		assert_int_equal(t.accesses, accesses);
		assert_int_equal(t.bytes_read, off);
		cacheray_destroy(c);
	}
}

static void test_bad_records(void **state)
{
	struct tw w;
	uint8_t b;
	uint32_t u;

	(void)state;
	/* Two accesses, an add of "int" (29 + 3), then an unknown type. */
	for (unsigned k = 0; k < 4; k++) {
		static const uint8_t bad[] = {0x04, 0x45, 0x3f, 0xff};

		w.n = 0;
		tw_accesses(&w, 2, W, 0x10, 4, 0);
		tw_add(&w, 0x100, 4, 2, "int");
		b = bad[k];
		tw_put(&w, &b, 1);
		tw_accesses(&w, 1, R, 0x10, 4, 0);
		expect_bad(&w, 36 + 32, "unknown record type", 2);
	}
	/* Flags on RTTA records. */
	w.n = 0;
	tw_access(&w, R, 0x10, 4, 0);
	tw_remove(&w, 0x100);
	w.b[w.n - 17] |= ATOMIC;
	expect_bad(&w, 18, "atomic/unaligned flags", 1);
	w.n = 0;
	tw_add(&w, 0x100, 4, 2, "x");
	w.b[0] |= UNALIGNED;
	expect_bad(&w, 0, "atomic/unaligned flags", 0);
	/* An absurd typename length (the test's writer never writes the
	 * name, only the length). */
	w.n = 0;
	tw_access(&w, R, 0x10, 4, 0);
	tw_add(&w, 0x100, 4, 2, "x");
	u = CACHERAY_NAME_MAX + 1;
	memcpy(w.b + 18 + 25, &u, 4);
	expect_bad(&w, 18, "typename length 4097", 1);
	/* Element size 0; a region past the top of the address space. */
	w.n = 0;
	tw_add(&w, 0x100, 0, 2, "zero");
	expect_bad(&w, 0, "element size 0", 0);
	w.n = 0;
	tw_add(&w, 0x100, 4, 1, "ok");
	tw_add(&w, UINT64_MAX - 15, 8, 3, "wrap");
	expect_bad(&w, 31, "past the end of the address space", 0);
}

/* A region may end exactly at the top of the address space. */
static void test_top_of_memory(void **state)
{
	struct tw w = {.n = 0};
	struct cacheray *c;

	(void)state;
	tw_add(&w, UINT64_MAX - 15, 8, 2, "top");
	tw_access(&w, W, UINT64_MAX - 3, 4, 0);
	tw_access(&w, W, 0, 4, 0);
	c = feed_all(w.b, w.n);
	assert_rw(find_type(c, "top")->n, 0, 1);
	assert_rw(find_type(c, "top")->members[4].n, 0, 1);
	assert_rw(cacheray_type_at(c, 0)->n, 0, 1);
	cacheray_destroy(c);
}

static void test_truncated(void **state)
{
	struct tw w;
	struct cacheray *c;
	struct jv v;
	char *s;

	(void)state;
	tw_main(&w);
	c = cacheray_create(NULL);
	assert_true(cacheray_feed(c, w.b, w.n - 5));
	assert_int_equal(cacheray_pending(c), 12); /* the last remove */
	s = report(c, true);
	json_must_parse(s, &v);
	assert_int_equal(json_u64(&v, "truncated.offset"), w.n - 17);
	assert_int_equal(json_u64(&v, "truncated.bytes"), 12);
	json_free(&v);
	free(s);
	s = report(c, false);
	assert_non_null(strstr(s, "ends inside a record at byte"));
	free(s);
	cacheray_destroy(c);
}

/* Overlapping adds: the newer wins and the older is dropped whole. */
static void test_overlap(void **state)
{
	struct tw w = {.n = 0};
	struct cacheray *c;
	struct cacheray_totals t;

	(void)state;
	tw_add(&w, 0x1000, 16, 4, "old"); /* [0x1000, 0x1040) */
	tw_add(&w, 0x1010, 8, 1, "new");  /* inside it */
	tw_access(&w, R, 0x1000, 4, 0);	  /* the old one's head: gone */
	tw_access(&w, R, 0x1010, 4, 0);
	tw_access(&w, R, 0x1030, 4, 0); /* its tail: gone too */
	tw_remove(&w, 0x1000);		/* already dropped: unknown */
	tw_add(&w, 0x1000, 4, 0, "empty");
	tw_remove(&w, 0x1000);
	c = feed_all(w.b, w.n);
	cacheray_totals(c, &t);
	assert_int_equal(t.rtta_overlaps, 1);
	assert_int_equal(t.rtta_empty, 1);
	assert_int_equal(t.rtta_remove_unknown, 2);
	assert_int_equal(t.rtta_live, 1);
	assert_rw(find_type(c, "old")->n, 0, 0);
	assert_rw(find_type(c, "new")->n, 1, 0);
	assert_int_equal(t.untyped, 2);
	cacheray_destroy(c);
}

/* An access right after an add or remove sees it, even when the address
 * was the last one looked up (the reader caches that answer). */
static void test_same_address(void **state)
{
	struct tw w = {.n = 0};
	struct cacheray *c;

	(void)state;
	tw_access(&w, R, 0x3000, 4, 0); /* untyped */
	tw_add(&w, 0x3000, 4, 8, "first");
	tw_access(&w, R, 0x3000, 4, 0);
	tw_remove(&w, 0x3000);
	tw_access(&w, R, 0x3004, 4, 0); /* untyped */
	tw_add(&w, 0x3000, 8, 4, "second");
	tw_access(&w, W, 0x3004, 4, 0);
	c = feed_all(w.b, w.n);
	assert_rw(cacheray_type_at(c, 0)->n, 2, 0);
	assert_rw(find_type(c, "first")->n, 1, 0);
	assert_rw(find_type(c, "second")->n, 0, 1);
	assert_rw(find_type(c, "second")->members[4].n, 0, 1);
	cacheray_destroy(c);
}

/* The caps: lines, threads, types, regions, member counters. */
static void test_caps(void **state)
{
	struct cacheray_config cfg = {
		.max_lines = 2,
		.max_threads = 3,
		.max_types = 4,
		.max_regions = 2,
		.max_member_offsets = 10,
	};
	struct tw w = {.n = 0};
	struct cacheray *c = cacheray_create(&cfg);
	struct cacheray_totals t;

	(void)state;
	assert_non_null(c);
	tw_add(&w, 0x100, 8, 1, "a");	/* members: 8 of 10 */
	tw_add(&w, 0x200, 8, 1, "b");	/* no budget left */
	tw_add(&w, 0x300, 8, 1, "c");	/* a third live region: refused */
	tw_add(&w, 0x400, 8, 1, "d");	/* types: (untyped), a, b, other */
	tw_access(&w, R, 0x100, 4, 10); /* line 1, thread 10 */
	tw_access(&w, R, 0x200, 4, 11); /* line 2, thread 11 */
	tw_access(&w, R, 0x300, 4, 12); /* line 3: dropped; other thread */
	tw_access(&w, R, 0x104, 4, 13);
	assert_true(cacheray_feed(c, w.b, w.n));
	cacheray_totals(c, &t);
	assert_int_equal(t.lines, 2);
	assert_int_equal(t.lines_dropped_accesses, 1);
	assert_int_equal(t.threads_other, 2);
	assert_int_equal(t.rtta_full, 2);
	assert_int_equal(t.rtta_live, 2);
	assert_int_equal(t.types_other, 0);
	assert_int_equal(cacheray_ntypes(c), 4);
	assert_true(cacheray_type_at(c, 3)->special);
	assert_int_equal(cacheray_type_at(c, 3)->regions, 2);
	assert_non_null(find_type(c, "a")->members);
	assert_null(find_type(c, "b")->members);
	assert_true(find_type(c, "b")->no_members);
	assert_rw(find_type(c, "a")->members[4].n, 1, 0);
	assert_int_equal(t.untyped, 1);
	cacheray_destroy(c);
}

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

/*
 * Attribution against a byte-per-address model, through the reader's
 * caches: random adds (overlaps included), removes and accesses in a small
 * space, then every type's and member's counts compared.
 */
static void test_attribution_model(void **state)
{
	enum { SPACE = 512, NT = 6, OPS = 20000 };
	int32_t owner[SPACE]; /* region index into rstart/rtype, or -1 */
	uint64_t rstart[OPS];
	unsigned rtype[OPS], nreg = 0;
	uint64_t want[NT + 1][2] = {{0}}, want_m[NT][NT + 1][2];
	static const char *const names[NT] = {"t1", "t2", "t3",
					      "t4", "t5", "t6"};
	struct cacheray *c = cacheray_create(NULL);
	uint64_t rng = 99;
	struct tw w;

	(void)state;
	memset(want_m, 0, sizeof(want_m));
	memset(owner, -1, sizeof(owner));
	for (unsigned op = 0; op < OPS; op++) {
		uint64_t x, a;

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		x = rng >> 11;
		a = x % SPACE;
		w.n = 0;
		if (x % 100 < 8) {
			unsigned t = (unsigned)(x >> 20) % NT, es = t + 1;
			unsigned cnt = 1 + (unsigned)(x >> 30) % 12;

			if (a + (uint64_t)es * cnt > SPACE)
				continue;
			/* Overlapped regions are dropped whole. */
			for (uint64_t i = a; i < a + (uint64_t)es * cnt; i++)
				if (owner[i] >= 0) {
					int32_t d = owner[i];

					for (unsigned k = 0; k < SPACE; k++)
						if (owner[k] == d)
							owner[k] = -1;
				}
			for (uint64_t i = a; i < a + (uint64_t)es * cnt; i++)
				owner[i] = (int32_t)nreg;
			rstart[nreg] = a;
			rtype[nreg++] = t;
			tw_add(&w, 0x40000 + a, es, cnt, names[t]);
		} else if (x % 100 < 14) {
			if (owner[a] >= 0 && rstart[owner[a]] == a) {
				int32_t d = owner[a];

				for (unsigned k = 0; k < SPACE; k++)
					if (owner[k] == d)
						owner[k] = -1;
			}
			tw_remove(&w, 0x40000 + a);
		} else {
			unsigned wr = (x >> 40) & 1;

			if (owner[a] < 0) {
				want[NT][wr]++;
			} else {
				unsigned t = rtype[owner[a]];

				want[t][wr]++;
				want_m[t][(a - rstart[owner[a]]) % (t + 1)]
				      [wr]++;
			}
			tw_access(&w, (uint8_t)wr, 0x40000 + a, 1, x % 3);
		}
		assert_true(cacheray_feed(c, w.b, w.n));
	}
	for (unsigned t = 0; t < NT; t++) {
		const struct cacheray_type *ty = find_type(c, names[t]);

		assert_rw(ty->n, want[t][0], want[t][1]);
		for (unsigned o = 0; o <= t; o++)
			assert_rw(ty->members[o].n, want_m[t][o][0],
				  want_m[t][o][1]);
	}
	assert_rw(cacheray_type_at(c, 0)->n, want[NT][0], want[NT][1]);
	cacheray_destroy(c);
}

/* ---- batch_cacheray_run: a file, a FIFO being written, errors ---- */

static char tmpdir[64];

static int setup_dir(void **state)
{
	(void)state;
	strcpy(tmpdir, "/tmp/test-cacheray-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
	char p[128];

	(void)state;
	snprintf(p, sizeof(p), "%s/trace", tmpdir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/fifo", tmpdir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/bad", tmpdir);
	unlink(p);
	return rmdir(tmpdir);
}

static char *run(const char *path, bool json, int *rc, char *err, size_t n)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	assert_non_null(f);
	*rc = batch_cacheray_run(path, json, f, err, n);
	fclose(f);
	return s;
}

static void write_file(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	fclose(f);
}

static void test_run_file(void **state)
{
	struct tw w;
	struct cacheray *c;
	char path[128], err[512] = "", *got, *want;
	int rc;

	(void)state;
	tw_main(&w);
	c = feed_all(w.b, w.n);
	snprintf(path, sizeof(path), "%s/trace", tmpdir);
	write_file(path, w.b, w.n);
	got = run(path, true, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	/* The same report as feeding by hand, but for the source name. */
	want = report(c, true);
	assert_non_null(strstr(got, want + strlen("{\"source\":\"t\"")));
	free(got);
	free(want);
	got = run(path, false, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_non_null(strstr(got, "False-sharing suspects"));
	free(got);
	cacheray_destroy(c);

	/* "-": standard input. */
	{
		int saved = dup(STDIN_FILENO), fd = open(path, O_RDONLY);

		assert_true(saved >= 0 && fd >= 0);
		assert_int_equal(dup2(fd, STDIN_FILENO), STDIN_FILENO);
		close(fd);
		got = run("-", true, &rc, err, sizeof(err));
		assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
		close(saved);
		assert_int_equal(rc, 0);
		assert_non_null(
			strstr(got, "{\"source\":\"(stdin)\",\"bytes\":556,"));
		free(got);
	}

	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	got = run(path, true, &rc, err, sizeof(err));
	assert_int_equal(rc, 1);
	assert_string_equal(got, "");
	assert_non_null(strstr(err, "cannot open Cacheray trace"));
	assert_non_null(strstr(err, "missing"));
	free(got);

	/* A bad record: the report so far, the error in it and in err. */
	w.n = 0;
	tw_access(&w, W, 0x40, 8, 0);
	w.b[w.n++] = 0x07;
	snprintf(path, sizeof(path), "%s/bad", tmpdir);
	write_file(path, w.b, w.n);
	got = run(path, true, &rc, err, sizeof(err));
	assert_int_equal(rc, 1);
	assert_non_null(strstr(got, "\"error\":{\"offset\":18,"));
	assert_non_null(strstr(got, "\"accesses\":1,"));
	assert_non_null(strstr(err, "byte 18: unknown record type 0x07"));
	free(got);
}

/* A FIFO whose writer is still writing: read to its end, in pieces. */
static void test_run_fifo(void **state)
{
	struct tw w;
	char path[128], err[256] = "", *got;
	struct jv v;
	pid_t pid;
	int rc, status;

	(void)state;
	tw_main(&w);
	snprintf(path, sizeof(path), "%s/fifo", tmpdir);
	assert_int_equal(mkfifo(path, 0600), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(path, O_WRONLY);
		size_t cut[] = {0, 7, 100, 101, w.n};

		for (unsigned i = 0; fd >= 0 && i + 1 < 5; i++) {
			if (write(fd, w.b + cut[i], cut[i + 1] - cut[i]) < 0)
				_exit(1);
			usleep(20000);
		}
		_exit(fd >= 0 ? 0 : 1);
	}
	got = run(path, true, &rc, err, sizeof(err));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(rc, 0);
	json_must_parse(got, &v);
	assert_int_equal(json_u64(&v, "bytes"), w.n);
	assert_int_equal(json_u64(&v, "totals.accesses"), 20);
	assert_int_equal(json_need(&v, "false_sharing", J_ARR)->n, 2);
	json_free(&v);
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_chunks),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_thread_zero),
		cmocka_unit_test(test_odd_names),
		cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_top_of_memory),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_same_address),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_rtta_model),
		cmocka_unit_test(test_attribution_model),
		cmocka_unit_test(test_run_file),
		cmocka_unit_test(test_run_fifo),
	};

	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
