/*
 * ctx_churn: the cost of making and finishing contexts over a long life
 * (issue 25).  TOTAL contexts (default 3,000,000), one after another, each
 * made with makecontext on a 16 KiB stack at a pseudo-random 16-byte
 * boundary of a 256 MiB span -- the stack tops vary as a server's
 * heap-allocated coroutine stacks do -- run once and finished (its entry
 * returns through uc_link).  Prints the time of every 100,000th batch, then one
 * line:
 *
 *   ctx_churn: total N first_100k_s F last_100k_s L last_over_first R
 *
 * bench/ctx_churn.sh runs it natively and under LD_PRELOAD.  The old
 * preload's maps never turned a slot back to empty: 0.35 s per 100k at
 * first, 47 s at 3.5 M.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

#define STACK (16u * 1024u)
#define SPAN (256ul << 20)
#define BATCH 100000l

static ucontext_t main_uc, uc;
static volatile uint64_t work;

static void entry(void)
{
	work++;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Not locals: swapcontext returns twice. */
static long total, i;
static size_t slots, slot;
static double t0, first, last;
static char *span;

int main(int argc, char **argv)
{
	slots = (SPAN - STACK) / 16;
	total = argc > 1 ? strtol(argv[1], NULL, 10) : 3000000;

	if (total < BATCH)
		total = BATCH;
	span = mmap(NULL, SPAN, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (span == MAP_FAILED)
		return 3;
	t0 = now_s();
	for (i = 0; i < total; i++) {
		/* 16 M places 16 bytes apart: every context's stack top
		 * differs from the last few million's. */
		slot = ((uint64_t)i * 2654435761u) % slots;

		if (getcontext(&uc) != 0)
			return 4;
		uc.uc_stack.ss_sp = span + slot * 16;
		uc.uc_stack.ss_size = STACK;
		uc.uc_link = &main_uc;
		makecontext(&uc, entry, 0);
		if (swapcontext(&main_uc, &uc) != 0)
			return 5;
		if ((i + 1) % BATCH == 0) {
			double t = now_s();

			if (i + 1 == BATCH)
				first = t - t0;
			last = t - t0;
			if ((i + 1) % (5 * BATCH) == 0)
				printf("ctx_churn: %ld contexts, this 100k "
				       "%.3f s\n",
				       i + 1, last);
			fflush(stdout);
			t0 = t;
		}
	}
	printf("ctx_churn: total %ld first_100k_s %.3f last_100k_s %.3f "
	       "last_over_first %.2f\n",
	       total, first, last, last / first);
	return work == (uint64_t)total ? 0 : 6;
}
