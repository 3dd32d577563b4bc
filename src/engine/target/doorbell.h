/*
 * doorbell: ring a probe's doorbell (corotop/ppt.h) so that a program in
 * which nothing transitions notices corotop -p at once.  See doorbell.c.
 */
#ifndef COROTOP_ENGINE_DOORBELL_H
#define COROTOP_ENGINE_DOORBELL_H

#include <stdbool.h>
#include <sys/types.h>

/* Connect to pid's doorbell and hang up.  True when a listener of pid's
 * answered; false when there is none (an older probe, another network
 * namespace): the probe then attaches at its next transition. */
bool doorbell_ring(pid_t pid);

#endif
