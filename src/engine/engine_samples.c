/*
 * engine_samples: CPU samples whose stacks the engine walks -- the probe's
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
 * (SNAP_COPY_MAX bytes), the handler's frame-pointer walk, which read the live
 * stack, is spliced on after the walk's last frame when it holds that frame's
 * return address.  The frame-pointer walk alone when the CFI walk could not run
 * (the names thread held the symbols: the harvest thread never waits for it) or
 * found fewer frames and no splice point. The sample's tag frame goes last, as
 * in CallTrace.
 *
 * Cadence.  Drained on every harvest-loop pass that finds tickets waiting
 * (a relaxed load of the ring's head otherwise), at most SAMPLES_PER_PASS
 * a pass; walked stacks are kept in a traceset of the engine's own ids
 * (PARKED_OWN_ID | hash: never a CallTrace id) and go into the hot stacks
 * at the next rotation, which their presence triggers.  The engine sleeps
 * at most SAMPLES_SLEEP_MS while the ring exists (engine.c), so a ring of
 * SAMPLES_RECORDS holds several sleeps' worth of samples at 997 Hz on
 * every core.
 *
 * Faults.  The file is the target's to truncate: the drain runs under the
 * CallTrace SIGBUS guard, and a fault abandons the ring (not the rotor).
 */
#define _GNU_SOURCE
#include "engine/engine_internal.h"

#include <stdio.h>
#include <string.h>

#include "engine/calltrace/snapring.h"
#include "wire/cttable.h"
#include "common/clock.h"

/* Tickets consumed per harvest pass at most (the walks are ~20 us each). */
#define SAMPLES_PER_PASS 256u
/* A ticket not completed in this long was given up by its writer. */
#define SAMPLES_GRACE_NS 50000000ull
/* The ring: 512 records of 8.6 KiB (4.3 MiB), 0.25 s of samples at 997 Hz
 * on two busy cores; the engine sleeps at most SAMPLES_SLEEP_MS. */
#define SAMPLES_RECORDS 512u
#define SAMPLES_SLEEP_MS 100u
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
	struct engine *e = w->e;
	struct engine_samples *sm = &e->ct.samples;
	struct unwinder_regs regs = {.pc = s->pc, .sp = s->sp, .fp = s->fp};
	size_t max = CT_MAX_FRAMES - 1, n = 0, walked = 0, sp;
	enum symtab_unwind_rc rc = SYMTAB_UNWIND_NONE;
	uint64_t t0 = clock_now_ns(CLOCK_MONOTONIC);

	if (s->ncopy)
		rc = symtab_unwind_frames(&e->symtab, &regs, samples_read,
					  (void *)s, w->frames, max, &walked);
	if (rc == SYMTAB_UNWIND_DONE)
		n = walked;
	if (rc == SYMTAB_UNWIND_BUSY)
		sm->st.busy++;
	if (n >= 2 && n >= s->nframes) {
		sm->st.cfi++;
	} else if (n >= 2 && s->ncopy == SNAP_COPY_MAX &&
		   (sp = samples_splice(w->frames, n, max, s))) {
		n = sp;
		sm->st.spliced++;
	} else if (n >= 2 && s->ncopy < SNAP_COPY_MAX) {
		/* The copy held the whole stack: the walk is the stack. */
		sm->st.cfi++;
	} else {
		n = s->nframes < max ? s->nframes : max;
		memcpy(w->frames, s->frames, n * sizeof(*w->frames));
		sm->st.fp++;
	}
	w->frames[n++] = s->tag;
	if (!traceset_add(&sm->walked,
			  PARKED_OWN_ID | ct_hash(w->frames, (unsigned)n) >> 1,
			  s->weight ? s->weight : 1, 1, w->frames, (uint32_t)n))
		sm->st.overflow++;
	sm->st.walk_ns += clock_now_ns(CLOCK_MONOTONIC) - t0;
}

