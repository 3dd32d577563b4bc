/*
 * refwatch: the proof that a coroutine did not run, for a process that
 * was never prepared.
 *
 * A parked context that resumes reads its saved state (an fcontext_t's
 * registers lie on its own stack; setcontext pushes the saved pc there
 * before it returns into it), and running touches its stack again.  So
 * when no page of a stack that holds one context alone (a mapping of its
 * own: mmap'd, guard-paged stacks) was touched since a moment, that
 * context did not run since then -- a proof that its saved bytes staying
 * the same is not (a loop that yields at the same depth saves the same
 * bytes each time).
 *
 * The kernel keeps the proof for us.  Every page table entry has an
 * accessed bit, set by the CPU on the first touch after it was cleared;
 * writing "1" to /proc/PID/clear_refs clears them all (and the page's
 * referenced flag, which the kernel's own reads of the page set: ours
 * through process_vm_readv too).  /proc/PID/smaps says, per mapping, how
 * many kilobytes have either set ("Referenced:").
 *
 * Clearing does not flush the CPUs' TLBs, and a translation a CPU still
 * caches is used without setting the bit again: a context that runs in a
 * tight loop stays "untouched".  Writing "4" (clear soft-dirty bits)
 * flushes them for the whole process.  On a kernel built without
 * CONFIG_MEM_SOFT_DIRTY that flush is all it does; on one built with it,
 * it also write-protects the process's pages, and the first write to each
 * afterwards takes a minor fault (docs/SCAN.md).
 *
 * smaps is text the kernel writes, read in chunks without a bound on its
 * length; a line longer than the buffer is skipped, not trusted.
 */
#define _GNU_SOURCE
#include "engine/target/refwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/target/procfs.h"

#define REFWATCH_BUF (64u * 1024u)

/* One write of `what` to clear_refs. */
static int refwatch_clear(int dirfd, const char *what)
{
	int fd = openat(dirfd, "clear_refs",
			O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	int e = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, what, 1) != 1)
		e = errno ? -errno : -EIO;
	close(fd);
	return e;
}

int refwatch_arm(int dirfd)
{
	int e = refwatch_clear(dirfd, "1");

	return e ? e : refwatch_clear(dirfd, "4");
}

/* The parse of smaps, line by line. */
struct refwatch_parse {
	const uint64_t *lo, *hi;
	uint64_t *kb;
	size_t n, next; /* lo[next] the first not yet met */
	size_t at;	/* the mapping the lines are about; n: none of ours */
};

/* A hex number of 1 to 16 digits at l[*i], ended by `end`; *i past
 * it. */
static bool refwatch_hex(const char *l, size_t len, size_t *i, char end,
			 uint64_t *out)
{
	uint64_t v = 0;
	size_t at = *i, k = at;

	for (; k < len && k - at < 16; k++) {
		char c = l[k];
		unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
			     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
						    : 16u;

		if (d == 16)
			break;
		v = v << 4 | d;
	}
	if (k == at || k >= len || l[k] != end)
		return false;
	*i = k + 1;
	*out = v;
	return true;
}

/* "start-end ...": a mapping's first line. */
static bool refwatch_header(const char *l, size_t len, uint64_t *lo,
			    uint64_t *hi)
{
	size_t i = 0;

	return refwatch_hex(l, len, &i, '-', lo) &&
	       refwatch_hex(l, len, &i, ' ', hi);
}

static void refwatch_line(struct refwatch_parse *p, const char *l, size_t len)
{
	static const char key[] = "Referenced:";
	uint64_t lo, hi, v = 0;
	size_t i = sizeof(key) - 1;

	if (refwatch_header(l, len, &lo, &hi)) {
		/* Ours before it start nowhere now: gone. */
		while (p->next < p->n && p->lo[p->next] < lo)
			p->kb[p->next++] = REFWATCH_GONE;
		p->at = p->n;
		if (p->next < p->n && p->lo[p->next] == lo) {
			/* Split or grown since: not the same mapping. */
			if (p->hi[p->next] == hi)
				p->at = p->next;
			p->next++;
		}
		return;
	}
	if (p->at == p->n || len < i || memcmp(l, key, i))
		return;
	while (i < len && l[i] == ' ')
		i++;
	for (; i < len && l[i] >= '0' && l[i] <= '9' && v < UINT64_MAX / 16;
	     i++)
		v = v * 10 + (uint64_t)(l[i] - '0');
	p->kb[p->at] = v;
	p->at = p->n; /* one Referenced line per mapping */
}

int refwatch_read(int dirfd, const uint64_t *lo, const uint64_t *hi,
		  uint64_t *kb, size_t n)
{
	struct refwatch_parse p = {
		.lo = lo, .hi = hi, .kb = kb, .n = n, .at = n};
	char *buf;
	size_t have = 0;
	bool skipping = false; /* inside a line longer than the buffer */
	int fd, e = 0;

	for (size_t i = 0; i < n; i++)
		kb[i] = REFWATCH_GONE;
	if (!n)
		return 0;
	fd = procfs_open_regular(dirfd, "smaps");
	if (fd < 0)
		return errno ? -errno : -ENOENT;
	buf = malloc(REFWATCH_BUF);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	/* Until the last of ours was met and its lines read. */
	while (p.next < n || p.at != n) {
		ssize_t got = read(fd, buf + have, REFWATCH_BUF - have);
		size_t start = 0, end;

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			e = got < 0 ? -errno : 0;
			break;
		}
		end = have + (size_t)got;
		for (size_t i = have; i < end; i++) {
			if (buf[i] != '\n')
				continue;
			if (!skipping)
				refwatch_line(&p, buf + start, i - start);
			skipping = false;
			start = i + 1;
		}
		have = end - start;
		if (have == REFWATCH_BUF) { /* one line fills it: skipped */
			skipping = true;
			have = 0;
		} else {
			memmove(buf, buf + start, have);
		}
	}
	free(buf);
	close(fd);
	/* Read to its end: those not met are gone (kb[] says so). */
	return e;
}
