/*
 * cTP wire contract: the byte layout of the shared region that a traced
 * program (the probe) writes and an engine (corotop, or the upstream Go
 * engine) reads.
 *
 *   [ ctp_header 1 KiB ][ ctp_station #0 1 KiB ][ ctp_station #1 ] ...
 *
 * Every size and offset below is fixed by a static assertion, so a compiler
 * that pads differently fails to build instead of silently disagreeing with
 * another cTP implementation.
 *
 * corotop extensions live only in bytes the spec reserves, and zero always
 * means "absent":
 *   - ctp_header._reserved starts with a ctp_header_ext. Its magic and
 *     version are written by an engine that supports station recycling and
 *     futex wakeups. A region created by another engine has zeros there, and
 *     a corotop probe then behaves exactly like the upstream SDKs.
 *   - ctp_station.flexible starts with a ctp_station_ext, written by a
 *     corotop probe when it opens the station. A station written by an
 *     upstream SDK has zeros there, which tells the engine to decode the
 *     upstream per-slot sequence style.
 *   - the 64 bytes at CTP_CALLTRACE_DESC_OFFSET (0x3C0, right after
 *     ctp_header_ext) hold a ctp_calltrace_desc (corotop/calltrace.h): the
 *     engine's announcement of a CallTrace region next to this one.
 *
 * Sequence numbers.  Three writing styles are in the wild:
 *   - station style (corotop probe, station_ext.flags & CTP_STX_SEQ_STATION):
 *     a seqlock; event n (0-based, counted per station and kept across reuse)
 *     goes to slot n % 8; its seq is 2n+1 while written, 2n+2 when complete.
 *   - slot style (the shipped upstream SDKs): a seqlock per slot; every slot
 *     counts its own writes, +1 (odd: in progress) then +2; the k-th write
 *     (1-based) to slot s carries event n = 8(k-1) + s.
 *   - literal style (a writer that follows the spec's text): the station's
 *     seq runs 1, 2, 3, ...; seq goes to slot seq % 8 and is stored last,
 *     once; event n = seq - 1.  No in-progress mark: odd seqs are complete.
 * All map onto one event number n per station, which is what makes gaps
 * (lost events) countable.  Only the first carries a marker (the station
 * extension); the engine tells the other two apart from the seqs themselves
 * (src/engine/ctp/harvest.c).  See ctp_seq_event() below.
 *
 * Ordering contract (who pairs with whom).  Letters name the barriers.
 *
 *   probe (writer)                         engine (reader)
 *   --------------                         ---------------
 *   (A) slot.seq = odd, relaxed, then      (D) seq acquire-load; skip odd/old
 *       release fence                      (E) copy payload
 *   (B) payload stores (plain)             (F) acquire fence, re-load seq:
 *   (C) slot.seq = even, release               changed => discard copy
 *   A pairs with F (a copy that raced a new write sees the odd/new seq);
 *   C pairs with D (an even seq implies the payload is visible).
 *
 *   (G) station_ext.gen++, release after   (H) gen acquire-load before
 *       writing probe_id/birth_ts/first_n      reading the station header
 *       (and, for a census station, the        (and the census event)
 *       census block and event first_n)
 *   G pairs with H: a new occupant's header is complete once gen moves.
 *
 *   (I) is_dead = 1, release, after the    (J) is_dead acquire-load, then a
 *       last slot write and next_n store       final slot harvest; only then
 *                                              (K) free-list push, release CAS
 *   (L) free-list pop, acquire CAS         K pairs with L, I pairs with J:
 *       (reads next_n of the old owner)        the next owner starts after the
 *                                              engine saw all of the old one.
 *
 *   (M) after (C): read tracer_sleeping.   (N) tracer_sleeping = 1, then
 *       With CTP_HX_ASYM_FENCE and a            membarrier(GLOBAL_EXPEDITED)
 *       successful membarrier registration     (or a seq_cst fence), then
 *       a compiler barrier is enough;           re-scan.
 *       otherwise a seq_cst fence.          M pairs with N (Dekker): either
 *   (O) CAS sleeping 1->0, then wake            the probe sees sleeping == 1
 *       (futex and/or one UDS byte)             or the re-scan sees the write.
 *
 *   (P) after (M): if the station's dirty  (Q) exchange each dirty word with
 *       bit is clear, fetch_or it              0, then membarrier (or rely on
 *       (relaxed; a hint).                     the probe's fence M), then scan
 *                                              the marked stations.
 *   Same Dekker shape as M/N: a probe that saw its bit still set (and so
 *   skipped P) had its seq store ordered before the engine's scan.  Full
 *   scans at least every 100 ms and at sleep entry bound any other case.
 *
 *   (R) after the switch: saved_kind,      (T) saved_ts acquire-load, equal
 *       relaxed; saved_at, release;            to the park's last_ts read in
 *       (S) saved_ts = that park's             the target; (U) saved_at
 *       last_ts, release                       acquire-load; read the area,
 *                                              then last_ts again in the
 *                                              target: moved => drop it
 *   S pairs with T (the park's saved_at and its save area are visible);
 *   R pairs with U (a saved_at of a later park implies that park's
 *   last_ts store, which the re-read then sees).
 */
