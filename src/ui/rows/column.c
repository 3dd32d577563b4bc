/*
 * column: what each column of the coroutine table shows, how it sorts, and
 * what the help screen says about it.  Adding a column is one entry here
 * (plus an enum value); the view, the sort keys, the field filters and the
 * help screen all read this table.
 */
#include "ui/rows/column.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/duration.h"
#include "common/numtext.h"
#include "engine/model/lint.h"

static void cell_id(char *b, size_t n, const struct snapshot *s,
		    const struct model_coro *c)
{
	(void)s;
	/* Found by a memory scan: "~" before its saved area's address, "?"
	 * when nothing proves it live (docs/SCAN.md). */
	if (c->scanned && n > 1) {
		b[0] = c->unsure ? '?' : '~';
		numtext_hex(b + 1, n - 1, c->probe_id);
		return;
	}
	numtext_hex(b, n, c->probe_id);
}

static void cell_state(char *b, size_t n, const struct snapshot *s,
		       const struct model_coro *c)
{
	(void)s;
	/* Lower case: implied, not seen (its own transition was lost);
	 * K: running, on a thread that waits in the kernel. */
	snprintf(b, n, "%c",
		 c->inferred && c->state == MODEL_SUSPENDED  ? 's'
		 : c->in_kernel && c->state == MODEL_RUNNING ? 'K'
							     : c->state);
}

/* The process it lives in: its station's, else the target. */
static uint64_t coro_pid(const struct snapshot *s, const struct model_coro *c)
{
	return c->pid ? c->pid : (uint64_t)(uint32_t)s->target.pid;
}

static void cell_pid(char *b, size_t n, const struct snapshot *s,
		     const struct model_coro *c)
{
	uint64_t pid = coro_pid(s, c);

	if (pid)
		numtext_dec(b, n, pid);
	else
		snprintf(b, n, "-");
}

static void cell_tid(char *b, size_t n, const struct snapshot *s,
		     const struct model_coro *c)
{
	(void)s;
	/* A thread is known once a transition is: harvested, or found at a
	 * late attach (a census, which is no switch). */
	if (c->last_tid)
		numtext_dec(b, n, c->last_tid);
	else
		snprintf(b, n, "-");
}

/* What memory does not say of a context a scan found (its age, its
 * switches): "?". */
static bool cell_unknown(char *b, size_t n, const struct model_coro *c)
{
	if (!c->scanned)
		return false;
	snprintf(b, n, "?");
	return true;
}

static void cell_age(char *b, size_t n, const struct snapshot *s,
		     const struct model_coro *c)
{
	if (!cell_unknown(b, n, c))
		duration_format(b, n, snapshot_age_ns(s, c));
}

/* A scan's: since the first scan that saw it, at least (">"); a
 * core's: unknown. */
static void cell_in_state(char *b, size_t n, const struct snapshot *s,
			  const struct model_coro *c)
{
	if (c->scanned && s->target.core) { /* a core says not since when */
		snprintf(b, n, "?");
		return;
	}
	if (c->scanned && n > 1) {
		b[0] = '>';
		duration_format(b + 1, n - 1, snapshot_in_state_ns(s, c));
		return;
	}
	duration_format(b, n, snapshot_in_state_ns(s, c));
}

static void cell_switches(char *b, size_t n, const struct snapshot *s,
			  const struct model_coro *c)
{
	(void)s;
	if (!cell_unknown(b, n, c))
		numtext_dec(b, n, c->switches);
}

static void cell_swps(char *b, size_t n, const struct snapshot *s,
		      const struct model_coro *c)
{
	(void)s;
	if (!cell_unknown(b, n, c))
		snprintf(b, n, "%.0f", c->sw_per_sec);
}

static void cell_run(char *b, size_t n, const struct snapshot *s,
		     const struct model_coro *c)
{
	if (!cell_unknown(b, n, c))
		snprintf(b, n, "%.1f", snapshot_run_pct(s, c));
}

