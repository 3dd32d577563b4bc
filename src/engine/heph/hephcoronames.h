/*
 * hephcoronames: the coroutine names a corotop recording carries --
 * `corotop_name` options (u64 corotop id, then the name) joined to the
 * `corotop_birth` options (u64 probe id, birth time, corotop id) -- for
 * replay (a name by id) and the converters (a name by substream and
 * time).  See hephcoronames.c.
 */
#ifndef COROTOP_HEPHCORONAMES_H
#define COROTOP_HEPHCORONAMES_H

#include <stddef.h>
#include <stdint.h>

#include "engine/model/namepool.h"
#include "engine/heph/hephfile.h"

struct heph_coroname {
	uint64_t id;
	char text[NAMEPOOL_TEXT_MAX]; /* cleaned: printable ASCII */
};

struct heph_corobirth {
	uint64_t sub, ts;
	uint64_t id;   /* corotop's id for it */
	uint32_t name; /* index + 1 into names, 0: unnamed */
};

/* A name corotop found after the birth (corotop_named): from ts on, the
 * function at the entry pc -- text is then that function, from the
 * recording's corotop_symbol for pc, or "" when it has none -- or (pc 0)
 * the text itself. */
struct heph_coronamed {
	uint64_t id, ts, pc;
	/* The function the entry at pc was made for (corotop_made_for at
	 * the same id and ts), 0: none. */
	uint64_t made_for;
	size_t seq; /* its place in the file: the later of two at one ts */
	char text[NAMEPOOL_TEXT_MAX];
};

struct heph_coronames {
	struct heph_coroname *names; /* by id (one per id) */
	size_t nnames;
	struct heph_coronamed *named; /* by id, then time (each it took) */
	size_t nnamed;
	struct heph_corobirth *births; /* by (sub, ts); empty without names */
	size_t nbirths;
};

/* Load f's names (none is fine; out of memory leaves what fitted). */
void heph_coronames_init(struct heph_coronames *cn, const struct heph_file *f);
void heph_coronames_finish(struct heph_coronames *cn);
/* The name of corotop id `id` given at its birth, or NULL. */
const char *heph_coronames_id(const struct heph_coronames *cn, uint64_t id);
/* The names corotop found for it later, *n of them in time order from
 * the returned; NULL when none. */
const struct heph_coronamed *
heph_coronames_named(const struct heph_coronames *cn, uint64_t id, size_t *n);
/* Its name as a reader of the whole recording says it: the birth's, else
 * the last one found later that has a text, else NULL. */
const char *heph_coronames_best(const struct heph_coronames *cn, uint64_t id);
/* The name of the coroutine substream `sub` was at time ts: the one of
 * its latest birth at or before ts (an unnamed one shadows an older
 * named one; a name found later counts from its time), or NULL. */
const char *heph_coronames_at(const struct heph_coronames *cn, uint64_t sub,
			      uint64_t ts);

#endif
