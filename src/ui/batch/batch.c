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

#include "common/jsonstr.h"

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

static void batch_json_target(FILE *f, const struct snapshot *s)
{
	fprintf(f, "\"target\":{\"pid\":%d,\"attached\":%s,\"running\":%s,",
		(int)s->target.pid, s->target.attached ? "true" : "false",
		s->target.running ? "true" : "false");
	if (s->target.exited && !s->target.term_signal)
		fprintf(f, "\"exit_status\":%d,\"term_signal\":null}",
			s->target.exit_code);
	else if (s->target.exited)
		fprintf(f, "\"exit_status\":null,\"term_signal\":%d}",
			s->target.term_signal);
	else
		fprintf(f, "\"exit_status\":null,\"term_signal\":null}");
}

/* The lint names of a mask, as JSON strings separated by commas. */
static void batch_json_warn(FILE *f, uint32_t mask)
{
	bool first = true;

	for (int k = 0; k < LINT_COUNT; k++) {
		if (!(mask & (1u << k)))
			continue;
		fprintf(f, "%s\"%s\"", first ? "" : ",", lint_name(k));
		first = false;
	}
}

static void batch_json_calltrace(FILE *f, const struct batch_hot *hot)
{
	const struct engine_calltrace_stats *ct = hot ? hot->ct : NULL;

	fputs(",\"calltrace\":", f);
	if (!ct || !ct->enabled) {
		fputs("null", f);
		return;
	}
	fprintf(f,
		"{\"rotations\":%" PRIu64 ",\"collected\":%" PRIu64
		",\"dropped\":%" PRIu64 ",\"dropped_weight\":%" PRIu64
		",\"stacks\":%" PRIu64 ",\"weight\":%" PRIu64
		",\"attributed\":%" PRIu64 ",\"unattributed\":%" PRIu64
		",\"evicted_weight\":%" PRIu64 ",\"parked\":%" PRIu64
		",\"error\":",
		ct->rotor.rotations, ct->rotor.weight, ct->rotor.dropped,
		ct->rotor.dropped_weight, ct->hot.stacks, ct->hot.weight,
		ct->hot.attributed, ct->hot.unattributed,
		ct->hot.evicted_weight, ct->parked.kept);
	if (ct->failed || ct->warning[0])
		jsonstr_write_cstr(f, ct->warning);
	else
		fputs("null", f);
	fputs(",\"snapshots\":", f);
	if (ct->snapshots.enabled)
		fprintf(f,
			"{\"taken\":%" PRIu64 ",\"lapped\":%" PRIu64
			",\"torn\":%" PRIu64 ",\"skipped\":%" PRIu64
			",\"bad\":%" PRIu64 ",\"busy\":%" PRIu64
			",\"cfi\":%" PRIu64 ",\"spliced\":%" PRIu64
			",\"fp\":%" PRIu64 ",\"overflow\":%" PRIu64
			",\"walk_ns\":%" PRIu64 ",\"failed\":%s}",
			ct->snapshots.taken, ct->snapshots.lapped,
			ct->snapshots.torn, ct->snapshots.skipped,
			ct->snapshots.bad, ct->snapshots.busy,
			ct->snapshots.cfi, ct->snapshots.spliced,
			ct->snapshots.fp, ct->snapshots.overflow,
			ct->snapshots.walk_ns,
			ct->snapshots.failed ? "true" : "false");
	else
		fputs("null", f);
	fputc('}', f);
}

