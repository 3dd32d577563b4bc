/*
 * engine: owns a region, the target process, the harvest thread and the
 * model, and hands out snapshots.  No curses here.  See engine.c.
 *
 * This header is the facade: the UI includes it, the snapshot, the lint
 * names, convert.h and Cacheray's reader, and nothing else of the engine
 * (tests/check/layout.py).  Its types are its own -- copies the engine
 * fills from its internal ones -- so an internal header can change without
 * touching the UI; the only internal names here are opaque (declared, never
 * defined) or the public wire headers' limits.
 */
#ifndef COROTOP_ENGINE_H
#define COROTOP_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "corotop/calltrace.h"
#include "corotop/ppt.h"
#include "engine/model/lint.h"
#include "engine/model/snapshot.h"
#include "engine/attach/pptview.h"
#include "engine/stacks/hotview.h"

/* Opaque here: what event_hook sees (engine/ctp/harvest.h, for tests), a
 * ppt buffer's description (read through engine_ppt_type and friends) and
 * the recorder's books (engine/record/recorder.h, for benchmarks). */
struct harvest_event;
struct ppt_desc;
struct recorder_stats;

/* The hot-stacks aggregate's window and bounds. */
struct engine_hot_config {
	unsigned window_s;    /* weights count over the last window (30) */
	unsigned half_life_s; /* ... halved every half-life of age (10; 0:
				 no decay, a plain sliding sum) */
	uint32_t max_stacks;  /* distinct stacks kept (16384) */
	uint32_t max_coro;    /* (stack, coroutine) weights kept (65536) */
};

/* Launch mode: where the target's stdin, stdout and stderr go. */
enum engine_output {
	ENGINE_OUTPUT_INHERIT = 0, /* ours (tests, benchmarks) */
	/* Batch: its stdout and stderr to our stderr, or both appended to
	 * output_path; stdin ours.  Our stdout carries only our output. */
	ENGINE_OUTPUT_STDERR,
	/* The TUI: all three on a pty the engine creates and the caller
	 * drains (engine_target_output), and appended to output_path. */
	ENGINE_OUTPUT_CAPTURE,
};

