/*
 * engine_internal: the engine's state, shared by the root's files --
 * engine.c (lifecycle), engine_clock.c (the clock), engine_harvest.c
 * (threads), engine_query.c (what callers read), engine_mode.c (the mode
 * table: engine_mode.h) and engine_procs.c (engine_procs.h).  The stacks
 * and attach mode are subsystems of their own (engine/stacks,
 * engine/attach), held here by pointer.  Not for use outside src/engine.
 */
#ifndef COROTOP_ENGINE_INTERNAL_H
#define COROTOP_ENGINE_INTERNAL_H

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "engine/engine.h"
#include "engine/engine_mode.h"
#include "engine/engine_procs.h"
#include "engine/attach/attach.h"
#include "engine/ctp/harvest.h"
#include "engine/export/jsonl.h"
#include "engine/ctp/model.h"
#include "engine/heph/recorder.h"
#include "engine/target/procmem.h"
#include "engine/ctp/region.h"
#include "engine/symbols/namecache.h"
#include "engine/stacks/stacks.h"
#include "engine/symbols/symtab.h"

#define ENGINE_MAX_CLIENTS 64

struct engine_rp;
struct output;
struct engine;

struct engine {
	struct engine_config cfg;
	const struct engine_mode *mode;
	struct region region;
	struct harvest harvest;
	struct model model;
	struct jsonl jsonl;
	struct recorder *rec;  /* --record, or NULL */
	char rec_warning[200]; /* engine_rec_warning's text, once failed */
	struct symtab symtab;  /* the target's symbols (own lock) */
	/* Which words of the target's stacks are return addresses into its
	 * code (own lock; launch and attach, else NULL): every walk's
	 * frames pass it (engine/target/framecheck.c). */
	struct framecheck *framecheck;
	struct namecache *names;   /* their names, for snapshots (own lock) */
	char autotrace_note[1024]; /* launch: why not traced by preload */
	struct output *output;	   /* launch, captured: the target's output */
	/* --runtime and --own-lib: which frames are the program's, or NULL. */
	struct framekind *framekind;
	/* engine_threads: the target's threads' CPU (the caller's thread
	 * only), for the pid it was made for. */
	struct threadcpu *threadcpu;
	pid_t threadcpu_pid;
	/* CallTrace rotation, hot stacks, samples and parked-stack walks
	 * (engine/stacks): made with the engine, in every mode. */
	struct stacks *stacks;
	/* Attach mode's ppt buffers (engine/attach); NULL in the other modes
	 * and before the mode creates it. */
	struct attach *attach;
	struct engine_procs procs; /* processes seen (lock) */
	/* The processes other than the target whose coroutines were seen,
	 * numbered for names (snapshot_space - 1; append-only, lock). */
	uint32_t spaces[SNAPSHOT_SPACES_MAX];
	uint32_t nspaces;
	struct engine_rp *rp; /* replay mode (engine_replay.c), or NULL */
	pthread_mutex_t lock; /* guards model, harvest counters, target,
			       cfg.lints */
	pthread_t harvest_thread;
	pthread_t waker_thread;
	bool harvest_running;
	bool waker_running;
	bool asym_fence; /* we issue membarrier(GLOBAL_EXPEDITED) */
	atomic_bool stop;
	/* CLOCK_MONOTONIC when the target's exit was seen, 0 before: the
	 * engine's clock stops there (engine_now), so the final state stays
	 * as it was -- dead rows do not expire, ages do not grow. */
	_Atomic uint64_t exit_ns;
	int stop_pipe[2];
	struct snapshot_target target;
	const char *error;
	char jsonl_error[200]; /* error's text for a failed --jsonl write */
	/* Copies of region words, taken on the (SIGBUS-guarded) harvest
	 * thread under `lock`, so snapshots never touch the mapping. */
	uint64_t untraced;
	uint32_t allocated;
	atomic_bool asleep;
	unsigned sleep_ms; /* current sleep bound (harvest thread only) */
	/* Statistics, written by their owning thread, read relaxed. */
	_Atomic uint64_t sleeps;
	_Atomic uint64_t futex_wakes;
	_Atomic uint64_t uds_bytes;
	_Atomic uint64_t timeouts;
	/* The longest wait between the starts of two passes of the harvest
	 * thread, a sleep on the futex aside (a write ends that one). */
	_Atomic uint64_t pass_gap_max;
};

/* The current thread's SIGBUS landing pad while it reads the mapping. */
extern __thread sigjmp_buf *engine_guard;
extern const char engine_sigbus_msg[];

/* engine_harvest.c: the live modes' threads and what engine.c drives of
 * them.  engine_sigbus is the SIGBUS handler (jumps to engine_guard). */
void engine_sigbus(int sig, siginfo_t *si, void *uc);
void *engine_harvest_main(void *arg);
void *engine_waker_main(void *arg);
size_t engine_scan(struct engine *e);
/* engine_clock.c: the engine's clock: CLOCK_MONOTONIC, stopped at the
 * target's exit. */
uint64_t engine_now(struct engine *e);
/* The target's exit was seen: stop the clock (under e->lock). */
void engine_mark_exit(struct engine *e);
void engine_tick(struct engine *e);
void engine_kick(struct engine *e);

/* engine_replay.c: replay mode.  create opens cfg.replay_path; the others
 * stand in for their live counterparts when e->rp is set. */
bool engine_rp_create(struct engine *e, char *err, size_t errlen);
void engine_rp_destroy(struct engine *e);
void engine_rp_snapshot(struct engine *e, struct snapshot *out);
void engine_rp_watch(struct engine *e, uint64_t id);
size_t engine_rp_parked_stack(struct engine *e, uint64_t id, uint64_t *frames,
			      size_t max);

/* engine_record.c: --record.  create: open the file (nothing without
 * --record); target: the pid once known; destroy: flush and close, false
 * with the reason when the file could not be written. */
bool engine_rec_create(struct engine *e, char *err, size_t errlen);
void engine_rec_target(struct engine *e, pid_t pid);
/* What the model learned of record c (lock held), for the recording:
 * its name, when no longer name_was, and its kind, when no longer
 * kind_was; a park's place in the program and its walked stack (where: a
 * return address; learned: found at an earlier park).  No-ops without
 * --record. */
void engine_rec_learned(struct engine *e, const struct model_coro *c,
			uint32_t name_was, unsigned kind_was);
void engine_rec_where(struct engine *e, const struct model_coro *c,
		      uint64_t where, uint64_t trace, bool learned);
/* The record of station's coroutine, or NULL (lock held). */
const struct model_coro *engine_rec_coro(struct engine *e, uint32_t station);
/* A harvested event, after the model took it: to the recording, with
 * what the model learned from it (a census walk's name and WHERE; a
 * suspend's learned WHERE).  name_was, kind_was: the record's before. */
void engine_rec_event(struct engine *e, const struct harvest_event *ev,
		      uint32_t name_was, unsigned kind_was);
/* After the threads stopped: the exit, if any, and the end. */
void engine_rec_stop(struct engine *e);
/* Why recording stopped early, or NULL (the UI's thread). */
const char *engine_rec_warning(struct engine *e);
/* The recorder's books for a snapshot (on = false when not recording). */
void engine_rec_snapshot(struct engine *e, struct snapshot_record *out);
bool engine_rec_destroy(struct engine *e, char *err, size_t errlen);

#endif
