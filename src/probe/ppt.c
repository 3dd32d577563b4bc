/*
 * ppt: the client side of a ppt buffer -- a program's frames written into
 * shared memory an agent created, following the wire contract and the
 * ordering table of include/corotop/ppt.h (letters A..G below refer to it).
 *
 * States.  Detached (no block) or attached (a block: where the frames go).
 * Transitions happen on whichever thread notices a change first, at a save
 * or a ppt_client_poll, one thread at a time (a trylock word; a save that
 * finds a transition under way skips its frame, counted, and never waits):
 *   attach   _hmem turned non-zero: shmctl for the size, shmat, acquire
 *            fence (B), validate the control block, map the data segment
 *            (dynamic layout), write data_block and data_block_sz, set the
 *            client flags, test the counters, publish the block;
 *   detach   _hmem back to 0 (or to another segment: detach, then attach):
 *            unpublish, then let the mappings go without unmapping them
 *            (pptmap.c: a late writer never faults);
 *   resize   dynamic layout, data_block_hmem moved (E): map the new data
 *            segment, publish it, acknowledge (F).  The block before is let
 *            go at the NEXT resize or detach, so writers that loaded it
 *            finish there and the agent can drain it (G).
 * A segment that is too small, a failed shmat or a control block that lies
 * is counted as a failure; the client stays detached (or on its current
 * data block) and does not retry that id until the agent writes another.
 *
 * The block is an immutable {base, frame count, ...} published by pointer
 * (release) and loaded by savers (acquire).  Blocks are never freed while
 * the client lives (a saver may hold one); identical blocks are shared, so
 * attach cycles at the same ranges allocate nothing new.
 *
 * A save (attached, nothing changed): the block, one relaxed load of _hmem,
 * in the dynamic layout one acquire load of data_block_hmem (F), a
 * fetch_add for the frame index, and the frame (D).  No lock, no syscall,
 * no allocation.
 *
 * Atomics, one style: the __atomic builtins (GCC, Clang).  The words the
 * client shares with the agent are plain integers in the ABI
 * (include/corotop/ppt.h, which C++ and other clients include too), and
 * only the builtins access a plain object atomically -- Clang refuses
 * them on an _Atomic one -- so the client's own words are plain and
 * accessed with them too, in the orders C11 would name.
 */
#define _GNU_SOURCE
#include "probe/ppt_internal.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/shm.h>

struct ppt_block {
	uint8_t *base;
	uint32_t nframes;
	bool dynamic;
	struct ppt_control *ctl;
	struct ppt_block *next; /* the client's list */
};

/* Every field down to `ncounters` is accessed atomically only. */
struct corotop_ppt_client {
	/* Read by every save; written only in transitions. */
	const struct ppt_block *block; /* NULL: detached */
	int hmem_at;		       /* attached control id */
	uint64_t data_at;	       /* attached data id */
	uint64_t data_refused;	       /* data id not retried */
	int refused;		       /* control id not retried */
	uint32_t frame_size, back_off;
	struct ppt_layout lay;

	/* Frame index, 64 bits so `saved` needs no counter of its own; the
	 * wire index is its low 32 bits, never 0. */
	CTP_ALIGNAS(64) uint64_t next;
	/* Indexes skipped because they were 0: a relaxed statistic that
	 * orders nothing. */
	uint64_t wraps;

	CTP_ALIGNAS(64) int busy; /* the transition trylock */
	/* Statistics: relaxed fetch_adds (count()), read relaxed by
	 * corotop_ppt_stats; they order nothing. */
	uint64_t skipped, attaches, detaches, resizes, failures;
	/* Counters the attach set up, for the statistics: a relaxed hint,
	 * ordered by nothing. */
	uint32_t ncounters;

