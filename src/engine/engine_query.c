/*
 * engine_query: what callers read from a running engine -- snapshots (the
 * model copied under the lock, linted outside it, the addresses named from
 * the engine's name cache: never the symbolizer on the caller's thread
 * when names come later), the watched coroutine's
 * history (seeded from its station's ring), lint settings, rate resets and
 * statistics.  The harvest thread keeps running meanwhile; everything here
 * takes the engine's lock for as short a time as it can.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "engine/scan/scanner.h"
#include "common/grow.h"
#include "engine/calltrace/parked.h"
#include "engine/model/namepool.h"
#include "engine/model/snapcopy.h"
#include "engine/target/framecheck.h"
#include "engine/target/kwait.h"
#include "common/clock.h"

/* Addresses the name cache keeps at most (a million: an upstream probe
 * parks each coroutine at its own frame address). */
#define ENGINE_NAMES_MAX (1u << 20)

/* With the lock held: the watched coroutine's history into `out`. */
static void engine_copy_history(struct engine *e, struct snapshot *out)
{
	struct model *m = &e->model;

	out->history_id = 0;
	out->nhistory = 0;
	if (m->watch.id && !out->history)
		out->history = malloc(MODEL_WATCH_MAX * sizeof(*out->history));
	if (!m->watch.id || !out->history)
		return;
	out->history_id = m->watch.id;
	for (uint32_t i = 0; i < m->watch.count; i++)
		out->history[i] = *model_watch_at(m, i);
	out->nhistory = m->watch.count;
}

/* ---- names: the addresses a snapshot carries, named by the engine ---- */

/* The names thread's (or engine_snapshot's) one call into the symbolizer:
 * an address the symbolizer gives only in hex has no name.  A key tagged
 * SNAPSHOT_WHERE_TAG is a `where`, named at its call site. */
static bool engine_name_resolve(void *ctx, uint64_t key, char *full,
				char *brief, uint32_t *gen)
{
	struct engine *e = ctx;
	bool call_site = (key & SNAPSHOT_WHERE_TAG) != 0;
	uint16_t space = SNAPSHOT_KEY_SPACE(key);
	uint64_t addr = SNAPSHOT_KEY_ADDR(key);
	pid_t pid = 0; /* the target's */

	/* Another process's address: by its own symbols (engine_space). */
	if (space) {
		pthread_mutex_lock(&e->lock);
		pid = space <= e->nspaces ? (pid_t)e->spaces[space - 1] : -1;
		pthread_mutex_unlock(&e->lock);
	}
	symtab_where_in(&e->symtab, pid, addr, call_site, true, full,
			NAMECACHE_NAME_MAX);
	symtab_where_in(&e->symtab, pid, addr, call_site, false, brief,
			NAMECACHE_NAME_MAX);
	*gen = symtab_gen(&e->symtab);
	return strncmp(full, "0x", 2) != 0;
}

/* The names' generation without waiting (debug info fetched later moves
 * it with no address asked; symtab_poll). */
static bool engine_name_poll(void *ctx, uint32_t *gen)
{
	struct engine *e = ctx;

	return symtab_poll(&e->symtab, gen);
}

static void engine_name_arrived(void *ctx)
{
	struct engine *e = ctx;

	if (e->cfg.publish_hook)
		e->cfg.publish_hook(e->cfg.hook_ctx);
}

struct namecache *engine_names_create(struct engine *e)
{
	struct namecache_config c = {
		.resolve = engine_name_resolve,
		.poll = engine_name_poll,
		.notify = engine_name_arrived,
		.ctx = e,
		.later = e->cfg.names_later && !e->cfg.replay_path,
		.max_names = ENGINE_NAMES_MAX,
		.max_queued = 4096,
	};

	return namecache_create(&c);
}

/* Without the names thread: every address of out named before it is
 * returned, on this thread (runs of records at one place cost one). */
