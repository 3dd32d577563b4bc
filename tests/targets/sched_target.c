/*
 * sched-target: a program in the shape of GNU Pth's test_philo, on a
 * scheduler library (libtestsched.so, testsched.c) that does every switch.
 * It knows nothing of corotop.
 *
 * usage: sched-target N ROUNDS [--stuck] [--hold]
 *
 * N philosophers each think ROUNDS times (mysched_wait, the program's own
 * wrapper around the library's ts_yield) and end.  With --stuck one more
 * philosopher waits for good: parked in ts_yield, called by mysched_wait,
 * called by philosopher, run by the library's trampoline -- its WHERE is
 * mysched_wait (the first frame of the program's own code), or
 * philosopher under --runtime=mysched_, and its NAME philosopher.  With
 * --hold the program stays (in pause) until a signal ends it.  It prints
 * "tasks=N switches=S" when the scheduler has nothing left to run.
 *
 * Built as it is, and stripped (sched-target-stripped, its debug info in
 * sched-target.dbg): e2e-debuginfod names the stripped one through a local
 * debuginfod.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testsched.h"

void mysched_wait(int forever);
void philosopher(int id);

static volatile long thoughts;
static int rounds;

/* The program's own wrapper of the scheduler's yield (a scheduler layer
 * of the program's, as --runtime=mysched_ declares it). */
__attribute__((noinline)) void mysched_wait(int forever)
{
	thoughts++;
	if (forever)
		ts_park();
	else
		ts_yield();
	thoughts++; /* not a tail call: the frame stays */
}

__attribute__((noinline)) void philosopher(int id)
{
	for (int r = 0; r < rounds; r++)
		mysched_wait(0);
	if (id < 0)
		mysched_wait(1);
	thoughts++;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	int stuck = 0, hold = 0;
	long switches;

	rounds = argc > 2 ? atoi(argv[2]) : 3;
	for (int i = 3; i < argc; i++) {
		stuck |= !strcmp(argv[i], "--stuck");
		hold |= !strcmp(argv[i], "--hold");
	}
	if (n < 1 || n > 15 || rounds < 0) {
		fprintf(stderr, "usage: sched-target N(1-15) ROUNDS [--stuck] "
				"[--hold]\n");
		return 2;
	}
	for (int i = 0; i < n; i++)
		ts_spawn(philosopher, i);
	if (stuck)
		ts_spawn(philosopher, -1);
	switches = ts_run();
	printf("tasks=%d switches=%ld\n", n + stuck, switches);
	fflush(stdout);
	while (hold)
		pause(); /* until a signal ends it */
	return 0;
}
