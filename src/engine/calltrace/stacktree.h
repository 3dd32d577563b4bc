/*
 * stacktree: a caller -> callee tree of weighted stacks, for the collapsible
 * hot-stacks view.  See stacktree.c.
 */
#ifndef COROTOP_STACKTREE_H
#define COROTOP_STACKTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hashidx.h"

#define STACKTREE_NONE UINT32_MAX

struct stacktree_node {
	uint64_t key;	 /* what merges frames: an address or a name's hash */
	uint64_t addr;	 /* the frame address the node was created from */
	double self;	 /* weight of paths ending here */
	double total;	 /* weight of paths through here (self included) */
	uint32_t parent; /* STACKTREE_NONE at the top */
	uint32_t depth;	 /* 0 at the top */
	uint32_t first_child, next_sibling; /* build order */
	uint32_t subtree; /* nodes in its subtree, itself included */
	bool leaf;	  /* addr was an innermost frame (an exact pc) */
};

struct stacktree {
	struct stacktree_node *n;
	size_t count, max;
	uint32_t first_top; /* first top-level node, build order */
	struct hashidx idx; /* (parent, key) -> node */
	double sum;	    /* weight of every path added */
	uint64_t truncated; /* paths cut short by the node bound */
};

/* A tree of at most max_nodes nodes.  False when out of memory. */
bool stacktree_init(struct stacktree *t, size_t max_nodes);
void stacktree_finish(struct stacktree *t);
void stacktree_clear(struct stacktree *t);

/*
 * Add one path of n frames, root first: keys[i] merges frame i with the
 * frames of other paths that have the same caller path, addrs[i] is its
 * address; the last one is the leaf.  When the node bound is reached the
 * path ends at the deepest node it got to, which takes its weight as self.
 */
void stacktree_add(struct stacktree *t, const uint64_t *keys,
		   const uint64_t *addrs, uint32_t n, double weight);

/*
 * Node indexes in pre-order, every node's children by total weight
 * (heaviest first, ties by key), into order[0..max); fills each node's
 * `subtree`, so order[i + 1 .. i + subtree) are node order[i]'s
 * descendants.  Returns how many were written (count, or max).
 */
size_t stacktree_order(struct stacktree *t, uint32_t *order, size_t max);

#endif
