/*
 * recfile: where --record's packets go.
 *
 * Plain (the default): each recfile_write is written at once, whole
 * packets only; a failed or short write truncates the file back to the
 * packets before it.
 *
 * Compressed (--record FILE.zst): packets are gathered into the open
 * frame, which is compressed as one independent zstd frame (level
 * RECFILE_LEVEL, content size and checksum in it) and written when the
 * next packets would take it past HEPH_ZST_FRAME_TARGET (1 MiB), when it
 * is full, or RECFILE_FRAME_AGE_NS after its first packets (recfile_tick),
 * so that a quiet recording still reaches the disk within a second.  A
 * frame holds whole packets only, so a reader decompresses at most one
 * frame, about 1 MiB, to decode any event.  At the end (recfile_finish) a
 * skippable frame holds zstd's seek table (the seekable format: per frame
 * its compressed and decompressed sizes, no checksums, then the footer:
 * frame count, descriptor 0, magic 0x8F92EAB1).  A corotop that is killed
 * leaves no table and loses the open frame: what is in the file is whole
 * frames, and a reader walks their headers (hephzst.c).  A failed write
 * cuts the file back to the frames before it.
 *
 * Books: given counts the packet bytes handed over, committed those of
 * them in the file -- in a compressed file they are in once their frame
 * is written, so the recorder counts its packets then.
 *
 * Used by the recorder's writer thread only.
 */
#define _GNU_SOURCE
#include "engine/record/recfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "common/grow.h"
#include "engine/heph/hephzst.h"

struct recfile {
	int fd;
	bool zstd;
	ZSTD_CCtx *cctx;
	uint8_t *frame; /* the open frame's packets (HEPH_ZST_FRAME_MAX) */
	size_t flen;
	uint64_t frame_t0; /* when its first packets came */
	uint8_t *out;	   /* a compressed frame */
	size_t out_cap;
	uint32_t *seek; /* per frame: compressed, decompressed size */
	size_t nseek, cap_seek;
	bool no_table; /* memory ran out for it: none is written */
	uint64_t file_len, given, committed;
	bool failed;
};

bool recfile_wants_zstd(const char *path)
{
	size_t n = strlen(path);

	return n > 4 && !strcmp(path + n - 4, ".zst");
}

struct recfile *recfile_create(const char *path, bool zstd, char *err,
			       size_t errlen)
{
	struct recfile *rf = calloc(1, sizeof(*rf));

	if (!rf) {
		snprintf(err, errlen, "out of memory for --record");
		return NULL;
	}
	rf->fd = -1;
	rf->zstd = zstd;
	if (zstd) {
		rf->cctx = ZSTD_createCCtx();
		rf->frame = malloc(HEPH_ZST_FRAME_MAX);
		rf->out_cap = ZSTD_compressBound(HEPH_ZST_FRAME_MAX);
		rf->out = malloc(rf->out_cap);
		if (!rf->cctx || !rf->frame || !rf->out ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(rf->cctx,
							ZSTD_c_compressionLevel,
							RECFILE_LEVEL)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(
			    rf->cctx, ZSTD_c_checksumFlag, 1))) {
			snprintf(err, errlen, "out of memory for --record");
			goto fail;
		}
	}
	rf->fd = open(path,
		      O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		      0600);
	if (rf->fd < 0) {
		snprintf(err, errlen, "--record %s: %s", path, strerror(errno));
		goto fail;
	}
	return rf;
fail:
	recfile_destroy(rf);
	return NULL;
}

/* Write all n bytes, or cut the file back to file_len: 0 or -errno. */
static int rf_put(struct recfile *rf, const uint8_t *p, size_t n)
{
	size_t off = 0;

	while (off < n) {
		ssize_t w = write(rf->fd, p + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : ENOSPC;

			if (ftruncate(rf->fd, (off_t)rf->file_len) < 0)
				(void)0; /* nothing better to do */
			return -e;
		}
		off += (size_t)w;
	}
	rf->file_len += n;
	return 0;
}

static int rf_fail(struct recfile *rf, int rc)
{
	rf->failed = true;
	rf->flen = 0;
	return rc;
}

