/*
 * hephfile: a Heph trace file, mapped and indexed for replay and
 * conversion: opened, closed, and its events and options decoded again
 * from the index.  Kept apart from hephindex.c, which walks the untrusted
 * bytes, so that opening, closing and reading back are found without the
 * checks of every packet around them.
 *
 * Opening maps the file read-only and indexes its bytes once
 * (heph_file_index_bytes): the walk over its packets -- what is kept of
 * each, how a lying packet is passed over, the two halves of a large file
 * and the frames of a compressed one -- is hephindex.c's.
 * Then (unless HEPH_FILE_NOSORT asks for it later) heph_file_sort orders
 * the events by start time (hephsort.c).
 *
 * The mapping is of a file other processes may change: one that is
 * truncated while mapped makes reads past its new end fault (SIGBUS).  The
 * size is taken at open; a caller that must survive a writer shrinking the
 * file under it (replay of a file still being recorded) keeps its own copy.
 * A file that changed in place only fails heph_file_event (it decodes
 * again).
 */
#define _GNU_SOURCE
#include "engine/heph/hephfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/heph/hephindex.h"
#include "engine/heph/hephzst.h"

#define HEPH_FILE_MAPPED_ (1u << 31) /* (open's own flag) a file's pages */

bool heph_file_index_bytes(struct heph_file *f, const uint8_t *p, size_t size,
			   char *err, size_t errlen)
{
	return heph_file_index_bytes_flags(f, p, size, 0, err, errlen);
}

bool heph_file_index_bytes_flags(struct heph_file *f, const uint8_t *p,
				 size_t size, unsigned flags, char *err,
				 size_t errlen)
{
	struct heph_ref *ev;
	bool ok = true;

	memset(f, 0, sizeof(*f));
	f->in_order = true;
	if (heph_zst_is(p, size)) {
		f->zst = heph_zst_create(p, size);
		if (!f->zst) {
			snprintf(err, errlen, "out of memory for zstd frames");
			if (flags & HEPH_FILE_MAPPED_)
				munmap((void *)(uintptr_t)p, size);
			return false;
		}
		/* Ours to unmap from now on (heph_file_close). */
		f->zst->mapped = flags & HEPH_FILE_MAPPED_;
		if (!heph_index_build_zst(f, f->zst, err, errlen)) {
			heph_file_close(f);
			return false;
		}
	} else {
		f->map = p;
		f->size = p ? size : 0;
		/* Ours to unmap from now on: a fault in the walk leaves f to
		 * the caller's heph_file_close. */
		f->mapped = p && (flags & HEPH_FILE_MAPPED_);
		heph_index_build(f, f->mapped);
	}
	/* Give back what doubling left unused. */
	if (f->nev) {
		ev = realloc(f->ev, f->nev * sizeof(*ev));
		if (ev)
			f->ev = ev;
	}
	if (!(flags & HEPH_FILE_NOSORT))
		ok = heph_file_sort(f, err, errlen);
	if (!ok)
		heph_file_close(f);
	return ok;
}

bool heph_file_open(struct heph_file *f, const char *path, char *err,
		    size_t errlen)
{
	return heph_file_open_flags(f, path, 0, err, errlen);
}

bool heph_file_open_flags(struct heph_file *f, const char *path, unsigned flags,
			  char *err, size_t errlen)
{
	struct stat st;
	void *map = NULL;
	int fd;

	memset(f, 0, sizeof(*f));
	/* O_NONBLOCK: a FIFO must not wait for a writer (it is refused
	 * below, as anything but a regular file is). */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path,
			 strerror(errno));
		return false;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "cannot stat %s: %s", path,
			 strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen,
			 "%s is not a regular file (record to a file, or copy "
			 "the stream into one first)",
			 path);
		goto fail;
	}
	if ((uint64_t)st.st_size > SIZE_MAX / 2) {
		snprintf(err, errlen, "%s is too large to map (%lld bytes)",
			 path, (long long)st.st_size);
		goto fail;
	}
	if (st.st_size > 0) {
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd,
			   0);
		if (map == MAP_FAILED) {
			snprintf(err, errlen, "cannot map %s (%lld bytes): %s",
				 path, (long long)st.st_size, strerror(errno));
			goto fail;
		}
	}
	close(fd);
	if (!heph_file_index_bytes_flags(f, map, (size_t)st.st_size,
					 flags | HEPH_FILE_MAPPED_, err,
					 errlen))
		return false; /* heph_file_close unmapped it */
	return true;
fail:
	close(fd);
	return false;
}

void heph_file_close(struct heph_file *f)
{
	if (f->mapped && f->map)
		munmap((void *)f->map, f->size);
	if (f->zst)
		free((void *)(uintptr_t)f->map); /* the options' arena */
	heph_zst_destroy(f->zst);
	free(f->ev);
	free(f->by_start);
	free(f->meta_off);
	memset(f, 0, sizeof(*f));
}

bool heph_file_option(const struct heph_file *f, size_t i,
		      struct heph_packet *out)
{
	uint64_t off;

	if (i >= f->nmeta_off)
		return false;
	off = f->meta_off[i];
	return off < f->size &&
	       heph_decode(f->map + off, f->size - off, out, NULL, 0) ==
		       HEPH_OK &&
	       out->kind == HEPH_META;
}

bool heph_file_event(const struct heph_file *f, size_t i,
		     struct heph_packet *out)
{
	const struct heph_ref *r;

	if (i >= f->nev)
		return false;
	r = &f->ev[i];
	if (f->zst) {
		size_t avail = 0;
		const uint8_t *p = heph_zst_at(f->zst, r->off, &avail);

		return p && avail >= r->size &&
		       heph_decode(p, r->size, out, NULL, 0) == HEPH_OK &&
		       out->kind == HEPH_EVENT && out->size == r->size;
	}
	if (r->off > f->size || f->size - r->off < r->size)
		return false;
	return heph_decode(f->map + r->off, r->size, out, NULL, 0) == HEPH_OK &&
	       out->kind == HEPH_EVENT && out->size == r->size;
}
