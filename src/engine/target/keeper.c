/*
 * keeper: a process that keeps the target's end of the wake socket
 * connected when corotop is gone.
 *
 * Why.  A program built on the upstream SDKs wakes a sleeping engine by
 * CASing tracer_sleeping 1 -> 0 and writing one byte to the socket with a
 * plain write().  A corotop killed with SIGKILL while asleep leaves
 * tracer_sleeping = 1 and its connections closed, so the program's next
 * event writes to a dead socket and SIGPIPE kills it (status 141).  How the
 * SDKs write is not ours to change, nor may we make the target ignore
 * SIGPIPE; but corotop launched the target and owns the socket, so it keeps
 * a second copy of every connection in a process that outlives it.
 *
 * How.  keeper_start forks the keeper right after the target is launched
 * (before the accept loop runs), giving it the listening socket, a pidfd
 * of the target and one end of a SOCK_SEQPACKET socketpair.  The accept
 * loop hands each accepted connection over with SCM_RIGHTS (keeper_hold).
 * While corotop lives the keeper only holds them: it never reads (the wake
 * bytes are corotop's) and never accepts, and closes its copy when the
 * target hangs up.  When the socketpair reads EOF -- corotop exited or was
 * killed -- the keeper takes over: it accepts on the listening socket and
 * reads and drops whatever the target writes, so a write never fails and
 * never blocks on a full buffer.  It exits when the target is gone (its
 * pidfd reads ready; without pidfd_open, /proc/PID/stat vanishing or
 * showing another start time, checked every KEEPER_POLL_MS).
 *
 * After fork the keeper runs only async-signal-safe calls (the parent may
 * have threads holding locks): no stdio, no malloc.  It closes every other
 * descriptor, puts /dev/null on 0, 1 and 2 (a pipe reading corotop's
 * output must see EOF when corotop exits, not when the target does), moves
 * to /, and blocks the terminal's signals (SIGINT, SIGQUIT, SIGHUP), which
 * are for the target and corotop; SIGTERM and SIGKILL still end it.
 *
 * The target's output travels the same way: the messages carry a kind
 * byte (enum keeper_kind), and the keeper keeps one copy of our end of the
 * target's pty (output.c) and one of the --output file.  While corotop
 * lives the keeper does not poll the pty (corotop reads it); orphaned, it
 * reads it and appends what it reads to the file, or drops it when there
 * is none, until it reads the end.
 */
#define _GNU_SOURCE
#include "engine/target/keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/target/rundir.h"

/* Connections held at once: the engine keeps 64, and after corotop is
 * gone the target may open a few more. */
#define KEEPER_MAX 128
/* Liveness poll of a target without a pidfd. */
#define KEEPER_POLL_MS 200

/*
 * The one keeper.  Written by keeper_start before the accept loop's thread
 * is created and cleared by keeper_stop after it was joined (both on the
 * caller's thread), read by keeper_hold on the accept loop's thread:
 * pthread_create and pthread_join order them, no atomics needed.
 */
static struct {
	int chan; /* our end of the socketpair, -1: none */
	pid_t pid;
	char pids[512]; /* the run directory's pids file, "" if none */
} keeper_one = {.chan = -1};

/* ---- the keeper process (async-signal-safe only) ---- */

static void keeper_close_range(int lo, int hi)
{
	struct rlimit rl;
	int max = 65536;

	if (lo > hi)
		return;
#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned)lo, (unsigned)hi, 0) == 0)
		return;
#endif
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)max)
		max = (int)rl.rlim_cur;
	for (int fd = lo; fd <= hi && fd < max; fd++)
		close(fd);
}

/* Close every descriptor from 3 up but the n in keep (sorted here). */
static void keeper_close_others(int *keep, int n)
{
	int lo = 3;

	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && keep[j] < keep[j - 1]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (int i = 0; i < n; i++) {
		if (keep[i] < lo)
			continue; /* -1, or a duplicate */
		keeper_close_range(lo, keep[i] - 1);
		lo = keep[i] + 1;
	}
	keeper_close_range(lo, INT_MAX);
}

/* A descriptor above 2, so that /dev/null can take 0, 1 and 2. */
static int keeper_lift(int fd)
{
	return fd >= 0 && fd <= 2 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : fd;
}

static void keeper_detach_stdio(void)
{
	int fd = open("/dev/null", O_RDWR);

	if (fd < 0)
		return;
	for (int k = 0; k <= 2; k++)
		if (fd != k)
			dup2(fd, k);
	if (fd > 2)
		close(fd);
}

