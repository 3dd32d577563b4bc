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
 * never blocks on a full buffer.  The target is gone when its pidfd reads
 * ready (without pidfd_open: /proc/PID/stat vanishing or showing another
 * start time, checked every KEEPER_POLL_MS).
 *
 * After fork the keeper runs only async-signal-safe calls (the parent may
 * have threads holding locks): no stdio, no malloc.  It closes every other
 * descriptor, puts /dev/null on 0, 1 and 2 (a pipe reading corotop's
 * output must see EOF when corotop exits, not when the target does), moves
 * to /, and blocks the terminal's signals (SIGINT, SIGQUIT, SIGHUP), which
 * are for the target and corotop; SIGTERM and SIGKILL still end it.
 *
 * The target's output.  When corotop captures it (output.c), the keeper
 * is its one reader, from the start: it gets our end of the pty or pipe,
 * the destination (the --output file, or in batch mode corotop's stderr;
 * none for a TUI without --output) and, for the TUI, the write end of a
 * copy pipe, all inherited at the fork.  It appends every byte it reads to
 * the destination (waiting on it, as the target would have) and sends a
 * copy down the pipe without ever waiting (a copy that does not fit is
 * dropped, and the next one starts with a line that says how much).  So
 * nothing is lost when corotop dies, whenever it dies, and the target
 * never blocks on a full pty.  The first write to the destination that
 * fails is reported to corotop on the socketpair (a keeper_msg), once, and
 * the rest of the output is read and dropped.  At the end corotop asks for
 * a sync: the keeper relays everything readable, then answers with the
 * failure (if any) and whether the output ended.
 *
 * When it exits: once the target is gone and the output ended (read EOF
 * or, for a pty, EIO: no slave left).  A daemon the target forked with the
 * pty as its stdout keeps the keeper, and its output, alive after corotop
 * quits; without a destination, that output is read and dropped.
 */
#define _GNU_SOURCE
#include "engine/launch/keeper.h"

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
#include "common/clock.h"

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
	bool output;	  /* it relays the target's output */
	int sink_err;	  /* the keeper's report: errno, 0 while none */
	uint64_t sink_at; /* ... bytes written before it */
	char pids[512];	  /* the run directory's pids file, "" if none */
} keeper_one = {.chan = -1};

/* A message from the keeper to corotop. */
struct keeper_msg {
	char kind; /* KEEPER_SINK_FAILED or KEEPER_SYNCED */
	bool ended;
	int err;
	uint64_t at;
};

/* The output's relay, in the keeper. */
struct keeper_relay {
	int out;  /* the target's output, -1 once it ended */
	int sink; /* the destination, -1: none */
	int copy; /* the view's pipe, -1: none (or corotop is gone) */
	int chan; /* for the report, -1 once corotop is gone */
	int err;  /* the destination's first failure, 0: none */
	uint64_t written;
	uint64_t copy_lost; /* bytes the view has not been told of */
	bool copy_mid_line; /* the last byte copied was not a newline */
};

#define KEEPER_CHUNK 65536
/* At the end, how long the view's pipe may take to make room for the line
 * that says what it missed. */
#define KEEPER_COPY_END_MS 1000
/* A sync relays at most this much: a daemon writing without a pause can
 * not hold corotop's exit. */
