/*
 * threadstop: a short stop of a running process's threads, to read their
 * registers and a consistent view of their memory.  See threadstop.c.
 *
 * Only threads that run in user space are stopped (PTRACE_SEIZE,
 * PTRACE_INTERRUPT); one that waits in the kernel is never touched, its
 * stack and instruction pointers read from /proc/PID/task/TID/syscall,
 * because interrupting it would make some calls (epoll_wait) return
 * EINTR in the target.
 */
#ifndef COROTOP_ENGINE_TARGET_THREADSTOP_H
#define COROTOP_ENGINE_TARGET_THREADSTOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The threads one stop looks at (more: not looked at, counted). */
#define THREADSTOP_MAX 1024u

enum threadstop_how {
	THREADSTOP_WAITING, /* waits in the kernel: sp, pc from procfs */
	THREADSTOP_STOPPED, /* ran: stopped, its registers read */
	THREADSTOP_RUNNING, /* ran, not stopped (nonblocking, refused) */
};

struct threadstop_thread {
	pid_t tid;
	enum threadstop_how how;
	uint64_t sp, pc, fp; /* fp: 0 when not known (a waiting thread's) */
	int32_t nr;	     /* WAITING: the call it waits in (-1: none) */
	uint64_t ran;	     /* WAITING: times it was put on a CPU, then */
	int sig;	     /* STOPPED: a signal its stop held, passed on */
	bool held;	     /* STOPPED and not yet let go (threadstop_end) */
};

struct threadstop_stats {
	uint64_t stops;	   /* stops that stopped a thread */
	uint64_t pause_ns; /* the last one's pause (0: none stopped) */
	uint64_t pause_max_ns;
	uint32_t stopped; /* threads the last one stopped */
	uint32_t waiting; /* ... it left waiting in the kernel */
	uint32_t running; /* ... that ran and were not stopped */
	uint64_t refused; /* seizes refused (a debugger holds it) */
	uint64_t late;	  /* threads that did not stop in time */
};

struct threadstop;

/* For process pid, whose /proc directory is dirfd (kept open by the
 * caller).  nonblocking: never stop a thread (the running ones' sp are
 * then not known).  NULL when out of memory. */
struct threadstop *threadstop_create(pid_t pid, int dirfd, bool nonblocking);
/* Lets every thread go first (threadstop_end). */
void threadstop_destroy(struct threadstop *ts);

/* Look at every thread and stop those that run.  The threads, in *t
 * (valid until the next threadstop_begin, threadstop_end included);
 * their count. */
size_t threadstop_begin(struct threadstop *ts,
			const struct threadstop_thread **t);
/* Whether the threads left waiting still wait and have not run since
 * threadstop_begin (their memory did not change).  When one did, it is
 * stopped now if it runs (its registers read), re-read if it waits
 * again, and false is returned: what was read meanwhile may be torn. */
bool threadstop_settled(struct threadstop *ts);
/* Let the stopped threads go, each with the signal its stop held. */
void threadstop_end(struct threadstop *ts);

void threadstop_stats(const struct threadstop *ts,
		      struct threadstop_stats *out);

/* /proc/PID/task/TID/schedstat's third field: the times the thread was
 * put on a CPU; false when the text is not that (a fuzzable parser). */
bool threadstop_parse_ran(const char *text, uint64_t *ran);

/* /proc/PID/task/TID/stat's field 39: the CPU the thread last ran on;
 * -1 when the text is not that. */
int threadstop_parse_cpu(const char *text);

#endif
