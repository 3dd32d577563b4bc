/*
 * pathcheck: a path from the command line, looked at before it is used.
 *
 * open() of a FIFO waits for the other end -- and corotop blocks SIGINT,
 * SIGTERM and SIGHUP from the start of main, so such a wait only ends with
 * SIGKILL.  stat() never waits: paths that name files are checked with it
 * first and refused with one line naming the kind of thing they are.  The
 * opens themselves use O_NONBLOCK and fstat() where they can, for a path
 * that changes between the check and the open.
 *
 * Profiles (--folded, --speedscope) are written when corotop ends, into a
 * temporary file beside the path renamed over it: checked up front by
 * creating (and removing) such a file, so a long run's profile is not lost
 * to a typo in a directory name.
 */
#ifndef COROTOP_PATHCHECK_H
#define COROTOP_PATHCHECK_H

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/tmpbeside.h"

/* "a FIFO", "a directory", ...: what a mode is, for messages. */
static inline const char *pathcheck_kind(mode_t mode)
{
	return S_ISREG(mode)	? "a regular file"
	       : S_ISDIR(mode)	? "a directory"
	       : S_ISFIFO(mode) ? "a FIFO"
	       : S_ISSOCK(mode) ? "a socket"
	       : S_ISCHR(mode)	? "a character device"
	       : S_ISBLK(mode)	? "a block device"
				: "not a regular file";
}

/* A file corotop reads (opt: "--replay", "--shm"): false with a message
 * when path exists and is anything but a regular file.  A missing path
 * passes (the open says so). */
static inline bool pathcheck_input(const char *opt, const char *path, char *err,
				   size_t errlen)
{
	struct stat st;

	if (stat(path, &st) < 0 || S_ISREG(st.st_mode))
		return true;
	snprintf(err, errlen, "%s %s: is %s, not a regular file; give a file",
		 opt, path, pathcheck_kind(st.st_mode));
	return false;
}

/* A file corotop writes as it goes (opt: "--record", "--jsonl"): a regular
 * file or a character device (/dev/null), or nothing yet. */
static inline bool pathcheck_output(const char *opt, const char *path,
				    char *err, size_t errlen)
{
	struct stat st;

	if (stat(path, &st) < 0 || S_ISREG(st.st_mode) || S_ISCHR(st.st_mode))
		return true;
	snprintf(err, errlen,
		 "%s %s: is %s; give a regular file (or a new name)", opt, path,
		 pathcheck_kind(st.st_mode));
	return false;
}

/* A file written at the end by rename (opt: "--folded"): a regular file
 * or nothing yet -- a FIFO, a socket or a device would be replaced by the
 * rename, not written -- and a temporary file can be created beside
 * it. */
static inline bool pathcheck_replaceable(const char *opt, const char *path,
					 char *err, size_t errlen)
{
	struct stat st;
	char *tmp;
	int fd;

	if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s %s: is a directory; give a file name",
			 opt, path);
		return false;
	}
	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		snprintf(err, errlen,
			 "%s %s: is %s, which the whole file written at the "
			 "end would replace; give a regular file (or a new "
			 "name)",
			 opt, path, pathcheck_kind(st.st_mode));
		return false;
	}
	fd = tmp_beside(path, &tmp);
	if (fd < 0 && errno == ENOMEM) {
		snprintf(err, errlen, "%s %s: out of memory", opt, path);
		return false;
	}
	if (fd < 0) {
		snprintf(err, errlen,
			 "%s %s: cannot create a file there: %s; give a path "
			 "in a directory you can write",
			 opt, path, strerror(errno));
		return false;
	}
	close(fd);
	unlink(tmp);
	free(tmp);
	return true;
}

#endif
