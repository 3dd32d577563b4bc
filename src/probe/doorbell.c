/*
 * doorbell: how corotop -p reaches a program in which nothing moves.
 *
 * The ppt protocol attaches a client when it next saves a frame, and the
 * probe looks for an agent at its next transition (rendezvous.c).  A hung
 * server -- every coroutine parked, every thread blocked -- makes none, so
 * it would never notice the agent, and the coroutine that never woke would
 * never be shown: the case late attach exists for.  So the probe listens
 * on an abstract Unix socket, COROTOP_DOORBELL_FMT with its pid
 * (corotop/ppt.h), on a thread of its own that sleeps in accept and costs
 * nothing else.  corotop rings it right after writing _hmem (and after
 * writing it back to 0); the thread then runs the attach check itself
 * (probe_late_poll), which maps the region and starts the census.
 *
 * Who may ring.  A connection whose peer has another uid is closed
 * unheard.  Nothing is read or written on a connection: ringing only makes
 * the probe look at its own _hmem, which it validates as at any
 * transition, so a stray ring costs one check.  The name is per network
 * namespace: a corotop in another one cannot ring, and the probe attaches
 * at its next transition as before.  A name someone else already holds
 * leaves the probe without a doorbell, nothing more.
 *
 * The thread blocks every signal (the program's handlers and SIGPROF never
 * run on it) and has a 64 KiB stack.  A forked child inherits the socket
 * but not the thread: probe_doorbell_atfork_child closes the copy, and the
 * child attaches at its next transition.
 */
#define _GNU_SOURCE
#include "probe/probe_internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "corotop/probe.h"
#include "wire/doorbell.h"

/* The listening socket; -1: none.  Written by the thread that loads the
 * library and by a fork's child, alone then. */
static int doorbell_fd = -1;

static void *doorbell_main(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	struct timespec backoff = {0, 100000000L};

	for (;;) {
		struct ucred cr;
		socklen_t len = sizeof(cr);
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		bool ours;

		if (fd < 0) {
			if (errno == EBADF || errno == EINVAL ||
			    errno == ENOTSOCK)
				return NULL;
			if (errno != EINTR && errno != ECONNABORTED)
				nanosleep(&backoff, NULL); /* EMFILE, ENOMEM */
			continue;
		}
		ours = !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) &&
		       cr.uid == getuid();
		close(fd);
		if (ours)
			/* relaxed: the poll re-reads _hmem under its lock. */
			probe_late_poll(__atomic_load_n(&_ppt_hmem_corotop,
							__ATOMIC_RELAXED));
	}
}

void probe_doorbell_start(void)
{
	struct sockaddr_un sa;
	socklen_t len;
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;
	int fd, rc;

	if (doorbell_fd >= 0)
		return;
	len = doorbell_addr(getpid(), &sa);
	if (!len)
		return;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (bind(fd, (struct sockaddr *)&sa, len) || listen(fd, 4) ||
	    pthread_attr_init(&attr)) {
		close(fd);
		return;
	}
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&th, &attr, doorbell_main, (void *)(intptr_t)fd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc) {
		close(fd);
		return;
	}
	doorbell_fd = fd;
}

void probe_doorbell_atfork_child(void)
{
	if (doorbell_fd >= 0)
		close(doorbell_fd);
	doorbell_fd = -1;
}
