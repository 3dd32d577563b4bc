/*
 * namepool: coroutine names interned behind 32-bit ids.
 *
 * A model record is 128 bytes and full (snapshots copy 100k of them), so
 * it carries a name as an id into this pool: the name a probe gave (at
 * most 47 bytes, cleaned to printable ASCII here) and the code address a
 * name can be derived from instead (name_pc, 0 = none), interned as one
 * pair.  Many coroutines share a name (every worker of a pool, every
 * fiber of one entry function): they share one entry.
 *
 * Lifetime.  Each record holding an id holds a reference (the model takes
 * it when it names the record, and drops it when the record is reclaimed);
 * the last drop frees the entry.  An id is (generation << 20 | entry + 1),
 * and an entry's generation moves when it is freed, so an id kept by an
 * old snapshot after its record went never reads a later name: it reads
 * none.  Memory is bounded by the names referenced at once (at most `max`
 * entries of 72 bytes; past it, new names are refused and counted), not by
 * the names ever seen.
 *
 * Locking.  One mutex over everything: the engine interns and drops under
 * its own lock, the UI reads (namepool_get) under neither, and a read is
 * a probe and a 48-byte copy.  The UI's filter asks once per distinct id,
 * not once per row (filter.c).
 */
#include "engine/model/namepool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/hash.h"

#define NP_ENTRY_BITS 20
#define NP_GEN_MASK 0xfffu
#define NP_BUCKETS0 256u

struct np_entry {
	char text[NAMEPOOL_TEXT_MAX];
	uint64_t pc;
	uint64_t made_for; /* the function pc's entry was made for, 0: none */
	uint32_t refs;	   /* 0: free */
	uint32_t next;	   /* its bucket's chain, or the free list: entry + 1 */
	uint32_t hash;
	uint32_t gen; /* the id's generation while referenced */
};

struct namepool {
	pthread_mutex_t lock;
	struct np_entry *e;
	uint32_t used; /* entries ever handed out */
	size_t cap;    /* entries allocated */
	uint32_t max;
	uint32_t free;	  /* free list head: entry + 1, 0 = empty */
	uint32_t *bucket; /* chain heads: entry + 1 */
	uint32_t nbucket; /* a power of two, at least twice `live` */
	uint32_t live;
	uint64_t full;
};

struct namepool *namepool_create(uint32_t max)
{
	struct namepool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->bucket = calloc(NP_BUCKETS0, sizeof(*p->bucket));
	if (!p->bucket) {
		free(p);
		return NULL;
	}
	p->nbucket = NP_BUCKETS0;
	p->max = max && max < NAMEPOOL_MAX ? max : NAMEPOOL_MAX;
	pthread_mutex_init(&p->lock, NULL);
	return p;
}

void namepool_destroy(struct namepool *p)
{
	if (!p)
		return;
	pthread_mutex_destroy(&p->lock);
	free(p->e);
	free(p->bucket);
	free(p);
}

size_t namepool_clean(char out[NAMEPOOL_TEXT_MAX], const void *in, size_t len)
{
	const unsigned char *s = in;
	size_t n = 0;

	for (; s && n < len && n < NAMEPOOL_TEXT_MAX - 1 && s[n]; n++)
		out[n] = s[n] >= 0x20 && s[n] < 0x7f ? (char)s[n] : '?';
	out[n] = '\0';
	return n;
}

static uint32_t np_hash(const char *text, uint64_t pc)
{
	uint32_t h = 2166136261u;

	for (; *text; text++)
		h = (h ^ (unsigned char)*text) * 16777619u;
	return h ^ (uint32_t)hash_fib(pc, 32);
}

static uint32_t np_id(const struct namepool *p, uint32_t i)
{
	return (p->e[i].gen & NP_GEN_MASK) << NP_ENTRY_BITS | (i + 1);
}

/* The entry of a valid id, or NULL. */
static struct np_entry *np_find_id(struct namepool *p, uint32_t id)
{
	uint32_t i = (id & ((1u << NP_ENTRY_BITS) - 1)) - 1;

	if (!id || i >= p->used || !p->e[i].refs ||
	    (p->e[i].gen & NP_GEN_MASK) != id >> NP_ENTRY_BITS)
		return NULL;
	return &p->e[i];
}

/* Chains rebuilt over nb buckets (entries referenced only). */
static bool np_rehash(struct namepool *p, uint32_t nb)
{
	uint32_t *b = calloc(nb, sizeof(*b));

	if (!b)
		return false;
	for (uint32_t i = 0; i < p->used; i++) {
		uint32_t k;

		if (!p->e[i].refs)
			continue;
		k = p->e[i].hash & (nb - 1);
		p->e[i].next = b[k];
		b[k] = i + 1;
	}
	free(p->bucket);
	p->bucket = b;
	p->nbucket = nb;
	return true;
}

