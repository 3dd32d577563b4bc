/*
 * batch: the model printed without curses.
 *
 * Text mirrors top -b: a summary header, then one row per coroutine.  JSON
 * writes one self-contained object per snapshot on one line (documented in
 * docs/JSON.md), so `corotop -b -f json ... | jq` works line by line.
 * Rows come in the order the caller gives (main.c: by model id, oldest
 * first, or by --sort).  The column set is a
 * const table, shared by the header and the rows, in the TUI's order;
 * each column is as wide as its widest cell, so the rows stay aligned
 * under the header whatever a WHERE or a name holds.  WARN lists the lints
 * a coroutine trips (lint_format tags), or "-" for none, and NAME is its
 * name with blanks as '_', or "-": every row splits into as many words as
 * the header.
 *
 * Hot stacks (when the engine has a CallTrace region) follow: in JSON a
 * "calltrace" statistics object, "hot_by" (what a row merges: function,
 * line or address) and a "hot_stacks" array, heaviest total first, each
 * frame with its address and symbol, innermost first; in text a short
 * section of one line per row (frames at the granularity, innermost
 * first).
 */
#include "ui/batch/batch.h"
#include "ui/rows/column.h"

#include "common/json_writer.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct batch_column {
	const char *title;
	int width;  /* negative: left aligned */
	int column; /* a column.c cell (enum column_id), or -1: use `cell` */
	void (*cell)(char *buf, size_t n, const struct snapshot *s,
		     const struct model_coro *c);
};

/* Where it last switched, as the table's WHERE names it (function+offset,
 * without the file and line; hex when it has no name), as one word. */
static void cell_where(char *b, size_t n, const struct snapshot *s,
		       const struct model_coro *c)
{
	if (!c->last_addr) { /* no switch yet: "-", as the table */
		snprintf(b, n, "-");
		return;
	}
	snapshot_where_of(s, c, c->last_addr, false, b, n);
	for (char *p = b; *p; p++)
		if (*p == ' ')
			*p = '_';
}

static void cell_warn(char *b, size_t n, const struct snapshot *s,
		      const struct model_coro *c)
{
	(void)s;
	if (c->warn)
		lint_format(c->warn, b, n);
	else
		snprintf(b, n, "-");
}

/* The name as one word: "-" for none, blanks as '_'. */
static void cell_name(char *b, size_t n, const struct snapshot *s,
		      const struct model_coro *c)
{
	snapshot_name(s, c, b, n);
	if (!*b)
		snprintf(b, n, "-");
	for (char *p = b; *p; p++)
		if (*p == ' ')
			*p = '_';
}

static const struct batch_column batch_columns[] = {
	{"ID", 14, COL_ID, NULL},
	{"S", 1, COL_STATE, NULL},
	{"TID", 7, COL_TID, NULL},
	{"AGE", 8, COL_AGE, NULL},
	{"IN-STATE", 8, COL_IN_STATE, NULL},
	{"SWITCHES", 9, COL_SWITCHES, NULL},
	{"SW/s", 7, COL_SWPS, NULL},
	{"RUN%", 5, COL_RUN, NULL},
	{"SEQ", 9, COL_SEQ, NULL},
	{"LOST", 6, COL_LOST, NULL},
	/* The TUI's order.  Batch keeps NAME and WHERE one word and "-" for
	 * no name or no warnings, so every row has as many words as the
	 * header. */
	{"NAME", -4, -1, cell_name},
	{"WHERE", -24, -1, cell_where},
	{"WARN", -5, -1, cell_warn},
};

#define BATCH_NCOLUMNS (sizeof(batch_columns) / sizeof(batch_columns[0]))

static void batch_cell(const struct batch_column *col, char *cell, size_t n,
		       const struct snapshot *s, const struct model_coro *c)
{
	if (col->column >= 0)
		column_table[col->column].cell(cell, n, s, c);
	else
		col->cell(cell, n, s, c);
}

/* Free text in the one-line header: control bytes (a newline in a path)
 * as C escapes, so the header stays one line. */
static void batch_text_escaped(FILE *f, const char *str)
{
	for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
		if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
	}
}

/* A process without buffers: what its memory scan found, and what it
 * cannot know (docs/SCAN.md). */
