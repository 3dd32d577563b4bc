/*
 * fuzz-probereg: a probe's registry read from a process's memory
 * (src/engine/scan/probereg.c) -- what a core of a program that ran with
 * the probe holds, or what a damaged or made-up one claims.
 *
 * The memory is one region at FZ_BASE, built from the input (fuzzin.h):
 * the descriptor first (its magic, version and sizes right unless the
 * input says otherwise), then the three words it points at (the slots'
 * and names' addresses, the count of slots -- each inside the region or
 * anywhere), the slots (live or not, their coroutine inside the region or
 * anywhere) and the names (copied texts with any bytes, or pointers to a
 * string inside the region, terminated or not, or anywhere).  Reads
 * outside the region fail, as a core's do.  Nothing may crash or read
 * outside the region, and:
 *   - a registry is listed only when the descriptor is exactly right;
 *   - at most `max` coroutines are listed, never more than the live slots
 *     within the count, and live = listed + unread + past_max;
 *   - every listed coroutine's address is a live slot's, its name
 *     NUL-terminated within COROTOP_NAME_MAX and printable ASCII.
 *
 * Built as a libFuzzer target with clang (-Dfuzz=true) and, always, with
 * tests/fuzz/driver.c, which replays a seeded pseudo-random corpus.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "corotop/ctp.h"
#include "fuzzin.h"
#include "engine/scan/probereg.h"
#include "wire/regdesc.h"

#define FZ_BASE 0x100000u
#define FZ_SIZE 16384u
#define FZ_SLOTS 24u

static uint8_t fz_mem[FZ_SIZE];

static bool fz_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	(void)ctx;
	if (addr < FZ_BASE || addr - FZ_BASE > FZ_SIZE ||
	    n > FZ_SIZE - (addr - FZ_BASE))
		return false;
	memcpy(buf, fz_mem + (addr - FZ_BASE), n);
	return true;
}

struct fz_seen {
	uint32_t n, max;
	uint64_t live[FZ_SLOTS];
	uint32_t nlive;
};

static void fz_one(void *ctx, const struct probereg_coro *rc)
{
	struct fz_seen *s = ctx;
	bool known = false;
	size_t len = strnlen(rc->name, COROTOP_NAME_MAX);

	if (len == COROTOP_NAME_MAX)
		abort();
	for (size_t i = 0; i < len; i++)
		if (rc->name[i] < 0x20 || rc->name[i] > 0x7e)
			abort();
	for (uint32_t k = 0; k < s->nlive; k++)
		known = known || s->live[k] == rc->at;
	if (!known || ++s->n > s->max)
		abort();
}

/* An address: inside the region at `at` most of the time, else any. */
static uint64_t fz_addr(struct fz_in *in, uint64_t at)
{
	return fz_u8(in) % 8 ? FZ_BASE + at : fz_u64(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = {data, size, 0};
	struct regdesc d;
	struct probereg_stats st;
	struct fz_seen seen = {0};
	/* Where things lie in the region. */
	const uint64_t slots_at = 256, names_at = 1024, coros = 4096,
		       strings = 12288;
	uint64_t slots_p, names_p;
	uint32_t used = fz_u8(&in) % (FZ_SLOTS + 4), live_in_used = 0;
	char err[256];
	bool exact = true, ok;

	memset(fz_mem, 0, sizeof(fz_mem));
	memset(&d, 0, sizeof(d));
	memcpy(d.magic, REGDESC_MAGIC, sizeof(d.magic));
	d.version = REGDESC_VERSION;
	d.slot_size = sizeof(struct regdesc_slot);
	d.name_size = sizeof(struct regdesc_name);
	d.coro_size = sizeof(struct corotop_coro);
	d.max = FZ_SLOTS;
	switch (fz_u8(&in) % 16) {
	case 0:
		d.magic[fz_u8(&in) % 8] ^= 1;
		exact = false;
		break;
	case 1:
		d.version = fz_u32(&in);
		exact = d.version == REGDESC_VERSION;
		break;
	case 2:
		d.coro_size = fz_u32(&in);
		exact = d.coro_size == sizeof(struct corotop_coro);
		break;
	case 3:
		d.max = fz_u32(&in);
		exact = d.max && d.max <= CTP_MAX_STATIONS_LIMIT;
		break;
	default:
		break;
	}
	d.slots_at = fz_addr(&in, 64);
	d.names_at = fz_addr(&in, 72);
	d.used_at = fz_addr(&in, 80);
	memcpy(fz_mem, &d, sizeof(d));
	slots_p = fz_addr(&in, slots_at);
	names_p = fz_u8(&in) % 8 ? FZ_BASE + names_at : 0;
	memcpy(fz_mem + 64, &slots_p, 8);
	memcpy(fz_mem + 72, &names_p, 8);
	memcpy(fz_mem + 80, &used, 4);
	for (uint32_t k = 0; k < FZ_SLOTS; k++) {
		struct regdesc_slot sl = {0};
		struct regdesc_name nm = {0};

		sl.word = fz_u8(&in) % 4 ? REGDESC_LIVE : 0;
		sl.coro = fz_u8(&in) % 8 ? FZ_BASE + coros + k * 64 / 2
					 : fz_u64(&in);
		if (sl.word & REGDESC_LIVE && sl.coro &&
		    seen.nlive < FZ_SLOTS) {
			seen.live[seen.nlive++] = sl.coro;
			live_in_used += k < used && k < d.max;
		}
		memcpy(fz_mem + slots_at + k * sizeof(sl), &sl, sizeof(sl));
		if (fz_u8(&in) % 2) {
			for (size_t i = 0; i < sizeof(nm.text); i++)
				nm.text[i] = (char)fz_u8(&in);
		} else {
			nm.ptr = fz_addr(&in,
					 strings + k * 64 + fz_u8(&in) % 64);
		}
		memcpy(fz_mem + names_at + k * sizeof(nm), &nm, sizeof(nm));
	}
	/* The coroutines and the strings: raw bytes. */
	for (uint64_t i = coros; i < FZ_SIZE; i++)
		fz_mem[i] = fz_u8(&in);
	seen.max = 1 + fz_u8(&in) % (FZ_SLOTS + 2);
	ok = probereg_read(fz_read, NULL, FZ_BASE, seen.max, fz_one, &seen, &st,
			   err, sizeof(err));
	if (ok && !exact)
		abort();
	if (ok &&
	    (st.live != seen.n + st.unread + st.past_max || seen.n > seen.max))
		abort();
	/* Within the count, at its true place: every live slot seen. */
	if (ok && d.slots_at == FZ_BASE + 64 && d.used_at == FZ_BASE + 80 &&
	    slots_p == FZ_BASE + slots_at && st.live != live_in_used)
		abort();
	return 0;
}
