/*
 * test-hephzst: compressed Heph recordings -- recfile.c's zstd frames read
 * back through hephfile (hephzst.c) event by event as the plain bytes
 * read, a recording cut inside a frame read up to the frame before, a
 * seek table that lies ignored (and a missing one not missed), frames
 * that claim too much refused, junk between frames skipped, and any event
 * decoded by decompressing at most one frame of about 1 MiB.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <zstd.h>

#include "engine/heph/hephfile.h"
#include "engine/heph/hephzst.h"
#include "engine/record/recfile.h"

#define NEV 40000

static uint8_t *plain;
static size_t plain_len;
static uint8_t *zst; /* the compressed file, as recfile wrote it */
static size_t zst_len;
static struct heph_file pf; /* plain, for reference */

/* Plain packets: an epoch, options, and NEV events with attributes. */
static void make_plain(void)
{
	size_t cap = 16u << 20;
	struct heph_enc e;
	char sym[64];

	plain = malloc(cap);
	assert_non_null(plain);
	heph_enc_init(&e, plain, cap);
	assert_true(heph_enc_epoch(&e, 1700000000000000000ull));
	assert_true(heph_enc_meta(&e, "corotop", "1", 1));
	for (uint32_t i = 0; i < NEV; i++) {
		if (i % 7 == 0) {
			uint8_t v[16] = {0};

			v[7] = (uint8_t)i;
			v[15] = (uint8_t)(i >> 8);
			assert_true(heph_enc_meta(&e, "corotop_birth", v,
						  sizeof(v)));
		}
		assert_true(heph_enc_event_begin(
			&e, 100 + i % 3, i / 3, i % 50, (uint64_t)i * 1000,
			(uint64_t)i * 1000 + 500,
			i % 2 ? "running" : "suspended"));
		assert_true(heph_enc_u64(&e, "addr", 0x400000 + i * 16));
		assert_true(heph_enc_u64(&e, "seq", i));
		snprintf(sym, sizeof(sym), "fn_%u+0x%x", i % 97, i * 13);
		assert_true(heph_enc_str(&e, "symbol", sym));
		assert_true(heph_enc_event_end(&e) > 0);
	}
	plain_len = e.len;
}

/* Write plain through recfile (chunks of whole packets, as the recorder
 * hands them over) and read the file back. */
static void make_zst(void)
{
	char path[] = "/tmp/corotop-test-hephzst-XXXXXX";
	char err[200];
	struct recfile *rf;
	size_t off = 0, chunk = 0;
	int fd = mkstemp(path);
	FILE *f;

	assert_true(fd >= 0);
	close(fd);
	rf = recfile_create(path, true, err, sizeof(err));
	assert_non_null(rf);
	while (off < plain_len) {
		struct heph_packet p;
		size_t end = off;

		/* Up to 192 KiB of whole packets. */
		while (end < plain_len && end - off < (192u << 10)) {
			assert_int_equal(heph_decode(plain + end,
						     plain_len - end, &p, NULL,
						     0),
					 HEPH_OK);
			end += p.size;
		}
		assert_int_equal(recfile_write(rf, plain + off, end - off, 0),
				 0);
		off = end;
		chunk++;
	}
	assert_int_equal(recfile_finish(rf), 0);
	assert_int_equal(recfile_committed(rf), plain_len);
	assert_int_equal(recfile_destroy(rf), 0);
	f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	zst_len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	zst = malloc(zst_len);
	assert_int_equal(fread(zst, 1, zst_len, f), zst_len);
	fclose(f);
	unlink(path);
	assert_true(chunk > 10);
}

static int setup(void **state)
{
	char err[200];

	(void)state;
	make_plain();
	make_zst();
	assert_true(
		heph_file_index_bytes(&pf, plain, plain_len, err, sizeof(err)));
	assert_int_equal(pf.nev, NEV);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	heph_file_close(&pf);
	free(plain);
	free(zst);
	return 0;
}

/* The first n events of zf are the plain file's, field by field and byte
 * by byte; so are its options. */
