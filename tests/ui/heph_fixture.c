/*
 * heph_fixture: a fixed corotop recording for the UI's replay flow
 * (harness.py, flow 'replay').  `heph-fixture PATH` writes it; the same
 * bytes every time, so the replayed screens can be golden.
 *
 * The recording is laid out as corotop's recorder
 * (src/engine/record/recorder.c) writes one: the epoch, options corotop = "1",
 * corotop_command, corotop_birth (probe id, time, id) per coroutine and
 * corotop_pid first; then each state interval as an event packet
 * ("running"/"suspended" with addr, seq and symbol; a parked stack as `stack`)
 * in the order the recorder closes them (by end time), each address named by a
 * corotop_symbol option before its first use (stack frames other than the
 * innermost by their call instruction, address - 1); a "lost" event with
 * count 3; at the end corotop_exit (0, 0) and corotop_end.
 *
 * Times are relative to T0 (100 s of CLOCK_MONOTONIC, say), and the epoch
 * puts T0 at 2024-01-01 12:00:00 UTC.  Ten seconds, two threads (tids
 * 4243 and 4244 of pid 4242), eight coroutines (probe ids 0x1001..0x1008,
 * corotop ids 1..8), times in seconds:
 *
 *   id probe  tid   running / suspended intervals
 *   1  1001  4243  R 0-0.5  S -2  R -2.5  S -7 (parked, stack)  R -7.5  S -10
 *   2  1002  4243  (born 0) R 0.5-1.5  S -3.5  R -4.5  S -6  R -6.5  S -10
 *   3  1003  4244  R 0-1  S -4.5  R -5.5  S -10
 *   4  1004  4244  (born 0) R 1-2  S -3.5  R -4: dies at 4 s
 *   5  1005  4244  S 0-2  R -2.5  S -5.5  R -6  S -8  R -8.5  S -10
 *   6  1006  4243  S 0-10
 *   7  1007  4244  S 0-9  R -10
 *   8  1008  4244  born at 6 s: R 6-7  S -10
 *
 * Coroutine 1 loses 3 events at 5 s.  So at 4 s: 7 coroutines, R 1 (2),
 * S 5, D 1 (4); at 10 s: 7, R 1 (7), S 6 (4 expired after 3 s of linger).
 * flow_replay.py holds the same table (FIXTURE) to check the screens
 * against: a change here goes there too.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/heph/heph.h"

#define SEC 1000000000ull
#define T0 (100 * SEC)
/* 2024-01-01 12:00:00 UTC at T0. */
#define EPOCH (1704110400ull * SEC - T0)
#define PID 4242
#define TID_A 4243
#define TID_B 4244
#define END_MS 10000

/* Addresses and their names (what the target's symbolizer would say). */
#define A_ACCEPT 0x40101aull
#define A_ACCEPT_RET 0x40102bull /* return address: named at 0x40102a */
#define A_DISPATCH_RET 0x401261ull
#define A_CHAN_RECV 0x401340ull
#define A_WORKER 0x40155cull
#define A_READ 0x401633ull
#define A_TIMER 0x401721ull
#define A_LOG 0x401818ull
#define A_WRITE 0x401912ull

static const struct {
	uint64_t key;
	const char *name;
} names[] = {
	{A_ACCEPT, "accept_loop+0x1a (server.c:40)"},
	{A_ACCEPT_RET - 1, "accept_loop+0x2a (server.c:44)"},
	{A_DISPATCH_RET - 1, "dispatch+0x60 (server.c:88)"},
	{A_CHAN_RECV, "chan_recv+0x40 (chan.c:55)"},
	{A_WORKER, "worker_main+0x5c (worker.c:22)"},
	{A_READ, "read_request+0x33 (server.c:71)"},
	{A_TIMER, "timer_sleep+0x21 (timer.c:30)"},
	{A_LOG, "log_flush+0x18 (log.c:64)"},
	{A_WRITE, "write_response+0x12 (server.c:98)"},
};

#define NNAMES (sizeof(names) / sizeof(names[0]))

/* The stack coroutine 1 is parked on from 2.5 s to 7 s, innermost first. */
static const uint64_t parked_stack[] = {A_CHAN_RECV, A_DISPATCH_RET,
					A_ACCEPT_RET};