#ifndef COROTOP_CTP_H
#define COROTOP_CTP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#include <atomic>
#define CTP_ATOMIC(t) std::atomic<t>
#define CTP_STATIC_ASSERT(e, m) static_assert(e, m)
#define CTP_ALIGNAS(n) alignas(n)
#define CTP_ALIGNOF(t) alignof(t)
#else
#include <stdatomic.h>
#define CTP_ATOMIC(t) _Atomic t
#define CTP_STATIC_ASSERT(e, m) _Static_assert(e, m)
#define CTP_ALIGNAS(n) _Alignas(n)
#define CTP_ALIGNOF(t) _Alignof(t)
#endif

#define CTP_MAGIC 0x434F524F54524352ull /* "COROTRCR" */
#define CTP_VERSION 1u
#define CTP_HEADER_SIZE 1024u
#define CTP_STATION_SIZE 1024u
#define CTP_SLOTS 8u
/* Largest station count a corotop engine creates or accepts (1 GiB region). */
#define CTP_MAX_STATIONS_LIMIT (1u << 20)

#define CTP_ENV_SHM "CTP_SHM_PATH"
#define CTP_ENV_SOCK "CTP_SOCK_PATH"
#define CTP_ENV_MAX "CTP_MAX_STATIONS"
/* corotop's, not the cTP's: the pid of the process corotop launched.  A
 * corotop probe whose process has that pid copies its /proc/self/maps,
 * once, at its start, into CTP_MAPS_FILE beside the region (in its
 * private directory), so that a program that exits before corotop read
 * its mappings can still be named (docs/WIRE.md, "The target's maps"). */
#define CTP_ENV_MAPS_PID "COROTOP_MAPS_PID"
#define CTP_MAPS_FILE "target.maps"

/* One coroutine state transition. */
struct ctp_epoch {
	CTP_ALIGNAS(64) uint64_t timestamp; /* CLOCK_MONOTONIC ns */
	uint64_t tid;			    /* OS thread id */
	uint64_t addr; /* switch address or frame pointer */
	CTP_ATOMIC(uint64_t) seq;
	uint8_t reserved[31]; /* payload: check word, trace id, flags (below) */
	uint8_t is_active;    /* 1 running, 0 suspended */
};

/*
 * Optional integrity word in ctp_epoch.reserved, written by stress tests and
 * by writers that want end-to-end validation: a checksum of
 * (timestamp, tid, addr, is_active, seq).  Engines ignore it unless asked.
 */
#define CTP_EPOCH_CHECK_OFFSET 0u

