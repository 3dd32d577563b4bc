/*
 * engine: the facade's lifecycle -- create, start, stop, destroy -- and the
 * target's (reap, terminate).  What differs between the modes (launch,
 * observe, attach, replay) is in the mode table (engine_mode.c); the
 * threads of the live modes are in engine_harvest.c.
 */
#define _GNU_SOURCE
#include "engine/engine.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "engine/calltrace/hotstacks.h"
#include "engine/engine_internal.h"
#include "engine/names/framekind.h"
#include "engine/scan/scanner.h"
#include "engine/target/framecheck.h"
#include "engine/launch/keeper.h"
#include "engine/launch/launch.h"
#include "engine/launch/output.h"
#include "engine/target/threadcpu.h"

void engine_config_defaults(struct engine_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->stations = 4096;
	cfg->linger_ns = 3000000000ull;
	cfg->idle_scans = 3;
	cfg->sample_snapshots = true;
	cfg->sleep_timeout_ms = 100;
	cfg->sleep_max_ms = 1000;
	cfg->scan_interval_us = 500;
	cfg->observer_poll_ms = 10;
	cfg->tick_ms = 1000;
	cfg->full_scan_ms = 100;
	cfg->advertise_dirty = true;
	cfg->ring_depth = 64;
	lint_config_defaults(&cfg->lints);
	cfg->ct_traces = 65536;
	cfg->ct_rotate_ms = 1000;
	cfg->ct_idle_rotate_ms = 10000;
	{
		struct hotstacks_config h;

		hotstacks_config_defaults(&h);
		cfg->hot = (struct engine_hot_config){
			.window_s = h.window_s,
			.half_life_s = h.half_life_s,
			.max_stacks = h.max_stacks,
			.max_coro = h.max_coro,
		};
	}
}

/* ---- lifecycle ---- */

/*
 * Create or open the region and set up its harvest, under the SIGBUS guard:
 * an observed file truncated meanwhile is an error, not a crash.
 */
static bool engine_open_region(struct engine *e, uint32_t flags, char *err,
			       size_t errlen)
{
	const struct engine_config *cfg = &e->cfg;
	sigjmp_buf jb;
	bool ok;

	if (sigsetjmp(jb, 1)) {
		engine_guard = NULL;
		snprintf(err, errlen,
			 "%s was truncated while it was being opened (SIGBUS)",
			 cfg->shm_path ? cfg->shm_path : "the cTP region");
		harvest_finish(&e->harvest);
		region_finish(&e->region);
		return false;
	}
	engine_guard = &jb;
	if (cfg->shm_path)
		ok = region_open(&e->region, cfg->shm_path, err, errlen);
	else
		ok = region_create_deep(&e->region, cfg->stations, flags,
					cfg->ring_depth, err, errlen);
	if (ok && !harvest_init(&e->harvest, e->region.hdr, e->region.stations,
				e->region.owner)) {
		snprintf(err, errlen, "out of memory for %u stations",
			 e->region.stations);
		harvest_finish(&e->harvest);
		region_finish(&e->region);
		ok = false;
	}
	if (ok)
		harvest_set_deep(&e->harvest, e->region.deep, e->region.depth,
				 e->region.hub_depth);
	engine_guard = NULL;
	return ok;
}

/* The SIGBUS guard (engine_harvest.c's handler) for the mapped regions and
 * recordings; installed before anything is mapped. */
static void engine_catch_sigbus(void)
{
	struct sigaction sa = {.sa_sigaction = engine_sigbus,
			       .sa_flags = SA_SIGINFO | SA_NODEFER};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
}

/* ---- attach mode (engine/attach): what it reads of the engine ---- */

/* The attached process exited (the ppt thread): the clock stops. */
static void engine_attach_gone(void *ctx)
{
	struct engine *e = ctx;

	pthread_mutex_lock(&e->lock);
	engine_mark_exit(e);
	e->target.exit_code = 0;
	pthread_mutex_unlock(&e->lock);
}

