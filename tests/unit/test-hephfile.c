/*
 * test-hephfile: Heph trace files read back (src/engine/heph/hephfile.c) --
 * written to temporary files: the epoch and events; metadata in the middle,
 * an unknown option with an odd value size, an epoch of the wrong size;
 * substream 0 and a counter that wraps; garbage between two good packets
 * (offset of the problem and bytes skipped exact); a size that lies, at the
 * end (truncated) and in the middle; an empty file; a file of garbage only;
 * more than 1 MiB of garbage (reading stops); and the index: offsets,
 * times, by_start order (stable for equal starts, checked against a
 * reference sort on a large random set) and seek; and a walk in two
 * halves at once finds what one walk finds (lies and junk at the split),
 * and a file truncated under the two walks faults into the caller's guard
 * and leaves SIGBUS deliverable.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <zstd.h>

#include "engine/heph/hephfile.h"

static uint8_t wbuf[4 << 20];

/* ---- writing files ---- */

static void enc_start(struct heph_enc *e)
{
	heph_enc_init(e, wbuf, sizeof(wbuf));
}

/* An event like corotop's; returns its offset in the buffer. */
static size_t enc_ev(struct heph_enc *e, uint32_t stream, uint32_t counter,
		     uint64_t sub, uint64_t start, uint64_t end)
{
	size_t off = e->len;

	assert_true(heph_enc_event_begin(e, stream, counter, sub, start, end,
					 "running"));
	assert_true(heph_enc_u64(e, "addr", 0x1000 + sub));
	assert_true(heph_enc_str(e, "symbol", "worker_loop"));
	assert_true(heph_enc_event_end(e) > 0);
	return off;
}

