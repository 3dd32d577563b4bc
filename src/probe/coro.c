/*
 * coro: one coroutine's life as the probe sees it -- kept in its own
 * struct always, and on a cTP station while the program is traced.
 *
 * open    stamps the birth, registers the coroutine with its name, if
 *         it has one (registry.c), and,
 *         traced, takes a station (a recycled one from the free list
 *         first, then a fresh one by fetch_add on allocated_count) and
 *         publishes the new occupant by bumping its generation (G).
 *         The station's header names it: probe id, birth, the address of
 *         its struct and its name (station_who).
 * note    every transition, traced or not, first keeps itself in the
 *         struct: its time, thread, address and state, and the caller's
 *         frame record (what a later walk of a parked stack starts from).
 *         Untraced, that is all: a coarse clock read (no syscall: vDSO)
 *         and a few plain stores, then one more look at the attachment
 *         (W) -- the census (census.c) relies on that order.
 * record  traced, writes the transition into the station as a seqlock:
 *         odd seq, then the payload, then even seq (A, B, C in ctp.h),
 *         then checks whether the engine sleeps (M) and wakes it if so
 *         (O).  The first record under an attachment claims the coroutine
 *         in the registry: it takes a station itself, or adopts the one the
 *         census published it on (and goes on after its census event).
 * switch  one coroutine suspends and another resumes (the preload's
 *         interposed switches): both notes, then one clock read for both
 *         (precise while traced, coarse while not), one (W), one look at
 *         the attachment, both events written, one sleeping check (M).
 * close   stores the next event number for the station's next occupant and
 *         raises is_dead (I) -- also for a census station it never got to
 *         adopt -- and leaves the registry.  The engine recycles the station
 *         once it has harvested everything before that flag.
 *
 * A coroutine that finds no station stays untraced and retries at its next
 * transition, so a burst that exhausts the stations heals by itself; every
 * untraced transition is counted, in the process and in the region.
 *
 * Long waits (probe.h): the note decides whether a suspend is one (its
 * own mark, consumed by the note, or the coroutine's setting) and keeps
 * the answer in last_long; the event carries it as CTP_EPF_LONG_WAIT in
 * its flags byte, and a census event as well.
 *
 * Stack captures ride on record (perthread.c): a resume tells the sampler which
 * coroutine now runs on this thread (its tag frame), a suspend clears that
 * and, with parked stacks on, stores the suspending stack and writes its
 * trace id into the event's CTP_EPOCH_TRACE_OFFSET word (0 on resumes and
 * when nothing was stored) -- before the seqlock write, so the slot's odd
 * window does not grow by a put.
 */
#define _GNU_SOURCE
#include "corotop/calltrace.h"
#include "probe/probe_internal.h"
#include "probe/registry.h"
#include "probe/station.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The note that says the probe is here (probe.h, COROTOP_NOTE_PROBE): in
 * this file, which every program that calls the probe links. */
__attribute__((section(".note.corotop.probe"), aligned(4),
	       used)) static const struct {
	uint32_t namesz, descsz, type;
	char name[sizeof(COROTOP_NOTE_NAME)];
	uint32_t version;
} coro_probe_note = {sizeof(COROTOP_NOTE_NAME), 4, COROTOP_NOTE_PROBE,
		     COROTOP_NOTE_NAME, 1};

/*
 * The frame of the probe's entry point (corotop_coro_record_ or _note_):
 * the lowest stack address of the caller's frame, the caller's frame
 * pointer (our frame record's first word) and the return address into the
 * caller.  A macro: it must read the entry point's own frame.
 */
struct coro_frame {
	uint64_t sp, fp, pc;
};

#define CORO_FRAME(f)                                                          \
	do {                                                                   \
		const uintptr_t *rec_ = __builtin_frame_address(0);            \
		(f).sp = (uintptr_t)rec_ + 2 * sizeof(uintptr_t);              \
		(f).fp = rec_[0];                                              \
		(f).pc = (uintptr_t)__builtin_return_address(0);               \
	} while (0)

