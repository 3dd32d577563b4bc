/*
 * recfile: the file a recording is written to -- plain Heph packets, or
 * (a name ending in .zst) independent zstd frames of whole packets with a
 * seek table at the end.  Whatever happens, the file holds only whole
 * packets (plain) or whole frames: a failed write cuts it back.  See
 * recfile.c; the compressed layout is in docs/WIRE.md.
 */
#ifndef COROTOP_RECFILE_H
#define COROTOP_RECFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RECFILE_LEVEL 3 /* zstd's level (its default) */
/* A frame is closed at HEPH_ZST_FRAME_TARGET bytes of packets, or this
 * long after its first ones: what a killed corotop loses. */
#define RECFILE_FRAME_AGE_NS 1000000000ull

struct recfile;

/* True when path asks for compression (it ends in ".zst"). */
bool recfile_wants_zstd(const char *path);

/* Create path (0600, O_NOFOLLOW; an existing file is replaced);
 * compressed when zstd.  NULL with a message. */
struct recfile *recfile_create(const char *path, bool zstd, char *err,
			       size_t errlen);
/* Append n bytes of whole packets, at time now_ns (CLOCK_MONOTONIC).
 * Plain: written at once.  Compressed: into the open frame, which is
 * written first when they do not fit.  0, or a negative errno: the file
 * was cut back to what was whole, and nothing more is written. */
int recfile_write(struct recfile *rf, const uint8_t *p, size_t n,
		  uint64_t now_ns);
/* Close the open frame if it is older than RECFILE_FRAME_AGE_NS. */
int recfile_tick(struct recfile *rf, uint64_t now_ns);
/* The last frame and the seek table (compressed); plain: nothing. */
int recfile_finish(struct recfile *rf);
/* Bytes of packets handed to recfile_write, and of them in the file. */
uint64_t recfile_given(const struct recfile *rf);
uint64_t recfile_committed(const struct recfile *rf);
/* Bytes in the file (compressed: frames and table). */
uint64_t recfile_bytes(const struct recfile *rf);
/* Close and free (NULL: no-op): 0 or a negative errno from close. */
int recfile_destroy(struct recfile *rf);

#endif
