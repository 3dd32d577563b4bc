/*
 * rowset: the rows a front-end shows of a snapshot, filtered and ordered
 * (rowset.h).
 */
#include "ui/rows/rowset.h"

#include <stdlib.h>

#include "common/grow.h"

void rowset_init(struct rowset *r)
{
	order_init(&r->order);
	filter_init(&r->none);
	r->idx = NULL;
	r->cap = 0;
}

void rowset_finish(struct rowset *r)
{
	order_finish(&r->order);
	filter_finish(&r->none);
	free(r->idx);
	r->idx = NULL;
	r->cap = 0;
}

bool rowset_select(struct rowset *r, const struct snapshot *s, struct filter *f,
		   const struct rowset_order *o, size_t *n)
{
	*n = 0;
	if (!grow_array_fit((void **)&r->idx, &r->cap, s->count ? s->count : 1,
			    sizeof(*r->idx)))
		return false;
	*n = filter_select(f ? f : &r->none, s, r->idx);
	return order_sort(&r->order, s, r->idx, *n, o->column, o->invert,
			  o->group);
}

const uint32_t *rowset_rows(struct rowset *r, const struct snapshot *s,
			    struct filter *f, const struct rowset_order *o,
			    size_t *n)
{
	return rowset_select(r, s, f, o, n) ? r->idx : NULL;
}