struct coro {
	uint64_t probe;
	uint32_t tid;
	unsigned born_ms;
};

/* clang-format off */
static const struct coro coros[] = { /* corotop id: index + 1 */
	{0x1001, TID_A, 0},	/* accept loop: parked on a stack 2.5-7 s */
	{0x1002, TID_A, 0},	/* worker */
	{0x1003, TID_B, 0},	/* request handler */
	{0x1004, TID_B, 0},	/* worker that dies at 4 s */
	{0x1005, TID_B, 0},	/* timer */
	{0x1006, TID_A, 0},	/* log flusher, never runs */
	{0x1007, TID_B, 0},	/* writer, running at the end */
	{0x1008, TID_B, 6000},	/* worker born at 6 s */
};
/* clang-format on */

#define NCORO (sizeof(coros) / sizeof(coros[0]))

/* One interval of coroutine `id` (1-based), in ms from T0. */
struct interval {
	unsigned id;
	unsigned start, end;
	bool running;
	uint64_t addr;
	bool stack; /* carries parked_stack */
};

/* clang-format off */
static const struct interval intervals[] = {
	{1, 0, 500, true, A_ACCEPT, false},
	{1, 500, 2000, false, A_ACCEPT, false},
	{1, 2000, 2500, true, A_ACCEPT, false},
	{1, 2500, 7000, false, A_CHAN_RECV, true},
	{1, 7000, 7500, true, A_ACCEPT, false},
	{1, 7500, END_MS, false, A_ACCEPT, false},
	{2, 500, 1500, true, A_WORKER, false},
	{2, 1500, 3500, false, A_CHAN_RECV, false},
	{2, 3500, 4500, true, A_WORKER, false},
	{2, 4500, 6000, false, A_CHAN_RECV, false},
	{2, 6000, 6500, true, A_WORKER, false},
	{2, 6500, END_MS, false, A_CHAN_RECV, false},
	{3, 0, 1000, true, A_READ, false},
	{3, 1000, 4500, false, A_READ, false},
	{3, 4500, 5500, true, A_WRITE, false},
	{3, 5500, END_MS, false, A_WRITE, false},
	{4, 1000, 2000, true, A_WORKER, false},
	{4, 2000, 3500, false, A_CHAN_RECV, false},
	{4, 3500, 4000, true, A_WORKER, false},
	{5, 0, 2000, false, A_TIMER, false},
	{5, 2000, 2500, true, A_TIMER, false},
	{5, 2500, 5500, false, A_TIMER, false},
	{5, 5500, 6000, true, A_TIMER, false},
	{5, 6000, 8000, false, A_TIMER, false},
	{5, 8000, 8500, true, A_TIMER, false},
	{5, 8500, END_MS, false, A_TIMER, false},
	{6, 0, END_MS, false, A_LOG, false},
	{7, 0, 9000, false, A_WRITE, false},
	{7, 9000, END_MS, true, A_WRITE, false},
	{8, 6000, 7000, true, A_WORKER, false},
	{8, 7000, END_MS, false, A_CHAN_RECV, false},
};
/* clang-format on */

#define NIV (sizeof(intervals) / sizeof(intervals[0]))
#define LOST_ID 1
#define LOST_MS 5000
#define LOST_COUNT 3

static uint64_t at(unsigned ms)
{
	return T0 + (uint64_t)ms * 1000000u;
}

static void be64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

static void meta_u64s(struct heph_enc *e, const char *option, const uint64_t *v,
		      size_t n)
{
	uint8_t buf[24];

	for (size_t i = 0; i < n; i++)
		be64(buf + 8 * i, v[i]);
	heph_enc_meta(e, option, buf, 8 * n);
}

static const char *name_of(uint64_t key)
{
	for (size_t i = 0; i < NNAMES; i++)
		if (names[i].key == key)
			return names[i].name;
	return NULL;
}

/* A corotop_symbol option for key, the first time it is used. */
static void name_once(struct heph_enc *e, uint64_t key, bool *named)
{
	uint8_t val[8 + 256];
	const char *name;

	for (size_t i = 0; i < NNAMES; i++) {
		if (names[i].key != key || named[i])
			continue;
		named[i] = true;
		name = names[i].name;
		be64(val, key);
		memcpy(val + 8, name, strlen(name));
		heph_enc_meta(e, "corotop_symbol", val, 8 + strlen(name));
	}
}

