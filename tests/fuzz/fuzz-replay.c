/*
 * fuzz-replay: a Heph recording from untrusted bytes, all the way to what
 * replay and corotop convert make of it -- the index (hephfile.c), the
 * coroutines, losses, births and options (replay.c), the recorded names
 * (hephnames.c) and every converter (convert.c, convert_parked.c).
 *
 * Input byte 0 picks the mode (a multiple of 4: raw).  Mode "raw" indexes
 * the rest as it is.  Mode "built" reads the rest 4 bytes at a time as
 * instructions for a trace writer -- corotop's options (corotop, births
 * with and without ids, names, pid, exit, end, command, symbols), intervals
 * "running"/"suspended" with addr, seq, symbol and stack on a few streams
 * and substreams, losses (also corotop's own, stream 0 substream 0), other
 * writers' spans with attributes of every type, times that go backwards
 * or sit at the end of the u64 range, and now and then a raw byte or a
 * packet cut short -- so that random inputs reach the grouping, the cuts
 * at births, the moments and the converters, not only the first packet.
 *
 * Then: snapshots at t0, t1, the middle, before and beyond, and at times
 * from the input; history, parked stack and steps (both ways) of a few
 * coroutines and of none; chrome, jsonl and folded (with the recorded
 * names) into /dev/null.  It must not crash, leak or hang, and:
 *   - a snapshot's time is within [t0, t1], its records number at most the
 *     coroutines, are in use with distinct non-zero ids, a known state and
 *     a name (if any) of printable ASCII under 48 bytes, and the state
 *     totals add up to the count;
 *   - history returns at most max transitions, oldest first, none after t;
 *   - a parked stack has at most max frames;
 *   - a step forwards never goes back, a step backwards never forwards.
 *
 * Built as a libFuzzer target with clang (-Dfuzz=true) and, always, with
 * tests/fuzz/driver.c, which replays a seeded pseudo-random corpus.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/convert.h"
#include "engine/heph/heph.h"
#include "engine/heph/hephnames.h"
#include "engine/replay/replay.h"

#define FUZZ_TRACE_MAX (1u << 19)

struct fuzz_build {
	struct heph_enc e;
	uint64_t now; /* the writer's clock */
};

static void fb_be64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static void fb_meta_u64s(struct fuzz_build *b, const char *name,
			 const uint64_t *v, size_t n)
{
	uint8_t val[24];

	for (size_t i = 0; i < n && i < 3; i++)
		fb_be64(val + 8 * i, v[i]);
	heph_enc_meta(&b->e, name, val, n * 8);
}

/* A time near the writer's clock: mostly forwards, sometimes back, now
 * and then at the end of the range. */
static uint64_t fb_time(struct fuzz_build *b, uint8_t g)
{
	if (g == 0xff)
		return UINT64_MAX - (g & 3);
	if (g >= 0xf0)
		return b->now > 100 ? b->now - (g & 15) * 7 : 0;
	b->now += g % 64;
	return b->now;
}

static void fb_attrs(struct fuzz_build *b, uint8_t g)
{
	static const uint64_t frames[] = {0x401000, 0x401234,	0x402000,
					  0,	    UINT64_MAX, 0x401001,
					  0x401235, 0x402001};
	static const double f[] = {0.5, 1e300, -0.0};
	char s[8] = "s\"\\\x01\xff";

	if (g & 1)
		heph_enc_u64(&b->e, "addr", 0x401000 + (g >> 4));
	if (g & 2)
		heph_enc_u64(&b->e, "seq", g);
	if (g & 4)
		heph_enc_u64_array(&b->e, "stack", frames + (g >> 6),
				   (size_t)(g >> 4) % 4);
	if (g & 8)
		heph_enc_str(&b->e, "symbol", s + (g >> 5) % 5);
	if ((g & 0x30) == 0x30) {
		heph_enc_i64(&b->e, "i", (int64_t)(UINT64_C(1) << 63 | g));
		heph_enc_f64(&b->e, "f", g & 0x40 ? NAN : 1.5);
		heph_enc_f64_array(&b->e, "fa", f, g % 4);
		heph_enc_u64(&b->e, "count", g);
		heph_enc_u64(&b->e, "count", (uint64_t)g << 40);
	}
}

