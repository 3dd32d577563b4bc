/*
 * shmfile: the engine's side of a file it shares with the target by
 * mapping.  The directory is the engine's own private one (rundir.c
 * checks it), so O_EXCL|O_NOFOLLOW with mode 0600 is all the file needs:
 * nobody else can have made it, and no symlink is followed.  The file is
 * sized with ftruncate before it is mapped, so every page reads as zero
 * until written; the target maps it by name after the engine announced it.
 */
#define _GNU_SOURCE
#include "common/shmfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

bool shmfile_create(struct shmfile *f, const char *dir, const char *name,
		    uint64_t size, char *err, size_t errlen)
{
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->size = size;
	snprintf(f->path, sizeof(f->path), "%s/%s", dir, name);
	f->fd = open(f->path,
		     O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (f->fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", f->path,
			 strerror(errno));
		f->path[0] = '\0'; /* not ours to unlink */
		return false;
	}
	if (ftruncate(f->fd, (off_t)size) < 0) {
		snprintf(err, errlen, "cannot size %s to %llu bytes: %s",
			 f->path, (unsigned long long)size, strerror(errno));
		shmfile_finish(f);
		return false;
	}
	f->base =
		mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
	if (f->base == MAP_FAILED) {
		f->base = NULL;
		snprintf(err, errlen, "cannot map %s (%llu bytes): %s", f->path,
			 (unsigned long long)size, strerror(errno));
		shmfile_finish(f);
		return false;
	}
	return true;
}

void *shmfile_release(struct shmfile *f)
{
	void *base = f->base;

	if (f->fd >= 0)
		close(f->fd);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	return base;
}

void shmfile_unlink(const struct shmfile *f)
{
	if (f->path[0])
		unlink(f->path);
}

void shmfile_finish(struct shmfile *f)
{
	if (f->base)
		munmap(f->base, f->size);
	if (f->fd >= 0)
		close(f->fd);
	shmfile_unlink(f);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

bool shmfile_size_ok(const struct shmfile *f, long long *now)
{
	struct stat st;

	if (fstat(f->fd, &st) != 0) {
		*now = -1;
		return false;
	}
	*now = (long long)st.st_size;
	return (uint64_t)st.st_size >= f->size;
}