/* CLOCK_MONOTONIC_COARSE in ns: what an untraced transition costs (a vDSO
 * read; within a tick of CLOCK_MONOTONIC, plenty for a coroutine parked
 * for seconds). */
static inline uint64_t coro_coarse_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether c's transition is a long wait (probe.h): a suspend marked for
 * itself (long_next, consumed here by any transition) or by c's setting.
 * Kept in last_long, which the event and the census carry. */
static inline __attribute__((always_inline)) void
coro_note_long(struct corotop_coro *c, int is_active)
{
	c->last_long =
		(uint8_t)(!is_active &&
			  (c->long_next || (c->settings & CORO_LONG_WAITS)));
	c->long_next = 0;
}

/* The event flags (CTP_EPF_*) of c's transition just noted. */
static inline uint8_t coro_flags(const struct corotop_coro *c)
{
	return (uint8_t)((c->last_long ? CTP_EPF_LONG_WAIT : 0) |
			 (c->settings & CORO_CONTEXT ? CTP_EPF_CONTEXT : 0));
}

/* The transition, kept in c whether traced or not (census.c reads it),
 * but for its time (last_ts), which the caller stores.  The frame is kept
 * at every transition: at a suspend it is where the parked stack can be
 * walked from; otherwise nobody reads it. */
static inline __attribute__((always_inline)) void
coro_note(struct corotop_coro *c, int is_active, uint64_t addr,
	  struct coro_frame f)
{
	c->last_tid = probe_tid();
	c->last_addr = addr;
	c->last_active = (uint8_t)(is_active != 0);
	coro_note_long(c, is_active);
	c->park_sp = f.sp;
	c->park_fp = f.fp;
	c->park_pc = f.pc;
}

/* A switch's two notes, for the thread tid (read once for both): from
 * suspends, with the frame; to resumes, and keeps the frame of its last
 * suspend (nobody reads it while it runs: census_fill takes park_* only
 * from a suspended copy).  Either may be NULL. */
static inline __attribute__((always_inline)) void
coro_note_switch(struct corotop_coro *from, struct corotop_coro *to,
		 uint64_t addr, struct coro_frame f, uint64_t tid)
{
	if (from) {
		from->last_tid = tid;
		from->last_addr = addr;
		from->last_active = 0;
		coro_note_long(from, 0);
		from->park_sp = f.sp;
		from->park_fp = f.fp;
		from->park_pc = f.pc;
	}
	if (to) {
		to->last_tid = tid;
		to->last_addr = addr;
		to->last_active = 1;
		coro_note_long(to, 1);
	}
}

/* Deep rings: nothing of ours is in the ring yet at event n; check the
 * engine's progress half a ring from here. */
static inline void coro_lap_init(struct corotop_coro *c,
				 const struct probe_region *p)
{
	c->chk_n = c->n;
	c->chk_ts = probe_now();
	c->wake_ns = 0;
	c->lap_check = p->deep_rings ? c->n + coro_depth(c, p) / 2 : UINT64_MAX;
}

static bool coro_acquire(struct corotop_coro *c, struct probe_region *p)
{
	struct station_who who;
	bool recycled;
	uint32_t idx = station_take(p, &recycled);

	if (idx == FREELIST_EMPTY)
		return false;
	if (!c->birth_ts)
		c->birth_ts = probe_now();
	c->n = station_next_n(p, idx);
	c->station = &p->stations[idx];
	c->index = idx;
	c->attach = p->attach;
	who.coro = (uint64_t)(uintptr_t)c;
	who.entry = registry_entry(c->reg);
	who.made_for = registry_made_for(c->reg);
	(void)registry_name(c->reg, who.name, false);
	station_header(p, idx, c->probe_id, c->birth_ts, c->n,
		       coro_stx_hub(c, p) | coro_stx_role(c), NULL, &who);
	coro_lap_init(c, p);
	station_publish(p, idx);
	atomic_fetch_add_explicit(&probe_global.opened, 1,
				  memory_order_relaxed);
	if (recycled)
		atomic_fetch_add_explicit(&probe_global.recycled, 1,
					  memory_order_relaxed);
	return true;
}

