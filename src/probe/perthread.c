/*
 * perthread: what the probe keeps per thread for stack captures -- the
 * thread's stack bounds, the coroutine running on it (for the sampler's tag
 * frame), the lazy set-up of both -- and the parked stack captured at a
 * suspend.
 *
 * Set-up is lazy and happens at most once per change: a global epoch
 * (probe_capture_epoch) moves whenever the sampler starts or stops or
 * parked stacks are switched; a transition that finds its thread's copy
 * stale takes the slow path, probe_thread_sync, which
 *   - captures the thread's stack bounds with pthread_getattr_np (once per
 *     thread; it allocates, which is why it is here and never in a signal
 *     handler),
 *   - copies the switches into the thread (parked, sampling),
 *   - arms or disarms the thread's sampler timer (sampler.c).
 * The hot path pays one relaxed load of the epoch and a compare.
 *
 * Parked stacks.  At a suspend recorded on the coroutine's own stack, the
 * probe walks the frame chain from its entry point's caller (unwind.h:
 * bounded, every read checked; the same frame record the census hands the
 * engine for a coroutine parked before an attach), and stores the stack
 * with weight 0: a parked coroutine uses no CPU, so it must not
 * add to any CPU profile, but the put still returns the stack's trace id,
 * which coro.c writes into the suspend event (CTP_EPOCH_TRACE_OFFSET).
 * Coroutines parked at the same place share one trace.  No tag frame.
 */
#define _GNU_SOURCE
#include "probe/probe_internal.h"
#include "probe/unwind.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Frames of a parked stack. */
#define PARKED_FRAMES 64u

__thread struct probe_thread probe_self
	__attribute__((tls_model("initial-exec")));
_Atomic uint32_t probe_capture_epoch;
/* Parked stacks switched on (COROTOP_PARKED_STACKS, region attached);
 * relaxed, published to threads through the epoch. */
static _Atomic bool probe_parked_on;

/*
 * COROTOP_PARKED_STACKS: "1" on, "0" off, unset: the default (off: the
 * capture costs a record more than the budget allows; docs/PERFORMANCE.md).
 * Anything else is ignored (the default).
 */
static bool probe_parked_wanted(void)
{
	const char *v = secure_getenv("COROTOP_PARKED_STACKS");

	if (v && strcmp(v, "1") == 0)
		return true;
	return false;
}

void probe_parked_configure(bool attached)
{
	probe_parked_set(attached && probe_parked_wanted());
}

void probe_parked_set(bool on)
{
	on = on && UNWIND_SUPPORTED && probe_calltrace_attached();
	/* relaxed: threads read it in probe_thread_sync, after the epoch
	 * acquire there pairs with the release below.  Nothing changes, no
	 * epoch: threads that never need a capture never take the slow path
	 * (and never call pthread_getattr_np). */
	if (atomic_exchange_explicit(&probe_parked_on, on,
				     memory_order_relaxed) != on)
		atomic_fetch_add_explicit(&probe_capture_epoch, 1,
					  memory_order_release);
}

void probe_thread_bounds(struct probe_thread *t)
{
	pthread_attr_t a;
	void *addr;
	size_t size;

	if (t->bounds_tried)
		return;
	t->bounds_tried = true;
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return;
	if (pthread_attr_getstack(&a, &addr, &size) == 0 && addr && size &&
	    (uintptr_t)addr <= UINTPTR_MAX - size) {
		/* relaxed, then a signal fence: our own SIGPROF handler is the
		 * only other reader, and no timer exists yet anyway. */
		atomic_store_explicit(&t->stack_lo, (uintptr_t)addr,
				      memory_order_relaxed);
		atomic_signal_fence(memory_order_release);
		atomic_store_explicit(&t->stack_hi, (uintptr_t)addr + size,
				      memory_order_relaxed);
	}
	pthread_attr_destroy(&a);
}

int probe_thread_sync(struct probe_thread *t)
{
	/* acquire: pairs with the release of probe_parked_configure and of
	 * the sampler's start/stop, so the switches below are current. */
	uint32_t e = atomic_load_explicit(&probe_capture_epoch,
					  memory_order_acquire);
	int err;

	t->parked =
		atomic_load_explicit(&probe_parked_on, memory_order_relaxed);
	if (t->parked)
		probe_thread_bounds(t);
	/* Arms only while the sampler runs, calling probe_thread_bounds
	 * first. */
	err = sampler_thread_sync(t, e);
	t->sampling = err == 0 && t->slot != 0;
	if (!t->sampling)
		probe_thread_leave(t);
	t->epoch = e;
	return err;
}

/*
 * The stack at the probe's entry point: pc (the return address into the
 * scheduler, the first frame), then the frame records from fp, inside the
 * stack that holds sp (the caller's frame; everything from there up is
 * live while the probe runs).
 */
uint64_t probe_thread_parked(struct probe_thread *t,
			     const struct corotop_coro *c, uint64_t sp,
			     uint64_t fp, uint64_t pc)
{
	uint64_t f[PARKED_FRAMES];
	struct unwind_stack coro = {(uintptr_t)c->stack_lo,
				    (uintptr_t)c->stack_hi};
	/* relaxed: written by this thread only (probe_thread_bounds). */
	struct unwind_stack thread = {
		atomic_load_explicit(&t->stack_lo, memory_order_relaxed),
		atomic_load_explicit(&t->stack_hi, memory_order_relaxed)};
	unsigned n;
	uint64_t id;

	if (!UNWIND_SUPPORTED || pc < UNWIND_MIN_CODE || pc >> 63)
		return 0;
	f[0] = pc;
	n = 1 + unwind_fp((uintptr_t)fp,
			  unwind_range((uintptr_t)sp, &coro, &thread), f + 1,
			  PARKED_FRAMES - 1);
	id = probe_calltrace_put(f, n, 0);
	return id == COROTOP_CALLTRACE_DROPPED ? 0 : id;
}
