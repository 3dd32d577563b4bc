/*
 * harvest: turns the cTP stations of a mapped region into an ordered stream
 * of events, with exact loss accounting.  See harvest.c.
 */
#ifndef COROTOP_HARVEST_H
#define COROTOP_HARVEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corotop/ctp.h"
#include "engine/model/event.h"

/* Where harvested data goes.  Callbacks run on the harvesting thread. */
struct harvest_sink {
	/* A coroutine took the station (first sighting or a new generation). */
	void (*open)(void *ctx, uint32_t station, uint64_t probe_id,
		     uint64_t birth_ts);
	void (*event)(void *ctx, const struct harvest_event *ev);
	/* `count` events of the station's current coroutine were overwritten
	 * before they could be read. */
	void (*lost)(void *ctx, uint32_t station, uint64_t count);
	/* The station's coroutine died; all its events were delivered. */
	void (*close)(void *ctx, uint32_t station);
	/* A process took the station (CTP_STX_PROCESS: a corotop probe
	 * attached in it); harvest_who says which.  It has no events. */
	void (*process)(void *ctx, uint32_t station);
	void *ctx;
};

enum harvest_station_state {
	HARVEST_EMPTY = 0, /* never seen occupied */
	HARVEST_LIVE,	   /* occupied; events flow */
	HARVEST_CLOSED,	   /* occupant dead; waiting for a new generation */
};

/* How a station's seqs are written (include/corotop/ctp.h). */
enum harvest_style {
	HARVEST_STYLE_UNKNOWN = 0, /* foreign, not decided yet */
	HARVEST_STYLE_STATION,	   /* corotop probe, slots[] */
	HARVEST_STYLE_DEEP,	   /* corotop probe, its deep ring */
	HARVEST_STYLE_SEQLOCK,	   /* shipped upstream SDKs: per-slot seqlock */
	HARVEST_STYLE_LITERAL,	   /* the spec's text: seq 1, 2, 3, ... */
};

/* Evidence about a foreign station, sticky (style.c). */
#define HARVEST_EV_NOT_LITERAL (1u << 0) /* a seq in the wrong slot */
#define HARVEST_EV_NOT_SEQLOCK (1u << 1) /* slot counts out of step */
#define HARVEST_EV_ODD_STABLE (1u << 2)	 /* an odd seq that stayed put */

/* A foreign station undecided for this long gets its most likely style. */
#define HARVEST_DECIDE_NS 100000000ull

struct harvest_station {
	uint64_t expected; /* next event number to deliver */
	uint64_t first;	   /* the occupant's first event number */
	uint64_t gen;	   /* occupant generation last opened */
	uint64_t probe_id;
	uint64_t seen_ns; /* undecided: when its first write was seen */
	uint64_t odd_sig; /* undecided: the odd seqs seen last time */
	uint64_t odd_ns;  /* ... and when */
	uint8_t state;	  /* enum harvest_station_state */
	uint8_t style;	  /* enum harvest_style */
	uint8_t evidence; /* HARVEST_EV_* */
	bool fresh;	  /* opened by an observer's first scan: what its ring
			   * lacks was written before we started, not lost */
	bool census;	  /* event `first` is a census event (CTP_STX_CENSUS) */
	bool process;	  /* it stands for a process (CTP_STX_PROCESS) */
	bool hub;	  /* its deep ring is hub_depth long (CTP_STX_HUB) */
	uint8_t role;	  /* CTP_STX_DISPATCHER or CTP_STX_ROOT, else 0 */
	/* The writing process and its image (ctp_station_ext; 0: unknown),
	 * read when the occupant was opened. */
	uint32_t pid;
	uint64_t image;
};

/* Written by a corotop probe (generations, recycling, CallTrace tags). */
static inline bool harvest_station_ours(const struct harvest_station *st)
{
	return st->style == HARVEST_STYLE_STATION ||
	       st->style == HARVEST_STYLE_DEEP;
}

struct harvest_counters {
	uint64_t harvested;    /* events delivered */
	uint64_t lost;	       /* events overwritten before they were read */
	uint64_t torn;	       /* copies discarded: seq moved mid-copy, or a
				* literal slot the writer may be rewriting */
	uint64_t before_start; /* observer: events gone before it began */
	uint64_t opened;       /* coroutines seen */
	uint64_t closed;       /* coroutines seen dead */
	uint64_t recycled;     /* stations pushed to the free list */
	uint64_t census;       /* census events delivered (in harvested) */
	uint64_t scans;
	uint64_t styles[5]; /* stations decided per enum harvest_style */
};

/* Stations that lost events in the last scan, for catch-up rescans. */
#define HARVEST_HOT_MAX 64

struct harvest {
	struct ctp_header *hdr;
	struct ctp_station *stations;
	uint32_t max;	   /* stations mapped (bounded by the region size) */
	bool recycle;	   /* push dead stations to the free list (we own it) */
	bool saw_upstream; /* an upstream SDK writes here: it never marks */
	bool dirty_ok;	   /* the region had a valid dirty hint at init */
	bool started;	   /* the first scan is done (observers: see fresh) */
	uint32_t dirty_shift; /* captured at init: the region is untrusted */
	struct harvest_station *state; /* max entries */
	/* Deep rings (harvest_set_deep), or NULL / 0: depth epochs a
	 * station, hub_depth a hub's (CTP_STX_HUB; 0: no hubs), rings
	 * stride epochs apart. */
	struct ctp_deep *deep;
	struct ctp_epoch *deep_rings;
	uint32_t depth, hub_depth, stride;
	/* CLOCK_MONOTONIC ns; replaceable by tests. */
	uint64_t (*clock)(void);
	uint32_t hot[HARVEST_HOT_MAX]; /* lossy stations of the last scan */
	unsigned nhot;
	/* The last scan's slack: the largest share of its ring that one
	 * station's events filled (1/65536ths, capped at a whole ring), and
	 * whether events came from a station without a deep ring (whose
	 * eight slots leave the engine no slack to pace by). */
	uint32_t pass_fill;
	bool pass_shallow;
	struct harvest_counters count;
};

