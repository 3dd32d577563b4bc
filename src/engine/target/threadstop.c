/*
 * threadstop: a short stop of a running process's threads, to read their
 * registers and a consistent view of their memory (issue 30's refreshes:
 * engine/scan/scanner.c re-reads the known saved areas meanwhile).
 *
 * Which threads stop.  Each thread's /proc/PID/task/TID/syscall says
 * either where it waits in the kernel (its call, sp and pc) or "running".
 * Only the running ones are stopped: PTRACE_SEIZE, PTRACE_INTERRUPT, a
 * wait for the stop, PTRACE_GETREGSET.  A waiting thread is never
 * interrupted: the interrupt would end an epoll_wait with EINTR in the
 * target (a read restarts; epoll_wait, semop and sigtimedwait do not,
 * signal(7)).  It cannot change memory while it waits; whether it woke
 * meanwhile is told by its schedstat's count of times put on a CPU,
 * read before its syscall file and again at threadstop_settled: the
 * same count and the same call mean it has not run since.
 *
 * A running thread is interrupted right after its syscall file said it
 * runs; one that enters epoll_wait in between, or is in its first
 * instructions when interrupted, can still see EINTR: the window is two
 * system calls of corotop's and the call's entry.  `--nonblocking`
 * (THREADSTOP nonblocking) never stops a thread; the running threads'
 * registers are then unknown and what is read may be torn.
 *
 * Signals.  A signal that arrives while a thread is seized stops it in
 * a signal-delivery-stop instead of our interrupt's: it is stopped all
 * the same, the signal is kept and handed back by PTRACE_DETACH, which
 * also drops the interrupt still pending.  A group-stop (SIGSTOP) is
 * left as it was: detach puts the thread back in it.
 *
 * Never a hang.  A thread that does not report its stop within
 * THREADSTOP_DEADLINE_NS, and is not runnable (it went into
 * uninterruptible sleep), or still has not after THREADSTOP_RUNNABLE_NS,
 * is counted late and kept; it is waited for without blocking at the
 * end of every stop and at destroy, and detached once it reports (or
 * reaped, when it exited meanwhile).  The kernel lets every
 * tracee go when the tracing thread exits.  Each request comes from the
 * thread that seized (ptrace's rule): one threadstop is used by one
 * thread.
 */
#define _GNU_SOURCE
#include "engine/target/threadstop.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "engine/target/procfs.h"

/* How long a stop waits for an interrupted thread to report; longer,
 * up to THREADSTOP_RUNNABLE_NS, while it is runnable (it stops as soon
 * as it gets a CPU): one in uninterruptible sleep is left late. */
#define THREADSTOP_DEADLINE_NS (20u * 1000000u)
#define THREADSTOP_RUNNABLE_NS (1000u * 1000000u)
/* How long the wait looks again at once before it naps between looks:
 * a running thread stops within microseconds of its interrupt, and a
 * sched_yield here would hand the CPU away for a whole slice on a busy
 * machine, the target stopped meanwhile.  Short: an interrupted thread
 * that shares this CPU cannot report while this one spins (at 500 us
 * the reports took 0.6-0.8 ms at 10k fibers, at 20 us 0.2-0.3 ms). */
#define THREADSTOP_SPIN_NS (20u * 1000u)

struct threadstop {
	pid_t pid;
	int dirfd;
	bool nonblocking;
	struct threadstop_thread t[THREADSTOP_MAX];
	size_t n;
	/* Interrupted, not yet reported: detached once they report. */
	pid_t late[THREADSTOP_MAX];
	size_t nlate;
	uint64_t t0; /* the first interrupt of this stop (0: none) */
	bool open;   /* between threadstop_begin and threadstop_end */
	struct threadstop_stats st;
};

struct threadstop *threadstop_create(pid_t pid, int dirfd, bool nonblocking)
{
	struct threadstop *ts = calloc(1, sizeof(*ts));

	if (!ts)
		return NULL;
	ts->pid = pid;
	ts->dirfd = dirfd;
	ts->nonblocking = nonblocking;
	return ts;
}

/* A late thread that has reported since: let it go.  True when it is
 * done with (reported, or gone). */
static bool threadstop_reap_late(pid_t tid)
{
	int status;
	pid_t w = waitpid(tid, &status, __WALL | WNOHANG);

	if (w == 0)
		return false;
	if (w == tid && WIFSTOPPED(status)) {
		int sig = status >> 16 == 0 ? WSTOPSIG(status) : 0;

		ptrace(PTRACE_DETACH, tid, NULL, (void *)(uintptr_t)sig);
	}
	return true;
}