static struct attach *engine_attach_create(struct engine *e, char *err,
					   size_t errlen)
{
	const struct engine_config *cfg = &e->cfg;
	const struct attach_env env = {
		.stop = &e->stop,
		.stop_fd = &e->stop_pipe[0],
		.region = &e->region,
		.ctx = e,
		.gone = engine_attach_gone,
	};
	const struct attach_config ac = {
		.attach_pid = cfg->attach_pid,
		.ppt_buffer = cfg->ppt_buffer,
		.counters = cfg->counters,
		.force_attach = cfg->force_attach,
		.ppt_block_frames = cfg->ppt_block_frames,
		.sample_hz = cfg->sample_hz,
		.parked_stacks = cfg->parked_stacks,
		/* Its contexts are looked for in its memory (engine/scan):
		 * Boost.Context's saved areas, glibc's ucontext_t. */
		.scan_fallback = cfg->attach_pid > 0 && !cfg->no_scan,
	};

	return attach_create(&env, &ac, err, errlen);
}

bool engine_live_create(struct engine *e, char *err, size_t errlen)
{
	const struct engine_config *cfg = &e->cfg;
	uint32_t flags = CTP_HX_FREELIST;

	if (!cfg->no_futex)
		flags |= CTP_HX_FUTEX;
	if (cfg->advertise_dirty)
		flags |= CTP_HX_DIRTY;
	if (!cfg->no_membarrier &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0) > 0 &&
	    (syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0) &
	     MEMBARRIER_CMD_GLOBAL_EXPEDITED)) {
		flags |= CTP_HX_ASYM_FENCE;
		e->asym_fence = true;
	}
	/* Attach mode: refuse a process we may not touch, or one without
	 * buffers, before anything is created. */
	e->attach = engine_attach_create(e, err, errlen);
	if (!e->attach)
		goto err_ppt;
	/* An observed region may shrink while we validate and read its
	 * header: SIGBUS is caught from here on (engine_sigbus). */
	engine_catch_sigbus();
	if (!engine_open_region(e, flags, err, errlen))
		goto err_ppt;
	if (!model_init(&e->model, e->region.stations, cfg->linger_ns)) {
		snprintf(err, errlen, "out of memory for %u stations",
			 e->region.stations);
		goto err_region;
	}
	/* Before the target starts: the probe reads the announcement once. */
	if (!stacks_open(e->stacks, err, errlen))
		goto err_region;
	/* Rates count from now, not from the first tick. */
	model_tick(&e->model, clock_now_ns(CLOCK_MONOTONIC));
	if (cfg->jsonl_path &&
	    !jsonl_open(&e->jsonl, cfg->jsonl_path, err, errlen))
		goto err_region;
	if (!engine_rec_create(e, err, errlen))
		goto err_region;
	if (pipe2(e->stop_pipe, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto err_region;
	}
	return true;

err_region:
	jsonl_close(&e->jsonl);
	recording_destroy(e->rec, err, 0);
	e->rec = NULL;
	stacks_close(e->stacks);
	harvest_finish(&e->harvest);
	model_finish(&e->model);
	region_finish(&e->region);
err_ppt:
	attach_destroy(e->attach);
	e->attach = NULL;
	return false;
}

bool engine_replay_create(struct engine *e, char *err, size_t errlen)
{
	/* The recording is mapped: the SIGBUS guard goes first. */
	engine_catch_sigbus();
	return engine_rp_create(e, err, errlen);
}

/* ---- the stacks (engine/stacks): what they read of the engine ---- */

static uint64_t engine_stacks_now(void *ctx)
{
	return engine_now(ctx);
}

static sigjmp_buf **engine_stacks_guard(void)
{
	return &engine_guard;
}

static struct procmem *engine_stacks_attach_pm(void *ctx)
{
	struct engine *e = ctx;

	return e->core ? &e->core_pm : attach_pm(e->attach);
}

static void engine_stacks_rec_where(void *ctx, const struct model_coro *c,
				    uint64_t where, uint64_t trace,
				    bool learned)
{
	struct engine *e = ctx;

	recording_where(e->rec, c, where, trace, learned);
}

static void engine_stacks_rec_learned(void *ctx, const struct model_coro *c,
				      uint32_t name_was, unsigned kind_was)
{
	struct engine *e = ctx;

	recording_learned(e->rec, c, name_was, kind_was);
}

