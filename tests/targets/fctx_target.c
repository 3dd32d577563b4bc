/*
 * fctx-target: tasks on Boost.Context's raw fcontext (make_fcontext,
 * jump_fcontext, ontop_fcontext from libboost_context.so) that know
 * nothing of corotop -- what `corotop -- CMD` must trace through
 * libcorotop-preload, including a task moving between threads.
 *
 * usage: fctx-target N ROUNDS [--stuck] [--hold]
 *
 * Thread A starts every task (each runs until its first yield); thread B
 * then resumes them all until each has yielded ROUNDS times, after which a
 * task leaves the way Boost's own fibers do: ontop_fcontext with a
 * function that frees its stack and returns a null context.  With --stuck
 * one more task yields once (at stuck_wait) and is never resumed.  With
 * --hold the program stays (in pause) until a signal ends it.  On stdout:
 *   tasks=N rounds=R jumps=J tid_a=A tid_b=B
 * where J counts every jump_fcontext and ontop_fcontext call.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fcontext.h"

#define STACK (128 * 1024)

struct task {
	fcontext_t ctx;
	char *stack;
	int rounds;
	int done;
};

static atomic_long jumps;
static int rounds_all;

/* Runs on the scheduler's stack, after the task left it: free it. */
static transfer_t task_exit(transfer_t t)
{
	struct task *k = t.data;

	free(k->stack);
	k->stack = NULL;
	k->done = 1;
	return (transfer_t){NULL, NULL};
}

static void task_main(transfer_t t)
{
	struct task *k = t.data;

	for (int r = 0; r < k->rounds; r++) {
		atomic_fetch_add(&jumps, 1);
		t = jump_fcontext(t.fctx, NULL); /* yield */
	}
	atomic_fetch_add(&jumps, 1);
	ontop_fcontext(t.fctx, k, task_exit);
	abort(); /* never resumed */
}

static __attribute__((noinline)) void stuck_wait(transfer_t t)
{
	atomic_fetch_add(&jumps, 1);
	jump_fcontext(t.fctx, NULL);
	abort();
}

static struct task *tasks;
static int ntasks, stuck;

/* Thread A: start each task; it runs to its first yield. */
static void *thread_a(void *arg)
{
	long *tid = arg;

	*tid = syscall(SYS_gettid);
	for (int i = 0; i < ntasks + stuck; i++) {
		transfer_t t;

		atomic_fetch_add(&jumps, 1);
		t = jump_fcontext(tasks[i].ctx, &tasks[i]);
		tasks[i].ctx = t.fctx;
	}
	return NULL;
}

/* Thread B: resume every task until it is done. */
static void *thread_b(void *arg)
{
	long *tid = arg;
	int left;

	*tid = syscall(SYS_gettid);
	do {
		left = 0;
		for (int i = 0; i < ntasks; i++) {
			transfer_t t;

			if (tasks[i].done)
				continue;
			atomic_fetch_add(&jumps, 1);
			t = jump_fcontext(tasks[i].ctx, NULL);
			tasks[i].ctx = t.fctx;
			left += !tasks[i].done;
		}
	} while (left);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t a, b;
	long tid_a = 0, tid_b = 0;
	int hold = 0;

	ntasks = argc > 1 ? atoi(argv[1]) : 4;
	rounds_all = argc > 2 ? atoi(argv[2]) : 10;
	for (int i = 3; i < argc; i++) {
		stuck |= !strcmp(argv[i], "--stuck");
		hold |= !strcmp(argv[i], "--hold");
	}
	if (ntasks < 1 || rounds_all < 1) {
		fprintf(stderr,
			"usage: fctx-target N ROUNDS [--stuck] [--hold]\n");
		return 2;
	}
	tasks = calloc((size_t)(ntasks + stuck), sizeof(*tasks));
	for (int i = 0; i < ntasks + stuck; i++) {
		tasks[i].stack = malloc(STACK);
		tasks[i].rounds = rounds_all;
		tasks[i].ctx =
			make_fcontext(tasks[i].stack + STACK, STACK,
				      i < ntasks ? task_main : stuck_wait);
	}
	pthread_create(&a, NULL, thread_a, &tid_a);
	pthread_join(a, NULL);
	pthread_create(&b, NULL, thread_b, &tid_b);
	pthread_join(b, NULL);
	printf("tasks=%d rounds=%d jumps=%ld tid_a=%ld tid_b=%ld\n", ntasks,
	       rounds_all, (long)atomic_load(&jumps), tid_a, tid_b);
	fflush(stdout);
	while (hold)
		pause(); /* until a signal ends it */
	return 0;
}
