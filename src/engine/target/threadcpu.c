/*
 * threadcpu: each OS thread's CPU share, from /proc/PID/task/TID/stat.
 *
 * A sample lists the task directory (opened once, so a pid reused after
 * the process is gone only fails) and reads each thread's utime + stime.
 * The share is the ticks added since the previous sample over the time
 * between the two: 100 is one CPU busy.  A thread seen for the first time
 * has no share yet (-1).  The previous sample's ticks are kept by tid in a
 * sorted array of at most THREADCPU_MAX; threads past that are not
 * followed.  Every read is bounded (procfs_slurp), and a stat text that
 * does not parse drops that thread from the sample.
 *
 * One caller thread: the interface's, once per refresh.
 */
#define _GNU_SOURCE
#include "engine/target/threadcpu.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/target/procfs.h"

#define THREADCPU_STAT_MAX 4096

struct threadcpu_prev {
	uint64_t tid, ticks;
};

struct threadcpu {
	int dirfd; /* /proc/PID/task */
	double ns_per_tick;
	uint64_t last_ns;
	size_t nprev;
	struct threadcpu_prev prev[THREADCPU_MAX];
};

struct threadcpu *threadcpu_create(pid_t pid)
{
	struct threadcpu *tc;
	char path[64];
	long hz = sysconf(_SC_CLK_TCK);

	if (pid <= 0)
		return NULL;
	tc = calloc(1, sizeof(*tc));
	if (!tc)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	tc->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tc->dirfd < 0) {
		free(tc);
		return NULL;
	}
	tc->ns_per_tick = 1e9 / (double)(hz > 0 ? hz : 100);
	return tc;
}

void threadcpu_destroy(struct threadcpu *tc)
{
	if (!tc)
		return;
	close(tc->dirfd);
	free(tc);
}

bool threadcpu_parse_stat(const char *text, char comm[16], uint64_t *ticks)
{
	const char *open = strchr(text, '('), *close = strrchr(text, ')');
	unsigned long long utime, stime;
	size_t n;

	if (!open || !close || close < open)
		return false;
	n = (size_t)(close - open - 1);
	if (n > 15)
		n = 15;
	memcpy(comm, open + 1, n);
	comm[n] = '\0';
	/* After ") ": state, then fields 4..13, then utime (14), stime (15). */
	if (sscanf(close + 1,
		   " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
		   &utime, &stime) != 2)
		return false;
	*ticks = (uint64_t)utime + (uint64_t)stime;
	return true;
}

struct threadcpu_read {
	struct threadcpu_thread t;
	uint64_t ticks;
};

static int threadcpu_cmp(const void *a, const void *b)
{
	const struct threadcpu_read *x = a, *y = b;

	return x->t.tid < y->t.tid ? -1 : x->t.tid > y->t.tid;
}

static const struct threadcpu_prev *threadcpu_find(const struct threadcpu *tc,
						   uint64_t tid)
{
	size_t lo = 0, hi = tc->nprev;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tc->prev[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < tc->nprev && tc->prev[lo].tid == tid ? &tc->prev[lo] : NULL;
}

size_t threadcpu_sample(struct threadcpu *tc, uint64_t now_ns,
			struct threadcpu_thread *out, size_t max)
{
	struct threadcpu_read r[THREADCPU_MAX];
	size_t n = 0, k;
	struct dirent *d;
	DIR *dir;
	int fd;

	fd = dup(tc->dirfd);
	if (fd < 0)
		return 0;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return 0;
	}
	rewinddir(dir);
	while ((d = readdir(dir)) && n < THREADCPU_MAX) {
		char name[300], *text, *end;
		unsigned long long tid = strtoull(d->d_name, &end, 10);
		size_t len;

		if (!tid || *end)
			continue;
		snprintf(name, sizeof(name), "%s/stat", d->d_name);
		text = procfs_slurp(tc->dirfd, name, THREADCPU_STAT_MAX, &len);
		if (!text)
			continue;
		r[n].t.tid = tid;
		if (threadcpu_parse_stat(text, r[n].t.comm, &r[n].ticks))
			n++;
		free(text);
	}
	closedir(dir);
	qsort(r, n, sizeof(r[0]), threadcpu_cmp);
	for (k = 0; k < n; k++) {
		const struct threadcpu_prev *p = threadcpu_find(tc, r[k].t.tid);

		r[k].t.pct = -1;
		if (p && tc->last_ns && now_ns > tc->last_ns &&
		    r[k].ticks >= p->ticks)
			r[k].t.pct = (double)(r[k].ticks - p->ticks) *
				     tc->ns_per_tick * 100.0 /
				     (double)(now_ns - tc->last_ns);
	}
	for (k = 0; k < n; k++)
		tc->prev[k] = (struct threadcpu_prev){r[k].t.tid, r[k].ticks};
	tc->nprev = n;
	tc->last_ns = now_ns;
	for (k = 0; k < n && k < max; k++)
		out[k] = r[k].t;
	return k;
}
