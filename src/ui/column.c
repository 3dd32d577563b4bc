/*
 * column: what each column of the coroutine table shows, how it sorts, and
 * what the help screen says about it.  Adding a column is one entry here
 * (plus an enum value); the view, the sort keys, the field filters and the
 * help screen all read this table.
 */
#include "column.h"

#include <inttypes.h>
#include <stdio.h>
#include <strings.h>

#include "../common/duration.h"
#include "../engine/lint.h"

#define CMP(a, b) ((a) < (b) ? -1 : (a) > (b) ? 1 : 0)

static void cell_id(char *b, size_t n, const struct snapshot *s,
		    const struct model_coro *c)
{
	(void)s;
	snprintf(b, n, "%" PRIx64, c->probe_id);
}

static int cmp_id(const struct snapshot *s, const struct model_coro *a,
		  const struct model_coro *b)
{
	(void)s;
	return CMP(a->probe_id, b->probe_id) ? CMP(a->probe_id, b->probe_id)
					     : CMP(a->id, b->id);
}

static void cell_state(char *b, size_t n, const struct snapshot *s,
		       const struct model_coro *c)
{
	(void)s;
	snprintf(b, n, "%c", c->state);
}

static int state_rank(uint8_t st)
{
	return st == MODEL_RUNNING ? 0 : st == MODEL_SUSPENDED ? 1 : 2;
}

static int cmp_state(const struct snapshot *s, const struct model_coro *a,
		     const struct model_coro *b)
{
	(void)s;
	return CMP(state_rank(a->state), state_rank(b->state));
}

static void cell_tid(char *b, size_t n, const struct snapshot *s,
		     const struct model_coro *c)
{
	(void)s;
	if (c->switches)
		snprintf(b, n, "%" PRIu64, c->last_tid);
	else
		snprintf(b, n, "-");
}

static int cmp_tid(const struct snapshot *s, const struct model_coro *a,
		   const struct model_coro *b)
{
	(void)s;
	return CMP(a->last_tid, b->last_tid);
}

static void cell_age(char *b, size_t n, const struct snapshot *s,
		     const struct model_coro *c)
{
	duration_format(b, n, snapshot_age_ns(s, c));
}

static int cmp_age(const struct snapshot *s, const struct model_coro *a,
		   const struct model_coro *b)
{
	return CMP(snapshot_age_ns(s, a), snapshot_age_ns(s, b));
}

static void cell_in_state(char *b, size_t n, const struct snapshot *s,
			  const struct model_coro *c)
{
	duration_format(b, n, snapshot_in_state_ns(s, c));
}

static int cmp_in_state(const struct snapshot *s, const struct model_coro *a,
			const struct model_coro *b)
{
	return CMP(snapshot_in_state_ns(s, a), snapshot_in_state_ns(s, b));
}

static void cell_switches(char *b, size_t n, const struct snapshot *s,
			  const struct model_coro *c)
{
	(void)s;
	snprintf(b, n, "%" PRIu64, c->switches);
}

static int cmp_switches(const struct snapshot *s, const struct model_coro *a,
			const struct model_coro *b)
{
	(void)s;
	return CMP(a->switches, b->switches);
}

static void cell_swps(char *b, size_t n, const struct snapshot *s,
		      const struct model_coro *c)
{
	(void)s;
	snprintf(b, n, "%.0f", c->sw_per_sec);
}

static int cmp_swps(const struct snapshot *s, const struct model_coro *a,
		    const struct model_coro *b)
{
	(void)s;
	return CMP(a->sw_per_sec, b->sw_per_sec);
}

static void cell_run(char *b, size_t n, const struct snapshot *s,
		     const struct model_coro *c)
{
	snprintf(b, n, "%.1f", snapshot_run_pct(s, c));
}

static int cmp_run(const struct snapshot *s, const struct model_coro *a,
		   const struct model_coro *b)
{
	return CMP(snapshot_run_pct(s, a), snapshot_run_pct(s, b));
}

