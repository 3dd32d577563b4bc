/*
 * probereg: the coroutines a probe's registry lists, read from a
 * process's memory -- a core file's (corotop --core) -- through its
 * descriptor (src/wire/regdesc.h).  See probereg.c.
 */
#ifndef COROTOP_ENGINE_SCAN_PROBEREG_H
#define COROTOP_ENGINE_SCAN_PROBEREG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corotop/probe.h"

/* The memory read: n bytes at addr into buf, all or false. */
typedef bool (*probereg_read_fn)(void *ctx, uint64_t addr, void *buf, size_t n);

/* One live coroutine of the registry. */
struct probereg_coro {
	uint64_t at;		     /* its struct corotop_coro's address */
	struct corotop_coro c;	     /* a copy of it */
	char name[COROTOP_NAME_MAX]; /* its name, printable ("": none) */
	uint64_t entry, made_for;    /* its entry, 0 = none */
};

/* What a read found. */
struct probereg_stats {
	uint32_t used;	   /* slots the probe handed out */
	uint32_t live;	   /* ... open: listed */
	uint32_t unread;   /* ... whose coroutine could not be read */
	uint32_t past_max; /* ... past the caller's max: not listed */
};

/*
 * Read the registry whose descriptor is at `desc` in a process's memory
 * (read: a core's, through procmem) and call
 * fn for each live coroutine, at most max of them, lowest slot first.
 * False with a message when the descriptor is not one this corotop reads
 * (magic, version, sizes) or the registry cannot be read; true otherwise,
 * with *st filled.
 */
bool probereg_read(probereg_read_fn read, void *read_ctx, uint64_t desc,
		   uint32_t max,
		   void (*fn)(void *ctx, const struct probereg_coro *rc),
		   void *ctx, struct probereg_stats *st, char *err,
		   size_t errlen);

#endif
