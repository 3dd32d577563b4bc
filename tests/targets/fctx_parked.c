/*
 * fctx-parked: tasks on Boost.Context's raw fcontext (libboost_context's
 * make_fcontext and jump_fcontext) left parked, in a program that knows
 * nothing of corotop -- the truth for the memory scan's test
 * (integration-ctxscan).
 *
 * usage: fctx-parked N [--flip]
 *
 * Each task first parks DEEP frames down (a recursion of its own), is
 * resumed, unwinds, and parks again near its entry, where it stays: its
 * stack keeps the first park's saved area, dead, below the live one.
 * Every task's fcontext_t is kept in one heap array, as a scheduler
 * keeps its queue.  On stdout, once all are parked:
 *   parked=N
 *   fctx=0x...        (one line per task: the value kept)
 * then the program waits until its stdin closes, and exits 0.
 *
 * With --flip (corotop's refreshes, e2e-scan-refresh), each stack is a
 * mapping of its own below a guard page, and each 'f' read on stdin
 * resumes every task once, which parks again alternately three frames
 * deeper (descend) and from its entry: its saved area moves down and up
 * its stack, kept[] following it.  The fctx lines are then only the
 * first parks.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fcontext.h"

#define STACK (64 * 1024)
#define DEEP 6

static fcontext_t *kept;  /* the tasks' contexts: the "queue" */
static char **stacks;	  /* their stacks */
static fcontext_t back;	  /* main's, while a task runs */
static volatile int sink; /* keeps the recursion a recursion */

static void park(void)
{
	transfer_t t = jump_fcontext(back, NULL);

	back = t.fctx;
}

static __attribute__((noinline)) void descend(int depth)
{
	volatile char frame[96];

	frame[0] = (char)depth;
	if (depth)
		descend(depth - 1);
	else
		park(); /* the first park: dead once the task returns here */
	sink += frame[0];
}

static void task(transfer_t t)
{
	back = t.fctx;
	descend(DEEP);
	park(); /* the last park: it stays (without --flip) */
	for (unsigned turn = 0;; turn++) {
		if (turn & 1)
			park();
		else
			descend(2); /* the first flip's */
	}
}

/* A stack of its own: a mapping below a guard page (--flip). */
static char *stack_mapped(void)
{
	char *m = mmap(NULL, STACK + 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED || mprotect(m, 4096, PROT_NONE))
		return NULL;
	return m + 4096;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;
	int flip = argc > 2 && !strcmp(argv[2], "--flip");
	char c;

	if (n < 1 || n > 100000) {
		fprintf(stderr, "usage: fctx-parked N (1 to 100000)\n");
		return 2;
	}
	kept = calloc((size_t)n, sizeof(*kept));
	stacks = calloc((size_t)n, sizeof(*stacks));
	if (!kept || !stacks)
		return 1;
	for (long i = 0; i < n; i++) {
		char *stack = stacks[i] = flip ? stack_mapped() : malloc(STACK);
		transfer_t t;

		if (!stack)
			return 1;
		t = jump_fcontext(make_fcontext(stack + STACK, STACK, task),
				  NULL);
		t = jump_fcontext(t.fctx, NULL); /* the second park */
		kept[i] = t.fctx;
	}
	printf("parked=%ld\n", n);
	for (long i = 0; i < n; i++)
		printf("fctx=%p\n", kept[i]);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		for (long i = 0; flip && c == 'f' && i < n; i++)
			kept[i] = jump_fcontext(kept[i], NULL).fctx;
	if (flip)
		return 0; /* mapped stacks: the kernel's */
	/* The tasks are never resumed: their stacks are only memory (and
	 * a leak checker's business). */
	for (long i = 0; i < n; i++)
		free(stacks[i]);
	free(stacks);
	free(kept);
	return 0;
}