static void batch_text_scan(FILE *f, const struct snapshot_scan *sc)
{
	fprintf(f,
		"Scan: %" PRIu32 " contexts found in memory (%" PRIu32
		" unsure), pass %" PRIu64 " took %.1f ms, %.1f MiB read; "
		"%" PRIu32 " threads waiting, %" PRIu32 " running",
		sc->found, sc->unsure, sc->passes, (double)sc->pass_ns / 1e6,
		(double)sc->bytes / (1024.0 * 1024.0), sc->threads, sc->busy);
	if (sc->lost)
		fprintf(f, "; %" PRIu32 " more than --stations", sc->lost);
	if (sc->no_layout)
		fputs("; no Boost.Context mapped that corotop can read", f);
	if (sc->fiber_layout)
		fprintf(f,
			"; Boost.Fiber's lists: %" PRIu32
			" schedulers, %" PRIu32 " fibers, %" PRIu32
			" found waiting",
			sc->schedulers, sc->fibers, sc->waiting);
	if (sc->nonblocking && sc->refreshes)
		fputs("\n      Refreshes: --nonblocking, no thread stopped "
		      "(what they read may be torn)",
		      f);
	else if (sc->refreshes)
		fprintf(f,
			"\n      Refreshes: %" PRIu64
			", the last stopped %" PRIu32
			" running threads for %.2f ms (at most %.2f ms); "
			"%" PRIu32 " contexts resumed since the pass",
			sc->refreshes, sc->stopped, (double)sc->pause_ns / 1e6,
			(double)sc->pause_max_ns / 1e6, sc->resumed);
	if (sc->refused)
		fprintf(f,
			"; %" PRIu64 " stops refused (a debugger holds a "
			"thread)",
			sc->refused);
	if (sc->idle)
		fprintf(f, "; %" PRIu32 " proven idle (their stacks untouched)",
			sc->idle);
	if (sc->idle_off)
		fputs("; idle proofs off (/proc/PID/clear_refs refused)", f);
	fputs("\n      AGE, SWITCHES unknown (?); IN-STATE counts from the "
	      "first pass (>); ~ID found, ?ID not proven live\n",
	      f);
}

/* A core file's line: what it held. */
static void batch_text_core(FILE *f, const struct snapshot_core *co)
{
	fprintf(f,
		"Core: %" PRIu32 " threads, %.1f MiB of memory dumped; code "
		"read from %s",
		co->threads, (double)co->dumped / (1024.0 * 1024.0), co->exe);
	if (co->unreadable)
		fprintf(f,
			"; %" PRIu32 " mapped files not found (their code "
			"is not read)",
			co->unreadable);
	if (co->truncated)
		fputs("; TRUNCATED: the file ends before its memory does", f);
	if (co->registry)
		fprintf(f,
			"\n      the probe's registry read: %" PRIu32
			" coroutines listed (%" PRIu32 " unreadable); AGE and "
			"IN-STATE count to its latest transition",
			co->registry_live, co->registry_unread);
	fputc('\n', f);
}

/* Lines only a program of several processes, a full context table, or
 * switches made out of the interposer's sight have: "Processes: ...",
 * "Contexts: N untracked ..." and "Switches: N unseen ...". */
static void batch_text_procs(FILE *f, const struct snapshot *s)
{
	if (s->nprocs > 1) {
		fprintf(f, "Processes: %zu seen", s->procs_total);
		for (size_t k = 0; k < s->nprocs; k++) {
			fprintf(f, "%s %" PRIu32 " ", k ? "," : ";",
				s->procs[k].pid);
			batch_text_escaped(f, s->procs[k].name);
			if (s->procs[k].gone)
				fputs(" (gone)", f);
		}
		fputc('\n', f);
	}
	if (s->target.core)
		batch_text_core(f, &s->core);
	if (s->target.scanned)
		batch_text_scan(f, &s->scan);
	if (s->contexts_untracked)
		fprintf(f,
			"Contexts: %" PRIu64 " untracked (the interposer's "
			"table was full: COROTOP_CONTEXTS)\n",
			s->contexts_untracked);
	if (s->switches_unseen)
		fprintf(f,
			"Switches: %" PRIu64 " unseen (made where the "
			"interposer could not see them: states may be wrong)\n",
			s->switches_unseen);
}

