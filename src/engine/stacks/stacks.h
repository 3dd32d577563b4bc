/*
 * stacks: the engine's stacks -- the CallTrace rotation and its hot and
 * parked stores (rotation.c), the CPU samples the engine walks
 * (samples.c), the parked coroutines' stacks it walks in the target
 * (walker.c walks one, walks.c picks them, runs the walker's thread and
 * applies what the walks found), the census of a late attach (census.c)
 * and what callers read of it all (hotquery.c).
 *
 * One opaque object, made with every engine (a replay's answers nothing).
 * What it needs of the engine it is given, never reached for: the
 * engine's lock and what that lock guards (the model, the harvest's
 * stations, the target's identity), the symbols, the frame check, the
 * clock, the recording's hooks and the SIGBUS landing pad -- struct
 * stacks_env, at create.  The engine root calls down into it; nothing
 * here calls up.
 *
 * Locks.  `lock` is the engine's (model, harvest counters, target); the
 * stacks' own hot lock, a leaf, guards what readers copy (hot and parked
 * stores, names, statistics).  "Lock held" below means the engine's.
 */
#ifndef COROTOP_ENGINE_STACKS_STACKS_H
#define COROTOP_ENGINE_STACKS_STACKS_H

#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/model/coro.h"
#include "engine/model/learned.h"
#include "engine/stacks/hotview.h"

struct stacks;
struct framecheck;
struct harvest;
struct harvest_event;
struct model;
struct model_coro;
struct procmem;
struct region;
struct snapshot_target;
struct symtab;

/* What the stacks read of the engine, and call back.  Pointers into the
 * engine, valid from create to destroy. */
struct stacks_env {
	pthread_mutex_t *lock;	 /* the engine lock */
	struct model *model;	 /* under lock */
	struct harvest *harvest; /* its stations (under lock) */
	struct region *region;	 /* the cTP region (the rotor's directory) */
	const struct snapshot_target *target; /* pid, running (under lock) */
	struct symtab *symtab;		      /* own lock */
	struct framecheck **framecheck;	      /* the target's (made at start) */
	void *ctx; /* the callbacks' first argument */
	/* The engine's clock (engine_now). */
	uint64_t (*now)(void *ctx);
	/* The calling thread's SIGBUS landing-pad slot (engine_guard). */
	sigjmp_buf **(*guard)(void);
	/* Attach mode's view of the target's memory, or NULL (the census). */
	struct procmem *(*attach_pm)(void *ctx);
	/* The recording's: what a walk learned of record c (lock held). */
	void (*rec_where)(void *ctx, const struct model_coro *c, uint64_t where,
			  uint64_t trace, bool learned);
	void (*rec_learned)(void *ctx, const struct model_coro *c,
			    uint32_t name_was, unsigned kind_was);
};

/* The engine's settings the stacks use (engine_config's of the same
 * names). */
struct stacks_config {
	uint32_t ct_traces; /* 0: no CallTrace region */
	unsigned ct_rotate_ms, ct_idle_rotate_ms;
	struct {
		unsigned window_s, half_life_s;
		uint32_t max_stacks, max_coro;
	} hot;
	unsigned sample_hz;    /* 0: no samples */
	bool sample_snapshots; /* ... nor without a snapshot ring */
	uint32_t stations;     /* the model's records */
	bool record;	       /* --record: keep the stacks dead parked at */
	const char *title;     /* the exports' title: the target's argv[0] */
};

/* Lifecycle.  create: nothing opened (NULL: out of memory); open, in the
 * live modes before the target starts: the CallTrace region announced in
 * the cTP header, and the snapshot ring; start: the walker's and the
 * samples' threads (after the target and the harvest thread: a fork with
 * them running could copy their locks held); stop, after the harvest
 * thread was joined: the last rotation, then the walker joined; close:
 * what open made; destroy: everything (NULL: a no-op). */
struct stacks *stacks_create(const struct stacks_env *env,
			     const struct stacks_config *cfg);
bool stacks_open(struct stacks *sk, char *err, size_t errlen);
bool stacks_start_walker(struct stacks *sk, char *err, size_t errlen);
bool stacks_start_samples(struct stacks *sk, char *err, size_t errlen);
void stacks_stop(struct stacks *sk);
void stacks_close(struct stacks *sk);
void stacks_destroy(struct stacks *sk);
/* Remove the region's files (async-signal-safe: engine_unlink). */
void stacks_unlink(const struct stacks *sk);

