/*
 * recorder: --record FILE, a Heph trace written off the harvest thread.
 * This file is the writer thread; rechandover.c the harvest side's
 * hand-over, recoptions.c the option packets, recorder_internal.h what
 * they share.
 *
 * Hand-over.  The harvest side (engine callbacks, under the engine lock, so
 * one producer at a time) copies each event, open, close and loss into a
 * ring of fixed-size items: a 64-byte store and a release of head, no
 * read-modify-write, no syscall; it reads the writer's tail only when its
 * cached copy says the ring is full.  Once per harvest pass the engine
 * calls recorder_publish, where the same Dekker pair as the cTP sleep
 * contract decides on a wake: the producer's head store, a seq_cst fence,
 * then its load of `sleeping`; the writer sets `sleeping` (seq_cst), then
 * re-reads head before it waits on the futex.  A sleeping writer is woken
 * only once REC_WAKE_BATCH items wait (and otherwise wakes on its own
 * within 100 ms), so a steady trickle of events costs a futex wake per
 * batch, not per pass.  A full ring drops the item and counts it; the
 * writer records the count as a "lost" event on stream 0, substream 0
 * (corotop itself), so a gap is always visible.
 *
 * The trace.  The file starts with an `epoch` metadata packet: wall-clock
 * ns at CLOCK_MONOTONIC's zero, so that event times are the cTP timestamps
 * themselves.  Each coroutine state interval is one event packet:
 *   stream     the OS thread that made the transition starting it (its tid,
 *              which fits 32 bits on Linux);
 *   counter    per stream, wrapping at 2^32;
 *   substream  the coroutine's probe id;
 *   start, end the interval;
 *   description "running" or "suspended";
 *   attributes addr (u64) and seq (u64) of that transition; symbol
 *              (string) of addr's call site (addr - 1: addr is a return
 *              address) when it is not 0 and the symbolizer knows it; stack
 * (u64 array, innermost first) when the coroutine parked at a stack corotop
 * collected; long_wait (u64 1) on a suspension the program marked as
 * expected to be long (CTP_EPF_LONG_WAIT). Options after the epoch: `corotop`
 * ("1"), `corotop_command` (what was traced), `corotop_birth` (u64 probe id,
 * time, id) as each coroutine is born -- probe ids are reused, so that is where
 * a substream's intervals belong to the next coroutine -- and right after it
 * `corotop_name` (u64 id, then the name) when the coroutine has one, and
 * `corotop_coro_pid` (u64 id, u64 pid) when it lives in another process than
 * the target (a child: `sh -c`, fork, spawn); and, once
 * known, `corotop_pid` (u64); at the end `corotop_exit` (i64 exit status or -1,
 * i64 signal) when the target had exited, and last `corotop_end` (u64): when
 * recording stopped.  What the engine learns after a birth goes in as it
 * learns it, so that a replay shows what the live view showed then:
 * `corotop_named` (u64 id, time, entry pc, then a text when the pc is 0),
 * after one with a pc the `corotop_made_for` (u64 id, time, pc) of the
 * function its entry was made for when the probe sent one,
 * and `corotop_kind` (u64 id, time, kind) options; on a suspended interval
 * `where` (the program's frame of the park, a return address) from
 * `where_at` on, `where_learned` when it is the frame of an earlier park,
 * `where_before`/`where_before_at` for a learned frame a walk replaced,
 * and `stack_at` when its `stack` is a walk's.  Each address written (an addr,
 * a stack frame) is named once, before the first event that uses it, by a
 * `corotop_symbol` option (hephnames.h): replay and convert name frames without
 * the target. Loss on a station is an event "lost" with a `count` attribute, at
 * the time it was found, on the coroutine's last stream and its substream. An
 * interval still open when recording stops ends at the stop time.
 *
 * Names.  The writer asks the symbolizer once per address (recnames.c
 * keeps the answers, and asks an address still unknown once more at the
 * end).  Names are not refreshed when the target loads or unloads a
 * library during the recording.
 *
 * Writing.  Packets are encoded into a buffer and handed to the file
 * (recfile.c) when it is three quarters full, when the ring runs dry, and
 * at the end; only whole packets are ever written, and a failed or short
 * write truncates the file back to the last whole packet (or, compressed,
 * frame) and stops the recording with a message: the file never ends
 * halfway through a packet.  A FILE ending in .zst is written as zstd
 * frames of about 1 MiB of packets each, closed within a second.
 *
 * Books.  intervals, lost and bytes count what reached the file: a packet
 * is counted when the write of its buffer (compressed: of its frame)
 * succeeds, so once a write fails the books stop where the file stops.
 * The writer then only moves tail past what waits, and the harvest side
 * stops handing items over.
 */
