/*
 * cacheray: the Cacheray trace reader (src/cacheray/cacheray.c,
 * cacheray_query.c, linetab.c).
 *
 * The main synthetic trace (cacheray-trace.h) has two threads writing two
 * elements of one array on one cache line, types added, removed and
 * reallocated, atomic and unaligned accesses; the tests check the exact
 * per-type, per-member, per-thread and per-line counts, that the shared
 * lines are flagged with their threads, that every way of cutting the
 * trace into chunks gives the same report, that bad records stop the
 * reader at their exact offset, the overlap rule, the caps, and the
 * attribution of accesses against a byte-per-address model.
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

#include "json-check.h"
#include "cacheray-trace.h"

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
	/* The reports' words (text report and view share them). */
	assert_string_equal(cacheray_layout_text(CACHERAY_LAYOUT_UNTYPED),
			    "untyped");
	assert_string_equal(cacheray_layout_text(CACHERAY_LAYOUT_ELEMENT),
			    "one-element");
	assert_string_equal(cacheray_layout_text(CACHERAY_LAYOUT_ELEMENTS),
			    "diff-elements");
	assert_string_equal(cacheray_layout_text(CACHERAY_LAYOUT_REGIONS),
			    "diff-regions");

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
	/* Records that parse but map nothing -- element size 0, a region
	 * past the top of the address space -- are counted as empty adds,
	 * and reading goes on. */
	{
		struct cacheray *c = cacheray_create(NULL);
		struct cacheray_totals t;

		w.n = 0;
		tw_add(&w, 0x100, 4, 1, "ok");
		tw_add(&w, 0x100, 0, 2, "zero");
		tw_add(&w, UINT64_MAX - 15, 8, 3, "wrap");
		tw_accesses(&w, 3, W, 0x100, 4, 0);
		assert_true(cacheray_feed(c, w.b, w.n));
		cacheray_totals(c, &t);
		assert_int_equal(t.records, 6);
		assert_int_equal(t.rtta_adds, 3);
		assert_int_equal(t.rtta_empty, 2);
		assert_int_equal(t.rtta_live, 1);
		assert_int_equal(t.accesses, 3);
		assert_int_equal(t.untyped, 0); /* all three on "ok" */
		cacheray_destroy(c);
	}
	/* The record that stops the reader is not counted. */
	{
		struct cacheray *c = cacheray_create(NULL);
		struct cacheray_totals t;

		w.n = 0;
		tw_accesses(&w, 2, R, 0x10, 4, 0);
		tw_add(&w, 0x100, 4, 2, "x");
		u = CACHERAY_NAME_MAX + 1;
		memcpy(w.b + 36 + 25, &u, 4);
		assert_false(cacheray_feed(c, w.b, w.n));
		cacheray_totals(c, &t);
		assert_int_equal(t.records, 2);
		assert_int_equal(t.rtta_adds, 0);
		cacheray_destroy(c);
	}
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

/* ---- freed memory and accesses past their line ---- */

/* The decoded line at addr among the n hottest, or NULL. */
static const struct cacheray_line *line_at(const struct cacheray *c,
					   uint64_t addr,
					   struct cacheray_line *l, size_t max)
{
	size_t n = cacheray_top_lines(c, false, l, max);

	for (size_t i = 0; i < n; i++)
		if (l[i].addr == addr)
			return &l[i];
	return NULL;
}

/* Memory freed and reused: its earlier user does not share the line with
 * the later one (the review's trace). */
static void test_freed_reused(void **state)
{
	struct tw w = {.n = 0};
	struct cacheray *c;
	struct cacheray_line l[8];
	const struct cacheray_line *x;

	(void)state;
	tw_add(&w, 0x1000, 64, 1, "struct a");
	tw_accesses(&w, 10, W, 0x1000, 8, 1);
	tw_remove(&w, 0x1000);
	tw_add(&w, 0x1000, 64, 1, "struct b");
	tw_accesses(&w, 10, R, 0x1020, 8, 2);
	c = feed_all(w.b, w.n);
	assert_int_equal(cacheray_top_lines(c, true, l, 8), 0);
	x = line_at(c, 0x1000, l, 8);
	assert_non_null(x);
	assert_int_equal(x->reads, 10); /* the accesses still count */
	assert_int_equal(x->writes, 10);
	assert_int_equal(x->nthreads, 1);
	assert_int_equal(x->thread[0].t->id, 2);
	assert_false(x->thread[0].wrote);
	assert_int_equal(x->thread[0].bytes, 0xffull << 32);
	assert_false(x->more_threads);
	cacheray_destroy(c);

	/* The same when the old region is dropped by an overlapping add
	 * (its free was not logged). */
	w.n = 0;
	tw_add(&w, 0x1000, 64, 1, "struct a");
	tw_accesses(&w, 10, W, 0x1000, 8, 1);
	tw_add(&w, 0x1000, 32, 2, "struct b");
	tw_accesses(&w, 10, R, 0x1020, 8, 2);
	c = feed_all(w.b, w.n);
	assert_int_equal(cacheray_top_lines(c, true, l, 8), 0);
	cacheray_destroy(c);
}

