/*
 * pptagent: attach to one ppt buffer of a running process, read its frames,
 * resize its data block, detach.
 *
 * Attach, in the protocol's order (ppt-ptrace-protocol.md):
 *   1. _json (pptsym_json), parsed, ABI 1.x; then the symbols corotop will
 *      write are checked (pptsym_check: sizes, writable memory);
 *   2. _stat: 0, or a pid we may take over (--force-attach); then our pid.
 *      The read and the write happen while the target's main thread is
 *      seized (best effort: a debugger that holds it only costs us that);
 *   3. shared memory: shmget(IPC_PRIVATE, 0600), control block filled in,
 *      data block (static: after the control block; dynamic: its own
 *      segment, linked by data_block_hmem); each segment is marked IPC_RMID
 *      as soon as we have mapped it, which Linux allows the client to shmat
 *      still: the segments vanish with the last mapping, whoever dies first
 *      and however;
 *   4. _hmem last (process_vm_writev, a full barrier: A in corotop/ppt.h).
 * A failure at any step undoes the steps before it in the target.
 *
 * Layouts.  The dynamic layout only for corotop's own client (its JSON tag
 * says so): the generator's code never reads data_block_hmem, and would
 * take a control segment of 440 bytes for a ring of garbage size.  In the
 * static layout the generator's revisions put the frames at different
 * offsets (440 rounded up to the frame size, or 440 + 440 % size; 464 with
 * kernel headers from 6.3 on, whose perf_event_attr is 136 bytes) and
 * rotate the slots differently: the first poll that finds whole frames
 * tries each offset (pptreader_sync learns the rotation) and keeps the one
 * the frames agree with.
 *
 * --force-attach over a client that still holds an old segment: the
 * generator's client attaches only when it holds none, and lets go only
 * when it finds _hmem at 0 at a save.  So _hmem goes to 0 first
 * (UNHOOKING), and our segment is published once the old one shows the
 * client's detach (its shm_dtime moved, or it is gone).
 *
 * Displaced.  Another agent's --force-attach writes its pid into _stat
 * and its segment into _hmem; nothing tells us.  So a live agent reads
 * _stat (and, attached, _hmem) every AGENT_CHECK_NS: a pid not ours, or
 * another segment, means the buffer is lost (PPTAGENT_LOST, the warning
 * naming the new holder).  It lets go of its segments and never writes to
 * the target again: the words are the new holder's.
 *
 * Polling.  pptreader accounts for every index once.  A poll reads at most
 * one ring's worth, so the lock the engine holds around it is released
 * between buffers.  Frames are copied into a history ring of the newest
 * (16 MiB at most per buffer) for display.
 *
 * Resize (dynamic layout).  A new data segment goes into data_block_hmem
 * (E); once the client's ack appears in data_block_hmem_attached (G), the
 * old block gets no new frames -- but a writer that loaded the old block
 * just before may still be finishing one, so the old block is drained for
 * a grace period before the reader moves to the new block.  Lost frames in
 * a dynamic block grow it (x4, bounded) when the engine asks for that.
 */
#define _GNU_SOURCE
#include "engine/ppt/pptagent.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <time.h>
#include <unistd.h>

#include "engine/ppt/pptsym.h"
#include "common/clock.h"
#include "wire/shmfresh.h"

/* Frames copied per pptreader_poll call, and the history's byte budget. */
#define AGENT_SCRATCH_BYTES (1u << 20)
#define AGENT_HISTORY_BYTES (16u << 20)
/* Grace for writers still inside an old block after the client's ack. */
#define AGENT_DRAIN_NS 20000000ull
/* How often a waiting agent checks that _hmem still names its segment. */
#define AGENT_CHECK_NS 100000000ull
#define AGENT_REWRITES 3u
/* The generated control block: 440 bytes, 464 with 136-byte
 * perf_event_attr (Linux headers 6.3 and later). */
#define AGENT_CTL_GEN_NEW 464u

static uint64_t agent_round_up(uint64_t v, uint64_t m)
{
	return (v + m - 1) / m * m;
}