void batch_print_text(FILE *f, const struct snapshot *s, const uint32_t *idx,
		      size_t n, unsigned max_rows)
{
	char target[64], cell[64];
	int width[BATCH_NCOLUMNS];
	unsigned rows = 0;

	snapshot_target_text(s, target, sizeof(target));
	if (s->replay.on)
		fprintf(f, "corotop - %s - replay at %.3f s of %.3f s%s%s\n",
			target, (double)(s->ts - s->replay.t0) / 1e9,
			(double)(s->replay.t1 - s->replay.t0) / 1e9,
			s->error ? " - error: " : "", s->error ? s->error : "");
	else /* after an error the engine harvests no more: say so */
		fprintf(f, "corotop - %s - engine %s%s%s%s%s", target,
			s->error      ? "stopped"
			: s->sleeping ? "asleep"
				      : "harvesting",
			s->error ? " - error: " : "", s->error ? s->error : "",
			s->warning ? " - " : "", s->warning ? s->warning : "");
	if (!s->replay.on && s->record.on) {
		fprintf(f, " - %s ",
			s->record.stopped ? "recorded" : "recording");
		batch_text_escaped(f, s->record.path ? s->record.path : "");
		fprintf(f,
			": %" PRIu64 " bytes, %" PRIu64 " intervals, %" PRIu64
			" dropped",
			s->record.bytes, s->record.intervals,
			s->record.dropped);
	}
	if (!s->replay.on)
		fputc('\n', f);
	fprintf(f,
		"Events: %" PRIu64 " total, %.0f/s, %" PRIu64 " lost, %" PRIu64
		" untraced, %" PRIu64 " torn",
		s->t.events, s->t.events_per_sec, s->t.lost, s->t.untraced,
		s->t.torn);
	if (s->t.before_start)
		fprintf(f, ", %" PRIu64 " before start", s->t.before_start);
	fputc('\n', f);
	fprintf(f,
		"Coroutines: %zu shown, %u running, %u suspended, %u dead; "
		"stations %u/%u, %" PRIu64 " recycled\n",
		idx ? n : s->count, s->t.running, s->t.suspended, s->t.dead,
		s->t.stations_allocated, s->t.stations_max, s->t.recycled);
	batch_text_procs(f, s);
	fputc('\n', f);
	if (!idx)
		n = s->count;
	/* Columns as wide as their widest cell (a TID of 20 digits, a long
	 * WHERE or NAME), so every row lines up under the header whatever
	 * its cells hold: a first pass measures, the second prints. */
	for (size_t k = 0; k < BATCH_NCOLUMNS; k++) {
		width[k] = batch_columns[k].width;
		if (abs(width[k]) < (int)strlen(batch_columns[k].title))
			width[k] =
				width[k] < 0
					? -(int)strlen(batch_columns[k].title)
					: (int)strlen(batch_columns[k].title);
	}
	for (size_t i = 0; i < n && (!max_rows || i < max_rows); i++)
		for (size_t k = 0; k < BATCH_NCOLUMNS; k++) {
			int len;

			batch_cell(&batch_columns[k], cell, sizeof(cell), s,
				   &s->coro[idx ? idx[i] : i]);
			len = (int)strlen(cell);
			if (len > abs(width[k]))
				width[k] = width[k] < 0 ? -len : len;
		}
	for (size_t k = 0; k < BATCH_NCOLUMNS; k++)
		fprintf(f, "%*s ", width[k], batch_columns[k].title);
	fputc('\n', f);
	for (size_t i = 0; i < n; i++) {
		const struct model_coro *c = &s->coro[idx ? idx[i] : i];

		if (max_rows && rows++ >= max_rows)
			break;
		for (size_t k = 0; k < BATCH_NCOLUMNS; k++) {
			batch_cell(&batch_columns[k], cell, sizeof(cell), s, c);
			fprintf(f, "%*s ", width[k], cell);
		}
		fputc('\n', f);
	}
	fputc('\n', f);
}

