/*
 * scanner: the coroutines of a running process that was never prepared,
 * found by scanning its memory (ctxscan) again and again, and fed into the
 * model as coroutines of their own.  See scanner.c.
 */
#ifndef COROTOP_ENGINE_SCAN_SCANNER_H
#define COROTOP_ENGINE_SCAN_SCANNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/scan/ctxscan.h"

struct framecheck;
struct harvest_event;
struct model;
struct procmem;

/* What the scanner reads of the engine, and calls back. */
struct scanner_env {
	struct model *model;   /* written under the caller's lock */
	struct procmem *pm;    /* the target's memory (attach's) */
	struct framecheck *fc; /* the target's code (after a call) */
	uint32_t stations;     /* the model's records: at most these */
	bool nonblocking;      /* refreshes never stop a thread */
	void *ctx;	       /* event's first argument */
	/* A census event (struct harvest_event.census) for a context found:
	 * the engine's path for one (its parked stack walked, recorded). */
	void (*event)(void *ctx, const struct harvest_event *ev);
};

struct snapshot_scan;

/* Lifecycle.  create: for process pid (NULL: out of memory, or its /proc
 * directory cannot be opened, with err); destroy: everything (NULL: a
 * no-op). */
struct scanner *scanner_create(pid_t pid, const struct scanner_env *env,
			       char *err, size_t errlen);
/* The same for the process a core file holds (it outlives the scanner):
 * its maps and memory from the core, every thread's sp from its
 * registers. */
struct corefile;
struct scanner *scanner_create_core(const struct corefile *core,
				    const struct scanner_env *env, char *err,
				    size_t errlen);
void scanner_destroy(struct scanner *s);

/* One scan of the process, without the lock: its contexts, kept for
 * scanner_apply.  False when its memory map cannot be read (it is gone). */
bool scanner_pass(struct scanner *s);

/* The last pass into the model, under the caller's lock: a context seen
 * for the first time is opened (a record of its own, source "scan") and
 * its census event sent; one whose saved pc changed is sent again; one no
 * longer found is closed.  A context is known by its saved area's
 * address.  now: the engine's clock. */
void scanner_apply(struct scanner *s, uint64_t now);

/* A refresh, between passes, without the lock (a live process's only):
 * the threads looked at, those that run stopped for the time it takes
 * to read their registers and re-read every known context's saved area
 * (threadstop.c), then let go. */
void scanner_refresh(struct scanner *s);

/* The last refresh into the model, under the caller's lock: each thread
 * a running record of its own (its id for ID and TID, its stack walked
 * from its registers), opened, walked again when it moved, closed when
 * it is gone; a context whose area changed is shown running (on the
 * thread whose stack region holds it, when one does: the thread it last
 * ran on), and parked again once a refresh or a pass finds it so. */
void scanner_refresh_apply(struct scanner *s, uint64_t now);

/* The numbers of the last pass applied (under the caller's lock). */
void scanner_stats(const struct scanner *s, struct snapshot_scan *out);

#endif
