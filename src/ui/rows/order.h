/*
 * order: the order the coroutine table shows its rows in.  See order.c.
 */
#ifndef COROTOP_ORDER_H
#define COROTOP_ORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/model/snapshot.h"

struct order {
	uint64_t *key, *key2; /* sort keys, and the scatter buffer */
	uint32_t *val2;	      /* scatter buffer for the indexes */
	size_t cap;
	size_t count[8][256]; /* per key byte: bucket counts, then offsets */
};

void order_init(struct order *o);
void order_finish(struct order *o);

/*
 * Sort idx[0..n) (indexes into s->coro) by column `col` (enum column_id),
 * ascending, or descending when `invert`; ties by model id, ascending.
 * col < 0: by model id only (oldest first).
 * `group`: by thread (last_tid) first, the column within each thread.
 * False when out of memory; idx is then left as it was.
 */
bool order_sort(struct order *o, const struct snapshot *s, uint32_t *idx,
		size_t n, int col, bool invert, bool group);

#endif