static void batch_json_target(struct json_writer *w, const struct snapshot *s)
{
	json_writer_key(w, "target");
	json_writer_object_begin(w);
	json_writer_int_field(w, "pid", (int)s->target.pid);
	json_writer_bool_field(w, "attached", s->target.attached);
	/* No probe, no buffer: its contexts are found in its memory. */
	json_writer_bool_field(w, "scanned", s->target.scanned);
	/* A core file's process, frozen at its dump. */
	json_writer_bool_field(w, "core", s->target.core);
	json_writer_bool_field(w, "running", s->target.running);
	if (s->target.exited && !s->target.term_signal) {
		json_writer_int_field(w, "exit_status", s->target.exit_code);
		json_writer_null_field(w, "term_signal");
	} else if (s->target.exited) {
		json_writer_null_field(w, "exit_status");
		json_writer_int_field(w, "term_signal", s->target.term_signal);
	} else {
		json_writer_null_field(w, "exit_status");
		json_writer_null_field(w, "term_signal");
	}
	json_writer_object_end(w);
}

/* The lint names of a mask, as an array of JSON strings. */
static void batch_json_warn(struct json_writer *w, uint32_t mask)
{
	json_writer_array_begin(w);
	for (int k = 0; k < LINT_COUNT; k++)
		if (mask & (1u << k))
			json_writer_string(w, lint_name(k));
	json_writer_array_end(w);
}

/* A string member, or null when there is none. */
static void batch_json_text(struct json_writer *w, const char *key,
			    const char *text)
{
	json_writer_key(w, key);
	if (text)
		json_writer_string(w, text);
	else
		json_writer_null(w);
}

static void batch_json_calltrace(struct json_writer *w,
				 const struct batch_hot *hot)
{
	const struct engine_calltrace_stats *ct = hot ? hot->ct : NULL;

	json_writer_key(w, "calltrace");
	if (!ct || !ct->enabled) {
		json_writer_null(w);
		return;
	}
	json_writer_object_begin(w);
	json_writer_uint_field(w, "rotations", ct->rotor.rotations);
	json_writer_uint_field(w, "collected", ct->rotor.weight);
	json_writer_uint_field(w, "dropped", ct->rotor.dropped);
	json_writer_uint_field(w, "dropped_weight", ct->rotor.dropped_weight);
	json_writer_uint_field(w, "stacks", ct->hot.stacks);
	json_writer_uint_field(w, "weight", ct->hot.weight);
	json_writer_uint_field(w, "attributed", ct->hot.attributed);
	json_writer_uint_field(w, "unattributed", ct->hot.unattributed);
	json_writer_uint_field(w, "evicted_weight", ct->hot.evicted_weight);
	json_writer_uint_field(w, "parked", ct->parked.kept);
	batch_json_text(w, "error",
			ct->failed || ct->warning[0] ? ct->warning : NULL);
	json_writer_key(w, "snapshots");
	if (ct->snapshots.enabled) {
		json_writer_object_begin(w);
		json_writer_uint_field(w, "taken", ct->snapshots.taken);
		json_writer_uint_field(w, "lapped", ct->snapshots.lapped);
		json_writer_uint_field(w, "torn", ct->snapshots.torn);
		json_writer_uint_field(w, "skipped", ct->snapshots.skipped);
		json_writer_uint_field(w, "bad", ct->snapshots.bad);
		json_writer_uint_field(w, "busy", ct->snapshots.busy);
		json_writer_uint_field(w, "cfi", ct->snapshots.cfi);
		json_writer_uint_field(w, "spliced", ct->snapshots.spliced);
		json_writer_uint_field(w, "fp", ct->snapshots.fp);
		json_writer_uint_field(w, "overflow", ct->snapshots.overflow);
		json_writer_uint_field(w, "walk_ns", ct->snapshots.walk_ns);
		json_writer_bool_field(w, "failed", ct->snapshots.failed);
		json_writer_object_end(w);
	} else {
		json_writer_null(w);
	}
	json_writer_object_end(w);
}

/* One frame of a stack: its address and its symbol. */
static void batch_json_frame(struct json_writer *w, const struct batch_hot *hot,
			     uint64_t addr, bool leaf)
{
	char sym[256];

	json_writer_object_begin(w);
	json_writer_key(w, "addr");
	json_writer_hex(w, "0x", addr, 16);
	json_writer_string_field(
		w, "symbol",
		hot->name(hot->ctx, addr, leaf, true, sym, sizeof(sym)));
	json_writer_object_end(w);
}

