/*
 * mapscopy: the launched program's mappings, copied once at its probe's
 * start for corotop (CTP_ENV_MAPS_PID, CTP_MAPS_FILE in corotop/ctp.h).
 *
 * A program of a few milliseconds may exit before any of corotop's
 * threads ran: its /proc/PID/maps is then empty (a zombie's) or gone,
 * and nothing it ran could be named.  The probe starts after the
 * program's libraries are loaded (the preload's constructor, or the
 * program's first call), so a copy made then holds them; corotop reads it
 * only when it kept none of its own (engine/symbols/keptmaps.c).
 *
 * Only in the process corotop launched (its pid in the environment: a
 * child or a later exec'd process of another pid copies nothing), only
 * into the directory of the region the environment names (corotop's
 * private one), at most PROBE_MAPS_MAX bytes, with errno kept: the
 * program sees no change.  It costs one read of /proc/self/maps and one
 * small write, once.
 */
#define _GNU_SOURCE
#include "probe/probe_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "corotop/ctp.h"

#define PROBE_MAPS_MAX (1u << 20)

/* All of n bytes of b to fd; false on an error. */
static bool probe_maps_write(int fd, const char *b, size_t n)
{
	while (n) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		b += w;
		n -= (size_t)w;
	}
	return true;
}

void probe_maps_copy(const char *shm)
{
	const char *want = secure_getenv(CTP_ENV_MAPS_PID);
	const char *slash = shm ? strrchr(shm, '/') : NULL;
	char path[512], buf[4096], *end;
	size_t dir, total = 0;
	int saved = errno, in = -1, out = -1;
	long pid;

	if (!want || !slash)
		return;
	pid = strtol(want, &end, 10);
	dir = (size_t)(slash - shm) + 1;
	if (*end || pid != (long)getpid() ||
	    dir + sizeof(CTP_MAPS_FILE) > sizeof(path))
		goto out;
	memcpy(path, shm, dir);
	memcpy(path + dir, CTP_MAPS_FILE, sizeof(CTP_MAPS_FILE));
	in = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (in < 0)
		goto out;
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		   0600);
	while (out >= 0 && total < PROBE_MAPS_MAX) {
		ssize_t n = read(in, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || !probe_maps_write(out, buf, (size_t)n))
			break;
		total += (size_t)n;
	}
out:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	errno = saved;
}