/* A free entry's index, or UINT32_MAX (full, or out of memory). */
static uint32_t np_alloc(struct namepool *p)
{
	uint32_t i;

	if (p->free) {
		i = p->free - 1;
		p->free = p->e[i].next;
		return i;
	}
	if (p->used >= p->max)
		return UINT32_MAX;
	if (!grow_array_max((void **)&p->e, &p->cap, (size_t)p->used + 1,
			    p->max, sizeof(*p->e)))
		return UINT32_MAX;
	p->e[p->used].gen = 0;
	return p->used++;
}

uint32_t namepool_intern(struct namepool *p, const char *text, uint64_t pc)
{
	return namepool_intern_made(p, text, pc, 0);
}

uint32_t namepool_intern_made(struct namepool *p, const char *text, uint64_t pc,
			      uint64_t made_for)
{
	char t[NAMEPOOL_TEXT_MAX];
	uint32_t h, i, id = 0;
	struct np_entry *e;

	namepool_clean(t, text, NAMEPOOL_TEXT_MAX);
	if (!p || (!t[0] && !pc))
		return 0;
	if (!pc)
		made_for = 0;
	h = np_hash(t, pc ^ made_for);
	pthread_mutex_lock(&p->lock);
	for (i = p->bucket[h & (p->nbucket - 1)]; i; i = e->next) {
		e = &p->e[i - 1];
		if (e->hash == h && e->pc == pc && e->made_for == made_for &&
		    !strcmp(e->text, t)) {
			e->refs++;
			id = np_id(p, i - 1);
			goto out;
		}
	}
	/* Buckets stay at least twice the names (so chains stay short). */
	if ((p->live + 1) * 2 > p->nbucket && p->nbucket < (1u << 31))
		(void)np_rehash(p, p->nbucket * 2);
	i = np_alloc(p);
	if (i == UINT32_MAX) {
		p->full++;
		goto out;
	}
	e = &p->e[i];
	memcpy(e->text, t, sizeof(t));
	e->pc = pc;
	e->made_for = made_for;
	e->refs = 1;
	e->hash = h;
	e->next = p->bucket[h & (p->nbucket - 1)];
	p->bucket[h & (p->nbucket - 1)] = i + 1;
	p->live++;
	id = np_id(p, i);
out:
	pthread_mutex_unlock(&p->lock);
	return id;
}

void namepool_hold(struct namepool *p, uint32_t id)
{
	struct np_entry *e;

	if (!p || !id)
		return;
	pthread_mutex_lock(&p->lock);
	e = np_find_id(p, id);
	if (e)
		e->refs++;
	pthread_mutex_unlock(&p->lock);
}

void namepool_drop(struct namepool *p, uint32_t id)
{
	struct np_entry *e;
	uint32_t *link, i;

	if (!p || !id)
		return;
	pthread_mutex_lock(&p->lock);
	e = np_find_id(p, id);
	if (e && !--e->refs) {
		i = (uint32_t)(e - p->e);
		for (link = &p->bucket[e->hash & (p->nbucket - 1)];
		     *link && *link != i + 1; link = &p->e[*link - 1].next)
			;
		if (*link)
			*link = e->next;
		e->gen++; /* every id of it so far is stale */
		e->next = p->free;
		p->free = i + 1;
		p->live--;
	}
	pthread_mutex_unlock(&p->lock);
}

bool namepool_get(struct namepool *p, uint32_t id, char *buf, size_t n,
		  uint64_t *pc)
{
	const struct np_entry *e;

	if (pc)
		*pc = 0;
	if (n)
		buf[0] = '\0';
	if (!p || !id)
		return false;
	pthread_mutex_lock(&p->lock);
	e = np_find_id(p, id);
	if (e) {
		size_t len = strlen(e->text);

		if (n) {
			if (len >= n)
				len = n - 1;
			memcpy(buf, e->text, len);
			buf[len] = '\0';
		}
		if (pc)
			*pc = e->pc;
	}
	pthread_mutex_unlock(&p->lock);
	return e != NULL;
}

uint64_t namepool_made_for(struct namepool *p, uint32_t id)
{
	const struct np_entry *e;
	uint64_t made_for = 0;

	if (!p || !id)
		return 0;
	pthread_mutex_lock(&p->lock);
	e = np_find_id(p, id);
	if (e)
		made_for = e->made_for;
	pthread_mutex_unlock(&p->lock);
	return made_for;
}

void namepool_stats(struct namepool *p, struct namepool_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	out->names = p->live;
	out->max = p->max;
	out->full = p->full;
	pthread_mutex_unlock(&p->lock);
}
