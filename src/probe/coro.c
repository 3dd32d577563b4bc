/*
 * coro: one coroutine's life on a cTP station, as the probe writes it.
 *
 * open    takes a station (a recycled one from the free list first, then a
 *         fresh one by fetch_add on allocated_count) and publishes the new
 *         occupant by bumping the station's generation (G).
 * record  writes one transition into slot n % 8 as a seqlock: odd seq, then
 *         the payload, then even seq (A, B, C in ctp.h), then checks whether
 *         the engine sleeps (M) and wakes it if so (O).
 * close   stores the next event number for the station's next occupant and
 *         raises is_dead (I).  The engine recycles the station once it has
 *         harvested everything before that flag.
 *
 * A coroutine that finds no station stays untraced and retries at its next
 * transition, so a burst that exhausts the stations heals by itself; every
 * untraced transition is counted, in the process and in the region.
 *
 * Stack captures ride on record (perthread.c): a resume tells the sampler which
 * coroutine now runs on this thread (its tag frame), a suspend clears that
 * and, with parked stacks on, stores the suspending stack and writes its
 * trace id into the event's CTP_EPOCH_TRACE_OFFSET word (0 on resumes and
 * when nothing was stored) -- before the seqlock write, so the slot's odd
 * window does not grow by a put.
 */
#define _GNU_SOURCE
#include "wire/freelist.h"
#include "corotop/calltrace.h"
#include "probe/probe_internal.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* (P): tell the engine which station group changed.  Load first so the
 * common case (bit already set) costs no atomic read-modify-write. */
static inline void coro_mark(struct probe_region *r, uint32_t idx)
{
	_Atomic uint64_t *w;
	uint32_t bit;
	uint64_t m;

	if (!r->dirty)
		return;
	bit = idx >> r->dirty_shift;
	if (COROTOP_UNLIKELY(bit >= r->dirty_bits))
		return;
	w = &r->dirty[bit / 64];
	m = 1ull << (bit % 64);
	/* relaxed: a hint; ordering comes from (M) and the engine's (Q). */
	if (!(atomic_load_explicit(w, memory_order_relaxed) & m))
		atomic_fetch_or_explicit(w, m, memory_order_relaxed);
}

static bool coro_acquire(struct corotop_coro *c, struct probe_region *p)
{
	struct ctp_header *hdr = p->hdr;
	struct ctp_station *s;
	bool recycled = false;
	uint32_t idx = FREELIST_EMPTY;

	if (p->hx_flags & CTP_HX_FREELIST) {
		idx = freelist_pop(hdr, p->stations, p->max);
		recycled = idx != FREELIST_EMPTY;
	}
	if (!recycled) {
		/* Load first so a full region does not keep bumping the
		 * cursor towards wrap-around. relaxed: no data is published
		 * through the cursor itself. */
		if (atomic_load_explicit(&hdr->allocated_count,
					 memory_order_relaxed) >= p->max)
			return false;
		idx = atomic_fetch_add_explicit(&hdr->allocated_count, 1,
						memory_order_relaxed);
		if (idx >= p->max)
			return false;
	}
	s = &p->stations[idx];
	if (!c->birth_ts)
		c->birth_ts = probe_now();
	/* The previous occupant's next_n was published to us by the free-list
	 * acquire (L); a fresh station reads 0. */
	c->n = __atomic_load_n(&s->ext.next_n, __ATOMIC_RELAXED);
	c->station = s;
	c->index = idx;
	c->attach = p->attach;
	/* relaxed: all of these are published by the release in (G). */
	__atomic_store_n(&s->probe_id, c->probe_id, __ATOMIC_RELAXED);
	__atomic_store_n(&s->birth_ts, c->birth_ts, __ATOMIC_RELAXED);
	atomic_store_explicit(&s->is_dead, 0, memory_order_relaxed);
	__atomic_store_n(&s->ext.magic, CTP_STX_MAGIC, __ATOMIC_RELAXED);
	__atomic_store_n(&s->ext.flags,
			 CTP_STX_SEQ_STATION |
				 (p->deep_rings ? CTP_STX_DEEP : 0u),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&s->ext.first_n, c->n, __ATOMIC_RELAXED);
	/* Deep rings: nothing of ours is in the ring yet; check the engine's
	 * progress half a ring from here. */
	c->chk_n = c->n;
	c->chk_ts = probe_now();
	c->wake_ns = 0;
	c->lap_check = p->deep_rings ? c->n + p->depth / 2 : UINT64_MAX;
	/* release (G) pairs with the engine's acquire (H): the header above is
	 * complete once the generation moves. */
	atomic_fetch_add_explicit(&s->ext.gen, 1, memory_order_release);
	coro_mark(p, idx);
	atomic_fetch_add_explicit(&probe_global.opened, 1,
				  memory_order_relaxed);
	if (recycled)
		atomic_fetch_add_explicit(&probe_global.recycled, 1,
					  memory_order_relaxed);
	return true;
}

