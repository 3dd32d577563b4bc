/*
 * minimal: the smallest C scheduler corotop traces -- three ucontext
 * coroutines taking turns, each recording its resume and its suspend.
 * `where` is where it parks: the return address of yield(), a line of the
 * coroutine's own code, which corotop's WHERE names (looked up at the call
 * site).  Build it against the installed probe (examples/Makefile), with
 * frame pointers so that parked stacks walk, and run: corotop -- ./minimal
 */
#define _GNU_SOURCE /* nanosleep, ucontext */
#include <corotop/probe.h>
#include <stdio.h>
#include <time.h>
#include <ucontext.h>

#define N 3
static ucontext_t sched, ctx[N];
static struct corotop_coro probe[N];
static char stack[N][64 * 1024];
static int cur, finished[N], done;

static __attribute__((noinline)) void yield(void)
{
	corotop_coro_suspend(&probe[cur],
			     (uint64_t)__builtin_return_address(0));
	swapcontext(&ctx[cur], &sched);
}

static void work(void)
{
	for (int i = 0; i < 10 * (cur + 1); i++)
		yield(); /* corotop shows this line as WHERE */
	finished[cur] = 1;
}

/* Worker i: its context on its own stack, and its probe state. */
static void start(int i)
{
	getcontext(&ctx[i]);
	ctx[i].uc_stack.ss_sp = stack[i];
	ctx[i].uc_stack.ss_size = sizeof(stack[i]);
	ctx[i].uc_link = &sched;
	makecontext(&ctx[i], work, 0);
	corotop_coro_open_named(&probe[i], (uint64_t)i + 1, "worker",
				COROTOP_NAME_STATIC);
	corotop_coro_set_stack(&probe[i], stack[i],
			       stack[i] + sizeof(stack[i]));
}

int main(void)
{
	static const struct timespec tick = {0, 50 * 1000 * 1000};

	for (int i = 0; i < N; i++)
		start(i);
	while (done < N) /* round robin until every worker returned */
		for (cur = 0; cur < N; cur++) {
			if (finished[cur])
				continue;
			corotop_coro_resume(&probe[cur], 0);
			swapcontext(&sched, &ctx[cur]);
			if (finished[cur]) {
				corotop_coro_close(&probe[cur]);
				done++;
			}
			nanosleep(&tick, NULL);
		}
	printf("minimal: %d workers done\n", done);
	return 0;
}