	/* Transition state: only with busy held. */
	struct ppt_maps maps;
	struct ppt_control *ctl;
	size_t ctl_size;
	void *data_map; /* dynamic: the current data segment */
	void *prev_map; /* dynamic: the one before the last resize */
	struct ppt_block *blocks;
	struct ppt_client_hooks hooks;
	struct ppt_counters counters;
	struct corotop_ppt_buffer *buffer; /* its buffer (fork) */
	struct corotop_ppt_client *next_client;
};

static void client_retire(struct corotop_ppt_client *c, void *map);

/* Every initialized client, for a forked child to let go of (init and
 * finish take the lock; the child is alone when it walks the list). */
static pthread_mutex_t clients_lock = PTHREAD_MUTEX_INITIALIZER;
static struct corotop_ppt_client *clients;
static pthread_once_t clients_once = PTHREAD_ONCE_INIT;

/*
 * In a forked child: the attachments are the parent's (the agent wrote
 * the parent's _hmem, the child's indexes would collide with the
 * parent's).  Forget them here, in the child only: its mappings become
 * zero pages, its copy of _hmem 0, its locks free; the shared control
 * block is not touched (the parent still uses it).  The child can be
 * attached on its own later.
 */
static void clients_atfork_child(void)
{
	for (struct corotop_ppt_client *c = clients; c; c = c->next_client) {
		struct corotop_ppt_buffer *b = c->buffer;

		__atomic_store_n(&c->busy, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->live, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&c->block, NULL, __ATOMIC_RELAXED);
		if (c->ctl) {
			client_retire(c, c->prev_map);
			client_retire(c, c->data_map);
			client_retire(c, c->ctl);
		}
		c->prev_map = c->data_map = NULL;
		c->ctl = NULL;
		__atomic_store_n(&c->hmem_at, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&c->data_at, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&c->refused, 0, __ATOMIC_RELAXED);
		__atomic_store_n(b->hmem, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&b->stat->ppt_agent_pid, 0, __ATOMIC_RELAXED);
	}
}

static void clients_register_atfork(void)
{
	pthread_atfork(NULL, NULL, clients_atfork_child);
}

/* ---- transitions (busy held) ---- */

static bool client_trylock(struct corotop_ppt_client *c)
{
	/* acquire: pairs with client_unlock's release, so the transition
	 * state below is the last holder's. */
	return __atomic_exchange_n(&c->busy, 1, __ATOMIC_ACQUIRE) == 0;
}

static void client_unlock(struct corotop_ppt_client *c)
{
	__atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
}

static void count(uint64_t *stat)
{
	__atomic_fetch_add(stat, 1, __ATOMIC_RELAXED); /* a statistic */
}

/* A block {base, nframes, ctl, dynamic}: an existing identical one, else
 * a new one; NULL without memory. */
static const struct ppt_block *client_block(struct corotop_ppt_client *c,
					    uint8_t *base, uint64_t nframes,
					    struct ppt_control *ctl,
					    bool dynamic)
{
	uint32_t n = nframes > UINT32_MAX ? UINT32_MAX : (uint32_t)nframes;
	struct ppt_block *b;

	for (b = c->blocks; b; b = b->next)
		if (b->base == base && b->nframes == n && b->ctl == ctl &&
		    b->dynamic == dynamic)
			return b;
	b = malloc(sizeof(*b));
	if (!b)
		return NULL;
	*b = (struct ppt_block){base, n, dynamic, ctl, c->blocks};
	c->blocks = b;
	return b;
}

/* Where the client put the frames, for the agent. */
static void client_tell(struct ppt_control *ctl, const struct ppt_block *blk)
{
	/* relaxed: published by the release store that follows each call
	 * (client_flags at attach, the ack at a resize). */
	__atomic_store_n(&ctl->data_block, (uint64_t)(uintptr_t)blk->base,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&ctl->data_block_sz, (uint64_t)blk->nframes,
			 __ATOMIC_RELAXED);
}