/* The station the census published c on (registry_claim returned it):
 * its header is the census's, the next event follows the census event. */
static bool coro_adopt(struct corotop_coro *c, struct probe_region *p,
		       uint32_t idx)
{
	struct ctp_station *s;
	uint32_t flags;

	if (idx >= p->max)
		return false;
	s = &p->stations[idx];
	/* relaxed: published to us by the hand-over's release, which the
	 * claim (or remove) acquired. */
	flags = __atomic_load_n(&s->ext.flags, __ATOMIC_RELAXED);
	c->n = __atomic_load_n(&s->ext.first_n, __ATOMIC_RELAXED) +
	       ((flags & CTP_STX_CENSUS) ? 1 : 0);
	c->station = s;
	c->index = idx;
	c->attach = p->attach;
	coro_lap_init(c, p);
	return true;
}

static void coro_untraced(struct probe_region *r)
{
	atomic_fetch_add_explicit(&probe_global.untraced, 1,
				  memory_order_relaxed);
	/* Only in our own regions: elsewhere these bytes are reserved. */
	if (r->has_ext)
		atomic_fetch_add_explicit(&r->hdr->ext.untraced, 1,
					  memory_order_relaxed);
}

/*
 * c's first record (or open) under attachment r, or one after it found no
 * station: claim it in the registry, then take a station, or adopt the
 * census's.  NULL when it has none (counted untraced when `count`).
 */
static struct ctp_station *coro_sync(struct corotop_coro *c,
				     struct probe_region *r, bool count)
{
	uint32_t idx = 0;

	c->station = NULL;
	switch (registry_claim(c->reg, r->attach, &idx)) {
	case REGISTRY_CLAIM_HANDOFF:
		if (coro_adopt(c, r, idx))
			return c->station;
		break;
	case REGISTRY_CLAIM_STALE:
		/* r is older than the attachment that claimed c: it is
		 * retired, nothing of c goes there. */
		return NULL;
	case REGISTRY_CLAIM_OWN:
		if (coro_acquire(c, r))
			return c->station;
		break;
	}
	if (count)
		coro_untraced(r);
	return NULL;
}

/* The sampler's tag frame for c running on station s. */
static inline uint64_t coro_tag(const struct corotop_coro *c,
				struct ctp_station *s)
{
	/* relaxed: our own station; we bumped gen when we took it. */
	uint64_t gen = atomic_load_explicit(&s->ext.gen, memory_order_relaxed);

	return CT_TAG_CORO | (gen & 0xffffu) << 32 | c->index;
}

COROTOP_API void corotop_coro_set_stack(struct corotop_coro *c, const void *lo,
					const void *hi)
{
	uintptr_t l = (uintptr_t)lo, h = (uintptr_t)hi;

	if (!l || h <= l)
		l = h = 0;
	c->stack_lo = l;
	c->stack_hi = h;
	if (h)
		c->settings |= CORO_CONTEXT;
}

COROTOP_API void corotop_coro_set_context(struct corotop_coro *c)
{
	c->settings |= CORO_CONTEXT;
}

_Static_assert(COROTOP_SAVED_FCONTEXT == CTP_SAVED_FCONTEXT,
	       "probe.h and ctp.h name the same layouts");

/* After the switch that suspended c (on the thread that made it: c's
 * last_ts is that park's): where the switch saved c's registers, on c's
 * station -- none untraced, nor on a station of an earlier attachment,
 * which must never be written.  Three stores, no fence on x86-64. */
