/*
 * recording: the engine's side of --record (recorder.c writes the file):
 * creating the recorder with what it is tracing, the two questions its
 * writer thread asks (an address's symbol, a parked stack's frames), what
 * the model learned of a coroutine after the recorder saw its events, and
 * closing it with the reason when the file could not be written.  All it
 * knows of the engine is recording_inputs (recording.h).
 */
#define _GNU_SOURCE
#include "engine/record/recording.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "engine/model/learned.h"
#include "engine/model/namepool.h"
#include "engine/symbols/symtab.h"

struct recording {
	struct recorder *rec;
	struct recording_inputs in;
	char warning[200]; /* recording_warning's text, once failed */
};

/* The writer thread asks these. */
static bool recording_symbol(void *ctx, uint64_t addr, char *buf, size_t n)
{
	struct recording *r = ctx;
	struct symtab_sym sym;

	/* A caller frame is asked at its call (addr - 1): one no call
	 * precedes is a trampoline's start pushed as a return address
	 * (makecontext's __start_context), named at itself, as the live
	 * view does (symtab_where_in). */
	bool in = symtab_lookup(r->in.symtab, addr, &sym);

	if (!in || !sym.function[0]) {
		struct symtab_sym at;

		if (symtab_lookup(r->in.symtab, addr + 1, &at) &&
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

static size_t recording_stack(void *ctx, uint64_t trace, uint64_t *frames,
			      size_t max)
{
	struct recording *r = ctx;

	return r->in.stack(r->in.ctx, trace, frames, max);
}

struct recording *recording_create(const struct recording_inputs *in, char *err,
				   size_t errlen)
{
	struct recording *r = calloc(1, sizeof(*r));
	struct recorder_hooks h = {recording_symbol, recording_stack, r};
	char what[1024] = "";
	size_t at = 0;

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->in = *in;
	/* What is traced, for the replay's header. */
	if (in->argv) {
		for (size_t i = 0; in->argv[i] && at < sizeof(what) - 1; i++) {
			int w = snprintf(what + at, sizeof(what) - at, "%s%s",
					 i ? " " : "", in->argv[i]);

			if (w < 0)
				break;
			at += (size_t)w;
		}
	} else if (in->attach_pid) {
		snprintf(what, sizeof(what), "pid %d", (int)in->attach_pid);
	} else if (in->shm_path) {
		snprintf(what, sizeof(what), "observer of %s", in->shm_path);
	}
	r->rec = recorder_create(in->path, in->stations, &h, what, err, errlen);
	if (!r->rec) {
		free(r);
		return NULL;
	}
	return r;
}

void recording_open(struct recording *r, uint32_t station, uint64_t probe_id,
		    uint64_t ts, uint64_t id, const char *name, uint32_t pid)
{
	recorder_open(r->rec, station, probe_id, ts, id, name, pid);
}

void recording_lost(struct recording *r, uint32_t station, uint64_t count,
		    uint64_t ts)
{
	recorder_lost(r->rec, station, count, ts);
}

void recording_close(struct recording *r, uint32_t station, uint64_t ts)
{
	recorder_close(r->rec, station, ts);
}

void recording_publish(struct recording *r)
{
	if (r)
		recorder_publish(r->rec);
}

void recording_learned(struct recording *r, const struct model_coro *c,
		       uint32_t name_was, unsigned kind_was)
{
	char text[NAMEPOOL_TEXT_MAX];
	uint64_t pc = 0, now;
	struct namepool *names;

	if (!r || c->station == MODEL_NONE)
		return;
	names = r->in.model->names;
	/* From the birth when learned at it (the probe's kind, a name
	 * from the station's entry): the live view shows it from its first
	 * snapshot. */
	now = r->in.now(r->in.ctx);
	if (now < c->birth_ts || c->switches == 0)
		now = c->birth_ts;
	/* Each name it takes: its entry's at the birth, a walk's later. */
	if (c->name != name_was &&
	    namepool_get(names, c->name, text, sizeof(text), &pc) &&
	    (text[0] || pc))
		recorder_named(r->rec, c->station, now, text[0] ? 0 : pc,
			       text[0] ? 0 : namepool_made_for(names, c->name),
			       text);
	if (c->kind != kind_was)
		recorder_kind(r->rec, c->station, now, c->kind);
}

void recording_where(struct recording *r, const struct model_coro *c,
		     uint64_t where, uint64_t trace, bool learned)
{
	if (r && c->station != MODEL_NONE && c->state == MODEL_SUSPENDED &&
	    (where || trace))
		recorder_where(r->rec, c->station, c->state_ts,
			       r->in.now(r->in.ctx), where, trace, learned);
}

void recording_event(struct recording *r, const struct harvest_event *ev,
		     uint32_t name_was, unsigned kind_was)
{
	const struct model_coro *c;
	uint64_t f, stack;

	recorder_event(r->rec, ev);
	c = model_station_coro(r->in.model, ev->station);
	if (!c || ev->is_active)
		return;
	if (c->name != name_was || c->kind != kind_was)
		recording_learned(r, c, name_was, kind_was);
	/* A census walk put WHERE on the record (engine/stacks/census.c); a
	 * short park shows the frame learned at an earlier one at that switch,
	 * as engine_where_learned does for the live view. */
	if (ev->census) {
		if (c->last_addr != ev->addr)
			recording_where(r, c, c->last_addr, 0, false);
	} else if ((f = r->in.learned(r->in.ctx, c->id, ev->addr, &stack)) &&
		   f != ev->addr) {
		recording_where(r, c, f, stack, true);
	}
}

void recording_target(struct recording *r, pid_t pid)
{
	if (!r)
		return;
	/* One producer at a time: the harvest side pushes under the lock. */
	pthread_mutex_lock(r->in.lock);
	recorder_target(r->rec, pid);
	pthread_mutex_unlock(r->in.lock);
}

void recording_stop(struct recording *r, bool exited, int exit_code,
		    int term_signal)
{
	if (!r)
		return;
	/* The threads are joined: nobody else pushes. */
	if (exited)
		recorder_exit(r->rec, exit_code, term_signal);
	recorder_stop(r->rec, clock_now_ns(CLOCK_MONOTONIC));
}

bool recording_destroy(struct recording *r, char *err, size_t errlen)
{
	bool ok;

	if (!r)
		return true;
	ok = recorder_destroy(r->rec, err, errlen);
	free(r);
	return ok;
}

const char *recording_warning(struct recording *r)
{
	struct recorder_stats rs;

	if (!r)
		return NULL;
	recorder_stats(r->rec, &rs);
	if (!rs.failed)
		return NULL;
	/* Written once: failed stays set, and the message with it. */
	if (!r->warning[0])
		snprintf(r->warning, sizeof(r->warning), "--record stopped: %s",
			 rs.error);
	return r->warning;
}

void recording_snapshot(struct recording *r, struct snapshot_record *out)
{
	struct recorder_stats rs;

	memset(out, 0, sizeof(*out));
	if (!r)
		return;
	recorder_stats(r->rec, &rs);
	out->on = true;
	out->path = r->in.path;
	out->bytes = rs.bytes;
	out->intervals = rs.intervals;
	out->dropped = rs.dropped;
	out->stopped = rs.failed;
}

void recording_stats(struct recording *r, struct recorder_stats *out)
{
	recorder_stats(r ? r->rec : NULL, out);
}
