/*
 * engine_internal: the engine's state and its mode table, shared by the
 * facade's files -- engine.c (lifecycle), engine_mode.c (the modes),
 * engine_harvest.c (threads), engine_query.c and engine_hot.c (what callers
 * read).  Not for use outside src/engine.
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
#include "engine/calltrace/hotstacks.h"
#include "engine/calltrace/parked.h"
#include "engine/calltrace/rotor.h"
#include "engine/calltrace/snapreader.h"
#include "engine/calltrace/traceset.h"
#include "engine/ctp/harvest.h"
#include "engine/export/jsonl.h"
#include "engine/ctp/learned.h"
#include "engine/ctp/model.h"
#include "engine/heph/recorder.h"
#include "engine/ppt/perfctr.h"
#include "engine/ppt/pptagent.h"
#include "engine/ppt/pptfind.h"
#include "engine/target/fcsave.h"
#include "engine/target/procmem.h"
#include "engine/ctp/region.h"
#include "engine/symbols/namecache.h"
#include "engine/symbols/symtab.h"

#define ENGINE_MAX_CLIENTS 64

struct framenames;
struct engine_rp;
struct output;
struct engine;

/*
 * What differs between the engine's modes -- launch (start the target on a
 * region we create), observe (borrow another's region), attach (a running
 * process, through its ppt buffers), replay (a recording, no threads) and
 * serve (a region for a probe in this very process: tests, benchmarks):
 * one const table (engine_mode.c) instead of tests of the mode.
 */
struct engine_mode {
	const char *name;
	/* Open what the mode reads: a region, or a recording. */
	bool (*create)(struct engine *e, char *err, size_t errlen);
	/* Start the target (launch), take the process (attach) and the
	 * threads (live modes). */
	bool (*start)(struct engine *e, char *err, size_t errlen);
	/* After the stop flag is set: join the threads, drain, end. */
	void (*stop)(struct engine *e);
	/* Everything create made; false when an output file failed. */
	bool (*destroy)(struct engine *e);
	void (*snapshot)(struct engine *e, struct snapshot *out);
	void (*history)(struct engine *e, struct snapshot *out);
	void (*watch)(struct engine *e, uint64_t id);
	/* Where coroutine model_id (c: a snapshot row, or NULL) is parked. */
	size_t (*parked)(struct engine *e, uint64_t model_id,
			 const struct model_coro *c, uint64_t *frames,
			 size_t max, uint64_t *trace_id);
};

/* The mode cfg asks for (engine_mode.c). */
const struct engine_mode *engine_mode_of(const struct engine_config *cfg);

/*
 * The engine's CallTrace side (engine_calltrace.c rotates, engine_hot.c
 * answers).  The rotor is used by one thread at a time: the harvest
 * thread, then the caller of engine_stop after it joined.  Everything
 * under hot_lock is what other threads read.
 */
/* Samples walked by the engine (engine_samples.c), on the samples thread;
 * under `lock`: walked[], fill, st, ring_st, failed, error. */
struct engine_samples_walk_stats {
	uint64_t cfi;	   /* stacks from the CFI walk of the copy */
	uint64_t spliced;  /* ... with the handler's frame walk spliced on */
	uint64_t fp;	   /* the handler's frame walk alone */
	uint64_t overflow; /* samples not kept: the traceset was full */
	uint64_t walk_ns;  /* CLOCK_MONOTONIC spent walking them */
};

struct snapring;
struct samples_walk_scratch {
	struct engine *e;
	uint64_t frames[CT_MAX_FRAMES];
};

struct engine_samples {
	struct snapring *ring; /* NULL: no snapshot ring */
	bool inited, running;
	pthread_t thread;
	_Atomic bool stop;
	/* The samples thread's (its caller's after the join). */
	bool dead; /* the ring faulted */
	struct samples_walk_scratch scratch;
	pthread_mutex_t lock;	   /* a leaf */
	struct traceset walked[2]; /* walked[fill] is being filled */
	unsigned fill;
	struct engine_samples_walk_stats st;
	struct snapreader_stats ring_st; /* as the last poll read them */
	bool failed;
	char error[256];
};