static void put_bytes(struct heph_enc *e, const void *p, size_t n)
{
	assert_true(e->len + n <= e->cap);
	memcpy(e->buf + e->len, p, n);
	e->len += n;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* Write n bytes at p to a new temporary file and open it. */
static void file_of(struct heph_file *f, const uint8_t *p, size_t n)
{
	const char *dir = getenv("TMPDIR");
	char path[512], err[256];
	int fd;

	snprintf(path, sizeof(path), "%s/test-hephfile-XXXXXX",
		 dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_true(n == 0 || write(fd, p, n) == (ssize_t)n);
	close(fd);
	err[0] = '\0';
	if (!heph_file_open(f, path, err, sizeof(err)))
		fail_msg("open %s: %s", path, err);
	unlink(path); /* the mapping stays */
	assert_int_equal(f->size, n);
}

static void no_problems(const struct heph_file *f)
{
	if (f->problems_total)
		fail_msg("unexpected problem at %llu: %s",
			 (unsigned long long)f->problems[0].off,
			 f->problems[0].what);
	assert_int_equal(f->skipped_bytes, 0);
	assert_false(f->truncated);
}

static void has_problem(const struct heph_file *f, size_t i, uint64_t off,
			const char *what)
{
	assert_true(i < f->nproblems);
	assert_int_equal(f->problems[i].off, off);
	if (!strstr(f->problems[i].what, what))
		fail_msg("problem '%s' does not say '%s'", f->problems[i].what,
			 what);
}

/* ---- tests ---- */

static void test_epoch_and_events(void **state)
{
	struct heph_enc e;
	struct heph_file f;
	struct heph_packet p;
	struct heph_attr a;
	uint32_t pos = 0;
	size_t off[3];

	(void)state;
	enc_start(&e);
	assert_true(heph_enc_epoch(&e, 1610113734118010000ull));
	off[0] = enc_ev(&e, 0, 0, 1, 100, 200);
	off[1] = enc_ev(&e, 0, 1, 2, 150, 400);
	off[2] = enc_ev(&e, 1, 0, 1, 300, 350);
	file_of(&f, wbuf, e.len);
	no_problems(&f);
	assert_true(f.mapped);
	assert_true(f.have_epoch);
	assert_true(f.epoch_ns == 1610113734118010000ull);
	assert_int_equal(f.nmeta, 1);
	assert_int_equal(f.unknown_options, 0);
	assert_int_equal(f.nev, 3);
	assert_int_equal(off[0], 23);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(f.ev[i].off, off[i]);
		assert_int_equal(f.ev[i].size,
				 (i < 2 ? off[i + 1] : e.len) - off[i]);
		assert_int_equal(f.by_start[i], i);
	}
	assert_int_equal(f.ev[1].start, 150);
	assert_int_equal(f.ev[1].end, 400);
	assert_int_equal(f.ev[1].substream, 2);
	assert_int_equal(f.ev[1].counter, 1);
	assert_int_equal(f.ev[2].stream, 1);
	assert_int_equal(f.first_start, 100);
	assert_int_equal(f.last_end, 400);

	assert_true(heph_file_event(&f, 2, &p));
	assert_int_equal(p.start, 300);
	assert_memory_equal(p.desc, "running", 7);
	assert_true(heph_attr_next(&p, &pos, &a));
	assert_int_equal(heph_attr_u64(&a, 0), 0x1001);
	assert_false(heph_file_event(&f, 3, &p));
	heph_file_close(&f);
	assert_null(f.ev);
	assert_null(f.map);
}

static void test_metadata_anywhere(void **state)
{
	struct heph_enc e;
	struct heph_file f;
	size_t bad_epoch;

	(void)state;
	enc_start(&e);
	assert_true(heph_enc_epoch(&e, 1));
	enc_ev(&e, 0, 0, 1, 10, 20);
	/* Unknown option, odd value size: passed over by its size. */
	assert_true(heph_enc_meta(&e, "colour", "abc", 3));
	enc_ev(&e, 0, 1, 1, 30, 40);
	assert_true(heph_enc_epoch(&e, 77)); /* the last one counts */
	bad_epoch = e.len;
	assert_true(heph_enc_meta(&e, "epoch", "1234567", 7));
	assert_true(heph_enc_meta(&e, "", NULL, 0));
	enc_ev(&e, 0, 2, 1, 50, 60);
	file_of(&f, wbuf, e.len);
	assert_int_equal(f.nev, 3);
	assert_int_equal(f.nmeta, 5);
	assert_int_equal(f.unknown_options, 2);
	assert_true(f.have_epoch);
	assert_int_equal(f.epoch_ns, 77);
	assert_int_equal(f.problems_total, 1);
	has_problem(&f, 0, bad_epoch, "epoch option with a 7-byte value");
	assert_int_equal(f.skipped_bytes, 0);
	assert_int_equal(f.ev[2].start, 50);
	heph_file_close(&f);
}

static void test_substream0_and_wrap(void **state)
{
	struct heph_enc e;
	struct heph_file f;

	(void)state;
	enc_start(&e);
	enc_ev(&e, 3, 0xfffffffe, 0, 1, 2);
	enc_ev(&e, 3, 0xffffffff, 0, 2, 3);
	enc_ev(&e, 3, 0, 5, 3, 4);
	enc_ev(&e, 3, 1, 0, 4, 5);
	file_of(&f, wbuf, e.len);
	no_problems(&f);
	assert_false(f.have_epoch); /* no metadata is valid */
	assert_int_equal(f.nev, 4);
	assert_int_equal(f.ev[0].substream, 0);
	assert_int_equal(f.ev[1].counter, 0xffffffff);
	assert_int_equal(f.ev[2].counter, 0);
	assert_int_equal(f.ev[2].substream, 5);
	assert_int_equal(f.ev[3].counter, 1);
	assert_int_equal(f.ev[3].stream, 3);
	heph_file_close(&f);
}

static void test_garbage_between(void **state)
{
	struct heph_enc e;
	struct heph_file f;
	uint8_t junk[64];
	size_t a, g, b;

	(void)state;
	enc_start(&e);
	assert_true(heph_enc_epoch(&e, 1));
	a = enc_ev(&e, 0, 0, 1, 10, 20);
	g = e.len;
	/* 64 bytes of junk, with a magic inside whose size lies. */
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 7 + 3);
	put_be32(junk + 10, HEPH_EVENT_MAGIC);
	put_be32(junk + 14, 50);
	put_be32(junk + 30, HEPH_META_MAGIC);
	put_be32(junk + 34, 3);
	put_bytes(&e, junk, sizeof(junk));
	b = enc_ev(&e, 0, 1, 1, 30, 40);
	file_of(&f, wbuf, e.len);
	assert_int_equal(f.nev, 2);
	assert_int_equal(f.ev[0].off, a);
	assert_int_equal(f.ev[1].off, b);
	assert_int_equal(f.problems_total, 1);
	has_problem(&f, 0, g, "bad magic");
	has_problem(&f, 0, g, "64 bytes skipped: bad magic");
	assert_int_equal(f.skipped_bytes, 64);
	assert_false(f.truncated);
	heph_file_close(&f);

	/* A good magic with a lying size in the middle: the packet's
	 * attribute walk fails and the next packet is found. */
	enc_start(&e);
	a = enc_ev(&e, 0, 0, 1, 10, 20);
	b = enc_ev(&e, 0, 1, 1, 30, 40);
	put_be32(wbuf + a + 4, 60);
	enc_ev(&e, 0, 2, 1, 50, 60);
	file_of(&f, wbuf, e.len);
	assert_int_equal(f.nev, 2);
	assert_int_equal(f.ev[0].off, b);
	assert_int_equal(f.ev[0].counter, 1);
	has_problem(&f, 0, a, "attribute");
	assert_int_equal(f.skipped_bytes, b - a);
	heph_file_close(&f);

	/* Only garbage: one problem, everything skipped. */
	memset(wbuf, 0x11, 100);
	file_of(&f, wbuf, 100);
	assert_int_equal(f.nev, 0);
	assert_int_equal(f.problems_total, 1);
	has_problem(&f, 0, 0, "skipped to the end");
	assert_int_equal(f.skipped_bytes, 100);
	heph_file_close(&f);
}

