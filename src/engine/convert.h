/*
 * convert: a Heph trace rewritten for other tools (corotop convert) --
 * Chrome Trace Event JSON for Perfetto and chrome://tracing, coroTracer's
 * JSONL transition log, and folded stacks of where coroutines parked.  See
 * convert.c; the shapes are in docs/WIRE.md ("Converters").
 */
#ifndef COROTOP_CONVERT_H
#define COROTOP_CONVERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/heph/hephfile.h"

enum convert_to {
	CONVERT_CHROME = 0,
	CONVERT_JSONL,
	CONVERT_FOLDED,
};

/* A const table of the formats, for the command line and its help. */
struct convert_format {
	const char *name;
	enum convert_to to;
	const char *what;
};

extern const struct convert_format convert_formats[];
extern const size_t convert_nformats;

struct convert_stats {
	uint64_t events;  /* event packets read */
	uint64_t written; /* records (trace events, lines, stacks) written */
	uint64_t nudged;  /* chrome: start times moved 1 ns to stay visible */
	uint64_t lost;	  /* "lost" events (their count attributes summed) */
	uint64_t skipped; /* events the format has no place for */
};

/* The name recorded for frame addr (leaf: the innermost), or NULL. */
typedef const char *(*convert_name_fn)(void *ctx, uint64_t addr, bool leaf);

/* Write f as `to` to out.  names (may be NULL) names folded frames.
 * False with a message when out could not be written or memory ran out. */
bool convert_write(const struct heph_file *f, enum convert_to to, FILE *out,
		   convert_name_fn names, void *ctx, struct convert_stats *st,
		   char *err, size_t errlen);

#endif