static void batch_json_hot(struct json_writer *w, const struct batch_hot *hot)
{
	json_writer_key(w, "hot_by");
	if (hot)
		json_writer_string(w, engine_hot_by_name(hot->by));
	else
		json_writer_null(w);
	json_writer_key(w, "hot_stacks");
	json_writer_array_begin(w);
	for (size_t i = 0; hot && i < hot->n; i++) {
		const struct engine_hot_stack *h = &hot->s[i];

		json_writer_object_begin(w);
		json_writer_uint_field(w, "id", h->trace_id);
		json_writer_uint_field(w, "stack_id", h->stack_id);
		json_writer_uint_field(w, "weight", h->total);
		json_writer_key(w, "window_weight");
		json_writer_fixed(w, h->weight, 1);
		json_writer_key(w, "self_pct");
		json_writer_fixed(w, h->self_pct, 1);
		json_writer_key(w, "total_pct");
		json_writer_fixed(w, h->total_pct, 1);
		json_writer_uint_field(w, "merged", h->merged ? h->merged : 1);
		json_writer_key(w, "frames");
		json_writer_array_begin(w);
		for (uint32_t k = 0; k < h->nframes; k++)
			batch_json_frame(w, hot, h->frames[k], k == 0);
		json_writer_array_end(w);
		json_writer_object_end(w);
	}
	json_writer_array_end(w);
}

void batch_print_hot_text(FILE *f, const struct batch_hot *hot,
			  unsigned max_rows)
{
	const struct engine_calltrace_stats *ct = hot ? hot->ct : NULL;
	char name[160];

	/* Nothing sampled nor put (no --sample): no section at all. */
	if (!ct || !ct->enabled ||
	    (!ct->hot.stacks && !engine_calltrace_lost(ct) && !ct->warning[0]))
		return;
	fprintf(f,
		"Hot stacks by %s: %" PRIu64 " kept, weight %" PRIu64
		" in %" PRIu64 " rotations, %" PRIu64 " samples dropped%s%s\n",
		engine_hot_by_name(hot->by), ct->hot.stacks, ct->hot.weight,
		ct->rotor.rotations, engine_calltrace_lost(ct),
		ct->warning[0] ? " - " : "", ct->warning);
	if (!hot->n || !max_rows)
		return;
	/* WEIGHT and both % are of the totals since start (or z). */
	fprintf(f, "%9s %6s %6s  STACK by %s (innermost first)\n", "WEIGHT",
		"SELF%", "TOTAL%", engine_hot_by_name(hot->by));
	for (size_t i = 0; i < hot->n && i < max_rows; i++) {
		const struct engine_hot_stack *h = &hot->s[i];
		int col = 0;
		uint32_t k;

		fprintf(f, "%9" PRIu64 " %6.1f %6.1f  ", h->total, h->self_pct,
			h->total_pct);
		for (k = 0; k < h->nframes && col < 100; k++) {
			if (hot->label)
				hot->label(hot->ctx, h->frames[k], k == 0,
					   hot->by, name, sizeof(name));
			else
				hot->name(hot->ctx, h->frames[k], k == 0, false,
					  name, sizeof(name));
			col += fprintf(f, "%s%s", k ? " <- " : "", name);
		}
		if (k < h->nframes)
			fputs(" <- ...", f);
		if (!h->nframes)
			fputs("[no frames]", f);
		fputc('\n', f);
	}
}

#define BATCH_PARKED_FRAMES 32

/* "parked_stack":{"id":N,"frames":[...]} when the stack the coroutine is
 * parked on was captured (--parked-stacks) and collected; else nothing. */
static void batch_json_parked(struct json_writer *w,
			      const struct batch_hot *hot,
			      const struct model_coro *c)
{
	uint64_t frames[BATCH_PARKED_FRAMES], trace = 0;
	size_t n;

	/* A core's running thread: the stack it was running on. */
	if (!hot || !hot->parked || !hot->name ||
	    (c->state != MODEL_SUSPENDED &&
	     !(c->state == MODEL_RUNNING && c->scanned)))
		return;
	n = hot->parked(hot->ctx, c, frames, BATCH_PARKED_FRAMES, &trace);
	if (!n)
		return;
	json_writer_key(w, "parked_stack");
	json_writer_object_begin(w);
	json_writer_uint_field(w, "id", trace);
	json_writer_key(w, "frames");
	json_writer_array_begin(w);
	for (size_t k = 0; k < n; k++)
		batch_json_frame(w, hot, frames[k], k == 0);
	json_writer_array_end(w);
	json_writer_object_end(w);
}