struct engine_config {
	char *const *argv; /* launch mode: the target command */
	enum engine_output output;
	const char *output_path;      /* --output FILE, or NULL */
	int output_cols, output_rows; /* the pty's size (0: 80x24) */
	const char *shm_path;	      /* observer mode: an existing region */
	/* Attach mode (corotop -p): a running process, through its ppt
	 * buffers (engine/attach). */
	pid_t attach_pid;
	bool force_attach; /* take over buffers another agent holds */
	/* Attach: a process that publishes no ppt buffer is refused, not
	 * scanned for its contexts (engine/scan). */
	bool no_scan;
	/* Scan: never stop the target's threads, not even those that run
	 * (their registers are then unknown, and reads may be torn). */
	bool nonblocking;
	/* Core mode (corotop --core): a core file instead of a process, and
	 * the program to read its code from (NULL: the path it names). */
	const char *core_path;
	const char *core_exe;
	const char *counters;	   /* -c: perf counters per frame, or NULL */
	uint64_t ppt_block_frames; /* data block size in frames (0: default) */
	const char *ppt_buffer;	   /* attach only this buffer (NULL: all) */
	uint32_t stations;	   /* launch mode: stations to create */
	const char *jsonl_path;	   /* append every event here, or NULL */
	const char *record_path;   /* --record: a Heph trace, or NULL */
	/* Replay mode (corotop --replay): a recording instead of a target;
	 * no region, no threads (engine/replay/playback.c). */
	const char *replay_path;
	bool replay_play;    /* start playing (else paused at the start) */
	uint64_t linger_ns;  /* dead coroutines stay visible this long */
	unsigned idle_scans; /* empty scans before sleeping (N) */
	unsigned sleep_timeout_ms; /* bound on one sleep (first) */
	unsigned sleep_max_ms;	   /* bound after repeated idle timeouts */
	unsigned scan_interval_us; /* pause after a busy scan without loss */
	unsigned observer_poll_ms; /* observer mode: poll period */
	unsigned tick_ms;	   /* rate window */
	unsigned full_scan_ms;	   /* bound between full scans (dirty mode) */
	bool advertise_dirty;	   /* advertise the dirty hint (default true) */
	/* Deep ring epochs per station for corotop's probe (ctp.h), a power
	 * of two; 0 = the spec's eight slots only (default 64). */
	unsigned ring_depth;
	bool no_futex;	    /* advertise socket wakeups only (benchmarks) */
	bool no_membarrier; /* use a full fence in the probe (benchmarks) */
	/* launch mode: do not put libcorotop-preload in the target's
	 * LD_PRELOAD (--no-auto); a program that does not call the probe is
	 * then not traced. */
	bool no_auto;
	unsigned sample_hz; /* launch mode: COROTOP_SAMPLE_HZ, 0 = unset */
	/* Samples' stacks walked by the engine with CFI from the probe's
	 * stack copies (the snapshot ring); false: the handler's frame-pointer
	 * walk only (COROTOP_SNAPSHOTS=0, for comparison). */
	bool sample_snapshots;
	bool parked_stacks; /* launch mode: COROTOP_PARKED_STACKS=1 */
	/* Which stack frames are the program's (WHERE, NAME; docs/TRACING.md):
	 * comma-separated prefixes whose frames are the runtime's (of a
	 * library's or a function's name: --runtime), and of shared
	 * libraries that are the program's (--own-lib); NULL: none. */
	const char *runtime;
	const char *own_libs;
	struct lint_config lints; /* warnings computed into every snapshot */
	/* CallTrace (launch mode): the region's size, the rotation cadence and
	 * the hot-stacks aggregate (engine/stacks). */
	uint32_t ct_traces;	    /* stacks per table (65536); 0: no region */
	unsigned ct_rotate_ms;	    /* rotate this often while writers put
				       or coroutines switch (1000) */
	unsigned ct_idle_rotate_ms; /* ... and this often otherwise (10000) */
	struct engine_hot_config hot;
	/* Called on the harvest thread for every event, after the model. */
	void (*event_hook)(void *ctx, const struct harvest_event *ev);
	/* Called on the harvest thread after each rate tick (UI wakeup), and
	 * on the names thread when names arrived (names_later). */
	void (*publish_hook)(void *ctx);
	/* Name the addresses snapshots carry on a thread of the engine's:
	 * engine_snapshot never waits for the symbolizer, an address shows
	 * in hex until its name arrives, and publish_hook says when (the
	 * TUI).  Else engine_snapshot names them before it returns (batch
	 * output).  A replay's names are a table lookup: always at once. */
	bool names_later;
	/* Tests: runs on the harvest thread before every pass, so a test can
	 * hold the harvester still (and lap it) deterministically. */
	void (*pass_hook)(void *ctx);
	void *hook_ctx;
};

/* Fills the defaults documented in docs/ARCHITECTURE.md. */
void engine_config_defaults(struct engine_config *cfg);

struct engine_stats {
	uint64_t sleeps;      /* times the engine went to sleep */
	uint64_t futex_wakes; /* sleeps ended by a wake */
	uint64_t uds_bytes;   /* wake bytes received on the socket */
	uint64_t timeouts;    /* sleeps ended by the bound */
	uint64_t scans;
	bool asleep; /* waiting on the futex right now (snapshots say
		      * "asleep" only when the rate agrees) */
};

struct engine;

struct engine *engine_create(const struct engine_config *cfg, char *err,
			     size_t errlen);
/* Start the target (launch mode) and the threads. */
bool engine_start(struct engine *e, char *err, size_t errlen);
void engine_snapshot(struct engine *e, struct snapshot *out);
void engine_stats(struct engine *e, struct engine_stats *out);
/* Keep the full history of model record `id` in snapshots (0 stops),
 * starting with what is still in its station's ring. */
void engine_watch(struct engine *e, uint64_t id);
/* Name addresses from process `pid`'s files (the launched target's by
 * default; 0: none, addresses stay hex). */
void engine_symbolize_pid(struct engine *e, pid_t pid);
/* Refresh only out's history part (e.g. while the display is paused). */
void engine_history(struct engine *e, struct snapshot *out);
/* Start every rate window over now. */
void engine_reset_rates(struct engine *e);
/* Replace the lint thresholds and switches; the next snapshot uses them. */
void engine_set_lints(struct engine *e, const struct lint_config *c);