static void test_lying_size(void **state)
{
	struct heph_enc e;
	struct heph_file f;
	size_t a, b;

	(void)state;
	/* At the end: the last packet claims more than there is. */
	enc_start(&e);
	assert_true(heph_enc_epoch(&e, 1));
	a = enc_ev(&e, 0, 0, 1, 10, 20);
	b = enc_ev(&e, 0, 1, 1, 30, 40);
	put_be32(wbuf + b + 4, (uint32_t)(e.len - b + 100));
	file_of(&f, wbuf, e.len);
	assert_true(f.truncated);
	assert_int_equal(f.nev, 1);
	assert_int_equal(f.ev[0].off, a);
	assert_int_equal(f.problems_total, 1);
	has_problem(&f, 0, b, "truncated");
	assert_int_equal(f.skipped_bytes, 0);
	heph_file_close(&f);

	/* Cut inside the last packet's header. */
	file_of(&f, wbuf, b + 5);
	assert_true(f.truncated);
	assert_int_equal(f.nev, 1);
	has_problem(&f, 0, b, "truncated");
	heph_file_close(&f);

	/* In the middle, past the end of the file, with a good packet
	 * after it: a lie, and reading goes on. */
	enc_start(&e);
	a = enc_ev(&e, 0, 0, 1, 10, 20);
	b = enc_ev(&e, 0, 1, 1, 30, 40);
	put_be32(wbuf + a + 4, 100000);
	file_of(&f, wbuf, e.len);
	assert_false(f.truncated);
	assert_int_equal(f.nev, 1);
	assert_int_equal(f.ev[0].off, b);
	has_problem(&f, 0, a,
		    "bytes skipped (the size lied): packet size 100000");
	assert_int_equal(f.skipped_bytes, b - a);
	heph_file_close(&f);
}

static void test_empty_and_errors(void **state)
{
	struct heph_file f;
	char err[256];

	(void)state;
	file_of(&f, wbuf, 0);
	no_problems(&f);
	assert_int_equal(f.nev, 0);
	assert_int_equal(f.nmeta, 0);
	assert_int_equal(f.first_start, 0);
	assert_int_equal(f.last_end, 0);
	assert_int_equal(heph_file_seek(&f, 5), 0);
	heph_file_close(&f);

	assert_false(heph_file_open(&f, "/", err, sizeof(err)));
	assert_non_null(strstr(err, "not a regular file"));
	assert_false(
		heph_file_open(&f, "/nonexistent/x.heph", err, sizeof(err)));
	assert_non_null(strstr(err, "cannot open /nonexistent/x.heph"));
	heph_file_close(&f); /* harmless after a failed open */
}