/* The size of shm `id`, or 0. */
static size_t shm_size(int id)
{
	struct shmid_ds ds;

	if (shmctl(id, IPC_STAT, &ds) < 0)
		return 0;
	return ds.shm_segsz;
}

static void client_retire(struct corotop_ppt_client *c, void *map)
{
	if (map && !ppt_map_retire(&c->maps, map))
		count(&c->failures);
}

static void client_detach(struct corotop_ppt_buffer *b,
			  struct corotop_ppt_client *c)
{
	/* release: savers that see live 0 or no block stop here; those that
	 * loaded the block before finish on pages that stay mapped. */
	__atomic_store_n(&b->live, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&c->block, NULL, __ATOMIC_RELEASE);
	if (c->hooks.detached)
		c->hooks.detached(b, c->hooks.ctx);
	/* relaxed: a courtesy to an agent that still looks. */
	__atomic_fetch_and(
		&c->ctl->client_flags,
		~(PPT_CLIENT_FLAG_ATTACHED | PPT_CLIENT_FLAG_COUNTERS_SETUP),
		__ATOMIC_RELAXED);
	ppt_counters_clear(&c->counters);
	__atomic_store_n(&c->ncounters, 0, __ATOMIC_RELAXED);
	client_retire(c, c->prev_map);
	client_retire(c, c->data_map);
	client_retire(c, c->ctl);
	c->prev_map = c->data_map = NULL;
	c->ctl = NULL;
	__atomic_store_n(&c->hmem_at, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->data_at, 0, __ATOMIC_RELAXED);
	count(&c->detaches);
}

/* Map and check the data segment `d` of the dynamic layout; NULL (and
 * nothing mapped) when it is not usable. */
static const struct ppt_block *client_data(struct corotop_ppt_client *c,
					   struct ppt_control *ctl, int h,
					   uint64_t d, void **map)
{
	const struct ppt_block *blk;
	size_t size;
	void *p;

	*map = NULL;
	/* 0 is "none" (a resize to 0 is a lie, not a switch to static). */
	if (d == 0 || d > INT_MAX || (int)d == h)
		return NULL;
	size = shm_size((int)d);
	if (size < c->frame_size)
		return NULL;
	p = ppt_map_attach(&c->maps, (int)d, size);
	if (!p)
		return NULL;
	blk = client_block(c, p, size / c->frame_size, ctl, true);
	if (!blk) {
		(void)ppt_map_retire(&c->maps, p);
		return NULL;
	}
	*map = p;
	return blk;
}

static bool client_attach(struct corotop_ppt_buffer *b,
			  struct corotop_ppt_client *c, int h)
{
	size_t size = shm_size(h), start;
	const struct ppt_block *blk;
	struct ppt_control *ctl;
	uint32_t ncnt;
	uint64_t d, flags = PPT_CLIENT_FLAG_ATTACHED;
	void *data = NULL;