#define _GNU_SOURCE
#include "engine/record/recorder.h"

#include "corotop/ctp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine/symbols/framenames.h"
#include "engine/heph/heph.h"
#include "engine/heph/hephnames.h"
#include "engine/record/recfile.h"
#include "engine/record/recnames.h"
#include "engine/record/recorder_internal.h"
#include "engine/record/recstacks.h"
#include "common/clock.h"

#define REC_NICE 19 /* the writer thread's niceness */
/* Stacks not collected yet when their interval was written: asked again
 * at most this often (recstacks.c). */
#define REC_STACK_RETRY_NS 100000000ull

#ifdef RECORDER_TEST_HOOKS
void (*recorder_test_before_drain)(struct recorder *r);
#endif

/* ---- writer: file ---- */

static void rec_fail(struct recorder *r, const char *what, int e)
{
	/* relaxed: failed is set by this (the writer) thread only. */
	if (atomic_load_explicit(&r->failed, memory_order_relaxed))
		return;
	snprintf(r->error, sizeof(r->error), "%s: %s", what, strerror(e));
	/* release: recorder_stats reads error after failed (acquire). */
	atomic_store_explicit(&r->failed, true, memory_order_release);
}

/* What reached the file into the statistics: the held packets once the
 * file has all it was given (before the last hand-over: all_but_last). */
static void rec_books(struct recorder *r, uint64_t given_before)
{
	uint64_t c = recfile_committed(r->file);

	if (c >= recfile_given(r->file)) {
		r->held_intervals += r->pend_intervals;
		r->held_lost += r->pend_lost;
		r->pend_intervals = r->pend_lost = 0;
	}
	if (c >= given_before) {
		/* relaxed: statistics (recorder_stats); no data hangs on
		 * them.  All are added before rec_fail's release of failed,
		 * on this thread. */
		atomic_fetch_add_explicit(&r->intervals, r->held_intervals,
					  memory_order_relaxed);
		atomic_fetch_add_explicit(&r->lost, r->held_lost,
					  memory_order_relaxed);
		r->held_intervals = r->held_lost = 0;
	}
	r->held_intervals += r->pend_intervals;
	r->held_lost += r->pend_lost;
	r->pend_intervals = r->pend_lost = 0;
	/* relaxed: as above. */
	atomic_store_explicit(&r->bytes, recfile_bytes(r->file),
			      memory_order_relaxed);
}

/* Hand the buffer (whole packets only) to the file, and close a
 * compressed file's frame that is old enough; on any failure the file is
 * cut back to what was whole and recording stops. */
static void rec_flush(struct recorder *r)
{
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC);
	uint64_t before = recfile_given(r->file);
	int rc;

	/* relaxed: the writer's own flag (rec_fail). */
	if (atomic_load_explicit(&r->failed, memory_order_relaxed)) {
		r->enc.len = 0;
		r->pend_intervals = r->pend_lost = 0; /* never written */
		return;
	}
	rc = recfile_write(r->file, r->buf, r->enc.len, now);
	r->enc.len = 0;
	if (!rc)
		rc = recfile_tick(r->file, now);
	if (rc) {
		rec_fail(r, "writing the --record file", -rc);
		r->pend_intervals = r->pend_lost = 0;
		r->held_intervals = r->held_lost = 0;
		return;
	}
	rec_books(r, before);
}

/* Room for one more packet of up to `need` bytes. */
void rec_room(struct recorder *r, size_t need)
{
	if (r->enc.len + need > REC_FLUSH)
		rec_flush(r);
}

/* ---- writer: packets ---- */

/* Stream's slot in a table of cap (a power of two): its own, or the free
 * one it would take; NULL when the table is full. */