static void engine_name_now(struct engine *e, struct snapshot *out, bool all)
{
	uint64_t prev = 0;
	uint16_t prev_space = 0, hspace = 0;

	for (size_t i = 0; all && i < out->count; i++) {
		const struct model_coro *c = &out->coro[i];
		char name[8];
		uint64_t pc = 0;

		uint16_t space = snapshot_space(out, c);

		if (space == SNAPSHOT_SPACE_NONE)
			continue;
		/* A coroutine named by its entry's code, an exact address
		 * (snapshot_name): a key of its own. */
		if (c->name &&
		    namepool_get(out->coro_names, c->name, name, sizeof(name),
				 &pc) &&
		    !name[0] && SNAPSHOT_ADDR_NAMEABLE(pc) && pc) {
			uint64_t made =
				namepool_made_for(out->coro_names, c->name);

			namecache_ensure(e->names, SNAPSHOT_KEY_IN(pc, space));
			if (made && SNAPSHOT_ADDR_NAMEABLE(made))
				namecache_ensure(e->names,
						 SNAPSHOT_KEY_IN(made, space));
		}
		if ((c->last_addr == prev && space == prev_space) ||
		    !c->last_addr || !SNAPSHOT_ADDR_NAMEABLE(c->last_addr))
			continue;
		prev = c->last_addr;
		prev_space = space;
		namecache_ensure(
			e->names,
			SNAPSHOT_KEY_IN(SNAPSHOT_WHERE_KEY(prev), space));
	}
	/* The watched coroutine's history: of its process. */
	for (size_t i = 0; out->nhistory && i < out->count; i++)
		if (out->coro[i].id == out->history_id)
			hspace = snapshot_space(out, &out->coro[i]);
	for (size_t i = 0; i < out->nhistory && hspace != SNAPSHOT_SPACE_NONE;
	     i++)
		if (out->history[i].addr &&
		    SNAPSHOT_ADDR_NAMEABLE(out->history[i].addr))
			namecache_ensure(
				e->names,
				SNAPSHOT_KEY_IN(SNAPSHOT_WHERE_KEY(
							out->history[i].addr),
						hspace));
}

/* The snapshot's names: the engine's cache (text only), and its
 * generation as of now. */
static void engine_name(struct engine *e, struct snapshot *out, bool all)
{
	if (!e->cfg.names_later || e->cfg.replay_path) {
		namecache_poll(e->names);
		engine_name_now(e, out, all);
	}
	out->names = e->names;
	out->names_gen = namecache_gen(e->names);
}

/* The walks stopped at a refused frame: the target's, and its children's
 * (engine/stacks' slots, under the engine lock); and where the parked
 * walks started. */
static void engine_frames_rejected(struct engine *e, struct snapshot *out)
{
	struct framecheck_stats st;
	struct stacks_walk_stats w;

	framecheck_stats(e->framecheck, &st);
	pthread_mutex_lock(&e->lock);
	stacks_walk_stats(e->stacks, &w);
	pthread_mutex_unlock(&e->lock);
	out->frames_not_code = st.not_code + w.not_code;
	out->frames_not_after_call = st.not_after_call + w.not_after_call;
	out->walks_from_saved = w.from_saved;
	out->walks_from_probe = w.from_probe;
	out->walks_saved_refused = w.saved_refused;
}

/* A suspended copy whose WHERE is still its switch's address (no walk
 * caught this park): the program frame a walk found at an earlier park
 * at that switch, marked as learned (engine/stacks/walks.c; lock held).  Not
 * when a walk of this park set WHERE, nor when the switch's address is
 * that frame already (a switch called from the program's code). */
static void engine_where_learned(const struct stacks_where *v,
				 struct model_coro *c, uint32_t r)
{
	uint64_t f = stacks_where_learned(v, c, r);

	if (f && f != c->last_addr) {
		c->last_addr = f;
		c->where_learned = 1;
	}
}

void engine_snapshot(struct engine *e, struct snapshot *out)
{
	e->mode->snapshot(e, out);
	engine_frames_rejected(e, out);
	engine_name(e, out, true);
}

