/*
 * procfs: small, bounded readers for /proc/PID files and the ELF files a
 * process maps.  See procfs.c.
 */
#ifndef COROTOP_PROCFS_H
#define COROTOP_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Open `path` (relative to dirfd, or absolute) read-only if it is a regular
 * file; -1 otherwise.  Never blocks on a FIFO or device put in its place.
 */
int procfs_open_regular(int dirfd, const char *path);

/*
 * The whole of file `name` (relative to dirfd) in a malloc'd buffer with a
 * NUL after its *len bytes.  NULL with errno set when it can not be opened
 * or read, or holds more than `max` bytes (EFBIG).
 */
char *procfs_slurp(int dirfd, const char *name, size_t max, size_t *len);

/*
 * The [start, end) of the first line of a maps text whose path field is
 * exactly `name` ("[vdso]").  False if there is none or it does not parse.
 */
bool procfs_maps_find(const char *maps, const char *name, uint64_t *start,
		      uint64_t *end);

/* The number after "key:" in a status text (kB for Vm* keys); 0 if none. */
uint64_t procfs_status_value(const char *status, const char *key);

/*
 * The ELF class, data encoding and machine of an ELF file, packed into one
 * number to compare with another's; 0 when it is not a readable ELF file.
 */
uint32_t procfs_elf_abi(int dirfd, const char *path);

#endif