static struct rec_stream *rec_stream_slot(struct rec_stream *t, uint32_t cap,
					  uint32_t stream)
{
	uint32_t h = (stream * 2654435761u) & (cap - 1);

	for (uint32_t i = 0; i < cap; i++) {
		struct rec_stream *s = &t[(h + i) & (cap - 1)];

		if (!s->used || s->id == stream)
			return s;
	}
	return NULL;
}

static void rec_streams_grow(struct recorder *r)
{
	uint32_t cap = r->cap_streams * 2;
	struct rec_stream *t;

	if (cap < r->cap_streams || !(t = calloc(cap, sizeof(*t))))
		return; /* the table fills instead; then streams share */
	for (uint32_t i = 0; i < r->cap_streams; i++)
		if (r->streams[i].used)
			*rec_stream_slot(t, cap, r->streams[i].id) =
				r->streams[i];
	free(r->streams);
	r->streams = t;
	r->cap_streams = cap;
}

/* The next counter of stream's events (each stream counts from 0,
 * wrapping at 2^32). */
static uint32_t rec_counter(struct recorder *r, uint32_t stream)
{
	struct rec_stream *s;

	if ((r->nstreams + 1) * 2 > r->cap_streams)
		rec_streams_grow(r);
	s = rec_stream_slot(r->streams, r->cap_streams, stream);
	if (!s) /* full, and memory ran out: share the first slot's */
		return r->streams[0].counter++;
	if (!s->used) {
		*s = (struct rec_stream){.id = stream, .used = true};
		r->nstreams++;
	}
	return s->counter++;
}

/* The names' writer: a corotop_symbol option, into the buffer. */
static void rec_emit_name(void *ctx, const uint8_t *val, size_t n)
{
	struct recorder *r = ctx;

	rec_room(r, HEPH_META_FIXED + 14 + n);
	heph_enc_meta(&r->enc, "corotop_symbol", val, n);
}

static const char *rec_name(struct recorder *r, uint64_t key, uint32_t *len)
{
	struct recnames_io io = {r->hooks.symbol, r->hooks.ctx, rec_emit_name,
				 r};

	return recnames_ask(&r->names, &io, key, len, false);
}

/* One interval [from.ts, end] of station s's coroutine. */
static void rec_interval(struct recorder *r, struct rec_station *s,
			 uint64_t end)
{
	uint64_t frames[REC_FRAMES];
	const char *sym = NULL;
	uint32_t sym_len = 0, unused;
	size_t nf = 0;
	uint32_t stream = (uint32_t)s->tid;
	bool wait;

	if (!s->is_active && s->trace && r->hooks.stack)
		nf = r->hooks.stack(r->hooks.ctx, s->trace, frames, REC_FRAMES);
	/* Not collected yet: its frames come later, by id. */
	wait = !s->is_active && s->trace && !nf &&
	       recstacks_wait(&r->stacks, s->trace);
	/* Names first: a reader meets them before the event using them. */
	for (size_t k = 0; k < nf; k++)
		rec_name(r, framename_key(frames[k], !k), &unused);
	if (s->where)
		rec_name(r, framename_key(s->where, false), &unused);
	if (s->before)
		rec_name(r, framename_key(s->before, false), &unused);
	/* Last: with the tables full, the name is in a buffer the next
	 * rec_name overwrites.  The transition's addr is a `where`, a
	 * return address: its name is its call site's, kept under addr - 1
	 * as a caller frame's is (framename_key). */
	sym = rec_name(r, framename_key(s->addr, false), &sym_len);
	rec_room(r,
		 HEPH_EVENT_FIXED + 16 + 11 * 20 + HEPH_NAME_LEN + 16 + nf * 8);
	heph_enc_event_begin(&r->enc, stream, rec_counter(r, stream),
			     s->probe_id, s->ts, end < s->ts ? s->ts : end,
			     s->is_active ? "running" : "suspended");
	heph_enc_u64(&r->enc, "addr", s->addr);
	heph_enc_u64(&r->enc, "seq", s->seq);
	if (sym)
		heph_enc_strn(&r->enc, "symbol", sym, sym_len);
	if (nf)
		heph_enc_u64_array(&r->enc, "stack", frames, nf);
	if (nf && s->trace_at)
		heph_enc_u64(&r->enc, "stack_at", s->trace_at);
	if (wait)
		heph_enc_u64(&r->enc, "stack_id", s->trace);
	/* The learned stack shown before this park's walk: by id, its
	 * frames in a corotop_stack (recstacks.c). */
	if (s->before && s->before_trace &&
	    (recstacks_wait(&r->stacks, s->before_trace) ||
	     recstacks_given(&r->stacks, s->before_trace)))
		heph_enc_u64(&r->enc, "stack_before_id", s->before_trace);
	/* The park's place in the program's code (the live WHERE). */
	if (!s->is_active && s->where) {
		heph_enc_u64(&r->enc, "where", s->where);
		heph_enc_u64(&r->enc, "where_at", s->where_at);
		if (s->where_learned)
			heph_enc_u64(&r->enc, "where_learned", 1);
		if (s->before) {
			heph_enc_u64(&r->enc, "where_before", s->before);
			heph_enc_u64(&r->enc, "where_before_at", s->before_at);
		}
	}
	/* A wait the program marked as expected to be long (replay spares
	 * it the lost-wakeup lint, as the live view does). */
	if (!s->is_active && (s->flags & CTP_EPF_LONG_WAIT))
		heph_enc_u64(&r->enc, "long_wait", 1);
	if (heph_enc_event_end(&r->enc))
		r->pend_intervals++; /* counted when written (rec_flush) */
}

