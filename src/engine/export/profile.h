/*
 * profile: weighted stacks with names, ready to be written as a flame graph
 * input (folded.c) or a speedscope file (speedscope.c).  See profile.c.
 */
#ifndef COROTOP_PROFILE_H
#define COROTOP_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct strpool;

/* One frame: interned strings, so equal names are equal pointers. */
struct profile_frame {
	const char *name; /* function (or module+0xOFF, or 0xADDR) */
	const char *file; /* source file, or NULL */
};

struct profile_sample {
	uint64_t weight;
	uint32_t first; /* frames[first .. first + n): innermost first */
	uint32_t n;
};

struct profile {
	const char *name; /* what the profile is of (interned) */
	struct profile_sample *s;
	size_t ns, cap_s;
	struct profile_frame *frames;
	size_t nframes, cap_frames;
	uint64_t total; /* sum of the weights */
	struct strpool *pool;
};

/* An output format: a const table entry, dispatched by profile_write. */
struct profile_format {
	const char *name; /* "folded", "speedscope" */
	bool (*write)(FILE *f, const struct profile *p); /* false: I/O */
};

extern const struct profile_format profile_folded;
extern const struct profile_format profile_speedscope;

bool profile_init(struct profile *p, const char *name);
void profile_finish(struct profile *p);

/* Add a stack of n frames, innermost first (names and files, NULL file =
 * none).  Stacks without weight are skipped.  False when out of memory. */
bool profile_add(struct profile *p, const char *const *names,
		 const char *const *files, uint32_t n, uint64_t weight);

/*
 * Merge the samples whose stacks are the same frames (names and files)
 * into one that carries their summed weight, ordered by their names root
 * first (the order of folded's lines): a profile of one sample per event
 * becomes one of its distinct stacks, as speedscope.c's writer expects
 * from a profile.  The total stays.  False when out of memory (p as it was).
 */
bool profile_fold(struct profile *p);

/*
 * Write p in format fmt to path atomically: into a temporary file in the
 * same directory (0600), then renamed over path, so a reader never sees a
 * half-written profile and a failed write leaves path as it was.  False
 * with a message for people in err.
 */
bool profile_write(const struct profile *p, const struct profile_format *fmt,
		   const char *path, char *err, size_t errlen);

#endif
