/*
 * doorbell: the agent's side of the probe's doorbell
 * (src/probe/doorbell.c, corotop/ppt.h).  corotop -p rings right after it wrote
 * _hmem and right after it wrote it back to 0; the probe's thread then runs the
 * attach check that a transition would have run.
 *
 * The socket is abstract (no file to create or follow) and non-blocking:
 * a full backlog or a listener that does not accept never stalls the
 * engine.  Nothing is sent.  The listener must be the target: SO_PEERCRED
 * on the connected socket names the process that listens, and a name held
 * by any other process (or another uid) is not counted as an answer.
 */
#define _GNU_SOURCE
#include "engine/attach/doorbell.h"

#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "wire/doorbell.h"

bool doorbell_ring(pid_t pid)
{
	struct sockaddr_un sa;
	socklen_t alen = doorbell_addr(pid, &sa);
	struct ucred cr;
	socklen_t len = sizeof(cr);
	bool ok;
	int fd;

	if (!alen)
		return false;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return false;
	ok = !connect(fd, (struct sockaddr *)&sa, alen) &&
	     !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) &&
	     cr.pid == pid && cr.uid == getuid();
	close(fd);
	return ok;
}
