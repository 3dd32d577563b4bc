/*
 * engine_mode: the engine's four modes as one const table of operations.
 *
 *   launch   corotop -- CMD: create a region, start CMD on it, harvest
 *   observe  corotop --shm FILE: borrow another's region, harvest it
 *   attach   corotop -p PID: a running process, through its ppt buffers
 *            (engine/attach), and a region its probe joins by rendezvous
 *   replay   corotop --replay FILE: a recording, no region, no threads
 *            (engine/replay/playback.c; its entries and the replay
 *            controls below are thin calls into it)
 *   core     corotop --core FILE: a core file's process, scanned once
 *            and frozen (engine_core.c)
 *   serve    no command, region or process: create a region and start
 *            nothing -- a program that links the engine and the probe
 *            (tests, benchmarks) attaches its own probe to it
 *
 * The three live modes share the region, the threads and the queries
 * (engine.c, engine_harvest.c, engine_query.c); they differ in how the
 * target comes to be, which is all this file says about them.  The
 * facade's functions call e->mode instead of asking which mode they are
 * in.
 */
#define _GNU_SOURCE
#include "engine/engine.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "engine/replay/playback.h"
#include "engine/symbols/symtab.h"
#include "engine/target/autotrace.h"
#include "engine/target/framecheck.h"
#include "engine/launch/keeper.h"
#include "engine/launch/launch.h"
#include "engine/launch/output.h"

enum engine_mode_id {
	ENGINE_LAUNCH = 0,
	ENGINE_OBSERVE,
	ENGINE_ATTACH,
	ENGINE_REPLAY,
	ENGINE_IN_PROCESS, /* a region for a probe in this very process */
	ENGINE_CORE,	   /* a core file (engine_core.c) */
};

/* Where the target's stdin, stdout and stderr go (enum engine_output);
 * *sink: where the keeper appends them (-1: nowhere), for the caller to
 * close once the keeper has it. */
static bool launch_output(struct engine *e, struct launch_stdio *io, int *sink,
			  char *err, size_t errlen)
{
	const struct engine_config *c = &e->cfg;
	bool view = c->output == ENGINE_OUTPUT_CAPTURE;
	int cols = c->output_cols, rows = c->output_rows;
	bool pty = view;

	*io = (struct launch_stdio){-1, -1, -1};
	*sink = -1;
	if (c->output == ENGINE_OUTPUT_INHERIT)
		return true;
	if (c->output_path) {
		*sink = output_file_open(c->output_path, err, errlen);
		if (*sink < 0)
			return false;
	} else if (!view) {
		/* Batch: our stderr, through the keeper; a terminal there
		 * is a terminal for the target too. */
		struct winsize ws;

		*sink = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
		pty = isatty(STDERR_FILENO) == 1;
		if (pty && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0) {
			cols = ws.ws_col;
			rows = ws.ws_row;
		}
	}
	e->output = output_create(pty, view, cols, rows, err, errlen);
	if (!e->output) {
		if (*sink >= 0)
			close(*sink);
		*sink = -1;
		return false;
	}
	io->in = output_target_in(e->output);
	io->out = io->err = output_target_out(e->output);
	return true;
}

