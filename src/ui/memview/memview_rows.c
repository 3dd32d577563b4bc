/*
 * memview_rows: the rows a tab of the memory view shows, from a snapshot.
 *
 * Rows are sorted by one column (a stable merge sort, so equal keys keep
 * the snapshot's order: lines by accesses then address, types and threads
 * first seen first), numbers most first and names and addresses A to Z
 * unless inverted.  A member row is never sorted on its own: it follows
 * its type, by offset.  The selection survives a rebuild through a key
 * (line address, type and member offset, thread).
 */
#define _GNU_SOURCE
#include "ui/memview/memview_rows.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"

/* ---- rows ---- */

void memview_rows_init(struct memview_rows *r)
{
	memset(r, 0, sizeof(*r));
	for (int k = 0; k < MEMVIEW_TAB_COUNT; k++)
		r->sort[k] = memview_tabs[k].sort;
}

void memview_rows_finish(struct memview_rows *r)
{
	free(r->row);
	free(r->idx);
	free(r->tmp);
	free(r->open);
	memset(r, 0, sizeof(*r));
}

bool memview_rows_is_open(const struct memview_rows *r, uint32_t index)
{
	return index < r->open_bits && (r->open[index / 8] & (1u << index % 8));
}

bool memview_rows_set_open(struct memview_rows *r, uint32_t index, bool open)
{
	if (index >= r->open_bits) {
		size_t bits = r->open_bits ? r->open_bits : 1024;
		uint8_t *p;

		if (!open)
			return true;
		while (bits <= index)
			bits *= 2;
		p = realloc(r->open, bits / 8);
		if (!p)
			return false;
		memset(p + r->open_bits / 8, 0, (bits - r->open_bits) / 8);
		r->open = p;
		r->open_bits = bits;
	}
	if (open)
		r->open[index / 8] |= (uint8_t)(1u << index % 8);
	else
		r->open[index / 8] &= (uint8_t) ~(1u << index % 8);
	return true;
}

static size_t memview_rows_items(const struct cray_snap *s,
				 enum memview_tab tab, const void **base,
				 size_t *size)
{
	switch (tab) {
	case MEMVIEW_TAB_SHARING:
	case MEMVIEW_TAB_HOT:
		*base = s->lines[tab == MEMVIEW_TAB_SHARING];
		*size = sizeof(*s->lines[0]);
		return s->nlines[tab == MEMVIEW_TAB_SHARING];
	case MEMVIEW_TAB_TYPES:
		*base = s->types;
		*size = sizeof(*s->types);
		return s->ntypes;
	default:
		*base = s->threads;
		*size = sizeof(*s->threads);
		return s->nthreads;
	}
}

struct memview_sort_ctx {
	const char *base;
	size_t size;
	int (*cmp)(const void *, const void *);
	int sign;
};

static int memview_sort_cmp(const struct memview_sort_ctx *k, uint32_t a,
			    uint32_t b)
{
	return k->sign * k->cmp(k->base + a * k->size, k->base + b * k->size);
}

/* Stable merge sort of v[0..n) (bottom-up, through tmp). */
static void memview_sort(const struct memview_sort_ctx *k, uint32_t *v,
			 uint32_t *tmp, size_t n)
{
	uint32_t *src = v, *dst = tmp;

	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n;
			size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, o = lo;

			while (i < mid && j < hi)
				dst[o++] =
					memview_sort_cmp(k, src[j], src[i]) < 0
						? src[j++]
						: src[i++];
			while (i < mid)
				dst[o++] = src[i++];
			while (j < hi)
				dst[o++] = src[j++];
		}
		uint32_t *t = src;

		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

static bool memview_rows_grow(struct memview_rows *r, size_t need, size_t nidx)
{
	size_t cap;

	if (!grow_array((void **)&r->row, &r->cap, need, sizeof(*r->row)))
		return false;
	/* idx and tmp: one capacity, set once both have it. */
	cap = r->cap_idx;
	if (!grow_array_fit((void **)&r->idx, &cap, nidx, sizeof(*r->idx)))
		return false;
	cap = r->cap_idx;
	if (!grow_array_fit((void **)&r->tmp, &cap, nidx, sizeof(*r->tmp)))
		return false;
	r->cap_idx = cap;
	return true;
}