COROTOP_API void corotop_coro_set_saved(struct corotop_coro *c, unsigned kind,
					uint64_t at)
{
	struct ctp_station *s = c->station;
	struct probe_region *r;

	if (!s || c->last_active || !c->last_ts)
		return;
	r = probe_region();
	if (COROTOP_UNLIKELY(!r || c->attach != r->attach))
		return;
	/* (R) relaxed: kind is published by saved_at's release below. */
	atomic_store_explicit(&s->ext.saved_kind, (uint32_t)kind,
			      memory_order_relaxed);
	/* (R) release: pairs with the engine's acquire load of saved_at
	 * (U): an address of a later park comes with that park's last_ts
	 * store, which the engine's re-read of last_ts then sees. */
	atomic_store_explicit(&s->ext.saved_at, at, memory_order_release);
	/* (S) release: pairs with the engine's acquire load of saved_ts
	 * (T): this park's address and save area are visible with it. */
	atomic_store_explicit(&s->ext.saved_ts, c->last_ts,
			      memory_order_release);
}

COROTOP_API void corotop_coro_set_long_waits(struct corotop_coro *c, bool on)
{
	c->settings = (uint8_t)((c->settings & ~CORO_LONG_WAITS) |
				(on ? CORO_LONG_WAITS : 0));
}

COROTOP_API void corotop_coro_open(struct corotop_coro *c, uint64_t probe_id)
{
	corotop_coro_open_named(c, probe_id, NULL, COROTOP_NAME_COPY);
}

COROTOP_API void corotop_coro_open_named(struct corotop_coro *c,
					 uint64_t probe_id, const char *name,
					 unsigned flags)
{
	corotop_coro_open_entry(c, probe_id, name, flags, NULL);
}

COROTOP_API void corotop_coro_open_entry(struct corotop_coro *c,
					 uint64_t probe_id, const char *name,
					 unsigned flags, void (*entry)(void))
{
	corotop_coro_open_made_for(c, probe_id, name, flags, entry, NULL);
}

COROTOP_API void corotop_coro_open_made_for(struct corotop_coro *c,
					    uint64_t probe_id, const char *name,
					    unsigned flags, void (*entry)(void),
					    void (*made_for)(void))
{
	struct probe_region *r;

	c->station = NULL;
	c->n = 0;
	c->probe_id = probe_id ? probe_id : (uint64_t)(uintptr_t)c;
	c->birth_ts = probe_now();
	c->index = 0;
	c->attach = 0;
	c->stack_lo = 0;
	c->stack_hi = 0;
	c->lap_check = UINT64_MAX;
	c->chk_n = c->chk_ts = c->wake_ns = 0;
	c->last_ts = c->last_tid = c->last_addr = 0;
	c->park_sp = c->park_fp = c->park_pc = 0;
	c->last_active = 0;
	c->settings = c->long_next = c->last_long = 0;
	/* Before its first station: a ring's depth is fixed for an
	 * occupancy (CTP_STX_HUB is in the header). */
	if (flags & COROTOP_CORO_HUB)
		c->settings |= CORO_HUB;
	/* What it is, in the header of each station it takes. */
	if (flags & COROTOP_CORO_DISPATCHER)
		c->settings |= CORO_DISPATCHER;
	else if (flags & COROTOP_CORO_ROOT)
		c->settings |= CORO_ROOT;
	/* Registered before the attachment is looked at (W): a census that
	 * published its attachment before this look finds c. */
	c->reg = registry_add_named(c, name, flags, (uint64_t)(uintptr_t)entry,
				    (uint64_t)(uintptr_t)made_for);
	atomic_signal_fence(memory_order_seq_cst);
	r = probe_region();
	if (!r)
		return;
	/* No station: it is retried, and counted untraced, at each
	 * transition (docs/JSON.md: untraced counts transitions). */
	(void)coro_sync(c, r, false);
}

/* c's station in r: at its first record under r (or after it found
 * none), claimed through coro_sync.  NULL: untraced this time. */
