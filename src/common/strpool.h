/*
 * strpool: interned display strings that stay valid until the pool is
 * destroyed, with a hard bound on their total size.  See strpool.c.
 */
#ifndef COROTOP_STRPOOL_H
#define COROTOP_STRPOOL_H

#include <stddef.h>

/* The longest string kept, in bytes; longer ones end in "...". */
#define STRPOOL_STR_MAX 255

struct strpool;

/* A pool that never holds more than `max_bytes` of strings (rounded down to
 * whole 64 KiB chunks, at least one).  NULL when out of memory. */
struct strpool *strpool_create(size_t max_bytes);

/* Frees every string; NULL is a no-op. */
void strpool_destroy(struct strpool *p);

/*
 * The pooled copy of the first `len` bytes of `s` (fewer if a NUL comes
 * first), cut to STRPOOL_STR_MAX bytes, every byte that is not printable
 * ASCII replaced by '?'.  Equal results share one copy.  NULL when the pool
 * is full (or out of memory).
 */
const char *strpool_intern(struct strpool *p, const char *s, size_t len);

/* Bytes allocated for strings so far. */
size_t strpool_bytes(const struct strpool *p);

#endif