static void threadstop_reap(struct threadstop *ts)
{
	size_t k = 0;

	for (size_t i = 0; i < ts->nlate; i++)
		if (!threadstop_reap_late(ts->late[i]))
			ts->late[k++] = ts->late[i];
	ts->nlate = k;
}

void threadstop_destroy(struct threadstop *ts)
{
	if (!ts)
		return;
	threadstop_end(ts);
	threadstop_reap(ts);
	free(ts);
}

bool threadstop_parse_ran(const char *text, uint64_t *ran)
{
	unsigned long long a, b, c;
	int used = 0;

	if (sscanf(text, "%llu %llu %llu%n", &a, &b, &c, &used) != 3 || !used)
		return false;
	*ran = c;
	return true;
}

/* A file of the thread's (procfs_read_text); false when it is gone. */
static bool threadstop_file(const struct threadstop *ts, pid_t tid,
			    const char *name, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "task/%d/%s", (int)tid, name);
	return procfs_read_text(ts->dirfd, path, buf, len);
}

/* Where thread t is: waiting (its call, sp, pc, and its count of runs,
 * read first), or running.  False when it is gone. */
static bool threadstop_look(const struct threadstop *ts,
			    struct threadstop_thread *t)
{
	char text[512];
	uint64_t ran = 0;

	if (threadstop_file(ts, t->tid, "schedstat", text, sizeof(text)))
		(void)threadstop_parse_ran(text, &ran);
	if (!threadstop_file(ts, t->tid, "syscall", text, sizeof(text)))
		return false;
	if (procfs_syscall_sp(text, &t->sp, &t->pc)) {
		t->how = THREADSTOP_WAITING;
		t->nr = (int32_t)strtol(text, NULL, 10);
		t->fp = 0;
		t->ran = ran;
	} else {
		t->how = THREADSTOP_RUNNING;
		t->sp = t->pc = t->fp = 0;
	}
	return true;
}

/* Thread t's registers, t stopped. */
static bool threadstop_regs(struct threadstop_thread *t)
{
#if defined(__x86_64__) || defined(__aarch64__)
	struct user_regs_struct r;
	struct iovec io = {&r, sizeof(r)};

	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)(uintptr_t)NT_PRSTATUS,
		   &io) < 0)
		return false;
#if defined(__x86_64__)
	t->sp = r.rsp;
	t->pc = r.rip;
	t->fp = r.rbp;
#else
	t->sp = r.sp;
	t->pc = r.pc;
	t->fp = r.regs[29];
#endif
	return true;
#else
	(void)t;
	return false;
#endif
}

/* Seize and interrupt running thread t; false when it cannot be (a
 * debugger holds it, it is gone). */
static bool threadstop_interrupt(struct threadstop *ts,
				 struct threadstop_thread *t)
{
	if (ts->nonblocking)
		return false;
	for (size_t i = 0; i < ts->nlate; i++)
		if (ts->late[i] == t->tid)
			return false; /* still ours, not reported yet */
	if (ptrace(PTRACE_SEIZE, t->tid, NULL, NULL) < 0) {
		if (errno == EPERM)
			ts->st.refused++;
		return false;
	}
	if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) < 0) {
		/* Seized, not interrupted: gone, or it will be let go when
		 * it reports a stop (a signal's). */
		if (ts->nlate < THREADSTOP_MAX)
			ts->late[ts->nlate++] = t->tid;
		return false;
	}
	if (!ts->t0)
		ts->t0 = clock_now_ns(CLOCK_MONOTONIC);
	t->how = THREADSTOP_STOPPED;
	t->held = false; /* until it reports */
	t->sig = 0;
	return true;
}

/* Whether thread tid is runnable (stat's state R): it will stop once it
 * gets a CPU; one in D will not until its call ends. */
static bool threadstop_runnable(const struct threadstop *ts, pid_t tid)
{
	char text[512];
	const char *p;

	return threadstop_file(ts, tid, "stat", text, sizeof(text)) &&
	       (p = strrchr(text, ')')) && p[1] == ' ' && p[2] == 'R';
}

int threadstop_parse_cpu(const char *text)
{
	const char *p = strrchr(text, ')');
	int field = 2; /* the one that ')' ends */
	long cpu;
	char *end;

	if (!p)
		return -1;
	while (*p && field < 39)
		if (*p++ == ' ')
			field++;
	if (*p < '0' || *p > '9')
		return -1;
	cpu = strtol(p, &end, 10);
	return (*end == ' ' || *end == '\n' || !*end) && cpu <= 1 << 20
		       ? (int)cpu
		       : -1;
}

