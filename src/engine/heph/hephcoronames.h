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

#include "engine/ctp/namepool.h"
#include "engine/heph/hephfile.h"

struct heph_coroname {
	uint64_t id;
	char text[NAMEPOOL_TEXT_MAX]; /* cleaned: printable ASCII */
};

struct heph_corobirth {
	uint64_t sub, ts;
	uint32_t name; /* index + 1 into names, 0: unnamed */
};

struct heph_coronames {
	struct heph_coroname *names; /* by id (one per id) */
	size_t nnames;
	struct heph_corobirth *births; /* by (sub, ts); empty without names */
	size_t nbirths;
};

/* Load f's names (none is fine; out of memory leaves what fitted). */
void heph_coronames_init(struct heph_coronames *cn, const struct heph_file *f);
void heph_coronames_finish(struct heph_coronames *cn);
/* The name of corotop id `id`, or NULL. */
const char *heph_coronames_id(const struct heph_coronames *cn, uint64_t id);
/* The name of the coroutine substream `sub` was at time ts: the one of
 * its latest birth at or before ts (an unnamed one shadows an older
 * named one), or NULL. */
const char *heph_coronames_at(const struct heph_coronames *cn, uint64_t sub,
			      uint64_t ts);

#endif