struct engine_ct {
	struct rotor *rotor; /* NULL: no CallTrace region */
	struct engine_samples samples;
	pthread_mutex_t hot_lock;
	/* Under hot_lock. */
	struct hotstacks *hot;
	struct parked *parked;
	struct framenames *names;
	struct rotor_stats rs; /* copied after each rotation */
	struct hot_stack *top; /* engine_hot_stacks' scratch, top_cap rows */
	size_t top_cap;
	bool failed; /* SIGBUS in the mapping: rotor abandoned */
	char warning[256];
	/* A process other than the target writes here too (a child, an
	 * exec'd image's child): its stacks are not in the target's
	 * mappings, so stored and sampled stacks are no longer checked
	 * against them (engine_ct_keep).  Set by the harvest thread at the
	 * first such station. */
	atomic_bool others;
	/* Rotating thread only. */
	bool dead; /* its copy of failed */
	uint64_t next_check, last_rotate;
	uint64_t active_mark, dropped_mark; /* as the last rotation left */
	/* Suspends harvested with a CallTrace id the last rotation did not
	 * preserve, and their count when it listed the ids: such a park
	 * asks for a rotation like a put (its stack may be only in the
	 * union before, which only the next rotation still reads). */
	uint64_t parks, parks_mark;
	uint64_t *preserve; /* sorted unique ids parked at */
	size_t npreserve, cap_preserve;
	size_t npreserve_ct; /* ... of which CallTrace ids (the first) */
	uint64_t *seen;	     /* open-addressing set for the dedup */
	size_t seen_slots;
	uint64_t *owner; /* per union entry: the model id its tag names */
	size_t cap_owner;
	/* Stack ids coroutines died parked at since the last rotation
	 * (engine lock; at most ENGINE_CT_DEAD_MAX): preserved by it once
	 * more, so that a recording still finds the stack a coroutine parked
	 * at before it died -- the probe stored it and the rotation had not
	 * read it yet, or the engine walked it (a program's exit, a kill at
	 * the end, close its parked coroutines). */
	uint64_t *dead_parked;
	size_t ndead_parked;
};

#define ENGINE_CT_DEAD_MAX 4096

/*
 * Attach mode's ppt side (engine_ppt.c).  The agents are polled by the ppt
 * thread under `lock`; readers copy under it too.
 */
struct engine_ppt {
	bool enabled;
	pid_t pid;
	int pidfd; /* -1: liveness by polling /proc */
	struct procmem pm;
	struct pptfind_result found;
	struct pptagent *agents; /* found.n of them; state DETACHED = failed */
	char (*errors)[256];	 /* per agent: why it is not attached */
	size_t n;
	struct perfctr_set ctr;
	struct corotop_rendezvous rdv;
	pthread_mutex_t lock;
	pthread_t thread;
	bool running;
	bool gone;
	uint64_t tick_at;
	uint64_t *tick_delivered; /* per agent, at tick_at */
	double *fps;
	char warning[512];
};

#define ENGINE_UNWIND_PROCS 8

/* The Boost.Context layout a process maps (engine/target/fcsave.h), read
 * from its maps when first needed and again at most every
 * ENGINE_UNWIND_LAYOUT_NS (the walker thread's). */
struct engine_fcsave {
	pid_t pid;			    /* 0: not read */
	const struct fcsave_layout *layout; /* NULL: none known */
	uint64_t read_ns;
};

/* Walks of parked stacks made while watching (engine_unwind.c): its own
 * thread's, the fields below `jobs` under the engine lock. */
