/*
 * hephfile: a Heph trace file read for replay and conversion -- mapped,
 * its packets indexed on open (where each event is, its stream, substream
 * and times), problems recorded with their byte offsets, and reading going
 * on past a lying packet where the next one can be found.  A compressed
 * recording (zstd frames, hephzst.h) reads the same.  See hephfile.c
 * (and hephindex.c, the walk that builds the index).
 */
#ifndef COROTOP_HEPHFILE_H
#define COROTOP_HEPHFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/heph/heph.h"

#define HEPHFILE_PROBLEMS 32
#define HEPHFILE_META_MAX (1u << 24)
/* A compressed file may decompress to at most this many times its size,
 * plus HEPHFILE_ZST_FLOOR: a recording compresses about 7 times, a
 * decompression bomb thousands (each frame's own ratio is capped in
 * hephzst.c, but frames can be many).  COROTOP_ZST_RATIO in the
 * environment raises (or lowers) the factor. */
#define HEPHFILE_ZST_RATIO 32u
#define HEPHFILE_ZST_FLOOR ((uint64_t)16 << 20)

struct heph_problem {
	uint64_t off; /* byte offset of the packet (or of the bytes) */
	char what[120];
};

/* The descriptions corotop's recordings use, recognized while the index
 * is built (the packet is in cache then), so that replay can sort events
 * without reading the file again. */
enum heph_desc {
	HEPH_DESC_OTHER = 0,
	HEPH_DESC_RUNNING,   /* "running" */
	HEPH_DESC_SUSPENDED, /* "suspended" */
	HEPH_DESC_LOST,	     /* "lost" */
};

/* One event of the file, as the index keeps it (48 bytes). */
struct heph_ref {
	uint64_t off; /* of its packet (compressed file: in the Heph bytes) */
	uint64_t start, end;
	uint64_t substream;
	uint32_t stream;
	uint32_t counter;
	uint32_t size; /* of its packet */
	uint32_t kind; /* enum heph_desc, told while the packet was read */
};

struct heph_zst;

struct heph_file {
	/* The whole file, read-only.  A compressed one (zstd frames,
	 * hephzst.h): only the options the index keeps, one after the other
	 * (meta_off are offsets in it); its events are read through zst. */
	const uint8_t *map;
	size_t size;
	struct heph_zst *zst; /* a compressed file's frames, or NULL */
	bool have_epoch;
	uint64_t epoch_ns;   /* the last `epoch` option seen */
	struct heph_ref *ev; /* events in file order */
	size_t nev;
	uint32_t *by_start; /* indexes into ev, by start time (stable); NULL
			       until heph_file_sort with HEPH_FILE_NOSORT */
	uint64_t max_start; /* the latest start */
	bool in_order;	    /* the events are in start order in the file */
	uint64_t first_start, last_end; /* over every event */
	size_t nmeta;			/* metadata packets (options) */
	/* Offsets of the options other than epoch (the first
	 * HEPHFILE_META_MAX), for readers of their own (hephnames.c). */
	uint64_t *meta_off;
	size_t nmeta_off, cap_meta_off;
	size_t unknown_options;
	struct heph_problem problems[HEPHFILE_PROBLEMS];
	size_t nproblems;	/* recorded (at most HEPHFILE_PROBLEMS) */
	size_t problems_total;	/* seen */
	uint64_t skipped_bytes; /* bytes passed over to find a packet */
	bool truncated;		/* the file ends inside a packet */
	bool mapped;		/* map is ours to unmap (heph_file_open) */
};

/* Flags of the _flags variants. */
#define HEPH_FILE_NOSORT 1u /* no by_start until heph_file_sort */

/* Map and index path.  False with a message when it can not be read at
 * all; a file with problems opens (they are listed in f->problems). */
bool heph_file_open(struct heph_file *f, const char *path, char *err,
		    size_t errlen);
bool heph_file_open_flags(struct heph_file *f, const char *path, unsigned flags,
			  char *err, size_t errlen);
void heph_file_close(struct heph_file *f);
/* Order the events by start time (by_start), if that is not done yet.
 * False with a message only when memory runs out. */
bool heph_file_sort(struct heph_file *f, char *err, size_t errlen);
/* What open does once the file is mapped: index the size bytes at p (they
 * must stay there while f is used; close does not free them).  False with
 * a message only when memory runs out.  For tests and the fuzzer. */
/* Files at least this large are walked in two halves at once (64 MiB;
 * tests set it lower to split small files). */
extern size_t heph_file_split_min;
/* Tests: called once the split is found, before the two walks start (to
 * truncate the file under them).  NULL in corotop. */
extern void (*heph_file_split_hook)(void);
/* Tests: called after each frame of a compressed file is walked (to
 * truncate the file under the next).  NULL in corotop. */
extern void (*heph_file_frame_hook)(void);

bool heph_file_index_bytes(struct heph_file *f, const uint8_t *p, size_t size,
			   char *err, size_t errlen);
bool heph_file_index_bytes_flags(struct heph_file *f, const uint8_t *p,
				 size_t size, unsigned flags, char *err,
				 size_t errlen);

/* Decode event i (file order); false when it no longer decodes.  A
 * compressed file's packet points into its cache of decompressed frames:
 * valid until HEPH_ZST_CACHE other frames were read, and one thread reads
 * a compressed file at a time. */
bool heph_file_event(const struct heph_file *f, size_t i,
		     struct heph_packet *out);
/* Decode metadata packet i (meta_off order; a compressed file keeps its
 * options in memory, so f->map holds them); false when it does not
 * decode as one. */
bool heph_file_option(const struct heph_file *f, size_t i,
		      struct heph_packet *out);
/* The first position in by_start whose event starts at or after t
 * (by_start must be there: heph_file_sort). */
size_t heph_file_seek(const struct heph_file *f, uint64_t t);

#endif