static void cell_seq(char *b, size_t n, const struct snapshot *s,
		     const struct model_coro *c)
{
	(void)s;
	snprintf(b, n, "%" PRIu64, c->last_seq);
}

static int cmp_seq(const struct snapshot *s, const struct model_coro *a,
		   const struct model_coro *b)
{
	(void)s;
	return CMP(a->last_seq, b->last_seq);
}

static void cell_lost(char *b, size_t n, const struct snapshot *s,
		      const struct model_coro *c)
{
	(void)s;
	snprintf(b, n, "%" PRIu64, c->lost);
}

static int cmp_lost(const struct snapshot *s, const struct model_coro *a,
		    const struct model_coro *b)
{
	(void)s;
	return CMP(a->lost, b->lost);
}

static void cell_where(char *b, size_t n, const struct snapshot *s,
		       const struct model_coro *c)
{
	(void)s;
	snprintf(b, n, "0x%" PRIx64, c->last_addr);
}

static int cmp_where(const struct snapshot *s, const struct model_coro *a,
		     const struct model_coro *b)
{
	(void)s;
	return CMP(a->last_addr, b->last_addr);
}

static void cell_warn(char *b, size_t n, const struct snapshot *s,
		      const struct model_coro *c)
{
	(void)s;
	lint_format(c->warn, b, n);
}

static int cmp_warn(const struct snapshot *s, const struct model_coro *a,
		    const struct model_coro *b)
{
	(void)s;
	return CMP(__builtin_popcount(a->warn), __builtin_popcount(b->warn))
		       ? CMP(__builtin_popcount(a->warn),
			     __builtin_popcount(b->warn))
		       : CMP(a->warn, b->warn);
}

const struct column column_table[COL_COUNT] = {
	[COL_ID] = {"id", "ID", 14, false, 0,
		    "probe id given by the program (hex)", cell_id, cmp_id},
	[COL_STATE] = {"state", "S", 1, false, 0,
		       "R running, S suspended, D dead", cell_state, cmp_state},
	[COL_TID] = {"tid", "TID", 7, false, 2, "OS thread of the last switch",
		     cell_tid, cmp_tid},
	[COL_AGE] = {"age", "AGE", 7, false, 4,
		     "time since the coroutine was born", cell_age, cmp_age},
	[COL_IN_STATE] = {"in-state", "IN-STATE", 8, false, 1,
			  "time spent in the current state", cell_in_state,
			  cmp_in_state},
	[COL_SWITCHES] = {"switches", "SWITCHES", 8, false, 5,
			  "state changes harvested since birth", cell_switches,
			  cmp_switches},
	[COL_SWPS] = {"sw/s", "SW/s", 6, false, 3,
		      "state changes per second (last 1 s)", cell_swps,
		      cmp_swps},
	[COL_RUN] = {"run%", "RUN%", 5, false, 3,
		     "share of its observed life spent running", cell_run,
		     cmp_run},
	[COL_SEQ] = {"seq", "SEQ", 8, false, 6, "seq of the last slot written",
		     cell_seq, cmp_seq},
	[COL_LOST] = {"lost", "LOST", 5, false, 5,
		      "changes overwritten before being read", cell_lost,
		      cmp_lost},
	[COL_WHERE] = {"where", "WHERE", -18, false, 1,
		       "last switch address (where it parked)", cell_where,
		       cmp_where},
	[COL_WARN] = {"warn", "WARN", 11, true, 2,
		      "WAKE? STALL STORM DEAD (w lists them)", cell_warn,
		      cmp_warn},
};

int column_find(const char *name)
{
	for (int i = 0; i < COL_COUNT; i++)
		if (!strcasecmp(name, column_table[i].name) ||
		    !strcasecmp(name, column_table[i].title))
			return i;
	return -1;
}