/* One message from corotop: 1 and *fd (or -1) and *kind set for a
 * message, 0 for EOF (corotop is gone), -1 for nothing now. */
static int keeper_recv(int chan, int *fd, char *kindp)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	char kind;
	struct iovec iov = {.iov_base = &kind, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *c;
	ssize_t got = recvmsg(chan, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	*fd = -1;
	if (got == 0)
		return 0;
	if (got < 0)
		return errno == EAGAIN || errno == EINTR ? -1 : 0;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	if (*fd >= 0 && kind != KEEPER_SOCKET && kind != KEEPER_OUTPUT &&
	    kind != KEEPER_FILE) {
		close(*fd); /* a kind this keeper does not know */
		*fd = -1;
	}
	*kindp = kind;
	return 1;
}

static bool keeper_target_gone(int pidfd, short revents, pid_t target,
			       uint64_t start)
{
	uint64_t now;

	if (pidfd >= 0)
		return revents != 0; /* readable (or broken): it exited */
	now = rundir_start_time(target);
	return now == 0 || (start && now != start);
}

/* Orphaned: what the target printed, into the file (or nowhere).  False
 * once the output ended. */
static bool keeper_pass_output(int out, int file)
{
	char buf[4096];
	ssize_t got;

	do
		got = read(out, buf, sizeof(buf));
	while (got < 0 && errno == EINTR);
	if (got < 0 && errno == EAGAIN)
		return true;
	if (got <= 0)
		return false;
	for (ssize_t off = 0; file >= 0 && off < got;) {
		ssize_t w = write(file, buf + off, (size_t)(got - off));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break; /* the file failed: drop the rest */
		off += w;
	}
	return true;
}

/* Keep the latest copy of a descriptor of one kind. */
static void keeper_replace(int *slot, int fd)
{
	if (*slot >= 0)
		close(*slot);
	*slot = fd;
}

/* The pollfd slots before the held connections. */
enum { KP_CHAN = 0, KP_LISTEN, KP_PIDFD, KP_OUTPUT, KP_FIXED };

static _Noreturn void keeper_main(int chan, int listen_fd, int pidfd,
				  pid_t target, uint64_t start)
{
	struct pollfd p[KP_FIXED + KEEPER_MAX];
	int keep[3];
	int out = -1, file = -1;
	nfds_t n = KP_FIXED;
	bool orphan = false;
	char drain[512];
	sigset_t term;

	chan = keeper_lift(chan);
	listen_fd = keeper_lift(listen_fd);
	pidfd = keeper_lift(pidfd);
	keep[0] = chan;
	keep[1] = listen_fd;
	keep[2] = pidfd;
	keeper_close_others(keep, 3);
	keeper_detach_stdio();
	if (chdir("/") < 0) {
		/* Only to let go of corotop's directory; harmless if not. */
	}
	prctl(PR_SET_NAME, "corotop-keeper", 0, 0, 0);
	/* No handler of corotop's may run here: every signal to its default
	 * (sigaction is async-signal-safe), SIGPIPE ignored.  Then exactly the
	 * terminal's signals blocked -- not added to the mask inherited from
	 * corotop, which blocks SIGTERM for its sigtimedwait: SIGTERM must
	 * end the keeper. */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)signal(sig, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&term);
	sigaddset(&term, SIGINT);
	sigaddset(&term, SIGQUIT);
	sigaddset(&term, SIGHUP);
	sigprocmask(SIG_SETMASK, &term, NULL);
	for (;;) {
		int r;

		p[KP_CHAN] = (struct pollfd){.fd = orphan ? -1 : chan,
					     .events = POLLIN};
		p[KP_LISTEN] = (struct pollfd){.fd = orphan ? listen_fd : -1,
					       .events = POLLIN};
		p[KP_PIDFD] = (struct pollfd){.fd = pidfd, .events = POLLIN};
		/* The output is corotop's to read while it lives (a pty with
		 * no slave left would poll ready for ever). */
		p[KP_OUTPUT] = (struct pollfd){.fd = orphan ? out : -1,
					       .events = POLLIN};
		/* Holding: only hang-ups (the wake bytes are corotop's).
		 * Orphaned: read everything. */
		for (nfds_t i = KP_FIXED; i < n; i++)
			p[i].events = orphan ? POLLIN : 0;
		r = poll(p, n, pidfd >= 0 ? -1 : KEEPER_POLL_MS);
		if (r < 0 && errno != EINTR && errno != EAGAIN)
			_exit(1);
		if (r > 0 && p[KP_OUTPUT].revents &&
		    !keeper_pass_output(out, file)) {
			close(out);
			out = -1;
		}
		/* The output goes first: what the target printed last is
		 * in the file before the keeper leaves. */
		if (keeper_target_gone(pidfd, r > 0 ? p[KP_PIDFD].revents : 0,
				       target, start)) {
			while (orphan && out >= 0 &&
			       keeper_pass_output(out, file) &&
			       poll(&p[KP_OUTPUT], 1, 0) > 0)
				;
			_exit(0);
		}
		if (r <= 0)
			continue;
		if (p[KP_CHAN].revents) {
			int fd, got;
			char kind = 0;

			got = keeper_recv(chan, &fd, &kind);
			if (got == 0) {
				/* corotop is gone: the keeper takes over. */
				close(chan);
				orphan = true;
			} else if (fd >= 0 && kind == KEEPER_OUTPUT) {
				keeper_replace(&out, fd);
			} else if (fd >= 0 && kind == KEEPER_FILE) {
				keeper_replace(&file, fd);
			} else if (fd >= 0 && n < KP_FIXED + KEEPER_MAX) {
				p[n++] = (struct pollfd){.fd = fd};
			} else if (fd >= 0) {
				close(fd);
			}
		}
		if (p[KP_LISTEN].revents & POLLIN) {
			int fd = accept4(listen_fd, NULL, NULL,
					 SOCK_NONBLOCK | SOCK_CLOEXEC);

			if (fd >= 0 && n < KP_FIXED + KEEPER_MAX)
				p[n++] = (struct pollfd){.fd = fd};
			else if (fd >= 0)
				close(fd);
		}
		for (nfds_t i = KP_FIXED; i < n; i++) {
			bool drop = false;

			if (!p[i].revents)
				continue;
			if (orphan) {
				ssize_t got =
					read(p[i].fd, drain, sizeof(drain));

				drop = got == 0 ||
				       (got < 0 && errno != EAGAIN &&
					errno != EINTR);
			} else {
				drop = (p[i].revents &
					(POLLHUP | POLLERR | POLLNVAL)) != 0;
			}
			if (drop) {
				close(p[i].fd);
				p[i--] = p[--n];
			}
		}
	}
}

