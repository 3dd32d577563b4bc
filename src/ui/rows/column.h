/*
 * column: the coroutine table's columns as one const table, shared by the
 * interactive view, its help screen, sorting and filtering.  See column.c.
 */
#ifndef COROTOP_COLUMN_H
#define COROTOP_COLUMN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/model/snapshot.h"

enum column_id {
	COL_ID = 0,
	COL_STATE,
	COL_PID,
	COL_TID,
	COL_AGE,
	COL_IN_STATE,
	COL_SWITCHES,
	COL_SWPS,
	COL_RUN,
	COL_SEQ,
	COL_LOST,
	COL_NAME,
	COL_WHERE,
	COL_WARN,
	COL_COUNT,
};

struct column {
	const char *name;  /* config and filter key: "in-state" */
	const char *title; /* header text: "IN-STATE" */
	int width;	   /* negative: left aligned, and takes the rest */
	bool left;	   /* left aligned (flexible columns always are) */
	int priority;	   /* dropped first when narrow: higher number */
	const char *help;  /* one line for the help screen */
	/* Text of the cell (also what search and filter match). */
	void (*cell)(char *buf, size_t n, const struct snapshot *s,
		     const struct model_coro *c);
	/* Sort key: ascending order of the column as one number, so rows
	 * sort by a radix pass over precomputed keys (order.c). */
	uint64_t (*key)(const struct snapshot *s, const struct model_coro *c);
	/* Sorts descending unless inverted: a rate, busiest first on the
	 * first press, as htop's CPU% (order.c; the table's arrow). */
	bool busiest_first;
};

extern const struct column column_table[COL_COUNT];

/* Column by name or title (case-insensitive), or -1. */
int column_find(const char *name);
/* Hide (hidden[c] true) the columns not named in list, comma-separated
 * (a config's "columns"); "" hides none.  ID is always shown. */
void column_hide_unlisted(const char *list, bool *hidden);

#endif