/*
 * Optional parked-stack word in ctp_epoch.reserved: on a suspend event
 * (is_active 0) a corotop probe that captured the coroutine's stack stores
 * the CallTrace id of that stack here (u64, little-endian, unaligned copy),
 * written before the slot's seq is published, like every payload byte.
 * 0 = not captured.  Other cTP writers leave it 0.
 */
#define CTP_EPOCH_TRACE_OFFSET 8u

/*
 * Optional event-flags byte in ctp_epoch.reserved (u8), payload like the
 * words above: written before the slot's seq is published, read inside the
 * seqlock copy.  0 = none; other cTP writers leave it 0, and an engine
 * reads it only on stations a corotop probe opened (ext.magic STX1), since
 * the spec lets other writers put business payload in the reserved bytes.
 *   CTP_EPF_LONG_WAIT  on a suspend (is_active 0): the program expects this
 *                      wait to be long (an idle keep-alive connection, a
 *                      worker waiting for jobs), so a long suspension is not
 *                      a sign of a lost wakeup.  Meaningless on a resume
 *                      (written 0 there).
 *   CTP_EPF_CONTEXT    on every event of a coroutine that is an execution
 *                      context of its own -- a stack it runs on, entered
 *                      by a context switch (corotop_coro_set_stack,
 *                      corotop_coro_set_context): while it runs nothing
 *                      else runs on its thread, so a resume of another
 *                      such coroutine on that thread means it was
 *                      suspended by then, even when its suspend was lost.
 *                      Stackless coroutines, which may nest on one thread,
 *                      never set it.
 * Bits other than these are reserved: written 0, ignored when read.
 */
#define CTP_EPOCH_FLAGS_OFFSET 16u
#define CTP_EPF_LONG_WAIT (1u << 0)
#define CTP_EPF_CONTEXT (1u << 1)

/* Extension descriptor at the start of ctp_header._reserved. */
#define CTP_HX_MAGIC 0x31585443u /* "CTX1" little-endian */
#define CTP_HX_VERSION 1u
#define CTP_HX_FREELIST (1u << 0) /* engine recycles dead stations */
#define CTP_HX_FUTEX (1u << 1)	  /* engine sleeps on tracer_sleeping */
#define CTP_HX_ASYM_FENCE                                                      \
	(1u << 2)		/* engine issues membarrier(GLOBAL_EXP.)       \
				 */
#define CTP_HX_DIRTY (1u << 3)	/* probes mark written stations in dirty[] */
#define CTP_HX_DEEP (1u << 4)	/* a ctp_deep area follows the stations */
#define CTP_HX_DIRTY_WORDS 112u /* 7168 bits */

struct ctp_header_ext {
	uint32_t magic;	  /* CTP_HX_MAGIC, or 0: no extension */
	uint32_t version; /* CTP_HX_VERSION */
	uint32_t size; /* sizeof(struct ctp_header_ext) as the engine knew it */
	uint32_t flags; /* CTP_HX_* */
	/* Treiber stack of free stations: low 32 bits = index + 1 (0 = empty),
	 * high 32 bits = tag bumped on every push and pop (ABA guard). */
	CTP_ATOMIC(uint64_t) free_head;
	/* Transitions that found no station (fetch_add relaxed; a statistic).
	 */
	CTP_ATOMIC(uint64_t) untraced;
	/* Pid of the engine that owns the region, for diagnostics. */
	uint32_t engine_pid;
	/* Dirty hint (CTP_HX_DIRTY): bit b of dirty[] covers stations
	 * [b << dirty_shift, (b + 1) << dirty_shift).  A probe sets the bit
	 * after a slot write or a close, when it is not already set (P); the
	 * engine exchanges words with 0 and scans only the marked groups (Q).
	 * A hint only: data is still ordered by seq, gen and is_dead. */
	uint32_t dirty_shift;
	CTP_ATOMIC(uint64_t) dirty[CTP_HX_DIRTY_WORDS];
};

/* Offset in ctp_header of struct ctp_calltrace_desc (corotop/calltrace.h). */
#define CTP_CALLTRACE_DESC_OFFSET 0x3C0u

