/*
 * rundir: sweeping the private run directories that a corotop killed with
 * SIGKILL leaves behind (ctp.shm, calltrace.shm, the socket: 40 MB and
 * more each), the way tmux and systemd clean their runtime directories.
 *
 * Who a directory serves.  Once corotop launched its target it writes
 * `pids` into the directory (0600, O_EXCL|O_NOFOLLOW): corotop, the keeper
 * that holds the target's socket (keeper.c), the target.  Each line is
 * "PID START", START
 * being the process's start time in clock ticks after boot (/proc/PID/stat
 * field 22), so that a pid reused by another process does not count as
 * alive.  A directory without `pids` is judged by the engine's pid in its
 * ctp.shm header, read with pread (no mapping, so no SIGBUS): that process
 * is corotop only if it started before the directory was last changed.
 * That covers a corotop killed before it launched anything, an older
 * corotop, and attach mode (corotop -p), whose target is not corotop's:
 * its probe lets go of the files by itself once the agent is gone
 * (src/probe/rendezvous.c), and an unlink never disturbs a mapping anyway.
 *
 * The sweep (rundir_sweep, at the start of region_create) opens the base
 * directory once and works relative to it: an entry is a candidate only
 * when lstat says it is a real directory named corotop.XXXXXX, of our uid,
 * mode 0700 (mkdtemp's), and the directory opened with O_NOFOLLOW is the
 * one that was checked (same device and inode).  A stale one loses its
 * entries through unlinkat on its own descriptor (never following a
 * symlink, never descending into a subdirectory, never touching another
 * uid's file), then itself with rmdir, which fails harmlessly if anything
 * is left.  Anything that can not be read or proven stale is kept: a wrong
 * "stale" would pull the files from under a live corotop.
 */
#define _GNU_SOURCE
#include "engine/target/rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "corotop/ctp.h"

#define RUNDIR_PREFIX "corotop."
#define RUNDIR_NAME_LEN (sizeof(RUNDIR_PREFIX) - 1 + 6)
/* The pid in ctp.shm is corotop's if that process started before the
 * directory last changed; this much slack for clocks read apart. */
#define RUNDIR_SLACK_S 2

uint64_t rundir_start_time(pid_t pid)
{
	char path[32] = "/proc/", digits[12], buf[1024], *p, *end;
	unsigned u = (unsigned)pid;
	size_t nd = 0, at = 6;
	uint64_t v = 0;
	ssize_t got;
	int fd, field;

	if (pid <= 0)
		return 0;
	/* By hand, not snprintf: the keeper calls this after fork. */
	do
		digits[nd++] = (char)('0' + u % 10);
	while ((u /= 10));
	while (nd)
		path[at++] = digits[--nd];
	memcpy(path + at, "/stat", 6);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (got <= 0)
		return 0;
	buf[got] = '\0';
	/* "pid (comm) state ...": comm may hold anything, ')' included. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return 0;
	p += 2; /* field 3, the state */
	if (*p == 'Z' || *p == 'X')
		return 0; /* a zombie holds no descriptor and no mapping */
	for (field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (!p)
			return 0;
		p++;
	}
	for (end = p; *end >= '0' && *end <= '9'; end++)
		v = v * 10 + (uint64_t)(*end - '0');
	return end > p ? v : 0;
}

bool rundir_record(const char *dir, const pid_t *pids, size_t n)
{
	char path[512], buf[RUNDIR_MAX_PIDS * 48];
	size_t len = 0;
	bool ok;
	int fd;

	if (n > RUNDIR_MAX_PIDS || snprintf(path, sizeof(path), "%s/%s", dir,
					    RUNDIR_PIDS) >= (int)sizeof(path))
		return false;
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(
			buf + len, sizeof(buf) - len, "%d %llu\n", (int)pids[i],
			(unsigned long long)rundir_start_time(pids[i]));
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0)
		return false;
	/* One write: a sweep reading it early sees it whole or empty (and
	 * an empty one is judged by ctp.shm, whose corotop is alive). */
	ok = write(fd, buf, len) == (ssize_t)len;
	return close(fd) == 0 && ok;
}

/* A regular file of ours in `dfd`, opened without following a symlink and
 * without blocking (a FIFO planted under the name is refused). */
static int rundir_open_own(int dfd, const char *name, struct stat *st)
{
	int fd = openat(dfd, name,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode) ||
	    st->st_uid != geteuid()) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A process recorded with its start time: alive if a process of that pid
 * started then (0 recorded: whether any process has that pid). */
