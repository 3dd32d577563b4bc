/*
 * replay_gen: a synthetic corotop recording for the replay benchmarks,
 * shaped as recorder.c writes one and written with the real encoder
 * (heph_enc_*).
 *
 * The file starts with the epoch, `corotop`, `corotop_command` and
 * `corotop_pid` options.  Then, harvest pass by harvest pass (1 ms of
 * trace time, stations in order within a pass, as the recorder's ring
 * delivers them), it holds a `corotop_birth` (probe id, time, id) per
 * coroutine born -- probe ids look like the heap addresses the probe uses
 * by default -- and one "running"/"suspended" event per state interval,
 * written when the transition ending it is harvested: u64 addr and seq; a
 * `symbol` string when its address is one of the half that symbolize,
 * named once before by a `corotop_symbol` option; a `stack` u64 array on
 * 3% of suspensions, its frames named the same way.  "lost" events
 * (`count`) sit on a coroutine's stream and substream, and a few of
 * corotop's own on stream 0, substream 0.  At the end every open interval
 * closes at the stop time, then come `corotop_exit` and `corotop_end`.
 *
 * The population: 10,000 probe ids on 8 threads (tids as streams, 5% of
 * transitions on another thread than the coroutine's own), each id reused
 * by coroutine after coroutine of 50-450 transitions (so ~40,000
 * coroutines for 10 M events), running intervals of ~20 us (exponential),
 * suspensions sized so that the whole spans ~60 s of trace time.  The
 * simulation is a min-heap of the ids by their next transition.
 */
#define _GNU_SOURCE
#include "replay_gen.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/symbols/framenames.h"
#include "engine/heph/heph.h"
#include "engine/heph/hephnames.h"
#include "common/hash.h"
#include "common/grow.h"