/* ---- corotop's side ---- */

bool keeper_start(const char *dir, pid_t target, int listen_fd)
{
	int sv[2], pidfd;
	uint64_t start;
	pid_t pid;

	if (keeper_one.pid || target <= 0)
		return false;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return false;
	/* Before the fork: the target is our unreaped child, so its pid
	 * can not have been reused yet. */
	pidfd = (int)syscall(SYS_pidfd_open, target, 0);
	start = rundir_start_time(target);
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		if (pidfd >= 0)
			close(pidfd);
		return false;
	}
	if (pid == 0) {
		close(sv[0]);
		keeper_main(sv[1], listen_fd, pidfd, target, start);
	}
	close(sv[1]);
	if (pidfd >= 0)
		close(pidfd);
	keeper_one.chan = sv[0];
	keeper_one.pid = pid;
	keeper_one.pids[0] = '\0';
	if (dir && dir[0]) {
		pid_t who[3] = {getpid(), pid, target};

		if (rundir_record(dir, who, 3))
			snprintf(keeper_one.pids, sizeof(keeper_one.pids),
				 "%s/%s", dir, RUNDIR_PIDS);
	}
	return true;
}

/* Send one descriptor of one kind, never waiting. */
static void keeper_send(char kind, int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec iov = {.iov_base = &kind, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	if (keeper_one.chan < 0 || fd < 0)
		return;
	memset(u.buf, 0, sizeof(u.buf));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	/* Never wait on the keeper: a full or dead one is skipped. */
	(void)sendmsg(keeper_one.chan, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int keeper_hold(int fd)
{
	keeper_send(KEEPER_SOCKET, fd);
	return fd;
}

void keeper_hold_output(int out, int file)
{
	keeper_send(KEEPER_FILE, file);
	keeper_send(KEEPER_OUTPUT, out);
}

void keeper_stop(bool target_gone)
{
	pid_t r;

	if (!keeper_one.pid)
		return;
	/* A normal exit: the directory is about to go, and with it the
	 * record of who it serves. */
	if (keeper_one.pids[0])
		unlink(keeper_one.pids);
	close(keeper_one.chan);
	do
		r = waitpid(keeper_one.pid, NULL, target_gone ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	keeper_one.chan = -1;
	keeper_one.pid = 0;
	keeper_one.pids[0] = '\0';
}

pid_t keeper_pid(void)
{
	return keeper_one.pid;
}
