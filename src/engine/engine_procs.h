/*
 * engine_procs: the processes the traced program runs as -- each process
 * station the harvest opens, the ones that ended, the list a snapshot
 * shows, and a SIGTERM to them at the end (engine_procs.c).  Not for use
 * outside src/engine.
 */
#ifndef COROTOP_ENGINE_PROCS_H
#define COROTOP_ENGINE_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/ctp/harvest.h"

struct engine;
struct snapshot;

/* The processes the traced program runs as (engine_procs.c), under the
 * engine lock. */
struct engine_proc {
	uint32_t station; /* its process station */
	uint32_t pid;
	uint64_t image;
	char name[CTP_STX_NAME_LEN];
	int pidfd; /* -1: none (the target, or no pidfd_open) */
	bool gone; /* ended, or its image replaced by an exec */
	/* Its interposer's counts: contexts it could not track, switches
	 * made where it could not see them. */
	struct harvest_interposer counts;
};

struct engine_procs {
	struct engine_proc *p;
	size_t n, cap;
};

/* engine_procs.c: a process station opened (the sink's process callback,
 * lock held); once a tick, processes that ended (lock held); the list in
 * a snapshot (lock held); at destroy. */
void engine_on_process(struct engine *e, uint32_t station,
		       const struct harvest_sink *sink);
void engine_procs_tick(struct engine *e, const struct harvest_sink *sink);
void engine_procs_snapshot(struct engine *e, struct snapshot *out);
/* SIGTERM to the program's processes other than the target that have not
 * ended (corotop ends the target: they are the program too). */
void engine_procs_terminate(struct engine *e);
void engine_procs_finish(struct engine *e);

#endif
