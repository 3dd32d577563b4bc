/*
 * census: the engine's side of the census -- a coroutine a late
 * attach found (the probe's census event, src/probe/census.c) enters the
 * model in the state it was in, since the time it entered it, and when
 * that is a suspend, with its parked stack: walked here, in the target's
 * memory, from the frame record the probe kept (engine/target/stackwalk),
 * each frame a return address into the target's code (framecheck.c: a
 * stack freed and reused since holds junk, which ends the walk),
 * and kept with the parked stacks under an id of the engine's own
 * (parked_own_id), so that the detail view, batch JSON, the hot stacks'
 * liveness list and a recording see it like a stack captured live.
 *
 * Runs on the harvest thread under the engine lock, before the pass that
 * delivered the event ends: the first snapshot that shows the coroutine
 * shows its stack.  The walk needs the target's memory, which only attach
 * mode has (the probe's census only runs there); it costs one or two
 * process_vm_readv per parked coroutine, once, at the attach.
 */
#define _GNU_SOURCE
#include "engine/stacks/stacks_internal.h"

#include <string.h>
#include "engine/calltrace/parked.h"
#include "engine/target/stackwalk.h"
#include "corotop/calltrace.h"

/* Frames kept of a census stack (as many as the probe's parked stacks). */
#define STACKS_CENSUS_FRAMES STACKS_UNWIND_MAX

/* Whether a walk of n frames ends in a thread's start (start_thread, or
 * the main thread's __libc_start_call_main): the context is that thread's
 * own, its root.  Asked of a context a memory scan found, whose kind no
 * probe told: its outermost frames (clone3 may follow start_thread). */
static bool stacks_census_root(struct stacks *sk, const uint64_t *frames,
			       size_t n)
{
	static const char *const starts[] = {
		"start_thread", "__libc_start_call_main", "__libc_start_main"};
	struct symtab_sym sym;

	for (size_t k = n > 3 ? n - 3 : 0; k < n; k++) {
		if (!frames[k] ||
		    !symtab_lookup(sk->env.symtab, frames[k] - 1, &sym))
			continue;
		for (size_t i = 0; i < sizeof(starts) / sizeof(*starts); i++)
			if (!strcmp(sym.function, starts[i]))
				return true;
	}
	return false;
}

/* The parked stack of a census event, kept; its id, or 0.  WHERE becomes
 * the first frame of the program's own code in it when the switch was
 * recorded in a runtime's (model_where). */
static uint64_t stacks_census_stack(struct stacks *sk,
				    const struct harvest_event *ev)
{
	struct stackwalk_start s = {
		.sp = ev->where.sp,
		.fp = ev->where.fp,
		.pc = ev->where.pc,
		.stack_lo = ev->where.stack_lo,
		.stack_hi = ev->where.stack_hi,
		.leaf = ev->is_active,
	};
	uint64_t frames[STACKS_CENSUS_FRAMES], id;
	struct symtab_unwound marks;
	const struct model_coro *c;
	struct procmem *pm;
	bool busy;
	size_t n;

	/* A running one is walked only when its registers came with it (a
	 * core's thread: engine/scan/scanner.c). */
	if ((ev->is_active && !ev->where.sp) ||
	    !(pm = sk->env.attach_pm(sk->env.ctx)))
		return 0;
	/* Once, at the attach: worth waiting for the names thread. */
	n = stacks_unwind(sk, pm, 0, stacks_fc(sk), &s, frames,
			  STACKS_CENSUS_FRAMES, true, &marks, &busy, NULL);
	/* Only when the switch was recorded inside a runtime (the preload,
	 * called by Boost): a scheduler that calls the probe itself chose
	 * its address, and frame 0 is its own code. */
	if (marks.where > 0)
		model_where(sk->env.model, ev->station, frames[marks.where]);
	else if (marks.inlined_at > 0)
		model_where(sk->env.model, ev->station,
			    frames[marks.inlined_at]);
	c = model_station_coro(sk->env.model, ev->station);
	if (c && c->scanned && stacks_census_root(sk, frames, n))
		model_kind(sk->env.model, ev->station, MODEL_ROOT);
	else if (marks.entry >= 0)
		model_name_pc(sk->env.model, ev->station, frames[marks.entry]);
	else if (marks.inlined[0])
		model_name_text(sk->env.model, ev->station, marks.inlined);
	if (!n || !sk->ct.parked)
		return 0;
	id = parked_own_id(frames, (uint32_t)n);
	pthread_mutex_lock(&sk->ct.hot_lock);
	parked_put(sk->ct.parked, id, frames, (uint32_t)n);
	pthread_mutex_unlock(&sk->ct.hot_lock);
	return id;
}

uint64_t stacks_census(struct stacks *sk, const struct harvest_event *ev)
{
	uint64_t id;

	model_census(sk->env.model, ev->station, ev->ts, ev->tid, ev->addr,
		     ev->seq, ev->is_active);
	id = stacks_census_stack(sk, ev);
	model_park(sk->env.model, ev->station, id);
	return id;
}