/* Compress and write the open frame. */
static int rf_frame_close(struct recfile *rf)
{
	size_t z;
	int rc;

	if (!rf->flen)
		return 0;
	z = ZSTD_compress2(rf->cctx, rf->out, rf->out_cap, rf->frame, rf->flen);
	if (ZSTD_isError(z))
		return rf_fail(rf, -ENOMEM); /* the only way it fails here */
	rc = rf_put(rf, rf->out, z);
	if (rc)
		return rf_fail(rf, rc);
	if (!rf->no_table && grow_array((void **)&rf->seek, &rf->cap_seek,
					2 * rf->nseek + 2, sizeof(*rf->seek))) {
		rf->seek[2 * rf->nseek] = (uint32_t)z;
		rf->seek[2 * rf->nseek + 1] = (uint32_t)rf->flen;
		rf->nseek++;
	} else {
		rf->no_table = true;
	}
	rf->committed += rf->flen;
	rf->flen = 0;
	return 0;
}

int recfile_write(struct recfile *rf, const uint8_t *p, size_t n,
		  uint64_t now_ns)
{
	int rc;

	if (rf->failed)
		return -EIO;
	if (!n)
		return 0;
	rf->given += n;
	if (!rf->zstd) {
		rc = rf_put(rf, p, n);
		if (rc)
			return rf_fail(rf, rc);
		rf->committed += n;
		return 0;
	}
	if (n > HEPH_ZST_FRAME_MAX)
		return rf_fail(rf, -EMSGSIZE); /* no reader would take it */
	if (rf->flen && rf->flen + n > HEPH_ZST_FRAME_TARGET &&
	    (rc = rf_frame_close(rf)))
		return rc;
	if (!rf->flen)
		rf->frame_t0 = now_ns;
	memcpy(rf->frame + rf->flen, p, n);
	rf->flen += n;
	if (rf->flen >= HEPH_ZST_FRAME_TARGET)
		return rf_frame_close(rf);
	return 0;
}

int recfile_tick(struct recfile *rf, uint64_t now_ns)
{
	if (rf->failed || !rf->flen ||
	    now_ns - rf->frame_t0 < RECFILE_FRAME_AGE_NS)
		return 0;
	return rf_frame_close(rf);
}

static void rf_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int recfile_finish(struct recfile *rf)
{
	size_t len, n;
	uint8_t *t;
	int rc;

	if (rf->failed)
		return -EIO;
	if (!rf->zstd)
		return 0;
	rc = rf_frame_close(rf);
	if (rc)
		return rc;
	/* The table is an aid to seek: without it (no memory, more frames
	 * than it counts) the file is still whole. */
	if (rf->no_table || rf->nseek > UINT32_MAX / 8 - 2)
		return 0;
	len = rf->nseek * 8 + 9;
	t = malloc(8 + len);
	if (!t)
		return 0;
	rf_le32(t, HEPH_ZST_SEEK_MAGIC);
	rf_le32(t + 4, (uint32_t)len);
	for (n = 0; n < rf->nseek; n++) {
		rf_le32(t + 8 + 8 * n, rf->seek[2 * n]);
		rf_le32(t + 12 + 8 * n, rf->seek[2 * n + 1]);
	}
	rf_le32(t + 8 + len - 9, (uint32_t)rf->nseek);
	t[8 + len - 5] = 0; /* descriptor: no checksums */
	rf_le32(t + 8 + len - 4, HEPH_ZST_SEEK_FOOTER);
	rc = rf_put(rf, t, 8 + len); /* cut back on failure: still whole */
	free(t);
	return rc;
}

uint64_t recfile_given(const struct recfile *rf)
{
	return rf->given;
}

uint64_t recfile_committed(const struct recfile *rf)
{
	return rf->committed;
}

uint64_t recfile_bytes(const struct recfile *rf)
{
	return rf->file_len;
}

int recfile_destroy(struct recfile *rf)
{
	int rc = 0;

	if (!rf)
		return 0;
	if (rf->fd >= 0 && close(rf->fd) < 0)
		rc = -errno;
	ZSTD_freeCCtx(rf->cctx);
	free(rf->frame);
	free(rf->out);
	free(rf->seek);
	free(rf);
	return rc;
}