static void cell_seq(char *b, size_t n, const struct snapshot *s,
		     const struct model_coro *c)
{
	(void)s;
	if (!cell_unknown(b, n, c))
		numtext_dec(b, n, c->last_seq);
}

static void cell_lost(char *b, size_t n, const struct snapshot *s,
		      const struct model_coro *c)
{
	(void)s;
	if (!cell_unknown(b, n, c))
		numtext_dec(b, n, c->lost);
}

/* The probe's name, else its entry's function (snapshot_name). */
static void cell_name(char *b, size_t n, const struct snapshot *s,
		      const struct model_coro *c)
{
	char name[256];

	/* A scheduler's own context (a dispatcher, a thread's root) in
	 * brackets, as ps shows a kernel thread: not one of the program's
	 * coroutines, and not judged by the lints. */
	if (c->kind == MODEL_COROUTINE) {
		snapshot_name(s, c, b, n);
		return;
	}
	snapshot_name(s, c, name, sizeof(name));
	snprintf(b, n, "[%s]", name[0] ? name : snapshot_kind_name(c->kind));
}

/* Symbolized when the engine has the target's symbols; "-" before its
 * first switch (as TID), never the address 0. */
static void cell_where(char *b, size_t n, const struct snapshot *s,
		       const struct model_coro *c)
{
	if (!c->last_addr) {
		snprintf(b, n, "-");
		return;
	}
	/* "~": learned at an earlier park at the same switch, not this
	 * park's own (docs/JSON.md, where_learned). */
	if (c->where_learned && n > 1) {
		b[0] = '~';
		snapshot_where_of(s, c, c->last_addr, true, b + 1, n - 1);
		return;
	}
	snapshot_where_of(s, c, c->last_addr, true, b, n);
}

static void cell_warn(char *b, size_t n, const struct snapshot *s,
		      const struct model_coro *c)
{
	(void)s;
	lint_format(c->warn, b, n);
}

/* ---- sort keys: ascending order of the column as one uint64_t ---- */

/* Non-negative doubles order like their bit patterns; negative ones (a
 * rate never is, but the table is untrusted arithmetic) sort first. */
static uint64_t key_double(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return (u >> 63) ? ~u : u | (1ull << 63);
}

static uint64_t key_id(const struct snapshot *s, const struct model_coro *c)
{
	(void)s;
	return c->probe_id;
}

static uint64_t key_state(const struct snapshot *s, const struct model_coro *c)
{
	(void)s;
	return c->state == MODEL_RUNNING     ? 0
	       : c->state == MODEL_SUSPENDED ? 1
					     : 2;
}

static uint64_t key_pid(const struct snapshot *s, const struct model_coro *c)
{
	return coro_pid(s, c);
}

static uint64_t key_tid(const struct snapshot *s, const struct model_coro *c)
{
	(void)s;
	return c->last_tid;
}

static uint64_t key_age(const struct snapshot *s, const struct model_coro *c)
{
	return snapshot_age_ns(s, c);
}

static uint64_t key_in_state(const struct snapshot *s,
			     const struct model_coro *c)
{
	return snapshot_in_state_ns(s, c);
}

static uint64_t key_switches(const struct snapshot *s,
			     const struct model_coro *c)
{
	(void)s;
	return c->switches;
}

static uint64_t key_swps(const struct snapshot *s, const struct model_coro *c)
{
	(void)s;
	return key_double(c->sw_per_sec);
}

static uint64_t key_run(const struct snapshot *s, const struct model_coro *c)
{
	return key_double(snapshot_run_pct(s, c));
}

static uint64_t key_seq(const struct snapshot *s, const struct model_coro *c)
{
	(void)s;
	return c->last_seq;
}

static uint64_t key_lost(const struct snapshot *s, const struct model_coro *c)
{
	(void)s;
	return c->lost;
}

/* By its first eight bytes, as text sorts them (ties fall to the id);
 * unnamed ones first. */