/*
 * The final state (docs/TRACING.md, "After the program exits"), on a
 * snapshot's copy of a coroutine of the target, which exited at `exit_ns`:
 * nothing runs after the exit, so a context that was running is dead,
 * from the exit on; one that was parked keeps its state, frozen, and both
 * are marked as the state at exit.  The model keeps what the probe wrote:
 * events harvested after the exit still land on the right record.
 */
static void engine_at_exit(struct model_coro *c, uint64_t exit_ns,
			   uint32_t target, bool core)
{
	if (c->state == MODEL_DEAD || (c->pid && c->pid != target))
		return;
	c->at_exit = 1;
	/* A core's running one was running at the dump: it stays so. */
	if (c->state != MODEL_RUNNING || core)
		return;
	c->state = MODEL_DEAD;
	if (exit_ns > c->state_ts) {
		c->run_ns += exit_ns - c->state_ts;
		c->state_ts = exit_ns;
	}
	c->dead_ts = c->state_ts;
}

/*
 * Execution contexts (CTP_EPF_CONTEXT: what their thread does is what they
 * do) that would be flagged as stalling -- running longer than the lint's
 * threshold -- whose thread waits in the kernel (procfs, kwait.c):
 * an event loop's root in epoll_wait, a worker in futex.  Marked in_kernel
 * (with the syscall, in out->kernel) and linted again: not a stall.  Read
 * after the engine lock is let go, and only for those: one or two small
 * procfs reads per such thread and snapshot.  Not for a replay (no
 * threads), nor once the target exited.
 */
static void engine_kernel_waits(struct engine *e, struct snapshot *out,
				const struct lint_config *lints)
{
	if (out->kernel)
		memset(out->kernel, 0, out->kernel_cap * sizeof(*out->kernel));
	if (e->target.exited || !lints->enabled[LINT_STALL])
		return;
	for (size_t k = 0; k < out->count; k++) {
		struct model_coro *c = &out->coro[k];
		pid_t pid = c->pid ? (pid_t)c->pid : e->target.pid;
		struct kwait w;

		if (c->state != MODEL_RUNNING || !c->context ||
		    out->ts <= c->state_ts ||
		    out->ts - c->state_ts <= lints->running_ns ||
		    !kwait_read(pid, c->last_tid, &w) || !kwait_waiting(&w))
			continue;
		if (out->kernel_cap < out->count) {
			int32_t *n = calloc(out->cap, sizeof(*n));

			if (!n)
				return;
			free(out->kernel);
			out->kernel = n;
			out->kernel_cap = out->cap;
		}
		out->kernel[k] = w.nr >= 0 ? (int32_t)w.nr + 2 : 1;
		c->in_kernel = 1;
		snapshot_relint_record(out, lints, c);
	}
}

/* The engine's fix-ups of a record's copy, lock held (snapcopy_fix). */
struct engine_fix {
	struct stacks_where where;
	bool exited;
	bool core; /* a core file's: frozen, not ended */
	uint64_t exit_ns;
	uint32_t target;
	struct snapshot *out;
	const struct lint_config *lints;
};

static void engine_fix_copy(void *ctx, struct model_coro *c, uint32_t r,
			    bool whole)
{
	const struct engine_fix *x = ctx;

	if (c->state == MODEL_SUSPENDED)
		engine_where_learned(&x->where, c, r);
	if (x->exited)
		engine_at_exit(c, x->exit_ns, x->target, x->core);
	/* A whole copy's record is linted as it is copied, while it is in
	 * the cache: a second pass over 100k copies costs more than the
	 * checks.  A changed one's is linted with the others, after. */
	if (whole) {
		model_totals_count(&x->out->t, c);
		snapshot_lint_record(x->out, x->lints, c);
	}
}

/* Without the lock, after a copy of the changed records only: each
 * record's lints at ts and the totals by state, every record (the ones
 * not copied again included: a lint is a matter of time too, and
 * in_kernel is this snapshot's to set). */