static void batch_json_hot(FILE *f, const struct batch_hot *hot)
{
	char sym[256];

	fputs(",\"hot_by\":", f);
	if (hot)
		fprintf(f, "\"%s\"", engine_hot_by_name(hot->by));
	else
		fputs("null", f);
	fputs(",\"hot_stacks\":[", f);
	for (size_t i = 0; hot && i < hot->n; i++) {
		const struct engine_hot_stack *h = &hot->s[i];

		fprintf(f,
			"%s{\"id\":%" PRIu64 ",\"stack_id\":%" PRIu64
			",\"weight\":%" PRIu64
			",\"window_weight\":%.1f,\"self_pct\":%.1f,"
			"\"total_pct\":%.1f,\"merged\":%" PRIu32
			",\"frames\":[",
			i ? "," : "", h->trace_id, h->stack_id, h->total,
			h->weight, h->self_pct, h->total_pct,
			h->merged ? h->merged : 1);
		for (uint32_t k = 0; k < h->nframes; k++) {
			fprintf(f,
				"%s{\"addr\":\"0x%016" PRIx64 "\",\"symbol\":",
				k ? "," : "", h->frames[k]);
			jsonstr_write_cstr(f, hot->name(hot->ctx, h->frames[k],
							k == 0, true, sym,
							sizeof(sym)));
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputc(']', f);
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

/* ,"parked_stack":{"id":N,"frames":[...]} when the stack the coroutine is
 * parked on was captured (--parked-stacks) and collected; else nothing. */
static void batch_json_parked(FILE *f, const struct batch_hot *hot,
			      const struct model_coro *c)
{
	uint64_t frames[BATCH_PARKED_FRAMES], trace = 0;
	char sym[256];
	size_t n;

	if (!hot || !hot->parked || !hot->name || c->state != MODEL_SUSPENDED)
		return;
	n = hot->parked(hot->ctx, c, frames, BATCH_PARKED_FRAMES, &trace);
	if (!n)
		return;
	fprintf(f, ",\"parked_stack\":{\"id\":%" PRIu64 ",\"frames\":[", trace);
	for (size_t k = 0; k < n; k++) {
		fprintf(f, "%s{\"addr\":\"0x%016" PRIx64 "\",\"symbol\":",
			k ? "," : "", frames[k]);
		jsonstr_write_cstr(f, hot->name(hot->ctx, frames[k], k == 0,
						true, sym, sizeof(sym)));
		fputc('}', f);
	}
	fputs("]}", f);
}

/* "contexts":{"untracked":N,"switches_unseen":N},"frames":{...,
 * "walk_from":{...}},
 * "processes":[...], */
static void batch_json_procs(FILE *f, const struct snapshot *s)
{
	fprintf(f,
		"\"contexts\":{\"untracked\":%" PRIu64
		",\"switches_unseen\":%" PRIu64
		"},\"frames\":{\"not_code\":%" PRIu64
		",\"not_after_call\":%" PRIu64
		",\"walk_from\":{\"saved\":%" PRIu64 ",\"probe\":%" PRIu64
		",\"saved_refused\":%" PRIu64
		"}},\"processes\":{\"seen\":%zu,\"list\":[",
		s->contexts_untracked, s->switches_unseen, s->frames_not_code,
		s->frames_not_after_call, s->walks_from_saved,
		s->walks_from_probe, s->walks_saved_refused, s->procs_total);
	for (size_t k = 0; k < s->nprocs; k++) {
		const struct snapshot_proc *p = &s->procs[k];

		fprintf(f, "%s{\"pid\":%" PRIu32 ",\"name\":", k ? "," : "",
			p->pid);
		jsonstr_write_cstr(f, p->name);
		fprintf(f,
			",\"gone\":%s,\"contexts_untracked\":%" PRIu64
			",\"switches_unseen\":%" PRIu64 "}",
			p->gone ? "true" : "false", p->contexts_untracked,
			p->switches_unseen);
	}
	fputs("]},", f);
}

/* Where a running coroutine's thread waits in the kernel (its syscall),
 * or null. */
static void batch_json_kernel(FILE *f, const struct snapshot *s,
			      const struct model_coro *c)
{
	char buf[32];
	const char *t = snapshot_kernel_text(s, c, buf, sizeof(buf));

	if (t)
		jsonstr_write_cstr(f, t);
	else
		fputs("null", f);
}

void batch_print_json(FILE *f, const struct snapshot *s, const uint32_t *idx,
		      size_t n, const struct batch_hot *hot,
		      const struct batch_ppt *ppt)
{
	char where[256], name[256];

	fprintf(f,
		"{\"ts\":%" PRIu64 ",\"wall_ns\":%" PRIu64
		",\"stations\":{\"allocated\":%u,\"max\":%u,\"recycled\":"
		"%" PRIu64 "},",
		s->ts, s->wall_ns, s->t.stations_allocated, s->t.stations_max,
		s->t.recycled);
	fprintf(f,
		"\"events\":{\"harvested\":%" PRIu64 ",\"lost\":%" PRIu64
		",\"untraced\":%" PRIu64 ",\"torn\":%" PRIu64
		",\"before_start\":%" PRIu64 ",\"inferred\":%" PRIu64
		",\"per_sec\":%.1f},",
		s->t.events, s->t.lost, s->t.untraced, s->t.torn,
		s->t.before_start, s->t.inferred, s->t.events_per_sec);
	fprintf(f,
		"\"engine\":{\"sleeping\":%s,\"observer\":%s,"
		"\"pass_gap_max_ms\":%.3f,\"error\":",
		s->sleeping ? "true" : "false", s->observer ? "true" : "false",
		(double)s->pass_gap_max_ns / 1e6);
	if (s->error)
		jsonstr_write_cstr(f, s->error);
	else
		fputs("null", f);
	fputs(",\"warning\":", f);
	if (s->warning)
		jsonstr_write_cstr(f, s->warning);
	else
		fputs("null", f);
	if (s->record.on) {
		fputs(",\"record\":{\"path\":", f);
		jsonstr_write_cstr(f, s->record.path ? s->record.path : "");
		fprintf(f,
			",\"bytes\":%" PRIu64 ",\"intervals\":%" PRIu64
			",\"dropped\":%" PRIu64 ",\"stopped\":%s}",
			s->record.bytes, s->record.intervals, s->record.dropped,
			s->record.stopped ? "true" : "false");
	}
	fputs("},", f);
	batch_json_target(f, s);
	fprintf(f,
		",\"counts\":{\"running\":%u,\"suspended\":%u,\"dead\":%u,"
		"\"seen\":%" PRIu64 "},",
		s->t.running, s->t.suspended, s->t.dead, s->t.coroutines_seen);
	batch_json_procs(f, s);
	fputs("\"warnings\":{", f);
	for (int k = 0; k < LINT_COUNT; k++)
		fprintf(f, "%s\"%s\":%u", k ? "," : "", lint_name(k),
			s->warn_counts[k]);
	fputs("},\"coroutines\":[", f);
	if (!idx)
		n = s->count;
	for (size_t i = 0; i < n; i++) {
		const struct model_coro *c = &s->coro[idx ? idx[i] : i];

		if (i && i % BATCH_POLL_ROWS == 0 && hot && hot->interrupted &&
		    hot->interrupted(hot->ctx))
			break;
		fprintf(f,
			"%s{\"id\":%" PRIu64 ",\"probe_id\":%" PRIu64
			",\"probe_id_hex\":\"%" PRIx64 "\""
			",\"station\":%u,\"pid\":%" PRIu32
			",\"state\":\"%s\",\"tid\":%" PRIu64
			",\"addr\":\"0x%016" PRIx64 "\",\"seq\":%" PRIu64
			",\"switches\":%" PRIu64 ",\"lost\":%" PRIu64
			",\"sw_per_sec\":%.1f,\"run_pct\":%.1f,\"age_ns\":"
			"%" PRIu64 ",\"in_state_ns\":%" PRIu64 ",\"warn\":[",
			i ? "," : "", c->id, c->probe_id, c->probe_id,
			c->station, c->pid ? c->pid : (uint32_t)s->target.pid,
			snapshot_state_name(c->state), c->last_tid,
			c->last_addr, c->last_seq, c->switches, c->lost,
			c->sw_per_sec, snapshot_run_pct(s, c),
			snapshot_age_ns(s, c), snapshot_in_state_ns(s, c));
		batch_json_warn(f, c->warn);
		/* A suspend the program marked a long wait: why a long
		 * suspension is not a lost-wakeup. */
		fprintf(f,
			"],\"long_wait\":%s,\"at_exit\":%s,\"inferred\":%s,"
			"\"kernel\":",
			c->long_wait ? "true" : "false",
			c->at_exit ? "true" : "false",
			c->inferred ? "true" : "false");
		batch_json_kernel(f, s, c);
		/* One of the program's coroutines, or the scheduler's own. */
		fprintf(f, ",\"kind\":\"%s\"", snapshot_kind_name(c->kind));
		fputs(",\"name\":", f);
		jsonstr_write_cstr(f, snapshot_name(s, c, name, sizeof(name)));
		fputs(",\"where\":", f);
		jsonstr_write_cstr(f,
				   snapshot_where_of(s, c, c->last_addr, true,
						     where, sizeof(where)));
		/* WHERE learned at an earlier park at the same switch. */
		fprintf(f, ",\"where_learned\":%s",
			c->where_learned ? "true" : "false");
		batch_json_parked(f, hot, c);
		fputs("}", f);
	}
	fputc(']', f);
	batch_json_calltrace(f, hot);
	batch_json_hot(f, hot);
	batch_json_ppt(f, ppt);
	if (s->replay.on)
		fprintf(f,
			",\"replay\":{\"pos_ns\":%" PRIu64 ",\"t0\":%" PRIu64
			",\"t1\":%" PRIu64 "}",
			s->ts - s->replay.t0, s->replay.t0, s->replay.t1);
	else
		fputs(",\"replay\":null", f);
	fputs("}\n", f);
}