static void fb_op(struct fuzz_build *b, const uint8_t *g)
{
	static const char *const descs[] = {"running", "suspended", "lost",
					    "poll",    "",	    "runnin"};
	uint64_t v[3], start, end;
	int d = g[0] % 16 - 9;
	uint32_t stream = g[1] % 3 ? 100 + g[1] % 3 : 0;
	uint64_t sub = g[1] / 8 % 4 == 3 ? (uint64_t)1 << 40 : g[1] / 8 % 4;
	uint8_t name[8 + 8];

	switch (g[0] % 16) {
	case 0:
		heph_enc_epoch(&b->e, (uint64_t)g[2] << 56 | g[3]);
		break;
	case 1:
		heph_enc_meta(&b->e, "corotop", "1", 1);
		break;
	case 2:
	case 3:
		v[0] = sub;
		v[1] = fb_time(b, g[2]);
		v[2] = g[3] % 8;
		/* Now and then a death of one that never ran instead. */
		fb_meta_u64s(b,
			     (g[3] & 0x60) == 0x60 ? "corotop_death"
						   : "corotop_birth",
			     v, g[3] & 0x80 ? 2 : 3);
		break;
	case 4:
		v[0] = g[2];
		v[1] = fb_time(b, g[3]);
		fb_meta_u64s(b, g[2] & 1 ? "corotop_pid" : "corotop_end",
			     g[2] & 2 ? v + 1 : v, 1);
		break;
	case 5:
		v[0] = (uint64_t)(int64_t)(int8_t)g[2];
		v[1] = g[3];
		fb_meta_u64s(b, "corotop_exit", v, g[3] & 0x80 ? 1 : 2);
		break;
	case 6:
		if (g[2] & 0x80) { /* a name, for a small id, hostile bytes */
			fb_be64(name, g[3] % 8);
			memcpy(name + 8,
			       "n\x1b\xff"
			       "ame;\0x",
			       8);
			heph_enc_meta(&b->e, "corotop_name", name,
				      8 + g[2] % 9);
			break;
		}
		heph_enc_meta(&b->e, "corotop_command", "a\tb\x01\xff",
			      g[2] % 6);
		break;
	case 7:
		fb_be64(name, 0x401000 + (g[2] & 0x3f));
		memcpy(name + 8, "fn;\x01 +0", 8);
		heph_enc_meta(&b->e, "corotop_symbol", name, 8 + g[3] % 9);
		break;
	case 8:
		/* Rarely: most traces stay whole, to reach the model. */
		if (g[1] < 16 && (g[2] == 0xc1 || g[2] == 0x75)) {
			if (heph_enc_meta(&b->e, "x", NULL, 0))
				b->e.len -= 1 + g[3] % 8; /* cut short */
			break;
		} else if (g[1] < 16 && b->e.len < b->e.cap) {
			b->e.buf[b->e.len++] = g[2]; /* a stray byte */
			break;
		}
		/* fall through */
	default:
		start = fb_time(b, g[2]);
		end = g[3] == 0xfe ? start - 1 : start + g[3] % 32;
		if (end < start && g[3] != 0xfe)
			end = UINT64_MAX;
		heph_enc_event_begin(&b->e, stream, g[0], sub, start, end,
				     descs[d >= 0 && d < 6 ? d : 0]);
		fb_attrs(b, (uint8_t)(g[1] ^ g[3]));
		heph_enc_event_end(&b->e);
		break;
	}
}

/* ---- checks ---- */

static void fuzz_snapshot(const struct replay *r, uint64_t t,
			  struct snapshot *s)
{
	uint32_t states = 0;
	char name[128];