static void rec_lost(struct recorder *r, uint32_t stream, uint64_t substream,
		     uint64_t ts, uint64_t count)
{
	rec_room(r, HEPH_EVENT_FIXED + 4 + 16);
	heph_enc_event_begin(&r->enc, stream, rec_counter(r, stream), substream,
			     ts, ts, "lost");
	heph_enc_u64(&r->enc, "count", count);
	if (heph_enc_event_end(&r->enc))
		r->pend_lost++; /* counted when written (rec_flush) */
}

/* One item: the interval it ends, and what it starts. */
static void rec_apply(struct recorder *r, const struct rec_item *it)
{
	struct rec_station *s;

	if (it->kind == REC_PID) {
		rec_meta_u64(r, "corotop_pid", it->value);
		return;
	}
	if (it->kind == REC_EXIT) {
		/* status (exit code, or -1) and signal, as i64 each */
		rec_meta_pair(r, "corotop_exit", it->value, it->tid);
		return;
	}
	if (it->station >= r->nst)
		return;
	s = &r->st[it->station];
	switch (it->kind) {
	case REC_OPEN:
		if (s->live && s->have)
			rec_interval(r, s, it->ts);
		memset(s, 0, sizeof(*s));
		s->live = true;
		s->probe_id = it->value;
		s->id = it->seq;
		rec_birth(r, it->value, it->ts, it->seq);
		if (it->tid && it->seq)
			rec_coro_pid(r, it->seq, it->tid);
		break;
	case REC_NAME:
		if (s->live && s->id)
			rec_coro_name(r, s->id, it->name);
		break;
	case REC_NAMED:
		/* corotop_named = id, time, entry pc (its name is the
		 * function's: a corotop_symbol names it first) */
		s->named_ts = it->ts;
		if (!s->live || !s->id || !it->addr)
			break;
		{
			uint32_t unused;

			rec_name(r, framename_key(it->addr, true), &unused);
		}
		rec_meta_triple(r, "corotop_named", s->id, it->ts, it->addr,
				NULL);
		/* ... and corotop_made_for = id, time, the function the
		 * entry was made for (the station's made_for; a symbol for
		 * it first), when the probe sent one. */
		if (it->value) {
			uint32_t unused;

			rec_name(r, framename_key(it->value, true), &unused);
			rec_meta_triple(r, "corotop_made_for", s->id, it->ts,
					it->value, NULL);
		}
		break;
	case REC_NAMED_TEXT: /* ... or a text, pc 0 */
		if (s->live && s->id)
			rec_meta_triple(r, "corotop_named", s->id, s->named_ts,
					0, it->name);
		break;
	case REC_KIND:
		if (s->live && s->id)
			rec_meta_triple(r, "corotop_kind", s->id, it->ts,
					it->value, NULL);
		break;
	case REC_WHERE:
		/* For the park it was found at, the interval still open; a
		 * walk's frame is not replaced by a learned one. */
		if (!s->have || s->is_active || s->ts != it->ts)
			break;
		if (it->addr && (!s->where || s->where_learned)) {
			/* A walk after a learned frame: the walk's from
			 * then on, the learned one before. */
			if (!it->flags && s->where_learned) {
				s->before = s->where;
				s->before_at = s->where_at;
				s->before_trace = s->trace_at ? s->trace : 0;
			}
			s->where = it->addr;
			s->where_at = it->value;
			s->where_learned = it->flags != 0;
		}
		/* A walk's replaces any (the model's does: model_park); a
		 * learned one not a stack the probe stored (trace_at 0). */
		if (it->trace && (!it->flags || !s->trace || s->trace_at)) {
			s->trace = it->trace;
			s->trace_at = it->value;
		}
		break;
	case REC_EVENT:
		if (s->have)
			rec_interval(r, s, it->ts);
		s->live = s->have = true;
		s->is_active = it->is_active;
		s->flags = it->flags;
		s->ts = it->ts;
		s->tid = it->tid;
		s->addr = it->addr;
		s->seq = it->seq;
		s->trace = it->trace;
		s->where = s->where_at = s->trace_at = 0;
		s->before = s->before_at = s->before_trace = 0;
		s->where_learned = false;
		break;
	case REC_CLOSE:
		if (s->have)
			rec_interval(r, s, it->ts);
		else if (s->live) /* it never ran: no interval says when */
			rec_death(r, s->probe_id, it->ts);
		memset(s, 0, sizeof(*s));
		break;
	case REC_LOST:
		rec_lost(r, (uint32_t)s->tid, s->probe_id, it->ts, it->value);
		break;
	}
}