/* ---- CallTrace hot stacks (engine/stacks) ----
 * All of these copy out under the engine's hot lock and may be called from
 * any thread while the harvest thread rotates; without a CallTrace region
 * (observer mode, ct_traces 0) they return nothing. */

void engine_calltrace_stats(struct engine *e,
			    struct engine_calltrace_stats *out);
/* Samples lost on the way: puts the writers dropped, and snapshot-ring
 * tickets lapped, torn, skipped or bad (weight 1 each). */
uint64_t engine_calltrace_lost(const struct engine_calltrace_stats *s);

/* The top `max` stacks of every coroutine (model_id 0) or of one, sorted
 * and weighed by `order`.  Returns how many. */
size_t engine_hot_stacks(struct engine *e, uint64_t model_id,
			 enum engine_hot_order order,
			 struct engine_hot_stack *out, size_t max);

/* "function", "line", "address"; NULL when out of range. */
const char *engine_hot_by_name(enum engine_hot_by by);
/* The granularity named s (as engine_hot_by_name); false when none. */
bool engine_hot_by_parse(const char *s, enum engine_hot_by *out);

/*
 * The top `max` rows of every coroutine's (model_id 0) or one's stacks
 * merged `by` granularity, sorted and weighed by `order` (ties: the other
 * weight).  Of the list's basis over the same set, 0..100:
 *   self_pct   samples whose whole stack is this row's (at `by`);
 *   total_pct  samples with the row's leaf function (line, address)
 *              anywhere on the stack, each sample once even when it
 *              recurses: the inclusive time of the leaf.
 * Merged from the heaviest ENGINE_HOT_MERGE_STACKS stacks (the rest, a
 * long tail, count in the basis only).  Returns how many.
 */
size_t engine_hot_rows(struct engine *e, uint64_t model_id,
		       enum engine_hot_order order, enum engine_hot_by by,
		       struct engine_hot_stack *out, size_t max);

/* Frame addr (leaf: innermost) as a row at `by` shows it: the function;
 * "function (file.c:LINE)" (callers "function:LINE"); by address, as
 * engine_frame_name full for the leaf, the function for callers.
 * Returns buf. */
const char *engine_hot_frame_label(struct engine *e, uint64_t addr, bool leaf,
				   enum engine_hot_by by, char *buf, size_t n);

/* The tree of the window's stacks (every coroutine's, or model_id's):
 * frames merged by function name (by_function) or by address, children
 * heaviest first.  At most max nodes; returns how many. */
size_t engine_hot_tree(struct engine *e, uint64_t model_id, bool by_function,
		       struct hot_node *out, size_t max);

/* Where coroutine model_id is parked: the frames (innermost first) of the
 * stack its last suspend captured, and that trace's id in *trace_id (when
 * not NULL).  0 when it is running, dead, or nothing was captured. */
size_t engine_parked_stack(struct engine *e, uint64_t model_id,
			   uint64_t *frames, size_t max, uint64_t *trace_id);
/* The same for a snapshot's row c (its id and slot): O(1) lookup, for
 * printing every row of a snapshot (engine_query.c). */
size_t engine_parked_stack_of(struct engine *e, const struct model_coro *c,
			      uint64_t *frames, size_t max, uint64_t *trace_id);

/* Forget every hot-stack weight (the UI's z); parked stacks stay. */
void engine_hot_zero(struct engine *e);
/* A new window and decay half-life (0: none); window weights start over. */
void engine_hot_window(struct engine *e, unsigned window_s,
		       unsigned half_life_s);

/* Frame `addr` (leaf: innermost) for people: full "func+0xOFF (file:LINE)"
 * or just the function; names kept from while the target lived, else
 * looked up now, else hex.  Returns buf. */
const char *engine_frame_name(struct engine *e, uint64_t addr, bool leaf,
			      bool full, char *buf, size_t n);

/* Write every stack's total since start or zero (model_id 0), or one
 * coroutine's, to path atomically.  False with a message in err. */
bool engine_export(struct engine *e, enum engine_export_format fmt,
		   const char *path, uint64_t model_id, char *err,
		   size_t errlen);

/* ---- ppt (engine/attach): attach mode's buffers ----
 * Copies under the engine's ppt lock; any thread. */

