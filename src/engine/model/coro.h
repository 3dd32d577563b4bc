/*
 * coro: one coroutine as the model keeps it and a snapshot copies it (struct
 * model_coro), one of its transitions, and the totals over all of them.
 * Data only: snapshots hand these to the UI, which includes this header
 * through snapshot.h; the model that fills them is model.h.
 */
#ifndef COROTOP_CORO_H
#define COROTOP_CORO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* No record (the model's indexes), and no station (a replayed record). */
#define MODEL_NONE UINT32_MAX

enum model_state {
	MODEL_SUSPENDED = 'S',
	MODEL_RUNNING = 'R',
	MODEL_DEAD = 'D',
};

#define MODEL_NO_SLOT UINT32_MAX

/* What a record is: one of the program's coroutines, or a context of the
 * scheduler's own -- its dispatcher, a thread's root (docs/JSON.md,
 * "kind").  The lints meant for coroutines do not judge the other two. */
enum model_kind {
	MODEL_COROUTINE = 0,
	MODEL_DISPATCHER,
	MODEL_ROOT,
};

struct model_transition {
	uint64_t ts;
	uint64_t tid;
	uint64_t addr;
	uint64_t seq;
	uint64_t n;	      /* event number on the station */
	uint32_t slot;	      /* the ring slot it was read from; MODEL_NO_SLOT
				 when not known (a recording) */
	uint64_t lost_before; /* events lost right before this one */
	uint8_t is_active;
	/* Read back from the station's ring when the watch began: a gap
	 * before it (lost_before) is events no longer in the ring, lost or
	 * overwritten since -- the ring cannot tell which. */
	uint8_t from_ring;
};

/*
 * One coroutine.  Snapshots copy these whole, 100k at a time, so the record
 * holds only what the table shows (128 bytes); the engine's bookkeeping
 * lives in side arrays of struct model, and a coroutine's recent
 * transitions are read from its station's ring when someone asks
 * (engine_watch), not kept per record.
 */
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
	double sw_per_sec;
	/* Lost since the last delivered transition (saturates at
	 * UINT32_MAX). */
	uint32_t pending_lost;
	/* The process it lives in (its station's pid; the target's when
	 * the writer did not say): a traced program's children are traced
	 * as processes of their own. */
	uint32_t pid;
	uint32_t station;
	uint32_t slot; /* index of the record in the model: stable for the
			  record's life, below every snapshot's count of
			  records ever handed out (struct model.used) */
	/* Its name: an id in the model's name pool (engine/model/namepool.h,
	 * read through snapshot_name), 0 = none.  The pool holds the name
	 * the probe gave and the code address a name can come from instead
	 * (name_pc): there is no room for those here. */
	uint32_t name;
	uint8_t warn;  /* lint mask (1u << enum lint_kind); computed on
			  snapshot copies only, always 0 in the model */
	uint8_t state; /* enum model_state */
	/* One-bit flags, and the kind's two bits, sharing the record's last
	 * two bytes (unsigned bit-fields, standard C11; the record must stay
	 * 128 bytes). */
	unsigned in_use : 1;
	unsigned recycled : 1;	/* dead, and its station went back to the
				   free list (or to a new occupant); set by
				   model_close */
	unsigned long_wait : 1; /* suspended at a suspend the program marked
				   a long wait (CTP_EPF_LONG_WAIT): the
				   lost-wakeup lint skips it; cleared by its
				   next transition (model_long_wait) */
	/* The state at the target's exit (docs/TRACING.md, "After the
	 * program exits"): a context that was running is shown dead, one
	 * parked keeps its state, frozen.  Set on snapshot copies only. */
	unsigned at_exit : 1;
	/* Its state was implied, not harvested: another coroutine resumed
	 * on the thread it was running on, so it was suspended then (its
	 * own suspend was lost).  Cleared by its next harvested
	 * transition. */
	unsigned inferred : 1;
	/* An execution context of its own (its events carry
	 * CTP_EPF_CONTEXT): one at a time runs on a thread. */
	unsigned context : 1;
	/* Running on a thread that waits in the kernel now (an event loop's
	 * root in epoll_wait): not a stall.  Set on snapshot copies only
	 * (engine_query.c, from procfs; snapshot_kernel says in what). */
	unsigned in_kernel : 1;
	/* Suspended, and WHERE (last_addr) is the program frame learned at
	 * an earlier park at the same switch address, not this park's own
	 * (engine/model/learned.c).  Set on snapshot copies only. */
	unsigned where_learned : 1;
	/* enum model_kind: what its probe said it is (CTP_STX_DISPATCHER,
	 * CTP_STX_ROOT), or a dispatcher by the role a walk found
	 * (model_name_text). */
	unsigned kind : 2;
	/* Found by a scan of a process's memory (engine/scan), not by its
	 * events: its switches and its age are not known, and IN-STATE
	 * counts from the first scan that saw it (model_found). */
	unsigned scanned : 1;
	/* ... and nothing proves it live: every word that keeps its context
	 * may be a dead frame's (ctxscan_found.unsure). */
	unsigned unsure : 1;
	/* ... and its runtime's own lists say it waits for a notify (a
	 * Boost.Fiber in a wait queue with no deadline: engine/scan/
	 * fiberwalk.c): the lost-wakeup lint judges it. */
	unsigned waiting : 1;
	/* ... or its stack was not touched since state_ts: it has not run
	 * since (engine/scan/scanner_idle.c): the lost-wakeup lint judges
	 * it. */
	unsigned idle : 1;
};

_Static_assert(sizeof(struct model_coro) == 128,
	       "snapshots copy 100k records: keep them 128 bytes");

struct model_totals {
	uint64_t events; /* census events included */
	uint64_t census; /* coroutines found at a late attach (census events) */
	uint64_t lost;
	uint64_t before_start; /* observer: gone before its first look */
	uint64_t torn;
	uint64_t untraced;
	uint64_t coroutines_seen;
	uint64_t recycled;
	uint64_t
		inferred; /* states implied (model.c, one running per thread) */
	double events_per_sec;
	uint32_t stations_allocated;
	uint32_t stations_max;
	uint32_t running, suspended, dead; /* live records by state */
};

/* Count c in t's running, suspended or dead: the one count by state the
 * model's tick, the engine's snapshot copy and replay all make. */
static inline void model_totals_count(struct model_totals *t,
				      const struct model_coro *c)
{
	if (c->state == MODEL_RUNNING)
		t->running++;
	else if (c->state == MODEL_DEAD)
		t->dead++;
	else
		t->suspended++;
}

#endif
