/*
 * symindex: function lookup by address, for one module.
 *
 * libdwfl can answer "which symbol holds this address" itself, but it walks
 * the whole symbol table on every call: with glibc's full table that is
 * ~0.2 ms a lookup, far too slow for thousands of addresses.  So each
 * module's function symbols are read once into an array, sorted by address
 * and de-duplicated; a lookup is then a binary search.
 *
 * Aliases (several names at one address: getpid/__getpid, malloc/
 * __libc_malloc) collapse to one entry, chosen by a fixed preference so the
 * same address always gets the same name: fewest leading underscores, then
 * global before weak before local, then strcmp order.
 *
 * A symbol with a size covers [addr, addr + size).  One without (assembly
 * that forgot .size) covers up to the next symbol, or the module's end.
 * Sized symbols may nest or overlap in odd objects; a lookup that lands past
 * the end of the nearest symbol also tries the few before it.
 */
#include "engine/symbols/symindex.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* How many earlier entries a lookup tries when the nearest misses. */
#define SYMINDEX_BACKTRACK 4

struct symindex {
	struct symindex_entry *v;
	uint64_t *ends; /* v[i] covers [v[i].addr, ends[i]) */
	size_t n;
};

static size_t symindex_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

static int symindex_cmp(const void *pa, const void *pb)
{
	const struct symindex_entry *a = pa, *b = pb;
	size_t ua, ub;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	ua = symindex_underscores(a->name);
	ub = symindex_underscores(b->name);
	if (ua != ub)
		return ua < ub ? -1 : 1;
	if (a->bind != b->bind)
		return a->bind < b->bind ? -1 : 1;
	return strcmp(a->name, b->name);
}

struct symindex *symindex_create(struct symindex_entry *v, size_t n,
				 uint64_t end)
{
	struct symindex *x = calloc(1, sizeof(*x));
	size_t k = 0;

	if (!x) {
		free(v);
		return NULL;
	}
	x->v = v;
	for (size_t i = 0; i < n; i++)
		if (v[i].name && v[i].addr < end)
			v[k++] = v[i];
	n = k;
	if (n)
		qsort(v, n, sizeof(*v), symindex_cmp);
	/* Keep the first (preferred) entry of each address; the largest size
	 * among the aliases, since some of them may be sizeless. */
	k = 0;
	for (size_t i = 0; i < n; i++) {
		if (k && v[k - 1].addr == v[i].addr) {
			if (v[i].size > v[k - 1].size)
				v[k - 1].size = v[i].size;
			continue;
		}
		v[k++] = v[i];
	}
	x->n = k;
	x->ends = malloc((k ? k : 1) * sizeof(*x->ends));
	if (!x->ends) {
		symindex_destroy(x);
		return NULL;
	}
	for (size_t i = 0; i < k; i++) {
		uint64_t next = i + 1 < k ? v[i + 1].addr : end;
		uint64_t e = v[i].size ? v[i].addr + v[i].size : next;

		/* a size that wraps around is a lie: run to the next one */
		x->ends[i] = e > v[i].addr ? e : next;
	}
	return x;
}

void symindex_destroy(struct symindex *x)
{
	if (!x)
		return;
	free(x->v);
	free(x->ends);
	free(x);
}

struct symindex_entry *symindex_find(struct symindex *x, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!x)
		return NULL;
	hi = x->n;
	/* the first entry that starts after addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, tries = 0; i > 0 && tries <= SYMINDEX_BACKTRACK;
	     i--, tries++)
		if (addr < x->ends[i - 1])
			return &x->v[i - 1];
	return NULL;
}

size_t symindex_count(const struct symindex *x)
{
	return x ? x->n : 0;
}
