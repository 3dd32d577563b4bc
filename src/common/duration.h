/*
 * duration: nanoseconds as a short human string ("850ns", "12.3ms",
 * "4.2s", "3m05s", "2h07m", "3d04h"), at most 7 characters.
 */
#ifndef COROTOP_DURATION_H
#define COROTOP_DURATION_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

static inline void duration_format(char *b, size_t n, uint64_t ns)
{
	uint64_t s = ns / 1000000000u;

	if (ns < 1000u)
		snprintf(b, n, "%" PRIu64 "ns", ns);
	else if (ns < 1000000u)
		snprintf(b, n, "%.1fus", (double)ns / 1e3);
	else if (ns < 1000000000u)
		snprintf(b, n, "%.1fms", (double)ns / 1e6);
	else if (s < 60)
		snprintf(b, n, "%.1fs", (double)ns / 1e9);
	else if (s < 3600)
		snprintf(b, n, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
	else if (s < 86400)
		snprintf(b, n, "%" PRIu64 "h%02" PRIu64 "m", s / 3600,
			 s / 60 % 60);
	else
		snprintf(b, n, "%" PRIu64 "d%02" PRIu64 "h", s / 86400,
			 s / 3600 % 24);
}

#endif
