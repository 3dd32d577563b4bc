/*
 * stacks_internal: struct stacks, shared by the stacks' files (rotation,
 * samples, walker, walks, census, hotquery, stacks.c) and by nothing
 * outside src/engine/stacks: the engine root sees the opaque type of
 * stacks.h.
 */
#ifndef COROTOP_ENGINE_STACKS_INTERNAL_H
#define COROTOP_ENGINE_STACKS_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "corotop/calltrace.h"
#include "engine/calltrace/rotor.h"
#include "engine/calltrace/snapreader.h"
#include "engine/calltrace/traceset.h"
#include "engine/ctp/harvest.h"
#include "engine/model/learned.h"
#include "engine/model/model.h"
#include "engine/ctp/region.h"
#include "engine/model/snapshot.h"
#include "engine/stacks/stacks.h"
#include "engine/symbols/symtab.h"
#include "engine/target/procmem.h"

struct framenames;
struct hotstacks;
struct parked;

/*
 * The engine's CallTrace side (rotation.c rotates, hotquery.c
 * answers).  The rotor is used by one thread at a time: the harvest
 * thread, then the caller of engine_stop after it joined.  Everything
 * under hot_lock is what other threads read.
 */
/* Samples walked by the engine (samples.c), on the samples thread;
 * under `lock`: walked[], fill, st, ring_st, failed, error. */
struct stacks_samples_walk_stats {
	uint64_t cfi;	   /* stacks from the CFI walk of the copy */
	uint64_t spliced;  /* ... with the handler's frame walk spliced on */
	uint64_t fp;	   /* the handler's frame walk alone */
	uint64_t overflow; /* samples not kept: the traceset was full */
	uint64_t walk_ns;  /* CLOCK_MONOTONIC spent walking them */
};

struct snapring;
struct samples_walk_scratch {
	struct stacks *sk;
	uint64_t frames[CT_MAX_FRAMES];
};

struct stacks_samples {
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
	struct stacks_samples_walk_stats st;
	struct snapreader_stats ring_st; /* as the last poll read them */
	bool failed;
	char error[256];
};

struct stacks_ct {
	struct rotor *rotor; /* NULL: no CallTrace region */
	struct stacks_samples samples;
	pthread_mutex_t hot_lock;
	/* Under hot_lock. */
	struct hotstacks *hot;
	struct parked *parked;
	struct framenames *names;
	struct rotor_stats rs; /* copied after each rotation */
	struct hot_stack *top; /* stacks_hot_stacks' scratch, top_cap rows */
	size_t top_cap;
	bool failed; /* SIGBUS in the mapping: rotor abandoned */
	char warning[256];
	/* A process other than the target writes here too (a child, an
	 * exec'd image's child): its stacks are not in the target's
	 * mappings, so stored and sampled stacks are no longer checked
	 * against them (stacks_ct_keep).  Set by the harvest thread at the
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
	 * (engine lock; at most STACKS_CT_DEAD_MAX): preserved by it once
	 * more, so that a recording still finds the stack a coroutine parked
	 * at before it died -- the probe stored it and the rotation had not
	 * read it yet, or the engine walked it (a program's exit, a kill at
	 * the end, close its parked coroutines). */
	uint64_t *dead_parked;
	size_t ndead_parked;
};

#define STACKS_CT_DEAD_MAX 4096

#define STACKS_UNWIND_PROCS 8

/* The Boost.Context layout a process maps (engine/target/fcsave.h), read
 * from its maps when first needed and again at most every
 * STACKS_UNWIND_LAYOUT_NS (the walker thread's). */
struct stacks_fcsave {
	pid_t pid;			    /* 0: not read */
	const struct fcsave_layout *layout; /* NULL: none known */
	uint64_t read_ns;
};

/* Walks of parked stacks made while watching (walker.c): its own
 * thread's, the fields below `jobs` under the engine lock. */
struct stacks_unwind_job;
struct stacks_unwind_state {
	pthread_t thread;
	pthread_mutex_t mu;  /* stop, and the thread's wait */
	pthread_cond_t wake; /* signalled at stop */
	bool inited, running, stop;
	bool prime; /* load the target's symbols now (stacks_unwind_prime) */
	struct stacks_unwind_job *jobs; /* a tick's walks (the thread's) */
	struct procmem pm; /* launch mode's, opened when first needed */
	bool pm_open, pm_failed;
	/* The target's child processes' memories, for their coroutines'
	 * walks (opened when first needed; the oldest replaced). */
	struct stacks_unwind_proc {
		pid_t pid; /* 0: unused */
		struct procmem pm;
		struct framecheck *fc; /* its frames' check, or NULL */
		struct stacks_fcsave fcs;
		bool open;
		uint64_t used;
	} procs[STACKS_UNWIND_PROCS];
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
	struct stacks_fcsave fcs; /* the target's */
	/* (coroutine, switch address) -> the program frame its walk found,
	 * shown for the parks too short to walk (engine/model/learned.c). */
	struct learned learned;
};

/* walker.c: a parked coroutine's stack walked in the memory of its
 * process (pm; pid 0: the target) from where its probe saved it (CFI
 * first, with that process's symbols; frame records else),
 * at most max (<= STACKS_UNWIND_MAX) frames, each one a return address
 * into that process's code (fc: framecheck.h; the walk kept counts its
 * stop there), with its program frames marked; 0 when the stack is not
 * declared.  Without `wait`, *busy when
 * the symbol table was busy (nothing walked: ask again later). */
#define STACKS_UNWIND_MAX 64
struct stackwalk_start;
struct framecheck;
/* A copy of the stack's top taken at once ([at, at + len)), which the
 * walk reads before the target's memory; *live (when not NULL) says
 * whether it read past it (the park must then still be the same after). */