/* The CPU thread tid last ran on; -1 when not known. */
static int threadstop_cpu(const struct threadstop *ts, pid_t tid)
{
	char text[1024];

	return threadstop_file(ts, tid, "stat", text, sizeof(text))
		       ? threadstop_parse_cpu(text)
		       : -1;
}

/* Wait for every interrupted thread (how STOPPED, not yet held) to
 * report: until THREADSTOP_DEADLINE_NS, and while one is still runnable
 * (waiting for a CPU on a busy machine) until THREADSTOP_RUNNABLE_NS. */
static void threadstop_wait(struct threadstop *ts)
{
	uint64_t start = clock_now_ns(CLOCK_MONOTONIC);
	uint64_t deadline = start + THREADSTOP_DEADLINE_NS;

	for (;;) {
		uint64_t now;
		size_t left = 0;

		for (size_t i = 0; i < ts->n; i++) {
			struct threadstop_thread *t = &ts->t[i];
			int status;
			pid_t w;

			if (t->how != THREADSTOP_STOPPED || t->held)
				continue;
			w = waitpid(t->tid, &status, __WALL | WNOHANG);
			if (w == 0) {
				left++;
				continue;
			}
			t->held = w == t->tid && WIFSTOPPED(status);
			if (!t->held) {
				/* Exited, or not ours any more. */
				t->how = THREADSTOP_RUNNING;
				continue;
			}
			/* A signal-delivery-stop holds its signal; an
			 * event stop (ours, or a group-stop) none. */
			t->sig = status >> 16 == 0 ? WSTOPSIG(status) : 0;
			if (!threadstop_regs(t))
				t->sp = t->pc = t->fp = 0;
		}
		if (!left)
			return;
		now = clock_now_ns(CLOCK_MONOTONIC);
		if (now >= deadline) {
			bool runnable = false;

			for (size_t i = 0; i < ts->n && !runnable; i++)
				runnable =
					ts->t[i].how == THREADSTOP_STOPPED &&
					!ts->t[i].held &&
					threadstop_runnable(ts, ts->t[i].tid);
			if (runnable && now < start + THREADSTOP_RUNNABLE_NS) {
				deadline = now + THREADSTOP_DEADLINE_NS;
				continue;
			}
			for (size_t i = 0; i < ts->n; i++) {
				struct threadstop_thread *t = &ts->t[i];

				if (t->how != THREADSTOP_STOPPED || t->held)
					continue;
				t->how = THREADSTOP_RUNNING;
				t->sp = t->pc = t->fp = 0;
				ts->st.late++;
				if (ts->nlate < THREADSTOP_MAX)
					ts->late[ts->nlate++] = t->tid;
			}
			return;
		}
		if (now - start >= THREADSTOP_SPIN_NS) {
			struct timespec nap = {0, 20000};

			nanosleep(&nap, NULL);
		}
	}
}

/* Wait for the threads interrupted and not yet reported. */
static void threadstop_wait_interrupted(struct threadstop *ts)
{
	bool any = false;

	for (size_t i = 0; i < ts->n; i++)
		any |= ts->t[i].how == THREADSTOP_STOPPED && !ts->t[i].held;
	if (any)
		threadstop_wait(ts);
}

