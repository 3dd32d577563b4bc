/*
 * CallTrace wire contract: the byte layout of the shared region in which a
 * traced program stores call stacks (frames, weight) and the corotop engine
 * collects them, three tables rotating through the roles ACTIVE, STANDBY and
 * SCRATCH (docs/WIRE.md, "CallTrace region").
 *
 *   [ ct_header 4 KiB ][ ct_slot x 8192 ][ table 0 ][ table 1 ][ table 2 ]
 *   table = [ ct_bucket x buckets ][ frame pool: u64 x pool_frames ]
 *
 * Nothing in the region is a pointer: tables are named by index (0..2), a
 * bucket's frames by an offset into its table's pool, and every size is in
 * the header and fixed when the engine creates the file.  Every size and
 * offset below is fixed by a static assertion.
 *
 * Finding the region.  The engine creates it next to the cTP region, in the
 * same private directory, and announces it in the cTP header: the 64 bytes
 * at CTP_CALLTRACE_DESC_OFFSET (after ctp_header_ext, inside the reserved
 * bytes) hold a ctp_calltrace_desc whose `name` is the file's name in the
 * directory of CTP_SHM_PATH.  Zero there means "no CallTrace region", which
 * is what every region written by another cTP engine has.
 *
 * Trace ids.  A trace stored in a table whose instance epoch is E, in bucket
 * b, has id (E << 32) | b.  Epochs start at 1 and are never reused by one
 * engine, so ids are unique across rotations; ids below 1 << 32 are reserved
 * (CT_DROPPED_TRACE_ID = 1: the put did not store anything).  A trace the
 * engine preserves across a rotation is re-inserted with its old id, which
 * it stores in ct_bucket.id (0 = derive the id from epoch and bucket).
 *
 * Ordering contract (who pairs with whom).  Letters name the barriers; "W"
 * is a writer (corotop_calltrace_put, any thread, also in a signal handler),
 * "E" the engine (rotor.c).
 *
 *   writer                                  engine
 *   ------                                  ------
 *   (a) slot.owner CAS 0 -> me, acquire     (r) reclaim a dead owner's slot:
 *       pairs with (h) and (r)                  refs = 0, owner = 0, release
 *   (b) ACTIVE acquire-load                 (k) table cleared, epoch and
 *   (c) slot.word = ACTIVE word, relaxed        preserved buckets written
 *   (d) slot.refs += 1, seq_cst RMW             (plain), then ACTIVE store,
 *   (e) ACTIVE re-load, seq_cst: changed?       seq_cst (release part: k->b/e)
 *       undo (d) and retry once             (m) per slot: refs load seq_cst,
 *   (f) table epoch, plain load                 then word relaxed; refs > 0
 *   (g) bucket.key acquire-load                 and word's table == retired
 *   (i) pool_used fetch_add relaxed; frames     => a writer is still inside
 *       copied (plain), then                (n) collect / clear the retired
 *   (j) bucket.key CAS 0 -> key, release        table only when no slot holds
 *   (l) weight, hits fetch_add relaxed          it (plain loads, memset)
 *   (h) slot.refs -= 1, release; then owner
 *       = 0, release (non-nested put only)
 *
 *   d/e with k/m (Dekker, all seq_cst): either the writer's re-load (e)
 *     sees the new ACTIVE and backs off without touching the table, or the
 *     engine's scan (m) sees refs > 0 and waits.
 *   c before d: the table index is stored before the count, so an engine
 *     that sees the count (m, acquire via the RMW's release sequence) sees
 *     the index that goes with it, never a previous put's.
 *   ACTIVE carries a generation (word = gen << 8 | index): a writer that
 *     loaded a word long ago fails (e) even when the same table is active
 *     again (ABA), and reads the epoch (f) only after (e).
 *   j pairs with g: a key seen non-zero implies its frames are in the pool.
 *   l, then h pairs with m: weights added before refs drops are visible to
 *     the engine that saw refs == 0.
 *   k pairs with b/e: a writer inside a table sees it cleared, its epoch and
 *     the preserved buckets.
 *   A put interrupted by a signal whose handler puts again (same thread,
 *   slot already owned) adds to refs (d) and re-checks (e) against the word
 *   the slot holds; if ACTIVE moved on it drops rather than switch tables.
 *
 * Counters (dropped, dropped_weight, drop_*) are relaxed fetch_adds that
 * run freely from 0; the engine reads them relaxed, as statistics.
 */
