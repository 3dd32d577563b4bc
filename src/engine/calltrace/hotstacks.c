/*
 * hotstacks: the engine's aggregate of what CallTrace rotations collected.
 *
 * Input.  Each rotation hands over its union (traceset): {id, weight,
 * frames}, innermost frame first.  A sampled stack ends with one tag frame
 * (corotop/calltrace.h, "Tag frames") naming the coroutine or thread that
 * was running; the engine has already resolved each CT_TAG_CORO tag to a
 * model id (or 0 when the station's occupant changed since the sample).
 * Ingest drops the tag, so the same code path in different coroutines is
 * one stack here (the global view), and credits the weight a second time
 * to the (stack, coroutine) pair (the per-coroutine view).  Untagged traces
 * with weight are explicit puts: global only.  Traces without weight (the
 * parked stacks, parked.c) add nothing here.  A stack is cut after the
 * frames the configured check keeps (the engine's: every frame in the
 * target's code); its weight stays whole, on the stack that is left.
 *
 * Weights.  Every stack and pair keeps a raw total (since start or the
 * last zero: exact, what exports write) and a window: HOT_SLICES slices of
 * window/HOT_SLICES each, a ring indexed by slice number (time / slice).
 * Adding at a newer slice first clears the slices skipped since the last
 * add.  The window weight at `now` is the sum of the slices no older than
 * the window, each multiplied by 2^-(age / half-life), age being the time
 * since the slice ended (0 for the current one).  Half-life 0 means no
 * decay: a plain sum over the last window (to slice granularity).
 *
 * Bounds.  Stacks and pairs live in arrays of fixed
 * capacity with a hash index each (hashidx.h).  A full stack table evicts
 * its lightest eighth at once (by window weight, then total; selected, not
 * sorted), so eviction costs O(capacity) per capacity/8 inserts, not per
 * insert; pairs of an
 * evicted stack go with it.  A full pair table evicts its lightest eighth
 * likewise.  Evicted totals are counted (evicted_weight), never silently
 * lost.  Nothing here allocates per ingest but the frames of a new stack.
 *
 * Not thread-safe: the engine serialises every call with its hot lock.
 */
#include "engine/calltrace/hotstacks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wire/cttable.h"
#include "common/hashidx.h"
#include "common/hash.h"
#include "common/grow.h"

struct hot_window {
	uint64_t total;
	uint64_t last_q; /* newest slice number written */
	uint64_t slice[HOT_SLICES];
};

struct hot_stack_rec {
	uint64_t id; /* 0: free record */
	uint64_t hash;
	uint64_t trace_id;
	struct hot_window w;
	uint64_t *frames;
	uint32_t nframes;
};

struct hot_pair_rec {
	uint64_t coro; /* model id; 0: free record */
	uint64_t stack_id;
	uint64_t hash;
	uint32_t stack; /* record index of the stack (checked by stack_id) */
	struct hot_window w;
};

/* A record number and what it is worth, for sorting. */
struct hot_cand {
	double weight;
	uint64_t total;
	uint64_t id;
	uint32_t rec;	/* stack or pair record */
	uint32_t stack; /* stack record */
};

/* Fixed-capacity records: a high-water mark and a stack of freed ones. */
struct hot_pool {
	uint32_t cap, used, live;
	uint32_t *free;
	uint32_t nfree;
};

struct hotstacks {
	struct hotstacks_config cfg;
	uint64_t slice_ns, half_life_ns;
	struct hot_stack_rec *s;
	struct hot_pool sp;
	struct hashidx si;
	struct hot_pair_rec *c;
	struct hot_pool cp;
	struct hashidx ci;
	uint64_t next_id;
	/* Stacks added since hotstacks_new_frames last ran: record, id. */
	uint32_t *pend_rec;
	uint64_t *pend_id;
	size_t npend, pend_frame; /* pend_frame: next frame of pend[0] */
	struct hot_cand *cand;
	size_t cand_cap;
	struct hotstacks_stats st;
};

void hotstacks_config_defaults(struct hotstacks_config *c)
{
	c->window_s = 30;
	c->half_life_s = 10;
	c->max_stacks = 16384;
	c->max_coro = 65536;
	c->keep = NULL;
	c->keep_ctx = NULL;
}

/* ---- record pools ---- */

static bool hot_pool_init(struct hot_pool *p, uint32_t cap)
{
	memset(p, 0, sizeof(*p));
	p->cap = cap ? cap : 1;
	p->free = malloc(p->cap * sizeof(*p->free));
	return p->free != NULL;
}