#define KEEPER_SYNC_MAX (64ull << 20)

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
	if (*fd >= 0 && kind != KEEPER_SOCKET) {
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

/* Write all of buf[0..n) to fd: 0, or the errno that stopped it. */
static int keeper_write_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t w = write(fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno ? errno : EIO;
		if (w == 0)
			return EIO;
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

static void keeper_report(int chan, char kind, int err, uint64_t at, bool ended)
{
	struct keeper_msg m = {
		.kind = kind, .ended = ended, .err = err, .at = at};

	if (chan >= 0)
		(void)send(chan, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* "[corotop: N bytes ...]\n" into buf, after a newline when the view is
 * mid-line (async-signal-safe: no stdio). */
static size_t keeper_lost_line(char *buf, size_t cap, uint64_t n, bool nl)
{
	static const char head[] = "\n[corotop: ";
	static const char tail[] = " bytes of output not shown here: the "
				   "view fell behind; --output has them]\n";
	char digits[24];
	size_t nd = 0, len = 0;

	do
		digits[nd++] = (char)('0' + n % 10);
	while ((n /= 10) && nd < sizeof(digits));
	if (sizeof(head) - 1 + nd + sizeof(tail) - 1 > cap)
		return 0;
	memcpy(buf, head + !nl, sizeof(head) - 1 - !nl);
	len = sizeof(head) - 1 - !nl;
	while (nd)
		buf[len++] = digits[--nd];
	memcpy(buf + len, tail, sizeof(tail) - 1);
	return len + sizeof(tail) - 1;
}

/* A copy for the view, never waiting: what does not fit is counted. */
static void keeper_copy(struct keeper_relay *k, const char *buf, size_t n)
{
	char line[160];
	ssize_t w;

	if (k->copy < 0)
		return;
	if (k->copy_lost) {
		size_t len = keeper_lost_line(line, sizeof(line), k->copy_lost,
					      k->copy_mid_line);

		/* Whole or not at all (the pipe takes up to PIPE_BUF bytes
		 * atomically). */
		if (len && write(k->copy, line, len) == (ssize_t)len) {
			k->copy_lost = 0;
			k->copy_mid_line = false;
		} else {
			k->copy_lost += n;
			return;
		}
	}
	if (!n)
		return;
	w = write(k->copy, buf, n);
	if (w < 0 && errno == EPIPE) {
		close(k->copy); /* corotop closed the view */
		k->copy = -1;
		return;
	}
	if (w < 0)
		w = 0;
	if (w > 0)
		k->copy_mid_line = buf[w - 1] != '\n';
	k->copy_lost += n - (size_t)w;
}

/* The output ended: the view learns what it missed at the end (waiting a
 * little for room: nothing else is left to relay), then reads EOF. */
static void keeper_copy_end(struct keeper_relay *k)
{
	struct pollfd p = {.fd = k->copy, .events = POLLOUT};

	if (k->copy < 0)
		return;
	if (k->copy_lost && poll(&p, 1, KEEPER_COPY_END_MS) > 0)
		keeper_copy(k, "", 0);
	close(k->copy);
	k->copy = -1;
}

/* One read of the output, relayed: the bytes read, 0 when nothing was
 * there, -1 when it ended (then closed). */
static ssize_t keeper_relay_once(struct keeper_relay *k)
{
	static char buf[KEEPER_CHUNK];
	ssize_t got;

	if (k->out < 0)
		return -1;
	do
		got = read(k->out, buf, sizeof(buf));
	while (got < 0 && errno == EINTR);
	if (got < 0 && errno == EAGAIN)
		return 0;
	if (got <= 0) {
		/* EOF of a pipe, EIO of a pty with no slave left. */
		close(k->out);
		k->out = -1;
		keeper_copy_end(k);
		return -1;
	}
	if (k->sink >= 0 && !k->err) {
		k->err = keeper_write_all(k->sink, buf, (size_t)got);
		if (k->err)
			keeper_report(k->chan, KEEPER_SINK_FAILED, k->err,
				      k->written, false);
		else
			k->written += (uint64_t)got;
	}
	keeper_copy(k, buf, (size_t)got);
	return got;
}

/* corotop asked: relay what is there now (bounded), then answer. */
static void keeper_sync(struct keeper_relay *k)
{
	uint64_t moved = 0;
	ssize_t got;

	while (moved < KEEPER_SYNC_MAX && (got = keeper_relay_once(k)) > 0)
		moved += (uint64_t)got;
	keeper_report(k->chan, KEEPER_SYNCED, k->err, k->written, k->out < 0);
}

/* The pollfd slots before the held connections. */
enum { KP_CHAN = 0, KP_LISTEN, KP_PIDFD, KP_OUTPUT, KP_FIXED };

struct keeper_fds {
	int chan, listen, pidfd, out, sink, copy;
};

static _Noreturn void keeper_main(struct keeper_fds f, pid_t target,
				  uint64_t start)
{
	struct pollfd p[KP_FIXED + KEEPER_MAX];
	struct keeper_relay k;
	int keep[6];
	nfds_t n = KP_FIXED;
	bool orphan = false, gone = false;
	char drain[512];
	sigset_t term;

	f.chan = keeper_lift(f.chan);
	f.listen = keeper_lift(f.listen);
	f.pidfd = keeper_lift(f.pidfd);
	f.out = keeper_lift(f.out);
	f.sink = keeper_lift(f.sink);
	f.copy = keeper_lift(f.copy);
	keep[0] = f.chan;
	keep[1] = f.listen;
	keep[2] = f.pidfd;
	keep[3] = f.out;
	keep[4] = f.sink;
	keep[5] = f.copy;
	keeper_close_others(keep, 6);
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
	k = (struct keeper_relay){
		.out = f.out, .sink = f.sink, .copy = f.copy, .chan = f.chan};
	for (;;) {
		int r;

		p[KP_CHAN] = (struct pollfd){.fd = orphan ? -1 : f.chan,
					     .events = POLLIN};
		p[KP_LISTEN] = (struct pollfd){.fd = orphan ? f.listen : -1,
					       .events = POLLIN};
		p[KP_PIDFD] = (struct pollfd){.fd = gone ? -1 : f.pidfd,
					      .events = POLLIN};
		p[KP_OUTPUT] = (struct pollfd){.fd = k.out, .events = POLLIN};
		/* Holding: only hang-ups (the wake bytes are corotop's).
		 * Orphaned: read everything. */
		for (nfds_t i = KP_FIXED; i < n; i++)
			p[i].events = orphan ? POLLIN : 0;
		r = poll(p, n, !gone && f.pidfd < 0 ? KEEPER_POLL_MS : -1);
		if (r < 0 && errno != EINTR && errno != EAGAIN)
			_exit(1);
		if (r > 0 && p[KP_OUTPUT].revents)
			(void)keeper_relay_once(&k);
		if (!gone &&
		    keeper_target_gone(f.pidfd, r > 0 ? p[KP_PIDFD].revents : 0,
				       target, start)) {
			gone = true; /* a pidfd stays readable: poll it no more
				      */
			if (f.pidfd >= 0)
				close(f.pidfd);
			f.pidfd = -1;
		}
		/* Gone, and nothing holds its output any more. */
		if (gone && k.out < 0)
			_exit(0);
		if (r <= 0)
			continue;
		if (p[KP_CHAN].revents) {
			int fd, got;
			char kind = 0;

			got = keeper_recv(f.chan, &fd, &kind);
			if (got == 0) {
				/* corotop is gone: the keeper takes over. */
				close(f.chan);
				f.chan = k.chan = -1;
				orphan = true;
				if (k.copy >= 0)
					close(k.copy);
				k.copy = -1;
			} else if (got > 0 && kind == KEEPER_SYNC) {
				keeper_sync(&k);
			} else if (fd >= 0 && n < KP_FIXED + KEEPER_MAX) {
				p[n++] = (struct pollfd){.fd = fd};
			} else if (fd >= 0) {
				close(fd);
			}
		}
		if (p[KP_LISTEN].revents & POLLIN) {
			int fd = accept4(f.listen, NULL, NULL,
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

bool keeper_start(const char *dir, pid_t target, int listen_fd,
		  const struct keeper_output *out)
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
		struct keeper_fds f = {sv[1], listen_fd, pidfd, -1, -1, -1};

		close(sv[0]);
		if (out) {
			f.out = out->source;
			f.sink = out->sink;
			f.copy = out->copy;
		}
		keeper_main(f, target, start);
	}
	close(sv[1]);
	if (pidfd >= 0)
		close(pidfd);
	keeper_one.chan = sv[0];
	keeper_one.pid = pid;
	keeper_one.output = out && out->source >= 0;
	keeper_one.sink_err = 0;
	keeper_one.sink_at = 0;
	keeper_one.pids[0] = '\0';
	if (dir && dir[0]) {
		pid_t who[3] = {getpid(), pid, target};

		if (rundir_record(dir, who, 3))
			snprintf(keeper_one.pids, sizeof(keeper_one.pids),
				 "%s/%s", dir, RUNDIR_PIDS);
	}
	return true;
}

/* Send one message (with a descriptor, or fd -1), never waiting. */
static void keeper_send(char kind, int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct iovec iov = {.iov_base = &kind, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;

	if (keeper_one.chan < 0)
		return;
	if (fd >= 0) {
		memset(u.buf, 0, sizeof(u.buf));
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	/* Never wait on the keeper: a full or dead one is skipped. */
	(void)sendmsg(keeper_one.chan, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int keeper_hold(int fd)
{
	if (fd >= 0)
		keeper_send(KEEPER_SOCKET, fd);
	return fd;
}

static uint64_t keeper_now_ms(void)
{
	return clock_now_ns(CLOCK_MONOTONIC) / 1000000u;
}

/* Take one message from the keeper, waiting up to timeout_ms (0: not at
 * all).  1: *m set; 0: nothing came; -1: the keeper is gone. */
static int keeper_take(struct keeper_msg *m, int timeout_ms)
{
	struct pollfd p = {.fd = keeper_one.chan, .events = POLLIN};
	ssize_t got;
	int r;

	if (keeper_one.chan < 0)
		return -1;
	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return 0;
	do
		got = recv(keeper_one.chan, m, sizeof(*m), MSG_DONTWAIT);
	while (got < 0 && errno == EINTR);
	if (got < 0 && errno == EAGAIN)
		return 0;
	if (got != (ssize_t)sizeof(*m))
		return -1;
	if (m->err && !keeper_one.sink_err) {
		keeper_one.sink_err = m->err;
		keeper_one.sink_at = m->at;
	}
	return 1;
}

int keeper_sink_error(uint64_t *at)
{
	struct keeper_msg m;

	/* Reports only come once; a sync answer here is a stale one. */
	while (!keeper_one.sink_err && keeper_take(&m, 0) > 0)
		;
	if (at)
		*at = keeper_one.sink_at;
	return keeper_one.sink_err;
}

void keeper_stop(bool target_gone, unsigned sync_ms, struct keeper_end *end)
{
	bool ended = !keeper_one.output, gone = false;
	pid_t r;

	if (end)
		*end = (struct keeper_end){0};
	if (!keeper_one.pid)
		return;
	/* A normal exit: the directory is about to go, and with it the
	 * record of who it serves. */
	if (keeper_one.pids[0])
		unlink(keeper_one.pids);
	/* Everything the target wrote is readable now: have it relayed,
	 * and learn how writing it went. */
	if (target_gone && keeper_one.output) {
		uint64_t deadline = keeper_now_ms() + sync_ms;
		struct keeper_msg m;

		keeper_send(KEEPER_SYNC, -1);
		for (;;) {
			uint64_t now = keeper_now_ms();
			int got;

			if (now >= deadline)
				break;
			got = keeper_take(&m, (int)(deadline - now));
			if (got < 0) {
				/* It left on its own: after relaying
				 * everything (status 0), its reports read
				 * before the end of the socket. */
				int st = 0;

				do
					r = waitpid(keeper_one.pid, &st, 0);
				while (r < 0 && errno == EINTR);
				gone = true;
				ended = r == keeper_one.pid && WIFEXITED(st) &&
					WEXITSTATUS(st) == 0;
				if (end)
					end->synced = ended;
				break;
			}
			if (got > 0 && m.kind == KEEPER_SYNCED) {
				ended = m.ended;
				if (end)
					end->synced = true;
				break;
			}
		}
	}
	if (end) {
		end->err = keeper_one.sink_err;
		end->at = keeper_one.sink_at;
		end->ended = ended;
	}
	close(keeper_one.chan);
	/* Gone and ended: the keeper is about to exit.  Else it runs on for
	 * whatever still holds the output, reaped by whoever inherits it. */
	while (!gone &&
	       (r = waitpid(keeper_one.pid, NULL,
			    target_gone && ended ? 0 : WNOHANG)) < 0 &&
	       errno == EINTR)
		;
	keeper_one.chan = -1;
	keeper_one.pid = 0;
	keeper_one.output = false;
	keeper_one.sink_err = 0;
	keeper_one.sink_at = 0;
	keeper_one.pids[0] = '\0';
}

pid_t keeper_pid(void)
{
	return keeper_one.pid;
}