/* Part of a line freed: only those bytes are forgotten; a slot left
 * empty is freed (slot 1 moves down); a suspect stays a suspect; "more
 * threads" goes only with the whole line. */
static void test_freed_part(void **state)
{
	struct tw w = {.n = 0};
	struct cacheray *c;
	struct cacheray_line l[8];
	const struct cacheray_line *x;

	(void)state;
	/* 0x2000: A [0x2000, 0x2010) read by 1, B [0x2020, 0x2040) by 2;
	 * A freed; 3 writes where A was: 2 and 3 share, 1 is gone. */
	tw_add(&w, 0x2000, 16, 1, "A");
	tw_add(&w, 0x2020, 32, 1, "B");
	tw_accesses(&w, 2, R, 0x2000, 8, 1);
	tw_accesses(&w, 2, R, 0x2020, 8, 2);
	tw_remove(&w, 0x2000);
	tw_add(&w, 0x2000, 16, 1, "A2");
	tw_accesses(&w, 2, W, 0x2008, 4, 3);
	/* 0x3000: a suspect (1 wrote, 2 read) before the free: it stays. */
	tw_add(&w, 0x3000, 16, 1, "A");
	tw_add(&w, 0x3020, 32, 1, "B");
	tw_accesses(&w, 1, W, 0x3000, 8, 1);
	tw_accesses(&w, 1, R, 0x3020, 8, 2);
	tw_remove(&w, 0x3000);
	/* 0x4000: three readers of one 64-byte region, freed whole: a new
	 * writer is alone on the line. */
	tw_add(&w, 0x4000, 64, 1, "C");
	for (uint64_t t = 1; t <= 3; t++)
		tw_access(&w, R, 0x4000 + 8 * t, 8, t);
	tw_remove(&w, 0x4000);
	tw_add(&w, 0x4000, 64, 1, "C");
	tw_access(&w, W, 0x4000, 8, 4);
	/* 0x5000: three readers of half the line, freed: their other bytes
	 * are not known, so "more threads" stays. */
	tw_add(&w, 0x5000, 32, 1, "D");
	for (uint64_t t = 1; t <= 3; t++)
		tw_access(&w, R, 0x5000 + 8 * t, 8, t);
	tw_remove(&w, 0x5000);
	c = feed_all(w.b, w.n);

	x = line_at(c, 0x2000, l, 8);
	assert_non_null(x);
	assert_int_equal(x->nthreads, 2);
	assert_int_equal(x->thread[0].t->id, 2);
	assert_false(x->thread[0].wrote);
	assert_int_equal(x->thread[0].bytes, 0xffull << 32);
	assert_int_equal(x->thread[1].t->id, 3);
	assert_true(x->thread[1].wrote);
	assert_int_equal(x->thread[1].bytes, 0xfull << 8);
	assert_false(x->more_threads);
	assert_true(x->disjoint);

	x = line_at(c, 0x3000, l, 8);
	assert_int_equal(x->nthreads, 2);
	assert_int_equal(x->thread[0].t->id, 1);
	assert_true(x->thread[0].wrote);
	assert_int_equal(x->thread[0].bytes, 0xffull);

	x = line_at(c, 0x4000, l, 8);
	assert_int_equal(x->nthreads, 1);
	assert_int_equal(x->thread[0].t->id, 4);
	assert_false(x->more_threads);

	x = line_at(c, 0x5000, l, 8);
	assert_int_equal(x->nthreads, 0);
	assert_true(x->more_threads);

	/* Suspects: 0x2000 (2 and 3) and 0x3000 (sticky). */
	assert_int_equal(cacheray_top_lines(c, true, l, 8), 2);
	cacheray_destroy(c);
}

/* A region with more lines than the table has slots: forgotten in one
 * pass over the table; lines outside it are kept. */
