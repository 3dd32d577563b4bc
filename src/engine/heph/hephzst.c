/*
 * hephzst: a compressed Heph trace, read frame by frame.
 *
 * The file is what recfile.c writes for --record FILE.zst: independent
 * zstd frames, each holding whole Heph packets (about 1 MiB of them), and
 * at the end a skippable frame with zstd's seek table (the contrib
 * "seekable format": per frame its compressed and decompressed size, then
 * a footer with the count, a descriptor byte and magic 0x8F92EAB1).  Any
 * zstd tool decompresses it to the plain Heph bytes (skippable frames are
 * passed over).
 *
 * The walk (heph_zst_next) goes from byte 0, frame header after frame
 * header, decompressing each frame into a buffer of at most its content
 * size -- never the whole file into memory -- and hands the Heph bytes to
 * hephindex.c's packet walk.  The frames it found (file offset, offset in
 * the Heph bytes, both sizes) are its own frame table: the seek table is
 * not needed to read and is only checked against them (heph_zst_seek_check);
 * a recording cut short (corotop killed) has none, and reads up to its last
 * whole frame.
 *
 * Everything is untrusted.  A frame must say or show a content of at most
 * HEPH_ZST_FRAME_MAX bytes and at most ZST_RATIO times its compressed size
 * (plus ZST_SLACK), so that a small file cannot make the walk decompress
 * without end; one that claims more, or does not decompress, is skipped
 * with a reason, as are bytes that are no frame (up to the next frame
 * magic).  A file that ends inside a frame is cut there.
 *
 * Later reads (heph_zst_at) find the frame of an offset by binary search
 * and decompress just that frame into the least recently used of
 * HEPH_ZST_CACHE buffers; `inflated` counts every byte decompressed, so a
 * test can check that a read costs one frame.  Not thread-safe: one thread
 * reads a file at a time (as replay and convert do).
 */
#include "engine/heph/hephzst.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "common/grow.h"

#define ZST_RATIO 512u	      /* content at most this times the frame ... */
#define ZST_SLACK (16u << 10) /* ... plus this */
#define ZST_WINDOW_LOG_MAX 23 /* 8 MiB: windows larger are refused */

static uint32_t zst_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static bool zst_magic_at(const uint8_t *p, size_t left)
{
	uint32_t m;

	if (left < 4)
		return false;
	m = zst_le32(p);
	return m == HEPH_ZST_MAGIC || (m & ~0xFu) == HEPH_ZST_SKIP_MAGIC;
}

bool heph_zst_is(const uint8_t *p, size_t n)
{
	return p && n >= 4 && zst_le32(p) == HEPH_ZST_MAGIC;
}

struct heph_zst *heph_zst_create(const uint8_t *z, size_t n)
{
	struct heph_zst *zs = calloc(1, sizeof(*zs));

	if (!zs)
		return NULL;
	zs->z = z;
	zs->zsize = z ? n : 0;
	zs->seek_at = SIZE_MAX;
	for (int i = 0; i < HEPH_ZST_CACHE; i++)
		zs->slot[i].frame = SIZE_MAX;
	zs->dctx = ZSTD_createDCtx();
	if (!zs->dctx) {
		free(zs);
		return NULL;
	}
	ZSTD_DCtx_setParameter(zs->dctx, ZSTD_d_windowLogMax,
			       ZST_WINDOW_LOG_MAX);
	return zs;
}

void heph_zst_destroy(struct heph_zst *zs)
{
	if (!zs)
		return;
	for (int i = 0; i < HEPH_ZST_CACHE; i++)
		free(zs->slot[i].buf);
	ZSTD_freeDCtx(zs->dctx);
	free(zs->fr);
	if (zs->mapped && zs->z)
		munmap((void *)(uintptr_t)zs->z, zs->zsize);
	free(zs);
}

/* The least recently used buffer, made to hold n bytes (NULL: memory). */
static struct heph_zst_slot *zst_slot(struct heph_zst *zs, size_t n)
{
	struct heph_zst_slot *s = &zs->slot[0];

	for (int i = 1; i < HEPH_ZST_CACHE; i++)
		if (zs->slot[i].used < s->used)
			s = &zs->slot[i];
	s->frame = SIZE_MAX;
	if (s->cap < n) {
		uint8_t *b = realloc(s->buf, n);

		if (!b)
			return NULL;
		s->buf = b;
		s->cap = n;
	}
	s->used = ++zs->tick;
	return s;
}

/* Decompress the frame of zlen bytes at src into s (at most cap bytes):
 * its size, or -1 with why. */
static long zst_inflate(struct heph_zst *zs, struct heph_zst_slot *s,
			const uint8_t *src, size_t zlen, size_t cap, char *why,
			size_t whylen)
{
	size_t got = ZSTD_decompressDCtx(zs->dctx, s->buf, cap, src, zlen);

	if (ZSTD_isError(got)) {
		if (why)
			snprintf(why, whylen, "%s", ZSTD_getErrorName(got));
		return -1;
	}
	zs->inflated += got;
	return (long)got;
}