size_t threadstop_begin(struct threadstop *ts,
			const struct threadstop_thread **out)
{
	int tfd;
	DIR *dir;
	struct dirent *d;

	threadstop_end(ts);
	threadstop_reap(ts);
	ts->n = 0;
	tfd = openat(ts->dirfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dir = tfd >= 0 ? fdopendir(tfd) : NULL;
	if (!dir) {
		if (tfd >= 0)
			close(tfd);
		*out = ts->t;
		return 0;
	}
	while ((d = readdir(dir)) && ts->n < THREADSTOP_MAX) {
		struct threadstop_thread *t = &ts->t[ts->n];
		char *end;
		long tid;

		if (d->d_name[0] < '0' || d->d_name[0] > '9')
			continue;
		errno = 0;
		tid = strtol(d->d_name, &end, 10);
		if (*end || errno || tid <= 0 || tid > INT32_MAX)
			continue;
		memset(t, 0, sizeof(*t));
		t->tid = (pid_t)tid;
		t->nr = -1;
		if (!threadstop_look(ts, t))
			continue;
		ts->n++;
		/* Interrupted right after it was seen running: a thread
		 * that is entering a call now would see EINTR. */
		if (t->how == THREADSTOP_RUNNING)
			(void)threadstop_interrupt(ts, t);
	}
	closedir(dir); /* closes tfd */
	ts->open = true;
	threadstop_wait_interrupted(ts);
	*out = ts->t;
	return ts->n;
}

bool threadstop_settled(struct threadstop *ts)
{
	bool settled = true;

	for (size_t i = 0; i < ts->n; i++) {
		struct threadstop_thread *t = &ts->t[i];
		struct threadstop_thread now = *t;
		char call[512], sched[128];
		uint64_t ran = 0, sp, pc;

		if (t->how != THREADSTOP_WAITING)
			continue;
		/* Its call, then its count of runs (the reverse of
		 * threadstop_look's order: a run between the two reads of
		 * either pair shows in the count). */
		if (threadstop_file(ts, t->tid, "syscall", call,
				    sizeof(call)) &&
		    threadstop_file(ts, t->tid, "schedstat", sched,
				    sizeof(sched)) &&
		    threadstop_parse_ran(sched, &ran) && ran == t->ran &&
		    procfs_syscall_sp(call, &sp, &pc) && sp == t->sp &&
		    pc == t->pc)
			continue; /* has not run since */
		settled = false;
		if (!threadstop_look(ts, &now)) {
			now.how = THREADSTOP_RUNNING; /* gone */
			*t = now;
			continue;
		}
		*t = now;
		if (t->how == THREADSTOP_RUNNING) /* at once, as in begin */
			(void)threadstop_interrupt(ts, t);
	}
	if (!settled)
		threadstop_wait_interrupted(ts);
	return settled;
}

/* Let held thread t go.  Its time: the clock just before, and the
 * call's own length. */
static void threadstop_release(struct threadstop *ts,
			       struct threadstop_thread *t, uint64_t *before,
			       uint64_t *len)
{
	*before = clock_now_ns(CLOCK_MONOTONIC);
	/* ESRCH: killed since it reported (a kill -9, another thread's
	 * execve): a traced thread that exits stays a zombie until its
	 * tracer waits for it -- reaped by threadstop_end. */
	if (ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(uintptr_t)t->sig) <
		    0 &&
	    ts->nlate < THREADSTOP_MAX)
		ts->late[ts->nlate++] = t->tid;
	*len = clock_now_ns(CLOCK_MONOTONIC) - *before;
	t->held = false;
}

void threadstop_end(struct threadstop *ts)
{
	uint32_t stopped = 0, waiting = 0, running = 0;
	uint64_t last = 0, shortest = UINT64_MAX;
	size_t held = 0;
	int me = -1;

	if (!ts->open)
		return;
	ts->open = false;
	/* A thread let go wakes on the CPU it last ran on when that one
	 * is busy, and takes it from this thread: the ones still held
	 * would wait for as long (3-5 ms measured at 10k fibers).  So the
	 * one that last ran on this CPU goes last -- when there is an
	 * order to keep: one thread alone costs no read of its stat. */
	for (size_t i = 0; i < ts->n; i++)
		held += ts->t[i].held;
	if (held > 1)
		me = sched_getcpu();
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < ts->n; i++) {
			struct threadstop_thread *t = &ts->t[i];
			uint64_t len;

			if (!t->held || (pass == 0 && me >= 0 &&
					 threadstop_cpu(ts, t->tid) == me))
				continue;
			threadstop_release(ts, t, &last, &len);
			if (len < shortest)
				shortest = len;
		}
	for (size_t i = 0; i < ts->n; i++) {
		const struct threadstop_thread *t = &ts->t[i];

		stopped += t->how == THREADSTOP_STOPPED;
		waiting += t->how == THREADSTOP_WAITING;
		running += t->how == THREADSTOP_RUNNING;
	}
	if (ts->t0) {
		/* Until the last thread was let go: the clock before its
		 * release, plus the shortest release of this stop.  The
		 * clock after it is no measure: the thread it woke can
		 * take this CPU at once, for milliseconds, while nothing
		 * is held any more. */
		uint64_t pause =
			last && shortest != UINT64_MAX
				? last + shortest - ts->t0
				: clock_now_ns(CLOCK_MONOTONIC) - ts->t0;

		ts->st.stops++;
		ts->st.pause_ns = pause;
		if (pause > ts->st.pause_max_ns)
			ts->st.pause_max_ns = pause;
		ts->t0 = 0;
	} else {
		ts->st.pause_ns = 0;
	}
	ts->st.stopped = stopped;
	ts->st.waiting = waiting;
	ts->st.running = running;
	/* One that was late and has stopped since: let go now, not a
	 * refresh later. */
	threadstop_reap(ts);
}

void threadstop_stats(const struct threadstop *ts, struct threadstop_stats *out)
{
	*out = ts->st;
}
