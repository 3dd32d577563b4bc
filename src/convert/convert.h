/*
 * convert: a Heph trace rewritten for other tools (corotop convert) --
 * Chrome Trace Event JSON for Perfetto and chrome://tracing, coroTracer's
 * JSONL transition log, and where coroutines parked as folded stacks or a
 * speedscope profile.  See convert.c; the shapes are in docs/WIRE.md
 * ("Converters").
 */
#ifndef COROTOP_CONVERT_H
#define COROTOP_CONVERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct heph_file;

enum convert_to {
	CONVERT_CHROME = 0,
	CONVERT_JSONL,
	CONVERT_FOLDED,
	CONVERT_SPEEDSCOPE,
};

/* A const table of the formats, for the command line and its help. */
struct convert_format {
	const char *name;
	enum convert_to to;
	const char *what;
};

extern const struct convert_format convert_formats[];
extern const size_t convert_nformats;

/*
 * What a conversion read and wrote.  events, coroutines, streams,
 * migrations and lost are counted the same way by chrome and jsonl (one
 * walk in start order through one definition of a coroutine), so the two
 * summaries of one file agree; folded and speedscope count events only.
 */
struct convert_stats {
	uint64_t events;     /* event packets read */
	uint64_t coroutines; /* coroutines with an interval (chrome: tracks,
				without the ones only a "lost" event is on) */
	uint64_t streams;    /* streams (OS threads) they ran on */
	uint64_t migrations; /* running intervals on another stream than the
				coroutine's previous running interval */
	uint64_t lost;	     /* "lost" events (their count attributes summed) */
	uint64_t written;    /* records (trace events, lines, stacks) written */
	uint64_t nudged;     /* chrome: starts moved 1 ns to stay visible */
	uint64_t skipped;    /* events the format has no place for */
};

/* The name recorded for frame addr (leaf: the innermost), or NULL. */
typedef const char *(*convert_name_fn)(void *ctx, uint64_t addr, bool leaf);

/* Write f as `to` to out.  names (may be NULL) names profile frames.
 * False with a message when out could not be written or memory ran out. */
bool convert_write(const struct heph_file *f, enum convert_to to, FILE *out,
		   convert_name_fn names, void *ctx, struct convert_stats *st,
		   char *err, size_t errlen);

/* The summary line of st, the part every format shares: "N events, N
 * coroutines on N streams, N migrations, N lost" (lost: transitions the
 * "lost" events count).  Returns buf. */
const char *convert_summary(const struct convert_stats *st, char *buf,
			    size_t len);

/* A packet of the trace that could not be read: its byte offset and why. */
typedef void (*convert_problem_fn)(void *ctx, uint64_t off, const char *what);

struct convert_result {
	struct convert_stats st;
	size_t events;	 /* event packets indexed */
	size_t problems; /* packets that could not be read, in all */
	size_t told;	 /* ... of which problem() was told */
};

/*
 * corotop convert's entry point, in two steps so that nothing is written
 * before the trace is known to open:
 *   convert_create opens the Heph trace at path in (mapped; jsonl in start
 *   order) and tells problem() (may be NULL) about the packets it could
 *   not read -- NULL with a message in err when it cannot be opened;
 *   convert_write_to writes it as `to` to out, profile frames named by
 *   function from the names the recording carries -- false with a message
 *   when out could not be written;
 *   convert_destroy lets it go.
 * The trace is mapped: a file that shrinks meanwhile raises SIGBUS, which
 * the caller handles.
 */
struct convert;
struct convert *convert_create(const char *in, enum convert_to to,
			       convert_problem_fn problem, void *ctx,
			       struct convert_result *res, char *err,
			       size_t errlen);
bool convert_write_to(struct convert *c, FILE *out, struct convert_result *res,
		      char *err, size_t errlen);
void convert_destroy(struct convert *c);

/* folded and speedscope: the parked intervals' stacks of f, weighted by
 * their nanoseconds, folded to distinct stacks and written to out by fmt
 * (engine/export/profile.h); st counts events, and stacks as written.
 * False when memory ran out or out could not be written.
 * (convert_parked.c) */
struct profile_format;
bool convert_parked(const struct heph_file *f, const struct profile_format *fmt,
		    FILE *out, convert_name_fn names, void *ctx,
		    struct convert_stats *st);

/* corotop convert --to heph: the plain Heph bytes of the trace at in to
 * out -- a compressed recording decompressed frame by frame (frames that
 * can not be read are told to problem() and left out), a plain one
 * copied.  *bytes: written; *problems: told.  False with a message when in
 * can not be read or out written.  (convert_heph.c) */
bool convert_heph(const char *in, FILE *out, convert_problem_fn problem,
		  void *ctx, uint64_t *bytes, size_t *problems, char *err,
		  size_t errlen);

#endif
