/*
 * doorbell: ring a process's ppt doorbell (corotop/ppt.h), the agent's
 * side of src/probe/doorbell.c.  attach.c rings it after writing _hmem and
 * after writing it back to 0.
 */
#ifndef COROTOP_ENGINE_ATTACH_DOORBELL_H
#define COROTOP_ENGINE_ATTACH_DOORBELL_H

#include <stdbool.h>
#include <sys/types.h>

/* Connect to pid's doorbell (corotop/ppt.h) and hang
 * up, so that a program in which nothing transitions notices corotop -p
 * at once.  True when a listener of pid's answered; false when there is
 * none (an older probe, another network namespace): the probe then
 * attaches at its next transition. */
bool doorbell_ring(pid_t pid);

#endif