struct ctp_header {
	CTP_ALIGNAS(1024) uint64_t magic;
	uint32_t version;
	uint32_t max_stations;
	CTP_ATOMIC(uint32_t) allocated_count;
	CTP_ATOMIC(uint32_t) tracer_sleeping; /* also the futex word */
	union {
		uint8_t _reserved[1000];
		struct ctp_header_ext ext;
	};
};

/* Extension at the start of ctp_station.flexible. */
#define CTP_STX_MAGIC 0x31585453u /* "STX1" */
#define CTP_STX_SEQ_STATION (1u << 0)
/* The occupant writes its events into the station's deep ring (ctp_deep),
 * not into slots[]; station-style seqs, event n in deep slot n % depth. */
#define CTP_STX_DEEP (1u << 1)
/* The census (a corotop probe's rendezvous walk, docs/WIRE.md): the
 * occupant lived before this attachment, and event first_n is not a new
 * transition but the last one it made before (its real time, thread,
 * address and state).  ext.census says where its stack can be walked from
 * when that state is a suspend. */
#define CTP_STX_CENSUS (1u << 2)
/* The station stands for a process, not a coroutine (docs/WIRE.md,
 * "Processes"): each process's probe publishes one when it attaches, with
 * probe_id 0, birth_ts its image, its name its command, and no events.
 * An engine that does not know the flag shows it as a coroutine that
 * never ran. */
#define CTP_STX_PROCESS (1u << 3)
/* The occupant is a hub -- it takes part in most of its process's switches
 * (an event loop's root) -- and writes its deep ring to hub_depth, not
 * depth (ctp_deep, CTP_DEEP_HUBS).  Set with the header, before (G). */
#define CTP_STX_HUB (1u << 4)
/* What the occupant is, when it is not one of the program's coroutines
 * (COROTOP_CORO_DISPATCHER, COROTOP_CORO_ROOT): a scheduler's own context,
 * or a thread's own stack.  At most one of the two.  Set with the header,
 * before (G).  An engine that does not know them shows a coroutine. */
#define CTP_STX_DISPATCHER (1u << 5)
#define CTP_STX_ROOT (1u << 6)
/* Bytes of ctp_station_ext.name, the NUL included (COROTOP_NAME_MAX). */
#define CTP_STX_NAME_LEN 48u
/* ctp_station_ext.saved_kind: the layout of the area saved_at points to.
 * CTP_SAVED_FCONTEXT: Boost.Context's fcontext_t, the stack pointer its
 * jump_fcontext or ontop_fcontext left after pushing the registers it
 * keeps (whose layout depends on Boost's version and the architecture:
 * the engine knows which, docs/TRACING.md). */
#define CTP_SAVED_NONE 0u
#define CTP_SAVED_FCONTEXT 1u

/*
 * Where a coroutine parked before an attach can have its stack walked, in
 * the target's memory, by the engine: the innermost return address (pc,
 * the first frame), the frame record to follow from (fp), the lowest
 * address of the stack the walk may read (sp), and the stack the scheduler
 * declared (corotop_coro_set_stack; 0, 0 = unknown).  Written with the
 * rest of the header before the generation moves (G); 0 = unknown.
 */
struct ctp_census {
	uint64_t sp;
	uint64_t fp;
	uint64_t pc;
	uint64_t stack_lo, stack_hi;
};

