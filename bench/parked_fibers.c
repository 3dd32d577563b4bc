/*
 * parked_fibers: a program that knows nothing of corotop with N ucontext
 * coroutines parked, for what walking their parks costs corotop
 * (bench/where_walks.sh, issue 28: "at most 5% of a core at 100k").
 *
 * Each coroutine runs on a 16 KiB mmap'd stack (MAP_NORESERVE: only the
 * pages it touches are resident), calls park_here(), which swapcontext()s
 * back to main: parked in the program's own function, as a real server's
 * idle sessions are.  Every `churn` ms (0: never) main resumes the next K
 * of them round robin, each parking again at once, so K parks change per
 * round: the walks' steady work.  Prints "ready N" on stderr once all are
 * parked, then runs until a signal ends it.  Run it under the preload
 * (corotop -- parked_fibers N ...): swapcontext is how it is traced.
 *
 * Usage: parked_fibers N [churn_ms K]
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define STACK (16u * 1024u)

static ucontext_t main_ctx;
static ucontext_t *ctx;
static volatile sig_atomic_t done;

static void on_term(int sig)
{
	(void)sig;
	done = 1;
}

__attribute__((noinline)) static void park_here(long i)
{
	swapcontext(&ctx[i], &main_ctx);
	__asm__ volatile("" ::: "memory");
}

static void body(int hi, int lo)
{
	long i = (long)(((unsigned long)(unsigned)hi << 32) | (unsigned)lo);

	for (;;)
		park_here(i);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000;
	long churn_ms = argc > 2 ? atol(argv[2]) : 0;
	long k = argc > 3 ? atol(argv[3]) : 0;
	/* swapcontext returns twice: kept out of registers. */
	static long next;
	struct sigaction sa = {.sa_handler = on_term};

	if (n < 1) {
		fprintf(stderr, "usage: parked_fibers N [churn_ms K]\n");
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	ctx = calloc((size_t)n, sizeof(*ctx));
	if (!ctx)
		return 1;
	for (long i = 0; i < n; i++) {
		void *st = mmap(NULL, STACK, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
				0);

		if (st == MAP_FAILED) {
			perror("parked_fibers: mmap");
			return 1;
		}
		getcontext(&ctx[i]);
		ctx[i].uc_stack.ss_sp = st;
		ctx[i].uc_stack.ss_size = STACK;
		ctx[i].uc_link = &main_ctx;
		makecontext(&ctx[i], (void (*)(void))body, 2,
			    (int)((unsigned long)i >> 32), (int)i);
		swapcontext(&main_ctx, &ctx[i]);
	}
	fprintf(stderr, "ready %ld\n", n);
	while (!done) {
		struct timespec t = {.tv_sec = churn_ms ? 0 : 1,
				     .tv_nsec = churn_ms * 1000000L};

		nanosleep(&t, NULL);
		for (long j = 0; churn_ms && j < k && !done; j++) {
			swapcontext(&main_ctx, &ctx[next]);
			next = (next + 1) % n;
		}
	}
	return 0;
}
