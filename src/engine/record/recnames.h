/*
 * recnames: the names a recording carries (recorder.c), asked of the
 * symbolizer once per address and kept, so that each is written to the
 * file once, before the first event that uses it.  See recnames.c.
 */
#ifndef COROTOP_RECNAMES_H
#define COROTOP_RECNAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RECNAMES_SLOTS (1u << 16) /* addresses whose answer is kept */
#define RECNAMES_ARENA (8u << 20) /* bytes of names kept */

struct recname;

struct recnames {
	struct recname *slot; /* open addressing; RECNAMES_SLOTS */
	uint32_t n;
	char *arena; /* RECNAMES_ARENA bytes of names */
	uint32_t arena_len;
};

/* Who answers (the recorder's symbol hook) and who writes a name that is
 * new to the file (as a corotop_symbol option). */
struct recnames_io {
	bool (*symbol)(void *ctx, uint64_t key, char *buf, size_t n);
	void *symbol_ctx;
	/* val: the option's value (heph_names_value), n bytes. */
	void (*emit)(void *ctx, const uint8_t *val, size_t n);
	void *emit_ctx;
};

bool recnames_init(struct recnames *n);
void recnames_finish(struct recnames *n);

/*
 * The name of key (an address, or framename_key of a frame): kept from an
 * earlier answer, else asked now (an "unknown" kept is asked again only
 * after a second, or at once when retry) and, when new and kept, emitted.
 * NULL when unknown; *len its length.  The returned text is valid until
 * the next call.
 */
const char *recnames_ask(struct recnames *n, const struct recnames_io *io,
			 uint64_t key, uint32_t *len, bool retry);
/* At the end: every key still unknown, asked once more. */
void recnames_last_try(struct recnames *n, const struct recnames_io *io);

#endif
