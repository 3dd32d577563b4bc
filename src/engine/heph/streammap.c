/*
 * streammap: (stream, substream) pairs numbered in the order first seen;
 * see streammap.h.
 */
#include "engine/heph/streammap.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/hash.h"

#define STREAMMAP_FIRST_SLOTS 512u

void streammap_init(struct streammap *m)
{
	memset(m, 0, sizeof(*m));
	m->seed = hash_seed();
}

void streammap_finish(struct streammap *m)
{
	free(m->key);
	free(m->slot);
	memset(m, 0, sizeof(*m));
}

/* Every bit of both halves reaches the low bits the slot is taken from. */
static uint64_t streammap_hash(const struct streammap *m, uint64_t sub,
			       uint32_t stream)
{
	uint64_t h = (sub ^ m->seed) * HASH_GOLDEN;

	h = (h ^ h >> 32 ^ stream) * HASH_GOLDEN;
	return h ^ h >> 32;
}

static size_t streammap_home(const struct streammap *m, size_t nslot,
			     const struct streammap_key *k)
{
	return streammap_hash(m, k->substream, k->stream) & (nslot - 1);
}

static bool streammap_rehash(struct streammap *m)
{
	size_t nslot = m->nslot ? m->nslot * 2 : STREAMMAP_FIRST_SLOTS;
	uint32_t *slot = calloc(nslot, sizeof(*slot));

	if (!slot)
		return false;
	for (size_t i = 0; i < m->n; i++) {
		size_t j = streammap_home(m, nslot, &m->key[i]);

		while (slot[j])
			j = (j + 1) & (nslot - 1);
		slot[j] = (uint32_t)i + 1;
	}
	free(m->slot);
	m->slot = slot;
	m->nslot = nslot;
	return true;
}

long streammap_get(struct streammap *m, uint64_t substream, uint32_t stream,
		   bool make)
{
	struct streammap_key k = {.substream = substream, .stream = stream};
	size_t j;

	if (make && (m->n + 1) * 2 > m->nslot && !streammap_rehash(m))
		return -1;
	if (!m->nslot)
		return -1;
	for (j = streammap_home(m, m->nslot, &k); m->slot[j];
	     j = (j + 1) & (m->nslot - 1)) {
		const struct streammap_key *o = &m->key[m->slot[j] - 1];

		if (o->substream == substream && o->stream == stream)
			return (long)m->slot[j] - 1;
	}
	if (!make || m->n >= UINT32_MAX - 1 ||
	    !grow_array((void **)&m->key, &m->cap_key, m->n + 1,
			sizeof(*m->key)))
		return -1;
	m->key[m->n] = k;
	m->slot[j] = (uint32_t)++m->n;
	return (long)m->n - 1;
}