#ifndef COROTOP_CALLTRACE_H
#define COROTOP_CALLTRACE_H

#include <stddef.h>
#include <stdint.h>

#include "corotop/ctp.h"

#define CT_MAGIC 0x3130454341525443ull /* "CTRACE01" little-endian */
#define CT_VERSION 1u
#define CT_HEADER_SIZE 4096u
#define CT_TABLES 3u
#define CT_SLOTS 8192u		 /* writer protection slots (2^13) */
#define CT_SLOT_PROBES 64u	 /* slots a writer tries before dropping */
#define CT_MAX_FRAMES 128u	 /* longer stacks are truncated */
#define CT_BUCKET_PROBES 64u	 /* buckets a put visits before dropping */
#define CT_DROPPED_TRACE_ID 1ull /* returned when nothing was stored */
#define CT_PRIME_STEP_COUNT 16u

/* Bounds of the geometry the engine creates and the probe accepts. */
#define CT_MAX_TRACES_LIMIT (1u << 22) /* per table */
#define CT_MAX_BUCKETS_LIMIT (1u << 23)
#define CT_POOL_FRAMES_LIMIT (1u << 24) /* fits CT_KEY_OFF_BITS */

/* Bucket key: hash32 << 32 | nframes << 24 | pool offset (0 = empty). */
#define CT_KEY_OFF_BITS 24u
#define CT_KEY_N_BITS 8u

/* Role words: generation << 8 | table index. */
#define CT_ROLE_INDEX(w) ((unsigned)((w)&0xffu))
#define CT_ROLE_GEN(w) ((w) >> 8)
#define CT_ROLE(gen, index) (((uint64_t)(gen) << 8) | (uint64_t)(index))

/* Writer protection slot (32 bytes). */
struct ct_slot {
	CTP_ATOMIC(uint64_t) owner; /* pid << 32 | tid, 0 = free */
	CTP_ATOMIC(uint64_t) word;  /* the ACTIVE word this writer entered */
	CTP_ATOMIC(uint32_t) refs;  /* puts inside (nested in signals) */
	uint32_t _pad0;
	uint64_t _pad1;
};

/* One stored stack (32 bytes). */
struct ct_bucket {
	CTP_ATOMIC(uint64_t) key; /* see CT_KEY_*; 0 = empty */
	uint64_t id;		  /* preserved id, or 0: epoch << 32 | index */
	CTP_ATOMIC(uint64_t) weight;
	CTP_ATOMIC(uint64_t) hits; /* puts that landed here */
};

/* Per-table words, one cache line each, in the header. */
struct ct_table_meta {
	uint32_t epoch; /* instance id; written only while not ACTIVE (k) */
	uint32_t _pad0;
	CTP_ATOMIC(uint64_t) traces;	/* distinct stacks inserted */
	CTP_ATOMIC(uint64_t) pool_used; /* frames reserved in the pool */
	uint8_t _pad1[40];
};

struct ct_header {
	/* 0x000: geometry, written once by the engine before the target
	 * starts; the engine keeps private copies and never re-reads it. */
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;	/* CT_HEADER_SIZE */
	uint32_t tables;	/* CT_TABLES */
	uint32_t slots;		/* CT_SLOTS */
	uint32_t max_traces;	/* distinct stacks per table */
	uint32_t buckets;	/* per table, a power of two >= 2 max_traces */
	uint32_t pool_frames;	/* frame pool per table */
	uint32_t max_frames;	/* CT_MAX_FRAMES */
	uint64_t slots_offset;	/* byte offset of ct_slot[0] */
	uint64_t tables_offset; /* byte offset of table 0 */
	uint64_t table_stride;	/* bytes per table (buckets, then pool) */
	uint64_t pool_offset;	/* offset of the pool inside a table */
	uint64_t region_size;	/* file size */
	uint32_t engine_pid;
	uint32_t _pad0;
	uint8_t _pad1[40];
	/* 0x080: roles (engine writes, writers read ACTIVE). */
	CTP_ATOMIC(uint64_t) active;
	CTP_ATOMIC(uint64_t) standby;
	CTP_ATOMIC(uint64_t) scratch;
	uint8_t _pad2[40];
	/* 0x0C0: writer counters. */
	CTP_ATOMIC(uint64_t) dropped;	     /* puts that returned DROPPED */
	CTP_ATOMIC(uint64_t) dropped_weight; /* their weight */
	CTP_ATOMIC(uint64_t) drop_no_slot;   /* no protection slot free */
	CTP_ATOMIC(uint64_t) drop_full;	     /* table or pool full */
	CTP_ATOMIC(uint64_t) drop_raced;     /* lost to a rotation twice */
	uint8_t _pad3[24];
	/* 0x100: one line per table. */
	struct ct_table_meta table[CT_TABLES];
	uint8_t _reserved[CT_HEADER_SIZE - 0x100 - 64 * CT_TABLES];
};

