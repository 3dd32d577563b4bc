/*
 * jsonl: append one line per harvested event:
 *   {"probe_id":N,"tid":N,"addr":"0x%016x","seq":N,"is_active":B,"ts":N}
 * exactly as the upstream engine writes it.  Lines go through a 1 MiB stdio
 * buffer: never one syscall per event.  The file is opened for append and
 * created 0600; an existing file is extended, never truncated.
 */
#define _GNU_SOURCE
#include "jsonl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define JSONL_BUF (1u << 20)

bool jsonl_open(struct jsonl *j, const char *path, char *err, size_t errlen)
{
	int fd;

	memset(j, 0, sizeof(*j));
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
		  0600);
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
	setvbuf(j->f, j->buf, _IOFBF, JSONL_BUF);
	return true;
}

void jsonl_write(struct jsonl *j, uint64_t probe_id, uint64_t tid,
		 uint64_t addr, uint64_t seq, bool is_active, uint64_t ts)
{
	if (!j->f)
		return;
	if (fprintf(j->f,
		    "{\"probe_id\":%" PRIu64 ",\"tid\":%" PRIu64
		    ",\"addr\":\"0x%016" PRIx64 "\",\"seq\":%" PRIu64
		    ",\"is_active\":%s,\"ts\":%" PRIu64 "}\n",
		    probe_id, tid, addr, seq, is_active ? "true" : "false",
		    ts) < 0)
		j->failed = true;
	j->written++;
}

bool jsonl_flush(struct jsonl *j)
{
	if (!j->f)
		return true;
	if (fflush(j->f) != 0)
		j->failed = true;
	return !j->failed;
}

bool jsonl_close(struct jsonl *j)
{
	bool ok = true;

	if (j->f) {
		ok = jsonl_flush(j);
		if (fclose(j->f) != 0)
			ok = false;
	}
	free(j->buf);
	memset(j, 0, sizeof(*j));
	return ok;
}