static struct stacks *engine_stacks_create(struct engine *e)
{
	const struct engine_config *cfg = &e->cfg;
	const struct stacks_env env = {
		.lock = &e->lock,
		.model = &e->model,
		.harvest = &e->harvest,
		.region = &e->region,
		.target = &e->target,
		.symtab = &e->symtab,
		.framecheck = &e->framecheck,
		.ctx = e,
		.now = engine_stacks_now,
		.guard = engine_stacks_guard,
		.attach_pm = engine_stacks_attach_pm,
		.rec_where = engine_stacks_rec_where,
		.rec_learned = engine_stacks_rec_learned,
	};
	const struct stacks_config sc = {
		.ct_traces = cfg->ct_traces,
		.ct_rotate_ms = cfg->ct_rotate_ms,
		.ct_idle_rotate_ms = cfg->ct_idle_rotate_ms,
		.hot = {cfg->hot.window_s, cfg->hot.half_life_s,
			cfg->hot.max_stacks, cfg->hot.max_coro},
		.sample_hz = cfg->sample_hz,
		.sample_snapshots = cfg->sample_snapshots,
		.stations = cfg->stations,
		.record = cfg->record_path != NULL,
		.title = cfg->argv ? cfg->argv[0] : NULL,
	};

	return stacks_create(&env, &sc);
}

struct engine *engine_create(const struct engine_config *cfg, char *err,
			     size_t errlen)
{
	struct engine *e = calloc(1, sizeof(*e));

	if (!e) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	e->cfg = *cfg;
	e->mode = engine_mode_of(cfg);
	e->sleep_ms = cfg->sleep_timeout_ms;
	e->stop_pipe[0] = e->stop_pipe[1] = -1;
	pthread_mutex_init(&e->lock, NULL);
	symtab_init(&e->symtab);
	e->stacks = engine_stacks_create(e);
	if (!e->stacks) {
		snprintf(err, errlen, "out of memory");
		goto err_symtab;
	}
	if (cfg->runtime || cfg->own_libs) {
		e->framekind = framekind_create(cfg->runtime, cfg->own_libs,
						err, errlen);
		if (!e->framekind)
			goto err_symtab;
		symtab_set_framekind(&e->symtab, e->framekind);
	}
	e->names = engine_names_create(e);
	if (!e->names || !e->mode->create(e, err, errlen)) {
		if (!e->names)
			snprintf(err, errlen, "cannot start naming symbols: %s",
				 strerror(errno));
		namecache_destroy(e->names);
		goto err_symtab;
	}
	return e;
err_symtab:
	symtab_finish(&e->symtab);
	framekind_destroy(e->framekind);
	stacks_destroy(e->stacks);
	pthread_mutex_destroy(&e->lock);
	free(e);
	return NULL;
}

bool engine_live_start(struct engine *e, char *err, size_t errlen)
{
	int rc;

	if (e->target.pid)
		recording_target(e->rec, e->target.pid);
	if (e->region.owner) {
		rc = pthread_create(&e->waker_thread, NULL, engine_waker_main,
				    e);
		if (rc) {
			snprintf(err, errlen, "cannot start a thread: %s",
				 strerror(rc));
			return false;
		}
		e->waker_running = true;
	}
	/* Before the harvest, which asks it to load the symbols at the first
	 * events (stacks_prime); after the target, like the samples
	 * thread (a fork with it running could copy its locks held). */
	if (!stacks_start_walker(e->stacks, err, errlen))
		return false;
	if (attach_scanning(e->attach) &&
	    !engine_scanner_create(e, err, errlen))
		return false;
	rc = pthread_create(&e->harvest_thread, NULL, engine_harvest_main, e);
	if (rc) {
		snprintf(err, errlen, "cannot start a thread: %s",
			 strerror(rc));
		return false;
	}
	e->harvest_running = true;
	/* Started after the target (a fork with it running could copy its
	 * locks held). */
	if (!stacks_start_samples(e->stacks, err, errlen))
		return false;
	/* After the harvest runs: the probe may start writing the moment its
	 * buffer is attached. */
	return attach_start(e->attach, err, errlen);
}

bool engine_start(struct engine *e, char *err, size_t errlen)
{
	return e->mode->start(e, err, errlen);
}

static void engine_set_status(struct engine *e, int status)
{
	pthread_mutex_lock(&e->lock);
	engine_mark_exit(e);
	if (WIFEXITED(status)) {
		e->target.exit_code = WEXITSTATUS(status);
		e->target.term_signal = 0;
	} else {
		e->target.exit_code = -1;
		e->target.term_signal = WTERMSIG(status);
	}
	pthread_mutex_unlock(&e->lock);
}