/* launch: the target starts with the CTP_* environment of our region. */
static bool launch_start(struct engine *e, char *err, size_t errlen)
{
	struct launch_probe lp = {e->cfg.sample_hz, e->cfg.parked_stacks, NULL};
	struct launch_stdio io;
	struct keeper_output ko;
	struct autotrace at;
	bool kept;
	int sink;
	pid_t pid;

	/* A program that does not call the probe is traced through its
	 * context switches (src/preload), unless told not to. */
	if (!e->cfg.no_auto) {
		autotrace_check(e->cfg.argv[0], &at);
		if (at.verdict == AUTOTRACE_PRELOAD)
			lp.preload = at.library;
		/* The library is part of corotop: without it, `corotop --
		 * PROGRAM` would show an empty table and succeed. */
		if (at.verdict == AUTOTRACE_NO_LIBRARY) {
			snprintf(err, errlen, "%s", at.note);
			return false;
		}
		snprintf(e->autotrace_note, sizeof(e->autotrace_note), "%s",
			 at.note);
	}
	if (!launch_output(e, &io, &sink, err, errlen))
		return false;
	pid = launch_spawn(e->cfg.argv, e->region.shm_path, e->region.sock_path,
			   e->region.stations, &lp, &io, err, errlen);
	if (e->output)
		output_spawned(e->output); /* before the keeper's fork */
	if (pid < 0) {
		if (sink >= 0)
			close(sink);
		return false;
	}
	e->target.pid = pid;
	/* Its mappings, even if it exits before we read them (keptmaps.c). */
	(void)symtab_expect(&e->symtab, pid, e->region.maps_path);
	if (e->output)
		ko = (struct keeper_output){output_source(e->output), sink,
					    output_copy_end(e->output)};
	kept = keeper_start(e->region.dir, pid, e->region.listen_fd,
			    e->output ? &ko : NULL);
	if (sink >= 0)
		close(sink);
	if (e->output) {
		output_handed(e->output);
		/* Nobody would read what it prints: it would block on a
		 * full pty.  Not started, then. */
		if (!kept) {
			snprintf(err, errlen,
				 "cannot start the process that carries the "
				 "target's output: %s",
				 strerror(errno));
			(void)launch_terminate(pid, 0);
			e->target.pid = 0; /* reaped: never signalled again */
			return false;
		}
	}
	symtab_set_pid(&e->symtab, pid);
	e->framecheck = framecheck_create(pid);
	e->target.running = true;
	return engine_live_start(e, err, errlen);
}

/* attach: the process runs already and is never ours to signal. */
static bool mode_attach_start(struct engine *e, char *err, size_t errlen)
{
	e->target.pid = e->cfg.attach_pid;
	e->target.attached = true;
	symtab_set_pid(&e->symtab, e->target.pid);
	e->framecheck = framecheck_create(e->target.pid);
	e->target.running = true;
	return engine_live_start(e, err, errlen);
}

/* replay: nothing runs; snapshots are computed when asked for. */
static bool replay_start(struct engine *e, char *err, size_t errlen)
{
	(void)e;
	(void)err;
	(void)errlen;
	return true;
}

static void replay_stop(struct engine *e)
{
	(void)e;
}

/* The calling thread's SIGBUS landing pad (engine_harvest.c). */
static void replay_guard(sigjmp_buf *jb)
{
	engine_guard = jb;
}

bool engine_rp_create(struct engine *e, char *err, size_t errlen)
{
	const struct playback_inputs in = {
		.path = e->cfg.replay_path,
		.linger_ns = e->cfg.linger_ns,
		.play = e->cfg.replay_play,
		.symtab = &e->symtab,
		.lock = &e->lock,
		.lints = &e->cfg.lints,
		.target = &e->target,
		.guard = replay_guard,
	};

	e->rp = playback_create(&in, err, errlen);
	return e->rp != NULL;
}

static bool replay_destroy(struct engine *e)
{
	playback_destroy(e->rp);
	e->rp = NULL;
	return true;
}

static void replay_snapshot(struct engine *e, struct snapshot *out)
{
	playback_snapshot(e->rp, out);
}

static void replay_watch(struct engine *e, uint64_t id)
{
	playback_watch(e->rp, id);
}

static size_t replay_parked(struct engine *e, uint64_t model_id,
			    const struct model_coro *c, uint64_t *frames,
			    size_t max, uint64_t *trace_id)
{
	(void)c;
	*trace_id = 0; /* a recording keeps frames, not trace ids */
	return playback_parked_stack(e->rp, model_id, frames, max);
}

#define ENGINE_LIVE_OPS                                                        \
	.create = engine_live_create, .stop = engine_live_stop,                \
	.destroy = engine_live_destroy, .snapshot = engine_live_snapshot,      \
	.history = engine_live_history, .watch = engine_live_watch,            \
	.parked = engine_live_parked

