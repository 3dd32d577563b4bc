/*
 * engine_harvest: the engine's threads in the live modes -- the harvest
 * loop, the sleep contract, and the waker.
 *
 * Threads.
 *   harvest  scans the stations, feeds the model (under `lock`), ticks rates,
 *            rotates the CallTrace region when due (engine/stacks), and
 *            sleeps when the target is idle.  Nothing slow: parked stacks
 *            are walked on a thread of their own (engine/stacks/walks.c),
 *            so a walk never keeps the harvest from a ring about to lap.
 *   waker    (launch mode) accepts the probes' socket connections and turns
 *            every wake byte into a futex wake of the harvest thread, so
 *            upstream SDKs, which only know the socket, wake us too.
 * The caller's thread takes snapshots and reaps the target (engine.c).
 *
 * Sleep contract (pairs M/N in ctp.h).  After `idle_scans` empty scans the
 * harvest thread stores tracer_sleeping = 1, issues the barrier the probes
 * rely on (membarrier GLOBAL_EXPEDITED, or a seq_cst fence), scans once
 * more, and only then waits on the futex word with a bound.  A probe that
 * wrote before seeing the flag is caught by that re-scan; one that wrote
 * after sees the flag and wakes us.  The bound only matters for a probe that
 * died between its write and its wake.
 *
 * Busy pacing.  A scan that found events is followed by another at once when
 * it also counted a loss (rings are overflowing), else after
 * scan_interval_us, so a busy target does not cost a whole core.  The
 * empty scans before a sleep are paced the same way.
 *
 * Untrusted region.  In observer mode another process owns the file and may
 * truncate it; a SIGBUS inside a scan is caught, the engine stops harvesting
 * and reports the error in its snapshots instead of dying.
 */
#define _GNU_SOURCE
#include "engine/engine.h"

#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "engine/engine_internal.h"
#include "engine/launch/keeper.h"

__thread sigjmp_buf *engine_guard;
const char engine_sigbus_msg[] =
	"the cTP region was truncated (SIGBUS); harvesting stopped";

