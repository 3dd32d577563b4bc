/*
 * probereg: the coroutines a probe's registry lists (src/probe/
 * registry.c), read from a process's memory through the descriptor the
 * probe exports (src/wire/regdesc.h) -- for a core file of a program that
 * ran with the probe or the preload, whose exact list, names, states and
 * last transitions are there, where no handshake can ask the probe for a
 * census (corotop --core; engine_core.c).
 *
 * Untrusted input.  The memory is the target's: the descriptor's magic,
 * version and sizes must be this corotop's, the count of slots is bounded
 * by the descriptor's max and by REGDESC_MAX, slots are read in chunks,
 * and a coroutine is read (whole, or not at all) only through a slot
 * whose word says LIVE.  A static name is read as a string of at most
 * COROTOP_NAME_MAX - 1 bytes; any name's bytes outside printable ASCII
 * show as '?'.
 */
#define _GNU_SOURCE
#include "engine/scan/probereg.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "corotop/ctp.h"
#include "wire/regdesc.h"

/* Slots read at once. */
#define PROBEREG_CHUNK 512u
/* Slots a registry may claim (the probe's REGISTRY_MAX). */
#define REGDESC_MAX CTP_MAX_STATIONS_LIMIT

static void probereg_printable(char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			*s = '?';
}

/* A static name at p: the bytes up to its NUL, at most
 * COROTOP_NAME_MAX - 1, read a run at a time up to the next 64-byte
 * boundary (a short string may end a mapping); "" when unreadable or not
 * terminated in time. */
static void probereg_string(probereg_read_fn read, void *read_ctx, uint64_t p,
			    char *out)
{
	size_t n = 0;

	while (n < COROTOP_NAME_MAX) {
		size_t run = 64 - (size_t)((p + n) & 63);

		if (run > COROTOP_NAME_MAX - n)
			run = COROTOP_NAME_MAX - n;
		if (p + n < p || !read(read_ctx, p + n, out + n, run))
			break;
		if (memchr(out + n, '\0', run))
			return;
		n += run;
	}
	out[0] = '\0';
}

/* Slot k's name into rc (none when it cannot be read). */
static void probereg_name(probereg_read_fn read, void *read_ctx, uint64_t names,
			  uint32_t k, struct probereg_coro *rc)
{
	struct regdesc_name nm;

	rc->name[0] = '\0';
	if (!names ||
	    !read(read_ctx, names + (uint64_t)k * sizeof(nm), &nm, sizeof(nm)))
		return;
	rc->entry = nm.entry;
	rc->made_for = nm.made_for;
	if (!nm.ptr) {
		memcpy(rc->name, nm.text, sizeof(rc->name));
		rc->name[sizeof(rc->name) - 1] = '\0';
	} else {
		probereg_string(read, read_ctx, nm.ptr, rc->name);
	}
	probereg_printable(rc->name);
}

bool probereg_read(probereg_read_fn read, void *read_ctx, uint64_t desc,
		   uint32_t max,
		   void (*fn)(void *ctx, const struct probereg_coro *rc),
		   void *ctx, struct probereg_stats *st, char *err,
		   size_t errlen)
{
	struct regdesc d;
	struct regdesc_slot slot[PROBEREG_CHUNK];
	uint64_t slots = 0, names = 0;
	uint32_t used = 0;

	memset(st, 0, sizeof(*st));
	if (!read(read_ctx, desc, &d, sizeof(d))) {
		snprintf(err, errlen,
			 "the probe's registry descriptor at 0x%" PRIx64
			 " cannot be read",
			 desc);
		return false;
	}
	if (memcmp(d.magic, REGDESC_MAGIC, sizeof(d.magic)) ||
	    d.version != REGDESC_VERSION ||
	    d.slot_size != sizeof(struct regdesc_slot) ||
	    d.name_size != sizeof(struct regdesc_name) ||
	    d.coro_size != sizeof(struct corotop_coro) || !d.max ||
	    d.max > REGDESC_MAX) {
		snprintf(err, errlen,
			 "the probe's registry descriptor at 0x%" PRIx64
			 " is not one this corotop reads (version %" PRIu32
			 ", sizes %" PRIu32 "/%" PRIu32 "/%" PRIu32 ")",
			 desc, d.version, d.slot_size, d.name_size,
			 d.coro_size);
		return false;
	}
	if (!read(read_ctx, d.slots_at, &slots, sizeof(slots)) ||
	    !read(read_ctx, d.used_at, &used, sizeof(used))) {
		snprintf(err, errlen, "the probe's registry cannot be read");
		return false;
	}
	/* No names: a registry without them (out of address space). */
	if (!read(read_ctx, d.names_at, &names, sizeof(names)))
		names = 0;
	if (used > d.max)
		used = d.max;
	st->used = used;
	if (!slots)
		return true; /* never initialised: nothing registered */
	for (uint32_t k0 = 0; k0 < used; k0 += PROBEREG_CHUNK) {
		uint32_t n =
			used - k0 < PROBEREG_CHUNK ? used - k0 : PROBEREG_CHUNK;

		if (!read(read_ctx, slots + (uint64_t)k0 * sizeof(*slot), slot,
			  n * sizeof(*slot))) {
			snprintf(err, errlen,
				 "the probe's registry slots cannot be read");
			return false;
		}
		for (uint32_t i = 0; i < n; i++) {
			struct probereg_coro rc = {.at = slot[i].coro};

			if (!(slot[i].word & REGDESC_LIVE) || !rc.at)
				continue;
			st->live++;
			if (st->live > max) {
				st->past_max++;
				continue;
			}
			if (!read(read_ctx, rc.at, &rc.c, sizeof(rc.c))) {
				st->unread++;
				continue;
			}
			probereg_name(read, read_ctx, names, k0 + i, &rc);
			fn(ctx, &rc);
		}
	}
	return true;
}