static inline __attribute__((always_inline)) struct ctp_station *
coro_station(struct corotop_coro *c, struct probe_region *r)
{
	struct ctp_station *s = c->station;

	if (COROTOP_UNLIKELY(c->attach != r->attach || !s))
		s = coro_sync(c, r, true);
	return s;
}

/* This thread set up for what the stack captures need now. */
static inline __attribute__((always_inline)) void
coro_thread_sync(struct probe_thread *t)
{
	/* relaxed: a stale value only delays the set-up by one transition;
	 * probe_thread_sync acquires it. */
	if (COROTOP_UNLIKELY(t->epoch !=
			     atomic_load_explicit(&probe_capture_epoch,
						  memory_order_relaxed)))
		(void)probe_thread_sync(t);
}

/* c's next event into its station s of region r: the seqlock write (A, B,
 * C), after the deep ring's lap check.  The caller then runs (M) once and
 * marks the station (P). */
static inline __attribute__((always_inline)) void
coro_write(struct corotop_coro *c, struct probe_region *r,
	   struct ctp_station *s, int is_active, uint64_t addr, uint64_t now,
	   uint64_t trace, uint8_t flags)
{
	uint64_t n = c->n++;
	struct ctp_epoch *e;

	if (r->deep_rings) {
		e = &r->deep_rings[(size_t)c->index * r->stride +
				   (n & (coro_depth(c, r) - 1))];
		/* One compare while the engine keeps up (ctp.h, R/S). */
		if (COROTOP_UNLIKELY(n >= c->lap_check))
			probe_lap(c, r, n, now);
	} else {
		e = &s->slots[n % CTP_SLOTS];
	}
	station_write(e, n, now, c->last_tid, addr, is_active, trace, flags);
}

/*
 * One transition recorded in region r.  Inlined twice below: once for the
 * region from the environment, whose address is a constant (so its fields
 * are loaded as directly as globals), once for a region that came through
 * a rendezvous.
 */
static inline __attribute__((always_inline)) void
coro_record_in(struct corotop_coro *c, struct probe_region *r, int is_active,
	       uint64_t addr, uint64_t now, struct coro_frame f)
{
	struct probe_thread *t = &probe_self;
	struct ctp_station *s = coro_station(c, r);
	uint64_t trace = 0;

	coro_thread_sync(t);
	if (is_active) {
		if (t->sampling)
			probe_thread_enter(t, s ? coro_tag(c, s) : 0, c);
	} else {
		if (t->sampling)
			probe_thread_leave(t);
		if (t->parked && s)
			trace = probe_thread_parked(t, c, f.sp, f.fp, f.pc);
	}
	if (COROTOP_UNLIKELY(!s))
		return;
	coro_write(c, r, s, is_active, addr, now, trace, coro_flags(c));
	station_check_sleeping(r);
	station_mark(r, c->index);
}

/*
 * A switch recorded in region r: from's suspend, then to's resume (either
 * may be NULL), both at time now -- what coro_record_in does for each, with
 * the thread's set-up looked at once and the engine's sleep checked once
 * (M), after both writes and before both marks (P).
 */
static inline __attribute__((always_inline)) void
coro_switch_in(struct corotop_coro *from, struct corotop_coro *to,
	       struct probe_region *r, uint64_t addr, uint64_t now,
	       struct coro_frame f)
{
	struct probe_thread *t = &probe_self;
	struct ctp_station *sf = from ? coro_station(from, r) : NULL;
	struct ctp_station *st = to ? coro_station(to, r) : NULL;
	uint64_t trace = 0;

