/*
 * ppt_internal: the probe's ppt client behind include/corotop/ppt.h, as its
 * translation units share it.  Never installed.
 *
 *   pptlayout.c    frame types -> wire layout, copy plans, JSON description
 *   pptmap.c       the client's shared-memory mappings (attach, retire,
 *                  reuse of retired address ranges)
 *   pptcounters.c  the perf counters the agent asks for (per-thread fds)
 *   ppt.c          the client: attach, detach, resize, save, stats
 *
 * The late-attach code of the probe drives its own buffer through
 * ppt_client_init (its own tag, hooks) and ppt_client_poll.
 */
#ifndef COROTOP_PPT_INTERNAL_H
#define COROTOP_PPT_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corotop/ppt.h"

/* ---- internal API (used by the probe's late-attach code) ---- */

struct ppt_client_hooks {
	/* After an attach is complete: the control segment as mapped. */
	void (*attached)(struct corotop_ppt_buffer *b, const void *ctl_segment,
			 size_t segment_size, void *ctx);
	/* Before the segments are let go. */
	void (*detached)(struct corotop_ppt_buffer *b, void *ctx);
	void *ctx;
};

/*
 * corotop_ppt_buffer_init with the value of the {"key":"corotop"} tag
 * (NULL: "client/1") and hooks (may be NULL; copied).  The hooks run on the
 * thread that performs the transition, with the transition lock held.
 */
int ppt_client_init(struct corotop_ppt_buffer *b,
		    const struct corotop_ppt_frame_type *t, unsigned ntypes,
		    unsigned flags, const char *tag_value,
		    const struct ppt_client_hooks *hooks);
/* Run the attach/detach/resize check without saving; true while
 * attached.  Never waits: a transition under way elsewhere is left to it. */
bool ppt_client_poll(struct corotop_ppt_buffer *b);

/* ---- pptlayout.c ---- */

#define PPT_MAX_TYPES 16u
#define PPT_MAX_MEMBERS 32u
#define PPT_NAME_MAX 47u
#define PPT_TAG_VALUE_MAX 64u

/* One memcpy of a save: caller's struct [src, src+len) -> frame [dst...). */
struct ppt_copy {
	uint32_t src;
	uint16_t dst;
	uint16_t len;
};

/* How one frame type is saved. */
struct ppt_plan {
	const struct ppt_copy *ops;
	uint32_t nops;
	uint32_t discrim; /* 1-based type, 0: no discriminator word */
};

struct ppt_layout {
	uint32_t frame_size; /* bytes, every type */
	uint32_t back_off;   /* the back seqno */
	uint32_t ntypes;
	struct ppt_plan plans[PPT_MAX_TYPES];
	struct ppt_copy *ops; /* every plan's ops, one allocation */
	char *json;	      /* the description, NUL-terminated */
};

/*
 * Validate the types, lay them out, build the copy plans and the JSON.
 * Returns 0, -EINVAL (a bad name, type, count or offset) or -ENOMEM; on
 * failure *l holds nothing to free.
 */
int ppt_layout_build(struct ppt_layout *l, const char *bufname,
		     const struct corotop_ppt_frame_type *t, unsigned ntypes,
		     unsigned flags, const char *tag_value);
void ppt_layout_finish(struct ppt_layout *l);
/* [A-Za-z_][A-Za-z0-9_]*, 1..PPT_NAME_MAX bytes. */
bool ppt_name_valid(const char *s);

/* ---- pptmap.c ---- */

/*
 * Address ranges the client has mapped segments at.  A range is never
 * unmapped while the client lives: retiring a segment replaces its pages
 * with private anonymous ones in place (a late writer scribbles on zero
 * pages), and a later attach maps a segment that fits over a retired range
 * (SHM_REMAP).  When the table is full, the smallest retired range is
 * forgotten (it stays mapped: a stale writer can never fault).
 */
#define PPT_MAP_RANGES 8u

struct ppt_range {
	void *addr;
	size_t len; /* page-rounded length of the whole range */
	bool busy;  /* a segment is attached there */
};

struct ppt_maps {
	struct ppt_range r[PPT_MAP_RANGES];
};

/* Attach shm `id` of `size` bytes read-write; NULL on failure (errno). */
void *ppt_map_attach(struct ppt_maps *m, int id, size_t size);
/* Let go of the segment at addr (from ppt_map_attach) without unmapping
 * the range; false when the pages could not be replaced (the segment then
 * stays attached and the range is forgotten). */
bool ppt_map_retire(struct ppt_maps *m, void *addr);
/* Unmap every range (no writer may still be running). */
void ppt_map_finish(struct ppt_maps *m);

/* ---- pptcounters.c ---- */

/*
 * The perf counters of the current attachment, seqlock-published to the
 * threads that read them: gen is odd while the attrs change, else a value
 * unique in the process (so a thread's cached fds can never match another
 * attachment's).
 */
struct ppt_counters {
	_Atomic uint64_t gen;
	_Atomic uint32_t n; /* counters asked for, 0..3 */
	_Atomic uint64_t attr[PPT_MAX_COUNTERS][PPT_PERF_ATTR_SIZE / 8];
};

/* At attach (transition lock held): copy the agent's attrs from the
 * control block, check them, open each on this thread to test; true when
 * all n opened.  Sets *n to what was asked for (0 for a bad request). */
bool ppt_counters_setup(struct ppt_counters *k, const struct ppt_control *ctl,
			uint32_t *n);
/* At detach: no counters. */
void ppt_counters_clear(struct ppt_counters *k);
/* This thread's values; returns how many counted. */
unsigned ppt_counters_read(struct ppt_counters *k, uint64_t v[3]);

#endif