static void same_events(const struct heph_file *zf, size_t n)
{
	assert_int_equal(zf->nev, n);
	for (size_t i = 0; i < n; i++) {
		const struct heph_ref *a = &zf->ev[i], *b = &pf.ev[i];
		struct heph_packet x, y;

		assert_int_equal(a->off, b->off);
		assert_int_equal(a->start, b->start);
		assert_int_equal(a->end, b->end);
		assert_int_equal(a->substream, b->substream);
		assert_int_equal(a->stream, b->stream);
		assert_int_equal(a->counter, b->counter);
		assert_int_equal(a->size, b->size);
		assert_int_equal(a->kind, b->kind);
		assert_true(heph_file_event(zf, i, &x));
		assert_true(heph_file_event(&pf, i, &y));
		assert_int_equal(x.desc_len, y.desc_len);
		assert_memory_equal(x.desc, y.desc, x.desc_len);
		assert_int_equal(x.attrs_len, y.attrs_len);
		assert_memory_equal(x.attrs, y.attrs, x.attrs_len);
	}
}

static void same_options(const struct heph_file *zf, size_t n)
{
	assert_true(zf->nmeta_off >= n);
	for (size_t i = 0; i < n; i++) {
		struct heph_packet x, y;

		assert_int_equal(heph_decode(zf->map + zf->meta_off[i],
					     zf->size - zf->meta_off[i], &x,
					     NULL, 0),
				 HEPH_OK);
		assert_int_equal(heph_decode(pf.map + pf.meta_off[i],
					     pf.size - pf.meta_off[i], &y, NULL,
					     0),
				 HEPH_OK);
		assert_int_equal(x.size, y.size);
		assert_memory_equal(pf.map + pf.meta_off[i],
				    zf->map + zf->meta_off[i], x.size);
	}
}

static void round_trip(void **state)
{
	struct heph_file zf;
	char err[200];

	(void)state;
	assert_true(heph_zst_is(zst, zst_len));
	assert_false(heph_zst_is(plain, plain_len));
	assert_true(zst_len < plain_len / 2);
	assert_true(heph_file_index_bytes(&zf, zst, zst_len, err, sizeof(err)));
	assert_non_null(zf.zst);
	assert_int_equal(zf.nproblems, 0);
	assert_false(zf.truncated);
	assert_int_equal(zf.zst->seek, HEPH_ZST_SEEK_OK);
	assert_int_equal(zf.zst->usize, plain_len);
	assert_true(zf.zst->nfr >= 3);
	for (size_t k = 0; k < zf.zst->nfr; k++)
		assert_true(zf.zst->fr[k].ulen <= HEPH_ZST_FRAME_TARGET);
	assert_true(zf.have_epoch);
	assert_int_equal(zf.epoch_ns, pf.epoch_ns);
	assert_int_equal(zf.nmeta, pf.nmeta);
	assert_int_equal(zf.nmeta_off, pf.nmeta_off);
	same_options(&zf, pf.nmeta_off);
	same_events(&zf, NEV);
	/* Sorted as the plain one is. */
	for (size_t i = 0; i < NEV; i++)
		assert_int_equal(zf.by_start[i], pf.by_start[i]);
	heph_file_close(&zf);
}

/* Decoding any event decompresses at most its frame (<= 1 MiB). */
static void one_frame_per_read(void **state)
{
	struct heph_file zf;
	uint64_t rng = 88172645463325252ull;
	char err[200];

	(void)state;
	assert_true(heph_file_index_bytes(&zf, zst, zst_len, err, sizeof(err)));
	for (int k = 0; k < 300; k++) {
		struct heph_packet p;
		uint64_t before = zf.zst->inflated;
		size_t i;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		i = (size_t)(rng % zf.nev);
		assert_true(heph_file_event(&zf, i, &p));
		assert_true(zf.zst->inflated - before <= HEPH_ZST_FRAME_TARGET);
		assert_int_equal(p.start, pf.ev[i].start);
	}
	heph_file_close(&zf);
}

/* The events of the frames before offset `cut`'s frame. */
static size_t events_before(const struct heph_file *zf, uint64_t uoff)
{
	size_t n = 0;

	(void)zf;
	while (n < pf.nev && pf.ev[n].off < uoff)
		n++;
	return n;
}

static void cut_inside_a_frame(void **state)
{
	struct heph_file whole, zf;
	struct heph_zst_frame f1;
	char err[200];
	size_t cut;

	(void)state;
	assert_true(
		heph_file_index_bytes(&whole, zst, zst_len, err, sizeof(err)));
	f1 = whole.zst->fr[1];
	heph_file_close(&whole);
	cut = f1.zoff + f1.zlen / 2;
	assert_true(heph_file_index_bytes(&zf, zst, cut, err, sizeof(err)));
	assert_true(zf.truncated);
	assert_true(zf.nproblems >= 1);
	assert_non_null(strstr(zf.problems[0].what, "cut"));
	assert_int_equal(zf.zst->seek, HEPH_ZST_SEEK_NONE);
	same_events(&zf, events_before(&zf, f1.uoff));
	heph_file_close(&zf);
	/* Cut between two frames: whole frames, nothing wrong. */
	assert_true(heph_file_index_bytes(&zf, zst, f1.zoff, err, sizeof(err)));
	assert_false(zf.truncated);
	assert_int_equal(zf.nproblems, 0);
	same_events(&zf, events_before(&zf, f1.uoff));
	heph_file_close(&zf);
}