/* "contexts":{"untracked":N,"switches_unseen":N},"frames":{...,
 * "walk_from":{...}},
 * "processes":[...] */
static void batch_json_procs(struct json_writer *w, const struct snapshot *s)
{
	json_writer_key(w, "contexts");
	json_writer_object_begin(w);
	json_writer_uint_field(w, "untracked", s->contexts_untracked);
	json_writer_uint_field(w, "switches_unseen", s->switches_unseen);
	json_writer_object_end(w);
	json_writer_key(w, "frames");
	json_writer_object_begin(w);
	json_writer_uint_field(w, "not_code", s->frames_not_code);
	json_writer_uint_field(w, "not_after_call", s->frames_not_after_call);
	json_writer_key(w, "walk_from");
	json_writer_object_begin(w);
	json_writer_uint_field(w, "saved", s->walks_from_saved);
	json_writer_uint_field(w, "probe", s->walks_from_probe);
	json_writer_uint_field(w, "saved_refused", s->walks_saved_refused);
	json_writer_object_end(w);
	json_writer_object_end(w);
	json_writer_key(w, "processes");
	json_writer_object_begin(w);
	json_writer_uint_field(w, "seen", s->procs_total);
	json_writer_key(w, "list");
	json_writer_array_begin(w);
	for (size_t k = 0; k < s->nprocs; k++) {
		const struct snapshot_proc *p = &s->procs[k];

		json_writer_object_begin(w);
		json_writer_uint_field(w, "pid", p->pid);
		json_writer_string_field(w, "name", p->name);
		json_writer_bool_field(w, "gone", p->gone);
		json_writer_uint_field(w, "contexts_untracked",
				       p->contexts_untracked);
		json_writer_uint_field(w, "switches_unseen",
				       p->switches_unseen);
		json_writer_object_end(w);
	}
	json_writer_array_end(w);
	json_writer_object_end(w);
}

/* One coroutine's row. */
static void batch_json_coro(struct json_writer *w, const struct snapshot *s,
			    const struct model_coro *c,
			    const struct batch_hot *hot)
{
	char where[256], name[256], kbuf[32];

	json_writer_object_begin(w);
	json_writer_uint_field(w, "id", c->id);
	json_writer_uint_field(w, "probe_id", c->probe_id);
	json_writer_key(w, "probe_id_hex");
	json_writer_hex(w, "", c->probe_id, 0);
	json_writer_uint_field(w, "station", c->station);
	json_writer_uint_field(w, "pid",
			       c->pid ? c->pid : (uint32_t)s->target.pid);
	json_writer_string_field(w, "state", snapshot_state_name(c->state));
	json_writer_uint_field(w, "tid", c->last_tid);
	json_writer_key(w, "addr");
	json_writer_hex(w, "0x", c->last_addr, 16);
	json_writer_uint_field(w, "seq", c->last_seq);
	json_writer_uint_field(w, "switches", c->switches);
	json_writer_uint_field(w, "lost", c->lost);
	json_writer_key(w, "sw_per_sec");
	json_writer_fixed(w, c->sw_per_sec, 1);
	json_writer_key(w, "run_pct");
	json_writer_fixed(w, snapshot_run_pct(s, c), 1);
	json_writer_uint_field(w, "age_ns",
			       c->scanned ? 0 : snapshot_age_ns(s, c));
	/* A core's scanned row: not known since when (0). */
	json_writer_uint_field(
		w, "in_state_ns",
		c->scanned && s->target.core ? 0 : snapshot_in_state_ns(s, c));
	json_writer_key(w, "warn");
	batch_json_warn(w, c->warn);
	/* A suspend the program marked a long wait: why a long suspension
	 * is not a lost-wakeup. */
	json_writer_bool_field(w, "long_wait", c->long_wait);
	json_writer_bool_field(w, "at_exit", c->at_exit);
	json_writer_bool_field(w, "inferred", c->inferred);
	/* Where a running coroutine's thread waits in the kernel (its
	 * syscall), or null. */
	batch_json_text(w, "kernel",
			snapshot_kernel_text(s, c, kbuf, sizeof(kbuf)));
	/* One of the program's coroutines, or the scheduler's own. */
	json_writer_string_field(w, "kind", snapshot_kind_name(c->kind));
	json_writer_string_field(w, "name",
				 snapshot_name(s, c, name, sizeof(name)));
	json_writer_string_field(w, "where",
				 snapshot_where_of(s, c, c->last_addr, true,
						   where, sizeof(where)));
	/* WHERE learned at an earlier park at the same switch. */
	json_writer_bool_field(w, "where_learned", c->where_learned);
	/* Found by a memory scan (docs/JSON.md): its age_ns, switches,
	 * sw_per_sec, run_pct, seq and lost are 0 and mean unknown, its
	 * in_state_ns is a lower bound (0, unknown, in a core). */
	if (c->scanned) {
		json_writer_string_field(w, "source", "scan");
		json_writer_bool_field(w, "unsure", c->unsure);
		/* Its runtime's lists say it waits for a notify. */
		json_writer_bool_field(w, "waiting", c->waiting);
		/* Its stack untouched: it has not run for in_state_ns. */
		json_writer_bool_field(w, "idle", c->idle);
	}
	batch_json_parked(w, hot, c);
	json_writer_object_end(w);
}

