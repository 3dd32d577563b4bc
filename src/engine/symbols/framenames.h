/*
 * framenames: the names of stack frame addresses, kept by the engine so
 * that stacks stay symbolized after the target exits.  See framenames.c.
 */
#ifndef COROTOP_FRAMENAMES_H
#define COROTOP_FRAMENAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/symbols/symtab.h"

/* A name as kept: strings stay valid until framenames_destroy. */
struct framename {
	const char *function; /* NULL: unknown */
	const char *module;   /* NULL: in no mapped file */
	const char *file;     /* NULL: no line info */
	int line;
	uint64_t offset; /* from the function's start, else the module's */
};

/* The address that names frame `addr`: the pc itself for the innermost
 * frame, the call instruction (addr - 1) for a return address. */
static inline uint64_t framename_key(uint64_t addr, bool leaf)
{
	return leaf || !addr ? addr : addr - 1;
}

struct framenames;

/* At most max_names names and max_bytes of strings. */
struct framenames *framenames_create(uint32_t max_names, size_t max_bytes);
/* NULL is a no-op. */
void framenames_destroy(struct framenames *c);

/* The name kept for key (framename_key), or false. */
bool framenames_get(const struct framenames *c, uint64_t key,
		    struct framename *out);
/* Keep what symtab_lookup said about key; ignored once full. */
void framenames_put(struct framenames *c, uint64_t key,
		    const struct symtab_sym *s);
size_t framenames_count(const struct framenames *c);

/*
 * Frame `addr` (leaf: the innermost one) named by n (NULL: no name) for a
 * flame graph: "func", else "module+0xOFF", else "0xADDR"; never contains
 * ';' or a control character.  Returns buf.
 */
const char *framename_function(const struct framename *n, uint64_t addr,
			       bool leaf, char *buf, size_t len);
/* For people: "func+0xOFF (file.c:LINE)", "func+0xOFF", "module+0xOFF" or
 * "0xADDR"; OFF is addr's own offset, LINE that of the call (key). */
const char *framename_full(const struct framename *n, uint64_t addr, bool leaf,
			   char *buf, size_t len);

#endif
