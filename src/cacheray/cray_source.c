/*
 * cray_source: the memory view's input.
 *
 * The path is opened O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY (a
 * terminal given by mistake must not become ours; "-" is stdin, made
 * non-blocking for the view's lifetime and restored after), and checked
 * before any curses starts: a directory or a terminal is refused with a
 * message that says what to give instead (cray_source_refuse: the
 * batch report refuses the same inputs with the same words).
 *
 * Reading is in 256 KiB chunks (the reader's sweet spot: a chunk stays in
 * the cache while it is parsed) up to a budget per call, so the caller's
 * event loop gets back control every few milliseconds:
 *   regular file  read until the budget is spent; end of file is the end
 *                 (the size, taken at open, gives the percentage);
 *   pipe, FIFO    read until EAGAIN (CRAY_STEP_WAIT: wait for readiness)
 *                 or the budget; 0 from read(2) -- every writer closed --
 *                 is the end.  A FIFO opened before any writer has
 *                 connected also reads 0, so callers must only read a
 *                 pollable source once poll says it is readable (Linux
 *                 reports neither readable nor hung up until a first
 *                 writer has come).
 * At the end the state is complete, or truncated when the trace stops
 * inside a record.  A record that cannot be parsed stops reading for good
 * (the format has no sync marker): the counts so far stay, and a FIFO is
 * closed so that its writer gets EPIPE rather than blocking forever.
 */
#define _GNU_SOURCE
#include "cacheray/cray_source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CRAY_SOURCE_CHUNK (256 * 1024u)

bool cray_source_open(struct cray_source *s, const char *path, char *err,
		      size_t errlen, bool *usage)
{
	bool in = !strcmp(path, "-");
	struct stat st;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->saved_flags = -1;
	*usage = false;
	snprintf(s->name, sizeof(s->name), "%s", in ? "(stdin)" : path);
	s->fd = in ? STDIN_FILENO
		   : open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (s->fd < 0) {
		snprintf(err, errlen, "cannot open Cacheray trace %s: %s", path,
			 strerror(errno));
		return false;
	}
	s->own_fd = !in;
	if (fstat(s->fd, &st) < 0) {
		snprintf(err, errlen, "cannot stat Cacheray trace %s: %s", path,
			 strerror(errno));
		goto err_fd;
	}
	if (cray_source_refuse(path, s->fd, &st, err, errlen)) {
		*usage = true;
		goto err_fd;
	}
	if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
		off_t at = lseek(s->fd, 0, SEEK_CUR);

		s->size = S_ISREG(st.st_mode) && at >= 0 && st.st_size >= at
				  ? (uint64_t)(st.st_size - at)
				  : 0;
	} else {
		s->pollable = true;
		if (in) {
			s->saved_flags = fcntl(s->fd, F_GETFL);
			if (s->saved_flags < 0 ||
			    fcntl(s->fd, F_SETFL,
				  s->saved_flags | O_NONBLOCK)) {
				snprintf(err, errlen,
					 "cannot make stdin non-blocking: %s",
					 strerror(errno));
				s->saved_flags = -1;
				goto err_fd;
			}
		}
	}
	s->c = cacheray_create(NULL);
	s->buf = malloc(CRAY_SOURCE_CHUNK);
	if (!s->c || !s->buf) {
		snprintf(err, errlen, "out of memory for the reader of %s",
			 path);
		goto err_mem;
	}
	return true;
err_mem:
	free(s->buf);
	cacheray_destroy(s->c);
	s->buf = NULL;
	s->c = NULL;
	if (s->saved_flags >= 0)
		fcntl(s->fd, F_SETFL, s->saved_flags);
err_fd:
	if (s->own_fd)
		close(s->fd);
	s->fd = -1;
	return false;
}

/* Stop reading: close a FIFO or file we opened (a writer blocked on a
 * full FIFO gets EPIPE), give stdin its flags back. */
static void cray_source_stop(struct cray_source *s)
{
	if (s->fd < 0)
		return;
	if (s->saved_flags >= 0)
		fcntl(s->fd, F_SETFL, s->saved_flags);
	s->saved_flags = -1;
	if (s->own_fd)
		close(s->fd);
	s->fd = -1;
}

void cray_source_close(struct cray_source *s)
{
	cray_source_stop(s);
	cacheray_destroy(s->c);
	free(s->buf);
	s->c = NULL;
	s->buf = NULL;
}

static enum cray_step cray_source_end(struct cray_source *s)
{
	s->state = cacheray_pending(s->c) ? CRAY_TRUNCATED : CRAY_COMPLETE;
	cray_source_stop(s);
	return CRAY_STEP_DONE;
}

enum cray_step cray_source_read(struct cray_source *s, size_t budget)
{
	size_t done = 0;

	if (s->state != CRAY_READING || s->fd < 0)
		return CRAY_STEP_DONE;
	do {
		ssize_t n = read(s->fd, s->buf, CRAY_SOURCE_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return CRAY_STEP_WAIT;
		if (n < 0) {
			snprintf(s->problem, sizeof(s->problem),
				 "cannot read %s after %llu bytes: %s", s->name,
				 (unsigned long long)s->got, strerror(errno));
			s->state = CRAY_FAILED;
			cray_source_stop(s);
			return CRAY_STEP_DONE;
		}
		if (n == 0)
			return cray_source_end(s);
		s->got += (uint64_t)n;
		done += (size_t)n;
		if (!cacheray_feed(s->c, s->buf, (size_t)n)) {
			snprintf(s->problem, sizeof(s->problem), "%s",
				 cacheray_error(s->c, NULL));
			s->state = CRAY_BAD;
			cray_source_stop(s);
			return CRAY_STEP_DONE;
		}
	} while (done < budget);
	return CRAY_STEP_MORE;
}

void cray_source_rate_text(double per_s, char *b, size_t n)
{
	/* Each unit up to where its rounding would print 1000. */
	if (per_s < 9.95)
		snprintf(b, n, "%.1f records/s", per_s < 0 ? 0 : per_s);
	else if (per_s < 999.5)
		snprintf(b, n, "%.0f records/s", per_s);
	else if (per_s < 999.95e3)
		snprintf(b, n, "%.1f K records/s", per_s / 1e3);
	else
		snprintf(b, n, "%.1f M records/s", per_s / 1e6);
}

int cray_source_percent(const struct cray_source *s)
{
	uint64_t got = s->got;

	if (!s->size || s->pollable)
		return -1;
	if (got > s->size)
		got = s->size;
	return (int)(got * 100 / s->size);
}

bool cray_source_refuse(const char *path, int fd, const struct stat *st,
			char *err, size_t errlen)
{
	bool in = !strcmp(path, "-");

	if (S_ISDIR(st->st_mode)) {
		snprintf(err, errlen,
			 "--cacheray %s: is a directory; give a Cacheray trace "
			 "file, a FIFO, or - for stdin",
			 path);
		return true;
	}
	if (isatty(fd)) {
		snprintf(err, errlen,
			 in ? "--cacheray -: stdin is a terminal; pipe a trace "
			      "in (... | corotop --cacheray -) or give a file"
			    : "--cacheray %s: is a terminal; give a Cacheray "
			      "trace file, a FIFO, or - for stdin",
			 path);
		return true;
	}
	return false;
}
