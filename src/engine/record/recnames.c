/*
 * recnames: the names a recording carries, asked once per address.
 *
 * The writer asks the symbolizer once per address: the answer (or that
 * there is none) is kept in a table of RECNAMES_SLOTS slots with the names
 * in an arena; past either bound it asks every time, which is slower, not
 * wrong.  "None" is only kept for RECNAMES_RETRY_MS: the symbolizer is
 * created lazily and reads the target's mappings at most once a second,
 * so an address asked about at launch may be known later; and at the end
 * every address still unknown is asked once more (recnames_last_try), so
 * that a name known by then is in the file (replay reads the names of the
 * whole file).  Used by the recorder's writer thread only.
 */
#include "engine/record/recnames.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/hash.h"
#include "engine/heph/heph.h"
#include "engine/heph/hephnames.h"

#define RECNAMES_NONE UINT32_MAX /* the symbolizer does not know it */
#define RECNAMES_RETRY_MS 1000u	 /* ... ask again after this long */

/* A name the writer knows (or knows to be unknown). */
struct recname {
	uint64_t key; /* 0: empty slot */
	uint32_t off; /* into the arena, or RECNAMES_NONE */
	uint32_t len; /* RECNAMES_NONE: when it was asked (ms, wrapping) */
};

static uint32_t recnames_ms(void)
{
	return (uint32_t)(clock_now_ns(CLOCK_MONOTONIC) / 1000000u);
}

bool recnames_init(struct recnames *n)
{
	memset(n, 0, sizeof(*n));
	n->slot = calloc(RECNAMES_SLOTS, sizeof(*n->slot));
	n->arena = malloc(RECNAMES_ARENA);
	return n->slot && n->arena;
}

void recnames_finish(struct recnames *n)
{
	free(n->slot);
	free(n->arena);
	memset(n, 0, sizeof(*n));
}

const char *recnames_ask(struct recnames *n, const struct recnames_io *io,
			 uint64_t key, uint32_t *len, bool retry)
{
	static _Thread_local char sym[HEPH_NAME_LEN + 1];
	uint32_t h = (uint32_t)hash_fib(key, 48);
	uint8_t val[8 + HEPH_NAME_LEN];
	struct recname *slot = NULL;
	bool again = false; /* slot holds "unknown" already */
	size_t vn;

	if (!key || !io->symbol)
		return NULL;
	for (uint32_t i = 0; i < RECNAMES_SLOTS;
	     i++, h = (h + 1) % RECNAMES_SLOTS) {
		struct recname *s = &n->slot[h];

		if (s->key == key && s->off != RECNAMES_NONE) {
			*len = s->len;
			return n->arena + s->off;
		}
		if (s->key == key) {
			if (!retry &&
			    recnames_ms() - s->len < RECNAMES_RETRY_MS)
				return NULL;
			slot = s;
			again = true;
			break;
		}
		if (!s->key)
			break;
	}
	if (!again && n->n < RECNAMES_SLOTS / 2) /* else: ask every time */
		slot = &n->slot[h];
	if (!io->symbol(io->symbol_ctx, key, sym, sizeof(sym))) {
		if (slot) {
			*slot = (struct recname){key, RECNAMES_NONE,
						 recnames_ms()};
			n->n += !again;
		}
		return NULL;
	}
	vn = heph_names_value(key, sym, val, sizeof(val));
	*len = (uint32_t)(vn - 8);
	if (slot && n->arena_len + *len <= RECNAMES_ARENA) {
		*slot = (struct recname){key, n->arena_len, *len};
		memcpy(n->arena + n->arena_len, sym, *len);
		n->arena_len += *len;
		n->n += !again;
		/* Written once: only a name just kept is new to the file. */
		io->emit(io->emit_ctx, val, vn);
		return n->arena + slot->off;
	}
	if (slot && again) /* no room to keep it: as if never asked */
		*slot = (struct recname){key, RECNAMES_NONE, recnames_ms()};
	return sym; /* tables full: not written as an option again */
}

void recnames_last_try(struct recnames *n, const struct recnames_io *io)
{
	uint32_t unused;

	for (uint32_t i = 0; i < RECNAMES_SLOTS; i++)
		if (n->slot[i].key && n->slot[i].off == RECNAMES_NONE)
			recnames_ask(n, io, n->slot[i].key, &unused, true);
}