	coro_thread_sync(t);
	/* The captures in the order of two records. */
	if (from) {
		if (t->sampling)
			probe_thread_leave(t);
		/* On from's own stack: the switch has not happened yet. */
		if (t->parked && sf)
			trace = probe_thread_parked(t, from, f.sp, f.fp, f.pc);
	}
	if (to && t->sampling)
		probe_thread_enter(t, st ? coro_tag(to, st) : 0, to);
	if (sf)
		coro_write(from, r, sf, 0, addr, now, trace, coro_flags(from));
	if (st)
		coro_write(to, r, st, 1, addr, now, 0, 0);
	if (COROTOP_UNLIKELY(!sf && !st))
		return;
	station_check_sleeping(r);
	if (sf)
		station_mark(r, from->index);
	/* A second mark of the same bit would only load the word again. */
	if (st && !(sf && station_same_mark(r, from->index, to->index)))
		station_mark(r, to->index);
}

/*
 * Deep rings: c is half a ring past the last event the engine was known to
 * have read (chk_n).  When a pass that began after chk_ts has completed
 * (pass_ns, R/S), everything before chk_n was delivered: move the check half
 * a ring on.  Otherwise the engine is late: wake it (kick, U) -- it may be
 * between two busy passes rather than asleep, where tracer_sleeping would
 * not reach it -- and look again an eighth of a ring on.  pass_ns is read at
 * most once per PROBE_PASS_REFRESH_NS per thread and the wake is sent at
 * most once per PROBE_LAP_WAKE_NS per coroutine, so a writer that laps the
 * engine flat out pays about a nanosecond per record for all of it.
 */
void probe_lap(struct corotop_coro *c, struct probe_region *r, uint64_t n,
	       uint64_t now)
{
	struct probe_thread *t = &probe_self;
	_Atomic uint32_t *kick;

	if (t->pass_seen <= c->chk_ts &&
	    now - t->pass_read_ns >= PROBE_PASS_REFRESH_NS) {
		/* (S) acquire pairs with the engine's release (R). */
		t->pass_seen = atomic_load_explicit(&r->deep->pass_ns,
						    memory_order_acquire);
		t->pass_read_ns = now;
	}
	if (t->pass_seen > c->chk_ts) {
		/* Events before n were published before now (this record's
		 * clock read follows them). */
		c->chk_n = n;
		c->chk_ts = now;
		c->lap_check = n + coro_depth(c, r) / 2;
		return;
	}
	c->lap_check = n + coro_depth(c, r) / 8;
	if (now - c->wake_ns < PROBE_LAP_WAKE_NS)
		return;
	c->wake_ns = now;
	kick = &r->deep->kick;
	/* (U) relaxed: the word only says whether the engine waits on it;
	 * the data it will read is ordered by the seqs.  Load first, so a
	 * busy engine costs no read-modify-write. */
	if (atomic_load_explicit(kick, memory_order_relaxed) == 1 &&
	    atomic_exchange_explicit(kick, 0, memory_order_relaxed) == 1) {
		atomic_fetch_add_explicit(&probe_global.wakes, 1,
					  memory_order_relaxed);
		/* Shared futex: the waiter is another process. */
		syscall(SYS_futex, kick, FUTEX_WAKE, 1, NULL, NULL, 0);
	}
	/* An engine asleep on tracer_sleeping is woken by the record's
	 * usual check (M); nothing more to do here. */
}

/*
 * The attachment a transition writes to, looked at after (W); NULL while
 * untraced.  The region from the environment stays for good: nothing to
 * check.  Otherwise an agent may have come or gone (corotop -p).  relaxed:
 * _hmem is a hint that an agent published or withdrew the probe's ppt
 * buffer; rendezvous.c reads it again under its lock; probe_late_seen
 * pairs with the relaxed store in probe_late_poll, and a stale value costs
 * one more poll.
 */
static inline __attribute__((always_inline)) struct probe_region *
coro_attachment(void)
{
	struct probe_region *r = probe_region();
	int hmem;

	if (COROTOP_LIKELY(r == &probe_env_region))
		return r;
	hmem = __atomic_load_n(&_ppt_hmem_corotop, __ATOMIC_RELAXED);
	if (hmem != __atomic_load_n(&probe_late_seen, __ATOMIC_RELAXED)) {
		probe_late_poll(hmem);
		r = probe_region();
	}
	return r;
}

