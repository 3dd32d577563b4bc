/*
 * block-target: threads that wait in the kernel beside one that runs
 * coroutines, for corotop's refreshes of a process it scans (issue 30):
 * stopping threads must not surface EINTR, and the target must run on
 * unchanged.
 *
 * usage: block-target
 *
 * Threads:
 *   epoller  epoll_wait(-1) on a pipe: woken once, at the end;
 *   reader   read() on another pipe: the same;
 *   spinner  two ucontext coroutines (spin_task, glibc's swapcontext, on
 *            mmap'd stacks of their own, below guard pages, every other
 *            turn parked one frame deeper, in spin_deeper), each doing
 *            about 200 us of
 *            arithmetic per turn, until told to stop;
 *   main     prints "ready tids=E,R,S" and waits for a line on stdin.
 * Then main wakes the waiters, stops the spinner and joins them all, and
 * prints "epoll=N read=N eintr=N": each waiter's result, and how many of
 * their calls ended in EINTR (an epoll_wait interrupted by a ptrace stop
 * does; a read restarts).  Exit status 0, or 3 when any call saw EINTR.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#define BT_STACK (64 * 1024)

static int epoll_pipe[2], read_pipe[2];
static _Atomic int eintr;
static _Atomic int stop;
static _Atomic pid_t tids[3];
static int epoll_got, read_got;
static ucontext_t sched_uc, task_uc[2];

static void note_tid(int i)
{
	atomic_store_explicit(&tids[i], (pid_t)syscall(SYS_gettid),
			      memory_order_release);
}

static void *waiter_epoll(void *arg)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int ep = epoll_create1(EPOLL_CLOEXEC);

	(void)arg;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, epoll_pipe[0], &ev))
		exit(1);
	note_tid(0);
	for (;;) {
		int r = epoll_wait(ep, &ev, 1, -1);

		if (r < 0 && errno == EINTR) {
			atomic_fetch_add_explicit(&eintr, 1,
						  memory_order_relaxed);
			continue;
		}
		epoll_got = r;
		break;
	}
	close(ep);
	return NULL;
}

static void *waiter_read(void *arg)
{
	char c;

	(void)arg;
	note_tid(1);
	for (;;) {
		ssize_t r = read(read_pipe[0], &c, 1);

		if (r < 0 && errno == EINTR) {
			atomic_fetch_add_explicit(&eintr, 1,
						  memory_order_relaxed);
			continue;
		}
		read_got = (int)r;
		break;
	}
	return NULL;
}

/* A park one frame deeper than spin_task's own. */
__attribute__((noinline)) static void spin_deeper(int which)
{
	swapcontext(&task_uc[which], &sched_uc);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

/* A coroutine: turns of work, parked in swapcontext between them, every
 * other turn from spin_deeper (its saved context then lies lower on its
 * stack: a record kept by its stack's range stays the same). */
static void spin_task(int which)
{
	volatile uint64_t x = 0x9e3779b97f4a7c15ull + (uint64_t)which;

	for (unsigned turn = 0;; turn++) {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
		if (turn & 1)
			spin_deeper(which);
		else
			swapcontext(&task_uc[which], &sched_uc);
	}
}

/* Coroutine i, made on a stack of its own: a mapping below a guard page
 * (as protected stacks are), so that two never merge into one. */
static void spin_make(int i)
{
	char *stack = mmap(NULL, BT_STACK + 4096, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (stack == MAP_FAILED || mprotect(stack, 4096, PROT_NONE) ||
	    getcontext(&task_uc[i]))
		exit(1);
	stack += 4096;
	task_uc[i].uc_stack.ss_sp = stack;
	task_uc[i].uc_stack.ss_size = BT_STACK;
	task_uc[i].uc_link = NULL;
	makecontext(&task_uc[i], (void (*)(void))spin_task, 1, i);
}

static void *spinner(void *arg)
{
	(void)arg;
	spin_make(0);
	spin_make(1);
	note_tid(2);
	while (!atomic_load_explicit(&stop, memory_order_acquire))
		for (int i = 0; i < 2; i++)
			swapcontext(&sched_uc, &task_uc[i]);
	return NULL;
}

int main(void)
{
	pthread_t t[3];
	char line[64];

	if (pipe(epoll_pipe) || pipe(read_pipe) ||
	    pthread_create(&t[0], NULL, waiter_epoll, NULL) ||
	    pthread_create(&t[1], NULL, waiter_read, NULL) ||
	    pthread_create(&t[2], NULL, spinner, NULL))
		return 1;
	for (int i = 0; i < 3; i++)
		while (!atomic_load_explicit(&tids[i], memory_order_acquire))
			usleep(1000);
	printf("ready tids=%d,%d,%d\n", (int)tids[0], (int)tids[1],
	       (int)tids[2]);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = '\0';
	if (write(epoll_pipe[1], "x", 1) != 1 ||
	    write(read_pipe[1], "x", 1) != 1)
		return 1;
	atomic_store_explicit(&stop, 1, memory_order_release);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	printf("epoll=%d read=%d eintr=%d\n", epoll_got, read_got,
	       atomic_load_explicit(&eintr, memory_order_relaxed));
	return atomic_load_explicit(&eintr, memory_order_relaxed) ? 3 : 0;
}
