/*
 * ctxtable: the execution contexts the preload library knows -- one record
 * per context made by makecontext or make_fcontext, one per thread for the
 * thread's own stack (its root) -- and the two maps that find a record
 * from what a switch is given: the stack an fcontext_t points into, or the
 * ucontext_t a context was saved in.  See ctxtable.c.
 *
 * Records live in chunks mapped as the table grows, and never move: the
 * probe's registry and the cTP stations hold their addresses.  The switch
 * path allocates nothing, takes no lock and makes no syscall while the
 * table and its maps have room where it looks.
 */
#ifndef COROTOP_CTXTABLE_H
#define COROTOP_CTXTABLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corotop/probe.h"
#include "preload/addrmap.h"

#define CTXTABLE_NONE UINT32_MAX
/* Records per chunk, and the most a table can have (COROTOP_CONTEXTS). */
#define CTXTABLE_CHUNK_BITS 12u
#define CTXTABLE_CHUNK (1u << CTXTABLE_CHUNK_BITS)
#define CTXTABLE_MAX (1u << 24)

/* The stack-base filter's size in bits (128 KiB). */
#define CTXTABLE_BLOOM_BITS (1u << 20)

/* What a context record is for. */
enum ctx_kind {
	CTX_FREE = 0,
	CTX_UCONTEXT, /* made by makecontext */
	CTX_FCONTEXT, /* made by make_fcontext */
	CTX_ROOT,     /* a thread's own stack */
};

/* makecontext's entry and arguments (each a 64-bit greg_t, as glibc reads
 * them on x86-64), replayed by the trampoline; a call with more is not
 * traced (makecontext_x86_64.S). */
#define CTX_MAX_ARGS 32

struct ctx {
	struct corotop_coro coro; /* the probe's state for it */
	_Atomic uint32_t kind; /* enum ctx_kind; CTX_FREE: on the free list */
	_Atomic uint32_t next_free; /* while free: the next free record */
	/* Its stack, [stack_lo, stack_hi) (0, 0 for a root: unknown).  Read
	 * by any thread that finds the record through the page map, to tell
	 * a stale entry from a live one. */
	_Atomic uint64_t stack_lo, stack_hi;
	/* Where it was last saved (a ucontext_t, or the fcontext_t its last
	 * suspend made), or 0.  Read by any thread that resumes it, to check
	 * a lookup. */
	_Atomic uint64_t saved_key;
	/* The entry, for the trampolines (written before the context can
	 * run, read on it). */
	void (*entry)(void);
	int argc;
	uint64_t argv[CTX_MAX_ARGS];
	void *link; /* makecontext: ucp->uc_link */
	/* make_fcontext: the data the first switch to it passed (Boost's
	 * record of the context, which its exit passes to ontop_fcontext
	 * again); written on the context itself. */
	void *first_data;
};

struct ctxtable {
	/* Chunks of CTXTABLE_CHUNK records, mapped when first needed. */
	_Atomic(struct ctx *) chunk[CTXTABLE_MAX / CTXTABLE_CHUNK];
	uint32_t cap; /* records at most */
	/* Free records: a Treiber stack of indexes, its head tagged against
	 * ABA (upper 32 bits: a counter; lower: the index), and the records
	 * never used yet, from `fresh` up. */
	_Atomic uint64_t free_head;
	_Atomic uint32_t fresh;
	_Atomic uint64_t next_id;   /* probe ids handed out */
	_Atomic uint64_t untracked; /* contexts not tracked: table full */
	_Atomic uint32_t live;	    /* records in use */
	struct addrmap by_page;	    /* a stack's pages -> its record */
	/* A Bloom filter of the stacks' lowest addresses: set by
	 * ctxtable_set_stack, never cleared, so that free() asks the page
	 * map only for a block that may be a stack (ctxtable_maybe_base). */
	_Atomic uint64_t base_bloom[CTXTABLE_BLOOM_BITS / 64];
	struct addrmap by_uc; /* a ucontext_t -> the record saved in it */
	/* Bumped by every ctxtable_set_stack, after its pages are in the
	 * map: a page that no made context's stack held at one value may
	 * be one's only once it has moved (ctxtable_stacks_gen).  On a line
	 * of its own: makers write it, every thread's switches read it. */
	_Atomic uint64_t stacks_gen __attribute__((aligned(64)));
};