bool engine_reap(struct engine *e)
{
	int status;

	if (!e->target.pid || e->target.exited || e->target.attached) {
		bool exited;

		/* Attach mode: the ppt thread sets it under the lock. */
		pthread_mutex_lock(&e->lock);
		exited = e->target.exited;
		pthread_mutex_unlock(&e->lock);
		return exited;
	}
	if (launch_reap(e->target.pid, &status))
		engine_set_status(e, status);
	return e->target.exited;
}

pid_t engine_target_pid(const struct engine *e)
{
	return e->target.pid;
}

_Static_assert(sizeof(((struct engine_thread *)0)->comm) ==
		       sizeof(((struct threadcpu_thread *)0)->comm),
	       "the facade's comm is threadcpu's");

size_t engine_threads(struct engine *e, struct engine_thread *out, size_t max)
{
	struct threadcpu_thread th[THREADCPU_MAX];
	pid_t pid = e->target.pid;
	size_t n;

	/* A target that exited has no threads (and its pid may be reused). */
	if (pid <= 0 || !e->target.running || e->rp) {
		threadcpu_destroy(e->threadcpu);
		e->threadcpu = NULL;
		return 0;
	}
	if (!e->threadcpu || e->threadcpu_pid != pid) {
		threadcpu_destroy(e->threadcpu);
		e->threadcpu = threadcpu_create(pid);
		e->threadcpu_pid = pid;
	}
	if (!e->threadcpu)
		return 0;
	n = threadcpu_sample(e->threadcpu, clock_now_ns(CLOCK_MONOTONIC), th,
			     max < THREADCPU_MAX ? max : THREADCPU_MAX);
	for (size_t k = 0; k < n; k++) {
		out[k].tid = th[k].tid;
		out[k].cpu_pct = th[k].pct;
		memcpy(out[k].comm, th[k].comm, sizeof(out[k].comm));
	}
	return n;
}

_Static_assert(ENGINE_OUTPUT_LINE_MAX == OUTPUT_LINE_MAX,
	       "the facade's line length is output.c's");

int engine_output_fd(struct engine *e)
{
	return e->output ? output_fd(e->output) : -1;
}

/* The keeper's report of a failed write to the output's destination, in
 * words; false when there is none. */
static bool engine_sink_words(const struct engine *e, int err, uint64_t at,
			      char *buf, size_t len)
{
	if (!err)
		return false;
	if (e->cfg.output_path)
		snprintf(buf, len,
			 "--output %s: %s; the target's output from byte %llu "
			 "on is lost",
			 e->cfg.output_path, strerror(err),
			 (unsigned long long)at);
	else
		snprintf(buf, len,
			 "writing the target's output to stderr failed: %s; "
			 "from byte %llu on it is lost",
			 strerror(err), (unsigned long long)at);
	return true;
}

size_t engine_output_drain(struct engine *e)
{
	char words[256];
	uint64_t at;
	int err;

	if (!e->output)
		return 0;
	err = keeper_sink_error(&at);
	if (engine_sink_words(e, err, at, words, sizeof(words)))
		output_set_file_error(e->output, words);
	return output_drain(e->output);
}

void engine_output_lines(struct engine *e, struct engine_output_lines *out)
{
	const struct output *o = e->output;

	*out = (struct engine_output_lines){.file_error = ""};
	if (!o)
		return;
	out->on = true;
	out->ended = output_ended(o);
	out->first = output_first(o);
	out->total = output_total(o);
	out->partial = output_partial(o)[0] != '\0';
	out->file_error = output_file_error(o);
}

const char *engine_output_line(struct engine *e, uint64_t n)
{
	if (!e->output)
		return "";
	return n == output_total(e->output) ? output_partial(e->output)
					    : output_line(e->output, n);
}

const char *engine_autotrace_note(const struct engine *e)
{
	return e->autotrace_note;
}

void engine_terminate_target(struct engine *e, unsigned grace_ms)
{
	/* Never signal a process we attached to: it is not ours. */
	if (e->target.attached || engine_reap(e) || !e->target.pid)
		return;
	engine_set_status(e, launch_terminate(e->target.pid, grace_ms));
	engine_procs_terminate(e);
}

const char *engine_shm_path(const struct engine *e)
{
	return e->region.shm_path;
}

const char *engine_sock_path(const struct engine *e)
{
	return e->region.sock_path;
}

