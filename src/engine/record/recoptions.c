/*
 * recoptions: the metadata packets a corotop recording carries besides its
 * intervals (docs/WIRE.md, "Heph recordings"): corotop_birth, _name,
 * _named, _kind, _coro_pid, _death, and the one-number options -- each a
 * few big-endian u64s, some then a text, encoded into the writer thread's
 * buffer (recorder.c) after making room for them.
 */
#define _GNU_SOURCE
#include "engine/record/recorder_internal.h"

#include <string.h>

void rec_be64(uint8_t *be, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		be[i] = (uint8_t)(v >> (56 - 8 * i));
}

void rec_meta_u64(struct recorder *r, const char *option, uint64_t v)
{
	uint8_t be[8];

	rec_be64(be, v);
	rec_room(r, HEPH_META_FIXED + 32 + sizeof(be));
	heph_enc_meta(&r->enc, option, be, sizeof(be));
}

/* A coroutine was born: corotop_birth = substream, time and corotop's id
 * for it (u64 each).  A
 * probe id is reused, so this is where replay cuts a substream's
 * intervals into coroutines (the death's time is the harvest's, which may
 * come after the next coroutine's first transition). */
void rec_birth(struct recorder *r, uint64_t probe_id, uint64_t ts, uint64_t id)
{
	uint8_t be[24];

	rec_be64(be, probe_id);
	rec_be64(be + 8, ts);
	rec_be64(be + 16, id);
	rec_room(r, HEPH_META_FIXED + 16 + sizeof(be));
	heph_enc_meta(&r->enc, "corotop_birth", be, sizeof(be));
}

/* Its name (a probe's, cleaned by the harvest): corotop_name = corotop's
 * id (u64, as in its corotop_birth), then the name, right after the
 * birth. */
void rec_coro_name(struct recorder *r, uint64_t id, const char *name)
{
	uint8_t val[8 + sizeof(((struct rec_item *)0)->name)];
	size_t n = strnlen(name, sizeof(val) - 8 - 1);

	rec_be64(val, id);
	memcpy(val + 8, name, n);
	rec_room(r, HEPH_META_FIXED + 16 + 8 + n);
	heph_enc_meta(&r->enc, "corotop_name", val, 8 + n);
}

/* An option of two u64s (option: at most 16 bytes of name). */
void rec_meta_pair(struct recorder *r, const char *option, uint64_t a,
		   uint64_t b)
{
	uint8_t be[16];

	rec_be64(be, a);
	rec_be64(be + 8, b);
	rec_room(r, HEPH_META_FIXED + 16 + sizeof(be));
	heph_enc_meta(&r->enc, option, be, sizeof(be));
}

/* The process a coroutine lives in, when not the target:
 * corotop_coro_pid = corotop's id and the pid, right after the birth. */
void rec_coro_pid(struct recorder *r, uint64_t id, uint64_t pid)
{
	rec_meta_pair(r, "corotop_coro_pid", id, pid);
}

/* An option of three u64s, then text (at most 47 bytes; option: at most
 * 16 bytes of name). */
void rec_meta_triple(struct recorder *r, const char *option, uint64_t a,
		     uint64_t b, uint64_t c, const char *text)
{
	uint8_t val[24 + sizeof(((struct rec_item *)0)->name)];
	size_t n = text ? strnlen(text, sizeof(val) - 24 - 1) : 0;

	rec_be64(val, a);
	rec_be64(val + 8, b);
	rec_be64(val + 16, c);
	if (n) /* text NULL: none (memcpy of NULL is undefined) */
		memcpy(val + 24, text, n);
	rec_room(r, HEPH_META_FIXED + 16 + 24 + n);
	heph_enc_meta(&r->enc, option, val, 24 + n);
}

/* A coroutine that never ran died: corotop_death = substream and time.
 * One that ran needs none: its last interval ends there. */
void rec_death(struct recorder *r, uint64_t probe_id, uint64_t ts)
{
	rec_meta_pair(r, "corotop_death", probe_id, ts);
}