struct engine_unwind_job;
struct engine_unwind_state {
	pthread_t thread;
	pthread_mutex_t mu;  /* stop, and the thread's wait */
	pthread_cond_t wake; /* signalled at stop */
	bool inited, running, stop;
	bool prime; /* load the target's symbols now (engine_unwind_prime) */
	struct engine_unwind_job *jobs; /* a tick's walks (the thread's) */
	struct procmem pm; /* launch mode's, opened when first needed */
	bool pm_open, pm_failed;
	/* The target's child processes' memories, for their coroutines'
	 * walks (opened when first needed; the oldest replaced). */
	struct engine_unwind_proc {
		pid_t pid; /* 0: unused */
		struct procmem pm;
		struct framecheck *fc; /* its frames' check, or NULL */
		struct engine_fcsave fcs;
		bool open;
		uint64_t used;
	} procs[ENGINE_UNWIND_PROCS];
	uint64_t procs_used;
	unsigned char *copy; /* the parked window a walk copies (thread's) */
	uint64_t *done_ts;   /* per record: the park last walked (state_ts) */
	uint64_t *where_ts;  /* per record: the park whose WHERE a walk set */
	uint32_t cap;
	uint32_t cursor; /* round robin over the park marks */
	uint64_t walks;	 /* walks believed */
	uint64_t raced;	 /* parks that ended before their copy */
	/* Walks believed, by where they started: the registers Boost's
	 * switch saved (fcsave), the probe's because the switch saved none
	 * for that park, the probe's because the saved ones were refused
	 * (a layout not checked, or fcsave_check). */
	uint64_t from_saved, from_probe, saved_refused;
	struct engine_fcsave fcs; /* the target's */
	/* (coroutine, switch address) -> the program frame its walk found,
	 * shown for the parks too short to walk (engine/ctp/learned.c). */
	struct learned learned;
};

/* The processes the traced program runs as (engine_procs.c), under the
 * engine lock. */
struct engine_proc {
	uint32_t station; /* its process station */
	uint32_t pid;
	uint64_t image;
	char name[CTP_STX_NAME_LEN];
	int pidfd; /* -1: none (the target, or no pidfd_open) */
	bool gone; /* ended, or its image replaced by an exec */
	/* Its interposer's counts: contexts it could not track, switches
	 * made where it could not see them. */
	struct harvest_interposer counts;
};

struct engine_procs {
	struct engine_proc *p;
	size_t n, cap;
};

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
	struct engine_ct ct;   /* CallTrace rotation and hot stacks */
	struct engine_ppt ppt; /* attach mode */
	struct engine_unwind_state unwind; /* parked stacks walked */
	struct engine_procs procs;	   /* processes seen (lock) */
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
	_Atomic uint64_t uds_bytes; /* relaxed statistic: orders nothing */
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
/* The engine's clock: CLOCK_MONOTONIC, stopped at the target's exit. */
uint64_t engine_now(struct engine *e);
/* The target's exit was seen: stop the clock (under e->lock). */
void engine_mark_exit(struct engine *e);
void engine_tick(struct engine *e);
void engine_kick(struct engine *e);

/* The live modes' operations (engine.c, engine_query.c), shared by
 * launch, observe and attach in the mode table. */
bool engine_live_create(struct engine *e, char *err, size_t errlen);
bool engine_live_start(struct engine *e, char *err, size_t errlen);
void engine_live_stop(struct engine *e);
bool engine_live_destroy(struct engine *e);
/* The names thread (or not: cfg.names_later), for engine_create. */
struct namecache *engine_names_create(struct engine *e);
void engine_live_snapshot(struct engine *e, struct snapshot *out);
void engine_live_history(struct engine *e, struct snapshot *out);
void engine_live_watch(struct engine *e, uint64_t id);
size_t engine_live_parked(struct engine *e, uint64_t model_id,
			  const struct model_coro *c, uint64_t *frames,
			  size_t max, uint64_t *trace_id);
bool engine_replay_create(struct engine *e, char *err, size_t errlen);

/* engine_unwind.c: a parked coroutine's stack walked in the memory of its
 * process (pm; pid 0: the target) from where its probe saved it (CFI
 * first, with that process's symbols; frame records else),
 * at most max (<= ENGINE_UNWIND_MAX) frames, each one a return address
 * into that process's code (fc: framecheck.h; the walk kept counts its
 * stop there), with its program frames marked; 0 when the stack is not
 * declared.  Without `wait`, *busy when
 * the symbol table was busy (nothing walked: ask again later). */
#define ENGINE_UNWIND_MAX 64
struct stackwalk_start;
struct framecheck;
/* A copy of the stack's top taken at once ([at, at + len)), which the
 * walk reads before the target's memory; *live (when not NULL) says
 * whether it read past it (the park must then still be the same after). */
