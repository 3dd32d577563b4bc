/*
 * keptmaps: the target's /proc/PID/maps, read into memory as soon as its
 * first events arrive and again at most every SYMTAB_KEEP_NS while events
 * come, so that a program that exits before anything was named still has
 * its modules: once it has exited, /proc/PID/maps reads empty (a zombie)
 * or is gone (reaped), and the symbolizer is made from the kept copy
 * instead (symbolizer_create_kept).  The ELF files are still on disk.
 *
 * The keeper does no ELF work.  It is whichever engine thread sees the
 * target first -- the waker thread when the probe connects (its libraries
 * are mapped: the probe starts from a constructor), the harvest thread at
 * the first events -- one at a time (`keeper`, only tried: a second
 * thread finds the keep being made and goes on).  It opens
 * /proc/PID once (checking, as the symbolizer does, that it is ours),
 * notes where /proc/PID/exe links and whether the process sees our file
 * system, then each time reads the maps through that directory fd -- a
 * pid recycled by another process can never be read in its place -- and
 * swaps the new copy in.  keptmaps_stats times each keep (tens of
 * microseconds for a Boost program's hundred mappings).
 *
 * A program can exit before any of corotop's threads ran.  For the one
 * corotop launched (keptmaps_expect, right after the exec), /proc/PID is
 * opened at once, and the copy of its maps its probe wrote at its start
 * (CTP_MAPS_FILE, probe/mapscopy.c) stands in when /proc/PID/maps reads
 * empty or is gone.  That file is the program's word, in corotop's
 * private directory (0700: no other uid can put it there); a lie in it
 * can only name the program's own addresses wrongly, from files corotop
 * may read anyway.  /proc/PID/exe is read again at each keep.
 *
 * A keep that reads the maps while the program exits gets the first part
 * of them only (procfs.c, "A maps text read whole"): such a read is taken
 * as the zombie's empty one, so the copy before it stays, or the probe's
 * file stands in -- never a part of the maps that would name the modules
 * it lacks in hex for good.
 *
 * Copies are immutable and reference counted.  `lock` is held only to
 * swap the pointer or to take or drop a reference, never across a read
 * of /proc nor while a symbolizer is built, so the harvest thread never
 * waits behind the thread that builds one (which holds symtab's lock,
 * not this one).  Each copy owns a duplicate of the /proc/PID fd, so a
 * symbolizer made from it reads the same process (or nothing).
 */
#define _GNU_SOURCE
#include "engine/symbols/keptmaps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "engine/target/procfs.h"

#define KEPTMAPS_MAX (64u << 20) /* as the symbolizer's own read */

void keptmaps_init(struct keptmaps *k)
{
	memset(k, 0, sizeof(*k));
	pthread_mutex_init(&k->lock, NULL);
	pthread_mutex_init(&k->keeper, NULL);
	atomic_init(&k->root_of, 0);
	k->proc_fd = -1;
}

static void keptmaps_free(struct keptmaps_copy *c)
{
	if (!c)
		return;
	if (c->view.proc_fd >= 0)
		close(c->view.proc_fd);
	free(c);
}

void keptmaps_finish(struct keptmaps *k)
{
	keptmaps_free(k->cur);
	if (k->proc_fd >= 0)
		close(k->proc_fd);
	pthread_mutex_destroy(&k->lock);
	pthread_mutex_destroy(&k->keeper);
	memset(k, 0, sizeof(*k));
	k->proc_fd = -1;
}

/* Open /proc/PID for a new pid: ours, its exe, its root.  False when it
 * can not be kept (gone, or another uid's: refused for good). */
static bool keptmaps_open(struct keptmaps *k, pid_t pid)
{
	char path[32];
	struct stat st;
	ssize_t n;

	if (k->proc_fd >= 0)
		close(k->proc_fd);
	k->proc_fd = -1;
	k->pid = pid;
	k->refused = false;
	k->file[0] = '\0'; /* keptmaps_expect's, for the pid it opened */
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	k->proc_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (k->proc_fd < 0 || fstat(k->proc_fd, &st) < 0)
		return false;
	/* The owner checked here stands for every later use of the copies
	 * (symbolizer.h: only the caller's own processes). */
	if (st.st_uid != getuid() || st.st_uid != geteuid()) {
		k->refused = true;
		return false;
	}
	n = readlinkat(k->proc_fd, "exe", k->exe, sizeof(k->exe) - 1);
	k->exe[n > 0 ? n : 0] = '\0';
	/* Its paths mean ours: the same root directory.  (Not also the
	 * same mount namespace: the first look at /proc/PID/ns/mnt took
	 * 100 us, more than the rest of the keep; a namespace of its own
	 * with our root and other mounts over its libraries' directories
	 * would have them named from our files.) */
	k->same_root = procfs_same_file(k->proc_fd, "root", "/") == 1;
	/* relaxed: read by keptmaps_same_root alone, the one word. */
	atomic_store_explicit(&k->root_of,
			      (uint64_t)pid << 1 | (k->same_root ? 1u : 0u),
			      memory_order_relaxed);
	return true;
}

