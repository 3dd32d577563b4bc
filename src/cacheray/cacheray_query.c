/*
 * cacheray_query: what the Cacheray reader has counted, for reports --
 * totals summed from the per-type-byte counters, the type and thread
 * tables, and the top cache lines decoded (thread slots to thread entries,
 * type slots to types, flags to a layout and a verdict on the bytes).
 * Nothing here runs per record.
 */
#include <stdlib.h>
#include <string.h>

#include "cacheray/cacheray_internal.h"

const char *cacheray_error(const struct cacheray *c, uint64_t *offset)
{
	if (!c->failed)
		return NULL;
	if (offset)
		*offset = c->err_offset;
	return c->err;
}

size_t cacheray_pending(const struct cacheray *c)
{
	return c->npend;
}

void cacheray_totals(const struct cacheray *c, struct cacheray_totals *t)
{
	memset(t, 0, sizeof(*t));
	t->bytes_read = c->offset;
	for (unsigned k = 0; k < 256; k++) {
		t->records += c->kind[k];
		if ((k & ~CACHERAY_FLAGS) > CACHERAY_EVENT_WRITE)
			continue;
		t->accesses += c->kind[k];
		if (k & CACHERAY_EVENT_WRITE)
			t->writes += c->kind[k];
		else
			t->reads += c->kind[k];
		if (k & CACHERAY_EVENT_MASK_ATOMIC)
			t->atomics += c->kind[k];
		if (k & CACHERAY_EVENT_MASK_UNALIGNED)
			t->unaligned += c->kind[k];
	}
	t->atomic_rmw = c->rmw;
	t->access_bytes = c->access_bytes;
	t->cross_line = c->cross_line;
	t->untyped = c->types[0].n[0] + c->types[0].n[1];
	t->rtta_adds = c->adds;
	t->rtta_removes = c->removes;
	t->rtta_live = rtta_live(&c->rtta);
	t->rtta_empty = c->empty;
	t->rtta_overlaps = c->overlaps;
	t->rtta_remove_unknown = c->unknown;
	t->rtta_full = c->full;
	t->lines = c->lines.count;
	t->lines_max = c->lines.max;
	t->lines_dropped_accesses = c->dropped;
	if (c->other_thread)
		t->threads_other = c->threads[c->other_thread].n[0] +
				   c->threads[c->other_thread].n[1];
	if (c->other_type)
		t->types_other = c->types[c->other_type].n[0] +
				 c->types[c->other_type].n[1];
}

size_t cacheray_ntypes(const struct cacheray *c)
{
	return c->ntypes;
}

const struct cacheray_type *cacheray_type_at(const struct cacheray *c, size_t i)
{
	return i < c->ntypes ? &c->types[i] : NULL;
}

size_t cacheray_nthreads(const struct cacheray *c)
{
	return c->nthreads;
}

const struct cacheray_thread *cacheray_thread_at(const struct cacheray *c,
						 size_t i)
{
	return i < c->nthreads ? &c->threads[i] : NULL;
}

const char *cacheray_layout_text(enum cacheray_layout l)
{
	static const char *const text[] = {
		[CACHERAY_LAYOUT_UNTYPED] = "untyped",
		[CACHERAY_LAYOUT_ELEMENT] = "one-element",
		[CACHERAY_LAYOUT_ELEMENTS] = "diff-elements",
		[CACHERAY_LAYOUT_REGIONS] = "diff-regions",
	};

	return (unsigned)l < sizeof(text) / sizeof(text[0]) ? text[l] : "?";
}

static void cacheray_decode(const struct cacheray *c, const struct cacheline *l,
			    struct cacheray_line *out)
{
	memset(out, 0, sizeof(*out));
	out->addr = (l->key - 1) << 6;
	out->reads = l->reads;
	out->writes = l->writes;
	for (unsigned s = 0; s < 2 && l->thread[s]; s++) {
		out->thread[s].t = &c->threads[l->thread[s] - 1];
		out->thread[s].wrote = l->flags & (CACHELINE_W0 << s);
		out->thread[s].bytes = l->bytes[s];
		out->nthreads = s + 1;
	}
	out->more_threads = l->flags & CACHELINE_MORE;
	out->more_threads_wrote = l->flags & CACHELINE_MORE_W;
	for (unsigned s = 0; s < 2 && l->type[s]; s++) {
		out->type[s] = &c->types[l->type[s] - 1];
		out->ntypes = s + 1;
	}
	out->more_types = l->flags & CACHELINE_MORE_TYPES;
	if (l->flags & CACHELINE_REGIONS)
		out->layout = CACHERAY_LAYOUT_REGIONS;
	else if (l->flags & CACHELINE_ELEMS)
		out->layout = CACHERAY_LAYOUT_ELEMENTS;
	else if (l->region && l->region != CACHELINE_NO_REGION)
		out->layout = CACHERAY_LAYOUT_ELEMENT;
	else
		out->layout = CACHERAY_LAYOUT_UNTYPED;
	/* Only two threads' bytes are known: with a third, nobody knows. */
	out->disjoint = out->nthreads == 2 && !out->more_threads &&
			!(l->bytes[0] & l->bytes[1]);
}

size_t cacheray_top_lines(const struct cacheray *c, bool shared_only,
			  struct cacheray_line *out, size_t max)
{
	const struct cacheline **top;
	size_t n;

	if (!max)
		return 0;
	top = malloc(max * sizeof(*top));
	if (!top)
		return 0;
	n = linetab_top(&c->lines, shared_only, top, max);
	for (size_t i = 0; i < n; i++)
		cacheray_decode(c, top[i], &out[i]);
	free(top);
	return n;
}