void engine_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (engine_guard)
		siglongjmp(*engine_guard, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* ---- sink: harvest -> model (called with lock held) ---- */

/* With the lock held: the number whose symbols name pid's addresses
 * (snapshot_space): 0 the target's, SNAPSHOT_SPACE_NONE past
 * SNAPSHOT_SPACES_MAX other processes. */
static uint16_t engine_space(struct engine *e, uint32_t pid)
{
	if (!pid || (pid_t)pid == e->target.pid)
		return 0;
	for (uint32_t k = 0; k < e->nspaces; k++)
		if (e->spaces[k] == pid)
			return (uint16_t)(k + 1);
	if (e->nspaces == SNAPSHOT_SPACES_MAX)
		return SNAPSHOT_SPACE_NONE;
	e->spaces[e->nspaces++] = pid;
	return (uint16_t)e->nspaces;
}

static void engine_on_open(void *ctx, uint32_t station, uint64_t probe_id,
			   uint64_t birth_ts)
{
	struct engine *e = ctx;
	struct harvest_who who;

	/* Its name and struct address, from the station's header (a
	 * corotop probe's; none from other writers). */
	harvest_who(&e->harvest, station, &who);
	model_open(&e->model, station, probe_id, birth_ts);
	model_occupant(&e->model, station, who.name, who.coro);
	/* Named from birth after the function its context was made to run
	 * (snapshot_name: the program's function, when the entry is a
	 * runtime's template made for one), until a walk of its parked
	 * stack finds the program's first frame (engine/stacks/walks.c).  An
	 * address only, untrusted: kept when it can be one. */
	if (who.entry && SNAPSHOT_ADDR_NAMEABLE(who.entry))
		model_name_made(&e->model, station, who.entry,
				SNAPSHOT_ADDR_NAMEABLE(who.made_for)
					? who.made_for
					: 0);
	model_kind(&e->model, station,
		   who.role == CTP_STX_DISPATCHER ? MODEL_DISPATCHER
		   : who.role == CTP_STX_ROOT	  ? MODEL_ROOT
						  : MODEL_COROUTINE);
	model_pid(&e->model, station,
		  who.pid ? who.pid : (uint32_t)e->target.pid);
	if (who.pid && who.pid != (uint32_t)e->target.pid)
		stacks_others(e->stacks);
	(void)engine_space(e, who.pid);
	if (e->rec) {
		const struct model_coro *c =
			model_station_coro(&e->model, station);

		recording_open(e->rec, station, probe_id, birth_ts,
			       e->model.next_id - 1, who.name,
			       who.pid != (uint32_t)e->target.pid ? who.pid
								  : 0);
		/* A name the probe gave is the birth's (corotop_name); one
		 * from its entry, and its kind, are learned at the birth (the
		 * name it had before: none). */
		if (c)
			recording_learned(e->rec, c, who.name[0] ? c->name : 0,
					  MODEL_COROUTINE);
	}
}

static void engine_on_event(void *ctx, const struct harvest_event *in)
{
	struct engine *e = ctx;
	struct harvest_event census;
	const struct harvest_event *ev = in;
	const struct model_coro *was =
		e->rec ? model_station_coro(&e->model, in->station) : NULL;
	uint32_t name_was = was ? was->name : 0;
	unsigned kind_was = was ? was->kind : 0;

	/* Before its state is set: whether a resume of it implies a
	 * suspend of another (model.c). */
	if (in->flags & CTP_EPF_CONTEXT)
		model_context(&e->model, in->station);
	if (in->census) {
		/* Found at a late attach: its state, and its parked stack
		 * walked in the target (engine/stacks/census.c), whose id the
		 * recording and the hooks see as the event's. */
		census = *in;
		census.trace = stacks_census(e->stacks, in);
		ev = &census;
	} else {
		model_event(&e->model, ev->station, ev->ts, ev->tid, ev->addr,
			    ev->seq, ev->n, ev->slot, ev->is_active);
		/* A suspend may say where it parked (CallTrace id); any
		 * transition ends the previous parking. */
		model_park(&e->model, ev->station,
			   ev->is_active ? 0 : ev->trace);
		if (!ev->is_active && ev->trace)
			(void)stacks_park(e->stacks, ev->trace);
	}
	/* A suspend the program marked a long wait (census events too);
	 * the transition above cleared the previous mark. */
	if (!ev->is_active && (ev->flags & CTP_EPF_LONG_WAIT))
		model_long_wait(&e->model, ev->station, true);
	if (e->jsonl.f)
		jsonl_write(&e->jsonl, ev->probe_id, ev->tid, ev->addr, ev->seq,
			    ev->is_active, ev->ts);
	if (e->rec)
		recording_event(e->rec, ev, name_was, kind_was);
	if (e->cfg.event_hook)
		e->cfg.event_hook(e->cfg.hook_ctx, ev);
}

static void engine_on_lost(void *ctx, uint32_t station, uint64_t count)
{
	struct engine *e = ctx;

	model_lost(&e->model, station, count);
	if (e->rec)
		recording_lost(e->rec, station, count,
			       clock_now_ns(CLOCK_MONOTONIC));
}

/*
 * The harvest calls close just before it pushes the station to the free list,
 * which it does for corotop-style stations of a region we own and never for
 * upstream ones (harvest_ours vs harvest_upstream); the dead-station lint
 * reads the answer.  A corotop-style close forced by a new generation counts
 * as recycled too: the station already has its next occupant.  In observer
 * mode we recycle nothing, so every dead coroutine counts as not recycled.
 */
static void engine_on_close(void *ctx, uint32_t station)
{
	struct engine *e = ctx;
	bool recycled = e->harvest.recycle && station < e->harvest.max &&
			harvest_station_ours(&e->harvest.state[station]);
	uint64_t now = engine_now(e);
	const struct model_coro *c = model_station_coro(&e->model, station);

	/* Parked at a stored stack: kept for the recording (stacks). */
	if (e->rec && c && e->model.parked[c->slot])
		stacks_died_parked(e->stacks, e->model.parked[c->slot]);
	model_close(&e->model, station, now, recycled);
	if (e->rec)
		recording_close(e->rec, station, now);
}

static struct harvest_sink engine_sink(struct engine *e);

void engine_census_event(struct engine *e, const struct harvest_event *ev)
{
	engine_on_event(e, ev);
}

static void engine_on_proc(void *ctx, uint32_t station)
{
	struct engine *e = ctx;
	struct harvest_sink sink = engine_sink(e);

	engine_on_process(e, station, &sink);
}

static struct harvest_sink engine_sink(struct engine *e)
{
	return (struct harvest_sink){
		.open = engine_on_open,
		.event = engine_on_event,
		.lost = engine_on_lost,
		.close = engine_on_close,
		.process = engine_on_proc,
		.ctx = e,
	};
}

/* Called with lock held, on the harvest thread (or after it stopped), at
 * the end of every pass: region words for snapshots, and the recording's
 * hand-over published (recording_publish). */
static void engine_pass_done(struct engine *e)
{
	struct ctp_header *hdr = e->region.hdr;

	e->allocated = harvest_allocated(&e->harvest);
	if (hdr->ext.magic == CTP_HX_MAGIC)
		/* relaxed: a statistic. */
		e->untraced = atomic_load_explicit(&hdr->ext.untraced,
						   memory_order_relaxed);
	if (e->rec)
		recording_publish(e->rec);
}

/*
 * --record: the sink above feeds the recording (engine/record/recording.c);
 * these are the questions it asks of the engine -- a parked stack's frames
 * (under the hot lock, on its writer thread), the engine's clock and the
 * frame learned at a switch (engine lock held) -- and what it is given.
 */
static size_t engine_rec_stack(void *ctx, uint64_t trace, uint64_t *frames,
			       size_t max)
{
	struct engine *e = ctx;

	return stacks_parked_frames(e->stacks, trace, frames, max);
}

static uint64_t engine_rec_now(void *ctx)
{
	return engine_now(ctx);
}

static uint64_t engine_rec_learned_at(void *ctx, uint64_t id, uint64_t at,
				      uint64_t *stack)
{
	struct engine *e = ctx;

	return stacks_learned(e->stacks, id, at, stack);
}

bool engine_rec_create(struct engine *e, char *err, size_t errlen)
{
	const struct recording_inputs in = {
		.path = e->cfg.record_path,
		.argv = e->cfg.argv,
		.attach_pid = e->cfg.attach_pid,
		.shm_path = e->cfg.shm_path,
		.stations = e->region.stations,
		.symtab = &e->symtab,
		.model = &e->model,
		.lock = &e->lock,
		.stack = engine_rec_stack,
		.now = engine_rec_now,
		.learned = engine_rec_learned_at,
		.ctx = e,
	};

	if (!e->cfg.record_path)
		return true;
	e->rec = recording_create(&in, err, errlen);
	return e->rec != NULL;
}

/* A full scan of every allocated station. */
size_t engine_scan(struct engine *e)
{
	struct harvest_sink sink = engine_sink(e);
	uint64_t start = clock_now_ns(CLOCK_MONOTONIC);
	size_t n;

	pthread_mutex_lock(&e->lock);
	n = harvest_scan(&e->harvest, &sink);
	/* (R) every station was visited after `start`. */
	harvest_pass_done(&e->harvest, start);
	engine_pass_done(e);
	pthread_mutex_unlock(&e->lock);
	return n;
}

/* (N) and (Q) pair with the probes' (M): order our store (the sleeping
 * flag, or the cleared dirty words) before the loads of the next scan. */
static void engine_barrier(struct engine *e)
{
	if (e->asym_fence &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0) == 0)
		return;
	atomic_thread_fence(memory_order_seq_cst);
}

