/*
 * jsonl: append one line per harvested event:
 *   {"probe_id":N,"tid":N,"addr":"0x%016x","seq":N,"is_active":B,"ts":N}
 * exactly as the upstream engine writes it.  Lines go through a 1 MiB
 * buffer of whole lines: never one syscall per event.  The file is opened
 * for append and created 0600; an existing file is extended, never
 * truncated -- except when a write fails or is cut short (a full disk,
 * RLIMIT_FSIZE): then the file is cut back to the end of the last whole
 * line, as --record cuts back to the last whole packet, the log stops, and
 * the error is kept for jsonl_flush/jsonl_close to report.
 */
#define _GNU_SOURCE
#include "engine/export/jsonl.h"

#include "common/appendfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JSONL_BUF (1u << 20)
#define JSONL_LINE_MAX 256 /* one record is at most about 180 bytes */

bool jsonl_open(struct jsonl *j, const char *path, char *err, size_t errlen)
{
	struct stat st;
	bool refused;
	int fd;

	memset(j, 0, sizeof(*j));
	/* A FIFO does not wait for a reader: refused (common/appendfile.h). */
	fd = appendfile_open(path, &st, &refused);
	if (fd < 0 && refused) {
		snprintf(err, errlen,
			 "--jsonl %s: not a regular file; give a file", path);
		return false;
	}
	if (fd < 0) {
		snprintf(err, errlen, "cannot open --jsonl file %s: %s", path,
			 strerror(errno));
		return false;
	}
	j->f = fdopen(fd, "a");
	j->buf = malloc(JSONL_BUF);
	if (!j->f || !j->buf) {
		snprintf(err, errlen, "cannot open --jsonl file %s: %s", path,
			 strerror(errno));
		if (j->f)
			fclose(j->f);
		else
			close(fd);
		free(j->buf);
		memset(j, 0, sizeof(*j));
		return false;
	}
	/* Our buffer holds whole lines only; the stream writes them through
	 * at once, so a failure is known to the byte. */
	setvbuf(j->f, NULL, _IONBF, 0);
	j->regular = S_ISREG(st.st_mode);
	if (j->regular) {
		off_t end = lseek(fd, 0, SEEK_END);

		j->file_len = end > 0 ? (uint64_t)end : 0;
	}
	return true;
}

/* Hand the buffered lines to the kernel.  A short or failed write cuts
 * the file back to the end of the last whole line it holds and stops the
 * log: a reader never finds half a record. */
static bool jsonl_drain(struct jsonl *j)
{
	size_t n, keep;

	if (j->failed || !j->len)
		return !j->failed;
	errno = 0;
	n = fwrite(j->buf, 1, j->len, j->f); /* unbuffered: write(2) */
	if (n == j->len) {
		j->file_len += n;
		j->len = 0;
		return true;
	}
	j->err = errno ? errno : EIO;
	keep = n;
	while (keep && j->buf[keep - 1] != '\n')
		keep--;
	j->file_len += keep;
	/* Not for a device (/dev/full): nothing to cut there. */
	if (j->regular && ftruncate(fileno(j->f), (off_t)j->file_len) < 0 &&
	    errno != EINVAL)
		j->err = errno;
	j->failed = true;
	j->len = 0;
	return false;
}

int jsonl_format(char *buf, size_t n, uint64_t probe_id, uint64_t tid,
		 uint64_t addr, uint64_t seq, bool is_active, uint64_t ts)
{
	return snprintf(buf, n,
			"{\"probe_id\":%" PRIu64 ",\"tid\":%" PRIu64
			",\"addr\":\"0x%016" PRIx64 "\",\"seq\":%" PRIu64
			",\"is_active\":%s,\"ts\":%" PRIu64,
			probe_id, tid, addr, seq, is_active ? "true" : "false",
			ts);
}

void jsonl_write(struct jsonl *j, uint64_t probe_id, uint64_t tid,
		 uint64_t addr, uint64_t seq, bool is_active, uint64_t ts)
{
	size_t room;
	int n;

	if (!j->f || j->failed)
		return;
	if (JSONL_BUF - j->len < JSONL_LINE_MAX && !jsonl_drain(j))
		return;
	room = JSONL_BUF - j->len;
	n = jsonl_format(j->buf + j->len, room, probe_id, tid, addr, seq,
			 is_active, ts);
	if (n > 0 && (size_t)n + 2 < room) {
		memcpy(j->buf + j->len + n, "}\n", 2);
		j->len += (size_t)n + 2;
	}
	j->written++;
}

bool jsonl_flush(struct jsonl *j)
{
	if (!j->f)
		return true;
	if (!jsonl_drain(j)) {
		errno = j->err;
		return false;
	}
	return true;
}

bool jsonl_close(struct jsonl *j)
{
	bool ok = true;
	int saved = 0;

	if (j->f) {
		ok = jsonl_flush(j);
		saved = errno;
		if (fclose(j->f) != 0 && ok) {
			ok = false;
			saved = errno;
		}
	}
	free(j->buf);
	memset(j, 0, sizeof(*j));
	errno = saved;
	return ok;
}
