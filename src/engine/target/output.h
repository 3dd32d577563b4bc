/*
 * output: what a launched target prints, through a terminal corotop owns.
 * See output.c.
 *
 * One reader: every function but output_create runs on the thread that
 * drains it (the TUI's loop).
 */
#ifndef COROTOP_OUTPUT_H
#define COROTOP_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Lines kept for the output view; older ones are dropped (the file, when
 * there is one, keeps everything). */
#define OUTPUT_LINES 4096
/* A longer line is kept as several (the file keeps it whole). */
#define OUTPUT_LINE_MAX 1024

struct output;

/*
 * A pty (a pipe when no pty can be had) for the target's stdin, stdout
 * and stderr, sized cols x rows (0: 80x24); and, when path is not NULL,
 * the file every byte read is appended to (created 0600 if missing, never
 * through a symbolic link).  NULL and why in err on failure.
 */
struct output *output_create(const char *path, int cols, int rows, char *err,
			     size_t errlen);
/* Open path as --output opens it (appending, 0600 when created, never
 * through a symbolic link, a regular file or a device): the descriptor, or
 * -1 and why in err.  Batch mode gives it to the target directly. */
int output_file_open(const char *path, char *err, size_t errlen);
/* Closes everything; NULL: nothing. */
void output_destroy(struct output *o);

/* The descriptor the target gets as 0, 1 and 2 (-1 for 0 with a pipe:
 * stdin is then left as it is). */
int output_target_in(const struct output *o);
int output_target_out(const struct output *o);
/* The target runs: close our copy of its end, so that its exit reads as
 * the end of the output. */
void output_spawned(struct output *o);

/* Our end, to poll for reading; -1 once the output ended. */
int output_fd(const struct output *o);
/* The file's descriptor, or -1 (the keeper appends to it when corotop is
 * gone). */
int output_file_fd(const struct output *o);

/* Read what is there, without waiting: appended to the file, split into
 * lines.  Returns the number of lines completed. */
size_t output_drain(struct output *o);
/* The end of the output was read (the target and its children closed it),
 * or reading failed. */
bool output_ended(const struct output *o);
/* The first write to the file that failed, or "" (it is not retried). */
const char *output_file_error(const struct output *o);

/* Lines ever completed, and the oldest still kept: lines first .. total-1
 * can be read. */
uint64_t output_total(const struct output *o);
uint64_t output_first(const struct output *o);
/* Line n (first <= n < total), printable text only; "" when not kept. */
const char *output_line(const struct output *o, uint64_t n);
/* The line being written (no newline yet), or "". */
const char *output_partial(const struct output *o);

#endif
