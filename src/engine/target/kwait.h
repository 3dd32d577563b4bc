/*
 * kwait: whether an OS thread of a process is waiting in the kernel, and
 * in which system call.  See kwait.c.
 */
#ifndef COROTOP_KWAIT_H
#define COROTOP_KWAIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a thread is doing, as procfs says. */
struct kwait {
	char state; /* /proc/PID/task/TID/stat's: R, S, D, T, ... */
	long nr;    /* the system call it waits in, -1: none or unknown */
};

/* Read thread tid of process pid; false when procfs does not say (gone,
 * or not ours).  Its syscall file may be closed to us (ptrace rules): nr
 * is then -1 and the state still counts. */
bool kwait_read(pid_t pid, uint64_t tid, struct kwait *out);

/* Waiting in the kernel: asleep (S, interruptible) or in an
 * uninterruptible wait (D); a thread that runs (R) or is stopped is not. */
bool kwait_waiting(const struct kwait *k);

/* The state char of a /proc/PID/task/TID/stat text (after the last ')'),
 * or 0 when it does not parse. */
char kwait_parse_state(const char *text);
/* The syscall number of a /proc/PID/task/TID/syscall text: >= 0 for a
 * thread blocked in one, -1 otherwise ("running", "-1 ...", garbage). */
long kwait_parse_syscall(const char *text);

/* The name of syscall nr on this architecture, or NULL when this table
 * does not know it (the blocking ones an event loop or a worker waits
 * in). */
const char *kwait_syscall_name(long nr);

#endif
