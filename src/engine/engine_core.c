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
 * A program that ran with the probe or the preload has its registry in
 * its memory (src/wire/regdesc.h: the descriptor the probe exports): then
 * that is read instead of a scan (engine/scan/probereg.c) -- the exact
 * list, each coroutine with its name, entry, state, thread and last
 * transition, sent as the census a late attach would have had, its
 * parked stack walked from where it parked.  The clock stops at the
 * latest moment the registry knows (a transition or a birth), so IN-STATE
 * and AGE count to that moment: lower bounds of what they were at the
 * dump.
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

#include "corotop/ctp.h"
#include "engine/ctp/harvest.h"
#include "engine/engine_internal.h"
#include "engine/engine_mode.h"
#include "engine/scan/probereg.h"
#include "engine/scan/scanner.h"
#include "engine/symbols/symbolizer.h"
#include "engine/symbols/symtab.h"
#include "engine/target/corefile.h"
#include "engine/target/framecheck.h"
#include "wire/regdesc.h"

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

/* The registry's read, for its two passes. */
struct core_reg {
	struct engine *e;
	uint32_t next;	 /* the next station */
	uint64_t latest; /* the latest transition or birth */
};

static void core_reg_latest(void *ctx, const struct probereg_coro *rc)
{
	struct core_reg *r = ctx;

	if (rc->c.last_ts > r->latest)
		r->latest = rc->c.last_ts;
	if (rc->c.birth_ts > r->latest)
		r->latest = rc->c.birth_ts;
}

/* One coroutine of the registry on the next station: its header as the
 * probe's census writes it (census.c), then its census event (lock
 * held). */
static void core_reg_one(void *ctx, const struct probereg_coro *rc)
{
	struct core_reg *r = ctx;
	struct engine *e = r->e;
	const struct corotop_coro *c = &rc->c;
	uint32_t st = r->next++;
	struct harvest_event ev = {
		.ts = c->last_ts,
		.tid = c->last_tid,
		.addr = c->last_addr,
		.probe_id = c->probe_id,
		.station = st,
		.census = 1,
		.is_active = c->last_active != 0,
		.flags = (uint8_t)((c->settings & REGDESC_CORO_CONTEXT
					    ? CTP_EPF_CONTEXT
					    : 0) |
				   (!c->last_active && c->last_long
					    ? CTP_EPF_LONG_WAIT
					    : 0)),
	};

	model_open(&e->model, st, c->probe_id, c->birth_ts);
	model_occupant(&e->model, st, rc->name, rc->at);
	if (rc->entry && SNAPSHOT_ADDR_NAMEABLE(rc->entry))
		model_name_made(&e->model, st, rc->entry,
				SNAPSHOT_ADDR_NAMEABLE(rc->made_for)
					? rc->made_for
					: 0);
	model_kind(&e->model, st,
		   c->settings & REGDESC_CORO_DISPATCHER ? MODEL_DISPATCHER
		   : c->settings & REGDESC_CORO_ROOT	 ? MODEL_ROOT
							 : MODEL_COROUTINE);
	model_pid(&e->model, st, (uint32_t)e->target.pid);
	if (!c->last_ts)
		return; /* opened, never ran: no event (as the census) */
	if (!c->last_active)
		ev.where = (struct ctp_census){.sp = c->park_sp,
					       .fp = c->park_fp,
					       .pc = c->park_pc,
					       .stack_lo = c->stack_lo,
					       .stack_hi = c->stack_hi};
	engine_census_event(e, &ev);
}

/* The core's memory, for probereg. */
static bool core_reg_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	struct engine *e = ctx;
	char err[160];

	return procmem_read(&e->core_pm, addr, buf, n, err, sizeof(err));
}

/* Where the core's probe registry is, when it has one that can be read
 * (*r: its latest moment); false: none (it is scanned instead). */
static bool core_registry_find(struct engine *e, uint64_t *desc,
			       struct core_reg *r)
{
	struct probereg_stats st;
	char why[256];

	return symtab_find_object(&e->symtab, REGDESC_SYMBOL, desc) &&
	       probereg_read(core_reg_read, e, *desc, e->region.stations,
			     core_reg_latest, r, &st, why, sizeof(why));
}

/* The registry at desc into the model, the clock stopped at its latest
 * moment first: the census's times are the core's. */
static void core_registry_send(struct engine *e, uint64_t desc,
			       struct core_reg *r)
{
	struct probereg_stats st;
	char why[256];

	pthread_mutex_lock(&e->lock);
	engine_mark_exit_at(e, r->latest);
	if (probereg_read(core_reg_read, e, desc, e->region.stations,
			  core_reg_one, r, &st, why, sizeof(why)))
		e->core_reg = (struct core_reg_stats){
			.read = true, .live = st.live, .unread = st.unread};
	pthread_mutex_unlock(&e->lock);
}

bool engine_core_start(struct engine *e, char *err, size_t errlen)
{
	struct corefile_info info;
	struct symbolizer_image im;
	struct core_reg r = {.e = e};
	struct symbolizer *sym;
	uint64_t desc = 0;
	char why[256];
	bool reg;

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
	e->target.running = false;
	pthread_mutex_unlock(&e->lock);
	/* Its registry, else a scan (the scanner made before the
	 * threads start, which may look at it). */
	reg = core_registry_find(e, &desc, &r);
	if (!reg && !engine_scanner_create(e, err, errlen))
		return false;
	if (!engine_live_start(e, err, errlen))
		return false;
	/* Before any snapshot; then the clock stops. */
	if (reg)
		core_registry_send(e, desc, &r);
	else
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
	out->registry = e->core_reg.read;
	out->registry_live = e->core_reg.live;
	out->registry_unread = e->core_reg.unread;
}

bool engine_core_destroy(struct engine *e)
{
	bool ok = engine_live_destroy(e);

	corefile_destroy(e->core);
	e->core = NULL;
	return ok;
}
