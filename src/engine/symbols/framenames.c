/*
 * framenames: a bounded cache of frame names, filled while the target
 * lives and read after it has gone.
 *
 * The symbolizer answers only while the target runs: once it exits, its
 * /proc entry (and so its module map) is gone and every address shows in
 * hex.  But profiles are written on exit.  So the engine names each new
 * stack's frames soon after a rotation brings it (a bounded amount per
 * rotation, engine/stacks/rotation.c), and on demand, and keeps the answers
 * here, keyed by the address that names the frame (framename_key: a return
 * address is named by its call instruction, addr - 1, so the line is the
 * call's and a call at the very end of a function is not mistaken for the
 * next one).
 *
 * Bounded: a fixed array of names with a hash index (hashidx.h) and their
 * strings interned in a strpool; once either is full, new names are not
 * kept (the frame is then named live, or in hex).  Not thread-safe: the
 * engine serialises calls with its hot lock; returned strings stay valid
 * until framenames_destroy.
 */
#include "engine/symbols/framenames.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/cttable.h"
#include "common/hashidx.h"
#include "common/strpool.h"

struct framenames_rec {
	uint64_t key;
	struct framename name;
};

struct framenames {
	struct framenames_rec *r;
	uint32_t cap, used;
	struct hashidx idx;
	struct strpool *pool;
};

struct framenames *framenames_create(uint32_t max_names, size_t max_bytes)
{
	struct framenames *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cap = max_names ? max_names : 1;
	c->r = malloc(c->cap * sizeof(*c->r));
	c->pool = strpool_create(max_bytes);
	if (!c->r || !c->pool || !hashidx_init(&c->idx, c->cap)) {
		framenames_destroy(c);
		return NULL;
	}
	return c;
}

void framenames_destroy(struct framenames *c)
{
	if (!c)
		return;
	free(c->r);
	strpool_destroy(c->pool);
	hashidx_finish(&c->idx);
	free(c);
}

struct framenames_key {
	const struct framenames *c;
	uint64_t key;
};

static bool framenames_eq(void *ctx, uint32_t rec)
{
	const struct framenames_key *k = ctx;

	return k->c->r[rec].key == k->key;
}

static uint32_t framenames_find(const struct framenames *c, uint64_t key)
{
	struct framenames_key k = {c, key};

	return hashidx_find(&c->idx, ct_mix64(key), framenames_eq, &k);
}

bool framenames_get(const struct framenames *c, uint64_t key,
		    struct framename *out)
{
	uint32_t rec = framenames_find(c, key);

	if (rec == HASHIDX_NONE)
		return false;
	*out = c->r[rec].name;
	return true;
}

static const char *framenames_str(struct framenames *c, const char *s)
{
	return *s ? strpool_intern(c->pool, s, strlen(s)) : NULL;
}

void framenames_put(struct framenames *c, uint64_t key,
		    const struct symtab_sym *s)
{
	struct framename n;

	if (c->used == c->cap || framenames_find(c, key) != HASHIDX_NONE)
		return;
	n = (struct framename){
		.function = framenames_str(c, s->function),
		.module = framenames_str(c, s->module),
		.file = framenames_str(c, s->file),
		.line = s->line,
		.offset = s->offset,
	};
	if (!n.file)
		n.line = 0;
	c->r[c->used] = (struct framenames_rec){.key = key, .name = n};
	hashidx_insert(&c->idx, ct_mix64(key), c->used++);
}

size_t framenames_count(const struct framenames *c)
{
	return c->used;
}

/* addr's offset from what n's offset is measured from. */
static uint64_t framename_offset(const struct framename *n, uint64_t addr,
				 bool leaf)
{
	return n->offset + (addr - framename_key(addr, leaf));
}

const char *framename_function(const struct framename *n, uint64_t addr,
			       bool leaf, char *buf, size_t len)
{
	if (!len)
		return buf;
	if (n && n->function)
		snprintf(buf, len, "%s", n->function);
	else if (n && n->module)
		snprintf(buf, len, "%s+0x%" PRIx64, n->module,
			 framename_offset(n, addr, leaf));
	else
		snprintf(buf, len, "0x%" PRIx64, addr);
	/* Folded stacks separate frames with ';' and end at the line. */
	for (char *p = buf; *p; p++)
		if (*p == ';' || (unsigned char)*p < 0x20)
			*p = '?';
	return buf;
}

const char *framename_full(const struct framename *n, uint64_t addr, bool leaf,
			   char *buf, size_t len)
{
	if (!len)
		return buf;
	if (n && n->function && n->file)
		snprintf(buf, len, "%s+0x%" PRIx64 " (%s:%d)", n->function,
			 framename_offset(n, addr, leaf), n->file, n->line);
	else if (n && (n->function || n->module))
		snprintf(buf, len, "%s+0x%" PRIx64,
			 n->function ? n->function : n->module,
			 framename_offset(n, addr, leaf));
	else
		snprintf(buf, len, "0x%" PRIx64, addr);
	return buf;
}
