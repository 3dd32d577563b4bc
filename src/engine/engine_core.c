/*
 * engine_core: the engine's core mode (corotop --core FILE [--exe PROGRAM]):
 * a process as a core file holds it, frozen at the moment of its dump.
 *
 * It is the attach mode's scan (engine/scan) on the core's memory instead
 * of a live process's: the core file (engine/target/corefile.c) gives the
 * maps text, the memory and every thread's registers; framecheck, the
 * scanner and the census walks read it through a procmem opened on it
 * (procmem_open_core), and the symbols come from its files by their
 * paths (symbolizer_create_image).  One pass, at the start, before any
 * snapshot; then the clock stops (engine_mark_exit), as for a target
 * that exited: the views show the dump's moment and nothing moves.
 *
 * The region, the threads and the queries are the live modes' (a private
 * region nobody joins): the table, the detail view, batch and JSON are
 * the same code as for a live target.  The target's pid is the core's,
 * shown, and never used to read /proc: it is not running (its pid may
 * be another process's by now), so no path that reads a live target's
 * /proc files runs for it.
 */
#define _GNU_SOURCE
#include "engine/engine.h"

#include <stdio.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "engine/engine_mode.h"
#include "engine/scan/scanner.h"
#include "engine/symbols/symbolizer.h"
#include "engine/symbols/symtab.h"
#include "engine/target/corefile.h"
#include "engine/target/framecheck.h"

bool engine_core_create(struct engine *e, char *err, size_t errlen)
{
	/* The core first: a file that is not one is refused before any
	 * region is made. */
	e->core =
		corefile_create(e->cfg.core_path, e->cfg.core_exe, err, errlen);
	if (!e->core)
		return false;
	if (engine_live_create(e, err, errlen))
		return true;
	corefile_destroy(e->core);
	e->core = NULL;
	return false;
}

bool engine_core_start(struct engine *e, char *err, size_t errlen)
{
	struct corefile_info info;
	struct symbolizer_image im;
	struct symbolizer *sym;
	char why[256];

	corefile_info(e->core, &info);
	im = (struct symbolizer_image){
		.pid = info.pid, .exe = info.exe, .entry = info.entry};
	im.maps = corefile_maps(e->core, &im.maps_len);
	/* No symbols is no reason to refuse: the frames stay addresses. */
	sym = symbolizer_create_image(&im, why, sizeof(why));
	symtab_set_symbolizer(&e->symtab, sym);
	procmem_open_core(&e->core_pm, e->core);
	e->framecheck = framecheck_create_core(e->core);
	pthread_mutex_lock(&e->lock);
	e->target.pid = info.pid;
	e->target.core = true;
	e->target.scanned = true;
	e->target.running = false;
	pthread_mutex_unlock(&e->lock);
	if (!engine_scanner_create(e, err, errlen) ||
	    !engine_live_start(e, err, errlen))
		return false;
	/* The one pass, before any snapshot; then the clock stops. */
	engine_scan_memory(e);
	pthread_mutex_lock(&e->lock);
	engine_mark_exit(e);
	e->target.exited = true;
	e->target.exit_code = 0;
	pthread_mutex_unlock(&e->lock);
	return true;
}

void engine_core_info(struct engine *e, struct snapshot_core *out)
{
	struct corefile_info info;

	corefile_info(e->core, &info);
	*out = (struct snapshot_core){.threads = info.threads,
				      .unreadable = info.unreadable,
				      .dumped = info.dumped,
				      .truncated = info.truncated};
	snprintf(out->command, sizeof(out->command), "%s", info.command);
	snprintf(out->exe, sizeof(out->exe), "%s", info.exe);
}

bool engine_core_destroy(struct engine *e)
{
	bool ok = engine_live_destroy(e);

	corefile_destroy(e->core);
	e->core = NULL;
	return ok;
}
