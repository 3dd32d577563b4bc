/*
 * samples: CPU samples whose stacks the engine walks -- the probe's
 * sampler leaves each sample's registers and a copy of the stack's top in
 * the snapshot ring (corotop/snapring.h); here they are drained, unwound
 * with the target's CFI, and added to the hot stacks like the samples that
 * went to CallTrace.
 *
 * Why.  The sampler's own frame-pointer walk loses every frame of code
 * built without frame pointers (Debian's glibc, libstdc++, Boost) and, when
 * such a frame used the frame pointer register for data, everything above
 * it.  A DWARF unwinder cannot run in a signal handler; from a frozen copy
 * of the stack it can run anywhere, later.
 *
 * The stack of a sample.  The CFI walk (symtab_unwind_frames, reading only
 * the copy; no frame is looked up here, naming happens at rotation) from the
 * interrupted pc, sp and fp.  Where the copy ends before the stack does
 * (SNAP_COPY_MAX bytes), the handler's frame-pointer walk, which read the
 * live stack, is spliced on after the walk's last frame when it holds that
 * frame's return address.  The frame-pointer walk alone when the CFI walk
 * found fewer frames and no splice point.  The stack ends before its first
 * frame that is not a return address into the target's code (the pc: not
 * in code; framecheck.c), counted with the engine's other walks.  The
 * sample's tag frame goes last, as in CallTrace.
 *
 * A thread of its own.  A walk costs tens of microseconds, and the first
 * ones in a module load its CFI (about 100 ms): on the harvest thread they
 * would stall the harvest of cTP events for as long.  So the
 * samples thread drains the ring (SAMPLES_PER_POLL tickets a poll, a poll
 * every SAMPLES_IDLE_NS while it is empty), waits for the symbol table's
 * lock when the names thread holds it, and adds each stack to the traceset
 * being filled (walked[fill], under `lock`).  A rotation (harvest thread)
 * swaps the two sets under the lock and ingests the full one into the hot
 * stacks without it.  Ids are the engine's own (PARKED_OWN_ID | hash:
 * never a CallTrace id); stacks waiting make the next rotation happen.
 * The thread starts with the others (engine_live_start) and is joined
 * before the last rotation, which drains what is left on its caller.
 *
 * Faults.  The file is the target's to truncate: every read of it is under
 * the thread's own SIGBUS landing pad, and a fault abandons the ring (not
 * the rotor), with a message.
 *
 * Locks.  `lock` is a leaf: nothing else is taken while it is held (the
 * rotation takes the engine lock and hot_lock only after releasing it).
 */
#define _GNU_SOURCE
#include "engine/stacks/stacks_internal.h"

#include <stdio.h>
#include <string.h>

#include "engine/calltrace/hotstacks.h"
#include "engine/calltrace/parked.h"
#include "engine/calltrace/snapring.h"
#include "engine/target/framecheck.h"
#include "wire/cttable.h"
#include "common/clock.h"

/* Tickets consumed per poll at most. */
#define SAMPLES_PER_POLL 64u
/* The thread's pause when the ring is empty. */
#define SAMPLES_IDLE_NS 5000000u
/* A ticket not completed in this long was given up by its writer. */
#define SAMPLES_GRACE_NS 50000000ull
/* The ring: 512 records of 8.6 KiB (4.3 MiB), 0.25 s of samples at 997 Hz
 * on two busy cores, fifty of the thread's pauses. */
#define SAMPLES_RECORDS 512u
/* Distinct stacks kept between two rotations, and their frames. */
#define SAMPLES_TRACES 8192u

/* The copy as memory for the unwinder: [sp, sp + ncopy), 8-byte words. */
static bool samples_read(void *ctx, uint64_t addr, uint64_t *word)
{
	const struct snap_sample *s = ctx;

	if (addr < s->sp || (addr & 7) || addr - s->sp >= s->ncopy)
		return false;
	*word = s->stack[(addr - s->sp) / 8];
	return true;
}

/* Append fp frames after the CFI walk's last frame, from the first fp
 * frame (after the pc) holding the same return address. */
static size_t samples_splice(uint64_t *out, size_t n, size_t max,
			     const struct snap_sample *s)
{
	for (uint32_t j = 1; n >= 2 && j < s->nframes; j++) {
		if (s->frames[j] != out[n - 1])
			continue;
		for (j++; j < s->nframes && n < max; j++)
			out[n++] = s->frames[j];
		return n;
	}
	return 0;
}

