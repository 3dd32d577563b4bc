/*
 * lint: warnings about single coroutines (a possible lost wakeup, unless
 * the program marked the wait long; a stall; a resume storm; a dead
 * coroutine whose station was not recycled), each with a threshold and an
 * on/off switch.  See lint.c.
 */
#ifndef COROTOP_LINT_H
#define COROTOP_LINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/model/coro.h"

enum lint_kind {
	LINT_LOST_WAKEUP = 0,
	LINT_STALL,
	LINT_STORM,
	LINT_DEAD_STATION,
	LINT_COUNT,
};

/* A record's mask of them is one byte (struct model_coro.warn). */
_Static_assert(LINT_COUNT <= 8, "lint masks fit model_coro.warn");

struct lint_config {
	bool enabled[LINT_COUNT];
	uint64_t suspended_ns; /* LOST_WAKEUP: suspended longer than this */
	uint64_t running_ns;   /* STALL: running longer than this */
	double storm_per_sec;  /* STORM: switches/s above this */
	uint64_t dead_ns;      /* DEAD_STATION: dead longer than this */
};

/* All lints on; 5 s suspended, 1 s running, 10000 switches/s, 1 s dead. */
void lint_config_defaults(struct lint_config *c);

/* Bit (1u << kind) set for each enabled lint the coroutine trips at time
 * `now` (CLOCK_MONOTONIC ns).  Every comparison is strict: a value equal to
 * its threshold does not trip.  A dispatcher or a root (co->kind) trips
 * only dead-station. */
uint32_t lint_check(const struct lint_config *c, const struct model_coro *co,
		    uint64_t now);

/* "lost-wakeup", "stall", "storm", "dead-station" (also the config keys). */
const char *lint_name(enum lint_kind k);
/* Short WARN-column tag, at most 5 characters: "WAKE?", "STALL", ... */
const char *lint_tag(enum lint_kind k);
/* One sentence for the help screen. */
const char *lint_help(enum lint_kind k);
/* The lint called `name` (exact lint_name), or -1. */
int lint_find(const char *name);

/* Thresholds in the units people use: seconds for the time lints,
 * switches per second for the storm.  lint_unit says which ("s", "/s"). */
double lint_threshold(const struct lint_config *c, enum lint_kind k);
/* False (and nothing changed) for a negative, non-finite or huge value. */
bool lint_set_threshold(struct lint_config *c, enum lint_kind k, double v);
const char *lint_unit(enum lint_kind k);

/* The mask as tags joined by ',' ("WAKE?,STORM"), "" when 0.  Always
 * terminated when n > 0; truncated to fit. */
void lint_format(uint32_t mask, char *buf, size_t n);

#endif
