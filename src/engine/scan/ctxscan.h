/*
 * ctxscan: the parked Boost.Context contexts of a process that was never
 * prepared, found by reading its memory.  See ctxscan.c.
 */
#ifndef COROTOP_ENGINE_SCAN_CTXSCAN_H
#define COROTOP_ENGINE_SCAN_CTXSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fcsave_layout;

/* One mapping of the target (its /proc/PID/maps line). */
#define CTXSCAN_R 1u
#define CTXSCAN_W 2u
#define CTXSCAN_X 4u

struct ctxscan_region {
	uint64_t lo, hi; /* [lo, hi) */
	unsigned flags;	 /* CTXSCAN_R, _W, _X */
};

/* How the scan reads the target. */
struct ctxscan_reader {
	/* n bytes at addr into buf; false when they cannot all be read. */
	bool (*read)(void *ctx, uint64_t addr, void *buf, size_t n);
	/* Whether pc is a return address: in code, right after a call
	 * (framecheck_frame's rule).  Only asked of a pc that lies in an
	 * executable region. */
	bool (*after_call)(void *ctx, uint64_t pc);
	void *ctx;
};

/* A parked context: a saved area of the layout (in one writable region
 * with the sp after it, its return address right after a call, its saved
 * MXCSR plausible; its frame pointer not judged, so fcsave_check may
 * refuse what the scan found), whose address (the fcontext_t) some word
 * of writable memory outside the area and outside dead stack holds.  A
 * context made but never started (make_fcontext's trampoline in the pc
 * slot, after no call) is not found. */
struct ctxscan_found {
	uint64_t at;		     /* the fcontext_t */
	uint64_t sp, fp, pc;	     /* where a walk of it starts */
	uint64_t pc_at;		     /* where its saved pc lies */
	uint64_t stack_lo, stack_hi; /* the writable region it lies in */
	uint64_t stored_at;	     /* the lowest address holding `at` */
	uint32_t stored;	     /* how many words hold it */
	/* Every word that holds it lies just below it, in its own region
	 * (within CTXSCAN_NEAR): maybe an old frame's pointer to its
	 * caller's locals, in dead stack -- not proven live. */
	bool unsure;
	/* A ucontext_t at `at` (CTXSCAN_INPUT ucontext), not a saved area:
	 * kept by itself (stored 1, stored_at = at), sp from its gregs. */
	bool ucontext;
};

/* "Just below" an area: the reach of a frame's pointer to its caller's
 * locals. */
#define CTXSCAN_NEAR 4096u

struct ctxscan_stats {
	uint64_t regions;     /* writable regions read */
	uint64_t bytes;	      /* bytes pass 1 read (chunks overlap by 64) */
	uint64_t unread;      /* ... that could not be read (pass 1) */
	uint64_t skipped;     /* ... in regions past CTXSCAN_REGION_MAX */
	uint64_t areas;	      /* saved areas that pass the checks */
	uint64_t areas_lost;  /* ... more than the scan keeps */
	uint64_t dead;	      /* ... in dead stack: not kept */
	uint64_t running;     /* ... in running frames: not kept */
	uint64_t not_stored;  /* areas whose address nothing holds */
	uint64_t found;	      /* areas whose address something holds */
	uint64_t unsure;      /* ... of those written, unsure ones */
	uint64_t found_lost;  /* ... more than `max` */
	uint64_t code_checks; /* after_call asked */
	uint64_t ucontexts;   /* ucontext_t that pass the checks */
	uint64_t moved;	      /* ... whose stack no longer holds their pc */
	bool oom;	      /* the scan's own memory was refused */
	bool refused;	      /* the input was refused: too many ranges,
			       * no layout it can read, out NULL */
};

/* At most this many saved areas are kept between the two passes. */
#define CTXSCAN_AREAS_MAX (1u << 20)
/* A writable region larger than this is a reservation (a sanitizer's
 * shadow, a collector's arena: terabytes, nearly all never touched), not
 * read: its bytes are counted skipped. */
#define CTXSCAN_REGION_MAX (16ull << 30)
/* Regions of a maps text taken (more: an error). */
#define CTXSCAN_REGIONS_MAX 65536u

/* A range of addresses, [lo, hi). */
struct ctxscan_range {
	uint64_t lo, hi;
};

/* What a scan reads. */
struct ctxscan_input {
	const struct ctxscan_region *regions; /* any order, may overlap */
	size_t nregions;
	/* Dead stack: below each running thread's sp, down to its stack's
	 * start.  Areas there are old parks, and a word there keeps
	 * nothing (the red zone's 128 bytes are the running leaf
	 * function's scratch, which keeps no parked context).  Any order. */
	const struct ctxscan_range *dead;
	size_t ndead;
	/* Running frames: from a running thread's sp up to its stack's
	 * top, when that stack is the thread's own mapping.  Its frames'
	 * return address slots look like areas, so areas there are not
	 * taken; its words keep (a running frame holds the handles it will
	 * resume).  Any order. */
	const struct ctxscan_range *running;
	size_t nrunning;
	/* The saved areas' layout, or NULL: none looked for. */
	const struct fcsave_layout *layout;
	/* Also look for glibc's ucontext_t as swapcontext and getcontext
	 * fill it (x86_64 glibc only): its fpregs pointer points into
	 * itself, its saved pc right after a call. */
	bool ucontext;
	struct ctxscan_reader reader;
};

/*
 * The saved areas of in->layout in the writable regions that some word of
 * writable memory (outside the area, outside dead stack) points at: into
 * out, at most max, lowest address first.  Returns how many were
 * written; *st (may be NULL) counts the rest.  Out of memory: 0, with
 * st->oom set; input refused (more than CTXSCAN_REGIONS_MAX of a kind of
 * range, a layout it cannot read, out NULL with max): 0, with
 * st->refused set.  The regions may lie (a maps text is the target's):
 * their bounds are taken to whole words, overlaps cut.
 */
size_t ctxscan_fcontext(const struct ctxscan_input *in,
			struct ctxscan_found *out, size_t max,
			struct ctxscan_stats *st);

/*
 * A waiting thread whose sp is `sp` (procfs_thread_sps): the writable
 * region that holds it, split there -- below it into *dead, from it up
 * into *running (running frames: when the region is the thread's own
 * stack, which the caller knows).  false when no writable region holds
 * sp.
 */
bool ctxscan_split(const struct ctxscan_region *r, size_t n, uint64_t sp,
		   struct ctxscan_range *dead, struct ctxscan_range *running);

/*
 * A maps text's regions (untrusted: malformed lines are skipped) into
 * out, at most max; the count of lines taken.  [vsyscall] and
 * [vvar] are skipped: they can not be read.
 */
size_t ctxscan_regions(const char *maps, size_t len, struct ctxscan_region *out,
		       size_t max);

#endif
