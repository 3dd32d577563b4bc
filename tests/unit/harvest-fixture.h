/*
 * harvest-fixture: shared by test-harvest.c and test-dirty.c.  A region of
 * NST stations in an aligned buffer, a harvest over it with a recording sink
 * that checks order, probe_id and payload of every delivered event, and
 * writers that play the probe (station style) or an upstream SDK (per-slot
 * style).  Payloads are a pure function of (station, n).
 */
#ifndef COROTOP_TEST_HARVEST_FIXTURE_H
#define COROTOP_TEST_HARVEST_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "wire/freelist.h"
#include "engine/ctp/harvest.h"

#define NST 4u
#define LOGMAX 256

/* ---- payloads: a pure function of (station, n) ---- */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static uint64_t pl(uint32_t st, uint64_t n, unsigned field)
{
	return mix(((uint64_t)st << 56) ^ (n << 3) ^ field);
}

/* ---- the recording sink ---- */

struct logent {
	char kind; /* O E L C */
	uint32_t st;
	uint64_t v; /* E: n, L: count, O: probe_id */
};

struct rec {
	struct logent log[LOGMAX];
	size_t nlog;
	uint64_t opens[NST], closes[NST], lost[NST], delivered[NST];
	uint64_t last_n[NST], pid[NST];
	bool have_last[NST];
	bool no_payload_check;
	unsigned bad; /* payload, order or probe_id violations */
};

static void rec_log(struct rec *r, char kind, uint32_t st, uint64_t v)
{
	if (r->nlog < LOGMAX)
		r->log[r->nlog++] = (struct logent){kind, st, v};
}

static void on_open(void *ctx, uint32_t st, uint64_t probe_id, uint64_t birth)
{
	struct rec *r = ctx;

	(void)birth;
	r->opens[st]++;
	r->pid[st] = probe_id;
	rec_log(r, 'O', st, probe_id);
}

/* The last census event delivered (test-harvest's census test). */
static struct harvest_event census_seen;

static void on_event(void *ctx, const struct harvest_event *ev)
{
	struct rec *r = ctx;
	uint32_t st = ev->station;

	if (ev->census)
		census_seen = *ev;

	if (r->have_last[st] && ev->n <= r->last_n[st])
		r->bad++; /* duplicate or out of order */
	r->have_last[st] = true;
	r->last_n[st] = ev->n;
	if (ev->probe_id != r->pid[st])
		r->bad++; /* history mixed with another occupant */
	if (!r->no_payload_check &&
	    (ev->ts != pl(st, ev->n, 0) || ev->tid != pl(st, ev->n, 1) ||
	     ev->addr != pl(st, ev->n, 2) || ev->check != pl(st, ev->n, 3) ||
	     ev->trace != pl(st, ev->n, 5) ||
	     ev->is_active != (pl(st, ev->n, 4) & 1)))
		r->bad++;
	r->delivered[st]++;
	rec_log(r, 'E', st, ev->n);
}

static void on_lost(void *ctx, uint32_t st, uint64_t count)
{
	struct rec *r = ctx;

	r->lost[st] += count;
	rec_log(r, 'L', st, count);
}

static void on_close(void *ctx, uint32_t st)
{
	struct rec *r = ctx;

	r->closes[st]++;
	rec_log(r, 'C', st, 0);
}

/* ---- fixture ---- */

struct fx {
	struct ctp_header *hdr;
	struct ctp_station *st;
	struct harvest h;
	struct rec *r;
	struct harvest_sink sink;
	uint64_t up_count[NST]; /* upstream writer: events written */
};

static struct fx *F; /* for the hooks */

/* The harvest's clock, moved by hand (undecided styles wait on it). */
static uint64_t fx_now_ns = 1000000000ull;

static uint64_t fx_clock(void)
{
	return fx_now_ns;
}

/* A fixture over a region of NST stations plus `extra` bytes after them,
 * its header extension flags `flags`. */
static struct fx *fx_create(size_t extra, uint32_t flags)
{
	struct fx *f = calloc(1, sizeof(*f));
	size_t size = (size_t)ctp_region_size(NST) + extra;

