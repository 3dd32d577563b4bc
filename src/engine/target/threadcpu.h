/*
 * threadcpu: how busy each OS thread of a process is, from procfs, as
 * htop's per-CPU meters show it.  See threadcpu.c.
 */
#ifndef COROTOP_THREADCPU_H
#define COROTOP_THREADCPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define THREADCPU_MAX 256 /* threads followed, at most */

struct threadcpu;

struct threadcpu_thread {
	uint64_t tid;
	double pct; /* of one CPU since the last sample; < 0 on the first */
	char comm[16];
};

/* Follow process `pid`; NULL when /proc/PID/task can not be opened (gone,
 * or not ours). */
struct threadcpu *threadcpu_create(pid_t pid);
void threadcpu_destroy(struct threadcpu *tc);

/* Read every thread's CPU time now (CLOCK_MONOTONIC now_ns) and give up to
 * `max` threads in tid order with their share of one CPU since the last
 * call.  Returns how many; 0 once the process is gone. */
size_t threadcpu_sample(struct threadcpu *tc, uint64_t now_ns,
			struct threadcpu_thread *out, size_t max);

/* Parse one /proc/PID/task/TID/stat text: its comm (cut to fit, NUL
 * ended) and utime + stime in clock ticks.  False when it does not parse
 * (a comm may hold blanks and parentheses: the last ')' ends it). */
bool threadcpu_parse_stat(const char *text, char comm[16], uint64_t *ticks);

#endif
