/*
 * uctx-target: a scheduler on glibc's ucontext that knows nothing of
 * corotop -- what `corotop -- CMD` must trace through libcorotop-preload.
 *
 * usage: uctx-target N ROUNDS [--stuck] [--hold] [--mmap] [--forever]
 *
 * N coroutines (makecontext, two int arguments) each yield ROUNDS times to
 * the scheduler (swapcontext) and return; uc_link brings the scheduler
 * back.  With --stuck one more coroutine yields once and is never resumed:
 * it stays parked at stuck_wait until the end.  With --hold the program
 * stays (in pause) until a signal ends it, so a test can look at it while
 * it lives.  It prints, on stdout, what a tracer must have seen:
 *   coroutines=N rounds=R swaps=S
 * where S counts every swapcontext call the program made.
 *
 * --mmap gives each coroutine a stack of its own mapping, below a guard
 * page (as guard-paged stack allocators do), instead of malloc's.
 * --forever: the workers yield forever at the same depth (saving the
 * same bytes each time), one round every millisecond, while the stuck
 * one stays parked; it prints "coroutines=N forever" first and runs
 * until a signal ends it -- what a scan must not take for stuck.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define STACK (64 * 1024)

static ucontext_t sched_ctx;
static ucontext_t *co;
static int *done;
static long swaps;
static int stuck, hold, mapped, forever; /* swapcontext returns twice */

/* A stack of its own mapping, a guard page below it. */
static void *stack_of_its_own(void)
{
	char *m = mmap(NULL, STACK + 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED || mprotect(m, 4096, PROT_NONE)) {
		perror("uctx-target: mmap");
		exit(1);
	}
	return m + 4096;
}

static void worker(int id, int rounds)
{
	for (int r = 0; forever || r < rounds; r++) {
		swaps++;
		swapcontext(&co[id], &sched_ctx);
	}
	done[id] = 1;
}

/* Parks once and is never resumed. */
static __attribute__((noinline)) void stuck_wait(int id, int unused)
{
	(void)unused;
	swaps++;
	swapcontext(&co[id], &sched_ctx);
	abort(); /* never resumed */
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	int rounds = argc > 2 ? atoi(argv[2]) : 10;
	int total, left;

	for (int i = 3; i < argc; i++) {
		stuck |= !strcmp(argv[i], "--stuck");
		hold |= !strcmp(argv[i], "--hold");
		mapped |= !strcmp(argv[i], "--mmap");
		forever |= !strcmp(argv[i], "--forever");
	}
	if (n < 1 || rounds < 0) {
		fprintf(stderr, "usage: uctx-target N ROUNDS [--stuck] "
				"[--hold] [--mmap] [--forever]\n");
		return 2;
	}
	total = n + stuck;
	co = calloc((size_t)total, sizeof(*co));
	done = calloc((size_t)total, sizeof(*done));
	for (int i = 0; i < total; i++) {
		getcontext(&co[i]);
		co[i].uc_stack.ss_sp =
			mapped ? stack_of_its_own() : malloc(STACK);
		co[i].uc_stack.ss_size = STACK;
		co[i].uc_link = &sched_ctx;
		if (i < n)
			makecontext(&co[i], (void (*)(void))worker, 2, i,
				    rounds);
		else
			makecontext(&co[i], (void (*)(void))stuck_wait, 2, i,
				    0);
	}
	if (stuck) {
		swaps++;
		swapcontext(&sched_ctx, &co[n]); /* it parks for good */
	}
	if (forever) {
		printf("coroutines=%d forever\n", n);
		fflush(stdout);
	}
	do {
		const struct timespec ms = {0, 1000000};

		if (forever)
			nanosleep(&ms, NULL);
		left = 0;
		for (int i = 0; i < n; i++) {
			if (done[i])
				continue;
			swaps++;
			swapcontext(&sched_ctx, &co[i]);
			left += !done[i];
		}
	} while (left || forever);
	printf("coroutines=%d rounds=%d swaps=%ld\n", n, rounds, swaps);
	fflush(stdout);
	while (hold)
		pause(); /* until a signal ends it */
	return 0;
}