static const struct engine_mode engine_modes[] = {
	[ENGINE_LAUNCH] = {.name = "launch",
			   .start = launch_start,
			   ENGINE_LIVE_OPS},
	[ENGINE_OBSERVE] = {.name = "observe",
			    .start = engine_live_start,
			    ENGINE_LIVE_OPS},
	[ENGINE_ATTACH] = {.name = "attach",
			   .start = mode_attach_start,
			   ENGINE_LIVE_OPS},
	[ENGINE_REPLAY] = {.name = "replay",
			   .create = engine_replay_create,
			   .start = replay_start,
			   .stop = replay_stop,
			   .destroy = replay_destroy,
			   /* The moment and the history go together. */
			   .snapshot = replay_snapshot,
			   .history = replay_snapshot,
			   .watch = replay_watch,
			   .parked = replay_parked},
	[ENGINE_IN_PROCESS] = {.name = "in-process",
			       .start = engine_live_start,
			       ENGINE_LIVE_OPS},
	/* The live queries, on a core's model. */
	[ENGINE_CORE] = {.name = "core",
			 .create = engine_core_create,
			 .start = engine_core_start,
			 .stop = engine_live_stop,
			 .destroy = engine_core_destroy,
			 .snapshot = engine_live_snapshot,
			 .history = engine_live_history,
			 .watch = engine_live_watch,
			 .parked = engine_live_parked},
};

const struct engine_mode *engine_mode_of(const struct engine_config *cfg)
{
	if (cfg->replay_path)
		return &engine_modes[ENGINE_REPLAY];
	if (cfg->core_path)
		return &engine_modes[ENGINE_CORE];
	if (cfg->attach_pid)
		return &engine_modes[ENGINE_ATTACH];
	if (cfg->shm_path)
		return &engine_modes[ENGINE_OBSERVE];
	if (cfg->argv)
		return &engine_modes[ENGINE_LAUNCH];
	return &engine_modes[ENGINE_IN_PROCESS];
}

/* ---- the replay controls (engine.h): no-ops unless replaying ---- */

bool engine_replay_info(struct engine *e, struct engine_replay_info *out)
{
	struct playback_info pi;

	memset(out, 0, sizeof(*out));
	if (!e->rp)
		return false;
	playback_info(e->rp, &pi);
	out->pos = pi.pos;
	out->t0 = pi.t0;
	out->t1 = pi.t1;
	out->ran = pi.ran;
	out->epoch_ns = pi.epoch_ns;
	out->speed = pi.speed;
	out->playing = pi.playing;
	out->ours = pi.ours;
	out->truncated = pi.truncated;
	out->pid = pi.pid;
	out->events = pi.events;
	out->coroutines = pi.coroutines;
	out->problems = pi.problems;
	memcpy(out->problem, pi.problem, sizeof(out->problem));
	memcpy(out->path, pi.path, sizeof(out->path));
	memcpy(out->command, pi.command, sizeof(out->command));
	return true;
}

void engine_replay_play(struct engine *e, bool play)
{
	if (e->rp)
		playback_play(e->rp, play);
}

void engine_replay_speed(struct engine *e, double speed)
{
	if (!e->rp || !(speed > 0))
		return;
	speed = speed < ENGINE_REPLAY_SPEED_MIN	  ? ENGINE_REPLAY_SPEED_MIN
		: speed > ENGINE_REPLAY_SPEED_MAX ? ENGINE_REPLAY_SPEED_MAX
						  : speed;
	playback_speed(e->rp, speed);
}

void engine_replay_seek(struct engine *e, uint64_t t)
{
	if (e->rp)
		playback_seek(e->rp, t);
}

uint64_t engine_replay_step(struct engine *e, uint64_t id, int dir)
{
	return e->rp ? playback_step(e->rp, id, dir) : 0;
}