static void samples_one(void *ctx, const struct snap_sample *s)
{
	struct samples_walk_scratch *w = ctx;
	struct stacks *sk = w->sk;
	struct stacks_samples *sm = &sk->ct.samples;
	struct unwinder_regs regs = {.pc = s->pc, .sp = s->sp, .fp = s->fp};
	size_t max = CT_MAX_FRAMES - 1, n = 0, walked = 0, sp;
	uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC), *cnt;
	enum framecheck_verdict why;
	bool kept;

	if (s->ncopy &&
	    symtab_unwind_frames(sk->env.symtab, &regs, samples_read, (void *)s,
				 w->frames, max, true,
				 &walked) == SYMTAB_UNWIND_DONE)
		n = walked;
	if (n >= 2 && n >= s->nframes) {
		cnt = &sm->st.cfi;
	} else if (n >= 2 && s->ncopy == SNAP_COPY_MAX &&
		   (sp = samples_splice(w->frames, n, max, s))) {
		n = sp;
		cnt = &sm->st.spliced;
	} else if (n >= 2 && s->ncopy < SNAP_COPY_MAX) {
		/* The copy held the whole stack: the walk is the stack. */
		cnt = &sm->st.cfi;
	} else {
		n = s->nframes < max ? s->nframes : max;
		memcpy(w->frames, s->frames, n * sizeof(*w->frames));
		cnt = &sm->st.fp;
	}
	/* The pc, then return addresses: cut at the first that is not one
	 * -- in the target's mappings, while it is the only process
	 * sampled.  relaxed: a hint (stacks_ct.others); a child's first
	 * samples may be walked before it is seen, and cut. */
	if (!atomic_load_explicit(&sk->ct.others, memory_order_relaxed)) {
		n = framecheck_walk(stacks_fc(sk), w->frames, n,
				    FRAMECHECK_FROM_PC, &why);
		framecheck_count(stacks_fc(sk), why);
	}
	w->frames[n++] = s->tag;
	pthread_mutex_lock(&sm->lock);
	kept = traceset_add(
		&sm->walked[sm->fill],
		PARKED_OWN_ID | ct_hash(w->frames, (unsigned)n) >> 1,
		s->weight ? s->weight : 1, 1, w->frames, (uint32_t)n);
	(*cnt)++;
	sm->st.overflow += !kept;
	sm->st.walk_ns += clock_now_ns(CLOCK_MONOTONIC) - t0;
	pthread_mutex_unlock(&sm->lock);
}

/*
 * One poll of the ring -- every read of it, its header included -- under
 * a SIGBUS landing pad of this thread's own: a target that truncated the
 * file costs the ring, nothing else.  sigsetjmp saves no signal mask (no
 * syscall a poll): engine_sigbus is installed with SA_NODEFER, so a fault
 * leaves the mask as it was.  Returns the tickets the poll consumed (0:
 * none waiting, or the ring is dead).
 */
static uint64_t samples_poll(struct stacks *sk, uint64_t now)
{
	struct stacks_samples *sm = &sk->ct.samples;
	struct snapreader *rd = snapring_reader(sm->ring);
	struct snapreader_stats st;
	sigjmp_buf jb;
	sigjmp_buf *volatile outer = *sk->env.guard();
	volatile uint64_t tail0 = rd->st.tail;

	if (sm->dead)
		return 0;
	if (sigsetjmp(jb, 0)) {
		*sk->env.guard() = outer;
		sm->dead = true;
		pthread_mutex_lock(&sm->lock);
		snprintf(sm->error, sizeof(sm->error),
			 "snapshots: reading %s faulted (SIGBUS: truncated%s); "
			 "samples go on through CallTrace only",
			 snapring_path(sm->ring),
			 snapring_size_ok(sm->ring) ? "?" : "");
		sm->failed = true;
		pthread_mutex_unlock(&sm->lock);
		return 0;
	}
	*sk->env.guard() = &jb;
	sm->scratch.sk = sk;
	if (!snapreader_pending(rd)) {
		*sk->env.guard() = outer;
		return 0;
	}
	snapreader_poll(rd, now, samples_one, &sm->scratch, SAMPLES_PER_POLL);
	snapreader_stats(rd, &st);
	*sk->env.guard() = outer;
	pthread_mutex_lock(&sm->lock);
	sm->ring_st = st;
	pthread_mutex_unlock(&sm->lock);
	return st.tail != tail0 ? st.tail - tail0 : 0;
}

static void *samples_main(void *arg)
{
	struct stacks *sk = arg;
	struct stacks_samples *sm = &sk->ct.samples;
	struct timespec idle = {0, SAMPLES_IDLE_NS};

	/* acquire: pairs with stacks_samples_stop's release store. */
	while (!atomic_load_explicit(&sm->stop, memory_order_acquire) &&
	       !sm->dead)
		if (!samples_poll(sk, clock_now_ns(CLOCK_MONOTONIC)))
			nanosleep(&idle, NULL);
	return NULL;
}