struct stacks_unwind_copy {
	uint64_t at;
	size_t len;
	const unsigned char *bytes;
	bool live;
};
size_t stacks_unwind(struct stacks *sk, struct procmem *pm, pid_t pid,
		     struct framecheck *fc, const struct stackwalk_start *s,
		     uint64_t *frames, size_t max, bool wait,
		     struct symtab_unwound *marks, bool *busy,
		     struct stacks_unwind_copy *copy);

/* The top of a parked stack copied in one read, then walked in the copy;
 * past it the walk reads the target (and the park must then have lasted
 * the walk). */
#define STACKS_UNWIND_COPY 16384u

/* One walk of a tick: picked under the lock (the record, and what tells
 * whether it is still the same park), made without it, then applied. */
struct stacks_unwind_job {
	struct procmem *pm;	   /* its process's memory */
	struct framecheck *fc;	   /* ... and its frames' check */
	struct stacks_fcsave *fcs; /* ... and its Boost.Context */
	pid_t pid;		   /* its process, 0: the target */
	uint32_t station;	   /* its station (the saved registers) */
	uint32_t r;		   /* the model record */
	uint64_t id;		   /* its coroutine (model_coro.id) */
	uint64_t state_ts;	   /* the park picked (model_coro.state_ts) */
	uint64_t probe_id;	   /* what the struct read must say */
	uint64_t at;		   /* its struct corotop_coro in the target */
	/* the walk's result */
	enum { UNWIND_SKIP, UNWIND_RACED, UNWIND_BUSY, UNWIND_DONE } got;
	/* where the walk started (stacks_unwind_saved) */
	enum {
		UNWIND_FROM_PROBE,
		UNWIND_FROM_SAVED,
		UNWIND_SAVED_REFUSED
	} from;
	uint64_t last_ts;   /* the park walked (the struct's last_ts) */
	uint64_t switch_at; /* ... at this switch (the struct's last_addr) */
	size_t n;
	struct symtab_unwound marks;
	uint64_t frames[STACKS_UNWIND_MAX];
};

/* walker.c, for walks.c: the target's memory for the walks (lock held);
 * a child process's, its frame check and its Boost.Context layout in
 * *fc and *fcs (opened when first needed); one job's walk (lock not
 * held). */
struct procmem *stacks_unwind_pm(struct stacks *sk);
struct procmem *stacks_unwind_child_pm(struct stacks *sk, pid_t pid,
				       struct framecheck **fc,
				       struct stacks_fcsave **fcs);
void stacks_unwind_walk(struct stacks *sk, struct stacks_unwind_job *j);

/* The walks of one tick (engine lock not held by the caller); returns how
 * many it picked (parks new since the last tick). */
unsigned stacks_unwind_parked(struct stacks *sk, uint64_t now);
/* Ask the walker's thread to load the target's symbols now (symtab_prime),
 * off the caller's thread; a no-op when it does not run. */
void stacks_unwind_prime(struct stacks *sk);
/* The thread that makes them every tick while watching; stop joins it. */
bool stacks_unwind_start(struct stacks *sk, char *err, size_t errlen);
void stacks_unwind_stop(struct stacks *sk);
void stacks_unwind_finish(struct stacks *sk);

/* census.c: a census event (a coroutine found at a late attach)
 * into the model, with its parked stack walked in the target when it is
 * parked; the stack's id (model_park'ed), or 0.  Engine lock held. */
uint64_t stacks_census(struct stacks *sk, const struct harvest_event *ev);

/* rotation.c: lifecycle (create before the target starts) and
 * the rotation cadence, called from the harvest loop. */
bool stacks_ct_create(struct stacks *sk, char *err, size_t errlen);
void stacks_ct_destroy(struct stacks *sk);
void stacks_ct_unlink(const struct stacks *sk);
void stacks_ct_poll(struct stacks *sk, uint64_t now);
/* One last rotation after the threads stopped. */
void stacks_ct_final(struct stacks *sk);
/* The model id each entry's tag names (0: none), in ct.owner (engine lock
 * held). */
uint64_t *stacks_ct_resolve(struct stacks *sk, const struct traceset *u);

/* samples.c: the snapshot ring (only with sample_hz; after the
 * rotor) and its thread (started with the harvest, joined by _final, which
 * drains what is left); _waiting: walked stacks wait for a rotation, which
 * _ingest's into the hot stacks; _stats fills out->snapshots. */
bool stacks_samples_create(struct stacks *sk, char *err, size_t errlen);
bool stacks_samples_start(struct stacks *sk, char *err, size_t errlen);
void stacks_samples_stop(struct stacks *sk);
void stacks_samples_final(struct stacks *sk);
void stacks_samples_destroy(struct stacks *sk);
void stacks_samples_unlink(const struct stacks *sk);
bool stacks_samples_waiting(struct stacks *sk);
void stacks_samples_stats(struct stacks *sk,
			  struct engine_calltrace_stats *out);
void stacks_samples_ingest(struct stacks *sk, uint64_t now);

struct stacks {
	struct stacks_env env;
	struct stacks_config cfg;
	struct stacks_ct ct; /* CallTrace rotation and hot stacks */
	struct stacks_unwind_state unwind; /* parked stacks walked */
};

/* The engine's clock, and the target's frame check (NULL before start). */
static inline uint64_t stacks_now(const struct stacks *sk)
{
	return sk->env.now(sk->env.ctx);
}

static inline struct framecheck *stacks_fc(const struct stacks *sk)
{
	return *sk->env.framecheck;
}

#endif
