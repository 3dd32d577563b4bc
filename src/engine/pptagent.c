/*
 * pptagent: attach to one ppt buffer of a running process, read its frames,
 * resize its data block, detach.
 *
 * Attach, in the protocol's order (ppt-ptrace-protocol.md):
 *   1. _json: read through the pointer the generator stores (or in place,
 *      when the symbol is the text itself), parse, check ABI 1.x;
 *   2. _stat: 0, or a pid we may take over (--force-attach); then our pid.
 *      The read and the write happen while the target's main thread is
 *      seized (best effort: a debugger that holds it only costs us that);
 *   3. shared memory: shmget(IPC_PRIVATE, 0600), control block filled in,
 *      data block (static: after the control block, at a multiple of the
 *      frame size; dynamic: its own segment, linked by data_block_hmem);
 *      each segment is marked IPC_RMID as soon as we have mapped it, which
 *      Linux allows the client to shmat still: the segments vanish with the
 *      last mapping, whoever dies first and however;
 *   4. _hmem last (process_vm_writev, a full barrier: A in corotop/ppt.h).
 * A failure at any step undoes the steps before it in the target.
 *
 * Polling.  The client's frame counter is its own (the generator's counts
 * every save, attached or not), so the first poll that sees whole frames
 * syncs the reader's cursor to the oldest of them; from then on pptreader
 * accounts for every index.  Frames are copied into a history ring of the
 * newest `history` frames for display.
 *
 * Resize (dynamic layout).  A new data segment goes into data_block_hmem
 * (E); once the client's ack appears in data_block_hmem_attached (G), the
 * old block gets no new frames -- but a writer that loaded the old block
 * just before may still be finishing one, so the old block is drained for
 * a grace period before the reader moves to the new block.  Lost frames in
 * a dynamic block grow it (x4, bounded) when the engine asks for that.
 */
#define _GNU_SOURCE
#include "pptagent.h"

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

/* Largest _json text read from a target. */
#define AGENT_JSON_MAX (1u << 20)
/* Frames copied per pptreader_poll call. */
#define AGENT_SCRATCH 1024u
/* Grace for writers still inside an old block after the client's ack. */
#define AGENT_DRAIN_NS 20000000ull
/* How long a forced attach waits for a client to let go of a stale
 * segment before it publishes the new one. */
#define AGENT_STALE_WAIT_MS 200

static uint64_t agent_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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
	*map = shmat(id, NULL, rdonly ? SHM_RDONLY : 0);
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

/*
 * The _json text: the generator's symbol is a const char * (read the
 * pointer, then the string); the protocol document's may be the text
 * itself.  The first byte tells: '{' starts the text in place.
 */