static void engine_lint_copy(struct snapshot *out,
			     const struct lint_config *lints)
{
	out->t.running = out->t.suspended = out->t.dead = 0;
	memset(out->warn_counts, 0, sizeof(out->warn_counts));
	for (size_t k = 0; k < out->count; k++) {
		struct model_coro *c = &out->coro[k];

		if (c->in_kernel) /* this snapshot's to set (not written
				     when clear: see snapshot_lint_record) */
			c->in_kernel = 0;
		model_totals_count(&out->t, c);
		snapshot_lint_record(out, lints, c);
	}
}

void engine_live_snapshot(struct engine *e, struct snapshot *out)
{
	struct model *m = &e->model;
	struct lint_config lints;
	struct engine_fix fix;
	uint64_t t0;
	size_t used;
	bool whole;

	/* A whole copy coming: its array made and faulted in first, not
	 * under the lock (m->uid is set once, at init, and never 0: a
	 * snapshot that holds no copy has copy_of 0). */
	if (out->copy_of != m->uid) {
		pthread_mutex_lock(&e->lock);
		used = m->used;
		pthread_mutex_unlock(&e->lock);
		snapcopy_reserve(out, m, used);
	}
	pthread_mutex_lock(&e->lock);
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	/* Stopped at the target's exit: the final state. */
	out->ts = engine_now(e);
	out->wall_ns = clock_now_ns(CLOCK_REALTIME);
	out->t = m->t;
	out->t.torn = e->harvest.count.torn;
	out->t.before_start = e->harvest.count.before_start;
	out->t.recycled = e->harvest.count.recycled;
	out->t.stations_allocated = e->allocated;
	out->t.stations_max = e->region.stations;
	out->t.untraced = e->untraced;
	/* relaxed: a display value only.  "asleep" must be true when drawn
	 * next to the rate: an engine that harvested in the last rate window
	 * is harvesting, even if it naps between bursts at this instant. */
	out->sleeping =
		atomic_load_explicit(&e->asleep, memory_order_relaxed) &&
		(m->t.events_per_sec == 0 || e->target.exited);
	/* relaxed: a statistic of the harvest thread's. */
	out->pass_gap_max_ns =
		atomic_load_explicit(&e->pass_gap_max, memory_order_relaxed);
	out->observer = !e->region.owner;
	engine_procs_snapshot(e, out);
	out->target = e->target;
	if (e->scanner)
		scanner_stats(e->scanner, &out->scan);
	if (e->core)
		engine_core_info(e, &out->core);
	out->error = e->error;
	/* The recorder's books first: one that says "stopped" is followed
	 * by its warning, never the other way round. */
	recording_snapshot(e->rec, &out->record);
	out->warning = recording_warning(e->rec);
	lints = e->cfg.lints;
	/* Only the records changed since out's last copy (snapcopy.c); all
	 * of them once the target exited, whose state at exit every copy
	 * shows. */
	fix = (struct engine_fix){.exited = e->target.exited,
				  .core = e->target.core,
				  .exit_ns = out->ts,
				  .target = (uint32_t)e->target.pid,
				  .out = out,
				  .lints = &lints};
	stacks_where_view(e->stacks, &fix.where);
	out->t.running = out->t.suspended = out->t.dead = 0;
	memset(out->warn_counts, 0, sizeof(out->warn_counts));
	whole = snapcopy_take(out, m, e->target.exited, engine_fix_copy, &fix);
	out->coro_names = m->names;
	engine_copy_history(e, out);
	e->snapshot_lock_ns = clock_now_ns(CLOCK_MONOTONIC) - t0;
	pthread_mutex_unlock(&e->lock);
	snapcopy_settle(out);
	if (!whole)
		engine_lint_copy(out, &lints);
	engine_kernel_waits(e, out, &lints);
}

void engine_set_lints(struct engine *e, const struct lint_config *c)
{
	pthread_mutex_lock(&e->lock);
	e->cfg.lints = *c;
	pthread_mutex_unlock(&e->lock);
}

/* With the lock held: seed the watch from the coroutine's station ring.
 * The harvest state says which ring events were delivered already (those
 * numbered below `expected`); later ones reach the watch through
 * model_event, so nothing is shown twice. */