static void test_resync_gives_up(void **state)
{
	struct heph_enc e;
	struct heph_file f;
	size_t g;

	(void)state;
	enc_start(&e);
	enc_ev(&e, 0, 0, 1, 10, 20);
	g = e.len;
	memset(wbuf + g, 0, (1u << 20) + 10);
	e.len += (1u << 20) + 10;
	enc_ev(&e, 0, 1, 1, 30, 40);
	file_of(&f, wbuf, e.len);
	assert_int_equal(f.nev, 1);
	assert_int_equal(f.problems_total, 1);
	has_problem(&f, 0, g, "reading stopped");
	assert_false(f.truncated);
	heph_file_close(&f);

	/* Just under the limit: found. */
	enc_start(&e);
	enc_ev(&e, 0, 0, 1, 10, 20);
	memset(wbuf + g, 0, (1u << 20) - 10);
	e.len += (1u << 20) - 10;
	enc_ev(&e, 0, 1, 1, 30, 40);
	file_of(&f, wbuf, e.len);
	assert_int_equal(f.nev, 2);
	assert_int_equal(f.skipped_bytes, (1u << 20) - 10);
	heph_file_close(&f);
}

/* Lying packets are charged by the size they claim: many of them, each
 * claiming the rest of the file, use up the budget and reading stops. */
static void test_lies_budget(void **state)
{
	struct heph_enc e;
	struct heph_file f;
	uint8_t lie[8];
	size_t units = 0;
	char err[200];

	(void)state;
	put_be32(lie, HEPH_EVENT_MAGIC);
	put_be32(lie + 4, HEPH_PACKET_MAX);
	enc_start(&e);
	while (e.len + 200 < e.cap) {
		put_bytes(&e, lie, sizeof(lie));
		enc_ev(&e, 0, (uint32_t)units++, 1, 10, 20);
	}
	assert_true(heph_file_index_bytes(&f, wbuf, e.len, err, sizeof(err)));
	/* 256 MiB at about 4 MiB a lie. */
	assert_true(f.nev > 50 && f.nev < 80);
	assert_int_equal(f.problems_total, f.nev + 1);
	has_problem(&f, HEPHFILE_PROBLEMS - 1, f.ev[31].off - 8,
		    "8 bytes skipped (the size lied)");
	assert_int_equal(f.nproblems, HEPHFILE_PROBLEMS);
	assert_true(units > 10000);
	assert_false(f.truncated);
	heph_file_close(&f);
}

/* The problems list is bounded, the count is not. */
static void test_many_problems(void **state)
{
	struct heph_enc e;
	struct heph_file f;
	char err[200];

	(void)state;
	enc_start(&e);
	for (int i = 0; i < 50; i++) {
		enc_ev(&e, 0, (uint32_t)i, 1, 10, 20);
		put_bytes(&e, "junk", 4);
	}
	assert_true(heph_file_index_bytes(&f, wbuf, e.len, err, sizeof(err)));
	assert_false(f.mapped);
	assert_int_equal(f.nev, 50);
	assert_int_equal(f.problems_total, 50);
	assert_int_equal(f.nproblems, HEPHFILE_PROBLEMS);
	has_problem(&f, 0, f.ev[1].off - 4, "bad magic");
	has_problem(&f, HEPHFILE_PROBLEMS - 1, f.ev[HEPHFILE_PROBLEMS].off - 4,
		    "4 bytes skipped");
	/* The last 4 bytes are stray too, not a cut packet. */
	assert_false(f.truncated);
	assert_int_equal(f.skipped_bytes, 50 * 4);
	heph_file_close(&f);
}

/* ---- by start time ---- */