/* Interval indexes in the order the recorder closes them: by end time,
 * then as listed. */
static int by_end(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	if (intervals[x].end != intervals[y].end)
		return intervals[x].end < intervals[y].end ? -1 : 1;
	return x < y ? -1 : x > y;
}

static void write_interval(struct heph_enc *e, unsigned k, uint32_t *counter,
			   unsigned *seq, bool *named)
{
	const struct interval *iv = &intervals[k];
	const struct coro *c = &coros[iv->id - 1];
	uint32_t *ctr = &counter[c->tid == TID_A ? 0 : 1];

	name_once(e, iv->addr, named);
	if (iv->stack)
		for (size_t f = 0; f < 3; f++)
			name_once(e, f ? parked_stack[f] - 1 : parked_stack[f],
				  named);
	heph_enc_event_begin(e, c->tid, (*ctr)++, c->probe, at(iv->start),
			     at(iv->end),
			     iv->running ? "running" : "suspended");
	heph_enc_u64(e, "addr", iv->addr);
	heph_enc_u64(e, "seq", ++seq[iv->id - 1]);
	heph_enc_str(e, "symbol", name_of(iv->addr));
	if (iv->stack)
		heph_enc_u64_array(e, "stack", parked_stack, 3);
	heph_enc_event_end(e);
}

static void write_lost(struct heph_enc *e, uint32_t *counter)
{
	const struct coro *c = &coros[LOST_ID - 1];

	heph_enc_event_begin(e, c->tid, counter[c->tid == TID_A ? 0 : 1]++,
			     c->probe, at(LOST_MS), at(LOST_MS), "lost");
	heph_enc_u64(e, "count", LOST_COUNT);
	heph_enc_event_end(e);
}

/* The whole recording into e. */
static void fixture(struct heph_enc *e)
{
	const char *command = "fixture-server --port 8080";
	unsigned order[NIV], seq[NCORO] = {0};
	uint32_t counter[2] = {0, 0};
	bool named[NNAMES] = {false}, lost = false;
	size_t born = 0;

	heph_enc_epoch(e, EPOCH);
	heph_enc_meta(e, "corotop", "1", 1);
	heph_enc_meta(e, "corotop_command", command, strlen(command));
	for (; born < NCORO && !coros[born].born_ms; born++)
		meta_u64s(e, "corotop_birth",
			  (uint64_t[]){coros[born].probe, at(0), born + 1}, 3);
	meta_u64s(e, "corotop_pid", (uint64_t[]){PID}, 1);
	for (unsigned k = 0; k < NIV; k++)
		order[k] = k;
	qsort(order, NIV, sizeof(order[0]), by_end);
	for (unsigned k = 0; k < NIV; k++) {
		const struct interval *iv = &intervals[order[k]];

		/* Births and the loss as the recorder meets them: before
		 * the intervals that end after them. */
		for (; born < NCORO && coros[born].born_ms < iv->end; born++)
			meta_u64s(e, "corotop_birth",
				  (uint64_t[]){coros[born].probe,
					       at(coros[born].born_ms),
					       born + 1},
				  3);
		if (!lost && LOST_MS < iv->end) {
			write_lost(e, counter);
			lost = true;
		}
		write_interval(e, order[k], counter, seq, named);
	}
	meta_u64s(e, "corotop_exit", (uint64_t[]){0, 0}, 2);
	meta_u64s(e, "corotop_end", (uint64_t[]){at(END_MS)}, 1);
}

int main(int argc, char **argv)
{
	static uint8_t buf[1 << 16];
	struct heph_enc e;
	bool ok;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: heph-fixture PATH\n");
		return 2;
	}
	heph_enc_init(&e, buf, sizeof(buf));
	fixture(&e);
	if (e.overflow) {
		fprintf(stderr,
			"heph-fixture: the recording does not fit in "
			"%zu bytes\n",
			sizeof(buf));
		return 1;
	}
	f = fopen(argv[1], "wb");
	ok = f && fwrite(buf, 1, e.len, f) == e.len;
	if (f && fclose(f))
		ok = false;
	if (!ok) {
		fprintf(stderr, "heph-fixture: writing %s: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	return 0;
}
