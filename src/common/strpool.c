/*
 * strpool: a string interner for names that come from untrusted files.
 *
 * Strings live in 64 KiB chunks that are never moved or freed before
 * strpool_destroy, so a pointer handed out stays valid for the pool's life;
 * this is what lets a cache of results be emptied without invalidating
 * strings a caller still holds.  A hash set (open addressing, FNV-1a,
 * linear probing, at most half full) finds an existing copy, so the memory
 * used grows with the number of distinct strings, not with the number of
 * calls.  The chunk budget is fixed at creation: once spent, interning new
 * strings fails and the caller shows something shorter instead.
 *
 * Every string is cleaned on the way in: cut to STRPOOL_STR_MAX bytes
 * (ending in "..." when cut) and anything outside printable ASCII replaced
 * by '?', so a symbol or file name can not carry terminal escapes.
 */
#include "common/strpool.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define STRPOOL_CHUNK (64u << 10)

struct strpool_chunk {
	struct strpool_chunk *next;
	size_t used;
	char data[];
};

struct strpool_slot {
	uint32_t hash;
	const char *str;
};

struct strpool {
	struct strpool_chunk *chunks;
	struct strpool_slot *set;
	uint32_t cap, count;
	size_t bytes, max_bytes;
};

struct strpool *strpool_create(size_t max_bytes)
{
	struct strpool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->max_bytes = max_bytes < STRPOOL_CHUNK ? STRPOOL_CHUNK : max_bytes;
	return p;
}

void strpool_destroy(struct strpool *p)
{
	if (!p)
		return;
	while (p->chunks) {
		struct strpool_chunk *next = p->chunks->next;

		free(p->chunks);
		p->chunks = next;
	}
	free(p->set);
	free(p);
}

size_t strpool_bytes(const struct strpool *p)
{
	return p ? p->bytes : 0;
}

static uint32_t strpool_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

static bool strpool_grow(struct strpool *p)
{
	uint32_t cap = p->cap ? p->cap * 2 : 1024;
	struct strpool_slot *set = calloc(cap, sizeof(*set));

	if (!set)
		return false;
	for (uint32_t i = 0; i < p->cap; i++) {
		uint32_t j = p->set[i].hash & (cap - 1);

		if (!p->set[i].str)
			continue;
		while (set[j].str)
			j = (j + 1) & (cap - 1);
		set[j] = p->set[i];
	}
	free(p->set);
	p->set = set;
	p->cap = cap;
	return true;
}

/* Copy `len` bytes plus a NUL into the newest chunk, or a new one. */
static const char *strpool_store(struct strpool *p, const char *s, size_t len)
{
	struct strpool_chunk *c = p->chunks;
	char *dst;

	if (!c || STRPOOL_CHUNK - c->used < len + 1) {
		if (p->bytes + STRPOOL_CHUNK > p->max_bytes)
			return NULL;
		c = malloc(sizeof(*c) + STRPOOL_CHUNK);
		if (!c)
			return NULL;
		c->next = p->chunks;
		c->used = 0;
		p->chunks = c;
		p->bytes += STRPOOL_CHUNK;
	}
	dst = c->data + c->used;
	memcpy(dst, s, len);
	dst[len] = '\0';
	c->used += len + 1;
	return dst;
}

const char *strpool_intern(struct strpool *p, const char *s, size_t len)
{
	char buf[STRPOOL_STR_MAX + 1];
	size_t n = 0;
	uint32_t h, i;

	if (!p || !s)
		return NULL;
	for (; n < len && s[n] && n < STRPOOL_STR_MAX; n++) {
		unsigned char ch = (unsigned char)s[n];

		buf[n] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	if (n == STRPOOL_STR_MAX && n < len && s[n])
		memcpy(buf + n - 3, "...", 3);
	buf[n] = '\0';

	if (p->count + 1 > p->cap / 2 && !strpool_grow(p))
		return NULL;
	h = strpool_hash(buf);
	for (i = h & (p->cap - 1); p->set[i].str; i = (i + 1) & (p->cap - 1))
		if (p->set[i].hash == h && !strcmp(p->set[i].str, buf))
			return p->set[i].str;
	p->set[i].str = strpool_store(p, buf, n);
	if (!p->set[i].str)
		return NULL;
	p->set[i].hash = h;
	p->count++;
	return p->set[i].str;
}
