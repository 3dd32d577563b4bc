/*
 * Snapshot ring wire contract: the byte layout of the shared region in which
 * the probe's CPU sampler leaves, for each sample, the interrupted thread's
 * registers and a copy of the top of its stack, for the engine to unwind
 * later with the target's CFI (docs/WIRE.md, "Snapshot ring").
 *
 *   [ snap_header 4 KiB ][ snap_record x records ]
 *
 * Why.  A signal handler can only walk frame pointers (a DWARF unwinder
 * takes the loader's lock), and code built without them (Debian's glibc,
 * libstdc++, Boost) loses its frames and everything above them.  perf's
 * --call-graph dwarf has the same problem and the same answer: copy the
 * stack, unwind elsewhere.  The copy is frozen, so the engine walks exactly
 * the stack the sample interrupted, however much later it gets to it.
 *
 * Finding the region.  The engine creates it next to the CallTrace region,
 * only when sampling is asked for, and announces it in the CallTrace header:
 * a ct_snap_desc at CT_SNAP_DESC_OFFSET (inside ct_header's reserved bytes,
 * which the CallTrace spec leaves alone), whose `name` is the file's name in
 * the same directory.  Zero there means "no snapshot ring"; a writer that
 * knows nothing of it stores its samples in CallTrace as before.
 *
 * Records.  Any thread's signal handler writes; the engine alone reads.
 * Writers take tickets from `head`; ticket t goes to record t % records,
 * whose seq says which ticket it holds:
 *
 *   0        never written
 *   2t + 1   ticket t being written
 *   2t + 2   ticket t complete
 *
 * Ordering contract ("W" a writer, "E" the engine):
 *
 *   (a) W: t = head fetch_add 1, relaxed (a ticket; carries no data)
 *   (b) W: seq CAS even s -> 2t + 1, acquire (pairs with the previous
 *          writer's d: its payload before ours), only when s < 2t + 1: a
 *          record still odd (a writer a lap behind, preempted) or already
 *          past t (a writer a lap ahead) is not touched -- the sample goes
 *          to CallTrace instead and `busy` counts it
 *   (c) W: release fence, then every payload word, relaxed atomic stores
 *   (d) W: seq = 2t + 2, release
 *   (e) E: s1 = seq, acquire (pairs with d: the payload of ticket t)
 *   (f) E: payload, relaxed atomic loads; acquire fence; s2 = seq, relaxed
 *          (the fence pairs with c: a copy that saw any word of a later
 *          ticket sees seq moved); s1 == s2 == 2t + 2 => a whole record
 *
 * The engine consumes tickets in order.  A record showing a later ticket
 * was lapped (counted, never shown); one showing an earlier ticket, or t
 * still odd, is waited for, up to a grace period, then skipped (a writer
 * that lost (b), or one preempted in its handler for that long).  Nothing
 * in a record is trusted: counts are bounded by the engine's geometry, and
 * a record is only ever a sample to unwind, never a pointer to follow.
 */
#ifndef COROTOP_SNAPRING_H
#define COROTOP_SNAPRING_H

#include <stddef.h>
#include <stdint.h>

#include "corotop/calltrace.h"
#include "corotop/ctp.h"

#define SNAP_MAGIC 0x31474e5250414e53ull /* "SNAPRNG1" little-endian */
#define SNAP_VERSION 1u
#define SNAP_HEADER_SIZE 4096u
#define SNAP_FP_MAX 64u	    /* frames of the handler's frame-pointer walk */
#define SNAP_COPY_MAX 8192u /* stack bytes copied, from the stack pointer */
#define SNAP_RECORDS_LIMIT 16384u

struct snap_record {
	CTP_ATOMIC(uint64_t) seq; /* see the top of this file */
	/* CallTrace tag frame (CT_TAG_CORO / CT_TAG_THREAD): what ran. */
	CTP_ATOMIC(uint64_t) tag;
	CTP_ATOMIC(uint64_t) pc; /* the interrupted instruction */
	CTP_ATOMIC(uint64_t) sp; /* stack pointer: stack[0] is its word */
	CTP_ATOMIC(uint64_t) fp; /* frame pointer register */
	/* nframes | ncopy << 32: frames[] used, bytes of stack[] copied. */
	CTP_ATOMIC(uint64_t) counts;
	CTP_ATOMIC(uint64_t) check; /* 0, or a test writer's checksum */
	CTP_ATOMIC(uint64_t) weight;
	/* The handler's frame-pointer walk: pc, then return addresses. */
	CTP_ATOMIC(uint64_t) frames[SNAP_FP_MAX];
	/* [sp, sp + ncopy) of the interrupted stack, as 8-byte words. */
	CTP_ATOMIC(uint64_t) stack[SNAP_COPY_MAX / 8];
};

