/*
 * keptmaps: a target's /proc/PID/maps kept in memory from its first
 * events, so that its modules can still be named after it exited.  See
 * keptmaps.c.
 */
#ifndef COROTOP_KEPTMAPS_H
#define COROTOP_KEPTMAPS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/symbols/symbolizer.h"

/* One read of the maps; immutable once published, freed with its last
 * reference (keptmaps_put). */
struct keptmaps_copy {
	struct symbolizer_kept view; /* what symbolizer_create_kept takes */
	pid_t pid;
	uint64_t seq;  /* 1, 2, ...: which read of the keeper this is */
	unsigned refs; /* under keptmaps.lock */
	char maps[];   /* view.maps points here */
};

/* Counters for tests and benchmarks. */
struct keptmaps_stats {
	uint64_t reads;	  /* copies kept */
	uint64_t failed;  /* reads that kept nothing */
	uint64_t last_ns; /* the last keep's time: open, checks and read */
	uint64_t max_ns;  /* the longest one */
	size_t bytes;	  /* the size of the copy kept now */
};

struct keptmaps {
	pthread_mutex_t lock; /* guards cur and stats; never held across a
				 read of /proc, only for a swap or a ref */
	struct keptmaps_copy *cur;
	struct keptmaps_stats stats;
	/* The keeper's own: held (tried, never waited for) by the thread
	 * in keptmaps_keep, guarding the fields below. */
	pthread_mutex_t keeper;
	pid_t pid;	/* the process proc_fd is; 0: none */
	int proc_fd;	/* /proc/PID, found ours when opened; -1: none */
	bool refused;	/* pid is not ours: never kept */
	bool same_root; /* it sees our file system */
	/* pid << 1 | same_root, as last opened: read without the keeper's
	 * lock (keptmaps_same_root), which a keep holds while it reads. */
	_Atomic uint64_t root_of;
	uint64_t next_ns; /* CLOCK_MONOTONIC of the next read due */
	uint64_t seq;	  /* copies made */
	char exe[4096];	  /* where /proc/PID/exe linked at the open */
	/* The copy its probe made at its start (CTP_MAPS_FILE), read when
	 * /proc/PID/maps has none; "": none (keptmaps_expect). */
	char file[512];
};

void keptmaps_init(struct keptmaps *k);
/* Frees every copy; none may be referenced any more. */
void keptmaps_finish(struct keptmaps *k);

/*
 * Read pid's maps now if no copy of it was read in the last `every_ns`
 * (CLOCK_MONOTONIC `now`), and publish the copy.  Any thread; while one
 * keeps, another returns false at once.  It never waits for a reader
 * longer than a pointer swap.  True when a copy of pid is kept (now or
 * before).
 */
bool keptmaps_keep(struct keptmaps *k, pid_t pid, uint64_t now,
		   uint64_t every_ns);

/*
 * pid was just launched by us: open /proc/PID now, while it surely is
 * the process we started (the owner checked then stands for later, when
 * it may be reaped), and take `file` (the copy its probe makes at its
 * start, in our private directory; NULL: none) for its maps when /proc
 * has none.  False when pid can not be opened.
 */
bool keptmaps_expect(struct keptmaps *k, pid_t pid, const char *file);

/* Whether pid, opened by the keeper (keptmaps_expect at the launch, or a
 * keep), saw our root directory then -- known before any copy is kept, so
 * a symbolizer made before one can still open the files of a process
 * that exits under it by their paths.  False when not known (another
 * pid, a keep in progress). */
bool keptmaps_same_root(struct keptmaps *k, pid_t pid);

/* The newest copy of pid's maps, referenced until keptmaps_put; NULL
 * when none was kept.  Any thread. */
struct keptmaps_copy *keptmaps_get(struct keptmaps *k, pid_t pid);
/* Drop a reference from keptmaps_get; NULL is a no-op. */
void keptmaps_put(struct keptmaps *k, struct keptmaps_copy *c);

void keptmaps_get_stats(struct keptmaps *k, struct keptmaps_stats *out);

#endif
