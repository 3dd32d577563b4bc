/*
 * hotmerge: hot stacks merged by a key per frame.
 *
 * hotstacks keeps stacks by their exact addresses: a function whose
 * samples land on twenty instructions is twenty stacks.  People ask where
 * the time goes by function (or line), so a query maps each frame to a key
 * at that granularity (the caller's hotmerge_key_fn: a function's start, a
 * file:line, the address itself), and stacks with equal key sequences
 * become one row, their weights summed.
 *
 * The work is bounded by the input: the caller hands in its heaviest few
 * thousand stacks (the ingest path is not touched), keys are memoized per
 * call in a direct-mapped table, rows are found by hashing the key
 * sequence, and each row's inclusive weight is one pass over the stacks
 * against a table of the rows' leaf keys, a stamp per entry counting a
 * stack once however often the key recurs in it.
 */
#include "engine/calltrace/hotmerge.h"

#include <stdlib.h>
#include <string.h>

#include "wire/cttable.h"

#define MEMO_SLOTS 65536u /* frame -> key memo, direct-mapped */

struct memo_slot {
	uint64_t tagged; /* addr * 2 + leaf, plus 1; 0: empty */
	uint64_t key;
};

struct row {
	uint64_t hash; /* of the key sequence; 0: empty slot */
	uint32_t rep;  /* its heaviest stack (the first seen) */
	uint32_t merged;
	double basis, weight;
	uint64_t total;
	double other; /* the weight that is not the basis: ties */
};

/* A leaf key's inclusive basis. */
struct leaf {
	uint64_t key;
	bool used;
	size_t stamp; /* the last stack counted, plus 1 */
	double incl;
};

struct merge {
	const struct hotmerge_in *in;
	uint64_t *keys; /* per input frame */
	struct row *rows;
	size_t rows_cap; /* a power of two */
	struct leaf *leaves;
	size_t leaves_cap;
};

static size_t pow2_at_least(size_t n)
{
	size_t c = 16;

	while (c < n)
		c <<= 1;
	return c;
}

static uint64_t merge_key(struct memo_slot *memo, hotmerge_key_fn fn, void *ctx,
			  uint64_t addr, bool leaf)
{
	uint64_t tagged = (addr << 1 | (uint64_t)leaf) + 1;
	struct memo_slot *m = &memo[ct_mix64(tagged) % MEMO_SLOTS];

	if (m->tagged != tagged) {
		m->tagged = tagged;
		m->key = fn(ctx, addr, leaf);
	}
	return m->key;
}

static double merge_basis(const struct hotmerge_in *in, double weight,
			  uint64_t total)
{
	return in->order == HOT_BY_TOTAL ? (double)total : weight;
}

static bool merge_same(const struct merge *m, uint32_t a, uint32_t b)
{
	const struct hotmerge_stack *x = &m->in->s[a], *y = &m->in->s[b];

	return x->nframes == y->nframes &&
	       (!x->nframes || !memcmp(m->keys + x->first, m->keys + y->first,
				       x->nframes * sizeof(*m->keys)));
}

/* Add stack i to its row. */
static void merge_add(struct merge *m, uint32_t i)
{
	const struct hotmerge_stack *s = &m->in->s[i];
	uint64_t h = ct_hash(m->keys + s->first, s->nframes);
	size_t at;

	h = h ? h : 1;
	for (at = h & (m->rows_cap - 1); m->rows[at].hash;
	     at = (at + 1) & (m->rows_cap - 1))
		if (m->rows[at].hash == h && merge_same(m, m->rows[at].rep, i))
			break;
	if (!m->rows[at].hash)
		m->rows[at] = (struct row){.hash = h, .rep = i};
	m->rows[at].merged++;
	m->rows[at].basis += merge_basis(m->in, s->weight, s->total);
	m->rows[at].weight += s->weight;
	m->rows[at].total += s->total;
}

static struct leaf *merge_leaf(struct merge *m, uint64_t key, bool add)
{
	size_t at = ct_mix64(key) & (m->leaves_cap - 1);

	for (; m->leaves[at].used; at = (at + 1) & (m->leaves_cap - 1))
		if (m->leaves[at].key == key)
			return &m->leaves[at];
	if (!add)
		return NULL;
	m->leaves[at] = (struct leaf){.key = key, .used = true};
	return &m->leaves[at];
}