static char *agent_read_json(struct pptagent *a, char *err, size_t errlen)
{
	uint64_t addr = a->sym.json_addr, ptr = 0;
	unsigned char first;
	char *text = malloc(AGENT_JSON_MAX);

	if (!text) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (!procmem_read(a->pm, addr, &first, 1, err, errlen))
		goto fail;
	if (first != '{') {
		if (!procmem_read(a->pm, addr, &ptr, sizeof(ptr), err, errlen))
			goto fail;
		if (!ptr) {
			snprintf(err, errlen,
				 "buffer %s is not initialized yet (its _json "
				 "pointer is NULL): try again once the program "
				 "has set it up",
				 a->sym.name);
			goto fail;
		}
		addr = ptr;
	}
	if (!procmem_read_string(a->pm, addr, text, AGENT_JSON_MAX, err,
				 errlen))
		goto fail;
	return text;
fail:
	free(text);
	return NULL;
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

/* A forced attach over a stale _hmem: ask the client to let go of the old
 * segment first (the generated client only attaches when it holds none),
 * and give it a moment to notice at its next save. */
static void agent_unhook_stale(struct pptagent *a)
{
	int32_t old = 0;
	char err[64];
	struct shmid_ds ds;

	if (!agent_read_i32(a, a->sym.hmem_addr, &old, err, sizeof(err)) ||
	    old <= 0)
		return;
	if (!agent_write_i32(a, a->sym.hmem_addr, 0, err, sizeof(err)))
		return;
	for (int i = 0; i < AGENT_STALE_WAIT_MS; i++) {
		struct timespec ms = {0, 1000000};

		if (shmctl(old, IPC_STAT, &ds) < 0 || ds.shm_nattch == 0)
			return;
		nanosleep(&ms, NULL);
	}
}

/* Step 3: the segments, their control block, and our reader. */
static bool agent_segments(struct pptagent *a, char *err, size_t errlen)
{
	uint64_t fs = a->desc.frame_size;
	size_t ctl_size = sizeof(struct ppt_control);
	struct ppt_control *ctl;
	void *map;

	a->dynamic = a->desc.resize || a->rendezvous;
	if (a->rendezvous)
		ctl_size =
			COROTOP_RDV_OFFSET + sizeof(struct corotop_rendezvous);
	if (!a->dynamic) {
		uint64_t off = agent_round_up(sizeof(*ctl), fs);

		ctl_size = (size_t)(off + a->nframes * fs);
		a->ctl_id =
			agent_shm_create(ctl_size, false, &map, err, errlen);
		if (a->ctl_id < 0)
			return false;
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

	a->hist_cap = a->cfg.history ? a->cfg.history : 4096;
	a->hist = calloc(a->hist_cap, fs);
	a->hist_meta = calloc(a->hist_cap, sizeof(*a->hist_meta));
	a->scratch_cap = AGENT_SCRATCH;
	a->scratch = malloc(a->scratch_cap * fs);
	a->scratch_idx = malloc(a->scratch_cap * sizeof(*a->scratch_idx));
	if (a->hist && a->hist_meta && a->scratch && a->scratch_idx)
		return true;
	snprintf(err, errlen, "out of memory for buffer %s", a->sym.name);
	return false;
}

bool pptagent_attach(struct pptagent *a, struct procmem *pm,
		     const struct pptfind_buffer *sym,
		     const struct pptagent_config *cfg, char *err,
		     size_t errlen)
{
	char why[384];
	char *json;
	enum pptdesc_status ds;

	memset(a, 0, sizeof(*a));
	a->sym = *sym;
	a->pm = pm;
	a->cfg = *cfg;
	a->ctl_id = a->data_id = a->next_id = -1;
	/* 1. _json and the ABI. */
	json = agent_read_json(a, why, sizeof(why));
	if (!json) {
		snprintf(err, errlen, "buffer %s: %s", sym->name, why);
		return false;
	}
	ds = pptdesc_parse(json, strlen(json), &a->desc, why, sizeof(why));
	free(json);
	if (ds != PPTDESC_OK) {
		snprintf(err, errlen, "buffer %s: %s%s", sym->name,
			 ds == PPTDESC_BAD_JSON ? "its _json is not a ppt "
						  "description: "
						: "",
			 why);
		return false;
	}
	a->have_desc = true;
	a->rendezvous = a->desc.rendezvous && cfg->rdv;
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
	/* 4. _hmem last: the client may attach from now on. */
	a->st.attach_ns = agent_now();
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

size_t pptagent_poll(struct pptagent *a, uint64_t now)
{
	struct ppt_control *ctl = a->ctl_map;
	uint64_t lost0 = a->reader.st.lost, flags;
	size_t total = 0, n;

	if (a->state != PPTAGENT_WAITING && a->state != PPTAGENT_ATTACHED)
		return 0;
	/* acquire: pairs with the client's release of its flags (B). */
	flags = __atomic_load_n(&ctl->client_flags, __ATOMIC_ACQUIRE);
	if (a->state == PPTAGENT_WAITING && (flags & PPT_CLIENT_FLAG_ATTACHED))
		a->state = PPTAGENT_ATTACHED;
	a->st.counters_setup = flags & PPT_CLIENT_FLAG_COUNTERS_SETUP;
	if (a->next_data && !a->ack_ns &&
	    /* acquire (G): pairs with the client's release of its ack (F) */
	    __atomic_load_n(&ctl->data_block_hmem_attached, __ATOMIC_ACQUIRE) ==
		    (uint64_t)a->next_id)
		a->ack_ns = now;
	if (!a->synced) {
		if (!pptreader_sync(&a->reader))
			return 0;
		a->synced = true;
	}
	do {
		n = pptreader_poll(&a->reader, now, a->scratch, a->scratch_idx,
				   a->scratch_cap);
		agent_keep(a, n, now);
		total += n;
	} while (n == a->scratch_cap);
	if (a->ack_ns && now - a->ack_ns >= AGENT_DRAIN_NS)
		agent_switch(a);
	a->st.delivered = a->reader.st.delivered;
	a->st.lost = a->reader.st.lost;
	a->st.torn = a->reader.st.torn;
	if (a->cfg.auto_grow && a->dynamic && a->reader.st.lost != lost0 &&
	    !a->next_data && a->nframes * 4 <= a->cfg.max_frames) {
		char err[160];

		if (!pptagent_resize(a, a->nframes * 4, err, sizeof(err)))
			snprintf(a->warning, sizeof(a->warning), "%s", err);
	}
	return total;
}

bool pptagent_resize(struct pptagent *a, uint64_t nframes, char *err,
		     size_t errlen)
{
	struct ppt_control *ctl = a->ctl_map;
	uint64_t fs = a->desc.frame_size;
	void *map;
	int id;

	if (!a->dynamic || a->state == PPTAGENT_DETACHED ||
	    a->state == PPTAGENT_GONE) {
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

	if (a->state == PPTAGENT_WAITING || a->state == PPTAGENT_ATTACHED) {
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