/* The frames of a stack an interval named by id: a corotop_stack option =
 * u64 id, then the frames (u64 each, innermost first), named first. */
static void rec_emit_stack(void *ctx, uint64_t id, const uint64_t *frames,
			   size_t n)
{
	struct recorder *r = ctx;
	uint8_t val[8 * (1 + REC_FRAMES)];
	uint32_t unused;

	if (n > REC_FRAMES)
		n = REC_FRAMES;
	for (size_t k = 0; k < n; k++)
		rec_name(r, framename_key(frames[k], !k), &unused);
	rec_be64(val, id);
	for (size_t k = 0; k < n; k++)
		rec_be64(val + 8 * (k + 1), frames[k]);
	rec_room(r, HEPH_META_FIXED + 16 + 8 * (n + 1));
	heph_enc_meta(&r->enc, "corotop_stack", val, 8 * (n + 1));
}

static size_t rec_ask_stack(void *ctx, uint64_t id, uint64_t *frames,
			    size_t max)
{
	struct recorder *r = ctx;

	return r->hooks.stack(r->hooks.ctx, id, frames, max);
}

/* The stacks intervals wait for, asked again (now: not more often than
 * REC_STACK_RETRY_NS; at the end: always). */
static void rec_stacks_retry(struct recorder *r, bool now)
{
	struct recstacks_io io = {rec_ask_stack, rec_emit_stack, r};
	uint64_t t = clock_now_ns(CLOCK_MONOTONIC);

	if (!r->stacks.waiting || !r->hooks.stack ||
	    (!now && t - r->stacks_retried < REC_STACK_RETRY_NS))
		return;
	r->stacks_retried = t;
	recstacks_retry(&r->stacks, &io);
}

/* ---- writer thread ---- */

static void rec_sleep(struct recorder *r)
{
	/* relaxed: tail is this (the writer) thread's own. */
	uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	struct timespec bound = {0, 100000000}; /* 100 ms */

	/* seq_cst: pairs with the producer's head store, seq_cst fence and
	 * load of sleeping in recorder_publish (Dekker): either it sees us
	 * asleep and wakes us, or we see its items below.  Fewer than
	 * REC_WAKE_BATCH items wait for the bound. */
	atomic_store_explicit(&r->sleeping, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&r->head, memory_order_seq_cst) == t &&
	    !atomic_load_explicit(&r->stop, memory_order_acquire))
		/* Spurious wakeups, EINTR and EAGAIN all just loop. */
		syscall(SYS_futex, &r->sleeping, FUTEX_WAIT_PRIVATE, 1, &bound,
			NULL, 0);
	/* relaxed: awake again; only the producer's CAS reads it. */
	atomic_store_explicit(&r->sleeping, 0, memory_order_relaxed);
}

