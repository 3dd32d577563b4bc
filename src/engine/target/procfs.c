/*
 * procfs: the few reads the symbolizer makes of /proc and of ELF headers.
 *
 * Callers pass a directory fd, normally /proc/PID opened once: reading
 * through it (openat) pins the process, since once that process is gone
 * the old fd only fails, even if the pid is reused.
 *
 * Everything read is bounded (procfs_slurp's `max`), and opening a path the
 * target controls never blocks: procfs_open_regular opens with O_NONBLOCK
 * and then insists on a regular file, so a FIFO or a device swapped in for
 * a library can not hang the caller.  The parsers take the text as the
 * kernel writes it and return "not found" for anything else; one line of
 * /proc/PID/maps is parsed in one place (procfs_maps_line), for pptfind
 * and framecheck.
 *
 * A maps text read whole.  The kernel hands /proc/PID/maps out a page or
 * so per read and lets the process run between reads; once it has exited
 * (a zombie's memory is gone) the next read says end of file, so a read
 * that spans the exit holds only the first mappings, ending at a line's
 * end like any other.  procfs_slurp_maps looks at statm after the read:
 * memory still there means no read was cut; none means the text may be
 * a part, and it is dropped (empty, a zombie's), so that callers use what
 * they kept from before instead.  (An exec between the reads swaps the
 * memory for another: not seen here.)
 */
#define _GNU_SOURCE
#include "engine/target/procfs.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/grow.h"

#define PROCFS_FIRST_BUF 16384u
#define PROCFS_STATM_MAX 256u

void (*procfs_read_hook)(const char *name, size_t got);
void (*procfs_open_hook)(const char *path);

int procfs_open_regular(int dirfd, const char *path)
{
	struct stat st;
	int fd;

	if (procfs_open_hook)
		procfs_open_hook(path);
	/* Look before opening: opening a device node (a target maps
	 * /dev/dri/..., /dev/nvidia...) can have effects of its own.  The
	 * fstat below still catches one swapped in between. */
	if (fstatat(dirfd, path, &st, 0) < 0 || !S_ISREG(st.st_mode))
		return -1;
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	return fd;
}

bool procfs_read_text(int dirfd, const char *path, char *buf, size_t len)
{
	int fd = procfs_open_regular(dirfd, path);
	ssize_t got;

	if (fd < 0)
		return false;
	got = read(fd, buf, len - 1);
	close(fd);
	if (got <= 0)
		return false;
	buf[got] = '\0';
	return true;
}

