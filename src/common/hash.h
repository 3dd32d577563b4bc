/*
 * hash: the golden-ratio multiplier, 2^64 / phi rounded to odd, written
 * once.  Multiplying a key by it spreads the key's low bits (thread ids,
 * addresses, inodes differ there) into the high bits, so the top bits of
 * the product are a good slot number: Fibonacci hashing (Knuth, TAOCP
 * 6.4).  The same number also seeds a few generators, as a state with as
 * many ones as zeros.
 *
 * hash_seed: a random seed for hash tables keyed by untrusted input (the
 * streams and substreams of a trace file), so that nobody can write a file
 * whose keys all land in one slot and make reading it quadratic.  From
 * getrandom; if that fails, from the clock, the pid and an address.  Odd,
 * never 0.
 */
#ifndef COROTOP_HASH_H
#define COROTOP_HASH_H

#include <stdint.h>
#include <sys/random.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define HASH_GOLDEN 0x9e3779b97f4a7c15ull

/* key * HASH_GOLDEN, shifted right by `shift` (0 to 63): the slot among
 * 2^(64 - shift), or, masked further, among fewer. */
static inline uint64_t hash_fib(uint64_t key, unsigned shift)
{
	return key * HASH_GOLDEN >> shift;
}

static inline uint64_t hash_seed(void)
{
	uint64_t s = 0;

	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s))
		s = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32 ^
		    (uint64_t)(uintptr_t)&s;
	return s | 1;
}

#endif