	if (size < sizeof(struct ppt_control))
		return false;
	ctl = ppt_map_attach(&c->maps, h, size);
	if (!ctl)
		return false;
	/* (B) acquire: pairs with the agent's (A); the control block it
	 * wrote before _hmem is what we read below. */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&ctl->control_blk_sz, __ATOMIC_RELAXED) !=
	    sizeof(struct ppt_control))
		goto fail;
	/* acquire (F): pairs with the agent's (E). */
	d = __atomic_load_n(&ctl->data_block_hmem, __ATOMIC_ACQUIRE);
	if (d == 0) {
		start = (sizeof(struct ppt_control) + c->frame_size - 1) /
			c->frame_size * c->frame_size;
		if (size < start + c->frame_size)
			goto fail;
		blk = client_block(c, (uint8_t *)ctl + start,
				   (size - start) / c->frame_size, ctl, false);
	} else {
		blk = client_data(c, ctl, h, d, &data);
	}
	if (!blk)
		goto fail;
	client_tell(ctl, blk);
	if (ppt_counters_setup(&c->counters, ctl, &ncnt))
		flags |= PPT_CLIENT_FLAG_COUNTERS_SETUP;
	__atomic_store_n(&c->ncounters, ncnt, __ATOMIC_RELAXED);
	/* release: data_block and data_block_sz are in place for an agent
	 * that sees the flag. */
	__atomic_store_n(&ctl->client_flags, flags, __ATOMIC_RELEASE);
	c->ctl = ctl;
	c->ctl_size = size;
	c->data_map = data;
	c->prev_map = NULL;
	/* relaxed: published to savers by the block's release below. */
	__atomic_store_n(&c->hmem_at, h, __ATOMIC_RELAXED);
	__atomic_store_n(&c->data_at, d, __ATOMIC_RELAXED);
	__atomic_store_n(&c->data_refused, 0, __ATOMIC_RELAXED);
	/* release: pairs with the savers' acquire load of the block; the
	 * mapping and the fields above come with it. */
	__atomic_store_n(&c->block, blk, __ATOMIC_RELEASE);
	__atomic_store_n(&b->live, 1, __ATOMIC_RELEASE);
	/* (F) release: the ack, after the block is in use; pairs with the
	 * agent's acquire (G). */
	if (d)
		__atomic_store_n(&ctl->data_block_hmem_attached, d,
				 __ATOMIC_RELEASE);
	count(&c->attaches);
	if (c->hooks.attached)
		c->hooks.attached(b, ctl, size, c->hooks.ctx);
	return true;
fail:
	(void)ppt_map_retire(&c->maps, ctl);
	return false;
}

static void client_resize(struct corotop_ppt_client *c, uint64_t d)
{
	int h = __atomic_load_n(&c->hmem_at, __ATOMIC_RELAXED);
	const struct ppt_block *blk;
	void *data;

	blk = client_data(c, c->ctl, h, d, &data);
	if (!blk) {
		__atomic_store_n(&c->data_refused, d, __ATOMIC_RELAXED);
		count(&c->failures);
		return;
	}
	/* The block before the previous one: its writers had a whole
	 * resize period to finish, and the agent drained it. */
	client_retire(c, c->prev_map);
	c->prev_map = c->data_map;
	c->data_map = data;
	client_tell(c->ctl, blk);
	/* relaxed: published to savers by the block's release below. */
	__atomic_store_n(&c->data_at, d, __ATOMIC_RELAXED);
	__atomic_store_n(&c->block, blk, __ATOMIC_RELEASE);
	/* (F) release: pairs with the agent's acquire (G); data_block and
	 * data_block_sz come with it. */
	__atomic_store_n(&c->ctl->data_block_hmem_attached, d,
			 __ATOMIC_RELEASE);
	count(&c->resizes);
}

/* Bring the client in line with _hmem and data_block_hmem. */
static void client_transition(struct corotop_ppt_buffer *b,
			      struct corotop_ppt_client *c)
{
	/* relaxed (B): the fence after shmat orders the rest. */
	int h = __atomic_load_n(b->hmem, __ATOMIC_RELAXED);
	int at = __atomic_load_n(&c->hmem_at, __ATOMIC_RELAXED);
	const struct ppt_block *blk =
		__atomic_load_n(&c->block, __ATOMIC_RELAXED);
	uint64_t d;

	if (blk && h != at) {
		client_detach(b, c);
		blk = NULL;
	}
	if (h == 0)
		__atomic_store_n(&c->refused, 0, __ATOMIC_RELAXED);
	if (!blk && h != 0 &&
	    h != __atomic_load_n(&c->refused, __ATOMIC_RELAXED)) {
		if (!client_attach(b, c, h)) {
			__atomic_store_n(&c->refused, h, __ATOMIC_RELAXED);
			count(&c->failures);
		}
		blk = __atomic_load_n(&c->block, __ATOMIC_RELAXED);
	}
	if (!blk || !blk->dynamic)
		return;
	/* acquire (F): pairs with the agent's release (E). */
	d = __atomic_load_n(&c->ctl->data_block_hmem, __ATOMIC_ACQUIRE);
	if (d != __atomic_load_n(&c->data_at, __ATOMIC_RELAXED) &&
	    d != __atomic_load_n(&c->data_refused, __ATOMIC_RELAXED))
		client_resize(c, d);
}