/* The harvest thread's.  poll: the rotation cadence; walk: one tick's
 * walks of parked stacks (lock not held; also the last, at stop); prime:
 * ask the walker's thread to load the target's symbols now. */
void stacks_poll(struct stacks *sk, uint64_t now);
unsigned stacks_walk(struct stacks *sk, uint64_t now);
void stacks_prime(struct stacks *sk);
/* A census event (a coroutine found at a late attach) into the model, its
 * parked stack walked when it is parked; the stack's id, or 0 (lock
 * held). */
uint64_t stacks_census(struct stacks *sk, const struct harvest_event *ev);
/* A process other than the target writes too: its stacks are not checked
 * against the target's mappings from now on. */
void stacks_others(struct stacks *sk);
/* A suspend at CallTrace id `trace`: true when the last rotation did not
 * preserve it (counted: such a park asks for a rotation). */
bool stacks_park(struct stacks *sk, uint64_t trace);
/* A coroutine died parked at stack `trace` (lock held): preserved by the
 * next rotation once more, for the recording (with record only). */
void stacks_died_parked(struct stacks *sk, uint64_t trace);

/* Readers.  The kept frames of parked stack id (0 when none); the program
 * frame learned at (coroutine id, switch addr), and its stack in *stack
 * (lock held); whether a walk of record r's park at state_ts set its
 * WHERE (lock held); the walks' books (lock held). */
size_t stacks_parked_frames(struct stacks *sk, uint64_t id, uint64_t *frames,
			    size_t max);
uint64_t stacks_learned(struct stacks *sk, uint64_t id, uint64_t addr,
			uint64_t *stack);
bool stacks_walked(const struct stacks *sk, uint32_t r, uint64_t state_ts);
/* The same two answers for a whole snapshot's copy (lock held while it is
 * used): the walks' per-record park times and the learned table, read
 * inline per record (stacks_where_learned), rather than two calls into
 * this library per suspended record of the copy (docs/PERFORMANCE.md
 * §29). */
struct stacks_where {
	const uint64_t *where_ts; /* cap of them */
	uint32_t cap;
	const struct learned *learned;
};
void stacks_where_view(const struct stacks *sk, struct stacks_where *out);

/* The program frame learned for suspended copy c of record r, when no
 * walk of its park set its WHERE (0: none, or the walk did). */
static inline uint64_t stacks_where_learned(const struct stacks_where *v,
					    const struct model_coro *c,
					    uint32_t r)
{
	if (r < v->cap && v->where_ts[r] == c->state_ts)
		return 0;
	return learned_get(v->learned, c->id, c->last_addr, NULL);
}
struct stacks_walk_stats {
	uint64_t from_saved, from_probe, saved_refused;
	uint64_t not_code, not_after_call; /* the children's frame checks */
};
void stacks_walk_stats(const struct stacks *sk, struct stacks_walk_stats *out);

/* The hot queries (hotquery.c): engine.h's engine_calltrace_stats,
 * engine_hot_stacks, engine_hot_zero, engine_hot_window,
 * engine_frame_name, engine_hot_rows, engine_hot_frame_label,
 * engine_hot_tree and engine_export, which forward here. */
void stacks_stats(struct stacks *sk, struct engine_calltrace_stats *out);
size_t stacks_hot_stacks(struct stacks *sk, uint64_t model_id,
			 enum engine_hot_order order,
			 struct engine_hot_stack *out, size_t max);
void stacks_hot_zero(struct stacks *sk);
void stacks_hot_window(struct stacks *sk, unsigned window_s,
		       unsigned half_life_s);
const char *stacks_frame_name(struct stacks *sk, uint64_t addr, bool leaf,
			      bool full, char *buf, size_t n);
size_t stacks_hot_rows(struct stacks *sk, uint64_t model_id,
		       enum engine_hot_order order, enum engine_hot_by by,
		       struct engine_hot_stack *out, size_t max);
const char *stacks_frame_label(struct stacks *sk, uint64_t addr, bool leaf,
			       enum engine_hot_by by, char *buf, size_t n);
size_t stacks_hot_tree(struct stacks *sk, uint64_t model_id, bool by_function,
		       struct hot_node *out, size_t max);
bool stacks_export(struct stacks *sk, enum engine_export_format fmt,
		   const char *path, uint64_t model_id, char *err,
		   size_t errlen);

#endif
