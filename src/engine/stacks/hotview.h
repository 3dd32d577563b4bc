/*
 * hotview: what the facade's hot-stack queries hand out -- CallTrace
 * statistics, a top list's stacks, the granularity rows are merged by, a
 * node of the caller -> callee tree, the export formats.  Data only: the
 * facade (engine/engine.h) includes it, and engine/stacks fills these
 * types, so the facade's copies of the stacks' answers are made where
 * they are computed, below the facade (as engine/ctp/coro.h is the
 * snapshot's records).  The functions that return them are engine.h's.
 */
#ifndef COROTOP_ENGINE_STACKS_HOTVIEW_H
#define COROTOP_ENGINE_STACKS_HOTVIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "corotop/calltrace.h"

struct engine_calltrace_stats {
	bool enabled;	   /* the engine owns a CallTrace region */
	bool failed;	   /* abandoned after a fault in its mapping */
	char warning[256]; /* the last rotation's or failure's message, or "" */
	struct {	   /* the rotations, as of the last */
		uint64_t rotations; /* completed swaps of the active table */
		uint64_t traces, weight; /* what they collected, summed */
		uint64_t preserved; /* parked ids carried into a new table */
		uint64_t dropped, dropped_weight; /* puts the writers dropped */
	} rotor;
	struct {		 /* the hot-stacks aggregate */
		uint64_t stacks; /* kept now */
		uint64_t weight; /* taken in since start (zero included) */
		uint64_t attributed, unattributed; /* tagged weight credited
						      to a coroutine, or not */
		uint64_t evicted_weight; /* totals of stacks dropped */
		unsigned window_s;	 /* the window weights count over */
		unsigned half_life_s;	 /* ... halved every (0: no decay) */
	} hot;
	struct {
		uint64_t kept; /* parked stacks kept now */
	} parked;
	struct {	      /* CPU samples walked by the engine */
		bool enabled; /* a snapshot ring exists (--sample) */
		bool failed;  /* abandoned after a fault in its mapping */
		/* Tickets: taken (walked), lapped, torn (overwritten while
		 * read), skipped (never finished), bad (counts out of
		 * range); busy: writers that found their record busy and
		 * used CallTrace instead. */
		uint64_t taken, lapped, torn, skipped, bad, busy;
		/* How taken stacks were made: the CFI walk of the copy,
		 * ... with the frame walk spliced on, the frame walk
		 * alone; overflow: not kept (too many distinct stacks). */
		uint64_t cfi, spliced, fp, overflow;
		uint64_t walk_ns; /* the harvest thread's time walking them */
	} snapshots;
	uint64_t names; /* frame names kept (readable after the target exits) */
};

/* What a top list is sorted by, and what its percentages are of. */
enum engine_hot_order {
	ENGINE_HOT_BY_WINDOW = 0, /* window weight (decayed); pct of it */
	ENGINE_HOT_BY_TOTAL,	  /* raw weight since start or zero */
};

/* One stack of a top list: a copy, the caller's to keep. */
struct engine_hot_stack {
	uint64_t stack_id; /* stable while the stack is kept, never reused */
	uint64_t trace_id; /* the CallTrace id last merged into it */
	uint64_t total;	   /* raw weight since start or the last zero */
	double weight;	   /* over the window, decayed */
	/* Of the list's basis, over the same set (all stacks, or one
	 * coroutine's), 0..100.  self: this stack exactly; total: this
	 * stack and every stack it is a caller of. */
	double self_pct, total_pct;
	/* engine_hot_rows: what the row is merged by (a hash, stable across
	 * calls) and how many stacks it holds; frames, stack_id and trace_id
	 * are its heaviest stack's.  engine_hot_stacks: the stack id, 1. */
	uint64_t key;
	uint32_t merged;
	uint32_t nframes;
	uint64_t frames[CT_MAX_FRAMES]; /* innermost first, tag removed */
};

/* What the rows of a hot list are: stacks whose frames are equal at this
 * granularity are one row. */
enum engine_hot_by {
	ENGINE_HOT_BY_FUNCTION = 0, /* each frame's function (its start) */
	ENGINE_HOT_BY_LINE,	    /* ... its file:line */
	ENGINE_HOT_BY_ADDRESS,	    /* ... its address: stacks as sampled */
};
#define ENGINE_HOT_BY_COUNT 3

/* Stacks engine_hot_rows merges rows from (engine.h). */
#define ENGINE_HOT_MERGE_STACKS 4096u

/* One node of the caller -> callee tree, in pre-order. */
struct hot_node {
	uint64_t addr;	    /* a frame address the node stands for */
	uint32_t depth;	    /* 0: outermost frames */
	uint32_t subtree;   /* out[i + 1 .. i + subtree) are its descendants */
	bool leaf;	    /* addr is an innermost frame (an exact pc) */
	double self, total; /* window weights (decayed) */
	double self_pct, total_pct; /* of the window's total, 0..100 */
	char name[112];		    /* by function: the function; by address: as
				       engine_frame_name full ("func+0xOFF (f.c:N)") */
};

enum engine_export_format {
	ENGINE_EXPORT_FOLDED = 0, /* flamegraph.pl folded stacks */
	ENGINE_EXPORT_SPEEDSCOPE, /* speedscope JSON, one sampled profile */
};

#endif
