/*
 * launch: fork + exec of the traced program, and reaping or stopping it.
 *
 * The exec status travels back through a close-on-exec pipe: a successful
 * exec closes it with nothing written (EOF), a failed one writes errno.  So
 * "corotop -- no-such-program" says "cannot run no-such-program: No such
 * file or directory" instead of pretending a target ran and exited 127.
 */
#define _GNU_SOURCE
#include "engine/launch/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "corotop/ctp.h"

/* LD_PRELOAD with lib first (the program's own list after it). */
static int launch_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	char v[8192];

	if ((size_t)snprintf(v, sizeof(v), "%s%s%s", lib,
			     old && *old ? ":" : "",
			     old ? old : "") >= sizeof(v)) {
		errno = E2BIG;
		return -1;
	}
	return setenv("LD_PRELOAD", v, 1);
}

/* dup2 keeps the descriptors of io apart: each is above 2 or already in
 * place (stderr as stdout), and dup2 clears close-on-exec on the copy. */
static int launch_stdio_set(const struct launch_stdio *io)
{
	int want[3] = {io->in, io->out, io->err};

	for (int k = 0; k < 3; k++)
		if (want[k] >= 0 && want[k] != k && dup2(want[k], k) < 0)
			return -1;
	return 0;
}

static void launch_child(int fd, char *const *argv, const char *shm,
			 const char *sock, uint32_t stations,
			 const struct launch_probe *probe,
			 const struct launch_stdio *io)
{
	unsigned sample_hz = probe ? probe->sample_hz : 0;
	char max[16], hz[16], self[16];
	sigset_t none;
	int e;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* corotop ignores these (write errors instead of death); the target
	 * gets them back. */
	signal(SIGPIPE, SIG_DFL);
	signal(SIGXFSZ, SIG_DFL);
	snprintf(max, sizeof(max), "%u", stations);
	snprintf(hz, sizeof(hz), "%u", sample_hz);
	snprintf(self, sizeof(self), "%d", (int)getpid());
	if ((io && launch_stdio_set(io) < 0) ||
	    setenv(CTP_ENV_SHM, shm, 1) < 0 ||
	    setenv(CTP_ENV_SOCK, sock, 1) < 0 ||
	    setenv(CTP_ENV_MAX, max, 1) < 0 ||
	    setenv(CTP_ENV_MAPS_PID, self, 1) < 0 ||
	    (sample_hz && setenv("COROTOP_SAMPLE_HZ", hz, 1) < 0) ||
	    (probe && probe->parked_stacks &&
	     setenv("COROTOP_PARKED_STACKS", "1", 1) < 0) ||
	    (probe && probe->preload && launch_preload(probe->preload) < 0))
		e = errno;
	else {
		execvp(argv[0], argv);
		e = errno;
	}
	if (write(fd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

pid_t launch_spawn(char *const *argv, const char *shm, const char *sock,
		   uint32_t stations, const struct launch_probe *probe,
		   const struct launch_stdio *io, char *err, size_t errlen)
{
	int fds[2], e = 0;
	ssize_t got;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		close(fds[0]);
		launch_child(fds[1], argv, shm, sock, stations, probe, io);
	}
	close(fds[1]);
	do
		got = read(fds[0], &e, sizeof(e));
	while (got < 0 && errno == EINTR);
	close(fds[0]);
	if (got == (ssize_t)sizeof(e)) {
		snprintf(err, errlen, "cannot run %s: %s", argv[0],
			 strerror(e));
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

bool launch_reap(pid_t pid, int *status)
{
	pid_t r;

	do
		r = waitpid(pid, status, WNOHANG);
	while (r < 0 && errno == EINTR);
	return r == pid;
}

int launch_terminate(pid_t pid, unsigned grace_ms)
{
	int status = 0;

	if (launch_reap(pid, &status))
		return status;
	kill(pid, SIGTERM);
	for (unsigned waited = 0; waited < grace_ms; waited += 10) {
		struct timespec ts = {0, 10000000};

		if (launch_reap(pid, &status))
			return status;
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	while (!launch_reap(pid, &status)) {
		struct timespec ts = {0, 1000000};

		nanosleep(&ts, NULL);
	}
	return status;
}