/*
 * A new private segment of `size` bytes, mapped here and already marked
 * for removal.  Id 0 can not be published (0 means "none" in _hmem and in
 * data_block_hmem), so a segment that gets it is kept aside while another
 * is made, then removed.  Returns the id, or -1 with a message.
 */
static int agent_shm_create(size_t size, bool rdonly, void **map, char *err,
			    size_t errlen)
{
	int id = -1, held = -1;

	for (int tries = 0; tries < 2; tries++) {
		id = shmget(IPC_PRIVATE, size, IPC_CREAT | IPC_EXCL | 0600);
		if (id != 0)
			break;
		held = id;
	}
	if (held >= 0)
		shmctl(held, IPC_RMID, NULL);
	if (id <= 0) {
		snprintf(err, errlen,
			 "cannot create a %zu-byte SysV shared memory segment: "
			 "%s (see kernel.shmmax and kernel.shmall)",
			 size, id < 0 ? strerror(errno) : "id 0 twice");
		return -1;
	}
	*map = shm_attach_fresh(id, size, rdonly ? SHM_RDONLY : 0);
	if (*map == (void *)-1) {
		snprintf(err, errlen, "cannot map segment %d: %s", id,
			 strerror(errno));
		shmctl(id, IPC_RMID, NULL);
		*map = NULL;
		return -1;
	}
	/* Marked now: it lives exactly as long as someone maps it. */
	shmctl(id, IPC_RMID, NULL);
	return id;
}

static void agent_unmap(const void **map)
{
	if (*map)
		shmdt(*map);
	*map = NULL;
}

static bool agent_read_i32(struct pptagent *a, uint64_t addr, int32_t *v,
			   char *err, size_t errlen)
{
	return procmem_read(a->pm, addr, v, sizeof(*v), err, errlen);
}

static bool agent_write_i32(struct pptagent *a, uint64_t addr, int32_t v,
			    char *err, size_t errlen)
{
	return procmem_write(a->pm, addr, &v, sizeof(v), err, errlen);
}

/*
 * Step 2: _stat from 0 (or a pid --force-attach may replace) to ours, with
 * the target's main thread seized so that another ptrace-based agent can
 * not interleave its own check-and-set.
 */
static bool agent_claim(struct pptagent *a, char *err, size_t errlen)
{
	int32_t holder = 0, me = (int32_t)getpid();
	bool seized = procmem_seize(a->pm) == 0, ok = false;

	if (!agent_read_i32(a, a->sym.stat_addr, &holder, err, errlen))
		goto out;
	if (holder != 0 && !a->cfg.force) {
		/* Our own pid there is a leftover of an earlier process that
		 * had it: pids are reused. */
		bool alive = holder != me && holder > 0 &&
			     procmem_alive((pid_t)holder);

		snprintf(err, errlen,
			 "buffer %s of process %d is in use by ppt agent pid "
			 "%d, %s; --force-attach takes it over",
			 a->sym.name, (int)a->pm->pid, (int)holder,
			 alive ? "which is still running (detach it first)"
			       : "which is not running any more (an agent "
				 "killed before it could detach)");
		goto out;
	}
	ok = agent_write_i32(a, a->sym.stat_addr, me, err, errlen);
out:
	if (seized)
		procmem_release(a->pm);
	return ok;
}

/* --force-attach: if _hmem names an old segment, set it to 0 and remember
 * when that segment was last let go of, to see the client's detach. */
static void agent_unhook_stale(struct pptagent *a)
{
	int32_t old = 0;
	char err[64];
	struct shmid_ds ds;

	a->stale_id = -1;
	if (!agent_read_i32(a, a->sym.hmem_addr, &old, err, sizeof(err)) ||
	    old <= 0 || shmctl(old, IPC_STAT, &ds) < 0 || ds.shm_nattch == 0)
		return; /* nothing there, or nobody holds it */
	if (!agent_write_i32(a, a->sym.hmem_addr, 0, err, sizeof(err)))
		return;
	a->stale_id = old;
	a->stale_dtime = (int64_t)ds.shm_dtime;
}

