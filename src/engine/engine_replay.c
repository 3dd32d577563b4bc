/*
 * engine_replay: the engine in replay mode (corotop --replay FILE).  No
 * region, no target, no threads: snapshots are computed from a recording
 * (replay.c) at the replay's position, which a clock moves while playing:
 *
 *   position = base + (now - since) x speed, within [t0, t1]
 *
 * Pausing, seeking, stepping and changing speed re-base the clock, so the
 * position never jumps.  Reaching the end pauses.  The recording is a
 * mapped file another process may truncate: every read of it runs under
 * the engine's SIGBUS guard, and a fault leaves the last snapshot's data
 * with the error set, never a crash.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "engine/heph/hephnames.h"
#include "engine/heph/replay.h"
#include "common/clock.h"
#include "common/grow.h"

static const char engine_rp_sigbus[] =
	"the recording was truncated while being read (SIGBUS); replay stopped";

struct engine_rp {
	struct replay r;
	struct heph_names names; /* the recording's symbols (symtab's) */
	uint64_t base, since;	 /* position `base` at monotonic `since` */
	double speed;
	bool playing;
	uint64_t watch; /* the coroutine whose history snapshots carry */
	const char *error;
	/* Snapshots are built in scratch and kept in good once complete:
	 * after a fault the last complete one is what callers get. */
	struct snapshot scratch, good;
};

/* With e->lock held: the position now. */
static uint64_t rp_pos(struct engine_rp *p)
{
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC), pos = p->base;

	if (p->playing) {
		double d = (double)(now - p->since) * p->speed;

		pos = d >= (double)(p->r.t1 - p->base) ? p->r.t1
						       : p->base + (uint64_t)d;
		if (pos >= p->r.t1)
			p->playing = false;
		p->base = pos;
		p->since = now;
	}
	return pos;
}

static const char *rp_name(void *ctx, uint64_t addr)
{
	return heph_names_find(ctx, addr);
}

/* Open under the SIGBUS guard: the file may shrink while it is indexed. */
static bool rp_open(struct engine *e, struct engine_rp *p, char *err,
		    size_t errlen)
{
	sigjmp_buf jb;
	bool ok;

	if (sigsetjmp(jb, 1)) {
		engine_guard = NULL;
		replay_close(&p->r); /* what was built so far */
		snprintf(err, errlen, "%s: %s", e->cfg.replay_path,
			 engine_rp_sigbus);
		return false;
	}
	engine_guard = &jb;
	ok = replay_open(&p->r, e->cfg.replay_path, e->cfg.linger_ns, err,
			 errlen);
	if (ok)
		heph_names_init(&p->names, &p->r.f);
	engine_guard = NULL;
	return ok;
}

bool engine_rp_create(struct engine *e, char *err, size_t errlen)
{
	struct engine_rp *p = calloc(1, sizeof(*p));

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	/* engine_create installed the guard's SIGBUS handler first. */
	if (!rp_open(e, p, err, errlen)) {
		free(p);
		return false;
	}
	if (!p->r.f.nev) {
		snprintf(err, errlen, "%s: no events in it%s%s",
			 e->cfg.replay_path, p->r.f.nproblems ? ": " : "",
			 p->r.f.nproblems ? p->r.f.problems[0].what : "");
		replay_close(&p->r);
		free(p);
		return false;
	}
	symtab_set_recorded(&e->symtab, rp_name, &p->names);
	p->speed = 1.0;
	p->base = p->r.t0;
	p->since = clock_now_ns(CLOCK_MONOTONIC);
	p->playing = e->cfg.replay_play;
	e->rp = p;
	return true;
}

void engine_rp_destroy(struct engine *e)
{
	if (!e->rp)
		return;
	symtab_set_recorded(&e->symtab, NULL, NULL);
	snapshot_finish(&e->rp->scratch);
	snapshot_finish(&e->rp->good);
	heph_names_finish(&e->rp->names);
	replay_close(&e->rp->r);
	free(e->rp);
	e->rp = NULL;
}