/*
 * Tag frames.  A stack the sampler stores ends (outermost position, after
 * the root frame) with one tag frame that names what was running on the
 * interrupted thread, so one table holds per-coroutine stacks and the
 * engine can both merge them (drop the tag) and split them by coroutine.
 * Tags sit above the canonical user-space range (bit 63 set), so no return
 * address is ever mistaken for one.
 *
 *   CT_TAG_CORO | gen16 << 32 | station index   a coroutine was running
 *   CT_TAG_THREAD | tid                          no coroutine: the thread
 *
 * gen16 is the low 16 bits of the station's occupancy count (ctp_station_ext
 * gen) so a sample is not credited to a later occupant of the same station.
 * Stacks captured at suspension (the parked stack) carry no tag: many
 * coroutines parked at one place share one trace.
 */
#define CT_TAG_MASK 0xffff000000000000ull
#define CT_TAG_CORO 0xc0c0000000000000ull
#define CT_TAG_THREAD 0xc0c1000000000000ull
#define CT_TAG_IS(f) (((f)&0x8000000000000000ull) != 0)
#define CT_TAG_CORO_INDEX(f) ((uint32_t)((f)&0xffffffffu))
#define CT_TAG_CORO_GEN16(f) ((uint16_t)(((f) >> 32) & 0xffffu))
#define CT_TAG_THREAD_TID(f) ((uint64_t)((f)&0xffffffffffffull))

/*
 * The announcement in the cTP header (at CTP_CALLTRACE_DESC_OFFSET).  The
 * engine writes it before it starts the target; all zero = absent.
 */
#define CTP_CT_MAGIC 0x31435443u /* "CTC1" little-endian */
#define CTP_CT_VERSION 1u
#define CTP_CT_NAME_MAX 40u

struct ctp_calltrace_desc {
	uint32_t magic;	  /* CTP_CT_MAGIC, or 0 */
	uint32_t version; /* CTP_CT_VERSION */
	uint32_t size;	  /* sizeof(struct ctp_calltrace_desc) */
	uint32_t flags;	  /* none yet */
	uint64_t region_size;
	/* File name in the cTP region's directory, NUL-terminated, no '/'. */
	char name[CTP_CT_NAME_MAX];
};

