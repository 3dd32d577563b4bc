/*
 * fuzz-hephzst: the compressed Heph reader (hephzst.c, through hephfile)
 * against arbitrary bytes -- a compressed recording is whatever a killed
 * corotop, another writer or a disk left there.
 *
 * The first input byte picks raw or built.  Raw: the rest of the input is
 * the file (after the zstd magic, so that the compressed path is taken).
 * Built: the rest drives a small Heph trace (options and events), cut
 * into zstd frames where the input says (at packet boundaries, or not),
 * with skippable frames, junk and a seek table (true, or lying) between
 * and after them, then maybe a few byte edits and a cut, so that random
 * inputs reach the frame walk's every way out and not only "bad magic".
 * Nothing may crash, hang or read outside the bytes, and:
 *   - frames cut at packet boundaries and left alone read back as exactly
 *     the plain trace's events (same offsets, same fields) and options;
 *   - every event the index holds decodes again to its fields, and doing
 *     so decompresses at most one frame (HEPH_ZST_FRAME_MAX);
 *   - every option kept decodes inside the options' arena; problems
 *     recorded <= HEPHFILE_PROBLEMS <= seen; truncated says why;
 *   - an untouched true seek table is found true.
 *
 * Built as a libFuzzer target with clang (-Dfuzz=true) and, always, with
 * tests/fuzz/driver.c, which replays a seeded pseudo-random corpus.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "fuzzin.h"
#include "engine/heph/hephfile.h"
#include "engine/heph/hephzst.h"

#define FZ_PLAIN 16384u
#define FZ_OUT 65536u

static void fz_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The file's index, checked; when want (the plain trace's index) is
 * given, it must be the same. */
static void check(const uint8_t *p, size_t n, const struct heph_file *want,
		  bool table_true)
{
	struct heph_file f;
	struct heph_packet pk;
	char err[128];

	if (!heph_file_index_bytes(&f, p, n, err, sizeof(err)))
		abort(); /* only out of memory */
	if (!f.zst || f.nproblems > HEPHFILE_PROBLEMS ||
	    f.nproblems > f.problems_total ||
	    (f.problems_total <= HEPHFILE_PROBLEMS &&
	     f.nproblems != f.problems_total) ||
	    (f.truncated && !f.nproblems) || f.mapped)
		abort();
	for (size_t i = 0; i < f.nev; i++) {
		const struct heph_ref *r = &f.ev[i];
		uint64_t before = f.zst->inflated;

		if (r->off > f.zst->usize || r->size > f.zst->usize - r->off ||
		    (i && f.ev[i - 1].off + f.ev[i - 1].size > r->off))
			abort();
		if (!heph_file_event(&f, i, &pk) || pk.start != r->start ||
		    pk.end != r->end || pk.stream != r->stream ||
		    pk.substream != r->substream || pk.counter != r->counter)
			abort();
		if (f.zst->inflated - before > HEPH_ZST_FRAME_MAX)
			abort();
	}
	if (heph_file_event(&f, f.nev, &pk))
		abort();
	for (size_t i = 0; i < f.nmeta_off; i++)
		if (f.meta_off[i] >= f.size ||
		    heph_decode(f.map + f.meta_off[i], f.size - f.meta_off[i],
				&pk, NULL, 0) != HEPH_OK ||
		    pk.kind != HEPH_META)
			abort();
	for (size_t k = 0; k < f.zst->nfr; k++)
		if (f.zst->fr[k].ulen > HEPH_ZST_FRAME_MAX ||
		    !f.zst->fr[k].ulen)
			abort();
	if (want) {
		if (f.nev != want->nev || f.nmeta != want->nmeta ||
		    f.nmeta_off != want->nmeta_off ||
		    f.nproblems != want->nproblems ||
		    (table_true && f.zst->seek != HEPH_ZST_SEEK_OK))
			abort();
		for (size_t i = 0; i < f.nev; i++)
			if (memcmp(&f.ev[i], &want->ev[i], sizeof(f.ev[i])))
				abort();
	}
	/* Out of the walk's order, and again (the cache). */
	for (size_t i = f.nev; i-- > 0 && i + 16 > f.nev;)
		if (!heph_file_event(&f, i, &pk))
			abort();
	heph_file_close(&f);
}

