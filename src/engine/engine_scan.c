/*
 * engine_scan: the engine's side of a process that was never prepared
 * (attach mode without buffers, and a core file's one scan): the
 * scanner made on the engine's model and memory, its passes and its
 * refreshes (engine/scan), each read without the engine's lock and put
 * into the model under it.  The harvest thread drives them
 * (engine_harvest.c: engine_scan_step).
 *
 * Pacing.  A refresh every ENGINE_MEMSCAN_NS (its threads' registers,
 * its known contexts' holders re-read); a whole pass at most as often,
 * and after a rest of ENGINE_MEMSCAN_REST times the last pass's length,
 * so that the passes take at most a tenth of one CPU, however large the
 * process (a 1 GiB heap with 100k contexts takes seconds a pass).
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "common/clock.h"
#include "engine/engine_internal.h"
#include "engine/scan/scanner.h"

#define ENGINE_MEMSCAN_NS (1000u * 1000000u)
#define ENGINE_MEMSCAN_REST 9u

/* A context found: its census, as a late attach's (engine_harvest.c). */
static void engine_scan_event(void *ctx, const struct harvest_event *ev)
{
	engine_census_event(ctx, ev);
}

bool engine_scanner_create(struct engine *e, char *err, size_t errlen)
{
	const struct scanner_env env = {
		.model = &e->model,
		.pm = e->core ? &e->core_pm : attach_pm(e->attach),
		.fc = e->framecheck,
		.stations = e->region.stations,
		.nonblocking = e->cfg.nonblocking,
		.ctx = e,
		.event = engine_scan_event,
	};

	e->scanner = e->core ? scanner_create_core(e->core, &env, err, errlen)
			     : scanner_create(e->target.pid, &env, err, errlen);
	e->target.scanned = e->scanner != NULL;
	return e->scanner != NULL;
}

void engine_scan_memory(struct engine *e)
{
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC);

	if (!scanner_pass(e->scanner))
		return; /* gone: the ppt thread sees its exit */
	/* Its modules, for the census walks' names (a core's are given). */
	if (!e->core)
		(void)symtab_keep_maps(&e->symtab, e->target.pid, now);
	pthread_mutex_lock(&e->lock);
	scanner_apply(e->scanner, engine_now(e));
	pthread_mutex_unlock(&e->lock);
}

uint64_t engine_scan_step(struct engine *e, uint64_t *next_pass)
{
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC);

	if (now >= *next_pass) {
		uint64_t took = now, rest;

		engine_scan_memory(e);
		now = clock_now_ns(CLOCK_MONOTONIC);
		took = now - took;
		rest = took * ENGINE_MEMSCAN_REST;
		*next_pass =
			now +
			(rest > ENGINE_MEMSCAN_NS ? rest : ENGINE_MEMSCAN_NS);
	}
	/* After a pass too: what it found is checked with the threads
	 * stopped, and they are shown. */
	scanner_refresh(e->scanner);
	pthread_mutex_lock(&e->lock);
	scanner_refresh_apply(e->scanner, engine_now(e));
	pthread_mutex_unlock(&e->lock);
	return clock_now_ns(CLOCK_MONOTONIC) + ENGINE_MEMSCAN_NS;
}
