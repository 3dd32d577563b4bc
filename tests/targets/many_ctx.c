/*
 * many-ctx N: N ucontext contexts alive at once, then finished one by one
 * -- the preload's context table must track them all (issue 25: the old
 * table held 65,536 and dropped the rest silently) or say how many it
 * could not (COROTOP_CONTEXTS).
 *
 * Each context runs once to suspend (all N are then alive and parked),
 * and once more to end through uc_link.  Prints "live N" and a checksum of
 * what the contexts computed: the same natively, under LD_PRELOAD and
 * under corotop.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>

#define STACK (16u * 1024u)

static ucontext_t main_uc;
static ucontext_t *uc;
static uint32_t *val;

static void entry(int idx)
{
	val[idx] = (uint32_t)idx * 2654435761u;
	if (swapcontext(&uc[idx], &main_uc) != 0)
		abort();
	val[idx] ^= 0x5bd1e995u;
}

/* Not locals: swapcontext returns twice. */
static long n, i;
static char *stacks;
static uint64_t sum;

int main(int argc, char **argv)
{
	n = argc > 1 ? strtol(argv[1], NULL, 10) : 100000;

	if (n <= 0 || n > 1000000)
		return 2;
	uc = calloc((size_t)n, sizeof(*uc));
	val = calloc((size_t)n, sizeof(*val));
	stacks = mmap(NULL, (size_t)n * STACK, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!uc || !val || stacks == MAP_FAILED)
		return 3;
	for (i = 0; i < n; i++) {
		if (getcontext(&uc[i]) != 0)
			return 4;
		uc[i].uc_stack.ss_sp = stacks + (size_t)i * STACK;
		uc[i].uc_stack.ss_size = STACK;
		uc[i].uc_link = &main_uc;
		makecontext(&uc[i], (void (*)(void))entry, 1, (int)i);
		if (swapcontext(&main_uc, &uc[i]) != 0)
			return 5;
	}
	printf("live %ld\n", n);
	for (i = 0; i < n; i++)
		if (swapcontext(&main_uc, &uc[i]) != 0)
			return 6;
	for (i = 0; i < n; i++)
		sum = sum * 31 + val[i];
	printf("sum %016llx\n", (unsigned long long)sum);
	return 0;
}
