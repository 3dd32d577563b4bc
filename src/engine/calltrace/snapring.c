/*
 * snapring: the engine's snapshot ring.  The file lives in the engine's
 * private directory next to calltrace.shm, is created O_EXCL|O_NOFOLLOW
 * with mode 0600 and sized before its header is written; the header's
 * geometry is written once, and the engine keeps its own copy (the reader
 * never re-reads it).  The announcement in the CallTrace header is written
 * magic last, before the target can map that header.
 *
 * A target that truncates the file makes reading a record fault (SIGBUS):
 * the engine reads the ring under its SIGBUS guard and checks the size with
 * snapring_size_ok after a fault, as it does for the CallTrace region.
 */
#define _GNU_SOURCE
#include "engine/calltrace/snapring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SNAPRING_FILE "snapshots.shm"

struct snapring {
	struct snapreader rd;
	void *base;
	uint64_t size;
	int fd;
	char path[512];
};

static void snapring_announce(struct snapring *r, struct ct_header *ct)
{
	struct ct_snap_desc *d = ct_snap_desc(ct);

	memset(d, 0, sizeof(*d));
	d->version = CT_SNAP_VERSION;
	d->size = sizeof(*d);
	d->region_size = r->size;
	snprintf(d->name, sizeof(d->name), "%s", SNAPRING_FILE);
	d->magic =
		CT_SNAP_MAGIC; /* last: before it, the descriptor is absent */
}

struct snapring *snapring_create(const char *dir, struct ct_header *ct,
				 uint32_t records, uint64_t grace_ns, char *err,
				 size_t errlen)
{
	struct snapring *r = calloc(1, sizeof(*r));

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->fd = -1;
	r->size = snap_region_size(records);
	if (!r->size) {
		snprintf(err, errlen,
			 "a snapshot ring of %u records is out of range (a "
			 "power of two, 2..%u)",
			 records, SNAP_RECORDS_LIMIT);
		free(r);
		return NULL;
	}
	snprintf(r->path, sizeof(r->path), "%s/%s", dir, SNAPRING_FILE);
	r->fd = open(r->path,
		     O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (r->fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", r->path,
			 strerror(errno));
		r->path[0] = '\0';
		free(r);
		return NULL;
	}
	if (ftruncate(r->fd, (off_t)r->size) < 0) {
		snprintf(err, errlen, "cannot size %s to %llu bytes: %s",
			 r->path, (unsigned long long)r->size, strerror(errno));
		snapring_destroy(r);
		return NULL;
	}
	r->base = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
		       0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		snprintf(err, errlen, "cannot map %s (%llu bytes): %s", r->path,
			 (unsigned long long)r->size, strerror(errno));
		snapring_destroy(r);
		return NULL;
	}
	snap_header_init(r->base, records, r->size, (uint32_t)getpid());
	snapreader_init(&r->rd, r->base, records, grace_ns);
	if (ct)
		snapring_announce(r, ct);
	return r;
}

void snapring_unlink(const struct snapring *r)
{
	if (r && r->path[0])
		unlink(r->path);
}

void snapring_destroy(struct snapring *r)
{
	if (!r)
		return;
	if (r->base)
		munmap(r->base, r->size);
	if (r->fd >= 0)
		close(r->fd);
	snapring_unlink(r);
	free(r);
}

const char *snapring_path(const struct snapring *r)
{
	return r->path;
}

bool snapring_size_ok(const struct snapring *r)
{
	struct stat st = {0};

	return fstat(r->fd, &st) == 0 && (uint64_t)st.st_size >= r->size;
}

struct snapreader *snapring_reader(struct snapring *r)
{
	return &r->rd;
}