static void test_by_start_and_seek(void **state)
{
	static const uint64_t starts[] = {50, 10, 50, 30, 10};
	static const uint32_t want[] = {1, 4, 3, 0, 2};
	struct heph_enc e;
	struct heph_file f;

	(void)state;
	enc_start(&e);
	for (uint32_t i = 0; i < 5; i++)
		enc_ev(&e, 0, i, i, starts[i], starts[i] + 1);
	file_of(&f, wbuf, e.len);
	no_problems(&f);
	assert_memory_equal(f.by_start, want, sizeof(want));
	assert_int_equal(f.first_start, 10);
	assert_int_equal(f.last_end, 51);
	assert_int_equal(heph_file_seek(&f, 0), 0);
	assert_int_equal(heph_file_seek(&f, 10), 0);
	assert_int_equal(heph_file_seek(&f, 11), 2);
	assert_int_equal(heph_file_seek(&f, 30), 2);
	assert_int_equal(heph_file_seek(&f, 31), 3);
	assert_int_equal(heph_file_seek(&f, 50), 3);
	assert_int_equal(heph_file_seek(&f, 51), 5);
	heph_file_close(&f);
}

/* Starts 2^36 apart and more (two rounds of the sort), their low 36 bits
 * all equal (no pass in round one). */
static void test_by_start_wide(void **state)
{
	static const uint64_t starts[] = {5ull << 36, 0, 5ull << 36, 1ull << 36,
					  3ull << 50};
	static const uint32_t want[] = {1, 3, 0, 2, 4};
	struct heph_enc e;
	struct heph_file f;
	char err[200];

	(void)state;
	enc_start(&e);
	for (uint32_t i = 0; i < 5; i++)
		enc_ev(&e, 0, i, i, starts[i] + 7, starts[i] + 8);
	assert_true(heph_file_index_bytes(&f, wbuf, e.len, err, sizeof(err)));
	assert_memory_equal(f.by_start, want, sizeof(want));
	assert_int_equal(heph_file_seek(&f, (1ull << 36) + 8), 2);
	heph_file_close(&f);
}

static const uint64_t *ref_starts;

static int ref_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	if (ref_starts[a] != ref_starts[b])
		return ref_starts[a] < ref_starts[b] ? -1 : 1;
	return (a > b) - (a < b);
}

/* A large random set with wide and narrow keys against qsort with the
 * index as tie-break (= a stable sort). */
static void test_by_start_random(void **state)
{
	enum { N = 20000 };
	static uint64_t st[N];
	static uint32_t want[N];
	uint64_t rng = 88172645463325252ull;
	struct heph_enc e;
	struct heph_file f;
	char err[200];

	(void)state;
	for (int round = 0; round < 3; round++) {
		enc_start(&e);
		for (uint32_t i = 0; i < N; i++) {
			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			st[i] = round == 0   ? rng	/* every bit */
				: round == 1 ? rng % 97 /* many equal */
					     : (1ull << 40) + (rng >> 30);
			want[i] = i;
			assert_true(heph_enc_event_begin(&e, 0, i, 1, st[i],
							 st[i], "s"));
			assert_true(heph_enc_event_end(&e) > 0);
		}
		ref_starts = st;
		qsort(want, N, sizeof(want[0]), ref_cmp);
		assert_true(heph_file_index_bytes(&f, wbuf, e.len, err,
						  sizeof(err)));
		assert_int_equal(f.nev, N);
		assert_memory_equal(f.by_start, want, sizeof(want));
		assert_int_equal(f.first_start, st[want[0]]);
		for (int k = 0; k < 50; k++) {
			uint64_t t = st[(size_t)k * 397 % N];
			size_t at = heph_file_seek(&f, t);

			assert_true(st[f.by_start[at]] == t);
			assert_true(at == 0 || st[f.by_start[at - 1]] < t);
		}
		heph_file_close(&f);
	}
}

/* Garbage costs the resync budget what was looked at, not what its
 * bytes would say as a size: 640 spots of 8 0xff bytes in a 1 MiB file
 * (each "size" 4 GiB; charged as the rest of the file, they would spend
 * the 256 MiB budget halfway) are all passed over. */
