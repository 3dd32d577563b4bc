/*
 * unwinder: a stack of the target walked with its call frame information
 * (CFI), from registers and memory the caller supplies.  See unwinder.c.
 */
#ifndef COROTOP_UNWINDER_H
#define COROTOP_UNWINDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct Dwfl;

/* Where the walk starts: the innermost frame's pc (a return address), its
 * stack pointer and frame pointer register. */
struct unwinder_regs {
	uint64_t pc, sp, fp;
};

/* One 8-byte word of the target's memory at addr; false: unreadable (the
 * walk ends there). */
typedef bool (*unwinder_read_fn)(void *ctx, uint64_t addr, uint64_t *word);

struct unwinder;

/* An unwinder on libdwfl session `dwfl`, whose modules are those of
 * process pid (the symbolizer's).  NULL when libdwfl cannot unwind for this
 * architecture.  A session is attached once: one unwinder per session. */
struct unwinder *unwinder_create(struct Dwfl *dwfl, pid_t pid);
void unwinder_destroy(struct unwinder *u);

/*
 * Walk: frames[0] = r->pc, then the return address of each caller,
 * innermost first, at most max; returns how many.  Memory is read only
 * through `read`.  Not thread-safe (the caller holds the session's lock).
 */
size_t unwinder_run(struct unwinder *u, const struct unwinder_regs *r,
		    unwinder_read_fn read, void *ctx, uint64_t *frames,
		    size_t max);

#endif