/* "core":{...}: what a core file held (docs/JSON.md). */
static void batch_json_core(struct json_writer *w,
			    const struct snapshot_core *co)
{
	json_writer_key(w, "core");
	json_writer_object_begin(w);
	json_writer_string_field(w, "command", co->command);
	json_writer_string_field(w, "exe", co->exe);
	json_writer_uint_field(w, "threads", co->threads);
	json_writer_uint_field(w, "dumped_bytes", co->dumped);
	json_writer_uint_field(w, "files_unreadable", co->unreadable);
	json_writer_bool_field(w, "truncated", co->truncated);
	/* A probe's registry read instead of a scan. */
	json_writer_bool_field(w, "registry", co->registry);
	json_writer_uint_field(w, "registry_live", co->registry_live);
	json_writer_uint_field(w, "registry_unread", co->registry_unread);
	json_writer_object_end(w);
}

/* "scan":{...}: a scanned process's last pass (docs/JSON.md). */
static void batch_json_scan(struct json_writer *w,
			    const struct snapshot_scan *sc)
{
	json_writer_key(w, "scan");
	json_writer_object_begin(w);
	json_writer_uint_field(w, "passes", sc->passes);
	json_writer_uint_field(w, "pass_ns", sc->pass_ns);
	json_writer_uint_field(w, "first_pass_ns", sc->first_ns);
	json_writer_uint_field(w, "bytes", sc->bytes);
	json_writer_uint_field(w, "found", sc->found);
	json_writer_uint_field(w, "unsure", sc->unsure);
	json_writer_uint_field(w, "threads_waiting", sc->threads);
	json_writer_uint_field(w, "threads_running", sc->busy);
	json_writer_uint_field(w, "not_listed", sc->lost);
	json_writer_bool_field(w, "no_layout", sc->no_layout);
	/* Boost.Fiber's own lists (fiberwalk.c). */
	json_writer_bool_field(w, "fiber_layout", sc->fiber_layout);
	json_writer_uint_field(w, "schedulers", sc->schedulers);
	json_writer_uint_field(w, "fibers_listed", sc->fibers);
	json_writer_uint_field(w, "proven_waiting", sc->waiting);
	/* The threads, listed as running rows of their own. */
	json_writer_uint_field(w, "threads_listed", sc->threads_listed);
	/* The refreshes between passes, and the target's pause in them. */
	json_writer_bool_field(w, "nonblocking", sc->nonblocking);
	json_writer_uint_field(w, "refreshes", sc->refreshes);
	json_writer_uint_field(w, "pause_ns", sc->pause_ns);
	json_writer_uint_field(w, "pause_max_ns", sc->pause_max_ns);
	json_writer_uint_field(w, "threads_stopped", sc->stopped);
	json_writer_uint_field(w, "resumed", sc->resumed);
	json_writer_uint_field(w, "holders_reread", sc->round);
	json_writer_uint_field(w, "torn", sc->torn);
	json_writer_uint_field(w, "stops_refused", sc->refused);
	json_writer_uint_field(w, "stops_late", sc->late);
	/* The idle proofs: accessed bits (docs/SCAN.md). */
	json_writer_uint_field(w, "proven_idle", sc->idle);
	json_writer_uint_field(w, "idle_arms", sc->arms);
	json_writer_uint_field(w, "idle_arm_ns", sc->arm_ns);
	json_writer_bool_field(w, "idle_unavailable", sc->idle_off);
	json_writer_object_end(w);
}

