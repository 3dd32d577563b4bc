/*
 * rechandover: the harvest side of the recorder (recorder.h, "Hand-over"
 * in recorder.c): each event, open, close, loss and what the engine
 * learned copied into one fixed-size item of the ring, with the engine
 * lock held (one producer at a time), and the writer woken when enough
 * wait.  No call here blocks or makes a syscall in the common case.
 */
#define _GNU_SOURCE
#include "engine/record/recorder_internal.h"

#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- harvest side ---- */

static void rec_push(struct recorder *r, const struct rec_item *it)
{
	uint64_t h = r->phead;

	/* relaxed: only a shortcut, pairs with nothing: once the writer
	 * has failed it lets every item go, so one handed over before we
	 * see the flag is merely wasted.  After that: no more books. */
	if (atomic_load_explicit(&r->failed, memory_order_relaxed))
		return;
	if (h - r->tail_seen >= REC_RING) {
		/* acquire: pairs with the writer's release of tail: the slot
		 * is free once the writer has moved past it. */
		r->tail_seen =
			atomic_load_explicit(&r->tail, memory_order_acquire);
		if (h - r->tail_seen >= REC_RING) {
			/* relaxed: a count the writer reads after the items
			 * before it (drain orders by head). */
			atomic_store_explicit(&r->dropped, ++r->pdropped,
					      memory_order_relaxed);
			return;
		}
	}
	r->ring[h % REC_RING] = *it;
	r->phead = h + 1;
	/* release: pairs with the writer's acquire of head in rec_drain: the
	 * item is written before head says so. */
	atomic_store_explicit(&r->head, h + 1, memory_order_release);
}

void recorder_publish(struct recorder *r)
{
	uint32_t one = 1;
	uint64_t h;

	if (!r || r->phead - r->woken_at < REC_WAKE_BATCH)
		return;
	h = r->phead;
	r->woken_at = h;
	/* seq_cst fence between our head store (rec_push) and the load of
	 * sleeping: pairs with the writer's seq_cst store of sleeping and
	 * load of head in rec_sleep (Dekker): either we see it asleep, or
	 * it sees these items and does not sleep.  The load and the CAS
	 * are relaxed: the fence orders them; the CAS only decides who
	 * wakes it (one FUTEX_WAKE, not one per pass). */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&r->sleeping, memory_order_relaxed) &&
	    atomic_compare_exchange_strong_explicit(&r->sleeping, &one, 0,
						    memory_order_relaxed,
						    memory_order_relaxed))
		syscall(SYS_futex, &r->sleeping, FUTEX_WAKE_PRIVATE, 1, NULL,
			NULL, 0);
}

void recorder_open(struct recorder *r, uint32_t station, uint64_t probe_id,
		   uint64_t ts, uint64_t id, const char *name, uint32_t pid)
{
	struct rec_item it = {.kind = REC_OPEN,
			      .station = station,
			      .ts = ts,
			      .tid = pid, /* REC_OPEN: the pid */
			      .seq = id,
			      .value = probe_id};

	rec_push(r, &it);
	if (!name || !*name)
		return;
	/* A second item: the name is as long as an item's payload. */
	it = (struct rec_item){.kind = REC_NAME, .station = station};
	memcpy(it.name, name, strnlen(name, sizeof(it.name) - 1));
	rec_push(r, &it);
}

void recorder_event(struct recorder *r, const struct harvest_event *ev)
{
	struct rec_item it = {.kind = REC_EVENT,
			      .is_active = ev->is_active,
			      .flags = ev->flags,
			      .station = ev->station,
			      .ts = ev->ts,
			      .tid = ev->tid,
			      .addr = ev->addr,
			      .seq = ev->seq,
			      .trace = ev->trace};

	rec_push(r, &it);
}

void recorder_lost(struct recorder *r, uint32_t station, uint64_t count,
		   uint64_t ts)
{
	struct rec_item it = {
		.kind = REC_LOST, .station = station, .ts = ts, .value = count};

	rec_push(r, &it);
}

void recorder_close(struct recorder *r, uint32_t station, uint64_t ts)
{
	struct rec_item it = {.kind = REC_CLOSE, .station = station, .ts = ts};

	rec_push(r, &it);
}

void recorder_named(struct recorder *r, uint32_t station, uint64_t ts,
		    uint64_t pc, uint64_t made_for, const char *text)
{
	struct rec_item it = {.kind = REC_NAMED,
			      .station = station,
			      .ts = ts,
			      .addr = pc,
			      .value = pc ? made_for : 0};

	rec_push(r, &it);
	if (pc || !text || !*text)
		return;
	it = (struct rec_item){.kind = REC_NAMED_TEXT, .station = station};
	memcpy(it.name, text, strnlen(text, sizeof(it.name) - 1));
	rec_push(r, &it);
}

void recorder_kind(struct recorder *r, uint32_t station, uint64_t ts,
		   unsigned kind)
{
	struct rec_item it = {
		.kind = REC_KIND, .station = station, .ts = ts, .value = kind};

	rec_push(r, &it);
}

void recorder_where(struct recorder *r, uint32_t station, uint64_t park_ts,
		    uint64_t now, uint64_t where, uint64_t trace, bool learned)
{
	struct rec_item it = {.kind = REC_WHERE,
			      .flags = learned,
			      .station = station,
			      .ts = park_ts,
			      .addr = where,
			      .trace = trace,
			      .value = now};

	rec_push(r, &it);
}

void recorder_target(struct recorder *r, int64_t pid)
{
	struct rec_item it = {.kind = REC_PID, .value = (uint64_t)pid};

	rec_push(r, &it);
}

void recorder_exit(struct recorder *r, int status, int sig)
{
	struct rec_item it = {.kind = REC_EXIT,
			      .value = (uint64_t)(int64_t)status,
			      .tid = (uint64_t)(int64_t)sig};

	rec_push(r, &it);
}