/* The client let go of the stale segment: it is gone, or the target
 * detached from it after we unhooked it. */
static bool agent_unhooked(const struct pptagent *a)
{
	struct shmid_ds ds;

	if (shmctl(a->stale_id, IPC_STAT, &ds) < 0)
		return true;
	return ds.shm_lpid == a->pm->pid &&
	       (int64_t)ds.shm_dtime > a->stale_dtime;
}

/*
 * Where the client may put the frames of a static segment of `size` bytes:
 * ours first (corotop's client), then the generator's revisions'.  Two
 * offsets a whole frame apart read the same frames one slot apart, which
 * no frame can tell from the other: of such a pair, the earlier in this
 * order is kept.
 */
static void agent_offsets(struct pptagent *a, size_t size)
{
	uint32_t fs = a->desc.frame_size;
	uint32_t cand[4] = {
		(uint32_t)agent_round_up(sizeof(struct ppt_control), fs),
		(uint32_t)(sizeof(struct ppt_control) +
			   sizeof(struct ppt_control) % fs),
		(uint32_t)agent_round_up(AGENT_CTL_GEN_NEW, fs),
		AGENT_CTL_GEN_NEW + AGENT_CTL_GEN_NEW % fs,
	};

	a->noffsets = 0;
	for (int i = 0; i < 4; i++) {
		bool alias = false;

		for (uint32_t k = 0; k < a->noffsets; k++)
			alias |= a->offsets[k] % fs == cand[i] % fs;
		if (!alias && cand[i] + (size_t)fs <= size)
			a->offsets[a->noffsets++] = cand[i];
	}
}

/* Step 3: the segments, their control block, and our reader. */
static bool agent_segments(struct pptagent *a, char *err, size_t errlen)
{
	uint64_t fs = a->desc.frame_size;
	size_t ctl_size = sizeof(struct ppt_control);
	struct ppt_control *ctl;
	void *map;

	if (a->rendezvous)
		ctl_size =
			COROTOP_RDV_OFFSET + sizeof(struct corotop_rendezvous);
	if (!a->dynamic) {
		uint64_t off = agent_round_up(sizeof(*ctl), fs);

		/* Room for nframes at the largest offset a client may use. */
		ctl_size = (size_t)(off + (a->nframes + 1) * fs);
		a->ctl_id =
			agent_shm_create(ctl_size, false, &map, err, errlen);
		if (a->ctl_id < 0)
			return false;
		agent_offsets(a, ctl_size);
		a->data = (const unsigned char *)map + off;
		a->data_size = (size_t)(a->nframes * fs);
	} else {
		a->ctl_id =
			agent_shm_create(ctl_size, false, &map, err, errlen);
		if (a->ctl_id < 0)
			return false;
		a->data_size = (size_t)(a->nframes * fs);
		a->data_id = agent_shm_create(a->data_size, true,
					      (void **)&a->data, err, errlen);
		if (a->data_id < 0) {
			shmdt(map);
			return false;
		}
	}
	a->ctl_map = map;
	a->ctl_size = ctl_size;
	ctl = map;
	ctl->control_blk_sz = sizeof(*ctl);
	ctl->data_block_hmem = a->dynamic ? (uint64_t)a->data_id : 0;
	ctl->nr_perf_ctrs = a->cfg.ncounters;
	memcpy(ctl->counterdata, a->cfg.counters, sizeof(ctl->counterdata));
	if (a->rendezvous)
		memcpy((unsigned char *)map + COROTOP_RDV_OFFSET, a->cfg.rdv,
		       sizeof(*a->cfg.rdv));
	pptreader_init(&a->reader, a->data, a->nframes, (uint32_t)fs,
		       a->desc.front_off, a->desc.back_off, 1);
	return true;
}

static void agent_unmap_all(struct pptagent *a);

