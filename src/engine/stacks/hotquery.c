/*
 * hotquery: what callers read of the hot stacks -- the top stacks, the
 * caller -> callee tree, frame names, zero,
 * window, the top list merged by function, line or address (hotmerge),
 * and the folded / speedscope exports.
 *
 * Every answer is a copy taken under the hot lock, which the harvest
 * thread holds only while it feeds one rotation in (rotation.c);
 * naming frames and writing files happen after the lock is released.  A
 * frame is named from framenames (kept while the target lived) first, then
 * by a live lookup (kept for next time), else in hex.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/stacks/stacks_internal.h"
#include "engine/symbols/framenames.h"
#include "engine/calltrace/hotmerge.h"
#include "engine/calltrace/hotstacks.h"
#include "engine/calltrace/parked.h"
#include "engine/export/profile.h"
#include "engine/calltrace/stacktree.h"

#include "wire/cttable.h"
#include "common/grow.h"
#include "common/clock.h"

#define HOT_TREE_NODES 65536u /* nodes a tree is built with at most */
#define HOT_MEMO 4096u	      /* frame -> key memo of one tree build */

void stacks_stats(struct stacks *sk, struct engine_calltrace_stats *out)
{
	struct stacks_ct *ct = &sk->ct;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&ct->hot_lock);
	out->enabled = ct->rotor != NULL;
	out->failed = ct->failed;
	snprintf(out->warning, sizeof(out->warning), "%s", ct->warning);
	out->rotor.rotations = ct->rs.rotations;
	out->rotor.traces = ct->rs.traces;
	out->rotor.weight = ct->rs.weight;
	out->rotor.preserved = ct->rs.preserved;
	out->rotor.dropped = ct->rs.dropped;
	out->rotor.dropped_weight = ct->rs.dropped_weight;
	if (ct->hot) {
		struct hotstacks_stats h;

		hotstacks_stats(ct->hot, &h);
		out->hot.stacks = h.stacks;
		out->hot.weight = h.weight;
		out->hot.attributed = h.attributed;
		out->hot.unattributed = h.unattributed;
		out->hot.evicted_weight = h.evicted_weight;
		out->hot.window_s = h.window_s;
		out->hot.half_life_s = h.half_life_s;
	}
	if (ct->parked) {
		struct parked_stats p;

		parked_stats(ct->parked, &p);
		out->parked.kept = p.kept;
	}
	if (ct->names)
		out->names = framenames_count(ct->names);
	pthread_mutex_unlock(&ct->hot_lock);
	stacks_samples_stats(sk, out);
}

static void hot_stack_out(const struct hot_stack *h, struct engine_hot_stack *o)
{
	*o = (struct engine_hot_stack){
		.stack_id = h->stack_id,
		.trace_id = h->trace_id,
		.total = h->total,
		.weight = h->weight,
		.self_pct = h->self_pct,
		.total_pct = h->total_pct,
		.key = h->key,
		.merged = h->merged,
		.nframes = h->nframes,
	};
	memcpy(o->frames, h->frames, h->nframes * sizeof(h->frames[0]));
}

size_t stacks_hot_stacks(struct stacks *sk, uint64_t model_id,
			 enum engine_hot_order order,
			 struct engine_hot_stack *out, size_t max)
{
	struct stacks_ct *ct = &sk->ct;
	size_t n = 0;

	pthread_mutex_lock(&ct->hot_lock);
	/* hotstacks writes its own rows into a scratch array kept under the
	 * hot lock; each is copied into the facade's. */
	if (ct->hot &&
	    grow_array((void **)&ct->top, &ct->top_cap, max, sizeof(*ct->top)))
		n = hotstacks_top(ct->hot, model_id,
				  order == ENGINE_HOT_BY_TOTAL ? HOT_BY_TOTAL
							       : HOT_BY_WINDOW,
				  stacks_now(sk), ct->top, max);
	for (size_t i = 0; i < n; i++)
		hot_stack_out(&ct->top[i], &out[i]);
	pthread_mutex_unlock(&ct->hot_lock);
	return n;
}

void stacks_hot_zero(struct stacks *sk)
{
	pthread_mutex_lock(&sk->ct.hot_lock);
	if (sk->ct.hot)
		hotstacks_zero(sk->ct.hot, stacks_now(sk));
	pthread_mutex_unlock(&sk->ct.hot_lock);
}

void stacks_hot_window(struct stacks *sk, unsigned window_s,
		       unsigned half_life_s)
{
	pthread_mutex_lock(&sk->ct.hot_lock);
	if (sk->ct.hot)
		hotstacks_set_window(sk->ct.hot, window_s, half_life_s);
	pthread_mutex_unlock(&sk->ct.hot_lock);
}

/* ---- names ---- */