static void test_garbage_is_cheap(void **state)
{
	enum { N = 16000, EVERY = 25 };
	static const uint8_t ff[8] = {0xff, 0xff, 0xff, 0xff,
				      0xff, 0xff, 0xff, 0xff};
	struct heph_enc e;
	struct heph_file f;
	char err[200];

	(void)state;
	enc_start(&e);
	for (uint32_t i = 0; i < N; i++) {
		enc_ev(&e, 1, i, 1, i, i + 1);
		if (i % EVERY == EVERY - 1)
			put_bytes(&e, ff, sizeof(ff));
	}
	assert_true(e.len > (1u << 20));
	assert_true(heph_file_index_bytes(&f, wbuf, e.len, err, sizeof(err)));
	assert_int_equal(f.nev, N);
	assert_int_equal(f.problems_total, N / EVERY);
	assert_int_equal(f.skipped_bytes, N / EVERY * 8);
	heph_file_close(&f);
}

/* Index the same bytes in one walk and in two halves at once: the same
 * events, metadata, problems and flags. */
static void split_same(const uint8_t *p, size_t n)
{
	struct heph_file a, b;
	char err[200];
	size_t keep = heph_file_split_min;

	heph_file_split_min = SIZE_MAX;
	assert_true(heph_file_index_bytes(&a, p, n, err, sizeof(err)));
	heph_file_split_min = 1;
	assert_true(heph_file_index_bytes(&b, p, n, err, sizeof(err)));
	heph_file_split_min = keep;
	assert_int_equal(a.nev, b.nev);
	assert_int_equal(a.nmeta, b.nmeta);
	assert_int_equal(a.nmeta_off, b.nmeta_off);
	assert_int_equal(a.have_epoch, b.have_epoch);
	assert_int_equal(a.epoch_ns, b.epoch_ns);
	assert_int_equal(a.unknown_options, b.unknown_options);
	assert_int_equal(a.problems_total, b.problems_total);
	assert_int_equal(a.skipped_bytes, b.skipped_bytes);
	assert_int_equal(a.truncated, b.truncated);
	assert_int_equal(a.first_start, b.first_start);
	assert_int_equal(a.last_end, b.last_end);
	assert_memory_equal(a.ev, b.ev, a.nev * sizeof(*a.ev));
	assert_memory_equal(a.by_start, b.by_start, a.nev * sizeof(uint32_t));
	for (size_t i = 0; i < a.nproblems; i++) {
		assert_int_equal(a.problems[i].off, b.problems[i].off);
		assert_string_equal(a.problems[i].what, b.problems[i].what);
	}
	heph_file_close(&a);
	heph_file_close(&b);
}

static void test_two_halves(void **state)
{
	enum { N = 4000 };
	struct heph_enc e;
	uint8_t junk[40];
	size_t mid = 0;

	(void)state;
	for (int round = 0; round < 4; round++) {
		enc_start(&e);
		assert_true(heph_enc_epoch(&e, 7));
		for (uint32_t i = 0; i < N; i++) {
			/* Out of start order in the second half. */
			uint64_t t = i < N / 2 ? i * 10ull : (N - i) * 10ull;

			if (i == N / 2)
				mid = e.len;
			enc_ev(&e, i & 3, i, 1 + i % 5, t, t + 5);
			if (round == 1 && i == N / 2 + 3) { /* junk after it */
				memset(junk, 0x75, sizeof(junk));
				put_bytes(&e, junk, sizeof(junk));
			}
			if (round == 2 && i == N * 3 / 4)
				assert_true(heph_enc_epoch(&e, 99));
		}
		if (round == 3) /* truncated in the last packet */
			e.len -= 3;
		if (round ==
		    1) /* a size that lies where the second half starts */
			put_be32(wbuf + mid + 4, 1u << 20);
		split_same(wbuf, e.len);
	}
	/* Tiny inputs: nothing, one packet, a packet cut in two. */
	enc_start(&e);
	split_same(wbuf, 0);
	enc_ev(&e, 0, 0, 1, 1, 2);
	split_same(wbuf, e.len);
	split_same(wbuf, e.len / 2);
}

/* A FIFO with no writer is refused at once, not waited on. */
static void test_fifo_refused(void **state)
{
	const char *dir = getenv("TMPDIR");
	struct heph_file f;
	char path[512], err[256] = "";

	(void)state;
	snprintf(path, sizeof(path), "%s/test-hephfile-fifo-%d",
		 dir && *dir ? dir : "/tmp", (int)getpid());
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_false(heph_file_open(&f, path, err, sizeof(err)));
	unlink(path);
	assert_non_null(strstr(err, "not a regular file"));
}