static bool agent_alloc(struct pptagent *a, char *err, size_t errlen)
{
	size_t fs = a->desc.frame_size;
	uint32_t want = a->cfg.history ? a->cfg.history : 4096;

	/* Budgets in bytes: the frame size comes from the target. */
	a->hist_cap = want < AGENT_HISTORY_BYTES / fs
			      ? want
			      : (uint32_t)(AGENT_HISTORY_BYTES / fs);
	a->scratch_cap = AGENT_SCRATCH_BYTES / fs;
	if (!a->hist_cap)
		a->hist_cap = 1;
	if (!a->scratch_cap)
		a->scratch_cap = 1;
	a->hist = calloc(a->hist_cap, fs);
	a->hist_meta = calloc(a->hist_cap, sizeof(*a->hist_meta));
	a->scratch = malloc(a->scratch_cap * fs);
	a->scratch_idx = malloc(a->scratch_cap * sizeof(*a->scratch_idx));
	if (a->hist && a->hist_meta && a->scratch && a->scratch_idx)
		return true;
	snprintf(err, errlen, "out of memory for buffer %s", a->sym.name);
	return false;
}

/* Steps 1 and the checks before any write. */
static bool agent_describe(struct pptagent *a, char *err, size_t errlen)
{
	char why[384];
	char *json = pptsym_json(a->pm, &a->sym, why, sizeof(why));
	enum pptdesc_status ds;

	if (!json) {
		snprintf(err, errlen, "buffer %s: %s", a->sym.name, why);
		return false;
	}
	ds = pptdesc_parse(json, strlen(json), &a->desc, why, sizeof(why));
	free(json);
	if (ds != PPTDESC_OK) {
		snprintf(err, errlen, "buffer %s: %s%s", a->sym.name,
			 ds == PPTDESC_BAD_JSON ? "its _json is not a ppt "
						  "description: "
						: "",
			 why);
		return false;
	}
	a->have_desc = true;
	return pptsym_check(a->pm, &a->sym, err, errlen);
}

bool pptagent_attach(struct pptagent *a, struct procmem *pm,
		     const struct pptfind_buffer *sym,
		     const struct pptagent_config *cfg, char *err,
		     size_t errlen)
{
	char why[384];

	memset(a, 0, sizeof(*a));
	a->sym = *sym;
	a->pm = pm;
	a->cfg = *cfg;
	a->ctl_id = a->data_id = a->next_id = a->stale_id = -1;
	if (!agent_describe(a, err, errlen))
		goto fail;
	a->rendezvous = a->desc.rendezvous && cfg->rdv;
	a->dynamic =
		a->rendezvous || (a->desc.resize && a->desc.corotop_client);
	if (a->desc.resize && !a->desc.corotop_client)
		snprintf(a->warning, sizeof(a->warning),
			 "asks for a resizable block, but its client is not "
			 "corotop's and reads only the static layout: "
			 "attached static");
	a->nframes = cfg->nframes ? cfg->nframes : PPTAGENT_DEFAULT_FRAMES;
	if (a->nframes > PPTAGENT_MAX_FRAMES)
		a->nframes = PPTAGENT_MAX_FRAMES;
	while (a->nframes > 1 &&
	       a->nframes * a->desc.frame_size > PPTAGENT_MAX_BYTES)
		a->nframes /= 2;
	if (!agent_alloc(a, err, errlen))
		goto fail;
	/* 2. _stat. */
	if (!agent_claim(a, why, sizeof(why))) {
		snprintf(err, errlen, "%s", why);
		goto fail;
	}
	if (cfg->force)
		agent_unhook_stale(a);
	/* 3. the segments. */
	if (!agent_segments(a, why, sizeof(why))) {
		snprintf(err, errlen, "buffer %s: %s", sym->name, why);
		goto fail_stat;
	}
	/* 4. _hmem last: the client may attach from now on -- or, over a
	 * client that holds an old segment, once it let go (pptagent_poll). */
	a->st.attach_ns = clock_now_ns(CLOCK_MONOTONIC);
	if (a->stale_id >= 0) {
		a->state = PPTAGENT_UNHOOKING;
		return true;
	}
	if (!agent_write_i32(a, sym->hmem_addr, a->ctl_id, why, sizeof(why))) {
		snprintf(err, errlen, "buffer %s: %s", sym->name, why);
		goto fail_segments;
	}
	a->state = PPTAGENT_WAITING;
	return true;

fail_segments:
	agent_unmap_all(a);
fail_stat:
	agent_write_i32(a, sym->stat_addr, 0, why, sizeof(why));
fail:
	pptagent_finish(a);
	return false;
}