/*
 * The slow side of a save or a poll: `blk` and `h` are what the caller
 * loaded.  Returns the block to write to now, or NULL.
 */
static const struct ppt_block *client_sync(struct corotop_ppt_buffer *b,
					   struct corotop_ppt_client *c,
					   const struct ppt_block *blk, int h,
					   bool skip_counts)
{
	/* relaxed: hints; the transition re-reads them with the lock. */
	if (blk && h == __atomic_load_n(&c->hmem_at, __ATOMIC_RELAXED)) {
		if (!blk->dynamic)
			return blk;
		uint64_t d = __atomic_load_n(&blk->ctl->data_block_hmem,
					     __ATOMIC_ACQUIRE);

		if (d == __atomic_load_n(&c->data_at, __ATOMIC_RELAXED) ||
		    d == __atomic_load_n(&c->data_refused, __ATOMIC_RELAXED))
			return blk;
	} else if (!blk && (h == 0 || h == __atomic_load_n(&c->refused,
							   __ATOMIC_RELAXED))) {
		return NULL;
	}
	if (!client_trylock(c)) {
		if (skip_counts)
			count(&c->skipped);
		return skip_counts ? NULL : blk;
	}
	client_transition(b, c);
	client_unlock(c);
	/* acquire: as in the save (the block may be new). */
	return __atomic_load_n(&c->block, __ATOMIC_ACQUIRE);
}

/* ---- the save ---- */

static inline void copy_run(uint8_t *dst, const uint8_t *src, uint32_t len)
{
#if defined(__SANITIZE_THREAD__)
	/* Two savers lapping each other on one slot is the protocol's normal
	 * case (the seqnos make the reader discard that frame); in C11 terms
	 * both copies must then be atomic to be race-free.  Relaxed byte
	 * stores are, and TSan checks every other access of the save; the
	 * plain copy below is what they compile to anyway, a word at a time. */
	for (uint32_t i = 0; i < len; i++)
		__atomic_store_n(dst + i, src[i], __ATOMIC_RELAXED);
	return;
#endif
	/* Fixed sizes become plain moves. */
	switch (len) {
	case 4:
		memcpy(dst, src, 4);
		break;
	case 8:
		memcpy(dst, src, 8);
		break;
	case 16:
		memcpy(dst, src, 16);
		break;
	case 32:
		memcpy(dst, src, 32);
		break;
	default:
		memcpy(dst, src, len);
		break;
	}
}