static void test_freed_large(void **state)
{
	struct tw w = {.n = 0};
	struct cacheray *c;
	struct cacheray_line l[8];

	(void)state;
	/* 1 MiB: 16,384 lines, the table has 4,096 slots. */
	tw_add(&w, 0x100000, 1, 1u << 20, "char");
	tw_access(&w, W, 0x100000, 8, 1);
	tw_access(&w, W, 0x1fffc0, 8, 1);
	tw_access(&w, W, 0x200000, 8, 1); /* just past it */
	tw_remove(&w, 0x100000);
	tw_access(&w, R, 0x100008, 8, 2);
	tw_access(&w, R, 0x1fffc8, 8, 2);
	tw_access(&w, R, 0x200008, 8, 2);
	c = feed_all(w.b, w.n);
	assert_int_equal(cacheray_top_lines(c, true, l, 8), 1);
	assert_int_equal(l[0].addr, 0x200000);
	cacheray_destroy(c);
}

/* An access past the end of its line marks the next line(s) too -- the
 * thread, its bytes there, whether it wrote -- but counts only once, on
 * the line it starts in. */
static void test_cross_line(void **state)
{
	struct cacheray_config cfg = {.max_lines = 8};
	struct tw w = {.n = 0};
	struct cacheray *c;
	struct cacheray_line l[8], s[8];
	const struct cacheray_line *x;
	struct cacheray_totals t;

	(void)state;
	/* The review's trace: 8 bytes at 0x303c by 1, then 0x3040 by 2. */
	tw_access(&w, W | UNALIGNED, 0x303c, 8, 1);
	tw_access(&w, W, 0x3040, 8, 2);
	/* 255 bytes from 0x40f0: five lines, 0x40c0 to 0x41c0. */
	tw_access(&w, R, 0x40f0, 255, 3);
	c = feed_all(w.b, w.n);
	cacheray_totals(c, &t);
	assert_int_equal(t.cross_line, 2);
	assert_int_equal(t.lines, 2 + 5);
	assert_int_equal(cacheray_top_lines(c, true, s, 8), 1);
	assert_int_equal(s[0].addr, 0x3040);
	assert_int_equal(s[0].reads + s[0].writes, 1);
	assert_int_equal(s[0].thread[0].t->id, 1);
	assert_true(s[0].thread[0].wrote);
	assert_int_equal(s[0].thread[0].bytes, 0xfull);
	assert_int_equal(s[0].thread[1].t->id, 2);
	assert_int_equal(s[0].thread[1].bytes, 0xffull);
	assert_false(s[0].disjoint); /* 0x3040..0x3043: both */
	x = line_at(c, 0x3000, l, 8);
	assert_int_equal(x->writes, 1);
	assert_int_equal(x->thread[0].bytes, 0xfull << 60);
	x = line_at(c, 0x40c0, l, 8);
	assert_int_equal(x->reads, 1);
	assert_int_equal(x->thread[0].bytes, 0xffffull << 48);
	for (uint64_t a = 0x4100; a <= 0x4180; a += 0x40) {
		x = line_at(c, a, l, 8);
		assert_int_equal(x->reads + x->writes, 0);
		assert_int_equal(x->thread[0].bytes, ~0ull);
	}
	x = line_at(c, 0x41c0, l, 8);
	assert_int_equal(x->thread[0].bytes, (2ull << 46) - 1); /* to 0x41ee */
	cacheray_destroy(c);

	/* At the cap, the lines after are skipped; at the top of memory,
	 * nothing wraps to line 0. */
	c = cacheray_create(&cfg);
	w.n = 0;
	for (uint64_t a = 0; a < 8; a++)
		tw_access(&w, R, 0x10000 + a * 64, 4, 1);
	tw_access(&w, W, 0x1003c + 7 * 64, 8, 1); /* into a 9th line */
	tw_access(&w, W, UINT64_MAX - 3, 8, 1);	  /* past the top */
	assert_true(cacheray_feed(c, w.b, w.n));
	cacheray_totals(c, &t);
	assert_int_equal(t.lines, 8);
	assert_int_equal(t.cross_line, 2);
	assert_int_equal(t.lines_dropped_accesses, 1);
	cacheray_destroy(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_chunks),
		cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_top_of_memory),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_same_address),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_attribution_model),
		cmocka_unit_test(test_freed_reused),
		cmocka_unit_test(test_freed_part),
		cmocka_unit_test(test_freed_large),
		cmocka_unit_test(test_cross_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
