/*
 * free-ctx: contexts that end the way Boost.Coroutine v1, GNU Pth and
 * pdns's MTasker end theirs -- the finished context jumps back with a
 * plain swapcontext (it never returns from its entry), and its stack is
 * given back afterwards: free()d (malloc'd stacks, unaligned, side by
 * side) or munmap()ed (mmap'd stacks with a guard page).  No stack is
 * made again after the frees, so only the give-back can tell corotop the
 * contexts ended.
 *
 *   free-ctx free|munmap N
 *       N contexts made first, each run once to its end, then every stack
 *       given back; prints "ran N" and a checksum of what the contexts
 *       computed, and exits 0.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define STACK (64 * 1024)
#define GUARD 4096

static ucontext_t main_uc;
static ucontext_t *ucs;
static uint64_t sum;

static void body(unsigned k)
{
	volatile char buf[256];

	memset((char *)buf, (int)k, sizeof(buf));
	sum += buf[k % sizeof(buf)] + k;
	/* The end: back to main for good, never returning. */
	swapcontext(&ucs[k], &main_uc);
	abort();
}

int main(int argc, char **argv)
{
	unsigned n = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 0;
	bool unmap = argc > 1 && !strcmp(argv[1], "munmap");
	void **stacks;

	if (argc < 3 || !n || (!unmap && strcmp(argv[1], "free"))) {
		fprintf(stderr, "usage: free-ctx free|munmap N\n");
		return 2;
	}
	ucs = calloc(n, sizeof(*ucs));
	stacks = calloc(n, sizeof(*stacks));
	if (!ucs || !stacks)
		return 1;
	for (unsigned k = 0; k < n; k++) {
		char *base;

		if (unmap) {
			base = mmap(NULL, STACK + GUARD, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (base == MAP_FAILED)
				return 1;
			mprotect(base, GUARD, PROT_NONE);
			stacks[k] = base;
			base += GUARD;
		} else {
			/* Odd sizes: the stacks do not start on pages, and
			 * neighbours share them. */
			base = malloc(STACK + 16 * (k % 7));
			if (!base)
				return 1;
			stacks[k] = base;
		}
		getcontext(&ucs[k]);
		ucs[k].uc_stack.ss_sp = base;
		ucs[k].uc_stack.ss_size = STACK;
		ucs[k].uc_link = NULL;
		makecontext(&ucs[k], (void (*)(void))body, 1, k);
	}
	for (unsigned k = 0; k < n; k++)
		swapcontext(&main_uc, &ucs[k]);
	for (unsigned k = 0; k < n; k++)
		if (unmap)
			munmap(stacks[k], STACK + GUARD);
		else
			free(stacks[k]);
	printf("ran %u sum %llu\n", n, (unsigned long long)sum);
	free(stacks);
	free(ucs);
	return 0;
}
