/*
 * longjmp_cost: what libcorotop-preload's longjmp wrappers (longjmp,
 * _longjmp, siglongjmp, __longjmp_chk: src/preload/preload.c,
 * preload_jump) cost a program, per jump.
 *
 * The program knows nothing of corotop.  Run it bare, under LD_PRELOAD
 * (interposed, untraced), under LD_PRELOAD with COROTOP_LONGJMP=0 (the
 * wrappers forward at once) and under `corotop -b -- ...` (traced); it
 * prints which it was, from its environment.  Cases:
 *
 *   unwind-root  setjmp, then a call to a function that longjmps back to
 *                it: an error path's jump, on the same stack (the thread's
 *                own).  ns per round trip (setjmp + call + longjmp).
 *   unwind-coro  the same, run on a context made with makecontext: the
 *                preload takes the running context from its stack bounds
 *                before it looks the jump's target up.
 *   switch       QEMU's coroutine switch (util/coroutine-ucontext.c; the
 *                shape of tests/targets/sjlj_ctx.c): a context made with
 *                makecontext on an mmap'd stack, started with one
 *                swapcontext whose trampoline saves its place with
 *                sigsetjmp and jumps back with siglongjmp; then each switch
 *                is a sigsetjmp(from, 0) and a siglongjmp(to).  The thread's
 *                stack and the context's ping-pong; ns per switch (under
 *                the preload each is a switch from one context to another:
 *                recorded, untraced or traced).
 *
 * Each case runs BATCHES batches of JUMPS jumps (switches), timed with
 * CLOCK_MONOTONIC around each batch; each line gives the median, the
 * minimum and the maximum of the per-batch averages, and the cost of one
 * CLOCK_MONOTONIC read on this machine.
 *
 * usage: longjmp_cost [JUMPS_PER_BATCH] [BATCHES]   (1000000 11)
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

#define STACK (256 * 1024)

enum { CMD_PONG, CMD_UNWIND };

static long per_batch;
static int batches;
static double *batch_ns;

static jmp_buf unwind_env;
static sigjmp_buf root_env, co_env, start_env;
static ucontext_t co_uc, co_back;
static volatile int cmd;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The error path: back to the setjmp, from a frame below it. */
static __attribute__((noinline)) void fail(int v)
{
	longjmp(unwind_env, v);
}

/* batches of per_batch setjmp/longjmp round trips, into batch_ns. */
static void unwind_batches(void)
{
	for (int b = 0; b < batches; b++) {
		volatile long i; /* changed between setjmp and longjmp */
		uint64_t t0 = now_ns();

		for (i = 0; i < per_batch; i++)
			if (!setjmp(unwind_env))
				fail(1);
		batch_ns[b] = (double)(now_ns() - t0) / (double)per_batch;
	}
}

/* QEMU's qemu_coroutine_switch: save here, jump there. */
static int co_switch(sigjmp_buf *from, sigjmp_buf *to, int action)
{
	int ret = sigsetjmp(*from, 0);

	if (ret == 0)
		siglongjmp(*to, action);
	return ret;
}

/* The context's entry: back to its creator at once, then, each time it is
 * entered, what cmd says, and back. */
static void trampoline(void)
{
	if (!sigsetjmp(co_env, 0))
		siglongjmp(start_env, 1);
	for (;;) {
		if (cmd == CMD_UNWIND)
			unwind_batches();
		co_switch(&co_env, &root_env, 1);
	}
}

static void co_make(void)
{
	char *stack = mmap(NULL, STACK, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (stack == MAP_FAILED)
		exit(2);
	getcontext(&co_uc);
	co_uc.uc_link = &co_back;
	co_uc.uc_stack.ss_sp = stack;
	co_uc.uc_stack.ss_size = STACK;
	makecontext(&co_uc, trampoline, 0);
	if (!sigsetjmp(start_env, 0))
		swapcontext(&co_back, &co_uc);
}

static void switch_batches(void)
{
	cmd = CMD_PONG;
	for (int b = 0; b < batches; b++) {
		uint64_t t0 = now_ns();

		/* Each iteration is two switches: there and back. */
		for (long i = 0; i < per_batch / 2; i++)
			co_switch(&root_env, &co_env, 1);
		batch_ns[b] =
			(double)(now_ns() - t0) / (double)(per_batch / 2 * 2);
	}
}

static void report(const char *mode, const char *name, long jumps,
		   double clock_ns)
{
	qsort(batch_ns, (size_t)batches, sizeof(*batch_ns), cmp_double);
	printf("longjmp_cost mode=%s case=%s jumps=%ld batches=%d "
	       "ns_median=%.2f min=%.2f max=%.2f clock_ns=%.2f\n",
	       mode, name, jumps, batches, batch_ns[batches / 2], batch_ns[0],
	       batch_ns[batches - 1], clock_ns);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *pre = getenv("LD_PRELOAD");
	const char *lj = getenv("COROTOP_LONGJMP");
	int preloaded = pre && strstr(pre, "corotop-preload");
	int nojmp = preloaded && lj && !strcmp(lj, "0");
	char mode[32];
	double clock_ns;
	uint64_t t0;

	per_batch = argc > 1 ? atol(argv[1]) : 1000000;
	batches = argc > 2 ? atoi(argv[2]) : 11;
	batch_ns = calloc(batches > 0 ? (size_t)batches : 1, sizeof(*batch_ns));
	if (per_batch < 2 || batches < 1 || !batch_ns)
		return 2;
	snprintf(mode, sizeof(mode), "%s%s",
		 !preloaded		  ? "bare"
		 : getenv("CTP_SHM_PATH") ? "traced"
					  : "interposed",
		 nojmp ? "-nojmp" : "");
	t0 = now_ns();
	for (int i = 0; i < 1000000; i++)
		(void)now_ns();
	clock_ns = (double)(now_ns() - t0) / 1e6;

	co_make();
	unwind_batches();
	report(mode, "unwind-root", per_batch, clock_ns);
	cmd = CMD_UNWIND;
	co_switch(&root_env, &co_env, 1);
	report(mode, "unwind-coro", per_batch, clock_ns);
	switch_batches();
	report(mode, "switch", per_batch / 2 * 2, clock_ns);
	return 0;
}
