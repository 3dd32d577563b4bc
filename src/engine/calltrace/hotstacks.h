/*
 * hotstacks: where the target's time goes -- the stacks of every CallTrace
 * rotation, merged across coroutines, weighed over a sliding window with
 * exponential decay, and split per coroutine.  See hotstacks.c.
 */
#ifndef COROTOP_HOTSTACKS_H
#define COROTOP_HOTSTACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corotop/calltrace.h"
#include "engine/calltrace/traceset.h"

/* The window is kept as this many slices: weights leave it a slice at a
 * time, and decay is applied per slice (by the slice's end). */
#define HOT_SLICES 8

struct hotstacks_config {
	unsigned window_s;    /* weights count over the last window (30) */
	unsigned half_life_s; /* ... halved every half-life of age (10; 0:
				 no decay, a plain sliding sum) */
	uint32_t max_stacks;  /* distinct stacks kept (16384) */
	uint32_t max_coro;    /* (stack, coroutine) weights kept (65536) */
	/* Each stack is cut after the frames keep accepts (NULL: all). */
	traceset_keep_fn keep;
	void *keep_ctx;
};

void hotstacks_config_defaults(struct hotstacks_config *c);

/* What a top list is sorted by, and what its percentages are of. */
enum hot_order {
	HOT_BY_WINDOW = 0, /* window weight (decayed); pct of the window */
	HOT_BY_TOTAL,	   /* raw weight since start or zero; pct of that */
};

/* One stack of a top list: a copy, the caller's to keep. */
struct hot_stack {
	uint64_t stack_id; /* hotstacks' own id: stable while the stack is
			      kept, never reused */
	uint64_t trace_id; /* the CallTrace id last merged into it (tagged
			      traces of several coroutines merge into one) */
	uint64_t total;	   /* raw weight since start or the last zero */
	double weight;	   /* over the window, decayed */
	/* Of the list's basis (enum hot_order), over the same set (all
	 * stacks, or one coroutine's), 0..100.  self: this stack exactly;
	 * total: this stack and every stack it is a caller of (the same
	 * frames on the root side, more on the leaf side). */
	double self_pct, total_pct;
	/* A row of a merged list (hotmerge.h): what it is merged by, stable
	 * across queries, and how many stacks it holds (the frames are its
	 * heaviest one's).  hotstacks_top: the stack id, and 1. */
	uint64_t key;
	uint32_t merged;
	uint32_t nframes;
	uint64_t frames[CT_MAX_FRAMES]; /* innermost first, tag removed */
};

struct hotstacks_stats {
	uint64_t ingests;      /* rotation unions taken in */
	uint64_t weight;       /* weight taken in since start (zero included) */
	uint64_t stacks;       /* stacks kept now */
	uint64_t coro_entries; /* (stack, coroutine) weights kept now */
	uint64_t parked;       /* parked stacks kept now */
	uint64_t evicted;      /* stacks dropped to stay within the bound */
	uint64_t evicted_weight; /* their totals */
	uint64_t coro_evicted;	 /* (stack, coroutine) weights dropped */
	uint64_t attributed;	 /* tagged weight credited to a coroutine */
	uint64_t unattributed;	 /* tagged weight not: thread tags, a station
				    whose occupant changed, unknown tags */
	uint64_t zeroed_ns;	 /* when counts were last zeroed, 0: never */
	unsigned window_s, half_life_s; /* as set */
};

/* One frame to name: `leaf` is true for frames[0] (the exact pc); the
 * others are return addresses. */
struct hot_frame {
	uint64_t addr;
	bool leaf;
};

struct hotstacks;

struct hotstacks *hotstacks_create(const struct hotstacks_config *c);
/* NULL is a no-op. */
void hotstacks_destroy(struct hotstacks *h);

/* A new window and half-life.  Totals stay; window weights start over. */
void hotstacks_set_window(struct hotstacks *h, unsigned window_s,
			  unsigned half_life_s);

/*
 * Take in one rotation's union at `now` (ns, any monotonic clock the caller
 * keeps using).  coro[i] is the model id the tag of u->e[i] resolved to (0:
 * none), or coro is NULL.  Traces without weight add nothing.
 */
void hotstacks_ingest(struct hotstacks *h, const struct traceset *u,
		      const uint64_t *coro, uint64_t now);

/* Forget every weight (the stacks go too); parked stacks stay. */
void hotstacks_zero(struct hotstacks *h, uint64_t now);

/*
 * The top `max` stacks into out, of every coroutine (coro 0) or of model id
 * `coro`, sorted by `order` (ties: the other weight, then stack id).
 * HOT_BY_WINDOW lists only stacks with weight in the window, HOT_BY_TOTAL
 * every stack with a total.  Returns how many were written.
 */
size_t hotstacks_top(struct hotstacks *h, uint64_t coro, enum hot_order order,
		     uint64_t now, struct hot_stack *out, size_t max);

/* One stack as a query hands it out; frames valid during the call. */
struct hot_ref {
	uint64_t stack_id, trace_id;
	uint64_t total;		/* raw weight since start or zero */
	double weight;		/* over the window, decayed */
	const uint64_t *frames; /* innermost first, tag removed */
	uint32_t nframes;
};
typedef void (*hotstacks_visit_fn)(void *ctx, const struct hot_ref *s);

/*
 * The heaviest `max` stacks of hotstacks_top's list, in its order, to fn,
 * without its %total (no caller scan: O(n log n) in the stacks kept); the
 * basis (enum hot_order) of every stack of the set, listed or not, summed
 * into *sum.  Returns how many fn was called for.  For hotmerge.
 */
size_t hotstacks_heaviest(struct hotstacks *h, uint64_t coro,
			  enum hot_order order, uint64_t now, size_t max,
			  hotstacks_visit_fn fn, void *ctx, double *sum);

/* Every stack (coro 0) or model id coro's, with its window weight and
 * total, in no particular order; returns how many fn was called for. */
typedef void (*hotstacks_each_fn)(void *ctx, const uint64_t *frames, uint32_t n,
				  double weight, uint64_t total);
size_t hotstacks_each(struct hotstacks *h, uint64_t coro, uint64_t now,
		      hotstacks_each_fn fn, void *ctx);

/* Frames of the stacks added since the last call (to be named while the
 * target lives), at most max; the rest wait for the next call. */
size_t hotstacks_new_frames(struct hotstacks *h, struct hot_frame *out,
			    size_t max);

void hotstacks_stats(const struct hotstacks *h, struct hotstacks_stats *out);

#endif