/* Scan only the stations the probes marked dirty since the last call. */
static size_t engine_scan_dirty(struct engine *e)
{
	uint64_t marks[CTP_HX_DIRTY_WORDS];
	uint64_t start = clock_now_ns(CLOCK_MONOTONIC);
	size_t n;

	if (!harvest_dirty_collect(&e->harvest, marks)) {
		/* (R) nothing was marked since the last collect, so every
		 * write before `start` has been read. */
		harvest_pass_done(&e->harvest, start);
		return 0;
	}
	/* (Q) A plain fence, not membarrier: one IPI per scan cost the
	 * target ~2 us per scan (docs/PERFORMANCE.md).  A probe that skipped
	 * its mark because it saw a stale bit is found by the periodic full
	 * scan (full_scan_ms) at worst; it is a delay, never a loss. */
	atomic_thread_fence(memory_order_seq_cst);
	pthread_mutex_lock(&e->lock);
	struct harvest_sink sink = engine_sink(e);

	n = harvest_scan_marked(&e->harvest, marks, &sink);
	/* (R) every station marked before `start` was visited. */
	harvest_pass_done(&e->harvest, start);
	engine_pass_done(e);
	pthread_mutex_unlock(&e->lock);
	return n;
}

/* Catch-up pass over the stations that lost events in the last scan.  It
 * leaves the dirty words alone: clearing them at catch-up speed costs every
 * busy writer a cache miss per pass (docs/PERFORMANCE.md). */