static inline void client_write(struct corotop_ppt_client *c,
				const struct ppt_block *blk,
				const struct ppt_plan *plan, const uint8_t *src)
{
	/* relaxed: the index only has to be unique; the frame's own fences
	 * order what a reader sees. */
	uint64_t n = __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED);
	uint32_t idx = (uint32_t)n;
	uint8_t *f;
	uint32_t *front, *back;

	if (COROTOP_UNLIKELY(idx == 0)) {
		count(&c->wraps);
		idx = (uint32_t)__atomic_fetch_add(&c->next, 1,
						   __ATOMIC_RELAXED);
	}
	/* acquire: pairs with the transition's release of the block.  A
	 * saver that loaded the block before a detach, a resize or a new
	 * attach would write an old geometry into what may be a new
	 * segment: it drops the frame instead (its index is then lost,
	 * which the agent counts). */
	if (COROTOP_UNLIKELY(__atomic_load_n(&c->block, __ATOMIC_ACQUIRE) !=
			     blk)) {
		count(&c->skipped);
		return;
	}
	f = blk->base + (size_t)(idx % blk->nframes) * c->frame_size;
	front = (uint32_t *)(void *)f;
	back = (uint32_t *)(void *)(f + c->back_off);
	/* (D): both seqnos 0, release fence; front, release fence; body,
	 * release fence; back.  Pairs with the reader's (C). */
	__atomic_store_n(front, 0, __ATOMIC_RELAXED);
	__atomic_store_n(back, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(front, idx, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	if (plan->discrim)
		__atomic_store_n((uint32_t *)(void *)(f + PPT_SEQNO_SIZE),
				 plan->discrim, __ATOMIC_RELAXED);
	/* Plain copies: the reader is another process, and a torn body is
	 * what the seqnos detect. */
	for (uint32_t i = 0; i < plan->nops; i++)
		copy_run(f + plan->ops[i].dst, src + plan->ops[i].src,
			 plan->ops[i].len);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(back, idx, __ATOMIC_RELAXED);
}

COROTOP_API void corotop_ppt_save_(struct corotop_ppt_buffer *b, unsigned type,
				   const void *frame)
{
	struct corotop_ppt_client *c = b->client;
	const struct ppt_block *blk;
	int h;

	if (COROTOP_UNLIKELY(!c || type >= c->lay.ntypes))
		return;
	/* acquire: pairs with the release that published the block; its
	 * fields and the mapping are visible. */
	blk = __atomic_load_n(&c->block, __ATOMIC_ACQUIRE);
	/* relaxed (B): a change is handled by the transition. */
	h = __atomic_load_n(b->hmem, __ATOMIC_RELAXED);
	/* relaxed: hmem_at and data_at came with the block's acquire;
	 * data_block_hmem is acquired (F) before the block is used. */
	if (COROTOP_UNLIKELY(
		    !blk ||
		    h != __atomic_load_n(&c->hmem_at, __ATOMIC_RELAXED) ||
		    (blk->dynamic &&
		     __atomic_load_n(&blk->ctl->data_block_hmem,
				     __ATOMIC_ACQUIRE) !=
			     __atomic_load_n(&c->data_at, __ATOMIC_RELAXED)))) {
		blk = client_sync(b, c, blk, h, true);
		if (!blk)
			return;
	}
	client_write(c, blk, &c->lay.plans[type], frame);
}

/* ---- life cycle ---- */

int ppt_client_init(struct corotop_ppt_buffer *b,
		    const struct corotop_ppt_frame_type *t, unsigned ntypes,
		    unsigned flags, const char *tag_value,
		    const struct ppt_client_hooks *hooks)
{
	struct corotop_ppt_client *c;
	void *p;
	int err;

	if (!b || !b->hmem || !b->stat || !b->json)
		return -EINVAL;
	if (b->client)
		return -EEXIST;
	if (posix_memalign(&p, 64, sizeof(*c)))
		return -ENOMEM;
	c = memset(p, 0, sizeof(*c));
	err = ppt_layout_build(&c->lay, b->name, t, ntypes, flags,
			       tag_value ? tag_value : "client/1");
	if (err) {
		free(c);
		return err;
	}
	c->frame_size = c->lay.frame_size;
	c->back_off = c->lay.back_off;
	c->next = 1; /* before the client is published */
	if (hooks)
		c->hooks = *hooks;
	c->buffer = b;
	pthread_once(&clients_once, clients_register_atfork);
	pthread_mutex_lock(&clients_lock);
	c->next_client = clients;
	clients = c;
	pthread_mutex_unlock(&clients_lock);
	b->client = c;
	b->live = 0;
	/* release: whoever sees the description sees a complete client
	 * (agents read it with process_vm_readv, a syscall anyway). */
	__atomic_store_n(b->json, (const char *)c->lay.json, __ATOMIC_RELEASE);
	return 0;
}

COROTOP_API int corotop_ppt_buffer_init(struct corotop_ppt_buffer *b,
					const struct corotop_ppt_frame_type *t,
					unsigned ntypes, unsigned flags)
{
	return ppt_client_init(b, t, ntypes, flags, NULL, NULL);
}

COROTOP_API void corotop_ppt_buffer_finish(struct corotop_ppt_buffer *b)
{
	struct corotop_ppt_client *c = b ? b->client : NULL;

	if (!c)
		return;
	/* Nobody saves any more (the contract); a poll elsewhere would be a
	 * caller's bug, but is waited out rather than raced. */
	while (!client_trylock(c))
		;
	if (__atomic_load_n(&c->block, __ATOMIC_RELAXED))
		client_detach(b, c);
	ppt_map_finish(&c->maps);
	while (c->blocks) {
		struct ppt_block *n = c->blocks->next;

		free(c->blocks);
		c->blocks = n;
	}
	/* release: pairs with an agent's read of _json (another process,
	 * through process_vm_readv, ordered by its acquire of _hmem); it
	 * orders the detach above before the description disappears, as
	 * the release store that published it did (client setup). */
	__atomic_store_n(b->json, NULL, __ATOMIC_RELEASE);
	b->client = NULL;
	pthread_mutex_lock(&clients_lock);
	for (struct corotop_ppt_client **pp = &clients; *pp;
	     pp = &(*pp)->next_client)
		if (*pp == c) {
			*pp = c->next_client;
			break;
		}
	pthread_mutex_unlock(&clients_lock);
	ppt_layout_finish(&c->lay);
	free(c);
}

bool ppt_client_poll(struct corotop_ppt_buffer *b)
{
	struct corotop_ppt_client *c = b ? b->client : NULL;
	const struct ppt_block *blk;

	if (!c)
		return false;
	/* acquire / relaxed: as in the save. */
	blk = __atomic_load_n(&c->block, __ATOMIC_ACQUIRE);
	blk = client_sync(b, c, blk, __atomic_load_n(b->hmem, __ATOMIC_RELAXED),
			  false);
	return blk != NULL;
}

/* ---- queries ---- */

COROTOP_API unsigned corotop_ppt_counters(struct corotop_ppt_buffer *b,
					  uint64_t v[3])
{
	struct corotop_ppt_client *c = b ? b->client : NULL;

	if (!c) {
		v[0] = v[1] = v[2] = 0;
		return 0;
	}
	return ppt_counters_read(&c->counters, v);
}

COROTOP_API size_t corotop_ppt_frame_size(const struct corotop_ppt_buffer *b)
{
	return b && b->client ? b->client->frame_size : 0;
}

COROTOP_API void corotop_ppt_stats(const struct corotop_ppt_buffer *b,
				   struct corotop_ppt_stats *out)
{
	struct corotop_ppt_client *c = b ? b->client : NULL;
	const struct ppt_block *blk;

	memset(out, 0, sizeof(*out));
	if (!c)
		return;
	/* relaxed: statistics (each read on its own). */
	out->saved = __atomic_load_n(&c->next, __ATOMIC_RELAXED) - 1 -
		     __atomic_load_n(&c->wraps, __ATOMIC_RELAXED);
	out->skipped = __atomic_load_n(&c->skipped, __ATOMIC_RELAXED);
	out->attaches = __atomic_load_n(&c->attaches, __ATOMIC_RELAXED);
	out->detaches = __atomic_load_n(&c->detaches, __ATOMIC_RELAXED);
	out->resizes = __atomic_load_n(&c->resizes, __ATOMIC_RELAXED);
	out->failures = __atomic_load_n(&c->failures, __ATOMIC_RELAXED);
	/* acquire: the block's fields (pairs with its publication). */
	blk = __atomic_load_n(&c->block, __ATOMIC_ACQUIRE);
	if (blk) {
		out->attached = 1;
		out->nframes = blk->nframes;
		out->counters =
			__atomic_load_n(&c->ncounters, __ATOMIC_RELAXED);
	}
}