/* Name frame addr into *n (strings in the kept names, or in *scratch);
 * false when nothing knows it. */
static bool stacks_frame_lookup(struct stacks *sk, uint64_t addr, bool leaf,
				struct framename *n, struct symtab_sym *scratch)
{
	struct stacks_ct *ct = &sk->ct;
	uint64_t key = framename_key(addr, leaf);
	bool have = false;

	pthread_mutex_lock(&ct->hot_lock);
	if (ct->names)
		have = framenames_get(ct->names, key, n);
	pthread_mutex_unlock(&ct->hot_lock);
	if (have || !symtab_lookup(sk->env.symtab, key, scratch))
		return have;
	pthread_mutex_lock(&ct->hot_lock);
	if (ct->names)
		framenames_put(ct->names, key, scratch);
	pthread_mutex_unlock(&ct->hot_lock);
	*n = (struct framename){
		.function = scratch->function[0] ? scratch->function : NULL,
		.module = scratch->module,
		.file = scratch->file[0] ? scratch->file : NULL,
		.line = scratch->line,
		.offset = scratch->offset,
	};
	return true;
}

const char *stacks_frame_name(struct stacks *sk, uint64_t addr, bool leaf,
			      bool full, char *buf, size_t n)
{
	struct symtab_sym scratch;
	struct framename nm;
	bool have = stacks_frame_lookup(sk, addr, leaf, &nm, &scratch);

	return full ? framename_full(have ? &nm : NULL, addr, leaf, buf, n)
		    : framename_function(have ? &nm : NULL, addr, leaf, buf, n);
}

/* ---- merged rows ---- */

/* The heaviest stacks, copied out under the lock for hotmerge. */
struct hot_merge_copy {
	struct hotmerge_stack *s;
	size_t ns, cap_s;
	uint64_t *frames;
	size_t nframes, cap_frames;
	bool oom;
};

static void hot_merge_take(void *ctx, const struct hot_ref *r)
{
	struct hot_merge_copy *c = ctx;

	if (c->oom)
		return;
	if (!grow_array((void **)&c->frames, &c->cap_frames,
			c->nframes + r->nframes, sizeof(*c->frames)) ||
	    !grow_array((void **)&c->s, &c->cap_s, c->ns + 1, sizeof(*c->s))) {
		c->oom = true;
		return;
	}
	if (r->nframes)
		memcpy(c->frames + c->nframes, r->frames,
		       r->nframes * sizeof(*r->frames));
	c->s[c->ns++] = (struct hotmerge_stack){
		.stack_id = r->stack_id,
		.trace_id = r->trace_id,
		.total = r->total,
		.weight = r->weight,
		.first = (uint32_t)c->nframes,
		.nframes = r->nframes,
	};
	c->nframes += r->nframes;
}

struct hot_keyer {
	struct stacks *sk;
	enum engine_hot_by by;
};

