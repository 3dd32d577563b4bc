/*
 * census: when an agent attaches late (rendezvous.c), every coroutine live
 * at that moment is published at once -- on a station of its own, with its
 * true birth and the last transition it made before the attach, and, for
 * one parked, where its stack can be walked from -- before any new event
 * of that coroutine.  Without it a coroutine parked before the attach
 * would appear only at its next transition: never, for a lost wakeup.
 *
 * What is published.  The probe keeps, in each struct corotop_coro,
 * whether traced or not (coro.c): its birth time, its last transition
 * (time, thread, address, state) and, at that transition, the caller's
 * frame record (sp, fp, return address).  The walk gives each registered
 * coroutine (registry.c) a station whose header carries its probe id and
 * birth (and its name, from the registry, and its struct's address),
 * whose first event (CTP_STX_CENSUS, number first_n) is that last
 * transition with its real time, and whose ctp_census says where the
 * engine can walk the parked stack in the program's memory.  A coroutine
 * that never ran gets the station alone.  The owner adopts the station at
 * its next record (registry_claim) and goes on at first_n + 1, so the
 * census event is the coroutine's first in the attachment and the
 * engine's model starts from its true state.
 *
 * Exactly once: see registry.c.  The walk pins a slot, copies the
 * coroutine, fills a station, and hands it over only if the slot's word
 * did not move since the pin; a station whose hand-over failed was never
 * published (its generation did not move) and is reused for the next
 * coroutine, the last one given back to the free list.  Either way its next
 * occupant starts at the same first_n, so a failed hand-over takes back
 * the census event it wrote there.
 *
 * Fresh, not stale: (W) and (X).  The record path keeps a transition in the
 * coroutine first and only then looks whether the probe is attached
 * (coro.c: the note, a compiler barrier (W), then the attachment; a switch
 * makes both of its notes before its one (W)); the walk publishes the
 * attachment first, then issues (X),
 * membarrier(PRIVATE_EXPEDITED) -- a full barrier on every thread of the
 * process -- and only then reads coroutines.  So for each transition either
 * the walk's copy sees it, or the transition's own check sees the
 * attachment and the owner claims the coroutine itself (or adopts the
 * walk's station and writes the transition after the census event).  A
 * coroutine opened after (X) is found the same way (registry_add before
 * the check).  Without membarrier (a kernel before 4.14, or a seccomp
 * filter) the walk falls back to MEMBARRIER_CMD_GLOBAL, and without that
 * to nothing: a transition racing the attach may then leave a census event
 * stale until the coroutine's next one (counted in no_barrier).
 *
 * Reading a coroutine its owner may free.  The walk never dereferences the
 * scheduler's struct: it copies it with process_vm_readv on its own pid,
 * which returns EFAULT for an unmapped page instead of faulting (a
 * coroutine's struct may live on a stack that is unmapped at its close),
 * and it trusts the copy only through the hand-over CAS: a coroutine
 * closed before the copy was read fails it (registry_remove moved the
 * word; its acq_rel keeps the owner's free after it).  A copy torn by a
 * concurrent transition is superseded by that transition's own event
 * ((W)/(X) above), birth and probe id never change.
 *
 * Where it runs.  On a thread of its own (all signals blocked, started by
 * the attach), so no thread of the program waits for a walk; walks run
 * one at a time (an older one stops at the next slot once its attachment
 * is no longer current).  Cost per coroutine: one process_vm_readv, a
 * station taken and written, two CASes; nothing on the record path.
 */
#define _GNU_SOURCE
#include "probe/census.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "probe/registry.h"
#include "probe/station.h"

#ifdef CENSUS_TEST_HOOKS
void (*census_test_hook)(enum census_step step, uint32_t slot,
			 struct corotop_coro *c);
#define CENSUS_HOOK(step, slot, c)                                             \
	do {                                                                   \
		if (census_test_hook)                                          \
			census_test_hook(step, slot, c);                       \
	} while (0)
