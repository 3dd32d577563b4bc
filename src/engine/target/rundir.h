/*
 * rundir: the private run directories (corotop.XXXXXX under
 * $XDG_RUNTIME_DIR or /tmp) as a set: who each one serves, and the sweep
 * that removes those nobody can use any more.  See rundir.c.
 */
#ifndef COROTOP_RUNDIR_H
#define COROTOP_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The file in each directory naming the processes it serves. */
#define RUNDIR_PIDS "pids"
#define RUNDIR_MAX_PIDS 8

/*
 * Write `dir`/pids once (0600, O_EXCL|O_NOFOLLOW): the processes that
 * must all be gone before a later corotop may remove `dir` (corotop, the
 * keeper, the target), each with its start time.  False when it exists
 * already or can not be written (the directory is then judged by corotop's
 * pid in ctp.shm alone).
 */
bool rundir_record(const char *dir, const pid_t *pids, size_t n);

/*
 * Remove the directories under `base` that are stale: named corotop.*, a
 * real directory (not a symlink) of our uid and mode 0700, and every
 * process it serves gone (a pid whose process started at another time is
 * another process).  What can not be proven stale is left alone.
 * Quiet: a sweep that fails changes nothing.
 */
void rundir_sweep(const char *base);

/*
 * When `pid` started, in clock ticks after boot (/proc/PID/stat field 22);
 * 0 when there is no such process, or only its zombie (which holds no
 * descriptor and no mapping: gone, for every use here).  Async-signal-safe
 * (the keeper calls it after fork).
 */
uint64_t rundir_start_time(pid_t pid);

#endif
