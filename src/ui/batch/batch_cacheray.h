/*
 * batch_cacheray: the memory report of a Cacheray trace (corotop
 * --cacheray FILE -b), as text sections like top -b or as one JSON object
 * (docs/JSON.md, "Memory report").  No curses.  See batch_cacheray.c.
 */
#ifndef COROTOP_BATCH_CACHERAY_H
#define COROTOP_BATCH_CACHERAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

#include "cacheray/cacheray.h"

/* Rows per section in the text report (and hot lines / suspects in JSON). */
#define BATCH_CACHERAY_ROWS 20
/* Member rows per type in the text report. */
#define BATCH_CACHERAY_MEMBERS 32

/*
 * Read a whole trace -- a file, "-" for stdin, or a FIFO (read(2) in
 * chunks until end of file) -- and print its report to out, as text or
 * JSON.  0 when the trace was read to its end (a last record cut short is
 * reported in the output, not an error); 1 with a message in err when it
 * could not be opened or read, or when a record could not be parsed (the
 * report of what came before it is still printed, with the error); 2 with
 * a message in err, nothing printed, for what the memory view refuses too
 * (a directory, a terminal -- stdin included).
 */
int batch_cacheray_run(const char *path, bool json, FILE *out, char *err,
		       size_t errlen);

/* The report of what c has read so far; source names the input. */
void batch_cacheray_print_text(FILE *f, const struct cacheray *c,
			       const char *source);
void batch_cacheray_print_json(FILE *f, const struct cacheray *c,
			       const char *source);

#endif