static bool rec_drain(struct recorder *r)
{
	uint64_t h, t, dropped;

#ifdef RECORDER_TEST_HOOKS
	if (recorder_test_before_drain)
		recorder_test_before_drain(r);
#endif
	/* acquire: pairs with the producer's release of head.  relaxed for
	 * tail (the writer's own) and dropped (a count: stored before the
	 * head the acquire saw, or counted at the next drain). */
	h = atomic_load_explicit(&r->head, memory_order_acquire);
	t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	dropped = atomic_load_explicit(&r->dropped, memory_order_relaxed);
	/* relaxed: the writer's own flag (rec_fail).  Stopped: what waits
	 * is let go unread, so that the books stay where the file ends. */
	if (atomic_load_explicit(&r->failed, memory_order_relaxed))
		t = h;
	else if (dropped != r->dropped_done) {
		rec_lost(r, 0, 0, clock_now_ns(CLOCK_MONOTONIC),
			 dropped - r->dropped_done);
		r->dropped_done = dropped;
	}
	for (; t != h; t++) {
		rec_apply(r, &r->ring[t % REC_RING]);
		/* release: pairs with the producer's acquire load of tail in
		 * rec_push: it may reuse the items up to t.  Every 4,096, so
		 * that a long batch frees room as it goes, not at its end. */
		if ((t & 4095) == 4095)
			atomic_store_explicit(&r->tail, t + 1,
					      memory_order_release);
	}
	/* release: as above, for the rest. */
	atomic_store_explicit(&r->tail, t, memory_order_release);
	/* acquire: as above (more came meanwhile: drain again). */
	return h != atomic_load_explicit(&r->head, memory_order_acquire);
}

static void *rec_main(void *arg)
{
	struct recorder *r = arg;

	/* The live view first: when the CPUs are all busy the harvest (and
	 * the target) keep theirs, and what the writer can not take in time
	 * is dropped at the ring and recorded as lost, never silently.  A
	 * failure to renice changes nothing else. */
	(void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), REC_NICE);

	/* acquire: pairs with recorder_stop's release (stop_ts with it). */
	while (!atomic_load_explicit(&r->stop, memory_order_acquire)) {
		if (rec_drain(r))
			continue;
		rec_stacks_retry(r, false);
		rec_flush(r); /* the ring ran dry: what we have goes out */
		rec_sleep(r);
	}
	rec_drain(r);
	for (uint32_t i = 0; i < r->nst; i++)
		if (r->st[i].live && r->st[i].have)
			rec_interval(r, &r->st[i], r->stop_ts);
	/* After the engine's last rotation (engine_ct_final). */
	rec_stacks_retry(r, true);
	{
		struct recnames_io io = {r->hooks.symbol, r->hooks.ctx,
					 rec_emit_name, r};

		recnames_last_try(&r->names, &io);
	}
	/* The end: coroutines whose last interval ends here were alive. */
	rec_meta_u64(r, "corotop_end", r->stop_ts);
	rec_flush(r);
	/* relaxed: the writer's own flag (rec_fail). */
	if (!atomic_load_explicit(&r->failed, memory_order_relaxed)) {
		int rc = recfile_finish(r->file);

		if (rc)
			rec_fail(r, "writing the --record file", -rc);
		else
			rec_books(r, recfile_given(r->file));
	}
	return NULL;
}

/* ---- lifecycle ---- */