/* Where the seek table starts: the last frame's end. */
static size_t table_at(void)
{
	struct heph_file zf;
	char err[200];
	size_t at;

	assert_true(heph_file_index_bytes(&zf, zst, zst_len, err, sizeof(err)));
	at = zf.zst->fr[zf.zst->nfr - 1].zoff +
	     zf.zst->fr[zf.zst->nfr - 1].zlen;
	heph_file_close(&zf);
	return at;
}

static void seek_table_missing_or_lying(void **state)
{
	uint8_t *z = malloc(zst_len);
	struct heph_file zf;
	size_t at = table_at();
	char err[200];

	(void)state;
	assert_non_null(z);
	/* Killed before the table: no table, nothing wrong. */
	assert_true(heph_file_index_bytes(&zf, zst, at, err, sizeof(err)));
	assert_int_equal(zf.zst->seek, HEPH_ZST_SEEK_NONE);
	assert_int_equal(zf.nproblems, 0);
	same_events(&zf, NEV);
	heph_file_close(&zf);
	/* A table whose second entry lies about its decompressed size. */
	memcpy(z, zst, zst_len);
	z[at + 8 + 8 + 4] ^= 0x40;
	assert_true(heph_file_index_bytes(&zf, z, zst_len, err, sizeof(err)));
	assert_int_equal(zf.zst->seek, HEPH_ZST_SEEK_LIES);
	assert_int_equal(zf.nproblems, 1);
	assert_non_null(strstr(zf.problems[0].what, "ignored"));
	same_events(&zf, NEV);
	heph_file_close(&zf);
	/* One whose frame count lies. */
	memcpy(z, zst, zst_len);
	z[zst_len - 9] += 1;
	assert_true(heph_file_index_bytes(&zf, z, zst_len, err, sizeof(err)));
	assert_int_equal(zf.zst->seek, HEPH_ZST_SEEK_LIES);
	same_events(&zf, NEV);
	heph_file_close(&zf);
	free(z);
}

static void junk_between_frames(void **state)
{
	struct heph_file whole, zf;
	size_t at, n = zst_len + 100;
	uint8_t *z = malloc(n);
	char err[200];

	(void)state;
	assert_non_null(z);
	assert_true(
		heph_file_index_bytes(&whole, zst, zst_len, err, sizeof(err)));
	at = whole.zst->fr[1].zoff;
	heph_file_close(&whole);
	memcpy(z, zst, at);
	memset(z + at, 0xAB, 100);
	memcpy(z + at + 100, zst + at, zst_len - at);
	assert_true(heph_file_index_bytes(&zf, z, n, err, sizeof(err)));
	assert_int_equal(zf.nproblems, 1);
	assert_non_null(strstr(zf.problems[0].what, "100 bytes skipped"));
	same_events(&zf, NEV);
	heph_file_close(&zf);
	free(z);
}

/* A frame that says (or turns out) to hold more than the cap is refused;
 * the frames after it are read. */
static void frame_too_large(void **state)
{
	size_t big = HEPH_ZST_FRAME_MAX + 4096, cap = ZSTD_compressBound(big);
	uint8_t *src = calloc(1, big), *z = malloc(cap + zst_len);
	struct heph_file zf;
	char err[200];
	size_t n;

	(void)state;
	assert_non_null(src);
	assert_non_null(z);
	n = ZSTD_compress(z, cap, src, big, 1);
	assert_false(ZSTD_isError(n));
	memcpy(z + n, zst, zst_len);
	assert_true(
		heph_file_index_bytes(&zf, z, n + zst_len, err, sizeof(err)));
	assert_true(zf.nproblems >= 1);
	assert_non_null(strstr(zf.problems[0].what, "says it holds"));
	same_events(&zf, NEV);
	assert_true(zf.zst->inflated <= 2 * plain_len);
	heph_file_close(&zf);
	free(src);
	free(z);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(one_frame_per_read),
		cmocka_unit_test(cut_inside_a_frame),
		cmocka_unit_test(seek_table_missing_or_lying),
		cmocka_unit_test(junk_between_frames),
		cmocka_unit_test(frame_too_large),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