void batch_print_json(FILE *f, const struct snapshot *s, const uint32_t *idx,
		      size_t n, const struct batch_hot *hot,
		      const struct batch_ppt *ppt)
{
	struct json_writer jw, *w = &jw;

	json_writer_init(w, f);
	json_writer_object_begin(w);
	json_writer_uint_field(w, "ts", s->ts);
	json_writer_uint_field(w, "wall_ns", s->wall_ns);
	json_writer_key(w, "stations");
	json_writer_object_begin(w);
	json_writer_uint_field(w, "allocated", s->t.stations_allocated);
	json_writer_uint_field(w, "max", s->t.stations_max);
	json_writer_uint_field(w, "recycled", s->t.recycled);
	json_writer_object_end(w);
	if (s->target.scanned)
		batch_json_scan(w, &s->scan);
	if (s->target.core)
		batch_json_core(w, &s->core);
	json_writer_key(w, "events");
	json_writer_object_begin(w);
	json_writer_uint_field(w, "harvested", s->t.events);
	json_writer_uint_field(w, "lost", s->t.lost);
	json_writer_uint_field(w, "untraced", s->t.untraced);
	json_writer_uint_field(w, "torn", s->t.torn);
	json_writer_uint_field(w, "before_start", s->t.before_start);
	json_writer_uint_field(w, "inferred", s->t.inferred);
	json_writer_key(w, "per_sec");
	json_writer_fixed(w, s->t.events_per_sec, 1);
	json_writer_object_end(w);
	json_writer_key(w, "engine");
	json_writer_object_begin(w);
	json_writer_bool_field(w, "sleeping", s->sleeping);
	json_writer_bool_field(w, "observer", s->observer);
	json_writer_key(w, "pass_gap_max_ms");
	json_writer_fixed(w, (double)s->pass_gap_max_ns / 1e6, 3);
	batch_json_text(w, "error", s->error);
	batch_json_text(w, "warning", s->warning);
	if (s->record.on) {
		json_writer_key(w, "record");
		json_writer_object_begin(w);
		json_writer_string_field(w, "path", s->record.path);
		json_writer_uint_field(w, "bytes", s->record.bytes);
		json_writer_uint_field(w, "intervals", s->record.intervals);
		json_writer_uint_field(w, "dropped", s->record.dropped);
		json_writer_bool_field(w, "stopped", s->record.stopped);
		json_writer_object_end(w);
	}
	json_writer_object_end(w);
	batch_json_target(w, s);
	json_writer_key(w, "counts");
	json_writer_object_begin(w);
	json_writer_uint_field(w, "running", s->t.running);
	json_writer_uint_field(w, "suspended", s->t.suspended);
	json_writer_uint_field(w, "dead", s->t.dead);
	json_writer_uint_field(w, "seen", s->t.coroutines_seen);
	json_writer_object_end(w);
	batch_json_procs(w, s);
	json_writer_key(w, "warnings");
	json_writer_object_begin(w);
	for (int k = 0; k < LINT_COUNT; k++)
		json_writer_uint_field(w, lint_name(k), s->warn_counts[k]);
	json_writer_object_end(w);
	json_writer_key(w, "coroutines");
	json_writer_array_begin(w);
	if (!idx)
		n = s->count;
	for (size_t i = 0; i < n; i++) {
		if (i && i % BATCH_POLL_ROWS == 0 && hot && hot->interrupted &&
		    hot->interrupted(hot->ctx))
			break;
		batch_json_coro(w, s, &s->coro[idx ? idx[i] : i], hot);
	}
	json_writer_array_end(w);
	batch_json_calltrace(w, hot);
	batch_json_hot(w, hot);
	batch_json_ppt(w, ppt);
	json_writer_key(w, "replay");
	if (s->replay.on) {
		json_writer_object_begin(w);
		json_writer_uint_field(w, "pos_ns", s->ts - s->replay.t0);
		json_writer_uint_field(w, "t0", s->replay.t0);
		json_writer_uint_field(w, "t1", s->replay.t1);
		json_writer_object_end(w);
	} else {
		json_writer_null(w);
	}
	json_writer_object_end(w);
	json_writer_raw(w, "\n");
	json_writer_finish(w);
}