bool memview_rows_build(struct memview_rows *r, const struct cray_snap *snap,
			enum memview_tab tab)
{
	const struct memview_column *col =
		&memview_tabs[tab].cols[r->sort[tab]];
	struct memview_sort_ctx k;
	size_t n =
		memview_rows_items(snap, tab, (const void **)&k.base, &k.size);
	size_t need = n + (tab == MEMVIEW_TAB_TYPES ? snap->nmembers : 0);

	r->snap = snap;
	r->tab = tab;
	r->nrows = 0;
	if (!memview_rows_grow(r, need ? need : 1, n ? n : 1))
		return false;
	for (size_t i = 0; i < n; i++)
		r->idx[i] = (uint32_t)i;
	k.cmp = col->cmp;
	k.sign = (col->desc != r->invert[tab]) ? -1 : 1;
	if (k.cmp)
		memview_sort(&k, r->idx, r->tmp, n);
	for (size_t i = 0; i < n; i++) {
		size_t first, nm = 0;

		r->row[r->nrows++] =
			(struct memview_row){r->idx[i], MEMVIEW_ROW_ITEM};
		if (tab != MEMVIEW_TAB_TYPES ||
		    !memview_rows_is_open(r, snap->types[r->idx[i]].index))
			continue;
		nm = cray_snap_type_members(snap, snap->types[r->idx[i]].index,
					    &first);
		for (size_t m = 0; m < nm; m++)
			r->row[r->nrows++] = (struct memview_row){
				r->idx[i], (uint32_t)(first + m)};
	}
	return true;
}

void memview_rows_sort(struct memview_rows *r, int dir)
{
	const struct memview_tab_impl *t = &memview_tabs[r->tab];
	int c = r->sort[r->tab];

	if (!dir)
		return;
	for (int i = 0; i < t->ncols; i++) {
		c = (c + dir + t->ncols) % t->ncols;
		if (t->cols[c].cmp)
			break;
	}
	r->sort[r->tab] = c;
}

uint32_t memview_rows_type(const struct memview_rows *r, size_t i)
{
	if (r->tab != MEMVIEW_TAB_TYPES || i >= r->nrows)
		return UINT32_MAX;
	return r->snap->types[r->row[i].item].index;
}

bool memview_rows_openable(const struct memview_rows *r, size_t i)
{
	return r->tab == MEMVIEW_TAB_TYPES && i < r->nrows &&
	       !r->snap->types[r->row[i].item].special;
}

void memview_rows_cell(const struct memview_rows *r, size_t i, int col, char *b,
		       size_t n)
{
	if (!n)
		return;
	b[0] = '\0';
	if (i < r->nrows && col >= 0 && col < memview_tabs[r->tab].ncols)
		memview_tabs[r->tab].cols[col].cell(r, &r->row[i], b, n);
}

uint64_t memview_rows_key(const struct memview_rows *r, size_t i)
{
	const struct memview_row *row;

	if (i >= r->nrows)
		return UINT64_MAX;
	row = &r->row[i];
	switch (r->tab) {
	case MEMVIEW_TAB_SHARING:
	case MEMVIEW_TAB_HOT:
		return memview_rows_line(r, row)->addr;
	case MEMVIEW_TAB_TYPES:
		/* The type row UINT32_MAX, a member its offset, the "no
		 * member counts" row one below the type's. */
		return (uint64_t)r->snap->types[row->item].index << 32 |
		       (row->member == MEMVIEW_ROW_ITEM ? UINT32_MAX
			: r->snap->members[row->member].offset ==
					CRAY_SNAP_NO_MEMBERS
				? UINT32_MAX - 1
				: r->snap->members[row->member].offset);
	default:
		return r->snap->threads[row->item].index;
	}
}

size_t memview_rows_find(const struct memview_rows *r, uint64_t key)
{
	for (size_t i = 0; i < r->nrows; i++)
		if (memview_rows_key(r, i) == key)
			return i;
	return SIZE_MAX;
}

bool memview_rows_match(const struct memview_rows *r, size_t i,
			const char *needle)
{
	char cell[320];

	if (!needle[0])
		return false;
	for (int c = 0; c < memview_tabs[r->tab].ncols; c++) {
		memview_rows_cell(r, i, c, cell, sizeof(cell));
		for (char *p = cell; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		if (strstr(cell, needle))
			return true;
	}
	return false;
}
