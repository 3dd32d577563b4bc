/*
 * model: what corotop knows about the target's coroutines, one record per
 * coroutine plus global counters.  See model.c.
 */
#ifndef COROTOP_MODEL_H
#define COROTOP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/model/coro.h"
#include "engine/model/runmap.h"

/* Shortest interval model_tick computes rates over. */
#define MODEL_RATE_MIN_NS 50000000ull

/* Full transition history of the one coroutine the UI is looking at. */
#define MODEL_WATCH_MAX 4096

struct model_watch {
	uint64_t id;		       /* model id watched, 0 = none */
	struct model_transition *ring; /* MODEL_WATCH_MAX, allocated once */
	uint32_t head;		       /* oldest */
	uint32_t count;
};

struct model {
	struct model_coro *coro; /* cap records; in_use marks the live ones */
	uint64_t *sw_mark; /* per record: switches at the last rate tick */
	/* per record: CallTrace id of the stack it is parked at (set by the
	 * suspend that carried one, cleared by the next transition and at
	 * death), 0 = none.  The engine preserves these across rotations. */
	uint64_t *parked;
	/* per record: where the coroutine's struct corotop_coro is in the
	 * target (the station's ext.coro; model_occupant), 0 = unknown. */
	uint64_t *coro_at;
	/* A bit per record: suspended since the walker last took it
	 * (model_take_parks): what it walks, without scanning every record
	 * (engine/stacks/walks.c). */
	uint64_t *parks;
	/* Per record: the value of `gen` when it last changed in a way a
	 * snapshot's copy shows (model_touch): a field of its record, its
	 * birth or reclaim, or its learned WHERE (engine/stacks/walks.c).
	 * A copy taken at generation g is stale for exactly the records
	 * whose gen_of is above g (snapcopy.c). */
	uint64_t *gen_of;
	uint64_t gen;
	uint64_t uid; /* this model's, unique in the process (snapcopy.c) */
	/* The records' names (struct model_coro.name); NULL: none (out of
	 * memory at init).  Snapshots read it (snapshot_name). */
	struct namepool *names;
	uint32_t cap;
	uint32_t used;	/* one past the highest record ever handed out */
	uint32_t *free; /* stack of unused record indexes */
	uint32_t nfree;
	uint32_t *by_station; /* station -> record, or MODEL_NONE */
	uint32_t stations;
	uint64_t next_id;
	uint64_t linger_ns; /* how long dead coroutines stay visible */
	uint64_t tick_ts;
	uint64_t tick_events;
	struct model_totals t;
	struct model_watch watch;
	struct runmap running; /* thread -> the record last resumed on it */
};

bool model_init(struct model *m, uint32_t stations, uint64_t linger_ns);
void model_finish(struct model *m);

/* Record r changed where a snapshot's copy shows it (every model_ call
 * that writes a record does this itself; a caller that writes one
 * directly, or changes what a copy derives from it, says so). */
static inline void model_touch(struct model *m, uint32_t r)
{
	if (r < m->used)
		m->gen_of[r] = ++m->gen;
}

void model_open(struct model *m, uint32_t station, uint64_t probe_id,
		uint64_t birth_ts);
/* Who the station's coroutine is, as its station's header says: its name
 * (NAMEPOOL_TEXT_MAX bytes at most, cleaned here; "" or NULL: none) and
 * the address of its struct corotop_coro in the target (0: unknown).
 * Call after model_open. */
void model_occupant(struct model *m, uint32_t station, const char *name,
		    uint64_t coro);
/* The station's coroutine was found by a scan of memory (engine/scan),
 * unsure: not proven live.  Call after model_open. */
/* ... waiting: its runtime's lists say it waits for a notify (in a wait
 * queue, with no deadline: engine/scan/fiberwalk.c) -- what the
 * lost-wakeup lint needs of a scanned context. */
void model_found(struct model *m, uint32_t station, bool unsure, bool waiting);
/* A scanned context at station proven not to have run since `since`
 * (idle), or no longer proven (its IN-STATE then counts from now: it
 * may have run). */
void model_idle(struct model *m, uint32_t station, bool idle, uint64_t since,
		uint64_t now);
/* The process the station's coroutine lives in. */
void model_pid(struct model *m, uint32_t station, uint32_t pid);
/* The code address the station's coroutine takes its name from when the
 * probe gave none (its entry, say; 0: none), which snapshot_name shows by
 * its symbol. */
