/*
 * batch: the model printed without curses.
 *
 * Text mirrors top -b: a summary header, then one row per coroutine.  JSON
 * writes one self-contained object per snapshot on one line (documented in
 * docs/JSON.md), so `corotop -b -f json ... | jq` works line by line.
 * Rows come in the order the caller gives (main.c: by model id, oldest
 * first, or by --sort).  The column set is a
 * const table, shared by the header and the rows.  WARN, the last column,
 * lists the lints a coroutine trips (lint_format tags), or "-" for none, so
 * every row splits into as many words as the header.
 */
#include "batch.h"
#include "column.h"

#include <inttypes.h>
#include <string.h>

struct batch_column {
	const char *title;
	int width;  /* negative: left aligned */
	int column; /* a column.c cell (enum column_id), or -1: use `cell` */
	void (*cell)(char *buf, size_t n, const struct snapshot *s,
		     const struct model_coro *c);
};

static void cell_addr(char *b, size_t n, const struct snapshot *s,
		      const struct model_coro *c)
{
	(void)s;
	snprintf(b, n, "0x%016" PRIx64, c->last_addr);
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
	/* Batch keeps fixed-width addresses and "-" for no warnings, so
	 * every row has as many words as the header. */
	{"ADDR", -18, -1, cell_addr},
	{"WARN", -5, -1, cell_warn},
};

#define BATCH_NCOLUMNS (sizeof(batch_columns) / sizeof(batch_columns[0]))

void batch_print_text(FILE *f, const struct snapshot *s, const uint32_t *idx,
		      size_t n, unsigned max_rows)
{
	char target[64], cell[64];
	unsigned rows = 0;

	snapshot_target_text(s, target, sizeof(target));
	fprintf(f, "corotop - %s - engine %s%s%s\n", target,
		s->sleeping ? "asleep" : "harvesting",
		s->error ? " - error: " : "", s->error ? s->error : "");
	fprintf(f,
		"Events: %" PRIu64 " total, %.0f/s, %" PRIu64 " lost, %" PRIu64
		" untraced, %" PRIu64 " torn\n",
		s->t.events, s->t.events_per_sec, s->t.lost, s->t.untraced,
		s->t.torn);
	fprintf(f,
		"Coroutines: %zu shown, %u running, %u suspended, %u dead; "
		"stations %u/%u, %" PRIu64 " recycled\n\n",
		idx ? n : s->count, s->t.running, s->t.suspended, s->t.dead,
		s->t.stations_allocated, s->t.stations_max, s->t.recycled);
	for (size_t k = 0; k < BATCH_NCOLUMNS; k++)
		fprintf(f, "%*s ", batch_columns[k].width,
			batch_columns[k].title);
	fputc('\n', f);
	if (!idx)
		n = s->count;
	for (size_t i = 0; i < n; i++) {
		const struct model_coro *c = &s->coro[idx ? idx[i] : i];

		if (max_rows && rows++ >= max_rows)
			break;
		for (size_t k = 0; k < BATCH_NCOLUMNS; k++) {
			const struct batch_column *col = &batch_columns[k];

			if (col->column >= 0)
				column_table[col->column].cell(
					cell, sizeof(cell), s, c);
			else
				col->cell(cell, sizeof(cell), s, c);
			fprintf(f, "%*s ", batch_columns[k].width, cell);
		}
		fputc('\n', f);
	}
	fputc('\n', f);
}

static void batch_json_target(FILE *f, const struct snapshot *s)
{
	fprintf(f, "\"target\":{\"pid\":%d,\"running\":%s,", (int)s->target.pid,
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

/* Free text: our error constants, and symbol names from the target's
 * files (the symbolizer keeps them printable ASCII); escaped anyway. */
static void batch_json_string(FILE *f, const char *str)
{
	fputc('"', f);
	for (const char *p = str; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if ((unsigned char)*p < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
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

void batch_print_json(FILE *f, const struct snapshot *s, const uint32_t *idx,
		      size_t n)
{
	char where[256];

	fprintf(f,
		"{\"ts\":%" PRIu64 ",\"wall_ns\":%" PRIu64
		",\"stations\":{\"allocated\":%u,\"max\":%u,\"recycled\":"
		"%" PRIu64 "},",
		s->ts, s->wall_ns, s->t.stations_allocated, s->t.stations_max,
		s->t.recycled);
	fprintf(f,
		"\"events\":{\"harvested\":%" PRIu64 ",\"lost\":%" PRIu64
		",\"untraced\":%" PRIu64 ",\"torn\":%" PRIu64
		",\"per_sec\":%.1f},",
		s->t.events, s->t.lost, s->t.untraced, s->t.torn,
		s->t.events_per_sec);
	fprintf(f, "\"engine\":{\"sleeping\":%s,\"observer\":%s,\"error\":",
		s->sleeping ? "true" : "false", s->observer ? "true" : "false");
	if (s->error)
		batch_json_string(f, s->error);
	else
		fputs("null", f);
	fputs("},", f);
	batch_json_target(f, s);
	fprintf(f,
		",\"counts\":{\"running\":%u,\"suspended\":%u,\"dead\":%u,"
		"\"seen\":%" PRIu64 "},",
		s->t.running, s->t.suspended, s->t.dead, s->t.coroutines_seen);
	fputs("\"warnings\":{", f);
	for (int k = 0; k < LINT_COUNT; k++)
		fprintf(f, "%s\"%s\":%u", k ? "," : "", lint_name(k),
			s->warn_counts[k]);
	fputs("},\"coroutines\":[", f);
	if (!idx)
		n = s->count;
	for (size_t i = 0; i < n; i++) {
		const struct model_coro *c = &s->coro[idx ? idx[i] : i];

		fprintf(f,
			"%s{\"id\":%" PRIu64 ",\"probe_id\":%" PRIu64
			",\"station\":%u,\"state\":\"%s\",\"tid\":%" PRIu64
			",\"addr\":\"0x%016" PRIx64 "\",\"seq\":%" PRIu64
			",\"switches\":%" PRIu64 ",\"lost\":%" PRIu64
			",\"sw_per_sec\":%.1f,\"run_pct\":%.1f,\"age_ns\":"
			"%" PRIu64 ",\"in_state_ns\":%" PRIu64 ",\"warn\":[",
			i ? "," : "", c->id, c->probe_id, c->station,
			snapshot_state_name(c->state), c->last_tid,
			c->last_addr, c->last_seq, c->switches, c->lost,
			c->sw_per_sec, snapshot_run_pct(s, c),
			snapshot_age_ns(s, c), snapshot_in_state_ns(s, c));
		batch_json_warn(f, c->warn);
		fputs("],\"where\":", f);
		batch_json_string(f, snapshot_where(s, c->last_addr, true,
						    where, sizeof(where)));
		fputs("}", f);
	}
	fputs("]}\n", f);
}
