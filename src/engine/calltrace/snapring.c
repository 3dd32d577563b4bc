/*
 * snapring: the engine's snapshot ring.  The file lives in the engine's
 * private directory next to calltrace.shm (a shmfile: O_EXCL|O_NOFOLLOW,
 * mode 0600, sized before its header is written); the header's
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/shmfile.h"

#define SNAPRING_FILE "snapshots.shm"

struct snapring {
	struct snapreader rd;
	struct shmfile file;
};

static void snapring_announce(struct snapring *r, struct ct_header *ct)
{
	struct ct_snap_desc *d = ct_snap_desc(ct);

	memset(d, 0, sizeof(*d));
	d->version = CT_SNAP_VERSION;
	d->size = sizeof(*d);
	d->region_size = r->file.size;
	snprintf(d->name, sizeof(d->name), "%s", SNAPRING_FILE);
	d->magic =
		CT_SNAP_MAGIC; /* last: before it, the descriptor is absent */
}

struct snapring *snapring_create(const char *dir, struct ct_header *ct,
				 uint32_t records, uint64_t grace_ns, char *err,
				 size_t errlen)
{
	struct snapring *r = calloc(1, sizeof(*r));
	uint64_t size = snap_region_size(records);

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (!size) {
		snprintf(err, errlen,
			 "a snapshot ring of %u records is out of range (a "
			 "power of two, 2..%u)",
			 records, SNAP_RECORDS_LIMIT);
		free(r);
		return NULL;
	}
	if (!shmfile_create(&r->file, dir, SNAPRING_FILE, size, err, errlen)) {
		free(r);
		return NULL;
	}
	snap_header_init(r->file.base, records, size, (uint32_t)getpid());
	snapreader_init(&r->rd, r->file.base, records, grace_ns);
	if (ct)
		snapring_announce(r, ct);
	return r;
}

void snapring_unlink(const struct snapring *r)
{
	if (r)
		shmfile_unlink(&r->file);
}

void snapring_destroy(struct snapring *r)
{
	if (!r)
		return;
	shmfile_finish(&r->file);
	free(r);
}

const char *snapring_path(const struct snapring *r)
{
	return r->file.path;
}

bool snapring_size_ok(const struct snapring *r)
{
	long long now;

	return shmfile_size_ok(&r->file, &now);
}

struct snapreader *snapring_reader(struct snapring *r)
{
	return &r->rd;
}
