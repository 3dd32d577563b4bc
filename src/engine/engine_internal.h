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
#include "engine/model/model.h"
#include "engine/record/recording.h"
#include "engine/target/procmem.h"
#include "engine/ctp/region.h"
#include "engine/names/namecache.h"
#include "engine/stacks/stacks.h"
#include "engine/symbols/symtab.h"

#define ENGINE_MAX_CLIENTS 64

struct playback;
struct output;
struct engine;

struct engine {
	struct engine_config cfg;
	const struct engine_mode *mode;
	struct region region;
	struct harvest harvest;
	struct model model;
	struct jsonl jsonl;
	struct recording *rec; /* --record, or NULL */
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
	/* Attach mode on a process that publishes no ppt buffer: its
	 * contexts, scanned in its memory (engine/scan), else NULL.  The
	 * harvest thread's. */
	struct scanner *scanner;
	/* Core mode: the core file (engine_core.c) and its memory, which
	 * the scanner and the census walks read; else NULL. */
	struct corefile *core;
	struct procmem core_pm;
	/* ... its probe's registry, when one was read (lock). */
	struct core_reg_stats {
		bool read;
		uint32_t live, unread;
	} core_reg;
	struct engine_procs procs; /* processes seen (lock) */
	/* The processes other than the target whose coroutines were seen,
	 * numbered for names (snapshot_space - 1; append-only, lock). */
	uint32_t spaces[SNAPSHOT_SPACES_MAX];
	uint32_t nspaces;
	struct playback *rp;  /* replay mode (engine_mode.c), or NULL */
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
	/* How long the last snapshot held `lock` (ns; lock): what a harvest
	 * pass may wait for a refresh (bench/serve_scrape). */
	uint64_t snapshot_lock_ns;
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
/* engine_scan.c: attach mode without buffers (and core mode's one
 * scan).  Make the scanner (before the harvest thread starts). */
bool engine_scanner_create(struct engine *e, char *err, size_t errlen);
/* One scan of the target's memory (or of the core's), into the model. */
void engine_scan_memory(struct engine *e);
/* The harvest loop's turn, when a refresh is due: a whole pass too when
 * *next_pass has come (then set again), then a refresh; when the next
 * refresh is due. */
uint64_t engine_scan_step(struct engine *e, uint64_t *next_pass);
/* Core mode: what the core says of the process (engine_core.c). */
void engine_core_info(struct engine *e, struct snapshot_core *out);
/* engine_clock.c: the engine's clock: CLOCK_MONOTONIC, stopped at the
 * target's exit. */
uint64_t engine_now(struct engine *e);
/* The target's exit was seen: stop the clock (under e->lock). */
void engine_mark_exit(struct engine *e);
/* The same, the clock stopped at ns (a core's last moment known). */
void engine_mark_exit_at(struct engine *e, uint64_t ns);
/* A census event into the model (lock held): what a late attach's
 * census sends (engine_harvest.c). */
struct harvest_event;
void engine_census_event(struct engine *e, const struct harvest_event *ev);
void engine_tick(struct engine *e);
void engine_kick(struct engine *e);
/* engine_harvest.c: the pause after a busy pass (interval_us, or longer
 * when deep rings' slack allows: fill is the fullest station's share of
 * its ring, 1/65536ths, over span_ns; shallow: a station without one). */
uint64_t engine_slack_us(uint64_t interval_us, bool deep, uint32_t fill,
			 bool shallow, uint64_t span_ns);

/* engine_mode.c: replay mode (engine/replay/playback.c does the work):
 * create opens cfg.replay_path; the mode table's replay entries stand in
 * for their live counterparts. */
bool engine_rp_create(struct engine *e, char *err, size_t errlen);

/* --record (engine/record/recording.c does the work; the root calls it
 * with e->rec, a no-op without --record): open the file with what the
 * recording asks of the engine (engine_harvest.c). */
bool engine_rec_create(struct engine *e, char *err, size_t errlen);

#endif
