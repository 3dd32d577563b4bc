/*
 * batch: print snapshots as text (like top -b) or as one JSON object per
 * line.  No curses.  See batch.c; the JSON schema is docs/JSON.md.
 */
#ifndef COROTOP_BATCH_H
#define COROTOP_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/engine.h"
#include "engine/model/snapshot.h"

/* The hot stacks a batch snapshot prints: a top list (engine_hot_rows,
 * ENGINE_HOT_BY_TOTAL) merged `by` granularity, the CallTrace statistics,
 * and how to name a frame. */
struct batch_hot {
	const struct engine_hot_stack *s;
	size_t n;
	enum engine_hot_by by; /* the rows' granularity (0: by function) */
	const struct engine_calltrace_stats *ct; /* NULL: no CallTrace */
	const char *(*name)(void *ctx, uint64_t addr, bool leaf, bool full,
			    char *buf, size_t len);
	/* A frame as a row `by` shows it (engine_hot_frame_label), or NULL:
	 * name(..., full false). */
	const char *(*label)(void *ctx, uint64_t addr, bool leaf,
			     enum engine_hot_by by, char *buf, size_t len);
	/* The stack row c is parked on (engine_parked_stack_of: called once
	 * per suspended row, so it must not search), or NULL: no
	 * "parked_stack" keys. */
	size_t (*parked)(void *ctx, const struct model_coro *c,
			 uint64_t *frames, size_t max, uint64_t *trace_id);
	/* Polled every BATCH_POLL_ROWS rows of a JSON snapshot (NULL: never):
	 * true ends the coroutine list there (a signal asks corotop to quit),
	 * and the line is still whole JSON. */
	bool (*interrupted)(void *ctx);
	void *ctx;
};

#define BATCH_POLL_ROWS 4096

/* One ppt buffer (attach mode) as a snapshot prints it: its state, and the
 * frames delivered since the previous snapshot -- the newest of them when
 * there were more than the caller copied (omitted says how many). */
struct batch_ppt_buffer {
	struct engine_ppt_buffer b;
	const struct ppt_desc *desc; /* NULL: not described */
	const unsigned char *bytes;  /* n frames of desc->frame_size bytes */
	const struct engine_ppt_frame *meta;
	size_t n;
	uint64_t omitted;
};

struct batch_ppt {
	struct engine_ppt_info info;
	const struct batch_ppt_buffer *buf;
	size_t n;
};

/* The rows idx[0..n) (indexes into s->coro, e.g. filtered and sorted), or
 * every record in snapshot order when idx is NULL. */
void batch_print_text(FILE *f, const struct snapshot *s, const uint32_t *idx,
		      size_t n, unsigned max_rows);
/* hot may be NULL: "calltrace" is then null and "hot_stacks" empty; ppt
 * NULL (or not enabled): "ppt" is null. */
void batch_print_json(FILE *f, const struct snapshot *s, const uint32_t *idx,
		      size_t n, const struct batch_hot *hot,
		      const struct batch_ppt *ppt);
/* The "Hot stacks" section of the text output: at most max_rows stacks,
 * one line each (functions, innermost first). */
void batch_print_hot_text(FILE *f, const struct batch_hot *hot,
			  unsigned max_rows);

/* batch_ppt.c: the "ppt" member of a JSON snapshot, and the text section
 * (max_rows frames per buffer, newest first). */
struct json_writer;
void batch_json_ppt(struct json_writer *w, const struct batch_ppt *ppt);
void batch_print_ppt_text(FILE *f, const struct batch_ppt *ppt,
			  unsigned max_rows);
/* ... and --list-buffers: the buffers of process pid (engine_list_buffers)
 * as one JSON object and a newline, or as text. */
void batch_print_buffers_json(FILE *f, int pid,
			      const struct engine_buffer_list *l);
void batch_print_buffers_text(FILE *f, int pid,
			      const struct engine_buffer_list *l);
/* corotop -p PID --list-buffers: read-only, text or JSON, on out; the
 * exit status (1: the process could not be read, said on stderr). */
int batch_list_buffers(int pid, bool json, FILE *out);

#endif