/* Run fn(e, arg) under the SIGBUS guard; false after a fault. */
static bool rp_guarded(struct engine *e, void (*fn)(struct engine *, void *),
		       void *arg)
{
	sigjmp_buf jb;

	if (e->rp->error)
		return false;
	if (sigsetjmp(jb, 1)) {
		engine_guard = NULL;
		e->rp->error = engine_rp_sigbus;
		e->rp->playing = false;
		return false;
	}
	engine_guard = &jb;
	fn(e, arg);
	engine_guard = NULL;
	return true;
}

static void rp_snap(struct engine *e, void *arg)
{
	struct snapshot *out = arg;
	uint64_t pos = rp_pos(e->rp);

	replay_snapshot(&e->rp->r, pos, out);
	out->history_id = 0;
	out->nhistory = 0;
	if (e->rp->watch && !out->history)
		out->history = malloc(MODEL_WATCH_MAX * sizeof(*out->history));
	if (e->rp->watch && out->history) {
		out->history_id = e->rp->watch;
		out->nhistory = replay_history(&e->rp->r, e->rp->watch, pos,
					       out->history, MODEL_WATCH_MAX);
	}
}

/* Copy the last complete snapshot into out (its own buffers). */
static void rp_copy(const struct snapshot *from, struct snapshot *out)
{
	struct model_coro *coro = out->coro;
	struct model_transition *hist = out->history;
	size_t cap = out->cap;

	grow_array_fit((void **)&coro, &cap, from->count, sizeof(*coro));
	if (from->nhistory && !hist)
		hist = malloc(MODEL_WATCH_MAX * sizeof(*hist));
	*out = *from;
	out->coro = coro;
	out->cap = cap;
	out->count = from->count < cap ? from->count : cap;
	if (out->count)
		memcpy(out->coro, from->coro, out->count * sizeof(*coro));
	out->history = hist;
	out->nhistory = hist ? from->nhistory : 0;
	if (out->nhistory)
		memcpy(hist, from->history, out->nhistory * sizeof(*hist));
}

void engine_rp_snapshot(struct engine *e, struct snapshot *out)
{
	struct engine_rp *p = e->rp;
	struct lint_config lints;

	pthread_mutex_lock(&e->lock);
	lints = e->cfg.lints;
	if (rp_guarded(e, rp_snap, &p->scratch)) {
		struct snapshot t = p->good;

		p->good = p->scratch;
		p->scratch = t;
	}
	rp_copy(&p->good, out);
	out->error = p->error;
	out->target = e->target;
	out->target.pid = p->r.pid > 0 ? (pid_t)p->r.pid : 0;
	/* The target runs until the recording's end, and then had exited
	 * if the recording says so. */
	out->target.running = out->ts < p->r.t1 || !p->r.exited;
	if (p->r.exited && out->ts >= p->r.t1) {
		out->target.exited = true;
		out->target.exit_code = p->r.exit_code;
		out->target.term_signal = p->r.exit_signal;
	}
	out->replay = (struct snapshot_replay){
		.on = true,
		.playing = p->playing,
		.speed = p->speed,
		.t0 = p->r.t0,
		.t1 = p->r.t1,
	};
	pthread_mutex_unlock(&e->lock);
	snapshot_lint(out, &lints);
}

void engine_rp_watch(struct engine *e, uint64_t id)
{
	pthread_mutex_lock(&e->lock);
	e->rp->watch = id;
	pthread_mutex_unlock(&e->lock);
}

struct rp_stack_arg {
	uint64_t id, *frames;
	size_t max, n;
};

static void rp_stack(struct engine *e, void *arg)
{
	struct rp_stack_arg *a = arg;

	a->n = replay_parked_stack(&e->rp->r, a->id, rp_pos(e->rp), a->frames,
				   a->max);
}

