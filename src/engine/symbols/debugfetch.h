/*
 * debugfetch: separate debug info fetched from debuginfod servers
 * (DEBUGINFOD_URLS) on a thread of its own.  See debugfetch.c.
 */
#ifndef COROTOP_DEBUGFETCH_H
#define COROTOP_DEBUGFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct debugfetch;

/* A fetcher, or NULL when DEBUGINFOD_URLS is unset or empty (nothing is
 * ever fetched) or it can not be made.  Its thread starts on the first
 * fetch. */
struct debugfetch *debugfetch_create(void);
/* Stops the thread (a fetch in flight is abandoned); NULL is a no-op. */
void debugfetch_destroy(struct debugfetch *f);

enum debugfetch_rc {
	DEBUGFETCH_FOUND,   /* *path: the fetched file (malloc'd) */
	DEBUGFETCH_PENDING, /* asked for; ask again once found moved */
	DEBUGFETCH_NONE,    /* no server has it, or the fetch failed */
};
/*
 * The debug info of build ID id[0..len): never waits.  The first ask of an
 * ID queues its fetch; the answer, found or not, is kept for the fetcher's
 * life, so a failed fetch is never repeated.
 */
enum debugfetch_rc debugfetch_get(struct debugfetch *f, const unsigned char *id,
				  size_t len, char **path);
/* Files fetched so far: when it moves, a PENDING ID may be FOUND. */
uint64_t debugfetch_found(struct debugfetch *f);

#endif