bool harvest_init(struct harvest *h, struct ctp_header *hdr, uint32_t max,
		  bool recycle);
void harvest_finish(struct harvest *h);

/*
 * The region's deep area (ctp.h), validated and mapped by the caller: depth
 * epochs per station for h->max stations, rings hub_depth epochs apart when
 * it has hubs (0: none, rings depth apart).  Stations whose occupant sets
 * CTP_STX_DEEP are read from there; a hub's (CTP_STX_HUB) to hub_depth.
 */
void harvest_set_deep(struct harvest *h, struct ctp_deep *deep, uint32_t depth,
		      uint32_t hub_depth);

/*
 * (R) The engine's pass that began at start_ns visited every station marked
 * or written before it: publish that to deep-ring writers.  No-op without a
 * deep area or when we do not own the region.
 */
void harvest_pass_done(struct harvest *h, uint64_t start_ns);

/* Stations currently allocated, bounded by the mapped count. */
uint32_t harvest_allocated(const struct harvest *h);

/* One pass over every allocated station.  Returns events delivered. */
size_t harvest_scan(struct harvest *h, const struct harvest_sink *sink);

/*
 * Dirty-hint scanning (CTP_HX_DIRTY).  collect exchanges every dirty word
 * with 0 into marks[CTP_HX_DIRTY_WORDS] and returns false when none was set;
 * the caller then issues its barrier (Q) and calls scan_marked, which visits
 * only the stations of marked groups.  Returns 0 / nothing when the region
 * has no dirty hint.
 */
bool harvest_dirty_collect(struct harvest *h, uint64_t *marks);
size_t harvest_scan_marked(struct harvest *h, const uint64_t *marks,
			   const struct harvest_sink *sink);
/* The region carries a usable dirty hint. */
bool harvest_has_dirty(const struct harvest *h);

/* A pass over the listed stations only (catch-up after a loss). */
size_t harvest_scan_list(struct harvest *h, const uint32_t *list, unsigned n,
			 const struct harvest_sink *sink);

/*
 * The current (or last, once closed) occupant `probe_id` of station i: the
 * events still in its ring that were already delivered or counted lost,
 * i.e. numbered in [first, expected), as validated copies, oldest first,
 * at most CTP_SLOTS (the last eight, also from a deep ring).  Read-only: the
 * harvest state is not touched, so the caller only has to serialise with scans
 * (the engine's lock).
 */
unsigned harvest_station_recent(const struct harvest *h, uint32_t i,
				uint64_t probe_id, struct harvest_event *out);

/* Who occupies a station beyond its probe id and birth, as a corotop
 * probe's station header says (zeros for another writer's). */
struct harvest_who {
	uint64_t coro; /* its struct corotop_coro in the target, 0: unknown */
	/* The function its context was made to run (ctp_station_ext.entry),
	 * an address in the writing process, untrusted; 0: unknown. */
	uint64_t entry;
	/* The program's function that entry was made for
	 * (ctp_station_ext.made_for), a candidate; 0: none. */
	uint64_t made_for;
	char name[CTP_STX_NAME_LEN]; /* cleaned (printable ASCII); "": none */
	uint32_t pid;		     /* the writing process, 0: unknown */
	uint64_t image; /* its image (ctp_station_ext.image), 0: unknown */
	uint8_t role;	/* what it is: CTP_STX_DISPATCHER, CTP_STX_ROOT, 0 */
};

/*
 * Station i's occupant as of the generation the harvest last opened
 * (call it from the sink's open): its header's coro, entry and name, read as
 * untrusted bytes -- at most CTP_STX_NAME_LEN - 1 of them, up to a NUL,
 * non-printable ones as '?' -- and dropped when the generation moved
 * while they were read (a newer occupant's, or a torn copy).
 */
void harvest_who(const struct harvest *h, uint32_t i, struct harvest_who *out);

/* A process station's counts from its interposer: contexts it could not
 * track (ctp_station_ext.contexts_untracked) and switches it found made
 * where it could not see them (switches_unseen); zeros for any other
 * station. */
struct harvest_interposer {
	uint64_t untracked, unseen;
};
void harvest_interposer(const struct harvest *h, uint32_t i,
			struct harvest_interposer *out);

/*
 * Process `pid`'s image `image` is gone (the process exited, or exec'd a
 * new image): every live station it wrote -- its coroutines and its
 * process station -- is read one last time and closed (sink close: its
 * coroutines die).  With recycling (a region we own, which nothing of
 * that image can write any more) each is then marked dead and given to
 * the free list, its next occupant starting past every event the ring may
 * still hold.  Returns the stations closed.
 */
unsigned harvest_forget_image(struct harvest *h, uint32_t pid, uint64_t image,
			      const struct harvest_sink *sink);

/* One station; exposed for unit tests. */
size_t harvest_station_scan(struct harvest *h, uint32_t i,
			    const struct harvest_sink *sink);

#ifdef HARVEST_TEST_HOOKS
/* Called between the payload copy and the seq re-check (tests only). */
extern void (*harvest_test_after_copy)(struct ctp_epoch *e);
#endif

#endif