struct recorder *recorder_create(const char *path, uint32_t stations,
				 const struct recorder_hooks *hooks,
				 const char *command, char *err, size_t errlen)
{
	struct recorder *r;
	void *mem;
	int rc;

	if (posix_memalign(&mem, 64, sizeof(*r))) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r = memset(mem, 0, sizeof(*r));
	r->nst = stations;
	if (hooks)
		r->hooks = *hooks;
	r->ring = calloc(REC_RING, sizeof(*r->ring));
	r->st = calloc(stations ? stations : 1, sizeof(*r->st));
	r->buf = malloc(REC_BUF);
	r->streams = calloc(REC_STREAMS, sizeof(*r->streams));
	r->cap_streams = REC_STREAMS;
	recstacks_init(&r->stacks);
	if (!recnames_init(&r->names) || !r->ring || !r->st || !r->buf ||
	    !r->streams) {
		snprintf(err, errlen, "out of memory for --record");
		goto fail;
	}
	r->file = recfile_create(path, recfile_wants_zstd(path), err, errlen);
	if (!r->file)
		goto fail;
	heph_enc_init(&r->enc, r->buf, REC_BUF);
	/* The wall clock at CLOCK_MONOTONIC's zero: event times are cTP
	 * timestamps as they are. */
	heph_enc_epoch(&r->enc, clock_now_ns(CLOCK_REALTIME) -
					clock_now_ns(CLOCK_MONOTONIC));
	/* Ours: replay knows a gap in a substream is a death and a birth. */
	heph_enc_meta(&r->enc, "corotop", "1", 1);
	if (command && *command)
		heph_enc_meta(&r->enc, "corotop_command", command,
			      strnlen(command, 4096));
	rec_flush(r);
	/* relaxed: no writer thread yet; this thread set it, if anyone. */
	if (atomic_load_explicit(&r->failed, memory_order_relaxed)) {
		snprintf(err, errlen, "--record %s: %s", path, r->error);
		goto fail;
	}
	rc = pthread_create(&r->thread, NULL, rec_main, r);
	if (rc) {
		snprintf(err, errlen, "cannot start a thread: %s",
			 strerror(rc));
		goto fail;
	}
	r->running = true;
	return r;
fail:
	recfile_destroy(r->file);
	free(r->ring);
	free(r->st);
	free(r->buf);
	recnames_finish(&r->names);
	recstacks_finish(&r->stacks);
	free(r->streams);
	free(r);
	return NULL;
}

void recorder_stop(struct recorder *r, uint64_t end_ts)
{
	if (!r || !r->running)
		return;
	r->stop_ts = end_ts;
	/* release: the writer sees stop_ts with stop. */
	atomic_store_explicit(&r->stop, true, memory_order_release);
	/* seq_cst: pairs with rec_sleep's store and loads (Dekker, as in
	 * recorder_publish): it sees stop, or the wake below finds it. */
	atomic_store_explicit(&r->sleeping, 0, memory_order_seq_cst);
	syscall(SYS_futex, &r->sleeping, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	pthread_join(r->thread, NULL);
	r->running = false;
}

void recorder_stats(struct recorder *r, struct recorder_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!r)
		return;
	/* acquire: pairs with rec_fail's release.  Read first: the writer
	 * adds to the statistics only before it fails, so a "failed" read
	 * here comes with the final books below. */
	out->failed = atomic_load_explicit(&r->failed, memory_order_acquire);
	/* relaxed: statistics; everything handed over was either put on the
	 * ring (head) or dropped. */
	out->dropped = atomic_load_explicit(&r->dropped, memory_order_relaxed);
	out->items = atomic_load_explicit(&r->head, memory_order_relaxed) +
		     out->dropped;
	out->intervals =
		atomic_load_explicit(&r->intervals, memory_order_relaxed);
	out->lost = atomic_load_explicit(&r->lost, memory_order_relaxed);
	out->bytes = atomic_load_explicit(&r->bytes, memory_order_relaxed);
	if (out->failed)
		snprintf(out->error, sizeof(out->error), "%s", r->error);
}

bool recorder_destroy(struct recorder *r, char *err, size_t errlen)
{
	bool ok;

	if (!r)
		return true;
	recorder_stop(r, clock_now_ns(CLOCK_MONOTONIC));
	ok = !atomic_load_explicit(&r->failed, memory_order_acquire);
	if (!ok)
		snprintf(err, errlen, "--record: %s", r->error);
	{
		int rc = recfile_destroy(r->file);

		if (rc && ok) {
			snprintf(err, errlen, "--record: closing the file: %s",
				 strerror(-rc));
			ok = false;
		}
	}
	free(r->ring);
	free(r->st);
	free(r->buf);
	recnames_finish(&r->names);
	recstacks_finish(&r->stacks);
	free(r->streams);
	free(r);
	return ok;
}