static size_t engine_scan_hot(struct engine *e, const uint32_t *hot,
			      unsigned nhot)
{
	struct harvest_sink sink = engine_sink(e);
	size_t n;

	pthread_mutex_lock(&e->lock);
	n = harvest_scan_list(&e->harvest, hot, nhot, &sink);
	engine_pass_done(e);
	pthread_mutex_unlock(&e->lock);
	return n;
}

/* ---- sleep contract ---- */

/* Wait while tracer_sleeping == 1, at most timeout_ms.  True when woken. */
static bool engine_futex_wait(struct engine *e, unsigned timeout_ms)
{
	_Atomic uint32_t *word = &e->region.hdr->tracer_sleeping;
	uint64_t deadline =
		clock_now_ns(CLOCK_MONOTONIC) + (uint64_t)timeout_ms * 1000000u;

	/* acquire: pairs with the probe's CAS (O); after it, their writes
	 * are visible to the next scan. */
	/* stop: acquire pairs with engine_stop's acq_rel exchange. */
	while (atomic_load_explicit(word, memory_order_acquire) == 1 &&
	       !atomic_load_explicit(&e->stop, memory_order_acquire)) {
		uint64_t now = clock_now_ns(CLOCK_MONOTONIC);
		struct timespec rel;

		if (now >= deadline) {
			atomic_fetch_add_explicit(&e->timeouts, 1,
						  memory_order_relaxed);
			return false;
		}
		rel.tv_sec = (time_t)((deadline - now) / 1000000000u);
		rel.tv_nsec = (long)((deadline - now) % 1000000000u);
		/* Shared futex: the waker is another process. */
		if (syscall(SYS_futex, word, FUTEX_WAIT, 1, &rel, NULL, 0) == 0)
			continue; /* woken, maybe spuriously: re-check */
		if (errno == EAGAIN)
			break; /* the word already changed: woken */
		if (errno == EINTR)
			continue; /* a signal, not a wake: re-check */
		if (errno == ETIMEDOUT) {
			atomic_fetch_add_explicit(&e->timeouts, 1,
						  memory_order_relaxed);
			return false;
		}
		/* ENOSYS and friends: degrade to a plain bounded sleep. */
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	atomic_fetch_add_explicit(&e->futex_wakes, 1, memory_order_relaxed);
	return true;
}

/*
 * The sleep contract.  The bound starts at sleep_timeout_ms and doubles after
 * every sleep that ended by timeout, up to sleep_max_ms: a long-idle target
 * then costs one full scan per sleep_max_ms, not per 100 ms.  A real wake
 * resets it.  The bound only matters for a writer that died between its write
 * and its wake.
 */
static void engine_idle(struct engine *e)
{
	_Atomic uint32_t *word;
	bool woken;

	if (!e->region.owner) {
		/* Read-only observer: no flag to set; poll, stoppably. */
		struct pollfd p = {.fd = e->stop_pipe[0], .events = POLLIN};

		poll(&p, 1, (int)e->cfg.observer_poll_ms);
		return;
	}
	word = &e->region.hdr->tracer_sleeping;
	/* relaxed: ordered by the barrier that follows (N). */
	atomic_store_explicit(word, 1, memory_order_relaxed);
	engine_barrier(e);
	if (engine_scan(e) > 0) {
		atomic_store_explicit(word, 0, memory_order_relaxed);
		return;
	}
	atomic_fetch_add_explicit(&e->sleeps, 1, memory_order_relaxed);
	/* relaxed: display only. */
	atomic_store_explicit(&e->asleep, true, memory_order_relaxed);
	woken = engine_futex_wait(e, e->sleep_ms);
	atomic_store_explicit(&e->asleep, false, memory_order_relaxed);
	atomic_store_explicit(word, 0, memory_order_relaxed);
	if (woken)
		e->sleep_ms = e->cfg.sleep_timeout_ms;
	else if (e->sleep_ms < e->cfg.sleep_max_ms)
		e->sleep_ms = e->sleep_ms * 2 < e->cfg.sleep_max_ms
				      ? e->sleep_ms * 2
				      : e->cfg.sleep_max_ms;
}

/*
 * A pause of `us` microseconds between passes.  With deep rings it is a
 * futex wait on the deep area's kick word (T), so a writer half a ring
 * ahead cuts it short (U).  Without them, a plain sleep.
 */
static void engine_pause(struct engine *e, uint64_t us)
{
	struct ctp_deep *d = e->harvest.deep;
	struct timespec ts = {(time_t)(us / 1000000u),
			      (long)(us % 1000000u) * 1000};

	if (!d || !e->region.owner) {
		nanosleep(&ts, NULL);
		return;
	}
	/* (T) relaxed: the word carries no data; see ctp.h. */
	atomic_store_explicit(&d->kick, 1, memory_order_relaxed);
	/* Shared futex: the waker is another process.  A wake, a timeout, a
	 * signal (EINTR) or a word that already moved (EAGAIN) all end the
	 * pause the same way: the next pass looks. */
	syscall(SYS_futex, &d->kick, FUTEX_WAIT, 1, &ts, NULL, 0);
	atomic_store_explicit(&d->kick, 0, memory_order_relaxed);
}

/* The longest pause after a busy pass, however much slack the rings
 * leave: the model and the views stay this fresh. */
#define ENGINE_SLACK_MAX_US 10000u

/*
 * The pause after a busy pass whose events filled `fill` (1/65536ths) of
 * the fullest station's ring over span_ns.  Deep rings (a region we own,
 * every station of the pass deep): as long as the fullest takes, at that
 * rate, to fill a quarter ring more -- the probe kicks (U) at half a ring,
 * so a burst still wakes us a quarter ring early -- but at least the
 * pacing interval and at most ENGINE_SLACK_MAX_US.  Otherwise the pacing
 * interval: the spec's eight slots leave no slack, and upstream writers
 * never kick.
 */
uint64_t engine_slack_us(uint64_t interval_us, bool deep, uint32_t fill,
			 bool shallow, uint64_t span_ns)
{
	uint64_t us;

	if (!deep || shallow || !fill || !span_ns)
		return interval_us;
	us = span_ns / 1000u * 16384u / fill;
	if (us > ENGINE_SLACK_MAX_US)
		us = ENGINE_SLACK_MAX_US;
	return us > interval_us ? us : interval_us;
}

/* The pause after an empty pass before the sleep contract: short, since a
 * writer that just woke us marks its station (P) after the wake (O), so
 * the first pass after a wake may find nothing yet. */
#define ENGINE_EMPTY_PAUSE_US 20u

void engine_tick(struct engine *e)
{
	uint64_t now = engine_now(e);

	struct harvest_sink sink = engine_sink(e);

	pthread_mutex_lock(&e->lock);
	engine_procs_tick(e, &sink);
	model_tick(&e->model, now);
	if (e->jsonl.f && !jsonl_flush(&e->jsonl) && !e->error) {
		snprintf(e->jsonl_error, sizeof(e->jsonl_error),
			 "writing the --jsonl file failed: %s",
			 strerror(errno));
		e->error = e->jsonl_error;
	}
	pthread_mutex_unlock(&e->lock);
	if (e->cfg.publish_hook)
		e->cfg.publish_hook(e->cfg.hook_ctx);
}

/* The time between the start of the last pass (at, 0: none since a sleep)
 * and now, kept when it is the longest yet; returns now.  The gaps are
 * what the rings must hold: whatever keeps the harvest thread from its
 * next pass -- its own work, the scheduler -- shows here (JSON
 * engine.pass_gap_max_ms). */
static uint64_t engine_pass_gap(struct engine *e, uint64_t at)
{
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC);

	/* relaxed: a statistic; only this thread writes it. */
	if (at && now - at > atomic_load_explicit(&e->pass_gap_max,
						  memory_order_relaxed))
		atomic_store_explicit(&e->pass_gap_max, now - at,
				      memory_order_relaxed);
	return now;
}