static void engine_watch_locked(struct engine *e, uint64_t id)
{
	struct model *m = &e->model;
	struct harvest_event ev[CTP_SLOTS];
	struct model_transition seed[CTP_SLOTS];
	uint32_t r = id ? model_find(m, id) : MODEL_NONE;
	unsigned n = 0;

	if (r != MODEL_NONE && e->harvest.state) {
		const struct model_coro *c = &m->coro[r];
		bool current = c->station < m->stations &&
			       m->by_station[c->station] == r;

		/* A dead record's ring is only its own until the station's
		 * next occupant is opened; harvest_station_recent checks the
		 * occupant's probe id for that. */
		if (current || c->state == MODEL_DEAD)
			n = harvest_station_recent(&e->harvest, c->station,
						   c->probe_id, ev);
	}
	for (unsigned i = 0; i < n; i++)
		seed[i] = (struct model_transition){
			.ts = ev[i].ts,
			.tid = ev[i].tid,
			.addr = ev[i].addr,
			.seq = ev[i].seq,
			.n = ev[i].n,
			.slot = ev[i].slot,
			.lost_before = i ? ev[i].n - ev[i - 1].n - 1 : 0,
			.is_active = ev[i].is_active,
			.from_ring = 1,
		};
	model_watch(m, id, seed, n);
}

void engine_watch(struct engine *e, uint64_t id)
{
	e->mode->watch(e, id);
}

void engine_live_watch(struct engine *e, uint64_t id)
{
	sigjmp_buf jb;

	pthread_mutex_lock(&e->lock);
	/* Reading the ring touches the mapping: guard it like a scan. */
	if (sigsetjmp(jb, 1)) {
		engine_guard = NULL;
		e->error = engine_sigbus_msg;
		model_watch(&e->model, id, NULL, 0);
		pthread_mutex_unlock(&e->lock);
		return;
	}
	engine_guard = &jb;
	engine_watch_locked(e, id);
	engine_guard = NULL;
	pthread_mutex_unlock(&e->lock);
}

void engine_history(struct engine *e, struct snapshot *out)
{
	e->mode->history(e, out);
	engine_name(e, out, false);
}

void engine_live_history(struct engine *e, struct snapshot *out)
{
	pthread_mutex_lock(&e->lock);
	engine_copy_history(e, out);
	pthread_mutex_unlock(&e->lock);
}

void engine_reset_rates(struct engine *e)
{
	pthread_mutex_lock(&e->lock);
	model_reset_rates(&e->model, clock_now_ns(CLOCK_MONOTONIC));
	pthread_mutex_unlock(&e->lock);
}

void engine_stats(struct engine *e, struct engine_stats *out)
{
	out->sleeps = atomic_load_explicit(&e->sleeps, memory_order_relaxed);
	out->futex_wakes =
		atomic_load_explicit(&e->futex_wakes, memory_order_relaxed);
	out->uds_bytes =
		atomic_load_explicit(&e->uds_bytes, memory_order_relaxed);
	out->timeouts =
		atomic_load_explicit(&e->timeouts, memory_order_relaxed);
	/* relaxed: a display value only. */
	out->asleep = atomic_load_explicit(&e->asleep, memory_order_relaxed);
	pthread_mutex_lock(&e->lock);
	out->scans = e->harvest.count.scans;
	pthread_mutex_unlock(&e->lock);
}

size_t engine_parked_stack_of(struct engine *e, const struct model_coro *c,
			      uint64_t *frames, size_t max, uint64_t *trace_id)
{
	uint64_t id;

	return e->mode->parked(e, c->id, c, frames, max,
			       trace_id ? trace_id : &id);
}

