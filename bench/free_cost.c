/*
 * free_cost: what the preload's free() and munmap() cost a program -- they
 * watch for a context's stack being given back (src/preload/preload.c,
 * "stacks given back").  Run as it is, then under LD_PRELOAD (and under
 * corotop: bench/preload_cost.sh runs it the three ways).
 *
 *   free_cost
 *     free       malloc(64) + free, median ns per pair of 21 rounds of
 *                1,000,000
 *     free-100k  the same after 100,000 contexts were made with malloc'd
 *                stacks (kept): the stack-base filter is about 10% full,
 *                so about one free in ten looks the page map up
 *     munmap     mmap + munmap of one page, median ns per pair of 21
 *                rounds of 20,000
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

#define ROUNDS 21

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v)
{
	qsort(v, ROUNDS, sizeof(*v), cmp);
	return v[ROUNDS / 2];
}

static double free_pairs(void)
{
	double per[ROUNDS];
	void *volatile sink;

	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t0 = now_ns();

		for (int i = 0; i < 1000000; i++) {
			sink = malloc(64);
			free(sink);
		}
		per[r] = (double)(now_ns() - t0) / 1e6;
	}
	return median(per);
}

static double munmap_pairs(void)
{
	double per[ROUNDS];

	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t0 = now_ns();

		for (int i = 0; i < 20000; i++) {
			void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p == MAP_FAILED || munmap(p, 4096) != 0)
				abort();
		}
		per[r] = (double)(now_ns() - t0) / 2e4;
	}
	return median(per);
}

static void entry(void)
{
}

int main(void)
{
	static ucontext_t uc[100000];

	printf("free_cost free ns_per_pair=%.1f\n", free_pairs());
	printf("free_cost munmap ns_per_pair=%.1f\n", munmap_pairs());
	for (int i = 0; i < 100000; i++) {
		getcontext(&uc[i]);
		uc[i].uc_stack.ss_sp = malloc(16384);
		uc[i].uc_stack.ss_size = 16384;
		if (!uc[i].uc_stack.ss_sp)
			abort();
		makecontext(&uc[i], entry, 0);
	}
	printf("free_cost free-100k ns_per_pair=%.1f\n", free_pairs());
	return 0;
}