static inline void coro_check_sleeping(struct probe_region *r)
{
	struct ctp_header *hdr = r->hdr;

	/* (M) pairs with the engine's (N).  With the asymmetric fence the
	 * engine's membarrier(GLOBAL_EXPEDITED) orders us; else a full
	 * fence here. */
	if (r->asym_fence)
		atomic_signal_fence(memory_order_seq_cst);
	else
		atomic_thread_fence(memory_order_seq_cst);
	/* relaxed: the fence above provides the ordering. */
	if (COROTOP_UNLIKELY(atomic_load_explicit(&hdr->tracer_sleeping,
						  memory_order_relaxed) == 1))
		probe_wake(r);
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

/* The coroutine's station, or NULL when it has none in this attachment. */
static inline struct ctp_station *coro_station(struct corotop_coro *c,
					       const struct probe_region *r)
{
	if (COROTOP_UNLIKELY(c->attach != r->attach))
		c->station = NULL;
	return c->station;
}

/* The sampler's tag frame for c running on station s. */
static inline uint64_t coro_tag(const struct corotop_coro *c,
				struct ctp_station *s)
{
	/* relaxed: our own station; we bumped gen when we took it. */
	uint64_t gen = atomic_load_explicit(&s->ext.gen, memory_order_relaxed);

	return CT_TAG_CORO | (gen & 0xffffu) << 32 | c->index;
}

/* The parked-stack word of a slot (8-aligned: reserved is at 0x20). */
static inline uint64_t *coro_trace_word(struct ctp_epoch *e)
{
	return (uint64_t *)(void *)(e->reserved + CTP_EPOCH_TRACE_OFFSET);
}

COROTOP_API void corotop_coro_set_stack(struct corotop_coro *c, const void *lo,
					const void *hi)
{
	uintptr_t l = (uintptr_t)lo, h = (uintptr_t)hi;

	if (!l || h <= l)
		l = h = 0;
	c->stack_lo = l;
	c->stack_hi = h;
}

COROTOP_API void corotop_coro_open(struct corotop_coro *c, uint64_t probe_id)
{
	struct probe_region *r;

	c->station = NULL;
	c->n = 0;
	c->probe_id = probe_id ? probe_id : (uint64_t)(uintptr_t)c;
	c->birth_ts = 0;
	c->index = 0;
	c->attach = 0;
	c->stack_lo = 0;
	c->stack_hi = 0;
	c->lap_check = UINT64_MAX;
	c->chk_n = c->chk_ts = c->wake_ns = 0;
	r = probe_region();
	if (!r)
		return;
	c->birth_ts = probe_now();
	/* No station: it is retried, and counted untraced, at each
	 * transition (docs/JSON.md: untraced counts transitions). */
	(void)coro_acquire(c, r);
}

/*
 * One transition recorded in region r.  Inlined twice below: once for the
 * region from the environment, whose address is a constant (so its fields
 * are loaded as directly as globals), once for a region that came through
 * a rendezvous.
 */
static inline __attribute__((always_inline)) void
coro_record_in(struct corotop_coro *c, struct probe_region *r, int is_active,
	       uint64_t addr)
{
	struct probe_thread *t = &probe_self;
	struct ctp_station *s;
	struct ctp_epoch *e;
	uint64_t n, now, trace = 0;

	s = coro_station(c, r);
	if (COROTOP_UNLIKELY(!s)) {
		if (coro_acquire(c, r))
			s = c->station;
		else
			coro_untraced(r);
	}
	/* relaxed: a stale value only delays the set-up by one transition;
	 * probe_thread_sync acquires it. */
	if (COROTOP_UNLIKELY(t->epoch !=
			     atomic_load_explicit(&probe_capture_epoch,
						  memory_order_relaxed)))
		(void)probe_thread_sync(t);
	if (is_active) {
		if (t->sampling)
			probe_thread_enter(t, s ? coro_tag(c, s) : 0, c);
	} else {
		if (t->sampling)
			probe_thread_leave(t);
		if (t->parked && s)
			trace = probe_thread_parked(t, c);
	}
	if (COROTOP_UNLIKELY(!s))
		return;
	n = c->n++;
	now = probe_now();
	if (r->deep_rings) {
		e = &r->deep_rings[(size_t)c->index * r->depth +
				   (n & (r->depth - 1))];
		/* One compare while the engine keeps up (ctp.h, R/S). */
		if (COROTOP_UNLIKELY(n >= c->lap_check))
			probe_lap(c, r, n, now);
	} else {
		e = &s->slots[n % CTP_SLOTS];
	}
	/* (A) odd seq first; the release fence keeps the payload stores
	 * below from becoming visible before it.  The store itself is a
	 * release too: an engine that sees any seq of ours also sees the
	 * station's magic (free on x86). */
	atomic_store_explicit(&e->seq, 2 * n + 1, memory_order_release);
	atomic_thread_fence(memory_order_release);
	/* (B) payload: relaxed atomics, so a racing reader is not UB. */
	__atomic_store_n(&e->timestamp, now, __ATOMIC_RELAXED);
	__atomic_store_n(&e->tid, probe_tid(), __ATOMIC_RELAXED);
	__atomic_store_n(&e->addr, addr, __ATOMIC_RELAXED);
	__atomic_store_n(&e->is_active, (uint8_t)(is_active != 0),
			 __ATOMIC_RELAXED);
	__atomic_store_n(coro_trace_word(e), trace, __ATOMIC_RELAXED);
	/* (C) release pairs with the engine's acquire load (D). */
	atomic_store_explicit(&e->seq, ctp_event_seq(n), memory_order_release);
	coro_check_sleeping(r);
	coro_mark(r, c->index);
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
		c->lap_check = n + r->depth / 2;
		return;
	}
	c->lap_check = n + r->depth / 8;
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

COROTOP_API void corotop_coro_record_(struct corotop_coro *c, int is_active,
				      uint64_t addr)
{
	struct probe_region *r = probe_region();
	int hmem;

	/* The region from the environment stays for good: nothing to check,
	 * and its address is known. */
	if (COROTOP_LIKELY(r == &probe_env_region)) {
		coro_record_in(c, &probe_env_region, is_active, addr);
		return;
	}
	/* Untraced, or traced through corotop -p: an agent may have come or
	 * gone.  relaxed: a hint that an agent published or withdrew the
	 * probe's ppt buffer; rendezvous.c reads it again under its lock;
	 * probe_late_seen pairs with the relaxed store in probe_late_poll,
	 * and a stale value costs one more poll. */
	hmem = __atomic_load_n(&_ppt_hmem_corotop, __ATOMIC_RELAXED);
	if (hmem != __atomic_load_n(&probe_late_seen, __ATOMIC_RELAXED)) {
		probe_late_poll(hmem);
		r = probe_region();
	}
	if (COROTOP_UNLIKELY(!r))
		return;
	coro_record_in(c, r, is_active, addr);
}

COROTOP_API void corotop_coro_close(struct corotop_coro *c)
{
	struct probe_region *r = probe_region();
	struct ctp_station *s;

	/* Detached, or the station belongs to an earlier attachment whose
	 * mapping is gone: nothing to tell anyone. */
	if (!r || !coro_station(c, r)) {
		c->station = NULL;
		return;
	}
	s = c->station;
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
	coro_check_sleeping(r);
	coro_mark(r, c->index);
}