/* A small trace the input chooses, into plain: its length. */
static size_t build_plain(uint8_t *plain, struct fz_in *in)
{
	struct heph_enc e;
	unsigned n = 1 + fz_u8(in) % 200;

	heph_enc_init(&e, plain, FZ_PLAIN);
	heph_enc_epoch(&e, 1);
	for (unsigned i = 0; i < n && in->pos < in->n; i++) {
		uint8_t op = fz_u8(in);

		if (op % 5 == 0) {
			uint8_t v[8] = {op, 1, 2, 3, 4, 5, 6, 7};

			heph_enc_meta(&e, op & 8 ? "corotop_birth" : "x", v,
				      op % 9);
			continue;
		}
		heph_enc_event_begin(&e, op % 3, i, fz_u8(in), fz_u16(in),
				     0x10000u + fz_u16(in),
				     op & 1 ? "running" : "suspended");
		heph_enc_u64(&e, "addr", op);
		if (op & 2)
			heph_enc_str(&e, "symbol", "f");
		heph_enc_event_end(&e);
	}
	return e.len;
}

/* plain cut into frames (at packet boundaries when whole), with junk,
 * skippable frames and a seek table as the input says: the file's
 * length in out; *table_true when the table is there and true. */
static size_t build_zst(uint8_t *out, const uint8_t *plain, size_t len,
			struct fz_in *in, bool whole, bool *table_true)
{
	uint32_t sizes[2 * 64];
	size_t o = 0, off = 0, nf = 0;
	uint8_t mode = fz_u8(in);

	while (off < len && nf < 64) {
		size_t end = off, want = 1 + fz_u16(in) % 4096, z;

		if (whole) {
			struct heph_packet p;

			while (end < len && end - off < want &&
			       heph_decode(plain + end, len - end, &p, NULL,
					   0) == HEPH_OK)
				end += p.size;
			if (end == off)
				end = len;
		} else {
			end = off + want < len ? off + want : len;
		}
		if (!whole && (mode & 1) && o + 12 < FZ_OUT) {
			/* A skippable frame of junk (not the table's). */
			fz_le32(out + o, HEPH_ZST_SKIP_MAGIC + 1);
			fz_le32(out + o + 4, 4);
			memset(out + o + 8, fz_u8(in), 4);
			o += 12;
		}
		if (o + 1024 + ZSTD_compressBound(end - off) > FZ_OUT)
			break;
		z = ZSTD_compress(out + o, FZ_OUT - o - 1024, plain + off,
				  end - off, 1);
		if (ZSTD_isError(z))
			return o;
		sizes[2 * nf] = (uint32_t)z;
		sizes[2 * nf + 1] = (uint32_t)(end - off);
		nf++;
		o += z;
		off = end;
	}
	*table_true = false;
	if (mode & 2) { /* the seek table, perhaps lying */
		uint32_t flen = (uint32_t)(nf * 8 + 9);

		fz_le32(out + o, HEPH_ZST_SEEK_MAGIC);
		fz_le32(out + o + 4, flen);
		memcpy(out + o + 8, sizes, nf * 8);
		fz_le32(out + o + 8 + nf * 8, (uint32_t)nf);
		out[o + 12 + nf * 8] = 0;
		fz_le32(out + o + 13 + nf * 8, HEPH_ZST_SEEK_FOOTER);
		*table_true = off == len;
		if (mode & 4 && nf) {
			out[o + 8 + (fz_u8(in) % (nf * 8))] ^= 1;
			*table_true = false;
		}
		o += 8 + flen;
	}
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t plain[FZ_PLAIN], out[FZ_OUT], raw[FZ_OUT];
	struct fz_in in = {data, size, 1};
	struct heph_file want;
	bool whole, table_true = false;
	size_t len, n;
	char err[128];

	if (size == 0 || !(data[0] & 1)) {
		/* Raw, after the magic. */
		n = size > 1 ? size - 1 : 0;
		if (n > FZ_OUT - 4)
			n = FZ_OUT - 4;
		fz_le32(raw, HEPH_ZST_MAGIC);
		if (n)
			memcpy(raw + 4, data + 1, n);
		check(raw, n + 4, NULL, false);
		return 0;
	}
	whole = data[0] & 2;
	len = build_plain(plain, &in);
	n = build_zst(out, plain, len, &in, whole, &table_true);
	if (!n || !heph_zst_is(out, n))
		return 0;
	if (whole && table_true) {
		if (!heph_file_index_bytes(&want, plain, len, err, sizeof(err)))
			abort();
		check(out, n, &want, true);
		heph_file_close(&want);
	} else {
		check(out, n, NULL, false);
	}
	/* Edits: a byte here and there, a cut. */
	for (int k = 0; k < 4 && in.pos < in.n && n > 4; k++) {
		size_t at = 4 + (size_t)fz_u16(&in) % (n - 4);
		uint8_t v = fz_u8(&in);

		if (v & 1)
			out[at] = v;
		else
			n = at + (v >> 1) % (n - at);
	}
	check(out, n, NULL, false);
	return 0;
}
