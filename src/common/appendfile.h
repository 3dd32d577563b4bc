/*
 * appendfile: a log file opened for appending -- the --jsonl event log and
 * the target's --output.  Created 0600 if missing; an existing file is
 * extended, never truncated; a symbolic link as the last component is
 * refused (O_NOFOLLOW), and so is anything but a regular file or a
 * character device (/dev/null, /dev/full, a terminal): a FIFO would block
 * the writer, a directory is a mistake.  The open itself does not wait: a
 * FIFO without a reader fails (ENXIO) or is refused, not waited on; the
 * descriptor blocks again once it is known to be a file.
 */
#ifndef COROTOP_APPENDFILE_H
#define COROTOP_APPENDFILE_H

/* O_CLOEXEC, O_NOFOLLOW: the including file defines _GNU_SOURCE. */
#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * path opened for appending: its fd, and *st its fstat.  -1 when it
 * cannot be: *refused false and errno set when the open failed, *refused
 * true when it opened but is not a file to append to (then the caller
 * says "not a regular file").
 */
static inline int appendfile_open(const char *path, struct stat *st,
				  bool *refused)
{
	int fd = open(path,
		      O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW |
			      O_NONBLOCK,
		      0600);

	*refused = false;
	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0 ||
	    !(S_ISREG(st->st_mode) || S_ISCHR(st->st_mode)) ||
	    fcntl(fd, F_SETFL, O_APPEND) < 0) {
		close(fd);
		*refused = true;
		return -1;
	}
	return fd;
}

#endif