__attribute__((format(printf, 1, 2), noreturn)) static void
gen_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("replay_gen: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

#define GEN_THREADS 8
#define GEN_IDS 10000u	     /* probe ids (stations) */
#define GEN_KINDS 64u	     /* coroutine functions; 4 resume points each */
#define GEN_FRAMES 512u	     /* distinct stack frame addresses */
#define GEN_PASS_NS 1000000u /* one harvest pass */
#define GEN_SPAN_NS 60000000000ull /* ~ trace length */
#define GEN_RUN_NS 20000.0	   /* mean running interval */
#define GEN_BUF (4u << 20)
#define GEN_T0 3600000000000ull /* CLOCK_MONOTONIC an hour after boot */
#define GEN_TID0 31337u

/* ---- the synthetic recording ---- */

static uint64_t rng_state = HASH_GOLDEN;

static uint64_t rng(void)
{
	uint64_t x = rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static double rng_unit(void) /* (0, 1] */
{
	return (double)((rng() >> 11) + 1) / 9007199254740992.0;
}

static uint64_t rng_exp(double mean)
{
	return (uint64_t)(-mean * log(rng_unit())) + 1;
}

enum item_kind { IT_OPEN, IT_EVENT, IT_LOST, IT_CLOSE };

/* One thing the harvest saw, as the recorder's ring carries it. */
struct item {
	uint64_t ts, addr, seq, value;
	uint32_t slot, tid, order;
	uint8_t kind, running, stack;
};

/* A probe id's current coroutine, as the simulation drives it. */
struct slot {
	uint64_t next; /* its next transition (or birth) */
	uint64_t seq, id;
	uint32_t left; /* transitions before it dies */
	uint32_t home; /* thread it mostly runs on */
	uint16_t kind;
	bool live, running;
};

/* What the recorder keeps per station: the transition that began the
 * current interval (recorder.c's rec_station). */
struct rstation {
	bool live, have;
	uint8_t running, stack;
	uint64_t ts, tid, addr, seq;
};

struct gen {
	int fd;
	uint8_t *buf;
	struct heph_enc enc;
	uint64_t bytes;
	struct slot *slot;
	struct rstation *st;
	uint32_t *heap; /* slots by next */
	uint32_t nheap;
	struct item *items; /* this pass */
	size_t nitems, cap_items;
	uint32_t counter[GEN_THREADS + 1];
	bool named_addr[GEN_KINDS * 4];
	bool named_frame[GEN_FRAMES][2];
	uint64_t next_id;
	uint64_t nev, nlost, nbirth, live_have;
	double susp_mean;
};

static void gen_flush(struct gen *g)
{
	size_t off = 0;

	while (off < g->enc.len) {
		ssize_t w = write(g->fd, g->buf + off, g->enc.len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			gen_die("writing the recording: %s", strerror(errno));
		off += (size_t)w;
	}
	g->bytes += g->enc.len;
	heph_enc_init(&g->enc, g->buf, GEN_BUF);
}

static void gen_room(struct gen *g)
{
	if (g->enc.len + 4096 > GEN_BUF * 3 / 4)
		gen_flush(g);
}

static void gen_meta_u64s(struct gen *g, const char *opt, const uint64_t *v,
			  size_t n)
{
	uint8_t be[24];

	for (size_t i = 0; i < n; i++)
		for (int b = 0; b < 8; b++)
			be[8 * i + (size_t)b] = (uint8_t)(v[i] >> (56 - 8 * b));
	gen_room(g);
	heph_enc_meta(&g->enc, opt, be, 8 * n);
}

static uint64_t gen_addr(unsigned kind, unsigned point)
{
	return 0x55d0c0401000ull + kind * 0x400ull + point * 0xc0ull + 0x1c;
}

/* The probe's default id is the address of the coroutine's struct
 * corotop_coro: ids look like heap pointers, and a freed struct's address
 * comes back for a later coroutine. */
static uint64_t gen_probe_id(uint32_t slot)
{
	return 0x7f3a52400000ull + slot * 0x1c0ull;
}

static uint64_t gen_frame(unsigned i)
{
	return 0x55d0c0481000ull + i * 0x140ull + 0x2b;
}

static void gen_symbol_text(uint64_t addr, char *buf, size_t n)
{
	unsigned kind = (unsigned)((addr - 0x55d0c0401000ull) / 0x400);

	snprintf(buf, n,
		 "worker_kind_%02u_loop+0x%llx (src/work/kind%02u.c:%u)", kind,
		 (unsigned long long)(addr & 0x3ff), kind,
		 100 + (unsigned)(addr & 0xff));
}

/* A corotop_symbol option for key, once. */
static void gen_name(struct gen *g, uint64_t key, const char *name)
{
	uint8_t val[8 + HEPH_NAME_LEN];
	size_t n = heph_names_value(key, name, val, sizeof(val));

	gen_room(g);
	heph_enc_meta(&g->enc, "corotop_symbol", val, n);
}

/* One interval of station s, ending at end (recorder.c's rec_interval). */
static void gen_interval(struct gen *g, uint32_t slot, uint64_t end)
{
	struct rstation *s = &g->st[slot];
	unsigned kind = (unsigned)((s->addr - 0x55d0c0401000ull) / 0x400);
	unsigned ai = (unsigned)((s->addr - 0x55d0c0401000ull) / 0xc0) % 4;
	bool sym = kind < GEN_KINDS / 2; /* half the code symbolizes */
	uint64_t frames[16];
	size_t nf = 0;
	char text[128];
	uint32_t ti = (uint32_t)(s->tid - GEN_TID0);

	if (sym) {
		gen_symbol_text(s->addr, text, sizeof(text));
		if (!g->named_addr[kind * 4 + ai]) {
			g->named_addr[kind * 4 + ai] = true;
			gen_name(g, s->addr, text);
		}
	}
	if (s->stack) {
		nf = 6 + (s->seq * 7 + kind) % 7;
		for (size_t k = 0; k < nf; k++) {
			unsigned fi = (unsigned)((kind * 13 + k * 31 +
						  (k ? 0 : s->seq % 5)) %
						 GEN_FRAMES);
			char ft[96];

			frames[k] = gen_frame(fi);
			if (g->named_frame[fi][!k])
				continue;
			g->named_frame[fi][!k] = true;
			snprintf(ft, sizeof(ft),
				 "frame_fn_%03u+0x%x (src/lib/f%03u.c:%u)", fi,
				 k ? 0x2a : 0x2b, fi, 40 + fi % 300);
			gen_name(g, framename_key(frames[k], !k), ft);
		}
	}
	gen_room(g);
	heph_enc_event_begin(&g->enc, (uint32_t)s->tid, g->counter[ti]++,
			     gen_probe_id(slot), s->ts,
			     end < s->ts ? s->ts : end,
			     s->running ? "running" : "suspended");
	heph_enc_u64(&g->enc, "addr", s->addr);
	heph_enc_u64(&g->enc, "seq", s->seq);
	if (sym)
		heph_enc_str(&g->enc, "symbol", text);
	if (nf)
		heph_enc_u64_array(&g->enc, "stack", frames, nf);
	if (!heph_enc_event_end(&g->enc))
		gen_die("encoder overflow");
	g->nev++;
}

static void gen_lost(struct gen *g, uint32_t stream, uint64_t sub, uint64_t ts,
		     uint64_t count)
{
	uint32_t ti = stream ? stream - GEN_TID0 : GEN_THREADS;

	gen_room(g);
	heph_enc_event_begin(&g->enc, stream, g->counter[ti]++, sub, ts, ts,
			     "lost");
	heph_enc_u64(&g->enc, "count", count);
	heph_enc_event_end(&g->enc);
	g->nev++;
	g->nlost++;
}

/* recorder.c's rec_apply, for one item. */
static void gen_apply(struct gen *g, const struct item *it)
{
	struct rstation *s = &g->st[it->slot];

	switch (it->kind) {
	case IT_OPEN: {
		uint64_t v[3] = {gen_probe_id(it->slot), it->ts, it->value};

		if (s->live && s->have) {
			gen_interval(g, it->slot, it->ts);
			g->live_have--;
		}
		memset(s, 0, sizeof(*s));
		s->live = true;
		gen_meta_u64s(g, "corotop_birth", v, 3);
		g->nbirth++;
		break;
	}
	case IT_EVENT:
		if (s->have)
			gen_interval(g, it->slot, it->ts);
		else
			g->live_have++;
		s->live = s->have = true;
		s->running = it->running;
		s->stack = it->stack;
		s->ts = it->ts;
		s->tid = it->tid;
		s->addr = it->addr;
		s->seq = it->seq;
		break;
	case IT_CLOSE:
		if (s->have) {
			gen_interval(g, it->slot, it->ts);
			g->live_have--;
		}
		memset(s, 0, sizeof(*s));
		break;
	case IT_LOST:
		gen_lost(g, (uint32_t)s->tid, gen_probe_id(it->slot), it->ts,
			 it->value);
		break;
	}
}

static int item_cmp(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static void gen_push(struct gen *g, const struct item *it)
{
	if (!grow_array((void **)&g->items, &g->cap_items, g->nitems + 1,
			sizeof(*g->items)))
		gen_die("out of memory");
	g->items[g->nitems] = *it;
	g->items[g->nitems].order = (uint32_t)g->nitems;
	g->nitems++;
}

/* ---- the simulation's clock: a min-heap of slots by next ---- */

static bool heap_less(const struct gen *g, uint32_t a, uint32_t b)
{
	return g->slot[g->heap[a]].next < g->slot[g->heap[b]].next;
}

static void heap_swap(struct gen *g, uint32_t a, uint32_t b)
{
	uint32_t t = g->heap[a];

	g->heap[a] = g->heap[b];
	g->heap[b] = t;
}

/* The top's next moved later: sift it down. */
static void heap_down(struct gen *g)
{
	uint32_t i = 0;

	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < g->nheap && heap_less(g, l, m))
			m = l;
		if (r < g->nheap && heap_less(g, r, m))
			m = r;
		if (m == i)
			return;
		heap_swap(g, i, m);
		i = m;
	}
}

/* The top slot's next event: a birth, a transition or a death. */
static void gen_step(struct gen *g, uint32_t k)
{
	struct slot *c = &g->slot[k];
	uint64_t now = c->next;
	struct item it = {.slot = k, .ts = now};

	if (!c->live) { /* born */
		c->live = true;
		c->id = ++g->next_id;
		c->kind = (uint16_t)(rng() % GEN_KINDS);
		c->home = (uint32_t)(rng() % GEN_THREADS);
		c->left = 50 + (uint32_t)(rng() % 401);
		c->seq = 0;
		c->running = false;
		it.kind = IT_OPEN;
		it.value = c->id;
		gen_push(g, &it);
		c->next = now + rng_exp(100000.0);
		return;
	}
	if (!c->left) { /* died */
		c->live = false;
		it.kind = IT_CLOSE;
		gen_push(g, &it);
		c->next = now + rng_exp(1000000.0);
		return;
	}
	c->left--;
	c->running = !c->running;
	it.kind = IT_EVENT;
	it.running = c->running;
	it.seq = ++c->seq;
	it.addr = gen_addr(c->kind, (unsigned)(c->seq % 4));
	/* Mostly its home thread; sometimes stolen by another. */
	it.tid = GEN_TID0 +
		 (rng() % 20 ? c->home : (uint32_t)(rng() % GEN_THREADS));
	it.stack = !c->running && rng() % 100 < 3;
	gen_push(g, &it);
	if (rng() % 10000 == 0) { /* its station lapped once */
		struct item l = {.slot = k,
				 .ts = now + 1,
				 .kind = IT_LOST,
				 .value = 1 + rng() % 16};

		gen_push(g, &l);
	}
	c->next = now +
		  (c->running ? rng_exp(GEN_RUN_NS) : rng_exp(g->susp_mean));
}

void replay_gen_write(const char *path, uint64_t events)
{
	struct gen g = {0};
	uint64_t pass_end = GEN_T0 + GEN_PASS_NS, end_ts, v[2];
	unsigned passes = 0;
	static const char cmd[] = "./server --workers 8 --port 8080";

	g.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (g.fd < 0)
		gen_die("%s: %s", path, strerror(errno));
	g.buf = malloc(GEN_BUF);
	g.slot = calloc(GEN_IDS, sizeof(*g.slot));
	g.st = calloc(GEN_IDS, sizeof(*g.st));
	g.heap = calloc(GEN_IDS, sizeof(*g.heap));
	if (!g.buf || !g.slot || !g.st || !g.heap)
		gen_die("out of memory");
	/* Each id alternates GEN_RUN_NS and susp_mean: 2 intervals per
	 * (run + suspension); GEN_IDS ids fill GEN_SPAN_NS with `events`. */
	g.susp_mean = 2.0 * GEN_IDS * (double)GEN_SPAN_NS / (double)events -
		      GEN_RUN_NS;
	if (g.susp_mean < GEN_RUN_NS)
		g.susp_mean = GEN_RUN_NS;
	heph_enc_init(&g.enc, g.buf, GEN_BUF);
	heph_enc_epoch(&g.enc, 1767225600000000000ull - GEN_T0);
	heph_enc_meta(&g.enc, "corotop", "1", 1);
	heph_enc_meta(&g.enc, "corotop_command", cmd, strlen(cmd));
	v[0] = 4242;
	gen_meta_u64s(&g, "corotop_pid", v, 1);
	for (uint32_t k = 0; k < GEN_IDS; k++) {
		g.slot[k].next = GEN_T0 + rng() % 200000000u; /* first 0.2 s */
		g.heap[k] = k;
	}
	g.nheap = GEN_IDS;
	/* Heapify. */
	for (uint32_t i = GEN_IDS; i-- > 0;) {
		uint32_t j = i;

		for (;;) {
			uint32_t l = 2 * j + 1, r = l + 1, m = j;

			if (l < g.nheap && heap_less(&g, l, m))
				m = l;
			if (r < g.nheap && heap_less(&g, r, m))
				m = r;
			if (m == j)
				break;
			heap_swap(&g, j, m);
			j = m;
		}
	}
	while (g.nev + g.live_have < events) {
		while (g.slot[g.heap[0]].next < pass_end) {
			gen_step(&g, g.heap[0]);
			heap_down(&g);
		}
		/* One harvest pass: stations in order, each in time order. */
		qsort(g.items, g.nitems, sizeof(*g.items), item_cmp);
		for (size_t i = 0; i < g.nitems; i++)
			gen_apply(&g, &g.items[i]);
		g.nitems = 0;
		/* corotop's own ring overflowed, now and then */
		if (++passes % 7919 == 0)
			gen_lost(&g, 0, 0, pass_end, 100 + rng() % 900);
		pass_end += GEN_PASS_NS;
	}
	end_ts = pass_end - GEN_PASS_NS;
	for (uint32_t k = 0; k < GEN_IDS; k++)
		if (g.st[k].live && g.st[k].have)
			gen_interval(&g, k, end_ts);
	v[0] = 0; /* exit status */
	v[1] = 0; /* signal */
	gen_meta_u64s(&g, "corotop_exit", v, 2);
	v[0] = end_ts;
	gen_meta_u64s(&g, "corotop_end", v, 1);
	gen_flush(&g);
	printf("replay_open gen events=%llu lost_events=%llu coroutines=%llu "
	       "probe_ids=%u threads=%u span_s=%.1f bytes=%llu "
	       "bytes_per_event=%.1f susp_mean_ms=%.1f\n",
	       (unsigned long long)g.nev, (unsigned long long)g.nlost,
	       (unsigned long long)g.nbirth, GEN_IDS, GEN_THREADS,
	       (double)(end_ts - GEN_T0) / 1e9, (unsigned long long)g.bytes,
	       (double)g.bytes / (double)g.nev, g.susp_mean / 1e6);
	if (fdatasync(g.fd) < 0 || close(g.fd) < 0)
		gen_die("%s: %s", path, strerror(errno));
	free(g.buf);
	free(g.slot);
	free(g.st);
	free(g.heap);
	free(g.items);
}
