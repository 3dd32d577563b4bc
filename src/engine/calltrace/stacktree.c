/*
 * stacktree: weighted stacks folded into a caller -> callee tree.
 *
 * Each path is walked from the root (outermost frame) to the leaf; at every
 * depth the node is found or made by (parent, key), so two stacks share
 * nodes exactly as long as their caller paths agree.  What a key is decides
 * how frames merge: the address itself (a node per call site) or a hash of
 * the function's name (a node per function, so the different call sites of
 * one caller fold together).  Every node on a path gets the weight in
 * `total`, the last one in `self` too; recursion simply makes more nodes.
 *
 * The tree is bounded (max nodes); a path that would need more ends at the
 * deepest node it reached, which takes the weight as self, and is counted
 * (truncated), so self and total still add up -- except for a path that
 * found no node at all, whose weight is only in `sum`.
 *
 * stacktree_order lays the tree out for a collapsible view: pre-order,
 * heaviest child first, with subtree sizes so a collapsed node skips its
 * descendants in one step.
 */
#include "engine/calltrace/stacktree.h"

#include <stdlib.h>
#include <string.h>

#include "wire/cttable.h"

bool stacktree_init(struct stacktree *t, size_t max_nodes)
{
	memset(t, 0, sizeof(*t));
	t->max = max_nodes ? max_nodes : 1;
	t->first_top = STACKTREE_NONE;
	t->n = malloc(t->max * sizeof(*t->n));
	if (!t->n || !hashidx_init(&t->idx, t->max)) {
		free(t->n);
		t->n = NULL;
		return false;
	}
	return true;
}

void stacktree_finish(struct stacktree *t)
{
	free(t->n);
	hashidx_finish(&t->idx);
	memset(t, 0, sizeof(*t));
}

void stacktree_clear(struct stacktree *t)
{
	t->count = 0;
	t->sum = 0.0;
	t->truncated = 0;
	t->first_top = STACKTREE_NONE;
	hashidx_clear(&t->idx);
}

struct stacktree_key {
	const struct stacktree *t;
	uint32_t parent;
	uint64_t key;
};

static bool stacktree_eq(void *ctx, uint32_t rec)
{
	const struct stacktree_key *k = ctx;

	return k->t->n[rec].parent == k->parent && k->t->n[rec].key == k->key;
}

static uint64_t stacktree_hash(uint32_t parent, uint64_t key)
{
	return ct_mix64(key ^ ct_mix64((uint64_t)parent + 1));
}

/* The child `key` of parent (STACKTREE_NONE: top level), made if need be;
 * STACKTREE_NONE when the bound is reached. */
static uint32_t stacktree_child(struct stacktree *t, uint32_t parent,
				uint64_t key, uint64_t addr, bool leaf)
{
	struct stacktree_key k = {t, parent, key};
	uint64_t h = stacktree_hash(parent, key);
	uint32_t r = hashidx_find(&t->idx, h, stacktree_eq, &k);
	struct stacktree_node *n;

	if (r != HASHIDX_NONE || t->count == t->max)
		return r;
	r = (uint32_t)t->count++;
	n = &t->n[r];
	*n = (struct stacktree_node){
		.key = key,
		.addr = addr,
		.parent = parent,
		.depth = parent == STACKTREE_NONE ? 0 : t->n[parent].depth + 1,
		.first_child = STACKTREE_NONE,
		.leaf = leaf,
	};
	if (parent == STACKTREE_NONE) {
		n->next_sibling = t->first_top;
		t->first_top = r;
	} else {
		n->next_sibling = t->n[parent].first_child;
		t->n[parent].first_child = r;
	}
	hashidx_insert(&t->idx, h, r);
	return r;
}

void stacktree_add(struct stacktree *t, const uint64_t *keys,
		   const uint64_t *addrs, uint32_t n, double weight)
{
	uint32_t at = STACKTREE_NONE;

	t->sum += weight;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t c =
			stacktree_child(t, at, keys[i], addrs[i], i + 1 == n);

		if (c == STACKTREE_NONE) {
			t->truncated++;
			break;
		}
		at = c;
		t->n[at].total += weight;
	}
	if (at != STACKTREE_NONE)
		t->n[at].self += weight;
}

/* A child being ordered: its weight and key copied, so the comparison
 * needs no pointer back into the tree. */
struct stacktree_rank {
	double total;
	uint64_t key;
	uint32_t node;
};

/* Lightest first, ties by key descending: the reverse of the display
 * order, because the stack pops the last one pushed first. */
static int stacktree_cmp(const void *a, const void *b)
{
	const struct stacktree_rank *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? -1 : 1;
	return (x->key < y->key) - (x->key > y->key);
}

/* Push the children list starting at first onto stack[*top], heaviest on
 * top (it is popped first). */
static void stacktree_push(struct stacktree *t, uint32_t first,
			   struct stacktree_rank *rank, uint32_t *stack,
			   size_t *top)
{
	size_t n = 0;

	for (uint32_t c = first; c != STACKTREE_NONE; c = t->n[c].next_sibling)
		rank[n++] =
			(struct stacktree_rank){t->n[c].total, t->n[c].key, c};
	qsort(rank, n, sizeof(*rank), stacktree_cmp);
	for (size_t i = 0; i < n; i++)
		stack[(*top)++] = rank[i].node;
}

size_t stacktree_order(struct stacktree *t, uint32_t *order, size_t max)
{
	struct stacktree_rank *rank;
	uint32_t *stack, *all;
	size_t top = 0, n = 0;

	if (!t->count)
		return 0;
	stack = malloc(t->count * sizeof(*stack));
	all = malloc(t->count * sizeof(*all));
	rank = malloc(t->count * sizeof(*rank));
	if (!stack || !all || !rank)
		goto out;
	stacktree_push(t, t->first_top, rank, stack, &top);
	while (top) {
		uint32_t v = stack[--top];

		all[n++] = v;
		t->n[v].subtree = 1;
		stacktree_push(t, t->n[v].first_child, rank, stack, &top);
	}
	/* Reverse pre-order visits children before parents. */
	for (size_t i = n; i-- > 0;) {
		const struct stacktree_node *v = &t->n[all[i]];

		if (v->parent != STACKTREE_NONE)
			t->n[v->parent].subtree += v->subtree;
	}
	if (n > max)
		n = max;
	memcpy(order, all, n * sizeof(*order));
out:
	free(stack);
	free(all);
	free(rank);
	return n;
}