/*
 * A transition while traced, or while an agent knocks: noted in c (with
 * the precise clock, which the event carries too), then (W), then the
 * attachment looked at and the transition written.
 */
static inline __attribute__((always_inline)) void
coro_record(struct corotop_coro *c, int is_active, uint64_t addr,
	    struct coro_frame f)
{
	uint64_t now = probe_now();
	struct probe_region *r;

	coro_note(c, is_active, addr, f);
	c->last_ts = now;
	/* (W) the note before the look at the attachment: pairs with the
	 * census's membarrier (X), census.c. */
	atomic_signal_fence(memory_order_seq_cst);
	r = coro_attachment();
	/* The environment's region: its address is known. */
	if (COROTOP_LIKELY(r == &probe_env_region)) {
		coro_record_in(c, &probe_env_region, is_active, addr, now, f);
		return;
	}
	if (COROTOP_UNLIKELY(!r))
		return;
	coro_record_in(c, r, is_active, addr, now, f);
}

/* The untraced note found the probe attached after all: record. */
static __attribute__((noinline)) void
coro_record_late(struct corotop_coro *c, int is_active, uint64_t addr,
		 uint64_t sp, uint64_t fp, uint64_t pc)
{
	/* The note consumed the one-shot mark; the same transition again. */
	c->long_next = c->last_long;
	coro_record(c, is_active, addr, (struct coro_frame){sp, fp, pc});
}

COROTOP_API void corotop_coro_record_(struct corotop_coro *c, int is_active,
				      uint64_t addr)
{
	struct coro_frame f;

	CORO_FRAME(f);
	coro_record(c, is_active, addr, f);
}

COROTOP_API void corotop_coro_note_(struct corotop_coro *c, int is_active,
				    uint64_t addr)
{
	struct coro_frame f;
	uint64_t now;

	CORO_FRAME(f);
	/* Everything but the time first: only c stays live across the
	 * clock call (fewer registers saved; this is the untraced path). */
	coro_note(c, is_active, addr, f);
	now = coro_coarse_now();
	/* The coarse clock lags the precise one by up to a tick: never
	 * before the birth (a precise time), or the coroutine would seem
	 * to have parked before it was born. */
	if (COROTOP_UNLIKELY(now < c->birth_ts))
		now = c->birth_ts;
	c->last_ts = now;
	/* (W) the note before the second look: pairs with the census's
	 * membarrier (X).  relaxed loads as in probe.h's wrapper; an agent
	 * that came meanwhile is served now rather than at the next
	 * transition (the transition read back from c). */
	atomic_signal_fence(memory_order_seq_cst);
	if (COROTOP_UNLIKELY(
		    __atomic_load_n(&corotop_probe_live_, __ATOMIC_RELAXED) |
		    __atomic_load_n(&_ppt_hmem_corotop, __ATOMIC_RELAXED)))
		coro_record_late(c, c->last_active, c->last_addr, c->park_sp,
				 c->park_fp, c->park_pc);
}

/*
 * A switch while traced, or while an agent knocks: both notes (one clock
 * read, the precise one, which both events carry), then (W) once for both,
 * then the attachment looked at once and both transitions written.
 */
static __attribute__((noinline)) void coro_switch(struct corotop_coro *from,
						  struct corotop_coro *to,
						  uint64_t addr, uint64_t sp,
						  uint64_t fp, uint64_t pc)
{
	struct coro_frame f = {sp, fp, pc};
	uint64_t now = probe_now();
	struct probe_region *r;

	coro_note_switch(from, to, addr, f, probe_tid());
	if (from)
		from->last_ts = now;
	if (to)
		to->last_ts = now;
	/* (W) both notes before the look at the attachment: pairs with the
	 * census's membarrier (X), census.c. */
	atomic_signal_fence(memory_order_seq_cst);
	r = coro_attachment();
	if (COROTOP_LIKELY(r == &probe_env_region)) {
		coro_switch_in(from, to, &probe_env_region, addr, now, f);
		return;
	}
	if (COROTOP_UNLIKELY(!r))
		return;
	coro_switch_in(from, to, r, addr, now, f);
}