CTP_STATIC_ASSERT(sizeof(struct ct_slot) == 32, "slot is 32 bytes");
CTP_STATIC_ASSERT(offsetof(struct ct_slot, owner) == 0, "slot owner");
CTP_STATIC_ASSERT(offsetof(struct ct_slot, word) == 8, "slot word");
CTP_STATIC_ASSERT(offsetof(struct ct_slot, refs) == 16, "slot refs");
CTP_STATIC_ASSERT(sizeof(struct ct_bucket) == 32, "bucket is 32 bytes");
CTP_STATIC_ASSERT(offsetof(struct ct_bucket, key) == 0, "bucket key");
CTP_STATIC_ASSERT(offsetof(struct ct_bucket, id) == 8, "bucket id");
CTP_STATIC_ASSERT(offsetof(struct ct_bucket, weight) == 16, "bucket weight");
CTP_STATIC_ASSERT(offsetof(struct ct_bucket, hits) == 24, "bucket hits");
CTP_STATIC_ASSERT(sizeof(struct ct_table_meta) == 64, "table meta is 64");
CTP_STATIC_ASSERT(offsetof(struct ct_table_meta, traces) == 8, "traces");
CTP_STATIC_ASSERT(offsetof(struct ct_table_meta, pool_used) == 16, "pool");
CTP_STATIC_ASSERT(sizeof(struct ct_header) == CT_HEADER_SIZE, "header 4K");
CTP_STATIC_ASSERT(offsetof(struct ct_header, version) == 0x08, "version");
CTP_STATIC_ASSERT(offsetof(struct ct_header, max_traces) == 0x18, "traces");
CTP_STATIC_ASSERT(offsetof(struct ct_header, slots_offset) == 0x28, "slots");
CTP_STATIC_ASSERT(offsetof(struct ct_header, region_size) == 0x48, "size");
CTP_STATIC_ASSERT(offsetof(struct ct_header, engine_pid) == 0x50, "pid");
CTP_STATIC_ASSERT(offsetof(struct ct_header, active) == 0x80, "active");
CTP_STATIC_ASSERT(offsetof(struct ct_header, standby) == 0x88, "standby");
CTP_STATIC_ASSERT(offsetof(struct ct_header, scratch) == 0x90, "scratch");
CTP_STATIC_ASSERT(offsetof(struct ct_header, dropped) == 0xC0, "dropped");
CTP_STATIC_ASSERT(offsetof(struct ct_header, drop_raced) == 0xE0, "raced");
CTP_STATIC_ASSERT(offsetof(struct ct_header, table) == 0x100, "tables");
CTP_STATIC_ASSERT(sizeof(struct ctp_calltrace_desc) == 64, "desc is 64");
CTP_STATIC_ASSERT(offsetof(struct ctp_calltrace_desc, region_size) == 16,
		  "desc size");
CTP_STATIC_ASSERT(offsetof(struct ctp_calltrace_desc, name) == 24, "name");
CTP_STATIC_ASSERT(CTP_CALLTRACE_DESC_OFFSET + 64 <= CTP_HEADER_SIZE,
		  "desc fits in the cTP header");
CTP_STATIC_ASSERT(CT_MAX_FRAMES < (1u << CT_KEY_N_BITS), "nframes fits key");
CTP_STATIC_ASSERT(CT_POOL_FRAMES_LIMIT <= (1u << CT_KEY_OFF_BITS),
		  "pool offset fits key");
CTP_STATIC_ASSERT((CT_SLOTS & (CT_SLOTS - 1)) == 0, "slots power of two");

/* The descriptor inside a cTP header. */
static inline struct ctp_calltrace_desc *
ctp_calltrace_desc(struct ctp_header *hdr)
{
	return (struct ctp_calltrace_desc *)(void *)((char *)hdr +
						     CTP_CALLTRACE_DESC_OFFSET);
}

/* Geometry of a region: offsets and size for given table sizes. */
struct ct_geometry {
	uint32_t max_traces, buckets, pool_frames;
	uint64_t slots_offset, tables_offset, table_stride, pool_offset;
	uint64_t region_size;
};

static inline uint64_t ct_round_page(uint64_t v)
{
	return (v + 4095u) & ~(uint64_t)4095u;
}

/*
 * Fill g for max_traces stacks and pool_frames frames per table; buckets is
 * the power of two >= 2 max_traces.  Returns 0, or -1 when out of bounds.
 */
static inline int ct_geometry(struct ct_geometry *g, uint32_t max_traces,
			      uint32_t pool_frames)
{
	uint32_t b = 2;

	if (max_traces == 0 || max_traces > CT_MAX_TRACES_LIMIT ||
	    pool_frames == 0 || pool_frames > CT_POOL_FRAMES_LIMIT)
		return -1;
	while (b < 2 * max_traces)
		b *= 2;
	g->max_traces = max_traces;
	g->buckets = b;
	g->pool_frames = pool_frames;
	g->slots_offset = CT_HEADER_SIZE;
	g->tables_offset = ct_round_page(
		g->slots_offset + (uint64_t)CT_SLOTS * sizeof(struct ct_slot));
	g->pool_offset = (uint64_t)b * sizeof(struct ct_bucket);
	g->table_stride =
		ct_round_page(g->pool_offset + (uint64_t)pool_frames * 8u);
	g->region_size = g->tables_offset + CT_TABLES * g->table_stride;
	return 0;
}

#endif