void engine_ppt_info(struct engine *e, struct engine_ppt_info *out);
/* The buffers, in pptfind's order.  Returns how many (at most max). */
size_t engine_ppt_buffers(struct engine *e, struct engine_ppt_buffer *out,
			  size_t max);
/* Buffer i's description; immutable for the engine's life (NULL: none). */
const struct ppt_desc *engine_ppt_desc(struct engine *e, size_t i);
/* What a description says: the bytes of one frame, its frame types, and
 * type t's name with its columns' (c < *ncolumns) names; the strings live
 * as long as the description. */
uint32_t engine_ppt_frame_size(const struct ppt_desc *d);
size_t engine_ppt_types(const struct ppt_desc *d);
const char *engine_ppt_type(const struct ppt_desc *d, size_t t,
			    size_t *ncolumns);
const char *engine_ppt_column(const struct ppt_desc *d, size_t t, size_t c);
/*
 * Buffer i's frames at delivery positions from `from` on, oldest first, at
 * most max: their bytes (frame_size each) into bytes, their meta into meta.
 * *next is the position after the last one copied (pass it as `from` next
 * time); *skipped counts positions from `from` that are no longer kept.
 */
size_t engine_ppt_frames(struct engine *e, size_t i, uint64_t from, void *bytes,
			 struct engine_ppt_frame *meta, size_t max,
			 uint64_t *next, uint64_t *skipped);

/*
 * Frame bytes of a buffer described by d, decoded: its type's name in
 * *type (NULL when the frame's discriminator names no type) and up to max
 * members, formatted for people (json false: "1.5ms", "42") or as JSON
 * values (json true).  Returns how many cells were filled.
 */
size_t engine_ppt_cells(const struct ppt_desc *d, const void *frame, bool json,
			const char **type, struct engine_ppt_cell *out,
			size_t max);

/* -c LIST checked without a process: false, with why, for a name that is
 * not a counter corotop knows (a usage error). */
bool engine_ppt_counters_valid(const char *list, char *why, size_t n);

/* --runtime and --own-lib checked (either may be NULL): false, with why
 * (naming the option), for a list that does not parse. */
bool engine_runtime_valid(const char *runtime, const char *own_libs, char *why,
			  size_t n);

/* ---- corotop -p PID --list-buffers: a process's ppt buffers, read
 * without writing a byte to it (engine/attach) ---- */

bool engine_list_buffers(pid_t pid, struct engine_buffer_list *out, char *err,
			 size_t errlen);
void engine_buffer_list_finish(struct engine_buffer_list *l);

/* Resize buffer i's data block (dynamic layout only). */
bool engine_ppt_resize(struct engine *e, size_t i, uint64_t nframes, char *err,
		       size_t errlen);

/* ---- replay (engine/replay/playback.c): --replay's position and clock ----
 * The position moves at `speed` x wall time while playing and pauses at
 * the end; snapshots are the recording at the position. */

#define ENGINE_REPLAY_SPEED_MIN (1.0 / 64)
#define ENGINE_REPLAY_SPEED_MAX 1024.0

struct engine_replay_info {
	uint64_t pos;	   /* trace ns (the recording's own clock) */
	uint64_t t0, t1;   /* first and last moments */
	uint64_t ran;	   /* the last moment the program still ran ("end":
			      past it, only the deaths of its end) */
	uint64_t epoch_ns; /* wall clock at trace time 0, or 0: unknown */
	double speed;
	bool playing;
	bool ours;	   /* written by corotop --record */
	bool truncated;	   /* the file ends inside a packet */
	int64_t pid;	   /* the traced pid, or -1 */
	size_t events;	   /* event packets */
	size_t coroutines; /* over the whole recording */
	size_t problems;   /* packets that could not be read */
	char problem[160]; /* the first, with its offset, or "" */
	char path[512];
	char command[256]; /* what was traced, or "" */
};

/* False (out zeroed) when the engine is not replaying. */
bool engine_replay_info(struct engine *e, struct engine_replay_info *out);
void engine_replay_play(struct engine *e, bool play);
/* Clamped to [ENGINE_REPLAY_SPEED_MIN, ENGINE_REPLAY_SPEED_MAX]. */
void engine_replay_speed(struct engine *e, double speed);
/* To trace time t (clamped to the recording); playing goes on from there. */
void engine_replay_seek(struct engine *e, uint64_t t);
/* Pause and move to the next (dir > 0) or previous transition: of model
 * record `id`, or of any coroutine (0).  Returns the new position. */