/* ---- a file truncated between the split and the walks ---- */

static char shrink_path[512];
static sigjmp_buf shrink_jb;
static volatile sig_atomic_t shrink_caught;

/* The caller's guard, as the engine's: SA_NODEFER, out by siglongjmp. */
static void shrink_guard(int sig)
{
	(void)sig;
	shrink_caught++;
	siglongjmp(shrink_jb, 1);
}

static void shrink_now(void)
{
	assert_int_equal(truncate(shrink_path, 0), 0);
}

/* One file, truncated to nothing once the split is found: both halves
 * fault.  The fault must reach the caller's guard (raised from the walk)
 * and leave SIGBUS deliverable: the second round faults again and must
 * be caught again, not kill the process (exit 135). */
static void test_split_truncated(void **state)
{
	enum { N = 20000 };
	struct sigaction sa = {.sa_handler = shrink_guard,
			       .sa_flags = SA_NODEFER},
			 old;
	const char *dir = getenv("TMPDIR");
	struct heph_enc e;
	struct heph_file f;
	char err[256];
	size_t keep = heph_file_split_min;
	volatile bool returned;
	sigset_t mask;

	(void)state;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		skip(); /* one walk: the caller's guard alone */
	enc_start(&e);
	for (uint32_t i = 0; i < N; i++)
		enc_ev(&e, i & 3, i, 1, i * 10ull, i * 10ull + 5);
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGBUS, &sa, &old), 0);
	heph_file_split_min = 1;
	heph_file_split_hook = shrink_now;
	shrink_caught = 0;
	for (volatile int round = 0; round < 2; round++) {
		int fd;

		snprintf(shrink_path, sizeof(shrink_path),
			 "%s/test-hephfile-XXXXXX", dir && *dir ? dir : "/tmp");
		fd = mkstemp(shrink_path);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, wbuf, e.len), (ssize_t)e.len);
		close(fd);
		memset(&f, 0, sizeof(f));
		returned = false;
		if (!sigsetjmp(shrink_jb, 1)) {
			heph_file_open(&f, shrink_path, err, sizeof(err));
			returned = true;
		}
		heph_file_close(&f); /* the walk left f to us */
		unlink(shrink_path);
		if (returned)
			fail_msg("round %d: the fault did not reach the "
				 "caller's guard",
				 (int)round);
		assert_int_equal(shrink_caught, round + 1);
		/* Not left blocked by the walk's escape. */
		assert_int_equal(sigprocmask(SIG_SETMASK, NULL, &mask), 0);
		assert_false(sigismember(&mask, SIGBUS));
	}
	heph_file_split_hook = NULL;
	heph_file_split_min = keep;
	sigaction(SIGBUS, &old, NULL);
}

/* A compressed file truncated to nothing after its first frame was
 * walked: the second frame's read faults, the fault reaches the caller's
 * guard, and heph_file_close frees everything -- the options' arena
 * included, which the walk held alone and leaked (LeakSanitizer, in the
 * ASan run, says so at exit). */