/* Append delivered frames to the history ring. */
static void agent_keep(struct pptagent *a, size_t n, uint64_t now)
{
	size_t fs = a->desc.frame_size;

	for (size_t i = 0; i < n; i++) {
		uint64_t pos = a->hist_pos++;
		uint32_t slot = (uint32_t)(pos % a->hist_cap);

		memcpy(a->hist + (size_t)slot * fs, a->scratch + i * fs, fs);
		a->hist_meta[slot] = (struct pptagent_frame){
			.pos = pos, .index = a->scratch_idx[i], .ts = now};
	}
	if (n && !a->st.first_frame_ns)
		a->st.first_frame_ns = now;
}

/* The resize in flight is acknowledged and drained: read from the new
 * block from now on, and let go of the old one. */
static void agent_switch(struct pptagent *a)
{
	const void *old = a->data;

	a->data = a->next_data;
	a->data_size = a->next_size;
	a->nframes = a->next_nframes;
	a->data_id = a->next_id;
	a->next_data = NULL;
	a->next_id = -1;
	a->ack_ns = 0;
	pptreader_rebase(&a->reader, a->data, a->nframes);
	agent_unmap(&old);
	a->st.resizes++;
}

/* The first whole frames: in the static layout, find the offset they are
 * at (the one whose frames agree with a rotation the most). */
static bool agent_sync(struct pptagent *a)
{
	const unsigned char *seg = a->ctl_map;
	uint32_t fs = a->desc.frame_size;
	struct pptreader best = {0}, r;
	unsigned best_agree = 0, ties = 0;
	uint32_t best_off = 0;

	if (a->dynamic)
		return pptreader_sync(&a->reader) > 0;
	for (uint32_t k = 0; k < a->noffsets; k++) {
		uint64_t n = (a->ctl_size - a->offsets[k]) / fs;
		unsigned agree;

		pptreader_init(&r, seg + a->offsets[k], n, fs,
			       a->desc.front_off, a->desc.back_off, 1);
		agree = pptreader_sync(&r);
		if (agree > best_agree) {
			best = r;
			best_agree = agree;
			best_off = a->offsets[k];
			ties = 0;
		} else if (agree && agree == best_agree) {
			ties++;
		}
	}
	/* One frame that two offsets both read as whole: wait for more. */
	if (!best_agree || ties)
		return false;
	a->reader = best;
	a->data = seg + best_off;
	a->nframes = best.nframes;
	a->data_size = (size_t)(a->nframes * fs);
	return true;
}

/* Keep _hmem naming our segment while the client has not attached: a
 * generated client zeroes it when its attach fails. */
static void agent_check_hmem(struct pptagent *a, uint64_t now)
{
	int32_t h = 0;
	char err[64];

	if (now - a->hmem_checked < AGENT_CHECK_NS)
		return;
	a->hmem_checked = now;
	if (!agent_read_i32(a, a->sym.hmem_addr, &h, err, sizeof(err)) ||
	    h == a->ctl_id)
		return;
	if (h != 0 || a->rewrites >= AGENT_REWRITES) {
		snprintf(a->warning, sizeof(a->warning),
			 "_hmem is %d, not our segment %d: the client refused "
			 "it, or another agent took the buffer over",
			 (int)h, a->ctl_id);
		return;
	}
	a->rewrites++;
	agent_write_i32(a, a->sym.hmem_addr, a->ctl_id, err, sizeof(err));
}

/* Still ours?  _stat must hold our pid and, attached, _hmem our segment:
 * else another agent took the buffer over (--force-attach).  A failed read
 * proves nothing (the process may be exiting: the engine sees that). */