void engine_unlink(const struct engine *e)
{
	stacks_unlink(e->stacks);
	region_unlink(&e->region);
}

void engine_stop(struct engine *e)
{
	/* acq_rel: release pairs with the threads' acquire loads of stop;
	 * acquire, so a second stopper sees the first one's writes. */
	if (atomic_exchange_explicit(&e->stop, true, memory_order_acq_rel))
		return;
	e->mode->stop(e);
}

void engine_live_stop(struct engine *e)
{
	bool exited;

	if (e->stop_pipe[1] >= 0 && write(e->stop_pipe[1], "x", 1) < 0)
		e->error = e->error ? e->error : "cannot stop the engine";
	if (e->region.owner)
		engine_kick(e);
	if (e->harvest_running)
		pthread_join(e->harvest_thread, NULL);
	if (e->waker_running)
		pthread_join(e->waker_thread, NULL);
	attach_stop(e->attach);
	e->harvest_running = e->waker_running = false;
	/* Drain what the target wrote last.  Only in regions we own: a
	 * borrowed one may be truncated, and only the harvest thread is
	 * guarded against SIGBUS. */
	if (!e->error && e->region.owner)
		engine_scan(e);
	/* The last rotation; the walker joined: the last walks are on this
	 * thread (below). */
	stacks_stop(e->stacks);
	/* A target that exited: its symbols made now (from the maps kept
	 * while it ran, symtab.c), before the last walks and the final
	 * snapshot name anything.  It is not delayed: it has exited. */
	pthread_mutex_lock(&e->lock);
	exited = e->target.exited && e->target.pid > 0;
	pthread_mutex_unlock(&e->lock);
	if (exited)
		symtab_settle(&e->symtab);
	stacks_walk(e->stacks, engine_now(e));
	engine_tick(e);
	/* Every open interval ends now: the recording is complete. */
	recording_stop(e->rec, e->target.exited, e->target.exit_code,
		       e->target.term_signal);
}

static char engine_out_err[600];
/* How long the end waits for the keeper to relay the target's last output
 * (it waits on the destination as the target would have). */
#define ENGINE_SYNC_MS 10000u

const char *engine_output_error(void)
{
	return engine_out_err;
}

bool engine_destroy(struct engine *e)
{
	bool ok;

	if (!e)
		return true;
	engine_stop(e);
	ok = e->mode->destroy(e);
	namecache_destroy(e->names); /* its thread reads the symtab */
	stacks_destroy(e->stacks);
	engine_procs_finish(e);
	framecheck_destroy(e->framecheck);
	symtab_finish(&e->symtab);
	framekind_destroy(e->framekind); /* after the symtab that used it */
	output_destroy(e->output);
	threadcpu_destroy(e->threadcpu);
	pthread_mutex_destroy(&e->lock);
	free(e);
	return ok;
}

bool engine_live_destroy(struct engine *e)
{
	struct keeper_end end;
	bool ok = true;

	keeper_stop(engine_reap(e), ENGINE_SYNC_MS, &end);
	if (engine_sink_words(e, end.err, end.at, engine_out_err,
			      sizeof(engine_out_err)))
		ok = false;
	/* Detach first: the probe stops writing to the region before it
	 * goes. */
	scanner_destroy(e->scanner);
	e->scanner = NULL;
	attach_destroy(e->attach);
	e->attach = NULL;
	if (e->jsonl.f && !jsonl_close(&e->jsonl)) {
		snprintf(engine_out_err, sizeof(engine_out_err),
			 "writing the --jsonl file failed: %s",
			 strerror(errno));
		ok = false;
	}
	if (!recording_destroy(e->rec, engine_out_err, sizeof(engine_out_err)))
		ok = false;
	e->rec = NULL;
	harvest_finish(&e->harvest);
	model_finish(&e->model);
	stacks_close(e->stacks); /* its file first: the directory goes next */
	region_finish(&e->region);
	if (e->stop_pipe[0] >= 0)
		close(e->stop_pipe[0]);
	if (e->stop_pipe[1] >= 0)
		close(e->stop_pipe[1]);
	return ok;
}

bool engine_runtime_valid(const char *runtime, const char *own_libs, char *why,
			  size_t n)
{
	struct framekind *k = framekind_create(runtime, own_libs, why, n);

	framekind_destroy(k);
	return k != NULL;
}
