/*
 * jsonl: the per-event JSON-lines log, in the upstream Go engine's exact
 * record shape so that its exporters (SQLite, CSV, ...) read our files.
 * See jsonl.c.
 */
#ifndef COROTOP_JSONL_H
#define COROTOP_JSONL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct jsonl {
	FILE *f;	   /* unbuffered: buf holds the lines */
	char *buf;	   /* whole lines not yet written */
	size_t len;	   /* of buf */
	uint64_t file_len; /* the file's size: whole lines only */
	uint64_t written;  /* lines handed to jsonl_write */
	int err;	   /* errno of the failure */
	bool regular;	   /* a regular file (cut back on failure) */
	bool failed; /* a write failed: the log stopped at the last whole line;
			reported by the owner */
};

bool jsonl_open(struct jsonl *j, const char *path, char *err, size_t errlen);
void jsonl_write(struct jsonl *j, uint64_t probe_id, uint64_t tid,
		 uint64_t addr, uint64_t seq, bool is_active, uint64_t ts);
/* The one formatting of a record, for the live log and corotop convert:
 * buf gets the line from '{' through "ts":N, NUL-terminated, the closing
 * "}\n" left to the caller (convert adds "name" before it).  snprintf's
 * result. */
int jsonl_format(char *buf, size_t n, uint64_t probe_id, uint64_t tid,
		 uint64_t addr, uint64_t seq, bool is_active, uint64_t ts);
/* Flush to the kernel; false (with errno set) if any write failed.  After
 * a failure nothing more is written. */
bool jsonl_flush(struct jsonl *j);
bool jsonl_close(struct jsonl *j);

#endif