struct ctp_station_ext {
	uint32_t magic; /* CTP_STX_MAGIC once a corotop probe opened it */
	uint32_t flags; /* CTP_STX_* */
	/* Occupancy count: +1 each time a coroutine opens this station (G). */
	CTP_ATOMIC(uint64_t) gen;
	/* First event number of the current occupant. */
	uint64_t first_n;
	/* Next event number; written by the closer, read by the next opener. */
	uint64_t next_n;
	/* Free-list link: index + 1 of the next free station, 0 = none. */
	CTP_ATOMIC(uint64_t) next_free;
	/* CTP_STX_CENSUS: where the stack of the census event's suspend
	 * can be walked from; zeros otherwise. */
	struct ctp_census census;
	/* The address of the occupant's struct corotop_coro in the writing
	 * process (for an engine that reads its saved state from there), 0
	 * = unknown.  Written with the header, before (G). */
	uint64_t coro;
	/* The occupant's name (corotop_coro_open_named): bytes up to the
	 * first NUL, NUL-padded to the end; all zeros = no name.  Written
	 * with the header, before (G); untrusted like every byte here (an
	 * engine copies at most CTP_STX_NAME_LEN - 1 bytes and checks them). */
	char name[CTP_STX_NAME_LEN];
	/* The writing process: its pid, and its image -- CLOCK_MONOTONIC ns
	 * when its probe was loaded, so an exec (same pid, new image) tells
	 * the contexts of the image it replaced apart.  0: unknown (a probe
	 * before these fields).  Written with the header, before (G). */
	uint32_t pid;
	uint32_t _pid_pad;
	uint64_t image;
	/* CTP_STX_PROCESS only: contexts the process's interposer
	 * (libcorotop-preload) could not track, its context table full.
	 * Raised to the process's count (a relaxed CAS maximum); read as a
	 * statistic. */
	CTP_ATOMIC(uint64_t) contexts_untracked;
	/* CTP_STX_PROCESS only: switches the interposer found made where it
	 * could not see them -- a thread on a stack that is not the one of
	 * the context it last switched to (a longjmp it cannot decode, a
	 * runtime's own assembly).  Raised like contexts_untracked. */
	CTP_ATOMIC(uint64_t) switches_unseen;
	/* The function the occupant's context was made to run, as an
	 * address in the writing process (makecontext's func,
	 * make_fcontext's fn: corotop_coro_open_entry), which an engine
	 * names it by when nothing else does; 0 = unknown (a probe before
	 * this field, a scheduler that did not say).  Written with the
	 * header, before (G); untrusted: only an address to symbolize. */
	uint64_t entry;
	/* Where the occupant's switch saved its registers at its last
	 * suspend, in the writing process (corotop_coro_set_saved): the
	 * layout (CTP_SAVED_*; 0 = none), its address (Boost.Context's
	 * fcontext_t), and which park it is (the occupant's last_ts at
	 * that suspend, in its struct corotop_coro).  Written after the
	 * switch, (R) and (S); zeroed with the header, before (G).
	 * Untrusted: an engine checks the area against the stack and the
	 * code before it walks from it (docs/TRACING.md). */
	CTP_ATOMIC(uint32_t) saved_kind;
	uint32_t _saved_pad;
	CTP_ATOMIC(uint64_t) saved_at;
	CTP_ATOMIC(uint64_t) saved_ts;
	/* The program's function the occupant's entry was made for, when
	 * the entry is a runtime's template that names only its type (a
	 * Boost.Fiber fiber of a plain function: worker_context<F>'s fn_),
	 * as an address in the writing process
	 * (corotop_coro_open_made_for); 0 = none.  Written with the header,
	 * before (G); untrusted, a candidate only: an engine names the
	 * occupant after it only when the entry's F is a function type and
	 * this is the start of a function (docs/TRACING.md, "Names"). */
	uint64_t made_for;
};

struct ctp_station {
	CTP_ALIGNAS(1024) uint64_t probe_id;
	uint64_t birth_ts;
	CTP_ATOMIC(uint8_t) is_dead;
	uint8_t _pad[47];
	struct ctp_epoch slots[CTP_SLOTS];
	union {
		uint8_t flexible[448];
		struct ctp_station_ext ext;
	};
};

