/*
 * batch: print snapshots as text (like top -b) or as one JSON object per
 * line.  No curses.  See batch.c; the JSON schema is docs/JSON.md.
 */
#ifndef COROTOP_BATCH_H
#define COROTOP_BATCH_H

#include <stdio.h>

#include "../engine/snapshot.h"

void batch_print_text(FILE *f, const struct snapshot *s, unsigned max_rows);
void batch_print_json(FILE *f, const struct snapshot *s);

#endif