struct engine_unwind_copy {
	uint64_t at;
	size_t len;
	const unsigned char *bytes;
	bool live;
};
size_t engine_unwind(struct engine *e, struct procmem *pm, pid_t pid,
		     struct framecheck *fc, const struct stackwalk_start *s,
		     uint64_t *frames, size_t max, bool wait,
		     struct symtab_unwound *marks, bool *busy,
		     struct engine_unwind_copy *copy);

/* engine_doorbell.c: connect to pid's doorbell (corotop/ppt.h) and hang
 * up, so that a program in which nothing transitions notices corotop -p
 * at once.  True when a listener of pid's answered; false when there is
 * none (an older probe, another network namespace): the probe then
 * attaches at its next transition. */
bool engine_doorbell_ring(pid_t pid);

/* Walk the stacks of coroutines parked a while, a few per call (engine
 * lock held, harvest thread); free what that kept. */
/* engine_procs.c: a process station opened (the sink's process callback,
 * lock held); once a tick, processes that ended (lock held); the list in
 * a snapshot (lock held); at destroy. */
void engine_on_process(struct engine *e, uint32_t station,
		       const struct harvest_sink *sink);
void engine_procs_tick(struct engine *e, const struct harvest_sink *sink);
void engine_procs_snapshot(struct engine *e, struct snapshot *out);
/* SIGTERM to the program's processes other than the target that have not
 * ended (corotop ends the target: they are the program too). */
void engine_procs_terminate(struct engine *e);
void engine_procs_finish(struct engine *e);

/* The walks of one tick (engine lock not held by the caller); returns how
 * many it picked (parks new since the last tick). */
unsigned engine_unwind_parked(struct engine *e, uint64_t now);
/* Ask the walker's thread to load the target's symbols now (symtab_prime),
 * off the caller's thread; a no-op when it does not run. */
void engine_unwind_prime(struct engine *e);
/* The thread that makes them every tick while watching; stop joins it. */
bool engine_unwind_start(struct engine *e, char *err, size_t errlen);
void engine_unwind_stop(struct engine *e);
void engine_unwind_finish(struct engine *e);

/* engine_census.c: a census event (a coroutine found at a late attach)
 * into the model, with its parked stack walked in the target when it is
 * parked; the stack's id (model_park'ed), or 0.  Engine lock held. */
uint64_t engine_census(struct engine *e, const struct harvest_event *ev);

/* engine_calltrace.c: lifecycle (create before the target starts) and
 * the rotation cadence, called from the harvest loop. */
bool engine_ct_create(struct engine *e, char *err, size_t errlen);
void engine_ct_destroy(struct engine *e);
void engine_ct_unlink(const struct engine *e);
void engine_ct_poll(struct engine *e, uint64_t now);
/* One last rotation after the threads stopped. */
void engine_ct_final(struct engine *e);
/* The model id each entry's tag names (0: none), in ct.owner (engine lock
 * held). */
uint64_t *engine_ct_resolve(struct engine *e, const struct traceset *u);

/* engine_samples.c: the snapshot ring (only with sample_hz; after the
 * rotor) and its thread (started with the harvest, joined by _final, which
 * drains what is left); _waiting: walked stacks wait for a rotation, which
 * _ingest's into the hot stacks; _stats fills out->snapshots. */
bool engine_samples_create(struct engine *e, char *err, size_t errlen);
bool engine_samples_start(struct engine *e, char *err, size_t errlen);
void engine_samples_stop(struct engine *e);
void engine_samples_final(struct engine *e);
void engine_samples_destroy(struct engine *e);
void engine_samples_unlink(const struct engine *e);
bool engine_samples_waiting(struct engine *e);
void engine_samples_stats(struct engine *e, struct engine_calltrace_stats *out);
void engine_samples_ingest(struct engine *e, uint64_t now);

/* engine_ppt.c: attach mode.  create: find the buffers (before the region
 * exists: a process without any is refused early); start: attach them and
 * start the ppt thread; stop: join it; destroy: detach and free. */
bool engine_ppt_create(struct engine *e, char *err, size_t errlen);
bool engine_ppt_start(struct engine *e, char *err, size_t errlen);
void engine_ppt_stop(struct engine *e);
void engine_ppt_destroy(struct engine *e);

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
