/*
 * ctxtable: the execution contexts the preload library knows -- one record
 * per context made by makecontext or make_fcontext, one per thread for the
 * thread's own stack (its root) -- and the lock-free maps that find a
 * record from what a switch is given (a ucontext_t pointer, or the saved
 * stack pointer an fcontext_t is).  See ctxtable.c.
 *
 * Everything is allocated once, at load, by ctxtable_init: the switch path
 * allocates nothing, takes no lock and makes no syscall.
 */
#ifndef COROTOP_CTXTABLE_H
#define COROTOP_CTXTABLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "corotop/probe.h"

#define CTXTABLE_NONE UINT32_MAX

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
	uint64_t stack_key;	    /* its key in the stack map, or 0 */
	/* Where it was last saved (a ucontext_t, or the fcontext_t its last
	 * suspend made): its key in the pointer map, or 0.  Read by any
	 * thread that resumes it, to check a cached lookup. */
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

/* A map from a pointer-sized key (never 0) to a record index. */
struct ctxmap {
	_Atomic uint64_t *key;	 /* 0: never used; CTXMAP_TOMB: removed */
	_Atomic uint32_t *value; /* record index */
	uint32_t mask;		 /* slots - 1 */
};

struct ctxtable {
	struct ctx *ctx;
	uint32_t cap;
	/* Free records: a Treiber stack of indexes, its head tagged against
	 * ABA (upper 32 bits: a counter; lower: the index), and the records
	 * never used yet, from `fresh` up (so that a table of 65536 touches
	 * only the pages of the records a program uses). */
	_Atomic uint64_t free_head;
	_Atomic uint32_t fresh;
	_Atomic uint64_t next_id; /* probe ids handed out */
	_Atomic uint64_t dropped; /* contexts not tracked: table full */
	struct ctxmap by_ptr;	  /* ucontext_t * or fcontext_t -> record */
	struct ctxmap by_stack;	  /* a stack's top address -> record */
};

/* Room for `cap` contexts (each map gets 4x the slots).  False when the
 * memory cannot be had. */
bool ctxtable_init(struct ctxtable *t, uint32_t cap);
void ctxtable_finish(struct ctxtable *t);

/* A free record, kind set and probe state zeroed, or CTXTABLE_NONE (the
 * table is full: the context is not tracked; counted in dropped). */
uint32_t ctxtable_alloc(struct ctxtable *t, enum ctx_kind kind);
/* Back to the free list (its probe state closed by the caller). */
void ctxtable_free(struct ctxtable *t, uint32_t i);

/* The maps.  put replaces the value of a present key. take returns and
 * removes. */
bool ctxmap_put(struct ctxmap *m, uint64_t key, uint32_t value);
uint32_t ctxmap_get(const struct ctxmap *m, uint64_t key);
uint32_t ctxmap_take(struct ctxmap *m, uint64_t key);

#endif
