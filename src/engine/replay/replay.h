/*
 * replay: a Heph recording turned back into what the live engine shows --
 * the model of every coroutine at any moment of the recording, computed
 * directly from the intervals (no events replayed), so that a jump to any
 * time costs the same as the next frame.  See replay.c (open) and
 * replay_moment.c (a moment).
 */
#ifndef COROTOP_REPLAY_H
#define COROTOP_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/heph/hephfile.h"
#include "engine/heph/hephstacks.h"
#include "engine/model/snapshot.h"

/* One state interval of one coroutine (24 bytes). */
struct replay_iv {
	uint64_t start;
	uint64_t run_before; /* the coroutine's running ns before start */
	uint32_t ev;	     /* the event in the file (heph_file_event) */
	uint32_t running;    /* 1: running, 0: suspended */
};

/* A loss the trace reports ("lost" events), in time order. */
struct replay_lost {
	uint64_t ts;
	uint64_t count;
	uint64_t cum; /* count of this and every earlier one (same list) */
};

/* A birth corotop recorded (corotop_birth). */
struct replay_birth {
	uint64_t sub, ts;
	uint64_t id;	/* corotop's id for it, 0: none */
	uint64_t death; /* its corotop_death (it never ran), 0: none */
	uint32_t name;	/* its corotop_name in r->names, 0: none */
	uint32_t pid;	/* its corotop_coro_pid, 0: the target's */
	bool used;	/* a birth that owns intervals (rp_emit) */
	/* What corotop found later (corotop_named, corotop_kind): its names
	 * r->named[named .. named + nnamed), each from its time on, and its
	 * kind (enum model_kind) from kind_ts on. */
	uint32_t named, nnamed;
	uint8_t kind;
	uint64_t kind_ts;
};

/* A name corotop found for a coroutine after its birth: r->names's id,
 * from ts on. */
struct replay_named {
	uint64_t ts;
	uint32_t name;
};

/* A corotop_kind option: coroutine id's kind from ts on. */
struct replay_kind {
	uint64_t id, ts;
	uint8_t kind;
};

/* One coroutine: a substream's intervals from one birth to the next
 * (probe ids are reused); see rp_cut in replay.c. */
struct replay_coro {
	uint64_t id; /* 1, 2, ... in birth order */
	uint64_t substream;
	uint64_t birth, end;	/* first start, last end */
	uint32_t first, n;	/* its intervals: iv[first .. first + n) */
	uint32_t lfirst, nl;	/* its losses: lost[lfirst .. lfirst + nl) */
	uint32_t name;		/* its birth's name (r->names), 0: none */
	uint32_t pid;		/* its birth's process, 0: the target */
	bool dead;		/* ended before the recording did */
	uint8_t kind;		/* its birth's later kind, from kind_ts */
	uint32_t named, nnamed; /* its birth's later names (r->named) */
	uint64_t kind_ts;
};

struct replay {
	struct heph_file f;
	char path[512];
	bool ours; /* written by corotop (its `corotop` option is present) */
	uint64_t t0, t1; /* the recording: first start, end */
	/* The last moment the program still ran: the moment before the
	 * deaths that come after its last transition or birth (a kill, its
	 * exit), where every coroutine is dead; t1 when none does (and for
	 * other writers' traces). */
	uint64_t ran;
	uint64_t linger_ns; /* dead coroutines stay visible this long */
	struct replay_iv *iv;
	size_t niv;
	struct replay_coro *coro;
	size_t ncoro;
	uint64_t *births;	  /* every coroutine's birth, sorted */
	uint32_t *by_id;	  /* coroutine indexes by ascending id */
	struct replay_lost *lost; /* per coroutine, grouped (lfirst, nl) */
	size_t nlost;
	struct replay_lost *glost; /* every loss, by time (cum: all of them) */
	size_t nglost;
	uint64_t other_events; /* events neither intervals nor losses */
	/* From corotop's own options, when present. */
	int64_t pid;	   /* the target's pid, or -1 */
	char command[256]; /* its command line, or "" */
	uint64_t end_mark; /* when recording stopped (corotop_end), or 0 */
	struct replay_birth *birth_opt; /* by (sub, ts) */
	size_t nbirth_opt, cap_birth_opt;
	struct heph_stacks stacks;  /* stacks named by id (stack_id) */
	struct replay_named *named; /* births' later names, grouped */
	size_t nnamed, cap_named;
	/* corotop_kind options (id, ts, kind), until linked to births. */
	struct replay_kind *kinds;
	size_t nkinds, cap_kinds;
	/* The coroutines' names (corotop_name options), which snapshots
	 * carry; NULL: none. */
	struct namepool *names;
	bool exited;   /* the target exited (corotop_exit) ... */
	int exit_code; /* ... with this status (-1: a signal) */
	int exit_signal;
};

/* Open and index path (a Heph trace).  False with a message when it can
 * not be read at all; problems in it are in r->f.problems. */
bool replay_open(struct replay *r, const char *path, uint64_t linger_ns,
		 char *err, size_t errlen);
/* The same over bytes already in memory (tests, the fuzzer). */
bool replay_open_bytes(struct replay *r, const uint8_t *p, size_t size,
		       uint64_t linger_ns, char *err, size_t errlen);
void replay_close(struct replay *r);

/* Everything at time t (clamped to [t0, t1]) into out: coroutines as the
 * live model would hold them then, totals and rates over the second
 * before t.  Record slot = coroutine index; ids are in birth order; both
 * hold for the recording's whole length. */
void replay_snapshot(const struct replay *r, uint64_t t, struct snapshot *out);

/* The transitions of coroutine `id` up to t, oldest first, at most max
 * (the latest ones).  Returns how many. */
size_t replay_history(const struct replay *r, uint64_t id, uint64_t t,
		      struct model_transition *out, size_t max);

/* Where coroutine `id` is parked at t: the frames its interval recorded
 * (a `stack` attribute), innermost first.  0: running, or none recorded. */
size_t replay_parked_stack(const struct replay *r, uint64_t id, uint64_t t,
			   uint64_t *frames, size_t max);

/* The start of the next (dir > 0) or previous (dir < 0) transition after
 * or before t: of coroutine `id`, or of any (id 0); a death counts.  t
 * itself when there is none. */
uint64_t replay_step(const struct replay *r, uint64_t id, uint64_t t, int dir);

#endif
