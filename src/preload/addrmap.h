/*
 * addrmap: a map from an address, at a fixed granularity, to a context
 * record's index -- a radix table over the address space whose entries are
 * only ever overwritten, never removed, so that no operation costs more
 * for the keys that came before it.  See addrmap.c.
 */
#ifndef COROTOP_ADDRMAP_H
#define COROTOP_ADDRMAP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADDRMAP_NONE UINT32_MAX
/* Addresses below 2^ADDRMAP_ADDR_BITS (x86-64's and AArch64's 48-bit user
 * space) are mapped; others are not (set fails, get finds nothing). */
#define ADDRMAP_ADDR_BITS 48u
#define ADDRMAP_LEAF_BITS 12u
#define ADDRMAP_MID_BITS 12u

struct addrmap_leaf;
struct addrmap_mid;

struct addrmap {
	unsigned shift; /* granularity: 2^shift bytes per entry */
	unsigned ntop;	/* top-level slots */
	_Atomic(struct addrmap_mid *) *top;
	_Atomic uint64_t bytes; /* levels mapped so far, for statistics */
};

/* A map at granularity 2^shift bytes (shift 4..24).  False when the top
 * level cannot be mapped. */
bool addrmap_init(struct addrmap *m, unsigned shift);
void addrmap_finish(struct addrmap *m);

/* The value last set for the unit holding addr, or ADDRMAP_NONE.  Lock
 * free; a value may be stale (the caller checks the record it names). */
uint32_t addrmap_get(const struct addrmap *m, uint64_t addr);
/* Every unit of [lo, hi) (at least the one holding lo) now says v.  Maps
 * the levels it needs (mmap, never malloc: safe where the program may be
 * in a signal handler).  False when one could not be mapped or the range
 * is beyond the mapped address space (what was set stays). */
bool addrmap_set(struct addrmap *m, uint64_t lo, uint64_t hi, uint32_t v);

/* Bytes of address space the map's levels take (mapped, not necessarily
 * touched). */
uint64_t addrmap_bytes(const struct addrmap *m);

#endif
