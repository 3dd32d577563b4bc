/*
 * stacktree: weighted paths folded into a caller -> callee tree
 * (src/engine/calltrace/stacktree.c).
 *
 *   build     shared callers share nodes; self and total add up (the sum of
 *             self is the sum of the paths, total = self + children);
 *   order     pre-order, heaviest child first, ties by key; subtree sizes
 *             let a collapsed node skip its descendants;
 *   keys      frames at different addresses with one key (a function)
 *             merge into one node; the first address is kept;
 *   bound     a path that needs more nodes than allowed ends at the
 *             deepest node reached, which takes its weight (counted).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/calltrace/stacktree.h"

static void add(struct stacktree *t, const uint64_t *keys, uint32_t n, double w)
{
	stacktree_add(t, keys, keys, n, w);
}

static void test_build_and_order(void **state)
{
	struct stacktree t;
	uint32_t order[16];
	const struct stacktree_node *v;
	double self = 0.0;
	size_t n;

	(void)state;
	assert_true(stacktree_init(&t, 64));
	/* Root first. */
	add(&t, (uint64_t[]){'r', 'b', 'a'}, 3, 6);
	add(&t, (uint64_t[]){'r', 'b', 'c'}, 3, 2);
	add(&t, (uint64_t[]){'r', 'b'}, 2, 2);
	add(&t, (uint64_t[]){'x'}, 1, 9);
	add(&t, (uint64_t[]){'r', 'b', 'a'}, 3, 1);
	n = stacktree_order(&t, order, 16);
	assert_int_equal(n, 5);
	assert_true(t.sum == 20.0);
	/* r (11) before x (9); under b: a (7) before c (2). */
	v = &t.n[order[0]];
	assert_int_equal(v->key, 'r');
	assert_true(v->total == 11.0 && v->self == 0.0);
	assert_int_equal(v->subtree, 4);
	assert_int_equal(v->depth, 0);
	v = &t.n[order[1]];
	assert_int_equal(v->key, 'b');
	assert_true(v->total == 11.0 && v->self == 2.0);
	assert_int_equal(v->subtree, 3);
	assert_int_equal(v->depth, 1);
	v = &t.n[order[2]];
	assert_int_equal(v->key, 'a');
	assert_true(v->total == 7.0 && v->self == 7.0);
	assert_int_equal(v->subtree, 1);
	assert_true(v->leaf);
	v = &t.n[order[3]];
	assert_int_equal(v->key, 'c');
	assert_int_equal(v->depth, 2);
	v = &t.n[order[4]];
	assert_int_equal(v->key, 'x');
	assert_int_equal(v->subtree, 1);
	assert_int_equal(v->parent, STACKTREE_NONE);
	for (size_t i = 0; i < n; i++)
		self += t.n[order[i]].self;
	assert_true(self == t.sum);
	/* A short order array still gets the first nodes, pre-order. */
	assert_int_equal(stacktree_order(&t, order, 2), 2);
	assert_int_equal(t.n[order[1]].key, 'b');
	/* Ties by key. */
	stacktree_clear(&t);
	add(&t, (uint64_t[]){'z'}, 1, 1);
	add(&t, (uint64_t[]){'y'}, 1, 1);
	assert_int_equal(stacktree_order(&t, order, 16), 2);
	assert_int_equal(t.n[order[0]].key, 'y');
	stacktree_finish(&t);
}

static void test_merge_by_key(void **state)
{
	struct stacktree t;
	uint32_t order[8];

	(void)state;
	assert_true(stacktree_init(&t, 64));
	/* Function f called from two call sites of main: one node. */
	stacktree_add(&t, (uint64_t[]){1, 2, 3},
		      (uint64_t[]){0x100, 0x210, 0x300}, 3, 1);
	stacktree_add(&t, (uint64_t[]){1, 2, 3},
		      (uint64_t[]){0x100, 0x250, 0x300}, 3, 2);
	assert_int_equal(stacktree_order(&t, order, 8), 3);
	assert_int_equal(t.n[order[1]].addr, 0x210); /* first seen */
	assert_true(t.n[order[2]].total == 3.0);
	/* Recursion makes nodes, never double counts one node. */
	stacktree_clear(&t);
	stacktree_add(&t, (uint64_t[]){1, 1, 1}, (uint64_t[]){1, 1, 1}, 3, 4);
	assert_int_equal(stacktree_order(&t, order, 8), 3);
	for (int i = 0; i < 3; i++)
		assert_true(t.n[order[i]].total == 4.0);
	stacktree_finish(&t);
}

static void test_node_bound(void **state)
{
	struct stacktree t;
	uint32_t order[8];
	double self = 0.0;
	size_t n;

	(void)state;
	assert_true(stacktree_init(&t, 3));
	add(&t, (uint64_t[]){1, 2, 3, 4, 5}, 5, 5);
	add(&t, (uint64_t[]){9}, 1, 1); /* no node left at all */
	assert_int_equal(t.truncated, 2);
	n = stacktree_order(&t, order, 8);
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++)
		self += t.n[order[i]].self;
	assert_true(self == 5.0); /* the path that had no node is lost */
	assert_true(t.n[order[2]].self == 5.0);
	stacktree_finish(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_and_order),
		cmocka_unit_test(test_merge_by_key),
		cmocka_unit_test(test_node_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
