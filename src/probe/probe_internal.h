/*
 * probe_internal: state shared by the probe's translation units.  Never
 * installed; the public API is include/corotop/probe.h.
 */
#ifndef COROTOP_PROBE_INTERNAL_H
#define COROTOP_PROBE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "corotop/ctp.h"
#include "corotop/probe.h"
#include "probe/tscclock.h"

/*
 * One attachment to a cTP region.  Filled in before it is published in
 * probe_cur and never changed afterwards, so a recorder that loaded it sees
 * one consistent region (never a new mapping with an old size).  A late
 * detach (rendezvous.c) retires it: its mappings are replaced in place by
 * private zero pages and the struct stays allocated, so a recorder still inside
 * it writes harmlessly; corotop_probe_shutdown, documented as not safe against
 * concurrent recorders, unmaps and frees.
 */
struct probe_region {
	struct ctp_header *hdr;
	struct ctp_station *stations;
	uint32_t max;
	uint32_t hx_flags; /* copy of hdr->ext.flags, read once at attach */
	bool has_ext;	   /* the region carries corotop's header extension */
	/* The engine's membarrier orders our stores: no fence needed (M). */
	bool asym_fence;
	/* Dirty hint words (CTP_HX_DIRTY), or NULL. */
	_Atomic uint64_t *dirty;
	uint32_t dirty_shift;
	uint32_t dirty_bits;
	size_t map_size;
	int sock;
	/* probe_attach when this attachment began: stations taken under
	 * another one must never be written. */
	uint32_t attach;
	/* Deep rings (CTP_HX_DEEP): depth epochs per station, or NULL;
	 * hub_depth a hub's (DEP2; 0: none); rings stride epochs apart. */
	struct ctp_deep *deep;
	struct ctp_epoch *deep_rings;
	uint32_t depth, hub_depth, stride;
	/* This process's station in the region (CTP_STX_PROCESS), index +
	 * 1; 0: none (a region without corotop's extension, or full). */
	uint32_t proc_station;
	struct probe_region *retired_next;
	uint64_t retired_ns; /* CLOCK_MONOTONIC when it was retired */
	bool reused;	     /* its address range holds a later region */
};

/* A retired range is mapped again (MAP_FIXED) by a later attach of the
 * same size once it has been retired this long: attach/detach cycles then
 * keep a bounded number of mappings, and a recorder would have to stall
 * this long inside a record to write into the newer region. */
#define PROBE_REUSE_GRACE_NS 1000000000ull

/* struct corotop_coro.settings bits (probe.h). */
#define CORO_LONG_WAITS (1u << 0)
#define CORO_CONTEXT (1u << 1)
#define CORO_HUB (1u << 2)	  /* opened with COROTOP_CORO_HUB */
#define CORO_DISPATCHER (1u << 3) /* opened with COROTOP_CORO_DISPATCHER */
#define CORO_ROOT (1u << 4)	  /* opened with COROTOP_CORO_ROOT */

/* CLOCK_MONOTONIC in ns, as a thread never sees it go backwards: from
 * the TSC when the kernel's clocksource is the TSC (tscclock.h), else
 * clock_gettime. */
static inline uint64_t probe_now(void)
{
	return tscclock_now();
}

/* Process-wide statistics: relaxed counters that order nothing (each
 * fetch_add and each read needs no pairing). */
struct probe {
	_Atomic uint64_t untraced; /* events of untraced threads */
	_Atomic uint64_t opened;   /* stations taken */
	_Atomic uint64_t recycled; /* ... of them, reused ones */
	_Atomic uint64_t wakes;	   /* engine wake-ups sent */
	/* Contexts the interposer could not track (its table full):
	 * corotop_probe_context_untracked_. */
	_Atomic uint64_t contexts_untracked;
	/* Switches it found made unseen: corotop_probe_switch_unseen_. */
	_Atomic uint64_t switches_unseen;
};

extern struct probe probe_global;
/* The attachment the environment gave (corotop launched the program):
 * static, so the record path reaches its fields as directly as globals.
 * Set up once per corotop_probe_init, zeroed by corotop_probe_shutdown
 * (which, as documented, no recorder may race). */
extern struct probe_region probe_env_region;
/* The current attachment, NULL while untraced.  Published with release
 * after it is complete, before corotop_probe_live_ (probe.c). */
extern struct probe_region *_Atomic probe_cur;
/* Bumped by every attach: stations taken under an older attachment point
 * into a mapping that no longer exists and must never be written. */
extern uint32_t probe_attach;
extern __thread uint64_t probe_tid_cache
	__attribute__((tls_model("initial-exec")));

