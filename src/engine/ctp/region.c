/*
 * region: create, validate and remove the cTP shared-memory file and the
 * Unix socket the probe uses to wake a sleeping engine.
 *
 * Created regions live in a private directory made with mkdtemp (0700) under
 * $XDG_RUNTIME_DIR when that is a directory of ours, else under /tmp.  The
 * file is created 0600 with O_EXCL|O_NOFOLLOW, so nobody can pre-plant it or
 * redirect it through a symlink; the socket is bound inside the same
 * directory.  region_unlink() only calls unlink/rmdir, so a signal handler
 * can clean up.
 *
 * Opened regions (observer mode) are untrusted: the file must be a regular
 * file of ours, start with the cTP magic and version, and the station count
 * is bounded by what the file really holds, so a lying max_stations can not
 * make us read past the mapping.
 */
#define _GNU_SOURCE
#include "engine/ctp/region.h"
#include "engine/target/rundir.h"

#include "common/shmfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static void region_clear(struct region *r)
{
	memset(r, 0, sizeof(*r));
	r->listen_fd = -1;
}

static const char *region_base_dir(void)
{
	const char *x = getenv("XDG_RUNTIME_DIR");
	struct stat st;

	/* The socket path (x + "/corotop.XXXXXX/ctp.sock") must fit in
	 * sun_path; a longer runtime dir falls back to /tmp. */
	if (x && *x &&
	    strlen(x) + 24 < sizeof(((struct sockaddr_un *)0)->sun_path) &&
	    lstat(x, &st) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == geteuid() && (st.st_mode & 077) == 0)
		return x;
	return "/tmp";
}

