/*
 * cacheray: a streaming reader and analyzer of Cacheray memory traces
 * (docs: ../shared/specs/cacheray-trace-format.md).  See cacheray.c.
 *
 * Feed it the trace's bytes in chunks of any size; a record split across
 * chunks is kept until it is complete, so a file, a pipe or a FIFO still
 * being written can be read as it comes.  Memory stays bounded by the
 * distinct cache lines, types, threads and live regions (each with a cap),
 * never by the length of the trace.
 *
 * A record that cannot be parsed stops the reader for good: the format has
 * no magic or sync marker, so there is nothing to resynchronize on.
 */
#ifndef COROTOP_CACHERAY_H
#define COROTOP_CACHERAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cacheray/linetab.h"

/* The record type byte. */
enum cacheray_event {
	CACHERAY_EVENT_READ = 0x00,
	CACHERAY_EVENT_WRITE = 0x01,
	CACHERAY_EVENT_RTTA_ADD = 0x02,
	CACHERAY_EVENT_RTTA_REMOVE = 0x03,
	CACHERAY_EVENT_MASK_ATOMIC = 0x40,
	CACHERAY_EVENT_MASK_UNALIGNED = 0x80,
};

/* Record sizes: packed, written field by field. */
#define CACHERAY_ACCESS_SIZE 18 /* type, address u64, size u8, thread u64 */
#define CACHERAY_ADD_FIXED                                                     \
	29 /* type, address, thread, elemsize u32,                             \
	      elemcount u32, typename length u32 */
#define CACHERAY_REMOVE_SIZE                                                   \
	17 /* type, address, thread (assumed: the                              \
	      spec's table ends after Thread) */
/* Longest typename accepted; a longer length is taken for garbage. */
#define CACHERAY_NAME_MAX 4096
#define CACHERAY_RECORD_MAX (CACHERAY_ADD_FIXED + CACHERAY_NAME_MAX)
/* Types with an element size up to this get per-offset (member) counts. */
#define CACHERAY_MEMBER_MAX 4096

/* Limits; 0 in any field means its default. */
struct cacheray_config {
	uint32_t max_lines; /* distinct cache lines (LINETAB_MAX_LINES_DEFAULT)
			     */
	uint32_t max_regions; /* live RTTA regions (RTTA_MAX_REGIONS_DEFAULT) */
	uint32_t max_threads; /* distinct thread ids (4096, at most 65534) */
	uint32_t max_types;   /* distinct (name, elemsize) (16384, <= 65534) */
	uint64_t max_member_offsets; /* member counters over all types (4 Mi) */
	uint64_t max_name_bytes;     /* typename bytes kept (16 MiB) */
};

struct cacheray_member {
	uint64_t n[2]; /* reads, writes at this offset within the element */
};

/*
 * A type: a typename with one element size (the same name registered with
 * two sizes is two types).  Index 0 is "(untyped)": accesses outside every
 * live region.  Past a cap, new types share one "(other types)" entry.
 */
struct cacheray_type {
	const char *name; /* name_len bytes (may hold any byte), NUL after */
	uint32_t name_len, elemsize;
	uint64_t n[2];			 /* reads, writes */
	uint64_t regions;		 /* RTTA adds with this type */
	struct cacheray_member *members; /* elemsize entries, or NULL */
	bool special;			 /* "(untyped)" or "(other types)" */
	bool no_members; /* elemsize too big or counter budget spent */
};

struct cacheray_thread {
	uint64_t id;
	uint64_t n[2]; /* reads, writes */
	bool other;    /* the entry for threads past the cap */
};

struct cacheray_totals {
	uint64_t bytes_read; /* bytes consumed as complete records */
	uint64_t records, accesses, reads, writes;
	uint64_t atomics, unaligned;
	uint64_t atomic_rmw;   /* atomic WRITEs right after an atomic READ of
				  the same address by the same thread */
	uint64_t access_bytes; /* sum of the size fields */
	uint64_t cross_line;   /* accesses running past their 64-byte line */
	uint64_t untyped;      /* accesses outside every live region */
	uint64_t rtta_adds, rtta_removes;
	uint64_t rtta_live;
	uint64_t rtta_empty;	      /* adds of 0 elements (not mapped) */
	uint64_t rtta_overlaps;	      /* older regions dropped by a newer
					 overlapping add */
	uint64_t rtta_remove_unknown; /* removes of no live region's start */
	uint64_t rtta_full;	      /* adds refused: max_regions live */
	uint64_t lines, lines_max;
	uint64_t lines_dropped_accesses; /* accesses to lines past the cap */
	uint64_t threads_other, types_other; /* accesses counted as "other" */
};

/* Where the accesses on a line fall. */
enum cacheray_layout {
	CACHERAY_LAYOUT_UNTYPED,  /* all outside any region */
	CACHERAY_LAYOUT_ELEMENT,  /* one element of one region */
	CACHERAY_LAYOUT_ELEMENTS, /* several elements of one region */
	CACHERAY_LAYOUT_REGIONS,  /* several regions (or typed and untyped) */
};

/* The reports' word for a layout: "untyped", "one-element",
 * "diff-elements", "diff-regions" (the text report and the view; JSON has
 * its own names). */
const char *cacheray_layout_text(enum cacheray_layout l);

/* A cache line, decoded for reports. */
struct cacheray_line {
	uint64_t addr; /* the line's first byte */
	uint64_t reads, writes;
	unsigned nthreads; /* slots used, 0..2 */
	struct {
		const struct cacheray_thread *t;
		bool wrote;
		uint64_t bytes; /* bit i: byte i of the line touched */
	} thread[2];
	bool more_threads, more_threads_wrote;
	unsigned ntypes;
	const struct cacheray_type *type[2];
	bool more_types;
	enum cacheray_layout layout;
	/* Two thread slots, and the bytes they touched do not overlap: false
	 * sharing proper; overlapping bytes may be true sharing. */
	bool disjoint;
};

struct cacheray;

/* NULL when out of memory.  cfg may be NULL (defaults). */
struct cacheray *cacheray_create(const struct cacheray_config *cfg);
/* NULL is a no-op. */
void cacheray_destroy(struct cacheray *c);

/* Parse and count len more bytes.  False once a record could not be parsed
 * (or memory ran out): cacheray_error says why, and later calls do
 * nothing. */
bool cacheray_feed(struct cacheray *c, const void *buf, size_t len);

/* The error message ("byte N: ..."), with the offset of the bad record in
 * *offset; NULL when there was none. */
const char *cacheray_error(const struct cacheray *c, uint64_t *offset);
/* Bytes of an incomplete last record held (0: the input so far ends on a
 * record boundary); it starts at totals.bytes_read. */
size_t cacheray_pending(const struct cacheray *c);

void cacheray_totals(const struct cacheray *c, struct cacheray_totals *t);
size_t cacheray_ntypes(const struct cacheray *c);
const struct cacheray_type *cacheray_type_at(const struct cacheray *c,
					     size_t i);
size_t cacheray_nthreads(const struct cacheray *c);
const struct cacheray_thread *cacheray_thread_at(const struct cacheray *c,
						 size_t i);

/* The max lines with the most accesses (only lines written by one thread
 * and touched by another when shared_only), most first, decoded. */
size_t cacheray_top_lines(const struct cacheray *c, bool shared_only,
			  struct cacheray_line *out, size_t max);

#endif