static uint32_t hot_pool_get(struct hot_pool *p)
{
	if (p->nfree) {
		p->live++;
		return p->free[--p->nfree];
	}
	if (p->used == p->cap)
		return HASHIDX_NONE;
	p->live++;
	return p->used++;
}

static void hot_pool_put(struct hot_pool *p, uint32_t r)
{
	p->free[p->nfree++] = r;
	p->live--;
}

static void hot_pool_reset(struct hot_pool *p)
{
	p->used = p->live = p->nfree = 0;
}

/* ---- windows ---- */

static void hot_window_add(struct hot_window *w, uint64_t q, uint64_t v)
{
	w->total += v;
	if (q > w->last_q) {
		uint64_t skip = q - w->last_q;

		for (uint64_t i = 1; i <= skip && i <= HOT_SLICES; i++)
			w->slice[(w->last_q + i) % HOT_SLICES] = 0;
		w->last_q = q;
	}
	if (q + HOT_SLICES > w->last_q) /* else older than the window */
		w->slice[q % HOT_SLICES] += v;
}

/* f[a]: what one unit in the slice `a` slices before the current is worth
 * at now. */
static void hot_factors(const struct hotstacks *h, uint64_t now, double *f)
{
	uint64_t qn = now / h->slice_ns;

	f[0] = 1.0;
	for (uint64_t a = 1; a < HOT_SLICES; a++) {
		uint64_t end;

		if (qn < a) {
			f[a] = 0.0;
			continue;
		}
		end = (qn - a + 1) * h->slice_ns;
		f[a] = h->half_life_ns ? exp2(-(double)(now - end) /
					      (double)h->half_life_ns)
				       : 1.0;
	}
}

static double hot_window_weight(const struct hot_window *w, uint64_t qn,
				const double *f)
{
	double sum = 0.0;

	/* The ring holds slices last_q - 7 .. last_q. */
	for (uint64_t i = 0; i < HOT_SLICES && i <= w->last_q; i++) {
		uint64_t q = w->last_q - i;

		if (q > qn) { /* written "after" now: a clock that went back */
			sum += (double)w->slice[q % HOT_SLICES];
			continue;
		}
		if (qn - q >= HOT_SLICES)
			break; /* older than the window */
		sum += (double)w->slice[q % HOT_SLICES] * f[qn - q];
	}
	return sum;
}

/* ---- create ---- */

struct hotstacks *hotstacks_create(const struct hotstacks_config *c)
{
	struct hotstacks *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->cfg = *c;
	hotstacks_set_window(h, c->window_s, c->half_life_s);
	h->next_id = 1;
	if (!hot_pool_init(&h->sp, c->max_stacks) ||
	    !hot_pool_init(&h->cp, c->max_coro))
		goto err;
	h->s = calloc(h->sp.cap, sizeof(*h->s));
	h->c = calloc(h->cp.cap, sizeof(*h->c));
	h->pend_rec = malloc(h->sp.cap * sizeof(*h->pend_rec));
	h->pend_id = malloc(h->sp.cap * sizeof(*h->pend_id));
	if (!h->s || !h->c || !h->pend_rec || !h->pend_id ||
	    !hashidx_init(&h->si, h->sp.cap) ||
	    !hashidx_init(&h->ci, h->cp.cap))
		goto err;
	return h;
err:
	hotstacks_destroy(h);
	return NULL;
}

void hotstacks_destroy(struct hotstacks *h)
{
	if (!h)
		return;
	for (uint32_t i = 0; h->s && i < h->sp.used; i++)
		free(h->s[i].frames);
	free(h->s);
	free(h->c);
	free(h->sp.free);
	free(h->cp.free);
	free(h->pend_rec);
	free(h->pend_id);
	free(h->cand);
	hashidx_finish(&h->si);
	hashidx_finish(&h->ci);
	free(h);
}

void hotstacks_set_window(struct hotstacks *h, unsigned window_s,
			  unsigned half_life_s)
{
	uint64_t window_ns = (uint64_t)(window_s ? window_s : 1) * 1000000000u;

	h->cfg.window_s = window_s ? window_s : 1;
	h->cfg.half_life_s = half_life_s;
	h->slice_ns = window_ns / HOT_SLICES;
	h->half_life_ns = (uint64_t)half_life_s * 1000000000u;
	/* Slice numbers change meaning: window weights start over. */
	for (uint32_t i = 0; h->s && i < h->sp.used; i++) {
		memset(h->s[i].w.slice, 0, sizeof(h->s[i].w.slice));
		h->s[i].w.last_q = 0;
	}
	for (uint32_t i = 0; h->c && i < h->cp.used; i++) {
		memset(h->c[i].w.slice, 0, sizeof(h->c[i].w.slice));
		h->c[i].w.last_q = 0;
	}
}