static void test_zst_truncated(void **state)
{
	static uint8_t z[2 << 20];
	struct sigaction sa = {.sa_handler = shrink_guard,
			       .sa_flags = SA_NODEFER},
			 old;
	const char *dir = getenv("TMPDIR");
	struct heph_enc e;
	struct heph_file f;
	char err[256];
	size_t half = 0, zn = 0;
	volatile bool returned = false;
	int fd;

	(void)state;
	/* Two frames, split between whole packets (after 1000 pairs). */
	enc_start(&e);
	for (uint32_t i = 0; i < 2000; i++) {
		uint8_t v[8] = {0};

		if (i == 1000)
			half = e.len;
		v[7] = (uint8_t)i;
		assert_true(heph_enc_meta(&e, "corotop_test", v, sizeof(v)));
		enc_ev(&e, 0, i, 1, i * 10ull, i * 10ull + 5);
	}
	zn = ZSTD_compress(z, sizeof(z), wbuf, half, 1);
	assert_false(ZSTD_isError(zn));
	{
		size_t more = ZSTD_compress(z + zn, sizeof(z) - zn, wbuf + half,
					    e.len - half, 1);

		assert_false(ZSTD_isError(more));
		zn += more;
	}
	snprintf(shrink_path, sizeof(shrink_path), "%s/test-hephfile-XXXXXX",
		 dir && *dir ? dir : "/tmp");
	fd = mkstemp(shrink_path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, z, zn), (ssize_t)zn);
	close(fd);
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGBUS, &sa, &old), 0);
	heph_file_frame_hook = shrink_now;
	shrink_caught = 0;
	memset(&f, 0, sizeof(f));
	if (!sigsetjmp(shrink_jb, 1)) {
		heph_file_open(&f, shrink_path, err, sizeof(err));
		returned = true;
	}
	heph_file_close(&f); /* the walk left f to us */
	heph_file_frame_hook = NULL;
	sigaction(SIGBUS, &old, NULL);
	unlink(shrink_path);
	if (returned)
		fail_msg("the fault did not reach the caller's guard");
	assert_int_equal(shrink_caught, 1);
}

/* A compressed file whose Heph bytes are more than COROTOP_ZST_RATIO
 * times its size plus HEPHFILE_ZST_FLOOR: refused, with a message that
 * names the variable; the same file under the default factor opens. */
static void test_zst_ratio_cap(void **state)
{
	static uint8_t z[8 << 20];
	const char *dir = getenv("TMPDIR");
	char path[512], err[512];
	struct heph_enc e;
	struct heph_file f;
	size_t zn = 0, from = 0, frame_events = 0, total = 0;
	uint32_t i = 0;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/test-hephfile-XXXXXX",
		 dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	/* 24 MiB of events, frames of about 1 MiB of whole packets. */
	while (total < ((size_t)24 << 20)) {
		enc_start(&e);
		frame_events = 0;
		while (e.len < ((size_t)1 << 20) - 256) {
			enc_ev(&e, 0, i, 1 + (i & 7), i * 10ull, i * 10ull + 5);
			i++;
			frame_events++;
		}
		from = ZSTD_compress(z + zn, sizeof(z) - zn, wbuf, e.len, 1);
		assert_false(ZSTD_isError(from));
		zn += from;
		total += e.len;
	}
	assert_true(frame_events > 0);
	assert_int_equal(write(fd, z, zn), (ssize_t)zn);
	close(fd);
	print_message("%zu bytes of events in %zu compressed (%.1fx)\n", total,
		      zn, (double)total / (double)zn);
	/* Factor 1: 24 MiB > the file + 16 MiB. */
	setenv("COROTOP_ZST_RATIO", "1", 1);
	assert_false(heph_file_open(&f, path, err, sizeof(err)));
	if (!strstr(err, "COROTOP_ZST_RATIO") ||
	    !strstr(err, "decompression bomb"))
		fail_msg("message: %s", err);
	unsetenv("COROTOP_ZST_RATIO");
	/* The default factor: read, every event. */
	assert_true(heph_file_open(&f, path, err, sizeof(err)));
	assert_int_equal(f.nev, i);
	heph_file_close(&f);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_epoch_and_events),
		cmocka_unit_test(test_metadata_anywhere),
		cmocka_unit_test(test_substream0_and_wrap),
		cmocka_unit_test(test_garbage_between),
		cmocka_unit_test(test_lying_size),
		cmocka_unit_test(test_empty_and_errors),
		cmocka_unit_test(test_resync_gives_up),
		cmocka_unit_test(test_lies_budget),
		cmocka_unit_test(test_many_problems),
		cmocka_unit_test(test_by_start_and_seek),
		cmocka_unit_test(test_by_start_wide),
		cmocka_unit_test(test_by_start_random),
		cmocka_unit_test(test_two_halves),
		cmocka_unit_test(test_split_truncated),
		cmocka_unit_test(test_zst_truncated),
		cmocka_unit_test(test_zst_ratio_cap),
		cmocka_unit_test(test_fifo_refused),
		cmocka_unit_test(test_garbage_is_cheap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
