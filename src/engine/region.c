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
#include "region.h"
#include "rundir.h"

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

bool region_create(struct region *r, uint32_t stations, uint32_t hx_flags,
		   char *err, size_t errlen)
{
	struct ctp_header *hdr;
	int fd;

	rundir_sweep(region_base_dir()); /* what a killed corotop left */
	region_clear(r);
	if (stations == 0 || stations > CTP_MAX_STATIONS_LIMIT) {
		snprintf(err, errlen, "station count %u out of range 1..%u",
			 stations, CTP_MAX_STATIONS_LIMIT);
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
	snprintf(r->shm_path, sizeof(r->shm_path), "%s/ctp.shm", r->dir);
	snprintf(r->sock_path, sizeof(r->sock_path), "%s/ctp.sock", r->dir);
	r->size = ctp_region_size(stations);
	fd = open(r->shm_path,
		  O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)r->size) < 0) {
		snprintf(err, errlen, "cannot create %s: %s", r->shm_path,
			 strerror(errno));
		goto err_file;
	}
	hdr = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED) {
		snprintf(err, errlen, "cannot map %s (%zu bytes): %s",
			 r->shm_path, r->size, strerror(errno));
		goto err_file;
	}
	close(fd);
	fd = -1;
	r->hdr = hdr;
	r->stations = stations;
	hdr->magic = CTP_MAGIC;
	hdr->version = CTP_VERSION;
	hdr->max_stations = stations;
	hdr->ext.magic = CTP_HX_MAGIC;
	hdr->ext.version = CTP_HX_VERSION;
	hdr->ext.size = sizeof(hdr->ext);
	hdr->ext.flags = hx_flags;
	hdr->ext.engine_pid = (uint32_t)getpid();
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
	if (fd >= 0)
		close(fd);
	region_finish(r);
	return false;
}

bool region_open(struct region *r, const char *shm_path, char *err,
		 size_t errlen)
{
	struct ctp_header *hdr;
	struct stat st;
	uint64_t fits;
	int fd;

	region_clear(r);
	snprintf(r->shm_path, sizeof(r->shm_path), "%s", shm_path);
	fd = open(shm_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
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
	hdr = mmap(NULL, CTP_HEADER_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED) {
		snprintf(err, errlen, "cannot map %s: %s", shm_path,
			 strerror(errno));
		goto err_fd;
	}
	if (hdr->magic != CTP_MAGIC || hdr->version != CTP_VERSION) {
		snprintf(err, errlen,
			 "%s is not a cTP v1 region (magic 0x%016llx, version "
			 "%u)",
			 shm_path, (unsigned long long)hdr->magic,
			 hdr->version);
		munmap(hdr, CTP_HEADER_SIZE);
		goto err_fd;
	}
	r->stations = hdr->max_stations;
	munmap(hdr, CTP_HEADER_SIZE);
	if (r->stations > fits)
		r->stations = (uint32_t)fits;
	if (r->stations > CTP_MAX_STATIONS_LIMIT)
		r->stations = CTP_MAX_STATIONS_LIMIT;
	r->size = ctp_region_size(r->stations);
	hdr = mmap(NULL, r->size, PROT_READ, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED) {
		snprintf(err, errlen, "cannot map %s: %s", shm_path,
			 strerror(errno));
		goto err_fd;
	}
	close(fd);
	r->hdr = hdr;
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