CTP_STATIC_ASSERT(sizeof(struct ctp_epoch) == 64, "epoch is 64 bytes");
CTP_STATIC_ASSERT(CTP_ALIGNOF(struct ctp_epoch) == 64, "epoch aligned 64");
CTP_STATIC_ASSERT(offsetof(struct ctp_epoch, timestamp) == 0x00, "timestamp");
CTP_STATIC_ASSERT(offsetof(struct ctp_epoch, tid) == 0x08, "tid");
CTP_STATIC_ASSERT(offsetof(struct ctp_epoch, addr) == 0x10, "addr");
CTP_STATIC_ASSERT(offsetof(struct ctp_epoch, seq) == 0x18, "seq");
CTP_STATIC_ASSERT(offsetof(struct ctp_epoch, reserved) == 0x20, "reserved");
CTP_STATIC_ASSERT(offsetof(struct ctp_epoch, is_active) == 0x3F, "is_active");
CTP_STATIC_ASSERT(CTP_EPOCH_TRACE_OFFSET + 8 <= CTP_EPOCH_FLAGS_OFFSET &&
			  CTP_EPOCH_FLAGS_OFFSET < 31,
		  "epoch flags byte after the trace word, inside reserved");

CTP_STATIC_ASSERT(sizeof(struct ctp_header) == 1024, "header is 1 KiB");
CTP_STATIC_ASSERT(CTP_ALIGNOF(struct ctp_header) == 1024,
		  "header aligned 1 KiB");
CTP_STATIC_ASSERT(offsetof(struct ctp_header, magic) == 0x00, "magic");
CTP_STATIC_ASSERT(offsetof(struct ctp_header, version) == 0x08, "version");
CTP_STATIC_ASSERT(offsetof(struct ctp_header, max_stations) == 0x0C, "max");
CTP_STATIC_ASSERT(offsetof(struct ctp_header, allocated_count) == 0x10,
		  "allocated_count");
CTP_STATIC_ASSERT(offsetof(struct ctp_header, tracer_sleeping) == 0x14,
		  "tracer_sleeping");
CTP_STATIC_ASSERT(offsetof(struct ctp_header, _reserved) == 0x18, "reserved");
CTP_STATIC_ASSERT(sizeof(struct ctp_header_ext) <= 1000, "ext fits");
CTP_STATIC_ASSERT(offsetof(struct ctp_header_ext, free_head) == 16, "free");
CTP_STATIC_ASSERT(offsetof(struct ctp_header_ext, untraced) == 24, "untr");
CTP_STATIC_ASSERT(offsetof(struct ctp_header_ext, engine_pid) == 32, "pid");
CTP_STATIC_ASSERT(offsetof(struct ctp_header_ext, dirty) == 40, "dirty");
CTP_STATIC_ASSERT(0x18 + sizeof(struct ctp_header_ext) <=
			  CTP_CALLTRACE_DESC_OFFSET,
		  "calltrace descriptor after ext");
CTP_STATIC_ASSERT(offsetof(struct ctp_header_ext, free_head) % 8 == 0,
		  "free_head aligned");

CTP_STATIC_ASSERT(sizeof(struct ctp_station) == 1024, "station is 1 KiB");
CTP_STATIC_ASSERT(CTP_ALIGNOF(struct ctp_station) == 1024, "station aligned");
CTP_STATIC_ASSERT(offsetof(struct ctp_station, probe_id) == 0x000, "probe_id");
CTP_STATIC_ASSERT(offsetof(struct ctp_station, birth_ts) == 0x008, "birth_ts");
CTP_STATIC_ASSERT(offsetof(struct ctp_station, is_dead) == 0x010, "is_dead");
CTP_STATIC_ASSERT(offsetof(struct ctp_station, slots) == 0x040, "slots");
CTP_STATIC_ASSERT(offsetof(struct ctp_station, flexible) == 0x240, "flexible");
CTP_STATIC_ASSERT(sizeof(struct ctp_station_ext) <= 448, "station ext fits");
CTP_STATIC_ASSERT(offsetof(struct ctp_station_ext, gen) == 8, "gen");
CTP_STATIC_ASSERT(offsetof(struct ctp_station_ext, first_n) == 16, "first_n");
CTP_STATIC_ASSERT(offsetof(struct ctp_station_ext, next_n) == 24, "next_n");
CTP_STATIC_ASSERT(offsetof(struct ctp_station_ext, next_free) == 32, "link");
CTP_STATIC_ASSERT(offsetof(struct ctp_station_ext, census) == 40, "census");
CTP_STATIC_ASSERT(sizeof(struct ctp_census) == 40, "census is 40 bytes");
CTP_STATIC_ASSERT(offsetof(struct ctp_station_ext, coro) == 80, "coro");
CTP_STATIC_ASSERT(offsetof(struct ctp_station_ext, name) == 88, "name");
CTP_STATIC_ASSERT(offsetof(struct ctp_station_ext, pid) == 136, "pid");
CTP_STATIC_ASSERT(offsetof(struct ctp_station_ext, image) == 144, "image");
CTP_STATIC_ASSERT(offsetof(struct ctp_station_ext, contexts_untracked) == 152,
		  "contexts_untracked");
