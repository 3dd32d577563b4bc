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
#include "engine/target/procmem.h"
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

/* Slot k's name into rc (none when it cannot be read). */
static void probereg_name(struct procmem *pm, uint64_t names, uint32_t k,
			  struct probereg_coro *rc)
{
	struct regdesc_name nm;
	char err[128];

	rc->name[0] = '\0';
	if (!names || !procmem_read(pm, names + (uint64_t)k * sizeof(nm), &nm,
				    sizeof(nm), err, sizeof(err)))
		return;
	rc->entry = nm.entry;
	rc->made_for = nm.made_for;
	if (!nm.ptr) {
		memcpy(rc->name, nm.text, sizeof(rc->name));
		rc->name[sizeof(rc->name) - 1] = '\0';
	} else if (!procmem_read_string(pm, nm.ptr, rc->name, sizeof(rc->name),
					err, sizeof(err))) {
		rc->name[0] = '\0';
	}
	probereg_printable(rc->name);
}

bool probereg_read(struct procmem *pm, uint64_t desc, uint32_t max,
		   void (*fn)(void *ctx, const struct probereg_coro *rc),
		   void *ctx, struct probereg_stats *st, char *err,
		   size_t errlen)
{
	struct regdesc d;
	struct regdesc_slot slot[PROBEREG_CHUNK];
	uint64_t slots = 0, names = 0;
	uint32_t used = 0;

	memset(st, 0, sizeof(*st));
	if (!procmem_read(pm, desc, &d, sizeof(d), err, errlen))
		return false;
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
	if (!procmem_read(pm, d.slots_at, &slots, sizeof(slots), err, errlen) ||
	    !procmem_read(pm, d.used_at, &used, sizeof(used), err, errlen))
		return false;
	/* No names: a registry without them (out of address space). */
	if (!procmem_read(pm, d.names_at, &names, sizeof(names), err, errlen))
		names = 0;
	if (used > d.max)
		used = d.max;
	st->used = used;
	if (!slots)
		return true; /* never initialised: nothing registered */
	for (uint32_t k0 = 0; k0 < used; k0 += PROBEREG_CHUNK) {
		uint32_t n =
			used - k0 < PROBEREG_CHUNK ? used - k0 : PROBEREG_CHUNK;

		if (!procmem_read(pm, slots + (uint64_t)k0 * sizeof(*slot),
				  slot, n * sizeof(*slot), err, errlen))
			return false;
		for (uint32_t i = 0; i < n; i++) {
			struct probereg_coro rc = {.at = slot[i].coro};
			char why[128];

			if (!(slot[i].word & REGDESC_LIVE) || !rc.at)
				continue;
			st->live++;
			if (st->live > max) {
				st->past_max++;
				continue;
			}
			if (!procmem_read(pm, rc.at, &rc.c, sizeof(rc.c), why,
					  sizeof(why))) {
				st->unread++;
				continue;
			}
			probereg_name(pm, names, k0 + i, &rc);
			fn(ctx, &rc);
		}
	}
	return true;
}
