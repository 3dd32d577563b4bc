/*
 * model: what corotop knows about the target's coroutines, one record per
 * coroutine plus global counters.  See model.c.
 */
#ifndef COROTOP_MODEL_H
#define COROTOP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MODEL_RECENT 8
#define MODEL_NONE UINT32_MAX

enum model_state {
	MODEL_SUSPENDED = 'S',
	MODEL_RUNNING = 'R',
	MODEL_DEAD = 'D',
};

struct model_transition {
	uint64_t ts;
	uint64_t tid;
	uint64_t addr;
	uint64_t seq;
	uint64_t n;	      /* event number on the station */
	uint64_t lost_before; /* events lost right before this one */
	uint8_t is_active;
};

struct model_coro {
	uint64_t id; /* model-unique, never reused (unlike probe_id) */
	uint64_t probe_id;
	uint64_t birth_ts;
	uint64_t state_ts; /* when the current state began */
	uint64_t dead_ts;
	uint64_t last_tid;
	uint64_t last_addr;
	uint64_t last_seq;
	uint64_t switches; /* transitions harvested */
	uint64_t lost;	   /* transitions lost */
	uint64_t run_ns;   /* closed running intervals */
	uint64_t susp_ns;  /* closed suspended intervals */
	uint64_t sw_mark;  /* switches at the last rate tick */
	double sw_per_sec;
	uint32_t station;
	uint8_t state; /* enum model_state */
	uint8_t recent_count;
	uint8_t recent_head; /* index of the oldest of recent[] */
	uint8_t in_use;
	uint8_t recycled; /* dead, and its station went back to the free list
			     (or to a new occupant); set by model_close */
	uint32_t warn;	  /* lint mask (1u << enum lint_kind); computed on
			     snapshot copies only, always 0 in the model */
	uint64_t pending_lost; /* lost since the last delivered transition */
	struct model_transition recent[MODEL_RECENT];
};

struct model_totals {
	uint64_t events;
	uint64_t lost;
	uint64_t torn;
	uint64_t untraced;
	uint64_t coroutines_seen;
	uint64_t recycled;
	double events_per_sec;
	uint32_t stations_allocated;
	uint32_t stations_max;
	uint32_t running, suspended, dead; /* live records by state */
};

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
	uint32_t cap;
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
};

bool model_init(struct model *m, uint32_t stations, uint64_t linger_ns);
void model_finish(struct model *m);

void model_open(struct model *m, uint32_t station, uint64_t probe_id,
		uint64_t birth_ts);
void model_event(struct model *m, uint32_t station, uint64_t ts, uint64_t tid,
		 uint64_t addr, uint64_t seq, uint64_t n, bool is_active);
void model_lost(struct model *m, uint32_t station, uint64_t count);
/* The station's coroutine died at `now`.  `recycled`: the station is handed
 * back for reuse (the engine knows; the model cannot), which the
 * dead-station lint reads. */
void model_close(struct model *m, uint32_t station, uint64_t now,
		 bool recycled);

/* Record every transition of model record `id` from now on (0 stops).
 * The record's last 8 transitions seed the history.  False if out of
 * memory. */
bool model_watch(struct model *m, uint64_t id);
/* The watched history, oldest first: transition i of count. */
const struct model_transition *model_watch_at(const struct model *m,
					      uint32_t i);

/* Start the rate windows over at `now` (the UI's z key). */
void model_reset_rates(struct model *m, uint64_t now);

/* Recompute rates and expire dead records older than linger. */
void model_tick(struct model *m, uint64_t now);

/* Oldest-first transition i (0 <= i < recent_count) of a record. */
const struct model_transition *model_coro_recent(const struct model_coro *c,
						 unsigned i);

#endif
