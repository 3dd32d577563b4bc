/*
 * autotrace: whether `corotop -- CMD` traces CMD without a code change, by
 * putting libcorotop-preload in its LD_PRELOAD, and why not when it does
 * not.  See autotrace.c.
 */
#ifndef COROTOP_AUTOTRACE_H
#define COROTOP_AUTOTRACE_H

#include <stdbool.h>
#include <stddef.h>

enum autotrace_verdict {
	AUTOTRACE_PRELOAD = 0, /* dynamically linked, no probe: preload */
	AUTOTRACE_LINKED,      /* links the probe itself: traced by it */
	AUTOTRACE_STATIC,      /* no dynamic loader: LD_PRELOAD is ignored */
	AUTOTRACE_SETUID,      /* set-user/group-ID: the loader ignores it */
	AUTOTRACE_SANITIZER,   /* ASan/TSan must come first in the list */
	AUTOTRACE_UNKNOWN,     /* not found, unreadable, not ELF: exec says */
	AUTOTRACE_NO_LIBRARY,  /* libcorotop-preload.so is nowhere: an error */
};

struct autotrace {
	enum autotrace_verdict verdict;
	char path[4096];    /* the program as exec will find it, or "" */
	char library[4096]; /* the preload library (AUTOTRACE_PRELOAD) */
	char note[1024];    /* why it is not traced this way, for people */
};

/*
 * Look at argv0 (searched in PATH as execvp does) and decide.  A note is
 * written for every verdict but PRELOAD and LINKED (whose tracing needs
 * none) and UNKNOWN (the exec will say what is wrong).
 */
void autotrace_check(const char *argv0, struct autotrace *out);

/*
 * libcorotop-preload.so's path into out, true when it can be read there;
 * false with the path it would have (COROTOP_PRELOAD's, else the installed
 * one) in out.
 */
bool autotrace_library(char *out, size_t n);

/* How to get the library, for people: the ninja command of the build tree
 * corotop was built in, or the installed path when that tree is gone. */
void autotrace_build_hint(char *out, size_t n);

#endif
