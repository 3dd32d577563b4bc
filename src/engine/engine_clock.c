/*
 * engine_clock: the engine's one clock -- CLOCK_MONOTONIC while the target
 * runs, stopped at the moment its exit was seen, so the final state stays
 * as it was (dead rows do not expire, ages do not grow).  engine_now reads
 * it; engine_mark_exit stops it (once: the first exit seen wins).
 */
#include <stdatomic.h>

#include "engine/engine_internal.h"

#include "common/clock.h"

uint64_t engine_now(struct engine *e)
{
	/* relaxed: a value on its own; the lock orders what goes with it. */
	uint64_t x = atomic_load_explicit(&e->exit_ns, memory_order_relaxed);

	return x ? x : clock_now_ns(CLOCK_MONOTONIC);
}

void engine_mark_exit(struct engine *e)
{
	engine_mark_exit_at(e, clock_now_ns(CLOCK_MONOTONIC));
}

void engine_mark_exit_at(struct engine *e, uint64_t ns)
{
	uint64_t zero = 0;

	/* relaxed: see engine_now; the first exit seen wins. */
	if (atomic_compare_exchange_strong_explicit(
		    &e->exit_ns, &zero, ns ? ns : 1, memory_order_relaxed,
		    memory_order_relaxed))
		/* The rates up to the exit, at once: every snapshot from
		 * the first that says "exited" shows the same final state
		 * (later ticks, at the stopped clock, change no rate). */
		model_tick(&e->model, engine_now(e));
	e->target.running = false;
	e->target.exited = true;
}
