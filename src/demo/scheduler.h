/*
 * scheduler: the demo's M:N scheduler, instrumented with the corotop probe.
 *
 * N worker threads each own a run queue (mutex + condition variable); an
 * idle worker steals from the others before it sleeps.  Any number of
 * stackful coroutines (coro.h) are multiplexed onto the workers and migrate
 * between them freely.
 *
 * A coroutine gives up the CPU only by parking: it names a commit action
 * (requeue, sleep, wait on a channel) and switches out; the worker runs the
 * commit after the switch, once the coroutine's stack is no longer in use.
 * Nothing can resume a coroutine before its worker has finished with it, so
 * no wakeup can race a half-finished switch.
 *
 * Probe contract, all recorded by the worker thread:
 *   spawn          corotop_coro_open_named(probe_id = coroutine address,
 *                  its role's name), then
 *                  corotop_coro_set_stack(the coroutine's stack)
 *   before switch  corotop_coro_resume(addr = entry function, then the park
 *                  address it continues from)
 *   park           corotop_coro_suspend(addr = return address of the park
 *                  call: the caller of demo_yield/demo_sleep/chan_recv),
 *                  on the coroutine's own stack just before it switches
 *                  out, so that the probe's parked stack (when on) is the
 *                  coroutine's
 *   finish         corotop_coro_suspend(addr = entry function) by the
 *                  worker after the last switch, then corotop_coro_close
 */
#ifndef COROTOP_DEMO_SCHEDULER_H
#define COROTOP_DEMO_SCHEDULER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "demo/coro.h"

struct scheduler;

struct scheduler_stats {
	uint64_t spawned;
	uint64_t finished;
	uint64_t switches; /* runs of a coroutine: one resume + one suspend */
	uint64_t alive;
};

/* NULL with errno on failure.  Threads start with scheduler_start(). */
struct scheduler *scheduler_create(unsigned threads, size_t stack_size);
/* After scheduler_stop(): closes and frees every coroutine still alive. */
void scheduler_destroy(struct scheduler *s);
/* 0 or negative errno; on failure the threads already started are stopped. */
int scheduler_start(struct scheduler *s);
/* Stop the workers and the timer thread and join them; idempotent. */
void scheduler_stop(struct scheduler *s);
/* True once scheduler_stop() began; coroutines may poll it. */
bool scheduler_stopping(struct scheduler *s);
/* Create a coroutine running fn(arg), runnable at once.  Any thread. */
int scheduler_spawn(struct scheduler *s, coro_fn *fn, void *arg);
/* The same, named for corotop: name and flags as corotop_coro_open_named
 * takes them (COROTOP_NAME_STATIC keeps the pointer, COROTOP_NAME_COPY
 * copies the text). */
int scheduler_spawn_named(struct scheduler *s, coro_fn *fn, void *arg,
			  const char *name, unsigned flags);
/* Make a parked coroutine runnable.  Any thread; one call per park. */
void scheduler_ready(struct scheduler *s, struct coro *co);
/* Counters; exact once scheduler_stop() returned. */
void scheduler_stats(struct scheduler *s, struct scheduler_stats *out);

/* ---- coroutine context only ---- */

/* The calling coroutine. */
struct coro *scheduler_self(void);
/* Park at addr; the worker calls commit(self, arg) after the switch. */
void scheduler_park(coro_commit_fn *commit, void *arg, uint64_t addr);
/* Let the others run; back on the run queue at once. */
void demo_yield(void);
/* Sleep for ms milliseconds on the sleep queue (an I/O-like wait). */
void demo_sleep(unsigned ms);

/* Address of the caller of the function that uses it, for park sites. */
#define DEMO_CALLER_ADDR() ((uint64_t)(uintptr_t)__builtin_return_address(0))

/* noinline and no clones: burn_* and wait sites keep their own symbol. */
#if defined(__clang__)
#define DEMO_NOINLINE __attribute__((noinline))
#else
#define DEMO_NOINLINE __attribute__((noinline, noclone))
#endif

/* Keeps a call in tail position from becoming a jump, so that the callee's
 * return address still points into the caller. */
#define DEMO_NO_TAILCALL() __asm__ volatile("" ::: "memory")

#endif