size_t engine_live_parked(struct engine *e, uint64_t model_id,
			  const struct model_coro *c, uint64_t *frames,
			  size_t max, uint64_t *trace_id)
{
	uint64_t id = 0;
	uint32_t r;

	pthread_mutex_lock(&e->lock);
	if (c)
		r = model_find_at(&e->model, c->id, c->slot);
	else
		r = model_id ? model_find(&e->model, model_id) : MODEL_NONE;
	if (r != MODEL_NONE)
		id = e->model.parked[r];
	/* A park no walk caught, whose WHERE is learned: the stack of the
	 * walk it was learned from (engine_where_learned). */
	if (r != MODEL_NONE && !id &&
	    e->model.coro[r].state == MODEL_SUSPENDED &&
	    !stacks_walked(e->stacks, r, e->model.coro[r].state_ts)) {
		const struct model_coro *mc = &e->model.coro[r];
		uint64_t s, f = stacks_learned(e->stacks, mc->id, mc->last_addr,
					       &s);

		if (f && f != mc->last_addr)
			id = s;
	}
	pthread_mutex_unlock(&e->lock);
	if (trace_id)
		*trace_id = id;
	if (!id) /* without --parked-stacks, always */
		return 0;
	return stacks_parked_frames(e->stacks, id, frames, max);
}

void engine_symbolize_pid(struct engine *e, pid_t pid)
{
	symtab_set_pid(&e->symtab, pid);
	namecache_clear(e->names);
}

/* ---- the hot stacks: engine/stacks answers ---- */

void engine_calltrace_stats(struct engine *e,
			    struct engine_calltrace_stats *out)
{
	stacks_stats(e->stacks, out);
}

uint64_t engine_calltrace_lost(const struct engine_calltrace_stats *s)
{
	return s->rotor.dropped_weight + s->snapshots.lapped +
	       s->snapshots.torn + s->snapshots.skipped + s->snapshots.bad;
}

size_t engine_parked_stack(struct engine *e, uint64_t model_id,
			   uint64_t *frames, size_t max, uint64_t *trace_id)
{
	uint64_t id;

	return e->mode->parked(e, model_id, NULL, frames, max,
			       trace_id ? trace_id : &id);
}

static const char *const hot_by_names[ENGINE_HOT_BY_COUNT] = {
	[ENGINE_HOT_BY_FUNCTION] = "function",
	[ENGINE_HOT_BY_LINE] = "line",
	[ENGINE_HOT_BY_ADDRESS] = "address",
};

const char *engine_hot_by_name(enum engine_hot_by by)
{
	return (unsigned)by < ENGINE_HOT_BY_COUNT ? hot_by_names[by] : NULL;
}

bool engine_hot_by_parse(const char *s, enum engine_hot_by *out)
{
	for (unsigned i = 0; s && i < ENGINE_HOT_BY_COUNT; i++)
		if (!strcmp(s, hot_by_names[i])) {
			*out = (enum engine_hot_by)i;
			return true;
		}
	return false;
}

size_t engine_hot_stacks(struct engine *e, uint64_t model_id,
			 enum engine_hot_order order,
			 struct engine_hot_stack *out, size_t max)
{
	return stacks_hot_stacks(e->stacks, model_id, order, out, max);
}

size_t engine_hot_rows(struct engine *e, uint64_t model_id,
		       enum engine_hot_order order, enum engine_hot_by by,
		       struct engine_hot_stack *out, size_t max)
{
	return stacks_hot_rows(e->stacks, model_id, order, by, out, max);
}

size_t engine_hot_tree(struct engine *e, uint64_t model_id, bool by_function,
		       struct hot_node *out, size_t max)
{
	return stacks_hot_tree(e->stacks, model_id, by_function, out, max);
}

void engine_hot_zero(struct engine *e)
{
	stacks_hot_zero(e->stacks);
}

void engine_hot_window(struct engine *e, unsigned window_s,
		       unsigned half_life_s)
{
	stacks_hot_window(e->stacks, window_s, half_life_s);
}

const char *engine_frame_name(struct engine *e, uint64_t addr, bool leaf,
			      bool full, char *buf, size_t n)
{
	return stacks_frame_name(e->stacks, addr, leaf, full, buf, n);
}

const char *engine_hot_frame_label(struct engine *e, uint64_t addr, bool leaf,
				   enum engine_hot_by by, char *buf, size_t n)
{
	return stacks_frame_label(e->stacks, addr, leaf, by, buf, n);
}