/* Our pid, cached at load and refreshed in a forked child; and our image:
 * CLOCK_MONOTONIC ns when the probe was loaded (an exec loads it anew).
 * Every station header carries both (station.h). */
extern uint32_t probe_pid;
extern uint64_t probe_image;

/* acquire: pairs with the release that published it (probe.c). */
static inline struct probe_region *probe_region(void)
{
	return atomic_load_explicit(&probe_cur, memory_order_acquire);
}

/* probe.c: attach to the region at shm (sock: the engine's socket, may be
 * NULL) of `max` stations and go live; false with a reason in *why (a
 * static string or probe_status's buffer).  Used by corotop_probe_init
 * (the environment) and by rendezvous.c (the rendezvous). */
bool probe_attach_region(const char *shm, const char *sock, uint32_t max,
			 bool late);
/* mapscopy.c: the launched program's maps, once, beside the region at
 * shm (CTP_ENV_MAPS_PID).  errno is kept. */
void probe_maps_copy(const char *shm);
/* probe.c: this process's station in r (CTP_STX_PROCESS), taken and
 * published; r->proc_station says which (0: none). */
void probe_process_station(struct probe_region *r);
/* rendezvous.c: stop tracing without unmapping anything a concurrent recorder
 * may touch (the region is retired, see struct probe_region). */
void probe_retire(void);
/* rendezvous.c: replace a retired mapping in place by private zero pages, under
 * threads that may still be inside it (never unmapped: no fault). */
void probe_zero_pages(void *addr, size_t len);
/* Retired attachments (never freed: a recorder may still hold one). */
extern struct probe_region *probe_retired;

/* rendezvous.c: the probe's own ppt buffer, set up by the constructor; and the
 * check the record path runs when _ppt_hmem_corotop moved. */
void probe_late_init(void);
void probe_late_poll(int hmem);
/* In a forked child: a region the parent got through the rendezvous is
 * retired here (the child starts untraced). */
void probe_late_atfork_child(void);
extern int probe_late_seen; /* the _ppt_hmem_corotop value handled last */
/* doorbell.c: the socket corotop -p rings so that a program in which
 * nothing transitions still attaches (started by probe_late_init); a
 * forked child closes its copy. */
void probe_doorbell_start(void);
void probe_doorbell_atfork_child(void);

uint64_t probe_tid_slow(void);
void probe_wake(struct probe_region *r);

/* calltrace.c: attach to the CallTrace region the cTP header announces
 * (nothing when it announces none), and detach from it. */
void probe_calltrace_attach(const char *shm_path, struct ctp_header *hdr);
void probe_calltrace_detach(void);
/* Detach under concurrent puts: the mapping becomes private zero pages. */
void probe_calltrace_retire(void);

/* calltrace.c: the put behind corotop_calltrace_put (no PLT hop, so a
 * signal handler never goes through an interposable symbol); true while a
 * region is attached. */
uint64_t probe_calltrace_put(const uint64_t *frames, unsigned n,
			     uint64_t weight);
bool probe_calltrace_attached(void);

/* calltrace.c: the sampler's store of one sample into the snapshot ring
 * the CallTrace header announced (wire/snapwriter.h); false when there is
 * none or the record was busy: the caller stores the sample in CallTrace. */
struct snap_sample_in;
bool probe_snap_put(const struct snap_sample_in *in);

/*
 * Per-thread state of the stack captures (perthread.c, sampler.c).  Written
 * only by its own thread, outside signal handlers; the fields marked
 * "handler" are also read by the same thread's SIGPROF handler, which can
 * interrupt any write: they are relaxed atomics whose stores are ordered
 * against the handler with signal fences (same-thread ordering, no CPU
 * fence needed).
 */
struct probe_thread {
	/* handler: tag frame of the coroutine running here, 0 = none. */
	_Atomic uint64_t run_tag;
	/* handler: its declared stack; run_hi == 0 = unknown.  Invalidated
	 * (hi = 0) before lo changes, so no mix of two stacks is seen. */
	_Atomic uintptr_t run_lo, run_hi;
	/* handler: this thread's stack (pthread_getattr_np), set once
	 * before the thread's timer exists; hi == 0 = unknown. */
	_Atomic uintptr_t stack_lo, stack_hi;
	uint32_t epoch;	    /* probe_capture_epoch this thread is set up for */
	bool sampling;	    /* the sampler runs: keep run_* current */
	bool parked;	    /* capture the parked stack at each suspend */
	bool bounds_tried;  /* pthread_getattr_np was called */
	bool key_set;	    /* the exit destructor is registered */
	uint32_t slot;	    /* sampler timer slot + 1, 0 = none */
	uint64_t slot_word; /* that slot's word while our timer is armed */
	/* Deep rings (coro.c): the engine's last pass start this thread
	 * read (S), and when it read it. */
	uint64_t pass_seen;
	uint64_t pass_read_ns;
};