bool engine_samples_create(struct engine *e, char *err, size_t errlen)
{
	struct engine_samples *sm = &e->ct.samples;

	if (!e->cfg.sample_hz || !e->cfg.sample_snapshots || !e->ct.rotor)
		return true;
	sm->ring =
		snapring_create(e->region.dir, rotor_base(e->ct.rotor),
				SAMPLES_RECORDS, SAMPLES_GRACE_NS, err, errlen);
	if (!sm->ring)
		return false;
	if (e->cfg.sleep_max_ms > SAMPLES_SLEEP_MS)
		e->cfg.sleep_max_ms = SAMPLES_SLEEP_MS;
	traceset_init(&sm->walked, SAMPLES_TRACES,
		      (size_t)SAMPLES_TRACES * CT_MAX_FRAMES / 4);
	sm->inited = true;
	return true;
}

void engine_samples_destroy(struct engine *e)
{
	struct engine_samples *sm = &e->ct.samples;

	snapring_destroy(sm->ring);
	if (sm->inited)
		traceset_finish(&sm->walked);
	memset(sm, 0, sizeof(*sm));
}

void engine_samples_unlink(const struct engine *e)
{
	snapring_unlink(e->ct.samples.ring);
}

/* The drain -- every read of the ring, its header included -- under a
 * SIGBUS landing pad of its own: a target that truncated the file costs
 * the ring, nothing else.  sigsetjmp saves no signal mask (no syscall on
 * every harvest pass): engine_sigbus is installed with SA_NODEFER, so a
 * fault leaves the mask as it was. */
static void samples_drain_guarded(struct engine *e,
				  struct samples_walk_scratch *w)
{
	struct engine_samples *sm = &e->ct.samples;
	struct snapreader *rd = snapring_reader(sm->ring);
	sigjmp_buf jb;
	sigjmp_buf *volatile outer = engine_guard;

	if (sigsetjmp(jb, 0)) {
		engine_guard = outer;
		sm->dead = true;
		pthread_mutex_lock(&e->ct.hot_lock);
		snprintf(sm->error, sizeof(sm->error),
			 "snapshots: reading %s faulted (SIGBUS: truncated%s); "
			 "samples go on through CallTrace only",
			 snapring_path(sm->ring),
			 snapring_size_ok(sm->ring) ? "?" : "");
		pthread_mutex_unlock(&e->ct.hot_lock);
		return;
	}
	engine_guard = &jb;
	if (snapreader_pending(rd)) {
		snapreader_poll(rd, w->now, samples_one, w, SAMPLES_PER_PASS);
		snapreader_stats(rd, &sm->ring_st);
	}
	engine_guard = outer;
}

bool engine_samples_drain(struct engine *e, uint64_t now)
{
	struct engine_samples *sm = &e->ct.samples;
	struct samples_walk_scratch *w;

	if (!sm->ring || sm->dead)
		return sm->walked.n > 0;
	w = &sm->scratch;
	w->e = e;
	w->now = now;
	samples_drain_guarded(e, w);
	return sm->walked.n > 0;
}

void engine_samples_ingest(struct engine *e, uint64_t now)
{
	struct engine_samples *sm = &e->ct.samples;
	uint64_t *owner;

	if (!sm->inited)
		return;
	if (sm->walked.n) {
		traceset_seal(&sm->walked);
		pthread_mutex_lock(&e->lock);
		owner = engine_ct_resolve(e, &sm->walked);
		pthread_mutex_unlock(&e->lock);
		pthread_mutex_lock(&e->ct.hot_lock);
		hotstacks_ingest(e->ct.hot, &sm->walked, owner, now);
		pthread_mutex_unlock(&e->ct.hot_lock);
		traceset_clear(&sm->walked);
	}
	pthread_mutex_lock(&e->ct.hot_lock);
	sm->shown.ring = sm->ring_st;
	sm->shown.walk = sm->st;
	pthread_mutex_unlock(&e->ct.hot_lock);
}