static int region_listen(struct region *r, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(r->sock_path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path too long: %s", r->sock_path);
		return -1;
	}
	strcpy(sa.sun_path, r->sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(r->sock_path, 0600) < 0 || listen(fd, 64) < 0) {
		snprintf(err, errlen, "cannot create socket %s: %s",
			 r->sock_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

#define REGION_SHM_FILE "ctp.shm" /* in the private directory */

bool region_create(struct region *r, uint32_t stations, uint32_t hx_flags,
		   char *err, size_t errlen)
{
	return region_create_deep(r, stations, hx_flags, 0, err, errlen);
}

bool region_create_deep(struct region *r, uint32_t stations, uint32_t hx_flags,
			uint32_t depth, char *err, size_t errlen)
{
	struct ctp_header *hdr;
	struct shmfile shm;
	bool ok;

	rundir_sweep(region_base_dir()); /* what a killed corotop left */
	region_clear(r);
	if (stations == 0 || stations > CTP_MAX_STATIONS_LIMIT) {
		snprintf(err, errlen, "station count %u out of range 1..%u",
			 stations, CTP_MAX_STATIONS_LIMIT);
		return false;
	}
	if (depth && !ctp_deep_depth_ok(depth)) {
		snprintf(err, errlen,
			 "ring depth %u is not a power of two in %u..%u", depth,
			 CTP_DEEP_MIN, CTP_DEEP_MAX);
		return false;
	}
	snprintf(r->dir, sizeof(r->dir), "%s/corotop.XXXXXX",
		 region_base_dir());
	if (!mkdtemp(r->dir)) {
		snprintf(err, errlen,
			 "cannot create a private directory %s: %s", r->dir,
			 strerror(errno));
		r->dir[0] = '\0';
		return false;
	}
	r->owner = true;
	snprintf(r->shm_path, sizeof(r->shm_path), "%s/%s", r->dir,
		 REGION_SHM_FILE);
	snprintf(r->sock_path, sizeof(r->sock_path), "%s/ctp.sock", r->dir);
	snprintf(r->maps_path, sizeof(r->maps_path), "%s/%s", r->dir,
		 CTP_MAPS_FILE);
	/* Room for hubs: what the budget allows, a power of two. */
	r->hub_depth = depth ? REGION_HUB_DEPTH : 0;
	while (r->hub_depth > depth &&
	       ctp_deep_size(stations, r->hub_depth) > REGION_HUB_BUDGET)
		r->hub_depth /= 2;
	if (r->hub_depth <= depth)
		r->hub_depth = 0;
	/* The deep area's pages are touched only by stations that write. */
	r->size = ctp_region_size(stations) +
		  (depth ? ctp_deep_size(stations,
					 r->hub_depth ? r->hub_depth : depth)
			 : 0);
	/* A file that size may not be allowed (RLIMIT_FSIZE, a small
	 * filesystem): without the hubs' room, the region is what it was. */
	ok = shmfile_create(&shm, r->dir, REGION_SHM_FILE, r->size, err,
			    errlen);
	if (!ok && r->hub_depth) {
		r->hub_depth = 0;
		r->size = ctp_region_size(stations) +
			  ctp_deep_size(stations, depth);
		ok = shmfile_create(&shm, r->dir, REGION_SHM_FILE, r->size, err,
				    errlen);
	}
	if (!ok)
		goto err_file;
	/* The region unmaps and unlinks it itself (region_unlink is
	 * signal-safe): the fd is not needed once it is mapped. */
	hdr = shmfile_release(&shm);
	r->hdr = hdr;
	r->stations = stations;
	hdr->magic = CTP_MAGIC;
	hdr->version = CTP_VERSION;
	hdr->max_stations = stations;
	hdr->ext.magic = CTP_HX_MAGIC;
	hdr->ext.version = CTP_HX_VERSION;
	hdr->ext.size = sizeof(hdr->ext);
	hdr->ext.flags = hx_flags | (depth ? CTP_HX_DEEP : 0);
	hdr->ext.engine_pid = (uint32_t)getpid();
	if (depth) {
		r->deep =
			(struct ctp_deep *)(void *)((char *)hdr +
						    ctp_deep_offset(stations));
		r->deep->magic =
			r->hub_depth ? CTP_DEEP_MAGIC_HUBS : CTP_DEEP_MAGIC;
		r->deep->flags = r->hub_depth ? CTP_DEEP_HUBS : 0;
		r->deep->depth = depth;
		r->deep->hub_depth = r->hub_depth;
		r->deep->stations = stations;
		r->depth = depth;
	}
	/* Smallest group size that lets the dirty bitmap cover every station.
	 */
	while (((uint64_t)stations + (1ull << hdr->ext.dirty_shift) - 1) >>
	       hdr->ext.dirty_shift > CTP_HX_DIRTY_WORDS * 64ull)
		hdr->ext.dirty_shift++;
	r->listen_fd = region_listen(r, err, errlen);
	if (r->listen_fd < 0)
		goto err_file;
	return true;

err_file:
	region_finish(r);
	return false;
}

/*
 * An observed region's deep area, read with pread (a file that shrinks can
 * not fault us here): announced, whole, and of a depth we accept, else the
 * region is read without it.  Grows r->size to cover it.
 */
static void region_open_deep(struct region *r, int fd, uint64_t file_size)
{
	struct ctp_header hx;
	struct ctp_deep d;
	uint64_t off, need;
	uint32_t stride;

	if (pread(fd, &hx, sizeof(hx), 0) != (ssize_t)sizeof(hx) ||
	    hx.ext.magic != CTP_HX_MAGIC || !(hx.ext.flags & CTP_HX_DEEP) ||
	    hx.max_stations != r->stations)
		return;
	off = ctp_deep_offset(r->stations);
	if (pread(fd, &d, sizeof(d), (off_t)off) != (ssize_t)sizeof(d) ||
	    !(stride = ctp_deep_stride(&d)) || d.stations != r->stations)
		return;
	need = off + ctp_deep_size(r->stations, stride);
	if (need > file_size)
		return;
	r->depth = d.depth;
	r->hub_depth = stride > d.depth ? stride : 0;
	r->size = need;
}

void (*region_open_hook)(const char *path);

bool region_open(struct region *r, const char *shm_path, char *err,
		 size_t errlen)
{
	struct ctp_header *hdr, head;
	struct stat st;
	uint64_t fits;
	int fd;

	region_clear(r);
	snprintf(r->shm_path, sizeof(r->shm_path), "%s", shm_path);
	/* O_NONBLOCK: a FIFO here must not wait for a writer; fstat below
	 * refuses anything but a regular file. */
	fd = open(shm_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", shm_path,
			 strerror(errno));
		return false;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size < CTP_HEADER_SIZE) {
		snprintf(err, errlen,
			 "%s is not a cTP region (not a regular file of at "
			 "least %u bytes)",
			 shm_path, CTP_HEADER_SIZE);
		goto err_fd;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s belongs to uid %u, not to you",
			 shm_path, (unsigned)st.st_uid);
		goto err_fd;
	}
	fits = ((uint64_t)st.st_size - CTP_HEADER_SIZE) / CTP_STATION_SIZE;
	/* pread, not a mapping: a file that shrinks meanwhile gives a short
	 * read here, never a SIGBUS. */
	if (pread(fd, &head, sizeof(head), 0) != (ssize_t)sizeof(head)) {
		snprintf(err, errlen, "%s shrank while it was being opened",
			 shm_path);
		goto err_fd;
	}
	if (head.magic != CTP_MAGIC || head.version != CTP_VERSION) {
		snprintf(err, errlen,
			 "%s is not a cTP v1 region (magic 0x%016llx, version "
			 "%u)",
			 shm_path, (unsigned long long)head.magic,
			 head.version);
		goto err_fd;
	}
	r->stations = head.max_stations;
	if (r->stations > fits)
		r->stations = (uint32_t)fits;
	if (r->stations > CTP_MAX_STATIONS_LIMIT)
		r->stations = CTP_MAX_STATIONS_LIMIT;
	r->size = ctp_region_size(r->stations);
	region_open_deep(r, fd, (uint64_t)st.st_size);
	hdr = mmap(NULL, r->size, PROT_READ, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED) {
		snprintf(err, errlen, "cannot map %s: %s", shm_path,
			 strerror(errno));
		goto err_fd;
	}
	close(fd);
	r->hdr = hdr;
	if (region_open_hook)
		region_open_hook(shm_path);
	if (r->depth)
		r->deep = (struct ctp_deep *)(void *)((char *)hdr +
						      ctp_deep_offset(
							      r->stations));
	return true;

err_fd:
	close(fd);
	return false;
}

void region_unlink(const struct region *r)
{
	if (!r->owner)
		return;
	unlink(r->sock_path);
	unlink(r->shm_path);
	unlink(r->maps_path);
	rmdir(r->dir);
}

void region_finish(struct region *r)
{
	if (r->listen_fd >= 0)
		close(r->listen_fd);
	if (r->hdr)
		munmap(r->hdr, r->size);
	if (r->owner && r->dir[0])
		region_unlink(r);
	region_clear(r);
}
