/*
 * engine_record: the engine's side of --record (recorder.c writes the
 * file): creating the recorder with what it is tracing, the two questions
 * its writer thread asks (an address's symbol, a parked stack's frames),
 * and closing it with the reason when the file could not be written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "engine/calltrace/parked.h"
#include "engine/ctp/namepool.h"
#include "common/clock.h"

/* The writer thread asks these. */
static bool engine_rec_symbol(void *ctx, uint64_t addr, char *buf, size_t n)
{
	struct engine *e = ctx;
	struct symtab_sym sym;

	/* A caller frame is asked at its call (addr - 1): one no call
	 * precedes is a trampoline's start pushed as a return address
	 * (makecontext's __start_context), named at itself, as the live
	 * view does (symtab_where_in). */
	bool in = symtab_lookup(&e->symtab, addr, &sym);

	if (!in || !sym.function[0]) {
		struct symtab_sym at;

		if (symtab_lookup(&e->symtab, addr + 1, &at) &&
		    at.function[0] && !at.offset) {
			sym = at;
		} else if (in && sym.module[0]) {
			/* In a file, in no function it names (an assembly
			 * trampoline's label): the file and its offset, as
			 * the live view says it. */
			snprintf(buf, n, "%s+0x%llx", sym.module,
				 (unsigned long long)sym.offset);
			return true;
		} else {
			return false;
		}
	}
	if (sym.line > 0)
		snprintf(buf, n, "%s+0x%llx (%s:%d)", sym.function,
			 (unsigned long long)sym.offset, sym.file, sym.line);
	else
		snprintf(buf, n, "%s+0x%llx", sym.function,
			 (unsigned long long)sym.offset);
	return true;
}

static size_t engine_rec_stack(void *ctx, uint64_t trace, uint64_t *frames,
			       size_t max)
{
	struct engine *e = ctx;

	return stacks_parked_frames(e->stacks, trace, frames, max);
}

bool engine_rec_create(struct engine *e, char *err, size_t errlen)
{
	struct recorder_hooks h = {engine_rec_symbol, engine_rec_stack, e};
	char what[1024] = "";
	size_t at = 0;

	if (!e->cfg.record_path)
		return true;
	/* What is traced, for the replay's header. */
	if (e->cfg.argv) {
		for (size_t i = 0; e->cfg.argv[i] && at < sizeof(what) - 1;
		     i++) {
			int w = snprintf(what + at, sizeof(what) - at, "%s%s",
					 i ? " " : "", e->cfg.argv[i]);

			if (w < 0)
				break;
			at += (size_t)w;
		}
	} else if (e->cfg.attach_pid) {
		snprintf(what, sizeof(what), "pid %d", (int)e->cfg.attach_pid);
	} else if (e->cfg.shm_path) {
		snprintf(what, sizeof(what), "observer of %s", e->cfg.shm_path);
	}
	e->rec = recorder_create(e->cfg.record_path, e->region.stations, &h,
				 what, err, errlen);
	return e->rec != NULL;
}

void engine_rec_learned(struct engine *e, const struct model_coro *c,
			uint32_t name_was, unsigned kind_was)
{
	char text[NAMEPOOL_TEXT_MAX];
	uint64_t pc = 0, now;

	if (!e->rec || c->station == MODEL_NONE)
		return;
	/* From the birth when learned at it (the probe's kind, a name
	 * from the station's entry): the live view shows it from its first
	 * snapshot. */
	now = engine_now(e);
	if (now < c->birth_ts || c->switches == 0)
		now = c->birth_ts;
	/* Each name it takes: its entry's at the birth, a walk's later. */
	if (c->name != name_was &&
	    namepool_get(e->model.names, c->name, text, sizeof(text), &pc) &&
	    (text[0] || pc))
		recorder_named(
			e->rec, c->station, now, text[0] ? 0 : pc,
			text[0] ? 0
				: namepool_made_for(e->model.names, c->name),
			text);
	if (c->kind != kind_was)
		recorder_kind(e->rec, c->station, now, c->kind);
}

void engine_rec_where(struct engine *e, const struct model_coro *c,
		      uint64_t where, uint64_t trace, bool learned)
{
	if (e->rec && c->station != MODEL_NONE && c->state == MODEL_SUSPENDED &&
	    (where || trace))
		recorder_where(e->rec, c->station, c->state_ts, engine_now(e),
			       where, trace, learned);
}

const struct model_coro *engine_rec_coro(struct engine *e, uint32_t station)
{
	struct model *m = &e->model;
	uint32_t r;

	if (station >= m->stations)
		return NULL;
	r = m->by_station[station];
	return r == MODEL_NONE ? NULL : &m->coro[r];
}

void engine_rec_event(struct engine *e, const struct harvest_event *ev,
		      uint32_t name_was, unsigned kind_was)
{
	const struct model_coro *c;
	uint64_t f, stack;

	recorder_event(e->rec, ev);
	c = engine_rec_coro(e, ev->station);
	if (!c || ev->is_active)
		return;
	if (c->name != name_was || c->kind != kind_was)
		engine_rec_learned(e, c, name_was, kind_was);
	/* A census walk put WHERE on the record (engine/stacks/census.c); a
	 * short park shows the frame learned at an earlier one at that switch,
	 * as engine_where_learned does for the live view. */
	if (ev->census) {
		if (c->last_addr != ev->addr)
			engine_rec_where(e, c, c->last_addr, 0, false);
	} else if ((f = stacks_learned(e->stacks, c->id, ev->addr, &stack)) &&
		   f != ev->addr) {
		engine_rec_where(e, c, f, stack, true);
	}
}

void engine_rec_target(struct engine *e, pid_t pid)
{
	if (!e->rec)
		return;
	/* One producer at a time: the harvest side pushes under the lock. */
	pthread_mutex_lock(&e->lock);
	recorder_target(e->rec, pid);
	pthread_mutex_unlock(&e->lock);
}

void engine_rec_stop(struct engine *e)
{
	if (!e->rec)
		return;
	/* The threads are joined: nobody else pushes. */
	if (e->target.exited)
		recorder_exit(e->rec, e->target.exit_code,
			      e->target.term_signal);
	recorder_stop(e->rec, clock_now_ns(CLOCK_MONOTONIC));
}

bool engine_rec_destroy(struct engine *e, char *err, size_t errlen)
{
	bool ok = recorder_destroy(e->rec, err, errlen);

	e->rec = NULL;
	return ok;
}

const char *engine_rec_warning(struct engine *e)
{
	struct recorder_stats rs;

	if (!e->rec)
		return NULL;
	recorder_stats(e->rec, &rs);
	if (!rs.failed)
		return NULL;
	/* Written once: failed stays set, and the message with it. */
	if (!e->rec_warning[0])
		snprintf(e->rec_warning, sizeof(e->rec_warning),
			 "--record stopped: %s", rs.error);
	return e->rec_warning;
}

void engine_rec_snapshot(struct engine *e, struct snapshot_record *out)
{
	struct recorder_stats rs;

	memset(out, 0, sizeof(*out));
	if (!e->rec)
		return;
	recorder_stats(e->rec, &rs);
	out->on = true;
	out->path = e->cfg.record_path;
	out->bytes = rs.bytes;
	out->intervals = rs.intervals;
	out->dropped = rs.dropped;
	out->stopped = rs.failed;
}

void engine_record_stats(struct engine *e, struct recorder_stats *out)
{
	recorder_stats(e->rec, out);
}
