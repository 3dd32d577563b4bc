/*
 * rowset: the rows a front-end shows of a snapshot -- the records a filter
 * keeps (-F), in the order a sort gives (--sort, inverted, by thread) --
 * chosen the same way by the coroutine table, batch output and corotop
 * serve.  The index and the sort's buffers are kept from call to call.
 */
#ifndef COROTOP_ROWSET_H
#define COROTOP_ROWSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ui/rows/filter.h"
#include "ui/rows/order.h"

struct rowset {
	struct order order;
	struct filter none; /* the filter of a call given none */
	uint32_t *idx;	    /* cap of them */
	size_t cap;
};

/* How rowset_select orders the rows (order_sort's arguments). */
struct rowset_order {
	int column; /* enum column_id; < 0: by model id */
	bool invert;
	bool group; /* by thread first */
};

void rowset_init(struct rowset *r);
void rowset_finish(struct rowset *r);

/* The rows of s that f keeps (NULL: every row), ordered as o says, into
 * r->idx[0..*n).  False when out of memory: *n is 0 when the index could
 * not grow, else the rows are the filter's, in snapshot order. */
bool rowset_select(struct rowset *r, const struct snapshot *s, struct filter *f,
		   const struct rowset_order *o, size_t *n);

/* rowset_select for a printer: the index, or NULL (every row, snapshot
 * order) when out of memory. */
const uint32_t *rowset_rows(struct rowset *r, const struct snapshot *s,
			    struct filter *f, const struct rowset_order *o,
			    size_t *n);

#endif