#else
#define CENSUS_HOOK(step, slot, c) ((void)0)
#endif

/* Send a sleeping engine a wake every so many stations published. */
#define CENSUS_WAKE_EVERY 256u

/* One walk at a time. */
static pthread_mutex_t census_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint32_t census_live;
/* Statistics (relaxed: nobody orders against them). */
static struct {
	_Atomic uint64_t walks, visited, published, events, raced, unreadable,
		no_station, aborted, no_barrier, inline_walks, walk_ns;
} census_n;

static void census_count(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* (X): a full barrier on every thread of the process, after the attachment
 * was published (pairs with the record path's (W)).  False when the kernel
 * offers none. */
static bool census_barrier(void)
{
	/* Registered each walk: cheap, and a forked child is a new mm. */
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
		    0, 0) == 0 &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) ==
		    0)
		return true;
	return syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0;
}

/* The coroutine's struct, copied without ever faulting (see the top). */
static bool census_copy(const struct corotop_coro *c, struct corotop_coro *out)
{
	struct iovec local = {out, sizeof(*out)};
	struct iovec remote = {(void *)(uintptr_t)c, sizeof(*c)};

	return process_vm_readv((pid_t)probe_pid, &local, 1, &remote, 1, 0) ==
	       (ssize_t)sizeof(*out);
}

/* Station idx, taken for the coroutine copied in c (at `at`, registry
 * slot `slot`, pinned): its header and, when it ever ran, its census
 * event. */
static void census_fill(struct probe_region *r, uint32_t idx,
			const struct corotop_coro *c,
			const struct corotop_coro *at, uint32_t slot)
{
	uint64_t n = station_next_n(r, idx);
	struct ctp_census where = {0};
	struct station_who who = {.coro = (uint64_t)(uintptr_t)at};
	bool ran = c->last_ts != 0;

	if (ran && !c->last_active)
		where = (struct ctp_census){
			.sp = c->park_sp,
			.fp = c->park_fp,
			.pc = c->park_pc,
			.stack_lo = c->stack_lo,
			.stack_hi = c->stack_hi,
		};
	who.entry = registry_entry(slot + 1);
	who.made_for = registry_made_for(slot + 1);
	(void)registry_name(slot + 1, who.name, true);
	station_header(r, idx, c->probe_id, c->birth_ts, n,
		       (ran ? CTP_STX_CENSUS : 0u) | coro_stx_hub(c, r) |
			       coro_stx_role(c),
		       &where, &who);
	if (ran)
		station_write(
			station_epoch(r, idx, n, coro_depth(c, r)), n,
			c->last_ts, c->last_tid, c->last_addr, c->last_active,
			0,
			(uint8_t)((!c->last_active && c->last_long
					   ? CTP_EPF_LONG_WAIT
					   : 0) |
				  (c->settings & CORO_CONTEXT ? CTP_EPF_CONTEXT
							      : 0)));
}