bool engine_export(struct engine *e, enum engine_export_format fmt,
		   const char *path, uint64_t model_id, char *err,
		   size_t errlen)
{
	return stacks_export(e->stacks, fmt, path, model_id, err, errlen);
}

/* ---- attach mode's ppt buffers: engine/attach answers ---- */

void engine_ppt_info(struct engine *e, struct engine_ppt_info *out)
{
	attach_info(e->attach, out);
}

size_t engine_ppt_buffers(struct engine *e, struct engine_ppt_buffer *out,
			  size_t max)
{
	return attach_buffers(e->attach, out, max);
}

const struct ppt_desc *engine_ppt_desc(struct engine *e, size_t i)
{
	return attach_desc(e->attach, i);
}

size_t engine_ppt_frames(struct engine *e, size_t i, uint64_t from, void *bytes,
			 struct engine_ppt_frame *meta, size_t max,
			 uint64_t *next, uint64_t *skipped)
{
	return attach_frames(e->attach, i, from, bytes, meta, max, next,
			     skipped);
}

bool engine_ppt_resize(struct engine *e, size_t i, uint64_t nframes, char *err,
		       size_t errlen)
{
	return attach_resize(e->attach, i, nframes, err, errlen);
}

uint32_t engine_ppt_frame_size(const struct ppt_desc *d)
{
	return attach_frame_size(d);
}

size_t engine_ppt_types(const struct ppt_desc *d)
{
	return attach_types(d);
}

const char *engine_ppt_type(const struct ppt_desc *d, size_t t,
			    size_t *ncolumns)
{
	return attach_type(d, t, ncolumns);
}

const char *engine_ppt_column(const struct ppt_desc *d, size_t t, size_t c)
{
	return attach_column(d, t, c);
}

size_t engine_ppt_cells(const struct ppt_desc *d, const void *frame, bool json,
			const char **type, struct engine_ppt_cell *out,
			size_t max)
{
	return attach_cells(d, frame, json, type, out, max);
}

bool engine_ppt_counters_valid(const char *list, char *why, size_t n)
{
	return attach_counters_valid(list, why, n);
}

bool engine_list_buffers(pid_t pid, struct engine_buffer_list *out, char *err,
			 size_t errlen)
{
	return attach_list_buffers(pid, out, err, errlen);
}

void engine_buffer_list_finish(struct engine_buffer_list *l)
{
	attach_buffer_list_finish(l);
}

void engine_record_stats(struct engine *e, struct recorder_stats *out)
{
	recording_stats(e->rec, out);
}

bool engine_frame_init(struct engine_frame *f, size_t hot_max, bool merged,
		       enum engine_hot_by by)
{
	memset(f, 0, sizeof(*f));
	snapshot_init(&f->snap);
	f->hot_merged = merged;
	f->hot_by = by;
	if (!hot_max)
		return true;
	f->hot = calloc(hot_max, sizeof(*f->hot));
	f->hot_max = f->hot ? hot_max : 0;
	return f->hot != NULL;
}

void engine_frame_finish(struct engine_frame *f)
{
	snapshot_finish(&f->snap);
	free(f->hot);
	f->hot = NULL;
	f->hot_max = f->nhot = 0;
}

void engine_frame_take(struct engine *e, struct engine_frame *f)
{
	engine_snapshot(e, &f->snap);
	engine_stats(e, &f->stats);
	engine_calltrace_stats(e, &f->ct);
	f->nhot = 0;
	if (f->ct.enabled && f->hot_max)
		f->nhot =
			f->hot_merged
				? engine_hot_rows(e, 0, ENGINE_HOT_BY_TOTAL,
						  f->hot_by, f->hot, f->hot_max)
				: engine_hot_stacks(e, 0, ENGINE_HOT_BY_TOTAL,
						    f->hot, f->hot_max);
	engine_ppt_info(e, &f->ppt);
	f->nbuf = f->ppt.enabled ? engine_ppt_buffers(e, f->buf,
						      ENGINE_PPT_MAX_BUFFERS)
				 : 0;
}