	f->hdr = aligned_alloc(1024, size);
	memset(f->hdr, 0, size);
	f->hdr->magic = CTP_MAGIC;
	f->hdr->version = CTP_VERSION;
	f->hdr->max_stations = NST;
	f->hdr->ext.magic = CTP_HX_MAGIC;
	f->hdr->ext.version = CTP_HX_VERSION;
	f->hdr->ext.flags = flags;
	atomic_store(&f->hdr->allocated_count, NST);
	f->st = (struct ctp_station *)((char *)f->hdr + CTP_HEADER_SIZE);
	f->r = calloc(1, sizeof(*f->r));
	f->sink = (struct harvest_sink){.open = on_open,
					.event = on_event,
					.lost = on_lost,
					.close = on_close,
					.ctx = f->r};
	assert_true(harvest_init(&f->h, f->hdr, NST, true));
	f->h.clock = fx_clock;
	F = f;
	return f;
}

static int setup(void **state)
{
	*state = fx_create(0, CTP_HX_FREELIST);
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	harvest_test_after_copy = NULL;
	harvest_finish(&f->h);
	free(f->r);
	free(f->hdr);
	free(f);
	F = NULL;
	return 0;
}

static size_t scan(struct fx *f)
{
	return harvest_scan(&f->h, &f->sink);
}

/* ---- writers ---- */

static inline void put_payload(struct ctp_epoch *e, uint32_t st, uint64_t n)
{
	uint64_t check = pl(st, n, 3), trace = pl(st, n, 5);

	e->timestamp = pl(st, n, 0);
	e->tid = pl(st, n, 1);
	e->addr = pl(st, n, 2);
	memcpy(&e->reserved[CTP_EPOCH_CHECK_OFFSET], &check, 8);
	/* The parked-stack word is payload like the rest. */
	memcpy(&e->reserved[CTP_EPOCH_TRACE_OFFSET], &trace, 8);
	e->is_active = (uint8_t)(pl(st, n, 4) & 1);
}

/* corotop station style: event n in slot n % 8, seq 2n+1 then 2n+2. */
static inline void ours_begin(struct fx *f, uint32_t st, uint64_t n)
{
	struct ctp_epoch *e = &f->st[st].slots[n % CTP_SLOTS];

	atomic_store(&e->seq, 2 * n + 1);
	memset(e, 0xEE, offsetof(struct ctp_epoch, seq)); /* half written */
}

static inline void ours_end(struct fx *f, uint32_t st, uint64_t n)
{
	struct ctp_epoch *e = &f->st[st].slots[n % CTP_SLOTS];

	put_payload(e, st, n);
	atomic_store(&e->seq, ctp_event_seq(n));
}

static inline void ours_write(struct fx *f, uint32_t st, uint64_t n)
{
	ours_begin(f, st, n);
	ours_end(f, st, n);
}

static inline void ours_open(struct fx *f, uint32_t i, uint64_t pid,
			     uint64_t first)
{
	struct ctp_station *s = &f->st[i];

	s->probe_id = pid;
	s->birth_ts = 1000 + pid;
	atomic_store(&s->is_dead, 0);
	s->ext.magic = CTP_STX_MAGIC;
	s->ext.flags = CTP_STX_SEQ_STATION;
	s->ext.first_n = first;
	atomic_fetch_add(&s->ext.gen, 1);
}

static inline void ours_close(struct fx *f, uint32_t i, uint64_t next_n)
{
	f->st[i].ext.next_n = next_n;
	atomic_store(&f->st[i].is_dead, 1);
}

/* Upstream SDK: each slot counts its own writes, +1 then +2. */
static inline void up_write(struct fx *f, uint32_t st)
{
	uint64_t n = f->up_count[st]++;
	struct ctp_epoch *e = &f->st[st].slots[n % CTP_SLOTS];
	uint64_t old = atomic_load(&e->seq);

	atomic_store(&e->seq, old + 1);
	put_payload(e, st, n);
	atomic_store(&e->seq, old + 2);
}

/* The log, as a compact string like "O E0 E1 L2 C". */
static inline const char *logstr(struct rec *r, uint32_t st)
{
	static char buf[4096];
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < r->nlog && o < sizeof(buf) - 32; i++) {
		const struct logent *l = &r->log[i];

		if (l->st != st)
			continue;
		if (l->kind == 'E' || l->kind == 'L')
			o += (size_t)snprintf(buf + o, sizeof(buf) - o,
					      "%s%c%llu", o ? " " : "", l->kind,
					      (unsigned long long)l->v);
		else
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%c",
					      o ? " " : "", l->kind);
	}
	return buf;
}

#endif
