/*
 * hephzst: a compressed Heph trace read frame by frame -- independent zstd
 * frames of whole packets, walked once in file order (each decompressed
 * into a bounded buffer), then read back by uncompressed offset through a
 * small cache of decompressed frames.  The seek table a writer leaves at
 * the end (zstd's seekable format) is checked against the frames, never
 * trusted.  See hephzst.c; the layout is in docs/WIRE.md ("Compressed
 * recordings").
 */
#ifndef COROTOP_HEPHZST_H
#define COROTOP_HEPHZST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HEPH_ZST_MAGIC 0xFD2FB528u	/* a zstd frame (little-endian) */
#define HEPH_ZST_SKIP_MAGIC 0x184D2A50u /* skippable frames: low 4 bits any */
#define HEPH_ZST_SEEK_MAGIC 0x184D2A5Eu /* ... the seek table's */
#define HEPH_ZST_SEEK_FOOTER 0x8F92EAB1u
/* What a writer puts in a frame (recfile.c): whole packets, up to this many
 * bytes of them. */
#define HEPH_ZST_FRAME_TARGET (1u << 20)
/* A frame whose content is larger is refused (a lie, or another writer's
 * frames: recompress with corotop). */
#define HEPH_ZST_FRAME_MAX (4u << 20)
#define HEPH_ZST_CACHE 4 /* decompressed frames kept */

struct heph_zst_frame {
	uint64_t zoff; /* in the file */
	uint64_t uoff; /* of its first byte in the Heph bytes */
	uint32_t zlen, ulen;
};

enum heph_zst_seek {
	HEPH_ZST_SEEK_NONE = 0, /* no seek table (a recording cut short) */
	HEPH_ZST_SEEK_OK,	/* one, and it agrees with the frames */
	HEPH_ZST_SEEK_LIES,	/* one that does not: ignored */
};

struct heph_zst_slot {
	size_t frame; /* SIZE_MAX: empty */
	uint8_t *buf;
	size_t cap;
	uint64_t used; /* tick of the last use */
};

struct heph_zst {
	const uint8_t *z; /* the compressed file */
	size_t zsize;
	bool mapped; /* z is ours to unmap */
	struct heph_zst_frame *fr;
	size_t nfr, cap_fr;
	uint64_t usize; /* Heph bytes in the frames walked */
	size_t pos;	/* the walk: the next frame's offset in z */
	size_t seek_at; /* the last seek-table frame seen (SIZE_MAX: none) */
	void *dctx;	/* ZSTD_DCtx */
	struct heph_zst_slot slot[HEPH_ZST_CACHE];
	uint64_t tick;
	uint64_t inflated; /* bytes decompressed, open walk included */
	uint64_t frames_bad;
	enum heph_zst_seek seek;
	bool truncated; /* the file ends inside a frame */
};

/* A zstd frame starts at p (the test hephfile makes at byte 0). */
bool heph_zst_is(const uint8_t *p, size_t n);

/* Read the n bytes at z (they must stay there while it is used).  NULL
 * when memory runs out. */
struct heph_zst *heph_zst_create(const uint8_t *z, size_t n);
/* NULL is a no-op; unmaps z when mapped was set. */
void heph_zst_destroy(struct heph_zst *zs);

enum heph_zst_step {
	HEPH_ZST_FRAME, /* *p, *n: the next frame's Heph bytes, from *uoff */
	HEPH_ZST_BAD,	/* bytes that are no frame, skipped: why says so */
	HEPH_ZST_END,	/* no more frames */
	HEPH_ZST_CUT,	/* the file ends inside a frame: why says so */
};

/* The walk, frame after frame; *at is the file offset of what it found.
 * A frame's bytes stay valid until the next call. */
enum heph_zst_step heph_zst_next(struct heph_zst *zs, const uint8_t **p,
				 size_t *n, uint64_t *uoff, uint64_t *at,
				 char *why, size_t whylen);
/* After the walk: the seek table checked against the frames found (sets
 * zs->seek); false with why when it lies. */
bool heph_zst_seek_check(struct heph_zst *zs, char *why, size_t whylen);

/* The Heph bytes at uncompressed offset off, to the end of their frame
 * (*avail); NULL when no frame holds off or it no longer decompresses.
 * They stay valid until HEPH_ZST_CACHE other frames have been read. */
const uint8_t *heph_zst_at(struct heph_zst *zs, uint64_t off, size_t *avail);

#endif