void model_name_pc(struct model *m, uint32_t station, uint64_t pc);
/* The same, with the program's function that entry was made for
 * (ctp_station_ext.made_for; 0: none), which snapshot_name shows when
 * the entry's name gives only its type. */
void model_name_made(struct model *m, uint32_t station, uint64_t pc,
		     uint64_t made_for);
/* A name the engine derived for the station's coroutine (the function a
 * runtime frame runs inlined, say), kept only when the probe gave none.
 * A name that says what a runtime made the context for (framekind_role:
 * "boost.fiber dispatcher") makes it a dispatcher too. */
void model_name_text(struct model *m, uint32_t station, const char *name);
/* The struct corotop_coro address of record `slot` (model_occupant). */
uint64_t model_coro_at(const struct model *m, uint32_t slot);
void model_event(struct model *m, uint32_t station, uint64_t ts, uint64_t tid,
		 uint64_t addr, uint64_t seq, uint64_t n, uint32_t slot,
		 bool is_active);
/* The station's coroutine is an execution context of its own (its event
 * said CTP_EPF_CONTEXT): only such coroutines are suspended by
 * implication (model.c).  Call before that event's model_event. */
void model_context(struct model *m, uint32_t station);
/* What the station's coroutine is (enum model_kind), as its probe said at
 * the open. */
void model_kind(struct model *m, uint32_t station, enum model_kind kind);
/* The station's coroutine as a late attach found it (a census event): in
 * state is_active since ts, its last transition made on tid at addr before
 * the attach.  Not a switch, and the time before ts is nobody's: no
 * interval is charged.  Call instead of model_event. */
void model_census(struct model *m, uint32_t station, uint64_t ts, uint64_t tid,
		  uint64_t addr, uint64_t seq, bool is_active);
void model_lost(struct model *m, uint32_t station, uint64_t count);
/* The station's coroutine died at `now`.  `recycled`: the station is handed
 * back for reuse (the engine knows; the model cannot), which the
 * dead-station lint reads. */
void model_close(struct model *m, uint32_t station, uint64_t now,
		 bool recycled);

/* The station's coroutine is parked at CallTrace id `trace` (0: it is not,
 * or nobody captured where).  Call after model_event. */
void model_park(struct model *m, uint32_t station, uint64_t trace);
/* The station's coroutine, suspended, is in a wait its program marked
 * long (CTP_EPF_LONG_WAIT: corotop_coro_suspend_long or _set_long_waits),
 * which the lost-wakeup lint does not flag.  Every transition (model_event,
 * model_census) and death clears the mark; call after them, with the
 * transition's flag.  Ignored unless the coroutine is suspended. */
void model_long_wait(struct model *m, uint32_t station, bool long_wait);
/* WHERE of the coroutine at station while it stays suspended: addr, the
 * first frame of the program's own code in its parked stack (its last
 * transition's address is the scheduler's). */
void model_where(struct model *m, uint32_t station, uint64_t addr);

/*
 * Up to max records suspended (by a harvested transition or a census)
 * since they were last taken, into out: round robin from record *cursor,
 * which moves on; their marks are cleared.  model_mark_park marks record r
 * again (a walk that could not be made now).
 */
uint32_t model_take_parks(struct model *m, uint32_t *cursor, uint32_t *out,
			  uint32_t max);
void model_mark_park(struct model *m, uint32_t r);

/* Record every transition of model record `id` from now on (0 stops),
 * after the `nseed` transitions in `seed` (oldest first, e.g. read back
 * from the station's ring).  False if out of memory. */
bool model_watch(struct model *m, uint64_t id,
		 const struct model_transition *seed, uint32_t nseed);
/* The watched history, oldest first: transition i of count. */
const struct model_transition *model_watch_at(const struct model *m,
					      uint32_t i);
/* Record index of model id `id`, or MODEL_NONE (a scan of every record:
 * one at a time only). */
uint32_t model_find(const struct model *m, uint64_t id);
/* The same for a record whose slot is known (a snapshot's copy carries
 * it): O(1), MODEL_NONE when that record is gone. */
uint32_t model_find_at(const struct model *m, uint64_t id, uint32_t slot);
/* The record of station's coroutine, or NULL (none, or out of range). */
const struct model_coro *model_station_coro(const struct model *m,
					    uint32_t station);

/* Start the rate windows over at `now` (the UI's z key). */
void model_reset_rates(struct model *m, uint64_t now);

/* Recompute rates and expire dead records older than linger. */
void model_tick(struct model *m, uint64_t now);

#endif
