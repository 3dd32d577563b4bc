/*
 * perfctr: the -c counter list (cycles,instructions,...) turned into the
 * perf_event_attr blocks a ppt control block carries, each tried against
 * the kernel first so that a refusal is reported by name.  See perfctr.c.
 */
#ifndef COROTOP_PERFCTR_H
#define COROTOP_PERFCTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "corotop/ppt.h"

#define PERFCTR_NAME_MAX 32

struct perfctr_set {
	uint32_t n; /* counters the kernel accepted, in the order given */
	char names[PPT_MAX_COUNTERS][PERFCTR_NAME_MAX];
	uint8_t attrs[PPT_MAX_COUNTERS][PPT_PERF_ATTR_SIZE];
	char refused[512]; /* "cycles: no such hardware counter ...", or "" */
};

/* Parse "cycles,instructions" (at most 3 names; see perfctr_known for
 * the list).  False with a message for an unknown name or too many. */
bool perfctr_parse(const char *list, struct perfctr_set *out, char *err,
		   size_t errlen);
/* Try each counter on process pid (perf_event_open, user space only);
 * drop the ones the kernel refuses and say why in out->refused. */
void perfctr_probe(struct perfctr_set *s, pid_t pid);
/* The names perfctr_parse knows, comma-separated. */
const char *perfctr_known(void);

#endif
