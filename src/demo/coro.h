/*
 * coro: one stackful coroutine of the demo, and the switch into and out of
 * it.
 *
 * A coroutine is a ucontext running on its own mmap'd stack (with a guard
 * page below it).  A host (a worker thread's scheduling loop) switches into a
 * coroutine with coro_switch_in(); the coroutine switches back to whichever
 * host resumed it with coro_switch_out().  Hosts may differ from one resume
 * to the next: that is the "M" in M:N.
 *
 * The switch functions carry the sanitizer fiber annotations (ASan's
 * __sanitizer_*_switch_fiber, TSan's __tsan_*_fiber) so that the demo stays
 * clean under -fsanitize=address,undefined and can run under TSan.
 *
 * Includers define _GNU_SOURCE (for <ucontext.h>) before any header.
 *
 * This file knows nothing about queues or the probe: the scheduler owns
 * every field below the "scheduler" line and records the transitions.
 */
#ifndef COROTOP_DEMO_CORO_H
#define COROTOP_DEMO_CORO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#include "corotop/probe.h"

struct coro;
struct worker;

typedef void coro_fn(void *arg);
/* Run by the host right after the coroutine switched out (see scheduler.c). */
typedef void coro_commit_fn(struct coro *co, void *arg);

/* The thread-side end of a switch: a worker's scheduling context. */
struct coro_host {
	ucontext_t ctx;
	void *asan_fake_stack; /* ASan: the host's saved fake stack */
	void *tsan_fiber;      /* TSan: the host thread's own fiber */
};

struct coro {
	ucontext_t ctx;
	void *map; /* mapping: guard page + stack */
	size_t map_size;
	void *stack; /* usable stack, above the guard page */
	size_t stack_size;
	coro_fn *fn;
	void *arg;
	bool finished;		/* fn returned; never resume again */
	struct coro_host *host; /* host of the current run */
	/* Sanitizer bookkeeping, used only by coro.c. */
	void *asan_fake_stack;
	const void *asan_host_bottom;
	size_t asan_host_size;
	void *tsan_fiber;

	/* ---- scheduler ---- */
	struct corotop_coro probe;
	struct worker *worker;	/* worker of the current run */
	uint64_t resume_addr;	/* where the next run continues */
	uint64_t park_addr;	/* where the last run parked */
	coro_commit_fn *commit; /* post-switch action of the last park */
	void *commit_arg;
	uint64_t wake_ns;      /* sleep: CLOCK_MONOTONIC deadline */
	uint64_t value;	       /* chan: value handed to a receiver */
	struct coro *next;     /* run queue / waiter list link */
	struct coro *all_prev; /* registry of live coroutines */
	struct coro *all_next;
};

/* Default usable stack size; plenty for the demo's shallow call chains. */
#define CORO_STACK_SIZE (64u * 1024u)

/* Allocate a coroutine that will run fn(arg); NULL with errno on failure. */
struct coro *coro_create(coro_fn *fn, void *arg, size_t stack_size);
/* Free a coroutine that is not running (finished or abandoned). */
void coro_destroy(struct coro *co);

/* Host side: bind the calling thread's host (once per thread). */
void coro_host_init(struct coro_host *h);
/* Host side: run co until it switches out. */
void coro_switch_in(struct coro *co, struct coro_host *h);
/* Coroutine side: give the CPU back to the host that resumed us. */
void coro_switch_out(struct coro *co);

#endif