char *procfs_slurp(int dirfd, const char *name, size_t max, size_t *len)
{
	size_t cap = PROCFS_FIRST_BUF, n = 0;
	char *buf = malloc(cap);
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	int e = 0;

	if (fd < 0 || !buf) {
		e = fd < 0 ? errno : ENOMEM;
		goto fail;
	}
	for (;;) {
		ssize_t got;

		if (n == cap - 1) {
			if (cap - 1 > max) {
				e = EFBIG;
				goto fail;
			}
			if (!grow_array((void **)&buf, &cap, cap + 1, 1)) {
				e = ENOMEM;
				goto fail;
			}
		}
		got = read(fd, buf + n, cap - 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			e = errno;
			goto fail;
		}
		if (got == 0)
			break;
		n += (size_t)got;
		if (procfs_read_hook)
			procfs_read_hook(name, (size_t)got);
	}
	if (n > max) {
		e = EFBIG;
		goto fail;
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	errno = e;
	return NULL;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Hex digits (1 to 16) at *p, before end. */
static bool take_hex(const char **p, const char *end, uint64_t *v)
{
	const char *q = *p;
	uint64_t x = 0;

	for (; q < end && hex_digit(*q) >= 0; q++) {
		if (q - *p == 16)
			return false; /* more than 64 bits */
		x = x << 4 | (uint64_t)hex_digit(*q);
	}
	if (q == *p)
		return false;
	*p = q;
	*v = x;
	return true;
}

static bool take_dec(const char **p, const char *end, uint64_t *v)
{
	const char *q = *p;
	uint64_t x = 0;

	for (; q < end && *q >= '0' && *q <= '9'; q++) {
		if (x > (UINT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(*q - '0');
	}
	if (q == *p)
		return false;
	*p = q;
	*v = x;
	return true;
}

static bool take_char(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return false;
	(*p)++;
	return true;
}

char *procfs_maps_lib(const char *maps, const char *prefix, char *out, size_t n)
{
	const char *line = maps, *end = maps + strlen(maps);
	size_t plen = strlen(prefix);

	if (n)
		out[0] = '\0';
	while (line < end) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));
		struct procfs_maps_line m;
		const char *base;
		size_t len;

		if (!eol)
			eol = end;
		if (procfs_maps_line(line, (size_t)(eol - line), &m) &&
		    m.exec && m.path_len) {
			base = memrchr(m.path, '/', m.path_len);
			base = base ? base + 1 : m.path;
			len = m.path_len - (size_t)(base - m.path);
			if (len > plen && len < n &&
			    !strncmp(base, prefix, plen)) {
				/* Two different ones: unknown. */
				if (out[0] && (strlen(out) != len ||
					       strncmp(out, base, len))) {
					out[0] = '\0';
					return out;
				}
				memcpy(out, base, len);
				out[len] = '\0';
			}
		}
		line = eol + 1;
	}
	return out;
}

bool procfs_maps_line(const char *p, size_t len, struct procfs_maps_line *m)
{
	static const char deleted[] = " (deleted)";
	const size_t dlen = sizeof(deleted) - 1;
	const char *end = p + len;
	uint64_t major, minor;

	memset(m, 0, sizeof(*m));
	if (len > PROCFS_MAPS_LINE_MAX)
		return false;
	if (!take_hex(&p, end, &m->start) || !take_char(&p, end, '-') ||
	    !take_hex(&p, end, &m->end) || !take_char(&p, end, ' '))
		return false;
	if (end - p < 4 || (p[0] != 'r' && p[0] != '-') ||
	    (p[1] != 'w' && p[1] != '-') || (p[2] != 'x' && p[2] != '-') ||
	    (p[3] != 'p' && p[3] != 's'))
		return false;
	m->read = p[0] == 'r';
	m->write = p[1] == 'w';
	m->exec = p[2] == 'x';
	p += 4;
	if (!take_char(&p, end, ' ') || !take_hex(&p, end, &m->offset) ||
	    !take_char(&p, end, ' ') || !take_hex(&p, end, &major) ||
	    !take_char(&p, end, ':') || !take_hex(&p, end, &minor) ||
	    !take_char(&p, end, ' ') || !take_dec(&p, end, &m->inode))
		return false;
	if (m->end <= m->start || major > UINT32_MAX || minor > UINT32_MAX)
		return false;
	m->dev_major = (uint32_t)major;
	m->dev_minor = (uint32_t)minor;
	if (p < end && *p != ' ')
		return false;
	while (p < end && *p == ' ')
		p++;
	m->path = p;
	m->path_len = (size_t)(end - p);
	if (m->path_len > dlen && !memcmp(end - dlen, deleted, dlen)) {
		m->deleted = true;
		m->path_len -= dlen;
	}
	return true;
}

/* Whether the process of dirfd (/proc/PID) has its memory: statm's first
 * field, its size in pages, is 0 once it exited, and statm is gone once
 * it was reaped. */
static bool procfs_has_memory(int dirfd)
{
	size_t len;
	char *st = procfs_slurp(dirfd, "statm", PROCFS_STATM_MAX, &len);
	bool has = st && strtoull(st, NULL, 10) != 0;

	free(st);
	return has;
}

char *procfs_slurp_maps(int dirfd, size_t max, size_t *len)
{
	char *maps = procfs_slurp(dirfd, "maps", max, len);
	int e = errno;

	/* Read before the exit and still there after: whole. */
	if (maps && *len && !procfs_has_memory(dirfd)) {
		maps[0] = '\0';
		*len = 0;
	}
	errno = e;
	return maps;
}

int procfs_same_file(int dirfd, const char *path, const char *ours)
{
	struct stat a, b;

	if (fstatat(dirfd, path, &a, 0) < 0 || stat(ours, &b) < 0)
		return -1;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

bool procfs_maps_find(const char *maps, const char *name, uint64_t *start,
		      uint64_t *end)
{
	size_t nlen = strlen(name);

	for (const char *line = maps; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		if (nlen && len > nlen && line[len - nlen - 1] == ' ' &&
		    !memcmp(line + len - nlen, name, nlen)) {
			char *p;

			*start = strtoull(line, &p, 16);
			if (p == line || *p != '-')
				return false;
			line = p + 1;
			*end = strtoull(line, &p, 16);
			return p != line && *p == ' ' && *end > *start;
		}
		line = nl ? nl + 1 : NULL;
	}
	return false;
}

uint64_t procfs_status_value(const char *status, const char *key)
{
	size_t klen = strlen(key);

	for (const char *line = status; line && *line;) {
		if (!strncmp(line, key, klen) && line[klen] == ':')
			return strtoull(line + klen + 1, NULL, 10);
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return 0;
}

uint32_t procfs_elf_abi(int dirfd, const char *path)
{
	unsigned char h[EI_NIDENT + 4]; /* ident, e_type, e_machine */
	int fd = procfs_open_regular(dirfd, path);
	ssize_t got = fd >= 0 ? pread(fd, h, sizeof(h), 0) : -1;

	if (fd >= 0)
		close(fd);
	if (got != (ssize_t)sizeof(h) || memcmp(h, ELFMAG, SELFMAG))
		return 0;
	return (uint32_t)h[EI_CLASS] << 24 | (uint32_t)h[EI_DATA] << 16 |
	       (uint32_t)h[EI_NIDENT + 2] << 8 | h[EI_NIDENT + 3];
}

bool procfs_syscall_sp(const char *text, uint64_t *sp, uint64_t *pc)
{
	uint64_t v[9];
	const char *p = text;
	long long nr;
	char *end;
	int n = 0;

	/* Decimal number first (maybe -1), then 0x-prefixed hex words. */
	if (!strncmp(p, "running", 7))
		return false;
	errno = 0;
	nr = strtoll(p, &end, 10);
	if (end == p || errno)
		return false;
	for (p = end; n < 9; n++) {
		while (*p == ' ')
			p++;
		if (*p == '\n' || !*p)
			break;
		if (p[0] != '0' || p[1] != 'x')
			return false;
		errno = 0;
		v[n] = strtoull(p + 2, &end, 16);
		if (end == p + 2 || errno)
			return false;
		p = end;
	}
	while (*p == ' ')
		p++;
	/* A syscall's number and its six arguments; or -1, outside one. */
	if ((*p != '\n' && *p) || (nr >= 0 ? n != 8 : nr != -1 || n != 2))
		return false;
	/* "NR" + 6 args + sp + pc, or "-1" + sp + pc. */
	*sp = v[n - 2];
	*pc = v[n - 1];
	return true;
}

size_t procfs_thread_sps(int dirfd, uint64_t *sps, size_t max, size_t *running)
{
	int tfd = openat(dirfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = tfd >= 0 ? fdopendir(tfd) : NULL;
	struct dirent *d;
	size_t n = 0, busy = 0;

	if (!dir) {
		if (tfd >= 0)
			close(tfd);
		if (running)
			*running = 0;
		return 0;
	}
	while ((d = readdir(dir)) && n < max) {
		char name[300], text[512];
		uint64_t sp, pc;
		ssize_t got;
		int fd;

		if (d->d_name[0] < '0' || d->d_name[0] > '9' ||
		    strlen(d->d_name) > 20)
			continue;
		snprintf(name, sizeof(name), "%s/syscall", d->d_name);
		fd = procfs_open_regular(tfd, name);
		if (fd < 0)
			continue; /* the thread is gone */
		got = read(fd, text, sizeof(text) - 1);
		close(fd);
		text[got > 0 ? got : 0] = '\0';
		if (procfs_syscall_sp(text, &sp, &pc))
			sps[n++] = sp;
		else if (!strncmp(text, "running", 7))
			busy++;
	}
	closedir(dir); /* closes tfd */
	if (running)
		*running = busy;
	return n;
}
