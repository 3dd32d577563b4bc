/*
 * pptfind: the ppt buffers a running process publishes, found in the ELF
 * symbol tables (.symtab and .dynsym, through libelf) of its executable and
 * of every shared object it has mapped, relocated by each object's load bias
 * from /proc/PID/maps (PIE, ASLR).  See pptfind.c.
 *
 * A buffer NAME is the three symbols of either spelling:
 *   _ppt_hmem_NAME, _ppt_stat_NAME, _ppt_json_NAME   (the shipped generator)
 *   __ppt_NAME_hmem, __ppt_NAME_stat, __ppt_NAME_json (the protocol document)
 * A name with only some of its three symbols is skipped with a warning.
 * Where two objects define the same name, the definition the dynamic linker
 * would bind wins: the executable's (also a copy relocation's) before a
 * library's, libraries in /proc/PID/maps order.
 *
 * Untrusted input: the files are the target's; every ELF count, offset and
 * string is bounded by libelf and checked here.  A file is read only when
 * its device and inode match the mapping's (a replaced or deleted file is
 * read through /proc/PID/map_files, or skipped with a warning).
 */
#ifndef COROTOP_PPTFIND_H
#define COROTOP_PPTFIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PPTFIND_NAME_MAX 64 /* buffer names are shorter (else skipped) */
#define PPTFIND_MAX_BUFFERS 256

enum pptfind_spelling {
	PPTFIND_GENERATOR = 0, /* _ppt_hmem_NAME */
	PPTFIND_SPEC,	       /* __ppt_NAME_hmem */
};

struct pptfind_buffer {
	char name[PPTFIND_NAME_MAX];
	enum pptfind_spelling spelling;
	/* Addresses in the target, relocated; the symbols' st_size (0 when
	 * the symbol table does not say). */
	uint64_t hmem_addr, stat_addr, json_addr;
	uint64_t hmem_size, stat_size, json_size;
	char object[256]; /* the file that defines them, as in maps */
};

struct pptfind_result {
	struct pptfind_buffer *buf; /* sorted by name */
	size_t n;
	size_t objects;	   /* ELF files read */
	char warning[512]; /* what was skipped and why, or "" */
};

/* Scan pid (which procmem_open has accepted).  False with a message when
 * the process can not be read at all; finding no buffers is success with
 * n == 0. */
bool pptfind_scan(pid_t pid, struct pptfind_result *out, char *err,
		  size_t errlen);
void pptfind_result_finish(struct pptfind_result *r);

#endif
