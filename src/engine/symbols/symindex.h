/*
 * symindex: the function symbols of one ELF module, sorted for lookup by
 * address.  See symindex.c.
 */
#ifndef COROTOP_SYMINDEX_H
#define COROTOP_SYMINDEX_H

#include <stddef.h>
#include <stdint.h>

/* Binding preference when several symbols share an address. */
enum symindex_bind {
	SYMINDEX_GLOBAL = 0,
	SYMINDEX_WEAK,
	SYMINDEX_LOCAL,
};

struct symindex_entry {
	uint64_t addr;	  /* where the function starts */
	uint64_t size;	  /* 0: unknown, it runs up to the next symbol */
	const char *name; /* not copied: must outlive the index */
	/* The name as people read it (symname), kept by the caller the first
	 * time it is asked for; NULL until then. */
	const char *shown;
	uint8_t bind; /* enum symindex_bind */
};

struct symindex;

/*
 * An index over v[0..n), which it takes over (v must come from malloc; it
 * is freed by symindex_destroy, or here on failure).  Symbols at or past
 * `end` (the module's end address) are dropped, and a sizeless symbol runs
 * at most to `end`.  NULL when out of memory.
 */
struct symindex *symindex_create(struct symindex_entry *v, size_t n,
				 uint64_t end);

/* NULL is a no-op. */
void symindex_destroy(struct symindex *x);

/*
 * The function containing `addr`, or NULL.  When several symbols start at
 * the same address, the one with the fewest leading underscores wins, then
 * global over weak over local, then the first name in strcmp order.  Not
 * const: the caller may set the entry's `shown` name.
 */
struct symindex_entry *symindex_find(struct symindex *x, uint64_t addr);

size_t symindex_count(const struct symindex *x);

#endif