/* The next offset from `from` on where a frame magic is (zsize: none). */
static size_t zst_resync(const struct heph_zst *zs, size_t from)
{
	for (size_t o = from; o < zs->zsize; o++)
		if ((zs->z[o] == 0x28 || (zs->z[o] & 0xF0) == 0x50) &&
		    zst_magic_at(zs->z + o, zs->zsize - o))
			return o;
	return zs->zsize;
}

/* Bytes from pos that are no frame: skipped up to the next magic. */
static enum heph_zst_step zst_skip(struct heph_zst *zs, const char *what,
				   char *why, size_t whylen)
{
	size_t next = zst_resync(zs, zs->pos + 1);

	snprintf(why, whylen, "%zu bytes skipped (%s)", next - zs->pos, what);
	zs->frames_bad++;
	zs->pos = next;
	return HEPH_ZST_BAD;
}

/* The file ends inside what starts at pos (`what`, left bytes of it):
 * read up to the frame before, and stop; `then` says what that means. */
static enum heph_zst_step zst_cut(struct heph_zst *zs, const char *what,
				  size_t left, const char *then, char *why,
				  size_t whylen)
{
	snprintf(why, whylen, "%s cut after %zu bytes: %s", what, left, then);
	zs->truncated = true;
	zs->pos = zs->zsize;
	return HEPH_ZST_CUT;
}

static enum heph_zst_step zst_frame(struct heph_zst *zs, const uint8_t **p,
				    size_t *n, uint64_t *uoff, char *why,
				    size_t whylen)
{
	const uint8_t *src = zs->z + zs->pos;
	size_t left = zs->zsize - zs->pos;
	size_t zlen = ZSTD_findFrameCompressedSize(src, left);
	unsigned long long said;
	size_t bound, cap;
	struct heph_zst_slot *s;
	char err[96];
	long got;

	if (ZSTD_isError(zlen)) {
		if (ZSTD_getErrorCode(zlen) == ZSTD_error_srcSize_wrong &&
		    zst_resync(zs, zs->pos + 1) == zs->zsize)
			return zst_cut(zs, "last zstd frame", left,
				       "read up to the one before", why,
				       whylen);
		return zst_skip(zs, ZSTD_getErrorName(zlen), why, whylen);
	}
	said = ZSTD_getFrameContentSize(src, zlen);
	bound = zlen > (HEPH_ZST_FRAME_MAX - ZST_SLACK) / ZST_RATIO
			? HEPH_ZST_FRAME_MAX
			: zlen * ZST_RATIO + ZST_SLACK;
	if (said == ZSTD_CONTENTSIZE_ERROR)
		return zst_skip(zs, "a zstd frame header that does not parse",
				why, whylen);
	if (said != ZSTD_CONTENTSIZE_UNKNOWN && said > bound) {
		snprintf(err, sizeof(err),
			 "a zstd frame of %zu bytes that says it holds %llu "
			 "(more than %zu)",
			 zlen, said, bound);
		return zst_skip(zs, err, why, whylen);
	}
	cap = said == ZSTD_CONTENTSIZE_UNKNOWN ? bound : (size_t)said;
	if (!grow_array((void **)&zs->fr, &zs->cap_fr, zs->nfr + 1,
			sizeof(*zs->fr)) ||
	    !(s = zst_slot(zs, cap ? cap : 1))) {
		snprintf(why, whylen, "out of memory for a zstd frame");
		zs->pos = zs->zsize;
		return HEPH_ZST_CUT;
	}
	got = zst_inflate(zs, s, src, zlen, cap, err, sizeof(err));
	if (got < 0 || (said != ZSTD_CONTENTSIZE_UNKNOWN &&
			(unsigned long long)got != said)) {
		snprintf(why, whylen,
			 "a zstd frame of %zu bytes that does not decompress "
			 "(%s): skipped",
			 zlen, got < 0 ? err : "its size lied");
		zs->frames_bad++;
		zs->pos += zlen;
		return HEPH_ZST_BAD;
	}
	zs->fr[zs->nfr] = (struct heph_zst_frame){.zoff = zs->pos,
						  .uoff = zs->usize,
						  .zlen = (uint32_t)zlen,
						  .ulen = (uint32_t)got};
	zs->pos += zlen;
	if (!got) /* holds nothing: not a frame of the table */
		return HEPH_ZST_FRAME;
	s->frame = zs->nfr++;
	*p = s->buf;
	*n = (size_t)got;
	*uoff = zs->usize;
	zs->usize += (uint64_t)got;
	return HEPH_ZST_FRAME;
}

