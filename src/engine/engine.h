/*
 * engine: owns a region, the target process, the harvest thread and the
 * model, and hands out snapshots.  No curses here.  See engine.c.
 */
#ifndef COROTOP_ENGINE_H
#define COROTOP_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "harvest.h"
#include "lint.h"
#include "snapshot.h"

struct engine_config {
	char *const *argv;	   /* launch mode: the target command */
	const char *shm_path;	   /* observer mode: an existing region */
	uint32_t stations;	   /* launch mode: stations to create */
	const char *jsonl_path;	   /* append every event here, or NULL */
	uint64_t linger_ns;	   /* dead coroutines stay visible this long */
	unsigned idle_scans;	   /* empty scans before sleeping (N) */
	unsigned sleep_timeout_ms; /* bound on one sleep (first) */
	unsigned sleep_max_ms;	   /* bound after repeated idle timeouts */
	unsigned scan_interval_us; /* pause after a busy scan without loss */
	unsigned observer_poll_ms; /* observer mode: poll period */
	unsigned tick_ms;	   /* rate window */
	unsigned full_scan_ms;	   /* bound between full scans (dirty mode) */
	bool hx_dirty;		   /* advertise the dirty hint (default true) */
	bool no_futex;	    /* advertise socket wakeups only (benchmarks) */
	bool no_membarrier; /* use a full fence in the probe (benchmarks) */
	unsigned sample_hz; /* launch mode: COROTOP_SAMPLE_HZ, 0 = unset */
	bool parked_stacks; /* launch mode: COROTOP_PARKED_STACKS=1 */
	struct lint_config lints; /* warnings computed into every snapshot */
	/* Called on the harvest thread for every event, after the model. */
	void (*event_hook)(void *ctx, const struct harvest_event *ev);
	/* Called on the harvest thread after each rate tick (UI wakeup). */
	void (*publish_hook)(void *ctx);
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

/* Collect the target's exit status if it exited (call on SIGCHLD). */
bool engine_reap(struct engine *e);
pid_t engine_target_pid(const struct engine *e);
/* SIGTERM the target, then SIGKILL after grace_ms; reaps it. */
void engine_terminate_target(struct engine *e, unsigned grace_ms);
/* Paths of the region and socket (for messages and tests). */
const char *engine_shm_path(const struct engine *e);
const char *engine_sock_path(const struct engine *e);
/* Remove region files; async-signal-safe. */
void engine_unlink(const struct engine *e);
/* Stop the threads and drain a last scan; snapshots stay available. */
void engine_stop(struct engine *e);
/* Stop threads, drain a last scan, flush the JSONL log, remove files.
 * Returns false if the JSONL log could not be written completely. */
bool engine_destroy(struct engine *e);

#endif
