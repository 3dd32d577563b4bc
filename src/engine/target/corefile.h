/*
 * corefile: a process as an ELF core file holds it -- its memory, its
 * threads' registers and its mappings -- for corotop --core.  See
 * corefile.c.
 */
#ifndef COROTOP_ENGINE_TARGET_COREFILE_H
#define COROTOP_ENGINE_TARGET_COREFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One thread of the core (NT_PRSTATUS): where it was. */
struct corefile_thread {
	pid_t tid;
	uint64_t pc, sp, fp;
};

/* What the core says of the process. */
struct corefile_info {
	pid_t pid;	   /* NT_PRPSINFO's, else the first thread's */
	char command[17];  /* pr_fname: the command, 15 bytes at most */
	char args[81];	   /* pr_psargs: the command line, cut at 80 */
	char program[512]; /* the program's path as the core names it */
	char exe[512];	   /* where its code is read from (--exe, or as
			      program) */
	uint64_t entry;	   /* AT_ENTRY, 0: unknown */
	uint32_t threads;
	uint32_t segments;   /* PT_LOADs */
	uint32_t files;	     /* files named by NT_FILE */
	uint32_t unreadable; /* ... of them not opened (gone, no regular
				file): their code is not read */
	uint64_t dumped;     /* bytes of memory the core holds */
	bool truncated;	     /* the file ends before its segments do */
};

struct corefile;

/*
 * Lifecycle.  create: open the core file at path and read its headers
 * and notes (NULL and a message in err when it is not a readable core of
 * this machine's kind); exe: the program's executable to read its code
 * from (NULL: the path the core names).  destroy: NULL is a no-op.
 */
struct corefile *corefile_create(const char *path, const char *exe, char *err,
				 size_t errlen);
void corefile_destroy(struct corefile *c);

/* Exactly len bytes at addr of the process's memory: from the core where
 * it holds them, else from the mapped file (code the dump left out);
 * false when some byte is in neither.  Any thread. */
bool corefile_read(const struct corefile *c, uint64_t addr, void *buf,
		   size_t len);
/* [addr, addr + len) lies in one writable mapping. */
bool corefile_writable(const struct corefile *c, uint64_t addr, size_t len);

/* Its mappings as the text of /proc/PID/maps would give them: one line
 * per segment, the files' paths from NT_FILE (--exe's for the program's),
 * "[vdso]" and "[heap]" where the core tells them.  NUL-terminated. */
const char *corefile_maps(const struct corefile *c, size_t *len);

/* Its threads, in the core's order (the one that dumped first). */
size_t corefile_threads(const struct corefile *c,
			const struct corefile_thread **out);

void corefile_info(const struct corefile *c, struct corefile_info *out);

/* A core's bytes in memory (fuzzing, tests): as corefile_create on a
 * file holding them; no file is opened (exe and NT_FILE's paths are not
 * read). */
struct corefile *corefile_create_bytes(const void *bytes, size_t len, char *err,
				       size_t errlen);

#endif