uint64_t engine_replay_step(struct engine *e, uint64_t id, int dir);

/* Why the launched target's context switches are not traced without
 * code changes (a static or setuid program, a sanitizer), or "". */
const char *engine_autotrace_note(const struct engine *e);

/*
 * Launch mode with ENGINE_OUTPUT_CAPTURE: the target's output, read on one
 * thread of the caller's (the TUI's loop), and kept as its last lines
 * (engine/launch/output.h).  Its descriptor to poll for reading, -1 when
 * there is none or it ended; drain reads what is there without waiting
 * and returns the lines it completed.
 */
int engine_output_fd(struct engine *e);
size_t engine_output_drain(struct engine *e);
/* The longest line kept; a longer one is kept as several. */
#define ENGINE_OUTPUT_LINE_MAX 1024
struct engine_output_lines {
	bool on;    /* the output is captured */
	bool ended; /* its end was read */
	/* Lines first .. total-1 are kept; line `total` is the one being
	 * written, when partial. */
	uint64_t first, total;
	bool partial;
	const char *file_error; /* the --output file failed, or "" */
};
void engine_output_lines(struct engine *e, struct engine_output_lines *out);
/* Line n of them, printable text only; "" when not kept. */
const char *engine_output_line(struct engine *e, uint64_t n);

/* Collect the target's exit status if it exited (call on SIGCHLD). */
bool engine_reap(struct engine *e);
pid_t engine_target_pid(const struct engine *e);

/* One OS thread of the target, for the table's meters. */
struct engine_thread {
	uint64_t tid;
	double cpu_pct; /* of one CPU since the last call; < 0: not yet */
	char comm[16];
};
/* The live target's threads in tid order, up to max, each with its CPU
 * share since the previous call (procfs); 0 without one (observer,
 * replay, exited).  One caller thread: the interface's. */
size_t engine_threads(struct engine *e, struct engine_thread *out, size_t max);
/* SIGTERM the target, then SIGKILL after grace_ms; reaps it. */
void engine_terminate_target(struct engine *e, unsigned grace_ms);
/* Paths of the region and socket (for messages and tests). */
const char *engine_shm_path(const struct engine *e);
const char *engine_sock_path(const struct engine *e);
/* Remove region files; async-signal-safe. */
void engine_unlink(const struct engine *e);
/* Stop the threads and drain a last scan; snapshots stay available. */
void engine_stop(struct engine *e);
/* Stop threads, drain a last scan, flush the JSONL log and the recording,
 * remove files.  Returns false if either could not be written completely
 * (engine_output_error then says which and why). */
bool engine_destroy(struct engine *e);
/* Why the last engine_destroy returned false ("" if it did not). */
const char *engine_output_error(void);

/* --record: the recording's statistics (zeros without one). */
void engine_record_stats(struct engine *e, struct recorder_stats *out);

/*
 * One frame of the engine's state, as a front-end draws it: the snapshot,
 * the statistics, the ppt buffers' states, the CallTrace statistics and
 * the top hot stacks -- one call (engine_frame_take) instead of six, the
 * same for batch output and corotop serve.  The frame's arrays are reused
 * from take to take.
 */
struct engine_frame {
	struct snapshot snap;
	struct engine_stats stats;
	struct engine_ppt_info ppt;
	struct engine_ppt_buffer buf[ENGINE_PPT_MAX_BUFFERS];
	size_t nbuf;
	struct engine_calltrace_stats ct;
	struct engine_hot_stack *hot; /* hot_max of them (NULL: none) */
	size_t nhot;
	/* What take asks for the hot stacks: at most hot_max, every
	 * coroutine's by total weight; merged into rows at hot_by
	 * (engine_hot_rows), or the stacks as kept (engine_hot_stacks). */
	size_t hot_max;
	bool hot_merged;
	enum engine_hot_by hot_by;
};

/* A frame with room for hot_max hot stacks; false: out of memory. */
bool engine_frame_init(struct engine_frame *f, size_t hot_max, bool merged,
		       enum engine_hot_by by);
void engine_frame_finish(struct engine_frame *f);
/* The engine's state now, into f. */
void engine_frame_take(struct engine *e, struct engine_frame *f);

#endif