static bool agent_displaced(struct pptagent *a, uint64_t now)
{
	int32_t stat = 0, hmem = 0, me = (int32_t)getpid();
	char err[64];

	if (now - a->owner_checked < AGENT_CHECK_NS)
		return false;
	a->owner_checked = now;
	if (!agent_read_i32(a, a->sym.stat_addr, &stat, err, sizeof(err)))
		return false;
	if (stat == me &&
	    (a->state != PPTAGENT_ATTACHED ||
	     !agent_read_i32(a, a->sym.hmem_addr, &hmem, err, sizeof(err)) ||
	     hmem == a->ctl_id))
		return false;
	if (stat != me)
		snprintf(a->warning, sizeof(a->warning),
			 "lost the buffer: _stat is %d, not our pid %d -- "
			 "another agent took it over (--force-attach); no "
			 "frames come here any more",
			 (int)stat, (int)me);
	else
		snprintf(a->warning, sizeof(a->warning),
			 "lost the buffer: _hmem is %d, not our segment %d -- "
			 "another agent took it over; no frames come here any "
			 "more",
			 (int)hmem, a->ctl_id);
	agent_unmap_all(a);
	a->state = PPTAGENT_LOST;
	return true;
}

size_t pptagent_poll(struct pptagent *a, uint64_t now)
{
	struct ppt_control *ctl = a->ctl_map;
	uint64_t lost0 = a->reader.st.lost, flags;
	size_t total = 0, n;
	char err[160];

	if (pptagent_live(a->state) && agent_displaced(a, now))
		return 0;
	if (a->state == PPTAGENT_UNHOOKING) {
		if (!agent_unhooked(a))
			return 0;
		if (!agent_write_i32(a, a->sym.hmem_addr, a->ctl_id, err,
				     sizeof(err))) {
			snprintf(a->warning, sizeof(a->warning), "%s", err);
			return 0;
		}
		a->state = PPTAGENT_WAITING;
	}
	if (a->state != PPTAGENT_WAITING && a->state != PPTAGENT_ATTACHED)
		return 0;
	/* acquire: pairs with the client's release of its flags (B).  The
	 * generator's client sets no flags: its data_block_sz, or frames,
	 * tell that it attached. */
	flags = __atomic_load_n(&ctl->client_flags, __ATOMIC_ACQUIRE);
	if (a->state == PPTAGENT_WAITING &&
	    ((flags & PPT_CLIENT_FLAG_ATTACHED) ||
	     __atomic_load_n(&ctl->data_block_sz, __ATOMIC_RELAXED) ||
	     a->synced))
		a->state = PPTAGENT_ATTACHED;
	if (a->state == PPTAGENT_WAITING)
		agent_check_hmem(a, now);
	a->st.counters_setup = flags & PPT_CLIENT_FLAG_COUNTERS_SETUP;
	if (a->next_data && !a->ack_ns &&
	    /* acquire (G): pairs with the client's release of its ack (F) */
	    __atomic_load_n(&ctl->data_block_hmem_attached, __ATOMIC_ACQUIRE) ==
		    (uint64_t)a->next_id)
		a->ack_ns = now;
	if (!a->synced) {
		if (!agent_sync(a))
			return 0;
		a->synced = true;
		a->state = PPTAGENT_ATTACHED;
	}
	/* At most a ring's worth per call: the engine's lock is held. */
	do {
		n = pptreader_poll(&a->reader, now, a->scratch, a->scratch_idx,
				   a->scratch_cap);
		agent_keep(a, n, now);
		total += n;
	} while (n == a->scratch_cap && total < a->nframes);
	if (a->ack_ns && now - a->ack_ns >= AGENT_DRAIN_NS)
		agent_switch(a);
	a->st.delivered = a->reader.st.delivered;
	a->st.lost = a->reader.st.lost;
	a->st.torn = a->reader.st.torn;
	if (a->cfg.auto_grow && a->dynamic && a->reader.st.lost != lost0 &&
	    !a->next_data && a->nframes * 4 <= a->cfg.max_frames &&
	    !pptagent_resize(a, a->nframes * 4, err, sizeof(err)))
		snprintf(a->warning, sizeof(a->warning), "%s", err);
	return total;
}