/* How long the loop keeps scanning without pauses after a loss. */
#define ENGINE_CHASE_NS 50000000ull

static void engine_harvest_loop(struct engine *e)
{
	uint64_t tick_ns = (uint64_t)e->cfg.tick_ms * 1000000u;
	uint64_t next_tick = clock_now_ns(CLOCK_MONOTONIC) + tick_ns;
	uint64_t full_ns = (uint64_t)e->cfg.full_scan_ms * 1000000u;
	uint64_t next_full = 0;
	uint64_t next_paced = 0; /* next dirty/full pass while catching up */
	uint64_t pace_ns = (uint64_t)e->cfg.scan_interval_us * 1000u;
	uint32_t hot[HARVEST_HOT_MAX];
	unsigned nhot = 0;
	bool dirty = harvest_has_dirty(&e->harvest) && e->region.owner;
	bool primed = false; /* the symbols made once events came */
	unsigned empty = 0;
	/* No pause between busy passes until then (below). */
	uint64_t chase_until = 0;
	/* The start of the last pass (0: the loop slept since), and of the
	 * one before: the events of a pass came in between. */
	uint64_t pass_at = 0, prev_at = 0;
	uint64_t next_memscan = 0; /* scan mode: the next refresh */
	uint64_t next_pass = 0;	   /* ... and the next whole pass */

	/* acquire: pairs with engine_stop's acq_rel exchange; what the
	 * stopper wrote before it is visible to the last pass. */
	while (!atomic_load_explicit(&e->stop, memory_order_acquire)) {
		uint64_t lost0, lost1, now;
		uint32_t fill; /* the pass's slack (harvest.h) */
		bool upstream, shallow;
		size_t n;

		if (e->cfg.pass_hook)
			e->cfg.pass_hook(e->cfg.hook_ctx);
		prev_at = pass_at;
		pass_at = engine_pass_gap(e, pass_at);
		/* The counters under the lock: the socket thread's passes
		 * write them too. */
		pthread_mutex_lock(&e->lock);
		lost0 = e->harvest.count.lost;
		upstream = e->harvest.saw_upstream;
		pthread_mutex_unlock(&e->lock);
		now = clock_now_ns(CLOCK_MONOTONIC);

		/* Dirty scans while every writer marks; a full scan at least
		 * every full_scan_ms, and always while an upstream SDK (which
		 * never marks) writes to the region. */
		if (nhot && now < next_paced) {
			n = engine_scan_hot(e, hot, nhot);
		} else if (dirty && !upstream && now < next_full) {
			n = engine_scan_dirty(e);
			next_paced = now + pace_ns;
		} else {
			n = engine_scan(e);
			next_full = now + full_ns;
			next_paced = now + pace_ns;
		}
		/* Under the lock: the socket thread's passes (engine_scan in
		 * engine_waker_loop) rewrite hot[] too (TSan saw the race). */
		pthread_mutex_lock(&e->lock);
		nhot = e->harvest.nhot;
		memcpy(hot, e->harvest.hot, nhot * sizeof(hot[0]));
		lost1 = e->harvest.count.lost;
		fill = e->harvest.pass_fill;
		shallow = e->harvest.pass_shallow;
		pthread_mutex_unlock(&e->lock);
		now = clock_now_ns(CLOCK_MONOTONIC);

		if (!e->core && e->scanner && now >= next_memscan) {
			next_memscan = engine_scan_step(e, &next_pass);
			now = clock_now_ns(CLOCK_MONOTONIC);
		}
		if (now >= next_tick) {
			engine_tick(e);
			next_tick = now + tick_ns;
		}
		stacks_poll(e->stacks, now);
		/* The first events: the program's modules are mapped by now.
		 * Keep its maps here, one read of tens of microseconds (a
		 * program of 10 ms is gone before any lookup, and once it
		 * has exited /proc no longer lists them: its final state
		 * would be hex), again at most every SYMTAB_KEEP_NS while
		 * events come (a library loaded later); then load its
		 * modules on the walker's thread, not here: that read of
		 * every ELF file held this loop from the rings during the
		 * program's first burst. */
		if (n && e->target.pid > 0) {
			(void)symtab_keep_maps(&e->symtab, e->target.pid, now);
			if (!primed)
				stacks_prime(e->stacks);
			primed = true;
		}
		/* A scan that only counted losses is activity too: the
		 * writer is lapping us, sleeping now would make it worse. */
		if (n || lost1 != lost0) {
			empty = 0;
			/* A loss means a writer outruns the pacing: chase it,
			 * pass after pass, for ENGINE_CHASE_NS after the last
			 * loss, or until a pass finds nothing.  Pausing right
			 * after catching up would let a flat-out writer lap
			 * its ring again during every pause; a target that
			 * loses nothing still costs one pass per pause. */
			if (lost1 != lost0)
				chase_until = now + ENGINE_CHASE_NS;
			else if (now >= chase_until && e->cfg.scan_interval_us)
				engine_pause(e,
					     engine_slack_us(
						     e->cfg.scan_interval_us,
						     e->harvest.deep &&
							     e->region.owner,
						     fill, shallow,
						     prev_at ? pass_at - prev_at
							     : 0));
			continue;
		}
		if (now < chase_until) {
			/* Chasing: an empty pass only means we reached a
			 * write in progress; look again at once, without the
			 * sleep contract (its barrier, the futex) and without
			 * sched_yield, which on a loaded machine hands the
			 * CPU to a busy loop for a whole slice. */
			continue;
		}
		if (++empty < e->cfg.idle_scans) {
			/* A short pause before the next look, not sched_yield:
			 * with CPU hogs a yield handed the CPU away for a whole
			 * slice (10-16 ms between passes, the demo's longest
			 * gaps), while a thread that slept is run soon after
			 * its pause ends. */
			engine_pause(e, e->cfg.scan_interval_us <
							ENGINE_EMPTY_PAUSE_US
						? e->cfg.scan_interval_us
						: ENGINE_EMPTY_PAUSE_US);
			continue;
		}
		empty = 0;
		engine_idle(e);
		pass_at = 0; /* a sleep a write ends is no gap */
		/* The sleep-entry re-scan was a full one; count from now.  A
		 * wake's mark follows the wake within nanoseconds and is
		 * picked up by the next dirty scans. */
		next_full = clock_now_ns(CLOCK_MONOTONIC) + full_ns;
	}
}