struct snap_header {
	/* 0x000: geometry, written once by the engine before any writer
	 * maps the file; the engine keeps private copies. */
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;	 /* SNAP_HEADER_SIZE */
	uint32_t records;	 /* a power of two, 2..SNAP_RECORDS_LIMIT */
	uint32_t record_size;	 /* sizeof(struct snap_record) */
	uint32_t fp_max;	 /* SNAP_FP_MAX */
	uint32_t copy_max;	 /* SNAP_COPY_MAX */
	uint64_t records_offset; /* SNAP_HEADER_SIZE */
	uint64_t region_size;
	uint32_t engine_pid;
	uint32_t _pad0;
	uint8_t _pad1[0x80 - 0x38];
	/* 0x080: tickets taken (a). */
	CTP_ATOMIC(uint64_t) head;
	uint8_t _pad2[56];
	/* 0x0C0: writer counters, relaxed fetch_adds (statistics). */
	CTP_ATOMIC(uint64_t) stored; /* records completed (d) */
	CTP_ATOMIC(uint64_t) busy;   /* tickets given up at (b) */
	uint8_t _reserved[SNAP_HEADER_SIZE - 0xD0];
};

/* The announcement inside the CallTrace header. */
#define CT_SNAP_DESC_OFFSET 0x1C0u
#define CT_SNAP_MAGIC 0x31444e53u /* "SND1" little-endian */
#define CT_SNAP_VERSION 1u
#define CT_SNAP_NAME_MAX 40u

struct ct_snap_desc {
	uint32_t magic;	  /* CT_SNAP_MAGIC, or 0 */
	uint32_t version; /* CT_SNAP_VERSION */
	uint32_t size;	  /* sizeof(struct ct_snap_desc) */
	uint32_t flags;	  /* none yet */
	uint64_t region_size;
	/* File name in the CallTrace region's directory, NUL-terminated. */
	char name[CT_SNAP_NAME_MAX];
};

CTP_STATIC_ASSERT(sizeof(struct snap_record) == 8768, "record size");
CTP_STATIC_ASSERT(sizeof(struct snap_record) % 64 == 0, "record aligned");
CTP_STATIC_ASSERT(offsetof(struct snap_record, frames) == 64, "frames");
CTP_STATIC_ASSERT(offsetof(struct snap_record, stack) == 64 + 8 * SNAP_FP_MAX,
		  "stack");
CTP_STATIC_ASSERT(sizeof(struct snap_header) == SNAP_HEADER_SIZE, "header");
CTP_STATIC_ASSERT(offsetof(struct snap_header, records_offset) == 0x20,
		  "records_offset");
CTP_STATIC_ASSERT(offsetof(struct snap_header, engine_pid) == 0x30, "pid");
CTP_STATIC_ASSERT(offsetof(struct snap_header, head) == 0x80, "head");
CTP_STATIC_ASSERT(offsetof(struct snap_header, stored) == 0xC0, "stored");
CTP_STATIC_ASSERT(offsetof(struct snap_header, busy) == 0xC8, "busy");
CTP_STATIC_ASSERT(sizeof(struct ct_snap_desc) == 64, "desc is 64");
CTP_STATIC_ASSERT(CT_SNAP_DESC_OFFSET >=
			  offsetof(struct ct_header, table) +
				  sizeof(struct ct_table_meta) * CT_TABLES,
		  "desc after the table lines");
CTP_STATIC_ASSERT(CT_SNAP_DESC_OFFSET + 64 <= CT_HEADER_SIZE,
		  "desc fits in the CallTrace header");

/* The descriptor inside a CallTrace header. */
static inline struct ct_snap_desc *ct_snap_desc(struct ct_header *hdr)
{
	return (struct ct_snap_desc *)(void *)((char *)hdr +
					       CT_SNAP_DESC_OFFSET);
}

/* Bytes of a region of `records` records; 0 when out of range. */
static inline uint64_t snap_region_size(uint32_t records)
{
	if (records < 2 || records > SNAP_RECORDS_LIMIT ||
	    (records & (records - 1)))
		return 0;
	return SNAP_HEADER_SIZE +
	       (uint64_t)records * sizeof(struct snap_record);
}

/* The geometry of a new ring of `records` records and `size` bytes (the
 * engine's: snap_region_size(records)) into h, magic last; pid: the
 * engine's, for diagnostics. */
static inline void snap_header_init(struct snap_header *h, uint32_t records,
				    uint64_t size, uint32_t pid)
{
	h->version = SNAP_VERSION;
	h->header_size = SNAP_HEADER_SIZE;
	h->records = records;
	h->record_size = sizeof(struct snap_record);
	h->fp_max = SNAP_FP_MAX;
	h->copy_max = SNAP_COPY_MAX;
	h->records_offset = SNAP_HEADER_SIZE;
	h->region_size = size;
	h->engine_pid = pid;
	h->magic = SNAP_MAGIC;
}

#endif
