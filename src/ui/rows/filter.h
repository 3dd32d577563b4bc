/*
 * filter: which coroutines the table shows.  See filter.c.
 */
#ifndef COROTOP_FILTER_H
#define COROTOP_FILTER_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/model/snapshot.h"
#include "ui/rows/matchcache.h"

#define FILTER_MAX_TERMS 8

struct filter_term {
	int column; /* enum column_id */
	char value[64];
	bool numeric; /* value parsed as a number of the column: num */
	bool exact;   /* key==value: the whole cell (key=value: a substring) */
	uint64_t num;
};

/* One record slot's last text-match result, and what it depended on (the
 * ID cell alone when matching cell by cell: tid, addr, warn unused). */
struct filter_memo {
	uint64_t id, tid, addr;
	uint32_t warn;
	uint32_t name;
	uint32_t gen; /* struct filter.memo_gen when computed */
	bool match;
};

/* A live table leaves out a coroutine that has no transition harvested
 * yet (its TID and WHERE would read "-") while it is younger than this:
 * it was just made, and its first switch may be on its way.  Once it is
 * this old without one, "-" is a fact -- it never ran -- and it is shown.
 * The engine's rate window (its tick), and the default refresh. */
#define FILTER_UNSWITCHED_NS 1000000000ull

struct filter {
	char text[128]; /* as typed */
	/* FILTER_UNSWITCHED_NS in the TUI and batch text of a live run, 0
	 * (every coroutine) in JSON, serve and replay; filter_select counts
	 * the coroutines it left out for it in `held`. */
	uint64_t unswitched_ns;
	size_t held;
	bool active;
	bool regex_on;
	regex_t regex;
	char substr[128]; /* what is left after field terms, lowercased */
	struct filter_term terms[FILTER_MAX_TERMS];
	unsigned nterms;
	bool by_cell; /* the text part matches each name cell on its own */
	struct filter_memo *memo; /* by record slot (model_coro.slot) */
	size_t memo_cap;
	uint32_t memo_gen;    /* bumped by every filter_set */
	uint32_t memo_symgen; /* snapshot.names_gen the memo is valid for */
	/* Cell results by the value shown (by_cell only): TID by thread id,
	 * WHERE by address, WARN by mask, NAME by name id. */
	struct matchcache tid_cache, addr_cache, warn_cache, name_cache;
};

void filter_init(struct filter *f);
void filter_finish(struct filter *f);
/* Parse `text`; "" clears the filter.  On error the filter is unchanged
 * and err says what is wrong. */
bool filter_set(struct filter *f, const char *text, char *err, size_t n);
bool filter_match(const struct filter *f, const struct snapshot *s,
		  const struct model_coro *c);
/* Indexes (into s->coro) of the records that match, in snapshot order;
 * returns how many.  idx has room for s->count.  A coroutine just made
 * (unswitched_ns) is not one of them, whatever the filter. */
size_t filter_select(struct filter *f, const struct snapshot *s, uint32_t *idx);
/* Case-insensitive substring match of `needle` (lowercase) in the name
 * cells (ID, TID, NAME, WHERE, WARN); search uses it too. */
bool filter_row_contains(const struct snapshot *s, const struct model_coro *c,
			 const char *needle);

#endif