COROTOP_API void corotop_coro_switch_(struct corotop_coro *from,
				      struct corotop_coro *to, uint64_t addr)
{
	struct coro_frame f;
	uint64_t now;

	CORO_FRAME(f);
	/* relaxed: the hint probe.h's wrapper tests; coro_switch re-reads
	 * the attachment with acquire. */
	if (__atomic_load_n(&corotop_probe_live_, __ATOMIC_RELAXED) |
	    __atomic_load_n(&_ppt_hmem_corotop, __ATOMIC_RELAXED)) {
		coro_switch(from, to, addr, f.sp, f.fp, f.pc);
		return;
	}
	/* Untraced: both notes, then one coarse clock read for both. */
	coro_note_switch(from, to, addr, f, probe_tid());
	now = coro_coarse_now();
	/* Never before either birth (see corotop_coro_note_): the later of
	 * the two is still before now, and both keep the same time. */
	if (from && COROTOP_UNLIKELY(now < from->birth_ts))
		now = from->birth_ts;
	if (to && COROTOP_UNLIKELY(now < to->birth_ts))
		now = to->birth_ts;
	if (from)
		from->last_ts = now;
	if (to)
		to->last_ts = now;
	/* (W) both notes before the second look, as in corotop_coro_note_;
	 * an agent that came meanwhile gets both transitions now (read back
	 * from the structs: from's frame is in its park_*). */
	atomic_signal_fence(memory_order_seq_cst);
	if (COROTOP_UNLIKELY(
		    __atomic_load_n(&corotop_probe_live_, __ATOMIC_RELAXED) |
		    __atomic_load_n(&_ppt_hmem_corotop, __ATOMIC_RELAXED))) {
		if (from) {
			/* The notes again: from's one-shot mark as it
			 * was. */
			from->long_next = from->last_long;
			coro_switch(from, to, from->last_addr, from->park_sp,
				    from->park_fp, from->park_pc);
		} else if (to)
			coro_switch(NULL, to, to->last_addr, 0, 0, 0);
	}
}

COROTOP_API void corotop_coro_close(struct corotop_coro *c)
{
	/* Out of the registry first: no census can hand c a station after
	 * this, and one handed before is in w (acq_rel: its station is
	 * complete, and the attachment it belongs to is visible below). */
	uint64_t w = registry_remove(c->reg);
	struct probe_region *r = probe_region();
	struct ctp_station *s;

	c->reg = 0;
	if (!r) {
		c->station = NULL;
		return;
	}
	/* A station of an earlier attachment (its mapping is gone), or a
	 * census station c never got to adopt. */
	if (c->attach != r->attach) {
		c->station = NULL;
		if ((w & REGISTRY_HANDOFF) && REGISTRY_ATTACH(w) == r->attach)
			(void)coro_adopt(c, r, REGISTRY_STATION(w));
	}
	s = c->station;
	if (!s)
		return;
	/* Closed while running here: the sampler must not name it. */
	if (probe_self.sampling) {
		/* relaxed: our own thread-local (struct probe_thread). */
		uint64_t tag = atomic_load_explicit(&probe_self.run_tag,
						    memory_order_relaxed);

		if (tag && CT_TAG_CORO_INDEX(tag) == c->index)
			probe_thread_leave(&probe_self);
	}
	/* relaxed: published by the release store of is_dead below. */
	__atomic_store_n(&s->ext.next_n, c->n, __ATOMIC_RELAXED);
	/* release (I) pairs with the engine's acquire (J): every slot write
	 * and next_n are visible before the engine recycles the station. */
	atomic_store_explicit(&s->is_dead, 1, memory_order_release);
	c->station = NULL;
	station_check_sleeping(r);
	station_mark(r, c->index);
}