/* ---- lookups ---- */

struct hot_key {
	struct hotstacks *h;
	const uint64_t *frames;
	uint32_t n;
	uint64_t a, b;
};

static bool hot_stack_eq(void *ctx, uint32_t r)
{
	struct hot_key *k = ctx;
	const struct hot_stack_rec *s = &k->h->s[r];

	return s->nframes == k->n &&
	       (k->n == 0 || !memcmp(s->frames, k->frames, k->n * 8u));
}

static bool hot_pair_eq(void *ctx, uint32_t r)
{
	struct hot_key *k = ctx;

	return k->h->c[r].stack_id == k->a && k->h->c[r].coro == k->b;
}

static uint64_t hot_pair_hash(uint64_t stack_id, uint64_t coro)
{
	return ct_mix64(stack_id * HASH_GOLDEN ^ ct_mix64(coro));
}

static bool hot_stack_live(const struct hotstacks *h, uint32_t r, uint64_t id)
{
	return r < h->sp.used && h->s[r].id == id && id;
}

/* ---- eviction ---- */

/* Lightest first: window weight, then total, then oldest. */
static int hot_cand_light(const void *a, const void *b)
{
	const struct hot_cand *x = a, *y = b;

	if (x->weight != y->weight)
		return x->weight < y->weight ? -1 : 1;
	if (x->total != y->total)
		return x->total < y->total ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

static void hot_cand_swap(struct hot_cand *a, struct hot_cand *b)
{
	struct hot_cand t = *a;

	*a = *b;
	*b = t;
}

/*
 * Put the k lightest of c[0..n) first, in no particular order: Hoare's
 * selection (partition around the middle element, keep the side that
 * holds position k), O(n) on average where sorting would cost O(n log n)
 * per eviction.
 */
static void hot_cand_select(struct hot_cand *c, size_t n, size_t k)
{
	long lo = 0, hi = (long)n - 1; /* inclusive */

	while (lo < hi && (long)k > lo && (long)k <= hi) {
		struct hot_cand pivot = c[lo + (hi - lo) / 2];
		long i = lo - 1, j = hi + 1;

		for (;;) {
			do
				i++;
			while (hot_cand_light(&c[i], &pivot) < 0);
			do
				j--;
			while (hot_cand_light(&pivot, &c[j]) < 0);
			if (i >= j)
				break;
			hot_cand_swap(&c[i], &c[j]);
		}
		/* c[lo..j] <= pivot <= c[j+1..hi], lo <= j < hi */
		if ((long)k <= j)
			hi = j;
		else
			lo = j + 1;
	}
}

static void hot_pair_drop(struct hotstacks *h, uint32_t r)
{
	hashidx_remove(&h->ci, h->c[r].hash, r);
	h->c[r].coro = 0;
	hot_pool_put(&h->cp, r);
}

static void hot_stack_drop(struct hotstacks *h, uint32_t r)
{
	hashidx_remove(&h->si, h->s[r].hash, r);
	free(h->s[r].frames);
	h->s[r].frames = NULL;
	h->s[r].id = 0;
	hot_pool_put(&h->sp, r);
}

/* Drop pairs whose stack is gone. */
static void hot_pairs_sweep(struct hotstacks *h)
{
	for (uint32_t r = 0; r < h->cp.used; r++)
		if (h->c[r].coro &&
		    !hot_stack_live(h, h->c[r].stack, h->c[r].stack_id)) {
			hot_pair_drop(h, r);
			h->st.coro_evicted++;
		}
}

static void hot_evict_stack(struct hotstacks *h, uint32_t r)
{
	h->st.evicted++;
	h->st.evicted_weight += h->s[r].w.total;
	hot_stack_drop(h, r);
}

static void hot_evict_stacks(struct hotstacks *h, uint64_t now)
{
	double f[HOT_SLICES];
	uint64_t qn = now / h->slice_ns;
	size_t n = 0, drop = h->sp.cap / 8 ? h->sp.cap / 8 : 1;

	if (!grow_array((void **)&h->cand, &h->cand_cap, h->sp.used,
			sizeof(*h->cand))) {
		/* No memory to rank them: make room for one. */
		for (uint32_t r = 0; r < h->sp.used; r++)
			if (h->s[r].id) {
				hot_evict_stack(h, r);
				break;
			}
		hot_pairs_sweep(h);
		return;
	}
	hot_factors(h, now, f);
	for (uint32_t r = 0; r < h->sp.used; r++)
		if (h->s[r].id)
			h->cand[n++] = (struct hot_cand){
				.weight = hot_window_weight(&h->s[r].w, qn, f),
				.total = h->s[r].w.total,
				.id = h->s[r].id,
				.rec = r,
			};
	hot_cand_select(h->cand, n, drop);
	for (size_t i = 0; i < n && i < drop; i++)
		hot_evict_stack(h, h->cand[i].rec);
	hot_pairs_sweep(h);
}

static void hot_evict_pairs(struct hotstacks *h, uint64_t now)
{
	double f[HOT_SLICES];
	uint64_t qn = now / h->slice_ns;
	size_t n = 0, drop = h->cp.cap / 8 ? h->cp.cap / 8 : 1;

	hot_pairs_sweep(h);
	if (h->cp.live < h->cp.cap ||
	    !grow_array((void **)&h->cand, &h->cand_cap, h->cp.used,
			sizeof(*h->cand)))
		return;
	hot_factors(h, now, f);
	for (uint32_t r = 0; r < h->cp.used; r++)
		if (h->c[r].coro)
			h->cand[n++] = (struct hot_cand){
				.weight = hot_window_weight(&h->c[r].w, qn, f),
				.total = h->c[r].w.total,
				.id = h->c[r].stack_id,
				.rec = r,
			};
	hot_cand_select(h->cand, n, drop);
	for (size_t i = 0; i < n && i < drop; i++) {
		hot_pair_drop(h, h->cand[i].rec);
		h->st.coro_evicted++;
	}
}

/* ---- ingest ---- */

static uint32_t hot_stack_get(struct hotstacks *h, const uint64_t *frames,
			      uint32_t n, uint64_t now)
{
	struct hot_key k = {.h = h, .frames = frames, .n = n};
	uint64_t hash = ct_hash(frames, n);
	uint32_t r = hashidx_find(&h->si, hash, hot_stack_eq, &k);
	struct hot_stack_rec *s;
	uint64_t *copy;

	if (r != HASHIDX_NONE)
		return r;
	copy = malloc((n ? n : 1) * sizeof(*copy));
	if (!copy)
		return HASHIDX_NONE;
	if (h->sp.live == h->sp.cap)
		hot_evict_stacks(h, now);
	r = hot_pool_get(&h->sp);
	if (r == HASHIDX_NONE) {
		free(copy);
		return HASHIDX_NONE;
	}
	s = &h->s[r];
	memset(s, 0, sizeof(*s));
	memcpy(copy, frames, n * sizeof(*copy));
	s->frames = copy;
	s->nframes = n;
	s->hash = hash;
	s->id = h->next_id++;
	s->w.last_q = now / h->slice_ns;
	hashidx_insert(&h->si, hash, r);
	if (h->npend < h->sp.cap) {
		h->pend_rec[h->npend] = r;
		h->pend_id[h->npend++] = s->id;
	}
	return r;
}

static void hot_pair_add(struct hotstacks *h, uint32_t stack, uint64_t coro,
			 uint64_t weight, uint64_t now)
{
	uint64_t sid = h->s[stack].id, hash = hot_pair_hash(sid, coro);
	struct hot_key k = {.h = h, .a = sid, .b = coro};
	uint32_t r = hashidx_find(&h->ci, hash, hot_pair_eq, &k);

	if (r == HASHIDX_NONE) {
		if (h->cp.live == h->cp.cap)
			hot_evict_pairs(h, now);
		r = hot_pool_get(&h->cp);
		if (r == HASHIDX_NONE) {
			h->st.coro_evicted++;
			return;
		}
		memset(&h->c[r], 0, sizeof(h->c[r]));
		h->c[r] = (struct hot_pair_rec){
			.coro = coro,
			.stack_id = sid,
			.hash = hash,
			.stack = stack,
			.w.last_q = now / h->slice_ns,
		};
		hashidx_insert(&h->ci, hash, r);
	}
	hot_window_add(&h->c[r].w, now / h->slice_ns, weight);
}

void hotstacks_ingest(struct hotstacks *h, const struct traceset *u,
		      const uint64_t *coro, uint64_t now)
{
	uint64_t q = now / h->slice_ns;

	for (size_t i = 0; i < u->n; i++) {
		const struct traceset_entry *e = &u->e[i];
		uint32_t n = e->nframes, r;
		uint64_t tag = 0;

		if (!e->frames || n > CT_MAX_FRAMES)
			continue;
		if (n && CT_TAG_IS(e->frames[n - 1]))
			tag = e->frames[--n];
		if (!e->weight)
			continue;
		if (h->cfg.keep) {
			size_t k = h->cfg.keep(h->cfg.keep_ctx, e->frames, n);

			n = k < n ? (uint32_t)k : n;
		}
		h->st.weight += e->weight;
		r = hot_stack_get(h, e->frames, n, now);
		if (r == HASHIDX_NONE) { /* out of memory */
			h->st.evicted_weight += e->weight;
			continue;
		}
		h->s[r].trace_id = e->id;
		hot_window_add(&h->s[r].w, q, e->weight);
		if (!tag)
			continue;
		if ((tag & CT_TAG_MASK) == CT_TAG_CORO && coro && coro[i]) {
			hot_pair_add(h, r, coro[i], e->weight, now);
			h->st.attributed += e->weight;
		} else {
			h->st.unattributed += e->weight;
		}
	}
	h->st.ingests++;
}

void hotstacks_zero(struct hotstacks *h, uint64_t now)
{
	for (uint32_t r = 0; r < h->sp.used; r++)
		free(h->s[r].frames);
	memset(h->s, 0, h->sp.used * sizeof(*h->s));
	memset(h->c, 0, h->cp.used * sizeof(*h->c));
	hot_pool_reset(&h->sp);
	hot_pool_reset(&h->cp);
	hashidx_clear(&h->si);
	hashidx_clear(&h->ci);
	h->npend = h->pend_frame = 0;
	h->st.zeroed_ns = now ? now : 1;
}

/* ---- queries ---- */

/* Candidates of a query: every stack, or one coroutine's pairs. */
static size_t hot_gather(struct hotstacks *h, uint64_t coro, uint64_t now)
{
	double f[HOT_SLICES];
	uint64_t qn = now / h->slice_ns;
	size_t n = 0;

	hot_factors(h, now, f);
	if (!coro) {
		if (!grow_array((void **)&h->cand, &h->cand_cap, h->sp.used,
				sizeof(*h->cand)))
			return 0;
		for (uint32_t r = 0; r < h->sp.used; r++)
			if (h->s[r].id)
				h->cand[n++] = (struct hot_cand){
					.weight = hot_window_weight(&h->s[r].w,
								    qn, f),
					.total = h->s[r].w.total,
					.id = h->s[r].id,
					.rec = r,
					.stack = r,
				};
		return n;
	}
	if (!grow_array((void **)&h->cand, &h->cand_cap, h->cp.used,
			sizeof(*h->cand)))
		return 0;
	for (uint32_t r = 0; r < h->cp.used; r++) {
		const struct hot_pair_rec *c = &h->c[r];

		if (c->coro != coro ||
		    !hot_stack_live(h, c->stack, c->stack_id))
			continue;
		h->cand[n++] = (struct hot_cand){
			.weight = hot_window_weight(&c->w, qn, f),
			.total = c->w.total,
			.id = c->stack_id,
			.rec = r,
			.stack = c->stack,
		};
	}
	return n;
}

static int hot_cand_by_window(const void *a, const void *b)
{
	const struct hot_cand *x = a, *y = b;

	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

static int hot_cand_by_total(const void *a, const void *b)
{
	const struct hot_cand *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

static double hot_basis(const struct hot_cand *c, enum hot_order order)
{
	return order == HOT_BY_TOTAL ? (double)c->total : c->weight;
}

/* Is stack a a caller of (or equal to) stack b: a's frames are b's
 * outermost ones? */
static bool hot_is_caller(const struct hot_stack_rec *a,
			  const struct hot_stack_rec *b)
{
	uint32_t skip;

	if (a->nframes > b->nframes)
		return false;
	skip = b->nframes - a->nframes;
	return a->nframes == 0 ||
	       !memcmp(a->frames, b->frames + skip, a->nframes * 8u);
}

/* The set's stacks with a basis, sorted into h->cand; their basis summed
 * into *sum.  Returns how many. */
static size_t hot_select(struct hotstacks *h, uint64_t coro,
			 enum hot_order order, uint64_t now, double *sum)
{
	size_t n = hot_gather(h, coro, now), keep = 0;

	*sum = 0.0;
	for (size_t i = 0; i < n; i++) {
		double v = hot_basis(&h->cand[i], order);

		*sum += v;
		if (v > 0.0)
			h->cand[keep++] = h->cand[i];
	}
	if (keep > 1)
		qsort(h->cand, keep, sizeof(*h->cand),
		      order == HOT_BY_TOTAL ? hot_cand_by_total
					    : hot_cand_by_window);
	return keep;
}

size_t hotstacks_heaviest(struct hotstacks *h, uint64_t coro,
			  enum hot_order order, uint64_t now, size_t max,
			  hotstacks_visit_fn fn, void *ctx, double *sum)
{
	size_t keep = hot_select(h, coro, order, now, sum);
	size_t got = keep < max ? keep : max;

	for (size_t i = 0; i < got; i++) {
		const struct hot_cand *c = &h->cand[i];
		const struct hot_stack_rec *s = &h->s[c->stack];

		fn(ctx, &(struct hot_ref){
				.stack_id = s->id,
				.trace_id = s->trace_id,
				.total = c->total,
				.weight = c->weight,
				.frames = s->frames,
				.nframes = s->nframes,
			});
	}
	return got;
}

size_t hotstacks_top(struct hotstacks *h, uint64_t coro, enum hot_order order,
		     uint64_t now, struct hot_stack *out, size_t max)
{
	double sum;
	size_t keep = hot_select(h, coro, order, now, &sum), got;

	got = keep < max ? keep : max;
	for (size_t i = 0; i < got; i++) {
		const struct hot_cand *c = &h->cand[i];
		const struct hot_stack_rec *s = &h->s[c->stack];
		struct hot_stack *o = &out[i];
		double under = 0.0;

		for (size_t j = 0; j < keep; j++)
			if (hot_is_caller(s, &h->s[h->cand[j].stack]))
				under += hot_basis(&h->cand[j], order);
		o->stack_id = s->id;
		o->trace_id = s->trace_id;
		o->total = c->total;
		o->weight = c->weight;
		o->self_pct =
			sum > 0.0 ? 100.0 * hot_basis(c, order) / sum : 0.0;
		o->total_pct = sum > 0.0 ? 100.0 * under / sum : 0.0;
		o->key = s->id;
		o->merged = 1;
		o->nframes = s->nframes;
		memcpy(o->frames, s->frames, s->nframes * sizeof(*s->frames));
	}
	return got;
}

size_t hotstacks_each(struct hotstacks *h, uint64_t coro, uint64_t now,
		      hotstacks_each_fn fn, void *ctx)
{
	size_t n = hot_gather(h, coro, now), called = 0;

	for (size_t i = 0; i < n; i++) {
		const struct hot_cand *c = &h->cand[i];
		const struct hot_stack_rec *s = &h->s[c->stack];

		if (c->weight <= 0.0 && !c->total)
			continue;
		fn(ctx, s->frames, s->nframes, c->weight, c->total);
		called++;
	}
	return called;
}

size_t hotstacks_new_frames(struct hotstacks *h, struct hot_frame *out,
			    size_t max)
{
	size_t got = 0, done = 0;

	while (done < h->npend && got < max) {
		uint32_t r = h->pend_rec[done];
		const struct hot_stack_rec *s = &h->s[r];

		if (!hot_stack_live(h, r, h->pend_id[done])) {
			done++;
			h->pend_frame = 0;
			continue;
		}
		while (h->pend_frame < s->nframes && got < max) {
			out[got].addr = s->frames[h->pend_frame];
			out[got++].leaf = h->pend_frame++ == 0;
		}
		if (h->pend_frame == s->nframes) {
			done++;
			h->pend_frame = 0;
		}
	}
	memmove(h->pend_rec, h->pend_rec + done,
		(h->npend - done) * sizeof(*h->pend_rec));
	memmove(h->pend_id, h->pend_id + done,
		(h->npend - done) * sizeof(*h->pend_id));
	h->npend -= done;
	return got;
}

void hotstacks_stats(const struct hotstacks *h, struct hotstacks_stats *out)
{
	*out = h->st;
	out->stacks = h->sp.live;
	out->coro_entries = h->cp.live;
	out->window_s = h->cfg.window_s;
	out->half_life_s = h->cfg.half_life_s;
}
