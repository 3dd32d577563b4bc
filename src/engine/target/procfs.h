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
/* A small file (procfs_open_regular: path relative to dirfd, or absolute
 * with AT_FDCWD) into buf, at most len - 1 bytes, NUL-terminated; false
 * when it cannot be opened or holds nothing (the thread is gone). */
bool procfs_read_text(int dirfd, const char *path, char *buf, size_t len);

/*
 * The maps of the process whose /proc/PID directory is dirfd, as
 * procfs_slurp(dirfd, "maps", ...), but whole or empty: a text its exit
 * may have cut short (the process had no memory left once it was read)
 * comes back empty, as a zombie's does.
 */
char *procfs_slurp_maps(int dirfd, size_t max, size_t *len);

/* Tests only: called after each read of procfs_slurp that got bytes,
 * with the name it reads and how many it got; and before each
 * procfs_open_regular, with the path it opens. */
extern void (*procfs_read_hook)(const char *name, size_t got);
extern void (*procfs_open_hook)(const char *path);

/*
 * Whether `path` (relative to dirfd, or absolute) and our own `ours` are
 * the same file: 1, 0, or -1 when either can not be looked at.
 */
int procfs_same_file(int dirfd, const char *path, const char *ours);

/*
 * The [start, end) of the first line of a maps text whose path field is
 * exactly `name` ("[vdso]").  False if there is none or it does not parse.
 */
bool procfs_maps_find(const char *maps, const char *name, uint64_t *start,
		      uint64_t *end);

/*
 * The file name (without its directory) of the one executable mapping of
 * a maps text whose name starts with `prefix` ("libboost_context.so"),
 * into out (n bytes); "" when none is mapped, or two different ones (or a
 * name that does not fit).  Returns out.
 */
char *procfs_maps_lib(const char *maps, const char *prefix, char *out,
		      size_t n);

/* One line of a maps text, its path pointing into the line. */
struct procfs_maps_line {
	uint64_t start, end, offset, inode;
	uint32_t dev_major, dev_minor;
	bool read, write, exec, deleted; /* the perms' r, w, x */
	const char *path;		 /* not NUL-terminated */
	size_t path_len;		 /* without " (deleted)" */
};
/* The longest maps line procfs_maps_line takes: a path of PATH_MAX (4096
 * on Linux) and the fields before it. */
#define PROCFS_MAPS_LINE_MAX (4096u + 128u)

/*
 * The len bytes at p as one line of /proc/PID/maps: "start-end perms
 * offset major:minor inode   path" (the path may hold spaces, or be
 * absent).  Any bytes at all: false unless it is such a line.
 */
bool procfs_maps_line(const char *p, size_t len, struct procfs_maps_line *m);

/* The number after "key:" in a status text (kB for Vm* keys); 0 if none. */
uint64_t procfs_status_value(const char *status, const char *key);

/*
 * A thread's stack pointer and pc from the text of its
 * /proc/PID/task/TID/syscall: true when the thread waits in the kernel
 * ("NR ARG1..ARG6 SP PC", or "-1 SP PC" when it is stopped outside a
 * syscall); false when it runs ("running") or the text is not that.
 */
bool procfs_syscall_sp(const char *text, uint64_t *sp, uint64_t *pc);

/*
 * The stack pointers of the threads of the process whose /proc/PID
 * directory is dirfd that wait in the kernel: into sps, at most max; the
 * count.  *running (may be NULL): the threads that were running, whose sp
 * a read of the file does not give (the caller may wait and ask again).
 */
size_t procfs_thread_sps(int dirfd, uint64_t *sps, size_t max, size_t *running);

/*
 * The ELF class, data encoding and machine of an ELF file, packed into one
 * number to compare with another's; 0 when it is not a readable ELF file.
 */
uint32_t procfs_elf_abi(int dirfd, const char *path);

#endif