/*
 * Run a thread's loop under the SIGBUS guard.  A fault in a scan (the region
 * was truncated under us) jumps back here; the scan held the lock, so it is
 * released, the error is recorded for snapshots, and the thread ends.
 */
static void engine_guarded(struct engine *e, void (*loop)(struct engine *))
{
	sigjmp_buf jb;

	if (sigsetjmp(jb, 1)) {
		engine_guard = NULL;
		e->error = engine_sigbus_msg;
		pthread_mutex_unlock(&e->lock);
		return;
	}
	engine_guard = &jb;
	loop(e);
	engine_guard = NULL;
}

void *engine_harvest_main(void *arg)
{
	/* Its pauses are tens of microseconds: the default timer slack
	 * (50 us) would stretch each to three times its length. */
	prctl(PR_SET_TIMERSLACK, 1ul, 0ul, 0ul, 0ul);
	engine_guarded(arg, engine_harvest_loop);
	return NULL;
}

/* ---- waker: socket bytes -> futex wake ---- */

void engine_kick(struct engine *e)
{
	_Atomic uint32_t *word = &e->region.hdr->tracer_sleeping;

	/* Wake unconditionally.  A socket writer (upstream SDKs, or our probe
	 * without the futex flag) has already CASed the flag 1 -> 0 itself
	 * before sending its byte, so a CAS here would fail and the engine
	 * would sleep out its bound.  A spurious wake is harmless: the wait
	 * loop re-checks the word.  release: pairs with the wait's acquire. */
	atomic_store_explicit(word, 0, memory_order_release);
	syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static void engine_waker_loop(struct engine *e)
{
	struct pollfd p[2 + ENGINE_MAX_CLIENTS];
	nfds_t n = 2;
	char buf[256];

	p[0] = (struct pollfd){.fd = e->stop_pipe[0], .events = POLLIN};
	p[1] = (struct pollfd){.fd = e->region.listen_fd, .events = POLLIN};
	/* acquire: pairs with engine_stop's acq_rel exchange (the stop pipe
	 * wakes the poll; the flag says it was a stop). */
	while (!atomic_load_explicit(&e->stop, memory_order_acquire)) {
		if (poll(p, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents)
			break;
		if ((p[1].revents & POLLIN)) {
			int fd = accept4(e->region.listen_fd, NULL, NULL,
					 SOCK_NONBLOCK | SOCK_CLOEXEC);

			/* A probe connects from its constructor: the
			 * target's libraries are mapped.  Keep its maps now,
			 * the earliest sign of it (symtab_keep_maps); a
			 * program of 10 ms may be gone before the harvest
			 * thread is run on a busy machine. */
			if (fd >= 0 && e->target.pid > 0)
				(void)symtab_keep_maps(
					&e->symtab, e->target.pid,
					clock_now_ns(CLOCK_MONOTONIC));
			if (fd >= 0 && n < 2 + ENGINE_MAX_CLIENTS)
				p[n++] = (struct pollfd){.fd = keeper_hold(fd),
							 .events = POLLIN};
			else if (fd >= 0)
				close(fd); /* probe falls back to futex only */
		}
		for (nfds_t i = 2; i < n; i++) {
			ssize_t got;

			if (!p[i].revents)
				continue;
			got = read(p[i].fd, buf, sizeof(buf));
			if (got > 0) {
				atomic_fetch_add_explicit(&e->uds_bytes,
							  (uint64_t)got,
							  memory_order_relaxed);
				/* Harvest right here, then wake the harvest
				 * thread: one thread wakeup on the socket path
				 * instead of two.  A full scan: socket writers
				 * (upstream SDKs) never mark dirty bits. */
				engine_scan(e);
				engine_kick(e);
			} else if (got == 0 ||
				   (errno != EAGAIN && errno != EINTR)) {
				/* EOF: that probe's process is gone. */
				close(p[i].fd);
				p[i--] = p[--n];
			}
		}
	}
	for (nfds_t i = 2; i < n; i++)
		close(p[i].fd);
}

void *engine_waker_main(void *arg)
{
	engine_guarded(arg, engine_waker_loop);
	return NULL;
}
