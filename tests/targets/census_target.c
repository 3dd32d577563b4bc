/*
 * census-target: a program started without corotop whose coroutines park
 * for good before corotop attaches, for the census tests (corotop -p PID
 * must show them at once, as they are: src/probe/census.c).  The probe
 * linked, frame pointers everywhere.  Driven line by line on stdin, one
 * answer line per command:
 *
 *   park N    start N coroutines, each on a stack of its own (mapped here
 *             and declared with corotop_coro_set_stack), each running
 *             census_target_entry -> census_target_serve ->
 *             census_target_wait, which records its suspend there, on its
 *             own stack, and switches back for good: "ok parked N"
 *   coro K    what the probe kept of parked coroutine K (0-based):
 *             "ok id=ID birth=NS last=NS tid=TID addr=A active=0|1"
 *   junk K    parked coroutine K's stack overwritten with junk, as a
 *             stack freed and reused holds: the words corotop's table
 *             once showed (0xa0d0a, "\n\r\n"; 0x74736574, "test";
 *             0x3000000010) and a pointer into data: "ok junk K"
 *   live      "ok live=L": corotop_probe_live_
 *   quit      exit 0
 *
 * It prints "ready PID" first.  A thread switches one coroutine of its own
 * every millisecond: the rendezvous runs on a transition, and a program
 * whose every coroutine is parked would never make one.
 * PR_SET_PTRACER_ANY lets a non-root corotop attach under Yama
 * ptrace_scope 1.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "corotop/probe.h"

#define MAX_PARKED 64
#define STACK_SIZE (64 * 1024)
#define NOINLINE __attribute__((noinline))
/* Keeps a call from becoming a tail call, so each frame stays. */
#define NO_TAILCALL() __asm__ volatile("" ::: "memory")

struct parked {
	struct corotop_coro c;
	ucontext_t ctx;
	void *stack;
};

static struct parked parked[MAX_PARKED];
static unsigned nparked;
static ucontext_t host;
static struct parked *current;

static void *switcher(void *arg)
{
	struct corotop_coro c;
	struct timespec ms = {0, 1000000};
	uint64_t k = 0;

	(void)arg;
	corotop_coro_open(&c, 0x5e1f);
	for (;;) {
		corotop_coro_resume(&c, 0x1000 + (k & 7));
		corotop_coro_suspend(&c, 0x2000 + (k & 7));
		k++;
		nanosleep(&ms, NULL);
	}
	return NULL;
}

/* The lost wakeup: parked here, nobody will ever resume it. */
NOINLINE static void census_target_wait(struct parked *p)
{
	corotop_coro_suspend(&p->c, (uint64_t)(uintptr_t)census_target_wait);
	swapcontext(&p->ctx, &host);
	NO_TAILCALL();
}

NOINLINE static void census_target_serve(struct parked *p)
{
	census_target_wait(p);
	NO_TAILCALL();
}

static void census_target_entry(void)
{
	census_target_serve(current);
	NO_TAILCALL();
}

/* One coroutine started and parked; swapcontext returns twice, so the
 * caller's loop lives outside this frame. */
NOINLINE static int park_one(struct parked *p, unsigned k)
{
	p->stack = mmap(NULL, STACK_SIZE, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->stack == MAP_FAILED || getcontext(&p->ctx) < 0)
		return -1;
	p->ctx.uc_stack.ss_sp = p->stack;
	p->ctx.uc_stack.ss_size = STACK_SIZE;
	p->ctx.uc_link = NULL;
	makecontext(&p->ctx, census_target_entry, 0);
	corotop_coro_open(&p->c, 0xce05 + k);
	corotop_coro_set_stack(&p->c, p->stack, (char *)p->stack + STACK_SIZE);
	current = p;
	corotop_coro_resume(&p->c, 0x3000);
	return swapcontext(&host, &p->ctx);
}

static int park(unsigned n)
{
	for (unsigned i = 0; i < n && nparked < MAX_PARKED; i++) {
		if (park_one(&parked[nparked], nparked) < 0)
			return -1;
		nparked++;
	}
	return 0;
}

static uint64_t junk_data[4];

/* Parked coroutine k's whole stack as junk; it never runs again. */
static void junk(struct parked *p)
{
	const uint64_t words[] = {0xa0d0a, 0x74736574, 0x3000000010ull,
				  (uint64_t)(uintptr_t)junk_data};
	uint64_t *w = p->stack;

	for (size_t i = 0; i < STACK_SIZE / sizeof(*w); i++)
		w[i] = words[i % 4];
}

int main(void)
{
	char line[128];
	pthread_t th;

	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pthread_create(&th, NULL, switcher, NULL))
		return 1;
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		unsigned n;

		if (sscanf(line, "park %u", &n) == 1) {
			if (park(n) < 0)
				printf("error park\n");
			else
				printf("ok parked %u\n", nparked);
		} else if (sscanf(line, "coro %u", &n) == 1 && n < nparked) {
			const struct corotop_coro *c = &parked[n].c;

			printf("ok id=%" PRIu64 " birth=%" PRIu64
			       " last=%" PRIu64 " tid=%" PRIu64 " addr=%" PRIu64
			       " active=%u\n",
			       c->probe_id, c->birth_ts, c->last_ts,
			       c->last_tid, c->last_addr, c->last_active);
		} else if (sscanf(line, "junk %u", &n) == 1 && n < nparked) {
			junk(&parked[n]);
			printf("ok junk %u\n", n);
		} else if (!strncmp(line, "live", 4)) {
			printf("ok live=%d\n",
			       __atomic_load_n(&corotop_probe_live_,
					       __ATOMIC_ACQUIRE));
		} else if (!strncmp(line, "quit", 4)) {
			return 0;
		} else {
			printf("error %s", line);
		}
	}
	return 0;
}
