/*
 * engine_mode: the mode table's interface -- what differs between the
 * engine's modes, the mode a configuration asks for, and the live modes'
 * operations the table shares (engine_mode.c holds the table).  Not for
 * use outside src/engine.
 */
#ifndef COROTOP_ENGINE_MODE_H
#define COROTOP_ENGINE_MODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct engine;
struct engine_config;
struct model_coro;
struct snapshot;

/*
 * What differs between the engine's modes -- launch (start the target on a
 * region we create), observe (borrow another's region), attach (a running
 * process, through its ppt buffers), replay (a recording, no threads) and
 * in-process (a region for a probe in this very process: tests,
 * benchmarks):
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
/* The core mode's (engine_core.c). */
bool engine_core_create(struct engine *e, char *err, size_t errlen);
bool engine_core_start(struct engine *e, char *err, size_t errlen);
bool engine_core_destroy(struct engine *e);

#endif