CTP_STATIC_ASSERT(offsetof(struct ctp_station_ext, switches_unseen) == 160,
		  "switches_unseen");
CTP_STATIC_ASSERT(offsetof(struct ctp_station_ext, entry) == 168, "entry");
CTP_STATIC_ASSERT(offsetof(struct ctp_station_ext, saved_kind) == 176,
		  "saved_kind");
CTP_STATIC_ASSERT(offsetof(struct ctp_station_ext, saved_at) == 184,
		  "saved_at");
CTP_STATIC_ASSERT(offsetof(struct ctp_station_ext, saved_ts) == 192,
		  "saved_ts");
CTP_STATIC_ASSERT(offsetof(struct ctp_station_ext, made_for) == 200,
		  "made_for");
CTP_STATIC_ASSERT(sizeof(struct ctp_station_ext) == 208, "station ext");

/* Size in bytes of a region with n stations. */
static inline uint64_t ctp_region_size(uint32_t n)
{
	return (uint64_t)CTP_HEADER_SIZE + (uint64_t)n * CTP_STATION_SIZE;
}

/*
 * Deep rings (CTP_HX_DEEP), a corotop extension that gives corotop's own
 * probe more slack than the spec's eight slots.  The area starts right after
 * the last station, at ctp_region_size(max_stations), so engines that map
 * only the spec's size never see it:
 *
 *   [ ctp_deep 1 KiB ][ station 0: depth epochs ][ station 1 ] ...
 *
 * A station whose ext.flags has CTP_STX_DEEP writes event n into deep epoch
 * n % depth of its own ring, with the station-style seqs (2n+1 while
 * written, 2n+2 when complete); its slots[] stay zero.  The engine publishes
 * when its last covering pass began (pass_ns), and a writer that gets half a
 * ring ahead of the last pass it knows of wakes the engine through `kick`,
 * whether or not the engine sleeps (docs/WIRE.md, "Deep rings").
 *
 *   engine                                  probe
 *   (R) pass_ns = start of a pass that      (S) acquire-load pass_ns, at most
 *       visited every station marked or         once per PROBE_PASS_REFRESH
 *       written before it, release, after       per thread, only when a
 *       the pass                                 coroutine is half a ring on
 *   (T) kick = 1 (relaxed), then futex      (U) kick 1 -> 0 (exchange,
 *       wait while it is 1, bounded             relaxed), then futex wake:
 *                                               cuts the engine's pacing
 *                                               wait short
 *   R pairs with S: a pass that began after a writer's events were
 *   published delivered them, so their slots may be reused.
 */
#define CTP_DEEP_MAGIC 0x31504544u /* "DEP1": rings of depth epochs */
/* "DEP2": CTP_DEEP_HUBS, rings hub_depth epochs apart.  A probe that knows
 * only DEP1 (which would place ring i at i * depth) takes no deep ring. */
#define CTP_DEEP_MAGIC_HUBS 0x32504544u
#define CTP_DEEP_HUBS (1u << 0)
#define CTP_DEEP_HEADER 1024u
#define CTP_DEEP_MIN 8u
#define CTP_DEEP_MAX 4096u