size_t engine_rp_parked_stack(struct engine *e, uint64_t id, uint64_t *frames,
			      size_t max)
{
	struct rp_stack_arg a = {id, frames, max, 0};

	pthread_mutex_lock(&e->lock);
	rp_guarded(e, rp_stack, &a);
	pthread_mutex_unlock(&e->lock);
	return a.n;
}

/* ---- the controls (engine.h) ---- */

bool engine_replay_info(struct engine *e, struct engine_replay_info *out)
{
	struct engine_rp *p = e->rp;

	memset(out, 0, sizeof(*out));
	if (!p)
		return false;
	pthread_mutex_lock(&e->lock);
	out->pos = rp_pos(p);
	out->t0 = p->r.t0;
	out->t1 = p->r.t1;
	out->ran = p->r.ran;
	out->speed = p->speed;
	out->playing = p->playing;
	out->epoch_ns = p->r.f.have_epoch ? p->r.f.epoch_ns : 0;
	out->events = p->r.f.nev;
	out->coroutines = p->r.ncoro;
	out->ours = p->r.ours;
	out->pid = p->r.pid;
	out->problems = p->r.f.problems_total;
	out->truncated = p->r.f.truncated;
	if (p->r.f.nproblems)
		snprintf(out->problem, sizeof(out->problem), "at byte %llu: %s",
			 (unsigned long long)p->r.f.problems[0].off,
			 p->r.f.problems[0].what);
	snprintf(out->path, sizeof(out->path), "%s", p->r.path);
	snprintf(out->command, sizeof(out->command), "%s", p->r.command);
	pthread_mutex_unlock(&e->lock);
	return true;
}

void engine_replay_play(struct engine *e, bool play)
{
	struct engine_rp *p = e->rp;

	if (!p)
		return;
	pthread_mutex_lock(&e->lock);
	p->base = rp_pos(p);
	p->since = clock_now_ns(CLOCK_MONOTONIC);
	/* Play at the end starts over. */
	if (play && p->base >= p->r.t1)
		p->base = p->r.t0;
	p->playing = play;
	pthread_mutex_unlock(&e->lock);
}

void engine_replay_speed(struct engine *e, double speed)
{
	struct engine_rp *p = e->rp;

	if (!p || !(speed > 0))
		return;
	pthread_mutex_lock(&e->lock);
	p->base = rp_pos(p);
	p->since = clock_now_ns(CLOCK_MONOTONIC);
	p->speed = speed < ENGINE_REPLAY_SPEED_MIN   ? ENGINE_REPLAY_SPEED_MIN
		   : speed > ENGINE_REPLAY_SPEED_MAX ? ENGINE_REPLAY_SPEED_MAX
						     : speed;
	pthread_mutex_unlock(&e->lock);
}

void engine_replay_seek(struct engine *e, uint64_t t)
{
	struct engine_rp *p = e->rp;

	if (!p)
		return;
	pthread_mutex_lock(&e->lock);
	p->base = t < p->r.t0 ? p->r.t0 : t > p->r.t1 ? p->r.t1 : t;
	p->since = clock_now_ns(CLOCK_MONOTONIC);
	pthread_mutex_unlock(&e->lock);
}

struct rp_step_arg {
	uint64_t id;
	int dir;
	uint64_t to;
};

static void rp_step(struct engine *e, void *arg)
{
	struct rp_step_arg *a = arg;

	a->to = replay_step(&e->rp->r, a->id, rp_pos(e->rp), a->dir);
}

uint64_t engine_replay_step(struct engine *e, uint64_t id, int dir)
{
	struct engine_rp *p = e->rp;
	struct rp_step_arg a = {id, dir, 0};

	if (!p)
		return 0;
	pthread_mutex_lock(&e->lock);
	/* Where playing got to, then paused there: the step is from it. */
	a.to = rp_pos(p);
	p->playing = false;
	rp_guarded(e, rp_step, &a);
	p->base = a.to;
	p->since = clock_now_ns(CLOCK_MONOTONIC);
	pthread_mutex_unlock(&e->lock);
	return a.to;
}
