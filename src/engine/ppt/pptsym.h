/*
 * pptsym: one buffer's three symbols in a live process, checked before
 * anything is written, and its _json text read.  See pptsym.c.
 */
#ifndef COROTOP_PPTSYM_H
#define COROTOP_PPTSYM_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/ppt/pptfind.h"
#include "engine/target/procmem.h"

/* The largest _json text read from a target. */
#define PPTSYM_JSON_MAX (1u << 20)

/*
 * May corotop write _hmem and _stat?  Their symbol sizes must be those of
 * an int and a pid_t (or unknown), and each must lie in a mapping the
 * process can read and write.  False with a message naming the symbol.
 */
bool pptsym_check(struct procmem *pm, const struct pptfind_buffer *b, char *err,
		  size_t errlen);

/*
 * The _json text, malloc'd (NUL-terminated, at most PPTSYM_JSON_MAX), or
 * NULL with a message.  The generator's symbol is a const char * to the
 * text (8 bytes); a symbol larger than a pointer is the text itself; an
 * unknown size is told by the first byte ('{': the text).
 */
char *pptsym_json(struct procmem *pm, const struct pptfind_buffer *b, char *err,
		  size_t errlen);

#endif