/* Every stack's basis, once, to each leaf key found anywhere in it. */
static void merge_inclusive(struct merge *m)
{
	const struct hotmerge_in *in = m->in;

	for (size_t i = 0; i < in->n; i++) {
		const struct hotmerge_stack *s = &in->s[i];
		double b = merge_basis(in, s->weight, s->total);

		for (uint32_t k = 0; k < s->nframes; k++) {
			struct leaf *l =
				merge_leaf(m, m->keys[s->first + k], false);

			if (l && l->stamp != i + 1) {
				l->stamp = i + 1;
				l->incl += b;
			}
		}
	}
}

/* Rows heaviest first. */
static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->basis != y->basis)
		return x->basis > y->basis ? -1 : 1;
	if (x->other != y->other)
		return x->other > y->other ? -1 : 1;
	return (x->hash > y->hash) - (x->hash < y->hash);
}

static void merge_out(const struct merge *m, const struct row *r,
		      struct hot_stack *o)
{
	const struct hotmerge_in *in = m->in;
	const struct hotmerge_stack *s = &in->s[r->rep];
	double incl = r->basis;

	if (s->nframes) {
		const struct leaf *l =
			merge_leaf((struct merge *)m, m->keys[s->first], false);

		if (l && l->incl > incl)
			incl = l->incl;
	}
	*o = (struct hot_stack){
		.stack_id = s->stack_id,
		.trace_id = s->trace_id,
		.total = r->total,
		.weight = r->weight,
		.self_pct = in->sum > 0.0 ? 100.0 * r->basis / in->sum : 0.0,
		.total_pct = in->sum > 0.0 ? 100.0 * incl / in->sum : 0.0,
		.key = r->hash,
		.merged = r->merged,
		.nframes = s->nframes,
	};
	if (o->self_pct > 100.0)
		o->self_pct = 100.0;
	if (o->total_pct > 100.0)
		o->total_pct = 100.0;
	memcpy(o->frames, in->frames + s->first,
	       s->nframes * sizeof(*o->frames));
}

size_t hotmerge(const struct hotmerge_in *in, hotmerge_key_fn key_fn, void *ctx,
		struct hot_stack *out, size_t max)
{
	struct memo_slot *memo = NULL;
	struct merge m = {.in = in};
	size_t nkeys = 0, nrows = 0, got = 0;

	if (!in->n || !max)
		return 0;
	for (size_t i = 0; i < in->n; i++)
		nkeys += in->s[i].nframes;
	m.rows_cap = pow2_at_least(2 * in->n);
	m.keys = malloc((nkeys ? nkeys : 1) * sizeof(*m.keys));
	m.rows = calloc(m.rows_cap, sizeof(*m.rows));
	memo = calloc(MEMO_SLOTS, sizeof(*memo));
	if (!m.keys || !m.rows || !memo)
		goto out;
	for (size_t i = 0; i < in->n; i++) {
		const struct hotmerge_stack *s = &in->s[i];

		for (uint32_t k = 0; k < s->nframes; k++)
			m.keys[s->first + k] =
				merge_key(memo, key_fn, ctx,
					  in->frames[s->first + k], k == 0);
		merge_add(&m, (uint32_t)i);
	}
	/* Pack the rows to the front, then their leaf keys into a table. */
	for (size_t at = 0; at < m.rows_cap; at++) {
		struct row *r = &m.rows[at];

		if (!r->hash)
			continue;
		r->other = in->order == HOT_BY_TOTAL ? r->weight
						     : (double)r->total;
		m.rows[nrows++] = *r;
	}
	m.leaves_cap = pow2_at_least(2 * nrows);
	m.leaves = calloc(m.leaves_cap, sizeof(*m.leaves));
	if (!m.leaves)
		goto out;
	for (size_t r = 0; r < nrows; r++) {
		const struct hotmerge_stack *s = &in->s[m.rows[r].rep];

		if (s->nframes)
			merge_leaf(&m, m.keys[s->first], true);
	}
	merge_inclusive(&m);
	qsort(m.rows, nrows, sizeof(*m.rows), row_cmp);
	got = nrows < max ? nrows : max;
	for (size_t r = 0; r < got; r++)
		merge_out(&m, &m.rows[r], &out[r]);
out:
	free(memo);
	free(m.keys);
	free(m.rows);
	free(m.leaves);
	return got;
}
