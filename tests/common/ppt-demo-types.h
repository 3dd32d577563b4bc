/*
 * ppt-demo-types: the example buffer of the ppt client's contract
 * (include/corotop/ppt.h, docs/WIRE.md), as a program declares it: two
 * frame types, 64-byte frames on the wire.  Shared by the client's unit
 * tests and the integration target, so that all of them check the same
 * layout (tests/common/pptdesc-demo.h holds its JSON description).
 */
#ifndef COROTOP_TEST_PPT_DEMO_TYPES_H
#define COROTOP_TEST_PPT_DEMO_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "corotop/ppt.h"

/* tick: count, load, and work as a time interval (start, end). */
struct tick {
	int32_t count;
	double load;
	struct timespec work[2];
};

/* io: fd, and cost as a counter interval (start[3], end[3]). */
struct io {
	int32_t fd;
	uint64_t cost[2][3];
};

static const struct corotop_ppt_member tick_m[] = {
	{"count", COROTOP_PPT_INT, offsetof(struct tick, count)},
	{"load", COROTOP_PPT_DOUBLE, offsetof(struct tick, load)},
	{"work", COROTOP_PPT_TIME | COROTOP_PPT_INTERVAL,
	 offsetof(struct tick, work)},
};

static const struct corotop_ppt_member io_m[] = {
	{"fd", COROTOP_PPT_INT, offsetof(struct io, fd)},
	{"cost", COROTOP_PPT_COUNTER | COROTOP_PPT_INTERVAL,
	 offsetof(struct io, cost)},
};

static const struct corotop_ppt_frame_type demo_types[] = {
	{"tick", tick_m, 3},
	{"io", io_m, 2},
};

#endif
