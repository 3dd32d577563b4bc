/*
 * engine_mode: the engine's four modes as one const table of operations.
 *
 *   launch   corotop -- CMD: create a region, start CMD on it, harvest
 *   observe  corotop --shm FILE: borrow another's region, harvest it
 *   attach   corotop -p PID: a running process, through its ppt buffers
 *            (engine_ppt.c), and a region its probe joins by rendezvous
 *   replay   corotop --replay FILE: a recording, no region, no threads
 *            (engine_replay.c)
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
#include "engine/engine.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "engine/symbols/symtab.h"
#include "engine/target/autotrace.h"
#include "engine/target/keeper.h"
#include "engine/target/launch.h"
#include "engine/target/output.h"

enum engine_mode_id {
	ENGINE_LAUNCH = 0,
	ENGINE_OBSERVE,
	ENGINE_ATTACH,
	ENGINE_REPLAY,
	ENGINE_SERVE,
};

/* Where the target's stdin, stdout and stderr go (enum engine_output);
 * *file: a descriptor to close once it runs. */
static bool launch_output(struct engine *e, struct launch_stdio *io, int *file,
			  char *err, size_t errlen)
{
	const struct engine_config *c = &e->cfg;

	*io = (struct launch_stdio){-1, -1, -1};
	*file = -1;
	switch (c->output) {
	case ENGINE_OUTPUT_INHERIT:
		break;
	case ENGINE_OUTPUT_STDERR:
		if (c->output_path) {
			*file = output_file_open(c->output_path, err, errlen);
			if (*file < 0)
				return false;
			io->out = io->err = *file;
		} else {
			io->out = STDERR_FILENO;
		}
		break;
	case ENGINE_OUTPUT_CAPTURE:
		e->output = output_create(c->output_path, c->output_cols,
					  c->output_rows, err, errlen);
		if (!e->output)
			return false;
		io->in = output_target_in(e->output);
		io->out = io->err = output_target_out(e->output);
		break;
	}
	return true;
}

/* launch: the target starts with the CTP_* environment of our region. */
static bool launch_start(struct engine *e, char *err, size_t errlen)
{
	struct launch_probe lp = {e->cfg.sample_hz, e->cfg.parked_stacks, NULL};
	struct launch_stdio io;
	struct autotrace at;
	int file;
	pid_t pid;

	/* A program that does not call the probe is traced through its
	 * context switches (src/preload), unless told not to. */
	if (!e->cfg.no_auto) {
		autotrace_check(e->cfg.argv[0], &at);
		if (at.verdict == AUTOTRACE_PRELOAD)
			lp.preload = at.library;
		snprintf(e->autotrace_note, sizeof(e->autotrace_note), "%s",
			 at.note);
	}
	if (!launch_output(e, &io, &file, err, errlen))
		return false;
	pid = launch_spawn(e->cfg.argv, e->region.shm_path, e->region.sock_path,
			   e->region.stations, &lp, &io, err, errlen);
	if (file >= 0)
		close(file);
	if (e->output)
		output_spawned(e->output); /* before the keeper's fork */
	if (pid < 0)
		return false;
	e->target.pid = pid;
	keeper_start(e->region.dir, pid, e->region.listen_fd);
	if (e->output)
		keeper_hold_output(output_fd(e->output),
				   output_file_fd(e->output));
	symtab_set_pid(&e->symtab, pid);
	e->target.running = true;
	return engine_live_start(e, err, errlen);
}

/* attach: the process runs already and is never ours to signal. */
static bool attach_start(struct engine *e, char *err, size_t errlen)
{
	e->target.pid = e->cfg.attach_pid;
	e->target.attached = true;
	symtab_set_pid(&e->symtab, e->target.pid);
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

static bool replay_destroy(struct engine *e)
{
	engine_rp_destroy(e);
	return true;
}

static size_t replay_parked(struct engine *e, uint64_t model_id,
			    const struct model_coro *c, uint64_t *frames,
			    size_t max, uint64_t *trace_id)
{
	(void)c;
	*trace_id = 0; /* a recording keeps frames, not trace ids */
	return engine_rp_parked_stack(e, model_id, frames, max);
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
			   .start = attach_start,
			   ENGINE_LIVE_OPS},
	[ENGINE_REPLAY] = {.name = "replay",
			   .create = engine_replay_create,
			   .start = replay_start,
			   .stop = replay_stop,
			   .destroy = replay_destroy,
			   /* The moment and the history go together. */
			   .snapshot = engine_rp_snapshot,
			   .history = engine_rp_snapshot,
			   .watch = engine_rp_watch,
			   .parked = replay_parked},
	[ENGINE_SERVE] = {.name = "serve",
			  .start = engine_live_start,
			  ENGINE_LIVE_OPS},
};

const struct engine_mode *engine_mode_of(const struct engine_config *cfg)
{
	if (cfg->replay_path)
		return &engine_modes[ENGINE_REPLAY];
	if (cfg->attach_pid)
		return &engine_modes[ENGINE_ATTACH];
	if (cfg->shm_path)
		return &engine_modes[ENGINE_OBSERVE];
	if (cfg->argv)
		return &engine_modes[ENGINE_LAUNCH];
	return &engine_modes[ENGINE_SERVE];
}
