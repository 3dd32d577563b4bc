/*
 * testsched: a scheduler library in GNU Pth's shape, for sched-target
 * (sched_target.c): the program's tasks switch only inside this shared
 * library.  See testsched.c.
 */
#ifndef TESTSCHED_H
#define TESTSCHED_H

/* A task running fn(arg) on a stack of its own; false when there is no
 * room for one more. */
int ts_spawn(void (*fn)(int), int arg);
/* Back to the scheduler; the task resumes at its next turn. */
void ts_yield(void);
/* Park for good: the scheduler never resumes the task again. */
void ts_park(void);
/* Run the tasks in turn until every one has ended or parked; the number
 * of switches made. */
long ts_run(void);

#endif