enum heph_zst_step heph_zst_next(struct heph_zst *zs, const uint8_t **p,
				 size_t *n, uint64_t *uoff, uint64_t *at,
				 char *why, size_t whylen)
{
	*p = NULL;
	*n = 0;
	*uoff = zs->usize;
	while (zs->pos < zs->zsize) {
		size_t left = zs->zsize - zs->pos;
		uint32_t m, len;

		*at = zs->pos;
		if (left < 8 && !zst_magic_at(zs->z + zs->pos, left))
			return zst_skip(zs, "not a zstd frame", why, whylen);
		m = left >= 4 ? zst_le32(zs->z + zs->pos) : 0;
		if (m == HEPH_ZST_MAGIC)
			return zst_frame(zs, p, n, uoff, why, whylen);
		if ((m & ~0xFu) != HEPH_ZST_SKIP_MAGIC)
			return zst_skip(zs, "not a zstd frame", why, whylen);
		/* A skippable frame: passed over by its size. */
		if (left < 8 ||
		    (len = zst_le32(zs->z + zs->pos + 4)) > left - 8)
			return zst_cut(zs, "a skippable frame", left,
				       "the file ends inside it", why, whylen);
		if (m == HEPH_ZST_SEEK_MAGIC)
			zs->seek_at = zs->pos;
		zs->pos += 8 + (size_t)len;
	}
	*at = zs->zsize;
	return HEPH_ZST_END;
}

bool heph_zst_seek_check(struct heph_zst *zs, char *why, size_t whylen)
{
	const uint8_t *t, *end;
	uint32_t len, nf, esize;
	uint8_t desc;

	zs->seek = HEPH_ZST_SEEK_NONE;
	if (zs->seek_at == SIZE_MAX)
		return true;
	t = zs->z + zs->seek_at;
	len = zst_le32(t + 4);
	end = t + 8 + len;
	zs->seek = HEPH_ZST_SEEK_LIES;
	if (zs->seek_at + 8 + (size_t)len != zs->zsize) {
		snprintf(why, whylen,
			 "a seek table at byte %zu that is not the file's end: "
			 "ignored",
			 zs->seek_at);
		return false;
	}
	if (len < 9 || zst_le32(end - 4) != HEPH_ZST_SEEK_FOOTER) {
		snprintf(why, whylen,
			 "a seek table without its footer: ignored");
		return false;
	}
	nf = zst_le32(end - 9);
	desc = end[-5];
	esize = desc & 0x80 ? 12 : 8;
	if ((desc & 0x7C) || (uint64_t)nf * esize + 9 != len) {
		snprintf(why, whylen,
			 "a seek table of %u frames in %u bytes (descriptor "
			 "0x%02x): ignored",
			 nf, len, desc);
		return false;
	}
	if (nf != zs->nfr) {
		snprintf(why, whylen,
			 "the seek table lists %u frames, the file has %zu: "
			 "ignored",
			 nf, zs->nfr);
		return false;
	}
	for (uint32_t i = 0; i < nf; i++) {
		const uint8_t *e = t + 8 + (size_t)i * esize;

		if (zst_le32(e) != zs->fr[i].zlen ||
		    zst_le32(e + 4) != zs->fr[i].ulen) {
			snprintf(why, whylen,
				 "the seek table says frame %u is %u bytes "
				 "(%u decompressed), the file's is %u (%u): "
				 "ignored",
				 i, zst_le32(e), zst_le32(e + 4),
				 zs->fr[i].zlen, zs->fr[i].ulen);
			return false;
		}
	}
	zs->seek = HEPH_ZST_SEEK_OK;
	return true;
}

const uint8_t *heph_zst_at(struct heph_zst *zs, uint64_t off, size_t *avail)
{
	size_t lo = 0, hi = zs->nfr, k;
	const struct heph_zst_frame *fr;
	struct heph_zst_slot *s = NULL;
	long got;

	/* The last frame starting at or before off. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (zs->fr[mid].uoff <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	k = lo - 1;
	fr = &zs->fr[k];
	if (off - fr->uoff >= fr->ulen || fr->zoff > zs->zsize ||
	    zs->zsize - fr->zoff < fr->zlen)
		return NULL;
	for (int i = 0; i < HEPH_ZST_CACHE; i++)
		if (zs->slot[i].frame == k)
			s = &zs->slot[i];
	if (s) {
		s->used = ++zs->tick;
	} else {
		s = zst_slot(zs, fr->ulen);
		if (!s)
			return NULL;
		got = zst_inflate(zs, s, zs->z + fr->zoff, fr->zlen, fr->ulen,
				  NULL, 0);
		if (got != (long)fr->ulen)
			return NULL; /* the file changed under us */
		s->frame = k;
	}
	*avail = fr->ulen - (size_t)(off - fr->uoff);
	return s->buf + (off - fr->uoff);
}
