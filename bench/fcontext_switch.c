/*
 * fcontext_switch: what libcorotop-preload adds to a context switch -- a
 * jump_fcontext ping-pong between two contexts (Boost.Context's raw
 * fcontext, the switch under Boost.Fiber), timed per switch.
 *
 * The program knows nothing of corotop: bench/preload_cost.sh runs it bare,
 * with the preload in LD_PRELOAD but no corotop (interposed, untraced), and
 * under `corotop -b -- ...` (interposed and traced).  It prints which it
 * was (from its environment), the median over RUNS batches of the time
 * per switch, and the cost of one CLOCK_MONOTONIC read on this machine
 * (the target: at most one clock read + 15 ns added per switch).
 *
 * usage: fcontext_switch [SWITCHES_PER_BATCH] [BATCHES]
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fcontext.h"

#define STACK (64 * 1024)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The other side: jumps straight back, forever. */
static void pong(transfer_t t)
{
	for (;;)
		t = jump_fcontext(t.fctx, NULL);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	long per = argc > 1 ? atol(argv[1]) : 1000000;
	int batches = argc > 2 ? atoi(argv[2]) : 11;
	const char *pre = getenv("LD_PRELOAD");
	const char *mode = !pre || !strstr(pre, "corotop-preload") ? "bare"
			   : getenv("CTP_SHM_PATH")		   ? "traced"
						    : "interposed";
	char *stack = malloc(STACK);
	double *ns = calloc((size_t)batches, sizeof(*ns)), clock_ns;
	fcontext_t other;
	uint64_t t0;

	if (per < 1 || batches < 1 || !stack || !ns)
		return 2;
	other = make_fcontext(stack + STACK, STACK, pong);
	for (int b = 0; b < batches; b++) {
		t0 = now_ns();
		/* Each iteration is two switches: there and back. */
		for (long i = 0; i < per / 2; i++)
			other = jump_fcontext(other, NULL).fctx;
		ns[b] = (double)(now_ns() - t0) / (double)(per / 2 * 2);
	}
	qsort(ns, (size_t)batches, sizeof(*ns), cmp_double);
	t0 = now_ns();
	for (int i = 0; i < 1000000; i++)
		(void)now_ns();
	clock_ns = (double)(now_ns() - t0) / 1e6;
	printf("fcontext_switch mode=%s switches=%ld batches=%d "
	       "ns_per_switch_median=%.2f min=%.2f max=%.2f clock_ns=%.2f\n",
	       mode, per / 2 * 2, batches, ns[batches / 2], ns[0],
	       ns[batches - 1], clock_ns);
	return 0;
}