/* A thread reads the engine's pass_ns (S) at most this often. */
#define PROBE_PASS_REFRESH_NS 20000ull
/* A coroutine half a ring ahead of the engine wakes it at most this often. */
#define PROBE_LAP_WAKE_NS 100000ull

/* coro.c: the slow path of a record that reached c->lap_check. */
void probe_lap(struct corotop_coro *c, struct probe_region *r, uint64_t n,
	       uint64_t now);

extern __thread struct probe_thread probe_self
	__attribute__((tls_model("initial-exec")));
/* Bumped whenever what threads must set up changes (sampler started or
 * stopped, parked stacks switched): threads re-sync lazily at their next
 * transition.  relaxed on the hot path; see probe_thread_sync. */
extern _Atomic uint32_t probe_capture_epoch;

/* perthread.c */
/* The slow path of a transition whose epoch is stale; returns 0 or the
 * negative errno of arming the sampler's timer. */
int probe_thread_sync(struct probe_thread *t);
/* Capture the thread's stack bounds (once; allocates: never in a handler). */
void probe_thread_bounds(struct probe_thread *t);
/* Switch parked stacks by COROTOP_PARKED_STACKS (after attach), or off. */
void probe_parked_configure(bool attached);
/* Switch them on (when a CallTrace region is attached) or off. */
void probe_parked_set(bool on);
/* The parked stack -- pc, then the frame records from fp inside the stack
 * that holds sp (the probe's caller's frame) -- stored with weight 0: its
 * trace id, or 0 when not stored. */
uint64_t probe_thread_parked(struct probe_thread *t,
			     const struct corotop_coro *c, uint64_t sp,
			     uint64_t fp, uint64_t pc);

/* sampler.c */
/* Arm (sampler on) or disarm this thread's timer for session `epoch`.
 * Returns 0 or a negative errno (arming failed). */
int sampler_thread_sync(struct probe_thread *t, uint32_t epoch);
/* Start from COROTOP_SAMPLE_HZ, if set and valid. */
void sampler_autostart(void);
/* In a forked child: no timers exist; re-arm lazily. */
void sampler_atfork_child(void);

/* The running coroutine, for the sampler (see struct probe_thread). */
static inline void probe_thread_enter(struct probe_thread *t, uint64_t tag,
				      const struct corotop_coro *c)
{
	/* Same-thread ordering against our own SIGPROF handler: the signal
	 * fences keep the compiler from reordering these relaxed stores. */
	atomic_store_explicit(&t->run_hi, 0, memory_order_relaxed);
	atomic_signal_fence(memory_order_release);
	atomic_store_explicit(&t->run_lo, (uintptr_t)c->stack_lo,
			      memory_order_relaxed);
	atomic_signal_fence(memory_order_release);
	atomic_store_explicit(&t->run_hi, (uintptr_t)c->stack_hi,
			      memory_order_relaxed);
	atomic_store_explicit(&t->run_tag, tag, memory_order_relaxed);
}

static inline void probe_thread_leave(struct probe_thread *t)
{
	atomic_store_explicit(&t->run_tag, 0, memory_order_relaxed);
	atomic_signal_fence(memory_order_release);
	atomic_store_explicit(&t->run_hi, 0, memory_order_relaxed);
}

static inline uint64_t probe_tid(void)
{
	uint64_t t = probe_tid_cache;

	return COROTOP_LIKELY(t) ? t : probe_tid_slow();
}

/* Owner id of this thread in CallTrace protection slots: pid << 32 | tid. */
static inline uint64_t probe_owner(void)
{
	return ((uint64_t)probe_pid << 32) | (uint32_t)probe_tid();
}

/* The epochs of c's deep ring in r: hub_depth for a hub when r has hubs,
 * else depth; and the station flag that says which. */
static inline uint32_t coro_depth(const struct corotop_coro *c,
				  const struct probe_region *r)
{
	return (c->settings & CORO_HUB) && r->hub_depth ? r->hub_depth
							: r->depth;
}

static inline uint32_t coro_stx_hub(const struct corotop_coro *c,
				    const struct probe_region *r)
{
	return (c->settings & CORO_HUB) && r->hub_depth ? CTP_STX_HUB : 0u;
}

/* The station flag that says what the occupant is, 0: a coroutine. */
static inline uint32_t coro_stx_role(const struct corotop_coro *c)
{
	return (c->settings & CORO_DISPATCHER) ? CTP_STX_DISPATCHER
	       : (c->settings & CORO_ROOT)     ? CTP_STX_ROOT
					       : 0u;
}

#endif
