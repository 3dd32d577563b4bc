/*
 * output: the target's stdout and stderr go to a pty (a pipe where no pty
 * is wanted or to be had) that corotop makes, and the keeper (keeper.c)
 * is the one process that reads it.
 *
 * Why the keeper.  The keeper outlives corotop, so what the target prints
 * goes on reaching its destination -- the --output file, or in batch mode
 * corotop's stderr -- when corotop is killed (a read by a process about to
 * die loses what it read), and after corotop quits while something the
 * target forked still holds the pty.  corotop itself never touches the
 * destination: the keeper writes it and reports the first failed write
 * (keeper_sink_error), which corotop turns into a message and exit status
 * 1.
 *
 * Two uses.
 *   - The TUI (view): a pty, also the target's stdin, so that a program
 *     that asks isatty(1) still sees a terminal and what it prints never
 *     lands in the table; the keeper sends a copy of every byte down a
 *     pipe, without ever waiting on it, and the output view reads that
 *     pipe (output_drain).  A copy that found the pipe full is dropped,
 *     and a line says so: the view may miss text, the file never does.
 *   - Batch mode: stdin stays corotop's; stdout and stderr are a pty when
 *     they would have been a terminal (corotop's stderr is one and there
 *     is no --output), else a pipe -- the target sees the same isatty(1)
 *     as when it wrote to the destination itself.  Nobody reads a copy.
 *
 * The slave is not made the target's controlling terminal: the target
 * stays in corotop's session and process group, so Ctrl-C and job control
 * act on both as before; the pty only carries bytes.  Output processing is
 * off on the slave (no "\n" -> "\r\n"), and so is echo (nothing is typed
 * into it).  A read of the target's stdin waits, as it would on a terminal
 * nobody types into; the TUI needs the real one.
 *
 * The view keeps the last OUTPUT_LINES lines.  Kept lines hold printable
 * text only: escape sequences (colours, cursor moves, titles) are dropped,
 * a tab becomes spaces, and a carriage return not followed by a newline
 * starts the line over, as a progress bar means it.  Bytes of 0x80 and
 * above pass (UTF-8); the drawing decides what it can show.
 */
#define _GNU_SOURCE
#include "engine/launch/output.h"

#include "common/appendfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

enum output_esc {
	ESC_NONE = 0, /* text */
	ESC_START,    /* after ESC */
	ESC_CSI,      /* ESC [ ... final byte */
	ESC_STRING,   /* ESC ] (OSC), P, X, ^, _ ... BEL or ESC \ */
	ESC_STRING_ESC,
};

struct output {
	int source; /* the pty master or the pipe's read end, until the
		       keeper has it; then -1 */
	int target; /* the target's end, -1 once it runs */
	bool is_pty;
	bool view;   /* the TUI's: stdin too, and a copy to read */
	int copy[2]; /* the copy pipe: [0] ours, [1] the keeper's */
	bool ended;
	char file_error[200];

	/* The line ring: lines first .. total-1, line n at n % OUTPUT_LINES. */
	char *line[OUTPUT_LINES];
	uint64_t total;
	uint64_t first;

	/* The line being read. */
	char part[OUTPUT_LINE_MAX + 1];
	size_t len;
	enum output_esc esc;
	bool cr; /* a carriage return came last */
};

int output_file_open(const char *path, char *err, size_t errlen)
{
	struct stat st;
	bool refused;
	int fd = appendfile_open(path, &st, &refused);

	if (fd < 0 && refused)
		snprintf(err, errlen, "--output %s: not a regular file", path);
	else if (fd < 0)
		snprintf(err, errlen, "cannot open --output file %s: %s", path,
			 strerror(errno));
	return fd;
}

static bool output_open_pty(struct output *o, int cols, int rows)
{
	struct winsize ws = {.ws_row = (unsigned short)(rows > 0 ? rows : 24),
			     .ws_col = (unsigned short)(cols > 0 ? cols : 80)};
	struct termios tio;
	char name[128];
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (m < 0)
		return false;
	if (grantpt(m) < 0 || unlockpt(m) < 0 ||
	    ptsname_r(m, name, sizeof(name)) != 0)
		goto err_master;
	o->target = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (o->target < 0)
		goto err_master;
	if (tcgetattr(o->target, &tio) == 0) {
		tio.c_oflag &= ~(tcflag_t)OPOST;
		tio.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
		tcsetattr(o->target, TCSANOW, &tio);
	}
	ioctl(m, TIOCSWINSZ, &ws);
	o->source = m;
	o->is_pty = true;
	return true;
err_master:
	close(m);
	return false;
}

struct output *output_create(bool pty, bool view, int cols, int rows, char *err,
			     size_t errlen)
{
	struct output *o = calloc(1, sizeof(*o));
	int p[2];

	if (!o) {
		snprintf(err, errlen, "out of memory for the target's output");
		return NULL;
	}
	o->source = o->target = o->copy[0] = o->copy[1] = -1;
	o->view = view;
	if (!(pty && output_open_pty(o, cols, rows))) {
		/* No pty wanted, or none to be had (none left, or /dev/pts
		 * missing): a pipe still carries the output. */
		if (pipe2(p, O_CLOEXEC) < 0) {
			snprintf(err, errlen,
				 "cannot make a pty or pipe for the target's "
				 "output: %s",
				 strerror(errno));
			goto err;
		}
		o->source = p[0];
		o->target = p[1];
	}
	/* The keeper polls it and reads what is there. */
	if (fcntl(o->source, F_SETFL, fcntl(o->source, F_GETFL) | O_NONBLOCK) <
	    0) {
		snprintf(err, errlen, "target output: %s", strerror(errno));
		goto err;
	}
	if (view) {
		if (pipe2(o->copy, O_CLOEXEC | O_NONBLOCK) < 0) {
			snprintf(err, errlen,
				 "cannot make a pipe for the output view: %s",
				 strerror(errno));
			goto err;
		}
		/* Room for bursts while the TUI draws; the default 64 KiB
		 * when the system refuses more. */
		(void)fcntl(o->copy[1], F_SETPIPE_SZ, OUTPUT_COPY_PIPE);
	}
	return o;
err:
	output_destroy(o);
	return NULL;
}

