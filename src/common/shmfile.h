/*
 * shmfile: a file the engine shares with its target by mapping it -- made
 * in the engine's private directory (0600, O_EXCL|O_NOFOLLOW), sized,
 * mapped shared, and unlinked when done.  The cTP region (ctp/region.c),
 * the CallTrace region (rotor) and the snapshot ring (snapring) are each
 * one.  See shmfile.c.
 */
#ifndef COROTOP_SHMFILE_H
#define COROTOP_SHMFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct shmfile {
	void *base; /* NULL: not mapped */
	uint64_t size;
	int fd;		/* -1: none */
	char path[512]; /* "": nothing to unlink */
};

/* Create `dir`/name of `size` bytes, zero-filled, and map it.  On failure
 * (a message in err) nothing is left behind: no file, no mapping. */
bool shmfile_create(struct shmfile *f, const char *dir, const char *name,
		    uint64_t size, char *err, size_t errlen);
/* Unmap, close and unlink whatever create made (after a create, failed
 * or not; twice is harmless). */
void shmfile_finish(struct shmfile *f);
/* Hand the mapping and the file over: the fd is closed, and f forgets
 * both -- the caller munmaps the `size` bytes at the returned base and
 * unlinks the path (ctp/region.c, which unlinks from a signal handler). */
void *shmfile_release(struct shmfile *f);
/* Unlink the file now; the mapping stays. */
void shmfile_unlink(const struct shmfile *f);
/* The file still holds `size` bytes (a target may truncate it); *now: the
 * size it has (-1 when fstat failed). */
bool shmfile_size_ok(const struct shmfile *f, long long *now);

#endif
