/*
 * batch: print snapshots as text (like top -b) or as one JSON object per
 * line.  No curses.  See batch.c; the JSON schema is docs/JSON.md.
 */
#ifndef COROTOP_BATCH_H
#define COROTOP_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../engine/snapshot.h"

/* The rows idx[0..n) (indexes into s->coro, e.g. filtered and sorted), or
 * every record in snapshot order when idx is NULL. */
void batch_print_text(FILE *f, const struct snapshot *s, const uint32_t *idx,
		      size_t n, unsigned max_rows);
void batch_print_json(FILE *f, const struct snapshot *s, const uint32_t *idx,
		      size_t n);

#endif
