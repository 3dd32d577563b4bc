/*
 * cray_source: where the memory view's Cacheray trace comes from -- a
 * regular file, stdin ("-") or a FIFO still being written -- read without
 * blocking, a budget at a time, into the streaming reader
 * (src/cacheray), with the reading's state for the header.  No curses,
 * no event loop: the view decides when to call cray_source_read.  See
 * cray_source.c.
 */
#ifndef COROTOP_CRAY_SOURCE_H
#define COROTOP_CRAY_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "cacheray/cacheray.h"

enum cray_state {
	CRAY_READING = 0,
	CRAY_COMPLETE,	/* end of file on a record boundary */
	CRAY_TRUNCATED, /* end of file inside a record */
	CRAY_BAD,	/* a record could not be parsed: reading stopped */
	CRAY_FAILED,	/* read(2) failed: reading stopped */
};

/* What one cray_source_read call ended with. */
enum cray_step {
	CRAY_STEP_MORE = 0, /* the budget is spent; more may be there */
	CRAY_STEP_WAIT,	    /* nothing to read now (pipe or FIFO) */
	CRAY_STEP_DONE,	    /* the state is final: stop reading */
};

struct cray_source {
	struct cacheray *c;
	int fd;
	bool own_fd;	 /* opened here (not stdin): closed here */
	bool pollable;	 /* pipe, FIFO, socket: wait for readiness */
	int saved_flags; /* stdin's file status flags, restored */
	uint64_t size;	 /* regular file: bytes to read; else 0 */
	uint64_t got;	 /* bytes read from fd */
	enum cray_state state;
	char name[256];	   /* the path as given ("(stdin)" for -) */
	char problem[320]; /* CRAY_BAD / CRAY_FAILED: what happened */
	unsigned char *buf;
};

/*
 * Open path ("-": stdin) for reading without blocking, and a reader for
 * it.  Refuses a directory and a terminal.  False with a message for
 * people in err; *usage is set when the argument itself is wrong (a
 * directory, a terminal) rather than unreadable.
 */
bool cray_source_open(struct cray_source *s, const char *path, char *err,
		      size_t errlen, bool *usage);
/* Closes what open opened, restores stdin's flags, frees the reader. */
void cray_source_close(struct cray_source *s);

/* Read and analyze up to budget bytes (at least one chunk). */
enum cray_step cray_source_read(struct cray_source *s, size_t budget);

/* Percent of a regular file read, or -1 when the size is not known. */
int cray_source_percent(const struct cray_source *s);

/* A reading rate as the header shows it, scaled: "12 records/s",
 * "3.4 K records/s", "51.2 M records/s". */
void cray_source_rate_text(double per_s, char *b, size_t n);

/*
 * Whether the trace open on fd (path as given, "-": stdin; st its fstat)
 * is one that --cacheray refuses, the view and the batch report alike: a
 * directory, or a terminal (a read would wait for typing).  True with the
 * message in err; that is a usage error (exit 2).
 */
bool cray_source_refuse(const char *path, int fd, const struct stat *st,
			char *err, size_t errlen);

#endif
