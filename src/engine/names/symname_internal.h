/*
 * symname_internal: what symname.c (a symbol's name as people read it) and
 * symentry.c (the program's function found in a runtime's entry template)
 * share -- the work buffer a name is made in, and the bracket reading and
 * shortening both use.  Not for other files: they use symname.h.
 * Includers define _GNU_SOURCE first (sigjmp_buf, strnlen).
 */
#ifndef COROTOP_SYMNAME_INTERNAL_H
#define COROTOP_SYMNAME_INTERNAL_H

#include "engine/names/symname.h"

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>

/* The demangler's output kept; past it the demangler is stopped. */
#define SYMNAME_WORK 4096
_Static_assert(SYMNAME_MANGLED_MAX < SYMNAME_WORK,
	       "a mangled name fits the work buffers");

struct symname_work {
	sigjmp_buf stop; /* where the callback leaves the demangler */
	bool rust;	 /* Rust's demangler: leave only on ASCII chunks */
	bool cut;	 /* output was dropped: text is its beginning */
	size_t len;
	char text[SYMNAME_WORK];
};

/* symname.c: what t[i] is for brackets open/close (1 opens, -1 closes, 0
 * is text; *skip the bytes it spans). */
int symname_bracket(const char *t, size_t len, size_t i, char open, char close,
		    size_t *skip);
/* symname.c: t's deepest brackets collapsed until it fits in max; its
 * length.  spare: room for len bytes. */
size_t symname_collapse_to(char *t, size_t len, char *spare, size_t max);
/* symname.c: w->text shortened to at most max bytes. */
void symname_fit(struct symname_work *w, char *spare, size_t max);

/* symentry.c: an entry's name too long for max keeps the program's
 * function it was made for.  spare: SYMNAME_WORK bytes. */
void symname_keep_entry(struct symname_work *w, char *spare, size_t max);

#endif
