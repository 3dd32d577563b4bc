/*
 * doorbell: the address of a probe's doorbell (corotop/ppt.h), built the
 * same way by the probe that listens (src/probe/doorbell.c) and the engine
 * that rings (src/engine/attach/doorbell.c).  Header-only.
 */
#ifndef COROTOP_WIRE_DOORBELL_H
#define COROTOP_WIRE_DOORBELL_H

#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "corotop/ppt.h"

/* The abstract socket address of pid's doorbell into *sa: sun_path[0] = 0,
 * then the name, not NUL-terminated (its length is the address length).
 * Returns that length, or 0 when pid is not a process id. */
static inline socklen_t doorbell_addr(pid_t pid, struct sockaddr_un *sa)
{
	int n;

	*sa = (struct sockaddr_un){.sun_family = AF_UNIX};
	if (pid <= 0)
		return 0;
	n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
		     COROTOP_DOORBELL_FMT, (int)pid);
	if (n <= 0 || (size_t)n >= sizeof(sa->sun_path) - 1)
		return 0;
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			   (size_t)n);
}

#endif
