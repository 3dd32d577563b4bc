/*
 * cacheray_internal: the reader's state, shared by cacheray.c (reading and
 * counting) and cacheray_query.c (totals, tables, top lines).  Not for
 * other files: they use cacheray.h.
 */
#ifndef COROTOP_CACHERAY_INTERNAL_H
#define COROTOP_CACHERAY_INTERNAL_H

#include "cacheray/cacheray.h"
#include "common/hashidx.h"
#include "cacheray/rtta.h"

#define CACHERAY_FLAGS                                                         \
	(CACHERAY_EVENT_MASK_ATOMIC | CACHERAY_EVENT_MASK_UNALIGNED)
#define CACHERAY_TCACHE 256
#define CACHERAY_RSET_BITS 12

/* The region or gap holding the last address looked up. */
struct cacheray_rcache {
	uint64_t start, span; /* [start, start + span] */
	uint64_t elem_start;  /* the current element (regions only) */
	uint32_t elem, elemsize, type;
	uint32_t tag; /* the region's tag for lines (cacheray_tag); 0: gap */
	bool region;
};

/* A recent RTTA answer: a region (serial != 0) while rtta_still says so,
 * or a gap until the next add. */
struct cacheray_rset {
	uint64_t start, span;
	uint64_t serial;
	uint32_t elemsize, type, tag;
	uint32_t stamp; /* region: its node; gap: cacheray.adds_gen */
};

struct cacheray {
	struct cacheray_config cfg;
	uint64_t offset; /* bytes of complete records consumed */
	uint64_t kind[256];
	uint64_t access_bytes, cross_line, dropped;
	uint64_t rmw, rmw_addr, rmw_tid, rmw_end; /* last atomic READ */
	uint64_t adds, removes, empty, overlaps, unknown, full;

	struct cacheray_rcache rc;
	struct rtta rtta;
	uint64_t serial;   /* of the last add: 64 bits never wrap */
	uint32_t adds_gen; /* bumped by every add: gaps may have shrunk */
	struct cacheray_rset rset[1u << CACHERAY_RSET_BITS]; /* by line */

	struct cacheray_type *types;
	uint32_t ntypes, other_type; /* other_type: 0 until needed */
	uint64_t member_offsets, name_bytes;
	struct hashidx type_idx;

	struct cacheray_thread *threads;
	uint32_t nthreads, other_thread;
	struct hashidx thread_idx;
	struct {
		uint64_t id;
		uint32_t idx; /* + 1; 0: empty */
	} tcache[CACHERAY_TCACHE];

	struct linetab lines;
	uint64_t last_key;
	struct cacheline *last_line;

	bool failed;
	uint64_t err_offset;
	char err[256];
	uint32_t npend;
	uint8_t pend[CACHERAY_RECORD_MAX];
};

#endif