static uint64_t key_name(const struct snapshot *s, const struct model_coro *c)
{
	char name[16];
	uint64_t k = 0;
	size_t i;

	if (!c->name)
		return 0;
	snapshot_name(s, c, name, sizeof(name));
	for (i = 0; i < 8 && name[i]; i++)
		k = k << 8 | (unsigned char)name[i];
	return i ? k << (8 * (8 - i)) : 0;
}

/* By address: the switch points of one function sort together. */
static uint64_t key_where(const struct snapshot *s, const struct model_coro *c)
{
	(void)s;
	return c->last_addr;
}

/* More warnings first when inverted; the mask orders equal counts. */
static uint64_t key_warn(const struct snapshot *s, const struct model_coro *c)
{
	(void)s;
	return (uint64_t)__builtin_popcount(c->warn) << 32 | c->warn;
}

const struct column column_table[COL_COUNT] = {
	[COL_ID] = {"id", "ID", 14, false, 0,
		    "probe id given by the program (hex); ~: found by a "
		    "memory scan (its saved context's address), ?: found, "
		    "not proven live",
		    cell_id, key_id},
	[COL_STATE] = {"state", "S", 1, false, 0,
		       "R running (K: its thread waits in the kernel), S "
		       "suspended (s: implied, its suspend was lost), D dead",
		       cell_state, key_state},
	[COL_PID] = {"pid", "PID", 7, false, 3,
		     "its process (shown when the program runs as several)",
		     cell_pid, key_pid},
	[COL_TID] = {"tid", "TID", 7, false, 3, "OS thread of the last switch",
		     cell_tid, key_tid},
	[COL_AGE] = {"age", "AGE", 7, false, 4,
		     "time since the coroutine was born", cell_age, key_age},
	[COL_IN_STATE] = {"in-state", "IN-STATE", 8, false, 1,
			  "time spent in the current state", cell_in_state,
			  key_in_state},
	[COL_SWITCHES] = {"switches", "SWITCHES", 8, false, 5,
			  "state changes harvested since birth", cell_switches,
			  key_switches},
	[COL_SWPS] = {"sw/s", "SW/s", 6, false, 3,
		      "state changes per second (last 1 s)", cell_swps,
		      key_swps, .busiest_first = true},
	[COL_RUN] = {"run%", "RUN%", 5, false, 3,
		     "share of its observed life spent running", cell_run,
		     key_run, .busiest_first = true},
	[COL_SEQ] = {"seq", "SEQ", 8, false, 6, "seq of the last slot written",
		     cell_seq, key_seq},
	[COL_LOST] = {"lost", "LOST", 5, false, 5,
		      "changes overwritten before being read", cell_lost,
		      key_lost},
	[COL_NAME] = {"name", "NAME", 16, true, 2,
		      "its name: the program's, or its entry function's; "
		      "[in brackets]: the scheduler's own context, a "
		      "dispatcher or a thread's root",
		      cell_name, key_name},
	[COL_WHERE] =
		{"where", "WHERE", -18, false, 1,
		 "where it last switched (parked): function+offset (file:line)",
		 cell_where, key_where},
	[COL_WARN] = {"warn", "WARN", 11, true, 1,
		      "WAKE? STALL STORM DEAD (w lists them)", cell_warn,
		      key_warn},
};

int column_find(const char *name)
{
	for (int i = 0; i < COL_COUNT; i++)
		if (!strcasecmp(name, column_table[i].name) ||
		    !strcasecmp(name, column_table[i].title))
			return i;
	return -1;
}

void column_hide_unlisted(const char *list, bool *hidden)
{
	char buf[256], *save = NULL;

	if (!*list)
		return;
	for (int c = 0; c < COL_COUNT; c++)
		hidden[c] = c != COL_ID;
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *w = strtok_r(buf, ",", &save); w;
	     w = strtok_r(NULL, ",", &save)) {
		int c = column_find(w);

		if (c >= 0)
			hidden[c] = false;
	}
}