/* The read: a new copy, or NULL. */
static struct keptmaps_copy *keptmaps_read(struct keptmaps *k, uint64_t at)
{
	char exe[sizeof(k->exe)];
	ssize_t n = readlinkat(k->proc_fd, "exe", exe, sizeof(exe) - 1);
	size_t len, elen;
	/* Whole or empty: a read its exit cut short is no copy. */
	char *maps = procfs_slurp_maps(k->proc_fd, KEPTMAPS_MAX, &len);
	struct keptmaps_copy *c;

	if (n > 0) { /* an exec since, or the first look after one */
		exe[n] = '\0';
		memcpy(k->exe, exe, (size_t)n + 1);
	}
	elen = strlen(k->exe);
	/* Empty: a zombie's (every live process maps something); then the
	 * copy its probe made, when it is the one we launched. */
	if ((!maps || !len) && k->file[0] && !k->seq) {
		free(maps);
		maps = procfs_slurp(AT_FDCWD, k->file, KEPTMAPS_MAX, &len);
	}
	if (!maps || !len) {
		free(maps);
		return NULL;
	}
	c = malloc(sizeof(*c) + len + 1 + elen + 1);
	if (c)
		c->view.proc_fd = fcntl(k->proc_fd, F_DUPFD_CLOEXEC, 0);
	if (!c || c->view.proc_fd < 0) {
		free(c);
		free(maps);
		return NULL;
	}
	memcpy(c->maps, maps, len + 1);
	memcpy(c->maps + len + 1, k->exe, elen + 1);
	free(maps);
	c->view.maps = c->maps;
	c->view.maps_len = len;
	c->view.exe = c->maps + len + 1;
	c->view.same_root = k->same_root;
	c->view.read_ns = at;
	c->pid = k->pid;
	c->seq = ++k->seq;
	c->refs = 1; /* cur's */
	return c;
}

bool keptmaps_expect(struct keptmaps *k, pid_t pid, const char *file)
{
	bool ok;

	if (pid <= 0)
		return false;
	pthread_mutex_lock(&k->keeper);
	ok = keptmaps_open(k, pid);
	snprintf(k->file, sizeof(k->file), "%s", ok && file ? file : "");
	k->next_ns = 0;
	pthread_mutex_unlock(&k->keeper);
	return ok;
}

bool keptmaps_keep(struct keptmaps *k, pid_t pid, uint64_t now,
		   uint64_t every_ns)
{
	struct keptmaps_copy *c, *old = NULL;
	uint64_t t0, took;
	bool have;

	if (pid <= 0)
		return false;
	/* Another thread keeps it right now: that keep is this one. */
	if (pthread_mutex_trylock(&k->keeper))
		return false;
	if (pid == k->pid && (k->refused || now < k->next_ns)) {
		have = !k->refused && k->seq;
		pthread_mutex_unlock(&k->keeper);
		return have;
	}
	k->next_ns = now + every_ns;
	t0 = clock_now_ns(CLOCK_MONOTONIC);
	if (pid != k->pid && !keptmaps_open(k, pid)) {
		c = NULL;
	} else {
		c = keptmaps_read(k, t0);
	}
	took = clock_now_ns(CLOCK_MONOTONIC) - t0;
	pthread_mutex_lock(&k->lock);
	if (c) {
		old = k->cur;
		k->cur = c;
		k->stats.reads++;
		k->stats.bytes = c->view.maps_len;
	} else {
		k->stats.failed++;
	}
	k->stats.last_ns = took;
	if (took > k->stats.max_ns)
		k->stats.max_ns = took;
	if (old && --old->refs)
		old = NULL; /* a reader still holds it; its put frees it */
	have = k->cur && k->cur->pid == pid;
	pthread_mutex_unlock(&k->lock);
	pthread_mutex_unlock(&k->keeper);
	keptmaps_free(old);
	return have;
}

bool keptmaps_same_root(struct keptmaps *k, pid_t pid)
{
	/* relaxed: one word, the pid and the answer together (written by
	 * keptmaps_open); no other data is published with it. */
	uint64_t r = atomic_load_explicit(&k->root_of, memory_order_relaxed);

	return pid > 0 && r == ((uint64_t)pid << 1 | 1u);
}

struct keptmaps_copy *keptmaps_get(struct keptmaps *k, pid_t pid)
{
	struct keptmaps_copy *c;

	pthread_mutex_lock(&k->lock);
	c = k->cur && k->cur->pid == pid ? k->cur : NULL;
	if (c)
		c->refs++;
	pthread_mutex_unlock(&k->lock);
	return c;
}

void keptmaps_put(struct keptmaps *k, struct keptmaps_copy *c)
{
	bool last;

	if (!c)
		return;
	pthread_mutex_lock(&k->lock);
	last = !--c->refs;
	pthread_mutex_unlock(&k->lock);
	if (last)
		keptmaps_free(c);
}

void keptmaps_get_stats(struct keptmaps *k, struct keptmaps_stats *out)
{
	pthread_mutex_lock(&k->lock);
	*out = k->stats;
	pthread_mutex_unlock(&k->lock);
}
