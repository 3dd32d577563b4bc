/*
 * output: what a launched target prints, through a pty or pipe whose one
 * reader is the keeper.  See output.c.
 *
 * One user: every function runs on the thread that launched the target or
 * on the one that drains the view (the TUI's loop), never both at once.
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

/* The copy pipe's size asked for (F_SETPIPE_SZ; the system may refuse). */
#define OUTPUT_COPY_PIPE (1 << 20)

struct output;

/*
 * The target's stdout and stderr: a pty when `pty` (a pipe when none can
 * be had, or !pty), sized cols x rows (0: 80x24).  `view`: the TUI's -- the
 * pty is its stdin too, and a copy of the output comes back down a pipe for
 * output_drain.  NULL and why in err on failure.
 */
struct output *output_create(bool pty, bool view, int cols, int rows, char *err,
			     size_t errlen);
/* Open path as --output opens it (appending, 0600 when created, never
 * through a symbolic link, a regular file or a device): the descriptor, or
 * -1 and why in err.  The keeper writes it. */
int output_file_open(const char *path, char *err, size_t errlen);
/* Closes everything; NULL: nothing. */
void output_destroy(struct output *o);

/* The descriptors the target gets as 0 (-1: stdin is left as it is) and
 * as 1 and 2. */
int output_target_in(const struct output *o);
int output_target_out(const struct output *o);
/* The target runs: close our copy of its end, so that its exit reads as
 * the end of the output. */
void output_spawned(struct output *o);

/* For the keeper: the end it reads (-1 once handed), and the copy pipe's
 * write end (-1: no view, or handed). */
int output_source(const struct output *o);
int output_copy_end(const struct output *o);
/* The keeper has its copies: close ours, so that it is the one reader. */
void output_handed(struct output *o);

/* The view's end, to poll for reading; -1 once the output ended, or
 * without a view. */
int output_fd(const struct output *o);

/* Read what the keeper copied, without waiting, split into lines.  Returns
 * the number of lines completed. */
size_t output_drain(struct output *o);
/* The copy ended: the target and its children closed the output (or the
 * keeper is gone). */
bool output_ended(const struct output *o);
/* Why the destination stopped taking the output (keeper_sink_error), or
 * "".  The first one set stays. */
const char *output_file_error(const struct output *o);
void output_set_file_error(struct output *o, const char *what);

/* Tests only (corotop-hooked): called after each read of the copy. */
extern void (*output_test_hook)(void);

/* Lines ever completed, and the oldest still kept: lines first .. total-1
 * can be read. */
uint64_t output_total(const struct output *o);
uint64_t output_first(const struct output *o);
/* Line n (first <= n < total), printable text only; "" when not kept. */
const char *output_line(const struct output *o, uint64_t n);
/* The line being written (no newline yet), or "". */
const char *output_partial(const struct output *o);

#endif
