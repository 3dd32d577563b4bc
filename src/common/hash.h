/*
 * hash: the golden-ratio multiplier, 2^64 / phi rounded to odd, written
 * once.  Multiplying a key by it spreads the key's low bits (thread ids,
 * addresses, inodes differ there) into the high bits, so the top bits of
 * the product are a good slot number: Fibonacci hashing (Knuth, TAOCP
 * 6.4).  The same number also seeds a few generators, as a state with as
 * many ones as zeros.
 */
#ifndef COROTOP_HASH_H
#define COROTOP_HASH_H

#include <stdint.h>

#define HASH_GOLDEN 0x9e3779b97f4a7c15ull

/* key * HASH_GOLDEN, shifted right by `shift` (0 to 63): the slot among
 * 2^(64 - shift), or, masked further, among fewer. */
static inline uint64_t hash_fib(uint64_t key, unsigned shift)
{
	return key * HASH_GOLDEN >> shift;
}

#endif
