/*
 * kwait: a thread waiting in the kernel, from procfs.
 *
 * A coroutine shown running is the one its thread last resumed; when that
 * thread sits in epoll_wait (an event loop's root between events), the
 * coroutine is not stalling, it waits for the kernel.  /proc/PID/task/TID/
 * stat's state says so (S: asleep, interruptible; D: uninterruptible),
 * and /proc/PID/task/TID/syscall says in which call (its first field; the
 * file is readable under the rules of ptrace, which a process corotop
 * launched, or one of the same user without Yama's restriction, meets).
 *
 * Names: the blocking calls of x86-64 and AArch64 that event loops and
 * worker pools wait in; others are shown by number.
 */
#define _GNU_SOURCE
#include "engine/target/kwait.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/target/procfs.h"

char kwait_parse_state(const char *text)
{
	const char *p = strrchr(text, ')');

	if (!p || p[1] != ' ' || !p[2] || p[2] == ' ')
		return 0;
	return p[2];
}

long kwait_parse_syscall(const char *text)
{
	char *end;
	long nr;

	if (*text < '0' || *text > '9')
		return -1; /* "running", "-1 ...": in no call */
	nr = strtol(text, &end, 10);
	if (end == text || (*end && *end != ' ' && *end != '\n') || nr > 4096)
		return -1;
	return nr;
}

bool kwait_read(pid_t pid, uint64_t tid, struct kwait *out)
{
	char path[96], text[512];

	if (pid <= 0 || !tid || tid > (uint64_t)INT32_MAX)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/task/%llu/stat", (int)pid,
		 (unsigned long long)tid);
	if (!procfs_read_text(AT_FDCWD, path, text, sizeof(text)))
		return false;
	out->state = kwait_parse_state(text);
	if (!out->state)
		return false;
	out->nr = -1;
	snprintf(path, sizeof(path), "/proc/%d/task/%llu/syscall", (int)pid,
		 (unsigned long long)tid);
	if (kwait_waiting(out) &&
	    procfs_read_text(AT_FDCWD, path, text, sizeof(text)))
		out->nr = kwait_parse_syscall(text);
	return true;
}

bool kwait_waiting(const struct kwait *k)
{
	return k->state == 'S' || k->state == 'D';
}

struct kwait_name {
	long nr;
	const char *name;
};

/* The blocking calls, by this architecture's numbers (sys/syscall.h). */
static const struct kwait_name kwait_names[] = {
#ifdef SYS_epoll_wait
	{SYS_epoll_wait, "epoll_wait"},
#endif
#ifdef SYS_epoll_pwait
	{SYS_epoll_pwait, "epoll_pwait"},
#endif
#ifdef SYS_epoll_pwait2
	{SYS_epoll_pwait2, "epoll_pwait2"},
#endif
#ifdef SYS_poll
	{SYS_poll, "poll"},
#endif
#ifdef SYS_ppoll
	{SYS_ppoll, "ppoll"},
#endif
#ifdef SYS_select
	{SYS_select, "select"},
#endif
#ifdef SYS_pselect6
	{SYS_pselect6, "pselect6"},
#endif
#ifdef SYS_futex
	{SYS_futex, "futex"},
#endif
#ifdef SYS_nanosleep
	{SYS_nanosleep, "nanosleep"},
#endif
#ifdef SYS_clock_nanosleep
	{SYS_clock_nanosleep, "clock_nanosleep"},
#endif
#ifdef SYS_read
	{SYS_read, "read"},
#endif
#ifdef SYS_readv
	{SYS_readv, "readv"},
#endif
#ifdef SYS_write
	{SYS_write, "write"},
#endif
#ifdef SYS_accept
	{SYS_accept, "accept"},
#endif
#ifdef SYS_accept4
	{SYS_accept4, "accept4"},
#endif
#ifdef SYS_connect
	{SYS_connect, "connect"},
#endif
#ifdef SYS_recvfrom
	{SYS_recvfrom, "recvfrom"},
#endif
#ifdef SYS_recvmsg
	{SYS_recvmsg, "recvmsg"},
#endif
#ifdef SYS_recvmmsg
	{SYS_recvmmsg, "recvmmsg"},
#endif
#ifdef SYS_sendto
	{SYS_sendto, "sendto"},
#endif
#ifdef SYS_sendmsg
	{SYS_sendmsg, "sendmsg"},
#endif
#ifdef SYS_wait4
	{SYS_wait4, "wait4"},
#endif
#ifdef SYS_waitid
	{SYS_waitid, "waitid"},
#endif
#ifdef SYS_pause
	{SYS_pause, "pause"},
#endif
#ifdef SYS_rt_sigsuspend
	{SYS_rt_sigsuspend, "rt_sigsuspend"},
#endif
#ifdef SYS_rt_sigtimedwait
	{SYS_rt_sigtimedwait, "rt_sigtimedwait"},
#endif
#ifdef SYS_io_getevents
	{SYS_io_getevents, "io_getevents"},
#endif
#ifdef SYS_io_pgetevents
	{SYS_io_pgetevents, "io_pgetevents"},
#endif
#ifdef SYS_io_uring_enter
	{SYS_io_uring_enter, "io_uring_enter"},
#endif
#ifdef SYS_msgrcv
	{SYS_msgrcv, "msgrcv"},
#endif
#ifdef SYS_semtimedop
	{SYS_semtimedop, "semtimedop"},
#endif
#ifdef SYS_flock
	{SYS_flock, "flock"},
#endif
#ifdef SYS_fsync
	{SYS_fsync, "fsync"},
#endif
#ifdef SYS_fdatasync
	{SYS_fdatasync, "fdatasync"},
#endif
#ifdef SYS_openat
	{SYS_openat, "openat"},
#endif
};

const char *kwait_syscall_name(long nr)
{
	for (size_t i = 0; i < sizeof(kwait_names) / sizeof(kwait_names[0]);
	     i++)
		if (kwait_names[i].nr == nr)
			return kwait_names[i].name;
	return NULL;
}
