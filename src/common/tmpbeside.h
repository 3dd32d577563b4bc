/*
 * tmpbeside: a temporary file created next to a path, the first step of
 * writing that path atomically (write the temporary, then rename it over
 * the path) or of checking up front that it could be written.
 */
#ifndef COROTOP_TMPBESIDE_H
#define COROTOP_TMPBESIDE_H

/* mkostemp: the including file defines _GNU_SOURCE. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

/*
 * Create "PATH.XXXXXX" (mode 0600, close-on-exec) and return its open fd,
 * with its name in *name (malloc'd: the caller frees it, and unlinks or
 * renames the file).  -1 with errno set and *name NULL when it cannot.
 */
static inline int tmp_beside(const char *path, char **name)
{
	size_t len = strlen(path);
	char *tmp = malloc(len + 8);
	int fd, saved;

	*name = NULL;
	if (!tmp) {
		errno = ENOMEM;
		return -1;
	}
	memcpy(tmp, path, len);
	memcpy(tmp + len, ".XXXXXX", 8);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		saved = errno;
		free(tmp);
		errno = saved;
		return -1;
	}
	*name = tmp;
	return fd;
}

#endif