void census_walk(struct probe_region *r)
{
	uint32_t attach = r->attach, spare = FREELIST_EMPTY;
	uint64_t published = 0, t0;
	bool recycled = false;

	pthread_mutex_lock(&census_lock);
	t0 = probe_now();
	census_count(&census_n.walks, 1);
	if (!census_barrier())
		census_count(&census_n.no_barrier, 1);
	for (uint32_t i = 0; i < registry_size(); i++) {
		struct corotop_coro *c, copy;
		uint64_t w;

		/* Detached, or attached again: that walk's turn. */
		if (probe_region() != r) {
			census_count(&census_n.aborted, 1);
			break;
		}
		if (!registry_pin(i, attach, &w, &c))
			continue;
		census_count(&census_n.visited, 1);
		CENSUS_HOOK(CENSUS_PINNED, i, c);
		if (!census_copy(c, &copy)) {
			registry_unpin(i);
			census_count(&census_n.unreadable, 1);
			continue;
		}
		CENSUS_HOOK(CENSUS_COPIED, i, c);
		if (spare == FREELIST_EMPTY) {
			spare = station_take(r, &recycled);
			if (spare == FREELIST_EMPTY) {
				registry_unpin(i);
				census_count(&census_n.no_station, 1);
				continue;
			}
		}
		census_fill(r, spare, &copy, c, i);
		CENSUS_HOOK(CENSUS_FILLED, i, c);
		if (!registry_hand(i, w, attach, spare)) {
			census_count(&census_n.raced, 1);
			/* Never published: reused for the next coroutine, or
			 * given back, with the same first_n -- take the census
			 * event back, or it becomes the next occupant's first
			 * (test_census_reused_station). */
			if (copy.last_ts)
				station_unwrite(station_epoch(
					r, spare, station_next_n(r, spare),
					coro_depth(&copy, r)));
			continue;
		}
		station_publish(r, spare);
		census_count(&census_n.published, 1);
		if (copy.last_ts)
			census_count(&census_n.events, 1);
		atomic_fetch_add_explicit(&probe_global.opened, 1,
					  memory_order_relaxed);
		if (recycled)
			atomic_fetch_add_explicit(&probe_global.recycled, 1,
						  memory_order_relaxed);
		spare = FREELIST_EMPTY;
		if (++published % CENSUS_WAKE_EVERY == 0)
			station_check_sleeping(r);
	}
	if (spare != FREELIST_EMPTY)
		station_give_back(r, spare);
	if (published)
		station_check_sleeping(r);
	census_count(&census_n.walk_ns, probe_now() - t0);
	pthread_mutex_unlock(&census_lock);
}

static void *census_main(void *arg)
{
	census_walk(arg);
	/* release: pairs with census_running's acquire; the walk's stores
	 * are done. */
	atomic_fetch_sub_explicit(&census_live, 1, memory_order_release);
	return NULL;
}

void census_start(struct probe_region *r)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;
	int rc = -1;

	/* relaxed: a count; census_main's release ends it. */
	atomic_fetch_add_explicit(&census_live, 1, memory_order_relaxed);
	if (pthread_attr_init(&attr) == 0) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		/* The census never takes a signal of the program's. */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		rc = pthread_create(&th, &attr, census_main, r);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&attr);
	}
	if (rc == 0)
		return;
	census_count(&census_n.inline_walks, 1);
	census_main(r);
}

void census_atfork_child(void)
{
	pthread_mutex_init(&census_lock, NULL);
	/* relaxed: alone in the child. */
	atomic_store_explicit(&census_live, 0, memory_order_relaxed);
}

uint32_t census_running(void)
{
	/* acquire: pairs with census_main's release. */
	return atomic_load_explicit(&census_live, memory_order_acquire);
}

void census_stats(struct census_stats *out)
{
	*out = (struct census_stats){
		.walks = atomic_load_explicit(&census_n.walks,
					      memory_order_relaxed),
		.visited = atomic_load_explicit(&census_n.visited,
						memory_order_relaxed),
		.published = atomic_load_explicit(&census_n.published,
						  memory_order_relaxed),
		.events = atomic_load_explicit(&census_n.events,
					       memory_order_relaxed),
		.raced = atomic_load_explicit(&census_n.raced,
					      memory_order_relaxed),
		.unreadable = atomic_load_explicit(&census_n.unreadable,
						   memory_order_relaxed),
		.no_station = atomic_load_explicit(&census_n.no_station,
						   memory_order_relaxed),
		.aborted = atomic_load_explicit(&census_n.aborted,
						memory_order_relaxed),
		.no_barrier = atomic_load_explicit(&census_n.no_barrier,
						   memory_order_relaxed),
		.inline_walks = atomic_load_explicit(&census_n.inline_walks,
						     memory_order_relaxed),
		.walk_ns = atomic_load_explicit(&census_n.walk_ns,
						memory_order_relaxed),
	};
}
