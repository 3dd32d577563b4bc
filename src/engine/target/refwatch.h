/*
 * refwatch: whether a mapping of a process was touched -- read or
 * written, by any of its threads or by the kernel on their behalf --
 * since a moment, from the kernel's accessed bits.  See refwatch.c.
 */
#ifndef COROTOP_ENGINE_TARGET_REFWATCH_H
#define COROTOP_ENGINE_TARGET_REFWATCH_H

#include <stddef.h>
#include <stdint.h>

/* refwatch_read's answer for a mapping that is not there any more. */
#define REFWATCH_GONE UINT64_MAX

/*
 * Clear the accessed bit of every page the process whose /proc/PID is
 * dirfd maps, then make its CPUs drop the translations they cached, so
 * that its next touch of any page sets the bit again.  0, or -errno
 * (EACCES, EPERM: not ours; ENOENT: gone).  From its return on, every
 * touch is seen; one between its two steps may not be (a CPU that still
 * caches the page's translation), nor, of course, one before it.
 */
int refwatch_arm(int dirfd);

/*
 * For each of the n mappings [lo[i], hi[i]) (sorted, ascending): kb[i],
 * the kilobytes of it touched since the last refwatch_arm, or
 * REFWATCH_GONE when no mapping is exactly that now (one split or grown
 * since is not the same: its other part's touches would not be
 * counted).  Reads /proc/PID/smaps, up to the last of them.  0, or
 * -errno.
 */
int refwatch_read(int dirfd, const uint64_t *lo, const uint64_t *hi,
		  uint64_t *kb, size_t n);

#endif
