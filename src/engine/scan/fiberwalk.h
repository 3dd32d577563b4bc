/*
 * fiberwalk: Boost.Fiber's own lists read from a process's memory -- each
 * scheduler's fibers and what each waits for -- from the contexts a scan
 * found.  See fiberwalk.c.
 */
#ifndef COROTOP_ENGINE_SCAN_FIBERWALK_H
#define COROTOP_ENGINE_SCAN_FIBERWALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/scan/ctxscan.h"

/* Where boost::fibers::context and scheduler keep what the walk reads,
 * for one build of libboost_fiber (checked against its headers by
 * unit-fiberwalk). */
struct fiberwalk_layout {
	const char *lib;  /* the mapped file's name */
	const char *arch; /* for people */
	uint32_t ctx_size;
	uint32_t remote_ready_hook, terminated, wait_hook, scheduler;
	uint32_t sleep_hook, ready_hook, worker_hook, c, type;
	uint32_t sched_size;
	uint32_t worker_queue, dispatcher_ctx, main_ctx;
};

/* The layout of the one libboost_fiber a maps text maps, when this
 * corotop knows it; NULL otherwise (none, two, or another build). */
const struct fiberwalk_layout *fiberwalk_layout_in_maps(const char *maps);
/* The layouts known, for tests: the one named (NULL: none). */
const struct fiberwalk_layout *fiberwalk_layout_named(const char *lib);

/* What a fiber is doing, from its hooks. */
enum fiberwalk_state {
	FIBERWALK_RUNNING,    /* its context is in use (c_ empty) */
	FIBERWALK_READY,      /* in a ready queue, local or remote */
	FIBERWALK_WAITING,    /* in a wait queue, with no deadline */
	FIBERWALK_SLEEPING,   /* in the sleep queue: it has a deadline */
	FIBERWALK_TERMINATED, /* ended, not yet freed */
	FIBERWALK_SUSPENDED,  /* in none of them (a custom suspension) */
};

/* boost::fibers::type's bits. */
#define FIBERWALK_MAIN 2u
#define FIBERWALK_DISPATCHER 4u
#define FIBERWALK_WORKER 8u

struct fiberwalk_fiber {
	uint64_t ctx;	/* the boost::fibers::context */
	uint64_t fctx;	/* its saved fcontext_t (0: running) */
	uint64_t sched; /* its scheduler */
	uint32_t type;	/* FIBERWALK_MAIN, ... */
	enum fiberwalk_state state;
};

struct fiberwalk_stats {
	uint32_t schedulers; /* found and checked */
	uint32_t fibers;     /* listed by them */
	uint32_t rejected;   /* candidates that were no context */
	bool cut;	     /* a list longer than max, or broken */
};

/*
 * The schedulers the found contexts lead to (a context is looked for
 * where each one's fcontext_t is kept: context::c_), each checked (its
 * main and dispatcher contexts point back at it), and every context they
 * list -- main, dispatcher, and the worker queue -- into out, at most
 * max, sorted by fctx.  Memory is read only through rd.  The count.
 */
size_t fiberwalk_run(const struct fiberwalk_layout *l,
		     const struct ctxscan_reader *rd,
		     const struct ctxscan_found *found, size_t nfound,
		     struct fiberwalk_fiber *out, size_t max,
		     struct fiberwalk_stats *st);

/* The fiber whose saved fcontext_t is fctx, in a sorted out; NULL: none. */
const struct fiberwalk_fiber *fiberwalk_find(const struct fiberwalk_fiber *f,
					     size_t n, uint64_t fctx);

#endif