bool stacks_samples_create(struct stacks *sk, char *err, size_t errlen)
{
	struct stacks_samples *sm = &sk->ct.samples;

	if (!sk->cfg.sample_hz || !sk->cfg.sample_snapshots || !sk->ct.rotor)
		return true;
	sm->ring =
		snapring_create(sk->env.region->dir, rotor_base(sk->ct.rotor),
				SAMPLES_RECORDS, SAMPLES_GRACE_NS, err, errlen);
	if (!sm->ring)
		return false;
	for (int i = 0; i < 2; i++)
		traceset_init(&sm->walked[i], SAMPLES_TRACES,
			      (size_t)SAMPLES_TRACES * CT_MAX_FRAMES / 4);
	pthread_mutex_init(&sm->lock, NULL);
	sm->inited = true;
	return true;
}

bool stacks_samples_start(struct stacks *sk, char *err, size_t errlen)
{
	struct stacks_samples *sm = &sk->ct.samples;
	int rc;

	if (!sm->inited || sm->running)
		return true;
	rc = pthread_create(&sm->thread, NULL, samples_main, sk);
	if (rc) {
		snprintf(err, errlen, "cannot start a thread: %s",
			 strerror(rc));
		return false;
	}
	sm->running = true;
	return true;
}

void stacks_samples_stop(struct stacks *sk)
{
	struct stacks_samples *sm = &sk->ct.samples;

	if (!sm->running)
		return;
	/* release: pairs with the thread's acquire load. */
	atomic_store_explicit(&sm->stop, true, memory_order_release);
	pthread_join(sm->thread, NULL);
	sm->running = false;
}

void stacks_samples_destroy(struct stacks *sk)
{
	struct stacks_samples *sm = &sk->ct.samples;

	stacks_samples_stop(sk);
	snapring_destroy(sm->ring);
	if (sm->inited) {
		for (int i = 0; i < 2; i++)
			traceset_finish(&sm->walked[i]);
		pthread_mutex_destroy(&sm->lock);
	}
	memset(sm, 0, sizeof(*sm));
}

void stacks_samples_unlink(const struct stacks *sk)
{
	snapring_unlink(sk->ct.samples.ring);
}

bool stacks_samples_waiting(struct stacks *sk)
{
	struct stacks_samples *sm = &sk->ct.samples;
	bool waiting;

	if (!sm->inited)
		return false;
	pthread_mutex_lock(&sm->lock);
	waiting = sm->walked[sm->fill].n > 0;
	pthread_mutex_unlock(&sm->lock);
	return waiting;
}

void stacks_samples_final(struct stacks *sk)
{
	struct stacks_samples *sm = &sk->ct.samples;
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC);

	if (!sm->inited)
		return;
	stacks_samples_stop(sk);
	/* What is left, on this thread now (a ticket still being written is
	 * not waited for); bounded: a ring's worth, a poll at a time. */
	for (unsigned i = 0; i <= SAMPLES_RECORDS / SAMPLES_PER_POLL; i++)
		if (!samples_poll(sk, now))
			break;
}

void stacks_samples_ingest(struct stacks *sk, uint64_t now)
{
	struct stacks_samples *sm = &sk->ct.samples;
	struct traceset *full;
	uint64_t *owner;

	if (!sm->inited)
		return;
	pthread_mutex_lock(&sm->lock);
	full = &sm->walked[sm->fill];
	sm->fill ^= 1;
	pthread_mutex_unlock(&sm->lock);
	if (full->n) {
		traceset_seal(full);
		pthread_mutex_lock(sk->env.lock);
		owner = stacks_ct_resolve(sk, full);
		pthread_mutex_unlock(sk->env.lock);
		pthread_mutex_lock(&sk->ct.hot_lock);
		hotstacks_ingest(sk->ct.hot, full, owner, now);
		pthread_mutex_unlock(&sk->ct.hot_lock);
		traceset_clear(full);
	}
}

void stacks_samples_stats(struct stacks *sk, struct engine_calltrace_stats *out)
{
	struct stacks_samples *sm = &sk->ct.samples;

	if (!sm->inited)
		return;
	pthread_mutex_lock(&sm->lock);
	out->snapshots.enabled = true;
	out->snapshots.failed = sm->failed;
	out->snapshots.taken = sm->ring_st.taken;
	out->snapshots.lapped = sm->ring_st.lapped;
	out->snapshots.torn = sm->ring_st.torn;
	out->snapshots.skipped = sm->ring_st.skipped;
	out->snapshots.bad = sm->ring_st.bad;
	out->snapshots.busy = sm->ring_st.busy;
	out->snapshots.cfi = sm->st.cfi;
	out->snapshots.spliced = sm->st.spliced;
	out->snapshots.fp = sm->st.fp;
	out->snapshots.overflow = sm->st.overflow;
	out->snapshots.walk_ns = sm->st.walk_ns;
	if (sm->error[0] && !out->warning[0])
		snprintf(out->warning, sizeof(out->warning), "%s", sm->error);
	pthread_mutex_unlock(&sm->lock);
}