static uint64_t hot_fnv(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* A frame's key at the keyer's granularity: the function's start and name
 * (the name tells inlined code apart), with the file and line; a frame
 * without a function name (no symbols) is its own address. */
static uint64_t hot_frame_key(void *ctx, uint64_t addr, bool leaf)
{
	const struct hot_keyer *k = ctx;
	struct symtab_sym scratch;
	struct framename nm;
	uint64_t h;

	if (k->by == ENGINE_HOT_BY_ADDRESS ||
	    !stacks_frame_lookup(k->sk, addr, leaf, &nm, &scratch) ||
	    !nm.function)
		return ct_mix64(addr << 1 | (uint64_t)leaf);
	h = hot_fnv(0xcbf29ce484222325ull, nm.function) ^
	    ct_mix64(framename_key(addr, leaf) - nm.offset);
	if (k->by == ENGINE_HOT_BY_LINE && nm.file && nm.line > 0)
		h = ct_mix64(hot_fnv(h, nm.file) ^ (uint64_t)nm.line);
	return h;
}

size_t stacks_hot_rows(struct stacks *sk, uint64_t model_id,
		       enum engine_hot_order order, enum engine_hot_by by,
		       struct engine_hot_stack *out, size_t max)
{
	struct stacks_ct *ct = &sk->ct;
	enum hot_order o =
		order == ENGINE_HOT_BY_TOTAL ? HOT_BY_TOTAL : HOT_BY_WINDOW;
	struct hot_keyer k = {.sk = sk, .by = by};
	struct hot_merge_copy c = {0};
	struct hot_stack *rows = NULL;
	double sum = 0.0;
	size_t n = 0;

	if (!max)
		return 0;
	pthread_mutex_lock(&ct->hot_lock);
	if (ct->hot)
		hotstacks_heaviest(ct->hot, model_id, o, stacks_now(sk),
				   ENGINE_HOT_MERGE_STACKS, hot_merge_take, &c,
				   &sum);
	pthread_mutex_unlock(&ct->hot_lock);
	/* Named and merged outside the lock: naming may take it. */
	rows = c.ns && !c.oom ? malloc(max * sizeof(*rows)) : NULL;
	if (rows) {
		struct hotmerge_in in = {
			.s = c.s,
			.n = c.ns,
			.frames = c.frames,
			.order = o,
			.sum = sum,
		};

		n = hotmerge(&in, hot_frame_key, &k, rows, max);
		for (size_t i = 0; i < n; i++)
			hot_stack_out(&rows[i], &out[i]);
	}
	free(rows);
	free(c.s);
	free(c.frames);
	return n;
}

const char *stacks_frame_label(struct stacks *sk, uint64_t addr, bool leaf,
			       enum engine_hot_by by, char *buf, size_t n)
{
	struct symtab_sym scratch;
	struct framename nm;

	if (by == ENGINE_HOT_BY_ADDRESS)
		return stacks_frame_name(sk, addr, leaf, leaf, buf, n);
	if (by != ENGINE_HOT_BY_LINE ||
	    !stacks_frame_lookup(sk, addr, leaf, &nm, &scratch) ||
	    !nm.function || !nm.file || nm.line <= 0)
		return stacks_frame_name(sk, addr, leaf, false, buf, n);
	if (leaf)
		snprintf(buf, n, "%s (%s:%d)", nm.function, nm.file, nm.line);
	else
		snprintf(buf, n, "%s:%d", nm.function, nm.line);
	return buf;
}

/* ---- copies of the stacks ---- */

struct hot_copy_stack {
	uint32_t first, n;
	double weight;
	uint64_t total;
};

struct hot_copy {
	uint64_t *frames;
	size_t nframes, cap_frames;
	struct hot_copy_stack *s;
	size_t ns, cap_s;
	bool window; /* keep only stacks with window weight */
	bool oom;
};

static void hot_copy_one(void *ctx, const uint64_t *frames, uint32_t n,
			 double weight, uint64_t total)
{
	struct hot_copy *c = ctx;

	if (c->oom || (c->window ? weight <= 0.0 : !total))
		return;
	if (!grow_array((void **)&c->frames, &c->cap_frames, c->nframes + n,
			sizeof(*c->frames)) ||
	    !grow_array((void **)&c->s, &c->cap_s, c->ns + 1, sizeof(*c->s))) {
		c->oom = true;
		return;
	}
	if (n)
		memcpy(c->frames + c->nframes, frames, n * sizeof(*frames));
	c->s[c->ns++] =
		(struct hot_copy_stack){(uint32_t)c->nframes, n, weight, total};
	c->nframes += n;
}

/* Copy model_id's (0: every) stacks out under the lock. */
static bool hot_copy_take(struct stacks *sk, uint64_t model_id, bool window,
			  struct hot_copy *c)
{
	memset(c, 0, sizeof(*c));
	c->window = window;
	pthread_mutex_lock(&sk->ct.hot_lock);
	if (sk->ct.hot)
		hotstacks_each(sk->ct.hot, model_id, stacks_now(sk),
			       hot_copy_one, c);
	pthread_mutex_unlock(&sk->ct.hot_lock);
	return !c->oom;
}

static void hot_copy_free(struct hot_copy *c)
{
	free(c->frames);
	free(c->s);
}

/* ---- tree ---- */

struct hot_memo {
	uint64_t addr[HOT_MEMO];
	uint64_t key[HOT_MEMO];
};

/* What merges frame addr in a tree by function: its name's hash. */
static uint64_t hot_function_key(struct stacks *sk, struct hot_memo *m,
				 uint64_t addr, bool leaf)
{
	uint64_t tagged = addr ^ (uint64_t)leaf;
	size_t at = ct_mix64(tagged) % HOT_MEMO;
	char name[160];
	uint64_t h = 0xcbf29ce484222325ull;

	if (m->addr[at] == tagged && m->key[at])
		return m->key[at];
	stacks_frame_name(sk, addr, leaf, false, name, sizeof(name));
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	h = h ? h : 1;
	m->addr[at] = tagged;
	m->key[at] = h;
	return h;
}

static void hot_tree_fill(struct stacks *sk, const struct stacktree *t,
			  const uint32_t *order, size_t n, bool by_function,
			  struct hot_node *out)
{
	for (size_t i = 0; i < n; i++) {
		const struct stacktree_node *v = &t->n[order[i]];
		struct hot_node *o = &out[i];

		o->addr = v->addr;
		o->depth = v->depth;
		o->subtree =
			v->subtree <= n - i ? v->subtree : (uint32_t)(n - i);
		o->leaf = v->leaf;
		o->self = v->self;
		o->total = v->total;
		o->self_pct = t->sum > 0.0 ? 100.0 * v->self / t->sum : 0.0;
		o->total_pct = t->sum > 0.0 ? 100.0 * v->total / t->sum : 0.0;
		stacks_frame_name(sk, v->addr, v->leaf, !by_function, o->name,
				  sizeof(o->name));
	}
}

size_t stacks_hot_tree(struct stacks *sk, uint64_t model_id, bool by_function,
		       struct hot_node *out, size_t max)
{
	uint64_t keys[CT_MAX_FRAMES], addrs[CT_MAX_FRAMES];
	struct hot_memo *memo = NULL;
	struct stacktree t;
	struct hot_copy c;
	uint32_t *order = NULL;
	size_t n = 0;

	if (!max)
		return 0;
	if (!hot_copy_take(sk, model_id, true, &c) || !c.ns)
		goto out_copy;
	if (!stacktree_init(&t, HOT_TREE_NODES))
		goto out_copy;
	memo = by_function ? calloc(1, sizeof(*memo)) : NULL;
	order = malloc(max * sizeof(*order));
	if ((by_function && !memo) || !order)
		goto out_tree;
	for (size_t i = 0; i < c.ns; i++) {
		const struct hot_copy_stack *s = &c.s[i];

		/* Root first: the stored frames are innermost first. */
		for (uint32_t k = 0; k < s->n; k++) {
			uint32_t at = s->first + s->n - 1 - k;
			bool leaf = k + 1 == s->n;

			addrs[k] = c.frames[at];
			keys[k] = by_function ? hot_function_key(sk, memo,
								 addrs[k], leaf)
					      : addrs[k];
		}
		stacktree_add(&t, keys, addrs, s->n, s->weight);
	}
	n = stacktree_order(&t, order, max);
	hot_tree_fill(sk, &t, order, n, by_function, out);
out_tree:
	free(order);
	free(memo);
	stacktree_finish(&t);
out_copy:
	hot_copy_free(&c);
	return n;
}

/* ---- exports ---- */

/* Names of one stack's frames while it is added to a profile. */
struct hot_names {
	char name[CT_MAX_FRAMES][160];
	char file[CT_MAX_FRAMES][96];
	const char *namep[CT_MAX_FRAMES], *filep[CT_MAX_FRAMES];
};

static bool hot_profile_fill(struct stacks *sk, const struct hot_copy *c,
			     struct profile *p)
{
	struct hot_names *b = malloc(sizeof(*b));
	struct symtab_sym scratch;
	bool ok = b != NULL;

	for (size_t i = 0; ok && i < c->ns; i++) {
		const struct hot_copy_stack *s = &c->s[i];

		for (uint32_t k = 0; k < s->n; k++) {
			uint64_t addr = c->frames[s->first + k];
			struct framename nm;
			bool have = stacks_frame_lookup(sk, addr, k == 0, &nm,
							&scratch);

			b->namep[k] = framename_function(
				have ? &nm : NULL, addr, k == 0, b->name[k],
				sizeof(b->name[k]));
			b->filep[k] = NULL;
			if (have && nm.file) {
				snprintf(b->file[k], sizeof(b->file[k]), "%s",
					 nm.file);
				b->filep[k] = b->file[k];
			}
		}
		ok = profile_add(p, b->namep, b->filep, s->n, s->total);
	}
	free(b);
	return ok;
}

bool stacks_export(struct stacks *sk, enum engine_export_format fmt,
		   const char *path, uint64_t model_id, char *err,
		   size_t errlen)
{
	const struct profile_format *f = fmt == ENGINE_EXPORT_SPEEDSCOPE
						 ? &profile_speedscope
						 : &profile_folded;
	char title[256];
	struct profile p;
	struct hot_copy c;
	bool ok = false;

	if (!sk->ct.hot) {
		snprintf(err, errlen,
			 "cannot write the %s profile %s: no CallTrace region "
			 "(only a target corotop launches has one)",
			 f->name, path);
		return false;
	}
	snprintf(title, sizeof(title), "corotop: %s",
		 sk->cfg.title ? sk->cfg.title : "target");
	if (!hot_copy_take(sk, model_id, false, &c) ||
	    !profile_init(&p, title)) {
		snprintf(err, errlen,
			 "cannot write the %s profile %s: out "
			 "of memory",
			 f->name, path);
		hot_copy_free(&c);
		return false;
	}
	if (!hot_profile_fill(sk, &c, &p))
		snprintf(err, errlen,
			 "cannot write the %s profile %s: out "
			 "of memory",
			 f->name, path);
	else
		ok = profile_write(&p, f, path, err, errlen);
	profile_finish(&p);
	hot_copy_free(&c);
	return ok;
}