/* Room for `cap` contexts (at most CTXTABLE_MAX), mapped as they come.
 * False when the maps' top levels cannot be had. */
bool ctxtable_init(struct ctxtable *t, uint32_t cap);
void ctxtable_finish(struct ctxtable *t);

/* Record i (allocated once, so its chunk exists). */
static inline struct ctx *ctxtable_ctx(const struct ctxtable *t, uint32_t i)
{
	/* relaxed: a chunk pointer is published (release) before any index
	 * in it is handed out, and the hand-over orders it. */
	struct ctx *c = atomic_load_explicit(
		&((struct ctxtable *)t)->chunk[i >> CTXTABLE_CHUNK_BITS],
		memory_order_relaxed);

	return &c[i & (CTXTABLE_CHUNK - 1)];
}

/* A free record, kind set and probe state zeroed, or CTXTABLE_NONE (the
 * table is full, or its next chunk could not be mapped: the context is not
 * tracked; counted in untracked). */
uint32_t ctxtable_alloc(struct ctxtable *t, enum ctx_kind kind);
/* Back to the free list (its probe state closed by the caller); a record
 * already free is left as it is. */
void ctxtable_free(struct ctxtable *t, uint32_t i);

/* Record i's stack is [lo, hi): the page map says so.  False when a level
 * of the map could not be mapped (the context is then found by its saved
 * key only). */
bool ctxtable_set_stack(struct ctxtable *t, uint32_t i, uint64_t lo,
			uint64_t hi);
/* The live record whose stack holds addr, or whose last suspend saved
 * exactly addr (a root, whose stack is unknown); CTXTABLE_NONE. */
uint32_t ctxtable_by_stack(const struct ctxtable *t, uint64_t addr);

/* How many stacks were set so far: an answer of ctxtable_by_stack that
 * named no made context stands while this has not moved. */
static inline uint64_t ctxtable_stacks_gen(const struct ctxtable *t)
{
	/* relaxed: a hint that orders nothing; the map's own acquire
	 * orders what a lookup reads. */
	return atomic_load_explicit(&t->stacks_gen, memory_order_relaxed);
}

/* The filter's bit for a stack whose lowest address is lo. */
static inline uint32_t ctxtable_base_bit(uint64_t lo)
{
	return (uint32_t)((lo * 0x9e3779b97f4a7c15ull) >> 44) &
	       (CTXTABLE_BLOOM_BITS - 1);
}

/* False when no stack ever registered starts at p (one load: free()'s
 * path for every block that is not a stack); true when one may. */
static inline bool ctxtable_maybe_base(const struct ctxtable *t, uint64_t p)
{
	uint32_t b = ctxtable_base_bit(p);

	/* relaxed: the program's own synchronization orders the making of a
	 * context before the free of its stack on another thread. */
	return (atomic_load_explicit(&t->base_bloom[b / 64],
				     memory_order_relaxed) >>
		(b % 64)) &
	       1u;
}

/* The live record whose stack starts exactly at lo (not a root), or
 * CTXTABLE_NONE. */
uint32_t ctxtable_by_base(const struct ctxtable *t, uint64_t lo);
/* A root's suspend saved at addr, on its thread's own stack: the page map
 * finds it there (no other record's stack is on that page; a live made
 * context's page is left as it is). */
void ctxtable_root_saved_at(struct ctxtable *t, uint32_t i, uint64_t addr);

/* Record i was saved in the ucontext_t at ucp; the live record last saved
 * there, or CTXTABLE_NONE. */
void ctxtable_set_uc(struct ctxtable *t, uint32_t i, uint64_t ucp);
uint32_t ctxtable_by_uc(const struct ctxtable *t, uint64_t ucp);

#endif
