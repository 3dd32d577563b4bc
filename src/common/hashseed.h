/*
 * hashseed: a random seed for hash tables keyed by untrusted input (the
 * streams and substreams of a trace file), so that nobody can write a file
 * whose keys all land in one slot and make reading it quadratic.  From
 * getrandom; if that fails, from the clock, the pid and an address.  Odd,
 * never 0.
 */
#ifndef COROTOP_HASHSEED_H
#define COROTOP_HASHSEED_H

#include <stdint.h>
#include <sys/random.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t hashseed(void)
{
	uint64_t s = 0;

	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s))
		s = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32 ^
		    (uint64_t)(uintptr_t)&s;
	return s | 1;
}

#endif