	replay_snapshot(r, t, s);
	if (s->ts < r->t0 || s->ts > r->t1 || s->count > r->ncoro)
		abort();
	for (size_t i = 0; i < s->count; i++) {
		const struct model_coro *c = &s->coro[i];

		if (!c->in_use || !c->id || c->slot >= r->ncoro ||
		    (c->state != MODEL_RUNNING && c->state != MODEL_SUSPENDED &&
		     c->state != MODEL_DEAD))
			abort();
		for (size_t j = 0; j < i; j++)
			if (s->coro[j].id == c->id)
				abort();
		/* A recorded name: bounded, printable ASCII. */
		snapshot_name(s, c, name, sizeof(name));
		if (strlen(name) >= 48)
			abort();
		for (const char *p = name; *p; p++)
			if (*p < 0x20 || *p > 0x7e)
				abort();
	}
	states = s->t.running + s->t.suspended + s->t.dead;
	if (states != s->count || s->t.coroutines_seen > r->ncoro)
		abort();
}

static void fuzz_coro(const struct replay *r, uint64_t id, uint64_t t)
{
	struct model_transition h[8];
	uint64_t frames[4], to;
	size_t n;

	n = replay_history(r, id, t, h, 8);
	if (n > 8)
		abort();
	for (size_t i = 0; i < n; i++)
		if (h[i].ts > t || (i && h[i].ts < h[i - 1].ts))
			abort();
	if (replay_history(r, id, t, h, 1) > 1 ||
	    replay_parked_stack(r, id, t, frames, 4) > 4)
		abort();
	to = replay_step(r, id, t, 1);
	if (to < t)
		abort();
	to = replay_step(r, id, t, -1);
	if (to > t)
		abort();
}

static const char *fuzz_name(void *ctx, uint64_t addr, bool leaf)
{
	return heph_names_find(ctx, leaf || !addr ? addr : addr - 1);
}

static void fuzz_convert(const struct heph_file *f)
{
	static FILE *null;
	struct heph_names names;
	struct convert_stats st;
	char err[128];

	if (!null)
		null = fopen("/dev/null", "w");
	if (!null)
		abort();
	heph_names_init(&names, f);
	for (size_t k = 0; k < convert_nformats; k++)
		if (!convert_write(f, convert_formats[k].to, null, fuzz_name,
				   &names, &st, err, sizeof(err)))
			abort();
	heph_names_finish(&names);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t trace[FUZZ_TRACE_MAX];
	struct fuzz_build b = {.now = 1000};
	const uint8_t *p = data + 1;
	size_t n = size ? size - 1 : 0;
	struct snapshot s;
	struct replay r;
	char err[160];
	uint64_t ts[8];

	if (!size)
		return 0;
	if (data[0] % 4) {
		heph_enc_init(&b.e, trace, sizeof(trace));
		for (size_t i = 0; i + 4 <= n; i += 4)
			fb_op(&b, p + i);
		p = trace;
		n = b.e.len;
	}
	if (!replay_open_bytes(&r, p, n, 1 + data[0] % 64, err, sizeof(err)))
		return 0; /* out of memory only */
	memset(&s, 0, sizeof(s));
	ts[0] = r.t0;
	ts[1] = r.t1;
	ts[2] = r.t0 + (r.t1 - r.t0) / 2;
	ts[3] = r.t1 < UINT64_MAX ? r.t1 + 1 : r.t1;
	ts[4] = 0;
	ts[5] = UINT64_MAX;
	ts[6] = size > 8 ? r.t0 + data[size - 1] * 3 : r.t0;
	ts[7] = size > 8 ? r.t1 - data[size - 2] % 8 : r.t1;
	for (size_t i = 0; i < 8; i++) {
		fuzz_snapshot(&r, ts[i], &s);
		for (size_t k = 0; k < r.ncoro && k < 4; k++)
			fuzz_coro(&r, r.coro[r.by_id[k]].id, ts[i]);
		fuzz_coro(&r, 0, ts[i]);
		fuzz_coro(&r, UINT64_MAX, ts[i]);
	}
	free(s.coro);
	fuzz_convert(&r.f);
	replay_close(&r);
	return 0;
}
