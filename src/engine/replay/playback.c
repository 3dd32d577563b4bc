/*
 * playback: the engine's replay mode (corotop --replay FILE).  No region,
 * no target, no threads: snapshots are computed from a recording
 * (replay.c) at the replay's position, which a clock moves while playing:
 *
 *   position = base + (now - since) x speed, within [t0, t1]
 *
 * Pausing, seeking, stepping and changing speed re-base the clock, so the
 * position never jumps.  Reaching the end pauses.  The recording is a
 * mapped file another process may truncate: every read of it runs under
 * the engine's SIGBUS guard (playback_inputs.guard), and a fault leaves the
 * last snapshot's data with the error set, never a crash.
 */
#define _GNU_SOURCE
#include "engine/replay/playback.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/grow.h"
#include "engine/heph/hephnames.h"
#include "engine/model/model.h"
#include "engine/replay/replay.h"
#include "engine/symbols/symtab.h"

static const char playback_sigbus[] =
	"the recording was truncated while being read (SIGBUS); replay stopped";

struct playback {
	struct playback_inputs in;
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

/* With the lock held: the position now. */
static uint64_t rp_pos(struct playback *p)
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
static bool rp_open(struct playback *p, char *err, size_t errlen)
{
	sigjmp_buf jb;
	bool ok;

	if (sigsetjmp(jb, 1)) {
		p->in.guard(NULL);
		replay_close(&p->r); /* what was built so far */
		snprintf(err, errlen, "%s: %s", p->in.path, playback_sigbus);
		return false;
	}
	p->in.guard(&jb);
	ok = replay_open(&p->r, p->in.path, p->in.linger_ns, err, errlen);
	if (ok)
		heph_names_init(&p->names, &p->r.f);
	p->in.guard(NULL);
	return ok;
}

struct playback *playback_create(const struct playback_inputs *in, char *err,
				 size_t errlen)
{
	struct playback *p = calloc(1, sizeof(*p));

	if (!p) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->in = *in;
	/* The engine installed the guard's SIGBUS handler first. */
	if (!rp_open(p, err, errlen)) {
		free(p);
		return NULL;
	}
	if (!p->r.f.nev) {
		snprintf(err, errlen, "%s: no events in it%s%s", in->path,
			 p->r.f.nproblems ? ": " : "",
			 p->r.f.nproblems ? p->r.f.problems[0].what : "");
		replay_close(&p->r);
		free(p);
		return NULL;
	}
	symtab_set_recorded(in->symtab, rp_name, &p->names);
	p->speed = 1.0;
	p->base = p->r.t0;
	p->since = clock_now_ns(CLOCK_MONOTONIC);
	p->playing = in->play;
	return p;
}

void playback_destroy(struct playback *p)
{
	if (!p)
		return;
	symtab_set_recorded(p->in.symtab, NULL, NULL);
	snapshot_finish(&p->scratch);
	snapshot_finish(&p->good);
	heph_names_finish(&p->names);
	replay_close(&p->r);
	free(p);
}

/* Run fn(p, arg) under the SIGBUS guard; false after a fault. */
static bool rp_guarded(struct playback *p,
		       void (*fn)(struct playback *, void *), void *arg)
{
	sigjmp_buf jb;

	if (p->error)
		return false;
	if (sigsetjmp(jb, 1)) {
		p->in.guard(NULL);
		p->error = playback_sigbus;
		p->playing = false;
		return false;
	}
	p->in.guard(&jb);
	fn(p, arg);
	p->in.guard(NULL);
	return true;
}

static void rp_snap(struct playback *p, void *arg)
{
	struct snapshot *out = arg;
	uint64_t pos = rp_pos(p);

	replay_snapshot(&p->r, pos, out);
	out->history_id = 0;
	out->nhistory = 0;
	if (p->watch && !out->history)
		out->history = malloc(MODEL_WATCH_MAX * sizeof(*out->history));
	if (p->watch && out->history) {
		out->history_id = p->watch;
		out->nhistory = replay_history(&p->r, p->watch, pos,
					       out->history, MODEL_WATCH_MAX);
	}
}

/* Copy the last complete snapshot into out (its own buffers). */
static void rp_copy(const struct snapshot *from, struct snapshot *out)
{
	struct model_coro *coro = out->coro, *changed = out->changed;
	struct model_transition *hist = out->history;
	size_t cap = out->cap, changed_cap = out->changed_cap;

	grow_array_fit((void **)&coro, &cap, from->count, sizeof(*coro));
	if (from->nhistory && !hist)
		hist = malloc(MODEL_WATCH_MAX * sizeof(*hist));
	*out = *from;
	out->coro = coro;
	out->cap = cap;
	/* Not a copy of a live model (snapcopy.c). */
	out->copy_of = 0;
	out->changed = changed;
	out->changed_cap = changed_cap;
	out->nchanged = 0;
	out->count = from->count < cap ? from->count : cap;
	if (out->count)
		memcpy(out->coro, from->coro, out->count * sizeof(*coro));
	out->history = hist;
	out->nhistory = hist ? from->nhistory : 0;
	if (out->nhistory)
		memcpy(hist, from->history, out->nhistory * sizeof(*hist));
}

void playback_snapshot(struct playback *p, struct snapshot *out)
{
	struct lint_config lints;

	pthread_mutex_lock(p->in.lock);
	lints = *p->in.lints;
	if (rp_guarded(p, rp_snap, &p->scratch)) {
		struct snapshot t = p->good;

		p->good = p->scratch;
		p->scratch = t;
	}
	rp_copy(&p->good, out);
	out->error = p->error;
	out->target = *p->in.target;
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
	pthread_mutex_unlock(p->in.lock);
	snapshot_lint(out, &lints);
}

void playback_watch(struct playback *p, uint64_t id)
{
	pthread_mutex_lock(p->in.lock);
	p->watch = id;
	pthread_mutex_unlock(p->in.lock);
}

struct rp_stack_arg {
	uint64_t id, *frames;
	size_t max, n;
};

static void rp_stack(struct playback *p, void *arg)
{
	struct rp_stack_arg *a = arg;

	a->n = replay_parked_stack(&p->r, a->id, rp_pos(p), a->frames, a->max);
}

size_t playback_parked_stack(struct playback *p, uint64_t id, uint64_t *frames,
			     size_t max)
{
	struct rp_stack_arg a = {id, frames, max, 0};

	pthread_mutex_lock(p->in.lock);
	rp_guarded(p, rp_stack, &a);
	pthread_mutex_unlock(p->in.lock);
	return a.n;
}

/* ---- the controls (engine.h) ---- */

void playback_info(struct playback *p, struct playback_info *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(p->in.lock);
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
	pthread_mutex_unlock(p->in.lock);
}

void playback_play(struct playback *p, bool play)
{
	pthread_mutex_lock(p->in.lock);
	p->base = rp_pos(p);
	p->since = clock_now_ns(CLOCK_MONOTONIC);
	/* Play at the end starts over. */
	if (play && p->base >= p->r.t1)
		p->base = p->r.t0;
	p->playing = play;
	pthread_mutex_unlock(p->in.lock);
}

void playback_speed(struct playback *p, double speed)
{
	pthread_mutex_lock(p->in.lock);
	p->base = rp_pos(p);
	p->since = clock_now_ns(CLOCK_MONOTONIC);
	p->speed = speed;
	pthread_mutex_unlock(p->in.lock);
}

void playback_seek(struct playback *p, uint64_t t)
{
	pthread_mutex_lock(p->in.lock);
	p->base = t < p->r.t0 ? p->r.t0 : t > p->r.t1 ? p->r.t1 : t;
	p->since = clock_now_ns(CLOCK_MONOTONIC);
	pthread_mutex_unlock(p->in.lock);
}

struct rp_step_arg {
	uint64_t id;
	int dir;
	uint64_t to;
};

static void rp_step(struct playback *p, void *arg)
{
	struct rp_step_arg *a = arg;

	a->to = replay_step(&p->r, a->id, rp_pos(p), a->dir);
}

uint64_t playback_step(struct playback *p, uint64_t id, int dir)
{
	struct rp_step_arg a = {id, dir, 0};

	pthread_mutex_lock(p->in.lock);
	/* Where playing got to, then paused there: the step is from it. */
	a.to = rp_pos(p);
	p->playing = false;
	rp_guarded(p, rp_step, &a);
	p->base = a.to;
	p->since = clock_now_ns(CLOCK_MONOTONIC);
	pthread_mutex_unlock(p->in.lock);
	return a.to;
}
