/*
 * sig-ctx [timer|raise]: context switches made from a signal handler.
 *
 * The root and a worker context hand over to each other N times with
 * swapcontext; the worker ends parked, the root exits.  A SIGALRM or
 * SIGUSR1 handler, wherever it lands, switches to a monitor context and
 * back (a round trip: the interrupted code goes on as if nothing had
 * happened, which is legal at any instruction, inside swapcontext too).
 *
 *   timer   an interval timer fires SIGALRM every 50 us during the run;
 *   raise   no timer: the signals come from wherever something raises
 *           SIGUSR1 (the preload's test hooks, at a chosen point inside
 *           its own switch: a forced interleaving).
 *
 * Prints the hand-overs made, a checksum of the worker's work, and
 * whether the monitor ran once per signal handled: the same natively,
 * under LD_PRELOAD and under corotop, whatever the signals' timing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>

#define ROUNDS 20000L
#define STACK (64u * 1024u)

static ucontext_t root_uc, work_uc, mon_uc, sig_uc;
static char work_stack[STACK], mon_stack[STACK];
static volatile sig_atomic_t handled;
static volatile long mon_runs;
static uint64_t sum;
static long rounds;

/* The monitor: one step per signal, then back into the handler. */
static void monitor(void)
{
	for (;;) {
		mon_runs = mon_runs + 1;
		if (swapcontext(&mon_uc, &sig_uc) != 0)
			abort();
	}
}

static void on_signal(int sig)
{
	int saved = errno;

	(void)sig;
	handled = handled + 1;
	if (swapcontext(&sig_uc, &mon_uc) != 0)
		abort();
	errno = saved;
}

static void worker(void)
{
	for (long i = 0; i < ROUNDS; i++) {
		sum = sum * 31u + (uint64_t)i;
		if (swapcontext(&work_uc, &root_uc) != 0)
			abort();
	}
	/* Parked for good: the root exits while the worker waits here. */
	for (;;)
		if (swapcontext(&work_uc, &root_uc) != 0)
			abort();
}

static void make(ucontext_t *uc, char *stack, void (*fn)(void))
{
	if (getcontext(uc) != 0)
		exit(4);
	uc->uc_stack.ss_sp = stack;
	uc->uc_stack.ss_size = STACK;
	uc->uc_link = NULL;
	/* The monitor runs with both signals blocked (a handler that is
	 * not re-entered keeps one sig_uc), the worker with them open. */
	if (fn == monitor) {
		sigaddset(&uc->uc_sigmask, SIGALRM);
		sigaddset(&uc->uc_sigmask, SIGUSR1);
	}
	makecontext(uc, fn, 0);
}

int main(int argc, char **argv)
{
	int timer = argc > 1 && !strcmp(argv[1], "timer");
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGALRM);
	sigaddset(&sa.sa_mask, SIGUSR1);
	if (sigaction(SIGALRM, &sa, NULL) || sigaction(SIGUSR1, &sa, NULL))
		return 3;
	make(&work_uc, work_stack, worker);
	make(&mon_uc, mon_stack, monitor);
	if (timer) {
		struct itimerval it = {{0, 50}, {0, 50}};

		if (setitimer(ITIMER_REAL, &it, NULL) != 0)
			return 5;
	}
	for (rounds = 0; rounds < ROUNDS; rounds++)
		if (swapcontext(&root_uc, &work_uc) != 0)
			return 6;
	if (timer) {
		struct itimerval off;

		memset(&off, 0, sizeof(off));
		(void)setitimer(ITIMER_REAL, &off, NULL);
	}
	/* No signal can be in a handler now: the counts are final. */
	printf("rounds %ld checksum %llu\n", rounds, (unsigned long long)sum);
	printf("monitor ran once per signal: %s\n",
	       mon_runs == handled ? "yes" : "no");
	return 0;
}