struct ctp_deep {
	uint32_t magic;	   /* CTP_DEEP_MAGIC */
	uint32_t depth;	   /* epochs per station, a power of two */
	uint32_t stations; /* rings in the area (== max_stations) */
	uint32_t flags;	   /* CTP_DEEP_HUBS with magic DEP2, else 0 */
	/* DEP2: each ring is hub_depth epochs (a power of two, more than
	 * depth): a hub station (CTP_STX_HUB) uses all of them, any other
	 * the first depth. */
	uint32_t hub_depth;
	uint8_t _pad0[44];
	/* CLOCK_MONOTONIC ns at the start of the engine's latest completed
	 * covering pass (R). Its own cache line: written once per pass. */
	CTP_ATOMIC(uint64_t) pass_ns;
	uint8_t _pad1[56];
	/* Futex word of the engine's pacing wait (T, U). */
	CTP_ATOMIC(uint32_t) kick;
	uint8_t _pad2[CTP_DEEP_HEADER - 132];
};

CTP_STATIC_ASSERT(sizeof(struct ctp_deep) == CTP_DEEP_HEADER, "deep header");
CTP_STATIC_ASSERT(offsetof(struct ctp_deep, hub_depth) == 16, "hub_depth");
CTP_STATIC_ASSERT(offsetof(struct ctp_deep, pass_ns) == 64, "pass_ns");
CTP_STATIC_ASSERT(offsetof(struct ctp_deep, kick) == 128, "kick");

/* Offset of the deep area in a region of n stations. */
static inline uint64_t ctp_deep_offset(uint32_t n)
{
	return ctp_region_size(n);
}

/* Size of the deep area (header and rings) for n stations, rings `stride`
 * epochs apart (depth, or DEP2's hub_depth). */
static inline uint64_t ctp_deep_size(uint32_t n, uint32_t stride)
{
	return CTP_DEEP_HEADER +
	       (uint64_t)n * stride * sizeof(struct ctp_epoch);
}

/* A deep header's ring stride: depth for DEP1, hub_depth for DEP2 (a
 * power of two above depth, at most CTP_DEEP_MAX); 0 for any header that
 * is neither, or that lies. */
static inline uint32_t ctp_deep_stride(const struct ctp_deep *d)
{
	uint32_t depth = d->depth, hub = d->hub_depth;

	if (depth < CTP_DEEP_MIN || depth > CTP_DEEP_MAX ||
	    (depth & (depth - 1)))
		return 0;
	if (d->magic == CTP_DEEP_MAGIC && d->flags == 0)
		return depth;
	if (d->magic == CTP_DEEP_MAGIC_HUBS && d->flags == CTP_DEEP_HUBS &&
	    hub > depth && hub <= CTP_DEEP_MAX && !(hub & (hub - 1)))
		return hub;
	return 0;
}

/* A depth an engine may announce: a power of two in [MIN, MAX]. */
static inline int ctp_deep_depth_ok(uint32_t depth)
{
	return depth >= CTP_DEEP_MIN && depth <= CTP_DEEP_MAX &&
	       (depth & (depth - 1)) == 0;
}

/*
 * Event number carried by a slot's seq, in either style, or UINT64_MAX for a
 * slot that was never written.  An odd seq yields the number of the event
 * being written.
 */
static inline uint64_t ctp_seq_event(uint64_t seq, unsigned slot,
				     int station_style)
{
	uint64_t k;

	if (seq == 0)
		return UINT64_MAX;
	k = (seq + 1) / 2; /* 1-based count: even 2k, odd 2k-1 */
	if (station_style)
		return k - 1;
	return (k - 1) * CTP_SLOTS + slot;
}

/* Seq value that marks event n complete (station style). */
static inline uint64_t ctp_event_seq(uint64_t n)
{
	return 2 * n + 2;
}

#endif