void output_destroy(struct output *o)
{
	if (!o)
		return;
	output_handed(o);
	if (o->target >= 0)
		close(o->target);
	if (o->copy[0] >= 0)
		close(o->copy[0]);
	for (size_t i = 0; i < OUTPUT_LINES; i++)
		free(o->line[i]);
	free(o);
}

int output_target_in(const struct output *o)
{
	return o->is_pty && o->view ? o->target : -1;
}

int output_target_out(const struct output *o)
{
	return o->target;
}

void output_spawned(struct output *o)
{
	if (o->target >= 0)
		close(o->target);
	o->target = -1;
}

int output_source(const struct output *o)
{
	return o->source;
}

int output_copy_end(const struct output *o)
{
	return o->copy[1];
}

void output_handed(struct output *o)
{
	if (o->source >= 0)
		close(o->source);
	if (o->copy[1] >= 0)
		close(o->copy[1]);
	o->source = o->copy[1] = -1;
}

int output_fd(const struct output *o)
{
	return o->ended ? -1 : o->copy[0];
}

bool output_ended(const struct output *o)
{
	return o->ended;
}

const char *output_file_error(const struct output *o)
{
	return o->file_error;
}

void output_set_file_error(struct output *o, const char *what)
{
	if (!o->file_error[0])
		snprintf(o->file_error, sizeof(o->file_error), "%s", what);
}

uint64_t output_total(const struct output *o)
{
	return o->total;
}

uint64_t output_first(const struct output *o)
{
	return o->first;
}

const char *output_line(const struct output *o, uint64_t n)
{
	const char *l;

	if (n < o->first || n >= o->total)
		return "";
	l = o->line[n % OUTPUT_LINES];
	return l ? l : "";
}

const char *output_partial(const struct output *o)
{
	return o->part;
}

/* The line read so far becomes line `total` (an allocation failure keeps
 * its place, empty). */
static void output_push(struct output *o)
{
	size_t at = (size_t)(o->total % OUTPUT_LINES);
	char *copy = malloc(o->len + 1);

	if (copy)
		memcpy(copy, o->part, o->len + 1);
	free(o->line[at]);
	o->line[at] = copy;
	o->total++;
	if (o->total - o->first > OUTPUT_LINES)
		o->first = o->total - OUTPUT_LINES;
	o->len = 0;
	o->part[0] = '\0';
}

static void output_put(struct output *o, char c, size_t *done)
{
	if (o->len == OUTPUT_LINE_MAX) {
		output_push(o);
		(*done)++;
	}
	o->part[o->len++] = c;
	o->part[o->len] = '\0';
}

/* One byte of text, escapes and control characters handled. */
static void output_byte(struct output *o, unsigned char c, size_t *done)
{
	switch (o->esc) {
	case ESC_START:
		o->esc = c == '[' ? ESC_CSI
			 : c == ']' || c == 'P' || c == 'X' || c == '^' ||
					 c == '_'
				 ? ESC_STRING
				 : ESC_NONE;
		return;
	case ESC_CSI:
		if (c >= 0x40 && c <= 0x7e)
			o->esc = ESC_NONE;
		return;
	case ESC_STRING:
		if (c == 7)
			o->esc = ESC_NONE;
		else if (c == 27)
			o->esc = ESC_STRING_ESC;
		return;
	case ESC_STRING_ESC:
		o->esc = c == '\\' ? ESC_NONE : ESC_STRING;
		return;
	case ESC_NONE:
		break;
	}
	if (o->cr && c != '\n') {
		/* "50%\r60%": the line starts over. */
		o->len = 0;
		o->part[0] = '\0';
	}
	o->cr = false;
	if (c == '\n') {
		output_push(o);
		(*done)++;
	} else if (c == '\r') {
		o->cr = true;
	} else if (c == 27) {
		o->esc = ESC_START;
	} else if (c == '\t') {
		do
			output_put(o, ' ', done);
		while (o->len % 8);
	} else if (c >= 0x20 && c != 0x7f) {
		output_put(o, (char)c, done);
	}
}

void (*output_test_hook)(void);

size_t output_drain(struct output *o)
{
	char buf[4096];
	size_t done = 0;

	while (!o->ended && o->copy[0] >= 0) {
		ssize_t got = read(o->copy[0], buf, sizeof(buf));

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && errno == EAGAIN)
			break;
		if (got <= 0) {
			/* The keeper closed the copy: the target's output
			 * ended (or the keeper is gone). */
			o->ended = true;
			break;
		}
		if (output_test_hook)
			output_test_hook();
		for (ssize_t i = 0; i < got; i++)
			output_byte(o, (unsigned char)buf[i], &done);
	}
	return done;
}