static bool rundir_alive(pid_t pid, uint64_t start)
{
	uint64_t now = rundir_start_time(pid);

	if (pid <= 0)
		return false;
	if (start)
		return now == start;
	return now != 0 || kill(pid, 0) == 0 || errno == EPERM;
}

/* 1: every process named in `pids` is gone; 0: one is alive; -1: no
 * usable file. */
static int rundir_pids_gone(int dfd)
{
	char buf[RUNDIR_MAX_PIDS * 48 + 1], *p;
	struct stat st;
	int fd = rundir_open_own(dfd, RUNDIR_PIDS, &st), seen = 0;
	ssize_t got;

	if (fd < 0)
		return -1;
	got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (got <= 0)
		return -1;
	buf[got] = '\0';
	for (p = buf; *p;) {
		char *end;
		long pid = strtol(p, &end, 10);
		unsigned long long start;

		if (end == p || *end != ' ')
			return -1;
		p = end + 1;
		start = strtoull(p, &end, 10);
		if (end == p || *end != '\n')
			return -1;
		p = end + 1;
		if (rundir_alive((pid_t)pid, start))
			return 0;
		seen++;
	}
	return seen ? 1 : -1;
}

/* No `pids`: the engine's pid from the ctp.shm header.  Stale when no
 * process has it, or the one that has it started after the directory
 * last changed (so it is not the corotop that made it). */
static bool rundir_header_gone(int dfd, const struct stat *dir)
{
	struct ctp_header hdr;
	struct timespec real, boot;
	struct stat st;
	uint64_t start;
	long tck = sysconf(_SC_CLK_TCK);
	int fd = rundir_open_own(dfd, "ctp.shm", &st);
	ssize_t got;
	double started;

	if (fd < 0)
		return false;
	got = pread(fd, &hdr, sizeof(hdr), 0);
	close(fd);
	if (got != (ssize_t)sizeof(hdr) || hdr.magic != CTP_MAGIC ||
	    hdr.ext.magic != CTP_HX_MAGIC || hdr.ext.engine_pid == 0 ||
	    hdr.ext.engine_pid > INT32_MAX)
		return false;
	start = rundir_start_time((pid_t)hdr.ext.engine_pid);
	if (start == 0)
		return kill((pid_t)hdr.ext.engine_pid, 0) < 0 && errno == ESRCH;
	if (tck <= 0 || clock_gettime(CLOCK_REALTIME, &real) < 0 ||
	    clock_gettime(CLOCK_BOOTTIME, &boot) < 0)
		return false;
	/* Start times count boot-time ticks: as wall time, now minus how
	 * long ago it was. */
	started = (double)real.tv_sec -
		  ((double)boot.tv_sec + (double)boot.tv_nsec / 1e9 -
		   (double)start / (double)tck);
	return started > (double)dir->st_mtime + RUNDIR_SLACK_S;
}

/* Unlink every non-directory entry of ours, then the directory. */
static void rundir_remove(int base_fd, int dfd, const char *name)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		unlinkat(dfd, de->d_name, 0);
	}
	closedir(d);
	unlinkat(base_fd, name, AT_REMOVEDIR);
}

/* One candidate: checked, judged, removed if stale. */
static void rundir_consider(int base_fd, const char *name)
{
	struct stat st, again;
	int dfd, gone;

	if (strlen(name) != RUNDIR_NAME_LEN ||
	    strncmp(name, RUNDIR_PREFIX, sizeof(RUNDIR_PREFIX) - 1))
		return;
	if (fstatat(base_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 07777) != 0700)
		return;
	dfd = openat(base_fd, name,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return;
	if (fstat(dfd, &again) < 0 || again.st_dev != st.st_dev ||
	    again.st_ino != st.st_ino) {
		close(dfd);
		return;
	}
	gone = rundir_pids_gone(dfd);
	if (gone < 0)
		gone = rundir_header_gone(dfd, &again);
	if (gone > 0)
		rundir_remove(base_fd, dfd, name);
	close(dfd);
}

void rundir_sweep(const char *base)
{
	int base_fd, fd;
	DIR *d;
	struct dirent *de;

	/* Without /proc nothing can be proven stale. */
	if (!base || rundir_start_time(getpid()) == 0)
		return;
	base_fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (base_fd < 0)
		return;
	fd = dup(base_fd);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		close(base_fd);
		return;
	}
	while ((de = readdir(d)))
		rundir_consider(base_fd, de->d_name);
	closedir(d);
	close(base_fd);
}
