/*
 * fork-ctx MODE [PROGRAM ARGS...]: ucontext coroutines across a child
 * process (issue 25).  Two contexts are made and parked; then
 *   fork    the child switches them (the copies it inherited) 3 times
 *           each and finishes them; the parent waits for it, then does
 *           the same with its own;
 *   exec    a forked child execs PROGRAM ARGS;
 *   spawn   posix_spawn PROGRAM ARGS (vfork-like: the child shares the
 *           parent's memory until it execs).
 * Prints, in a fixed order, what each process computed and how the child
 * ended: the same natively, under LD_PRELOAD and under corotop.
 */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#define STACK (64u * 1024u)

extern char **environ;

static ucontext_t main_uc, uc[2];
static uint64_t acc[2];

static void entry(int idx)
{
	for (int r = 0; r < 3; r++) {
		acc[idx] = acc[idx] * 31 + (uint64_t)(idx + r + 1);
		if (swapcontext(&uc[idx], &main_uc) != 0)
			abort();
	}
}

/* Run both contexts to their end (3 more switches each, then return). */
static void finish(const char *who)
{
	for (int r = 0; r < 3; r++)
		for (int i = 0; i < 2; i++)
			if (swapcontext(&main_uc, &uc[i]) != 0)
				abort();
	printf("%s: %llx %llx\n", who, (unsigned long long)acc[0],
	       (unsigned long long)acc[1]);
	fflush(stdout);
}

static int child_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Not locals: swapcontext returns twice. */
static int made;

int main(int argc, char **argv)
{
	static char stacks[2][STACK];
	pid_t pid;

	if (argc < 2)
		return 2;
	for (made = 0; made < 2; made++) {
		if (getcontext(&uc[made]) != 0)
			return 3;
		uc[made].uc_stack.ss_sp = stacks[made];
		uc[made].uc_stack.ss_size = STACK;
		uc[made].uc_link = &main_uc;
		makecontext(&uc[made], (void (*)(void))entry, 1, made);
		if (swapcontext(&main_uc, &uc[made]) != 0) /* runs, parks */
			return 4;
	}
	fflush(stdout);
	if (!strcmp(argv[1], "fork")) {
		pid = fork();
		if (pid < 0)
			return 5;
		if (pid == 0) {
			finish("child");
			_exit(7);
		}
		printf("child ended %d\n", child_status(pid));
	} else if (!strcmp(argv[1], "exec") && argc > 2) {
		pid = fork();
		if (pid < 0)
			return 5;
		if (pid == 0) {
			execv(argv[2], argv + 2);
			_exit(127);
		}
		printf("child ended %d\n", child_status(pid));
	} else if (!strcmp(argv[1], "spawn") && argc > 2) {
		if (posix_spawn(&pid, argv[2], NULL, NULL, argv + 2, environ))
			return 6;
		printf("child ended %d\n", child_status(pid));
	} else {
		return 2;
	}
	finish("parent");
	return 0;
}
