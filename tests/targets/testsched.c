/*
 * testsched: a scheduler library in GNU Pth's shape (libtestsched.so):
 * tasks on glibc's ucontext, made and switched only in here, behind a
 * trampoline of the library's own (ts_entry), as Pth's pth_spawn and
 * pth_yield are.  The program that links it (sched-target) knows nothing
 * of corotop; its parked tasks' stacks run from ts_yield's swapcontext
 * through the program's own functions down to ts_entry, which is what the
 * rule "every shared library is the runtime's" is tested on.
 */
#define _GNU_SOURCE
#include "testsched.h"

#include <stdlib.h>
#include <ucontext.h>

#define TS_TASKS 16
#define TS_STACK (64 * 1024)

struct ts_task {
	ucontext_t uc;
	void (*fn)(int);
	int arg;
	int state; /* 0 runnable, 1 ended, 2 parked */
};

static ucontext_t ts_sched;
static struct ts_task ts_tasks[TS_TASKS];
static int ts_n, ts_cur = -1;
static long ts_switches;

static void ts_entry(int i)
{
	ts_tasks[i].fn(ts_tasks[i].arg);
	ts_tasks[i].state = 1; /* uc_link brings the scheduler back */
}

int ts_spawn(void (*fn)(int), int arg)
{
	struct ts_task *t;

	if (ts_n == TS_TASKS)
		return 0;
	t = &ts_tasks[ts_n];
	getcontext(&t->uc);
	t->uc.uc_stack.ss_sp = malloc(TS_STACK);
	t->uc.uc_stack.ss_size = TS_STACK;
	t->uc.uc_link = &ts_sched;
	t->fn = fn;
	t->arg = arg;
	makecontext(&t->uc, (void (*)(void))ts_entry, 1, ts_n);
	ts_n++;
	return 1;
}

void ts_yield(void)
{
	ts_switches++;
	swapcontext(&ts_tasks[ts_cur].uc, &ts_sched);
	ts_switches += 0; /* not a tail call: ts_yield keeps its frame */
}

void ts_park(void)
{
	ts_tasks[ts_cur].state = 2;
	ts_yield();
	abort(); /* never resumed */
}

long ts_run(void)
{
	int left;

	do {
		left = 0;
		for (int i = 0; i < ts_n; i++) {
			if (ts_tasks[i].state)
				continue;
			ts_cur = i;
			ts_switches++;
			swapcontext(&ts_sched, &ts_tasks[i].uc);
			left += !ts_tasks[i].state;
		}
	} while (left);
	return ts_switches;
}