bool pptagent_resize(struct pptagent *a, uint64_t nframes, char *err,
		     size_t errlen)
{
	struct ppt_control *ctl = a->ctl_map;
	uint64_t fs = a->desc.frame_size;
	void *map;
	int id;

	if (!pptagent_live(a->state)) {
		snprintf(err, errlen, "buffer %s is not attached", a->sym.name);
		return false;
	}
	if (!a->dynamic) {
		snprintf(err, errlen,
			 "buffer %s has a static data block: it can not be "
			 "resized while attached",
			 a->sym.name);
		return false;
	}
	if (a->next_data) {
		snprintf(err, errlen, "buffer %s: a resize is under way",
			 a->sym.name);
		return false;
	}
	if (nframes < 1 || nframes > PPTAGENT_MAX_FRAMES ||
	    nframes * fs > PPTAGENT_MAX_BYTES) {
		snprintf(err, errlen,
			 "buffer %s: %llu frames of %llu bytes is outside "
			 "1..%u frames and %llu MiB",
			 a->sym.name, (unsigned long long)nframes,
			 (unsigned long long)fs, PPTAGENT_MAX_FRAMES,
			 PPTAGENT_MAX_BYTES >> 20);
		return false;
	}
	id = agent_shm_create((size_t)(nframes * fs), true, &map, err, errlen);
	if (id < 0)
		return false;
	a->next_id = id;
	a->next_data = map;
	a->next_size = (size_t)(nframes * fs);
	a->next_nframes = nframes;
	a->ack_ns = 0;
	/* release (E): pairs with the client's acquire load (F). */
	__atomic_store_n(&ctl->data_block_hmem, (uint64_t)id, __ATOMIC_RELEASE);
	return true;
}

static void agent_unmap_all(struct pptagent *a)
{
	if (a->dynamic)
		agent_unmap(&a->data);
	else
		a->data = NULL; /* inside the control segment */
	agent_unmap(&a->next_data);
	if (a->ctl_map)
		shmdt(a->ctl_map);
	a->ctl_map = NULL;
}

void pptagent_detach(struct pptagent *a)
{
	int32_t stat = 0, hmem = 0;
	char err[160];

	if (pptagent_live(a->state)) {
		/* Only what is still ours: a --force-attach by someone else
		 * took it over, and its values must stay. */
		if (agent_read_i32(a, a->sym.stat_addr, &stat, err,
				   sizeof(err)) &&
		    stat == (int32_t)getpid()) {
			if (agent_read_i32(a, a->sym.hmem_addr, &hmem, err,
					   sizeof(err)) &&
			    hmem == a->ctl_id)
				agent_write_i32(a, a->sym.hmem_addr, 0, err,
						sizeof(err));
			agent_write_i32(a, a->sym.stat_addr, 0, err,
					sizeof(err));
		}
	}
	agent_unmap_all(a);
	a->state = PPTAGENT_DETACHED;
}

void pptagent_forget(struct pptagent *a)
{
	agent_unmap_all(a);
	a->state = PPTAGENT_GONE;
}

void pptagent_finish(struct pptagent *a)
{
	agent_unmap_all(a);
	if (a->have_desc)
		pptdesc_finish(&a->desc);
	a->have_desc = false;
	free(a->hist);
	free(a->hist_meta);
	free(a->scratch);
	free(a->scratch_idx);
	a->hist = a->scratch = NULL;
	a->hist_meta = NULL;
	a->scratch_idx = NULL;
}

const void *pptagent_frame(const struct pptagent *a, uint64_t pos,
			   struct pptagent_frame *meta)
{
	uint32_t slot;

	if (pos >= a->hist_pos || pos < pptagent_oldest(a))
		return NULL;
	slot = (uint32_t)(pos % a->hist_cap);
	if (meta)
		*meta = a->hist_meta[slot];
	return a->hist + (size_t)slot * a->desc.frame_size;
}

uint64_t pptagent_oldest(const struct pptagent *a)
{
	return a->hist_pos > a->hist_cap ? a->hist_pos - a->hist_cap : 0;
}
