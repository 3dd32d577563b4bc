/*
 * pptlist: what `corotop -p PID --list-buffers` shows -- every ppt buffer
 * of a process, who holds it, and what its frames are -- read without
 * writing a byte to the process.  See pptlist.c.
 */
#ifndef COROTOP_PPTLIST_H
#define COROTOP_PPTLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/ppt/pptfind.h"

struct pptlist_entry {
	struct pptfind_buffer sym;
	int32_t agent_pid; /* _stat: 0 = free */
	bool agent_alive;  /* that agent still runs */
	int32_t hmem;	   /* _hmem: 0 = no segment published */
	bool described;	   /* _json read and valid */
	char abi[16];	   /* as the JSON says (also when it mismatches) */
	uint32_t frame_size;
	uint32_t ntypes;
	bool resize, rendezvous;
	char types[512]; /* "tick(count load work) io(fd cost[0] ...)" */
	char error[256]; /* why it is not described, or "" */
};

struct pptlist {
	struct pptlist_entry *e;
	size_t n;
	char warning[512]; /* pptfind's */
};

/* False with a message when the process can not be read at all (gone,
 * another user's); a process without buffers gives n == 0. */
bool pptlist_collect(pid_t pid, struct pptlist *out, char *err, size_t errlen);
void pptlist_finish(struct pptlist *l);

#endif
