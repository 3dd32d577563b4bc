/*
 * recorder_internal: what the recorder's files share -- the items the
 * harvest side hands over (rechandover.c), the writer's state per station
 * and stream, the recorder itself (recorder.c), and the option packets
 * the writer encodes (recoptions.c).  Not for use outside the recorder.
 */
#ifndef COROTOP_RECORDER_INTERNAL_H
#define COROTOP_RECORDER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/heph/heph.h"
#include "engine/record/recfile.h"
#include "engine/record/recnames.h"
#include "engine/record/recorder.h"
#include "engine/record/recstacks.h"

#define REC_RING (1u << 18) /* items; 14 MiB of 56-byte items */
#define REC_BUF (256u << 10)
#define REC_FLUSH (REC_BUF * 3 / 4)
#define REC_FRAMES 64
#define REC_STREAMS 4096     /* per-stream counters at first (they grow) */
#define REC_WAKE_BATCH 8192u /* items waiting before a sleeper is woken */

enum rec_kind {
	REC_EVENT = 1,
	REC_OPEN,
	REC_CLOSE,
	REC_LOST,
	REC_PID,   /* the target's pid (value): a corotop_pid option */
	REC_EXIT,  /* its exit (value: status, tid: signal): corotop_exit */
	REC_NAME,  /* the name of the coroutine the station's REC_OPEN
		      just opened (name): corotop_name */
	REC_NAMED, /* a name found later (ts, addr: its entry pc, or 0;
		      value: the function that entry was made for, or 0):
		      corotop_named (and corotop_made_for), with
		      REC_NAMED_TEXT after it when the name is a text */
	REC_NAMED_TEXT, /* ... that text (name) */
	REC_KIND,	/* what it is (value: enum model_kind) from ts:
			   corotop_kind */
	REC_WHERE,	/* its park at ts was walked (addr: the program
			   frame, trace: the walked stack's id) or a frame
			   learned at an earlier park (flags 1, addr), as
			   of `value` */
};

struct rec_item {
	uint8_t kind;
	uint8_t is_active;
	uint8_t flags; /* REC_EVENT: CTP_EPF_* of the transition */
	uint32_t station;
	union {
		struct {
			uint64_t ts;
			uint64_t tid;
			uint64_t addr;
			uint64_t seq; /* corotop's id (open) */
			uint64_t trace;
			uint64_t value; /* probe id (open), count (lost) */
		};
		char name[48]; /* REC_NAME, NUL-terminated */
	};
};

_Static_assert(sizeof(struct rec_item) == 56, "56-byte items");

/* What the writer remembers per station: the transition that started the
 * coroutine's current interval. */
struct rec_station {
	bool live; /* a coroutine occupies it */
	bool have; /* ...and one transition of it was seen */
	uint8_t is_active;
	uint8_t flags; /* CTP_EPF_* of that transition */
	uint64_t probe_id;
	uint64_t id; /* corotop's id for it (its corotop_birth's) */
	uint64_t ts, tid, addr, seq, trace;
	/* Where that interval (a park) is, in the program's code: a walk's
	 * frame, or one learned at an earlier park (where_learned); 0:
	 * none.  named_ts: when the last REC_NAMED said so. */
	uint64_t where, where_at, named_ts;
	uint64_t before, before_at; /* a learned where a walk replaced */
	uint64_t trace_at;     /* when a walk gave trace (0: the probe did) */
	uint64_t before_trace; /* a learned stack a walk's replaced */
	bool where_learned;
};

struct rec_stream {
	uint32_t id;
	uint32_t counter;
	bool used;
};

struct recorder {
	struct rec_item *ring;
	/* Producer's and consumer's words on their own lines. */
	_Alignas(64) _Atomic uint64_t head;
	_Atomic uint64_t dropped;
	uint64_t phead;	    /* producer only: head as it will be published */
	uint64_t pdropped;  /* producer only: dropped */
	uint64_t tail_seen; /* producer only: tail as last read */
	uint64_t woken_at;  /* producer only: head at the last wake check */
	_Alignas(64) _Atomic uint64_t tail;
	_Atomic uint32_t sleeping; /* the writer waits on it (futex) */
	_Atomic bool stop;
	uint64_t stop_ts;
	pthread_t thread;
	bool running;
	struct recfile *file;
	struct recorder_hooks hooks;
	/* Writer thread only. */
	struct rec_station *st;
	uint32_t nst;
	struct rec_stream *streams; /* open addressing, at most half full */
	uint32_t cap_streams, nstreams;
	struct recnames names;	 /* asked once per address (recnames.c) */
	struct recstacks stacks; /* waited for (recstacks.c) */
	uint64_t stacks_retried;
	uint8_t *buf;
	struct heph_enc enc;
	uint64_t dropped_done;
	/* Packets in buf, counted in the statistics once written; held: those
	 * handed to a compressed file whose frame is not written yet. */
	uint64_t pend_intervals, pend_lost;
	uint64_t held_intervals, held_lost;
	/* Statistics (relaxed; read by recorder_stats). */
	_Atomic uint64_t intervals, lost, bytes;
	_Atomic bool failed;
	char error[160];
};

/* recorder.c: make room in the buffer for one more packet of up to `need`
 * bytes (writing out what is there). */
void rec_room(struct recorder *r, size_t need);

/* recoptions.c: corotop's option packets, encoded into r's buffer. */
void rec_be64(uint8_t *be, uint64_t v);
void rec_meta_u64(struct recorder *r, const char *option, uint64_t v);
void rec_meta_pair(struct recorder *r, const char *option, uint64_t a,
		   uint64_t b);
void rec_meta_triple(struct recorder *r, const char *option, uint64_t a,
		     uint64_t b, uint64_t c, const char *text);
void rec_birth(struct recorder *r, uint64_t probe_id, uint64_t ts, uint64_t id);
void rec_coro_name(struct recorder *r, uint64_t id, const char *name);
void rec_coro_pid(struct recorder *r, uint64_t id, uint64_t pid);
void rec_death(struct recorder *r, uint64_t probe_id, uint64_t ts);

#endif
