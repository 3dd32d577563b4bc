/*
 * order: sorts the table's rows by precomputed 64-bit keys with a stable
 * least-significant-digit radix sort, 8 bits per pass.
 *
 * A refresh with 100k coroutines re-sorts all of them, often by a value
 * that moves with time (AGE, IN-STATE), so a comparison sort calling the
 * column through a function pointer for every comparison is too slow.
 * Instead each row's key is computed once (column.c's key function: the
 * column's ascending order as one number), then the rows go through one
 * counting pass per key byte.  One histogram pass counts all eight bytes
 * at once, and a byte that is the same in every key (the high bytes of a
 * tid, of nanoseconds since boot, of an id) costs no pass at all.
 *
 * Stability gives the tie-breaks for free: sort by model id first, then by
 * the column (inverted keys keep ties ascending by id, like htop), then, when
 * grouping, by thread.  The id pass is skipped when the rows already come
 * in id order, which is the common case (records are handed out in id order
 * until one is reused).
 */
#include "ui/rows/order.h"

#include <stdlib.h>
#include <string.h>

#include "ui/rows/column.h"

void order_init(struct order *o)
{
	memset(o, 0, sizeof(*o));
}

void order_finish(struct order *o)
{
	free(o->key);
	free(o->key2);
	free(o->val2);
	memset(o, 0, sizeof(*o));
}

static bool order_reserve(struct order *o, size_t n)
{
	uint64_t *k, *k2;
	uint32_t *v2;

	if (n <= o->cap)
		return true;
	k = malloc(n * sizeof(*k));
	k2 = malloc(n * sizeof(*k2));
	v2 = malloc(n * sizeof(*v2));
	if (!k || !k2 || !v2) {
		free(k);
		free(k2);
		free(v2);
		return false;
	}
	order_finish(o);
	o->key = k;
	o->key2 = k2;
	o->val2 = v2;
	o->cap = n;
	return true;
}

/* Stable sort of (o->key[i], idx[i]) by key. */
static void order_radix(struct order *o, uint32_t *idx, size_t n)
{
	size_t(*count)[256] = o->count;
	uint64_t *k = o->key, *kt = o->key2, diff = 0;
	uint32_t *v = idx, *vt = o->val2;
	unsigned digit[8], nd = 0;

	/* Which bytes differ between keys at all: only those get counted
	 * and only those cost a pass. */
	for (size_t i = 1; i < n; i++)
		diff |= k[i] ^ k[0];
	for (unsigned d = 0; d < 8; d++)
		if (diff >> (8 * d) & 0xff)
			digit[nd++] = d;
	memset(o->count, 0, sizeof(o->count));
	for (size_t i = 0; i < n; i++)
		for (unsigned j = 0; j < nd; j++)
			count[j][k[i] >> (8 * digit[j]) & 0xff]++;
	for (unsigned j = 0; j < nd; j++) {
		size_t sum = 0, *c = count[j];
		unsigned shift = 8 * digit[j];

		for (unsigned b = 0; b < 256; b++) {
			size_t here = c[b];

			c[b] = sum;
			sum += here;
		}
		for (size_t i = 0; i < n; i++) {
			size_t at = c[k[i] >> shift & 0xff]++;

			kt[at] = k[i];
			vt[at] = v[i];
		}
		/* Swap the buffers: the sorted pair is now (kt, vt). */
		{
			uint64_t *tk = k;
			uint32_t *tv = v;

			k = kt;
			kt = tk;
			v = vt;
			vt = tv;
		}
	}
	if (v != idx) /* an odd number of passes ended in the buffer */
		memcpy(idx, v, n * sizeof(*idx));
}

bool order_sort(struct order *o, const struct snapshot *s, uint32_t *idx,
		size_t n, int col, bool invert, bool group)
{
	const struct model_coro *c = s->coro;
	uint64_t (*key)(const struct snapshot *, const struct model_coro *);
	uint64_t flip;
	bool by_id = true;

	if (n < 2)
		return true;
	if (col >= COL_COUNT || !order_reserve(o, n))
		return false;
	/* A rate sorts busiest first; inverted, idlest first. */
	flip = invert != (col >= 0 && column_table[col].busiest_first)
		       ? UINT64_MAX
		       : 0;
	key = col >= 0 ? column_table[col].key : NULL;
	for (size_t i = 1; i < n && by_id; i++)
		by_id = c[idx[i - 1]].id < c[idx[i]].id;
	if (!by_id) {
		for (size_t i = 0; i < n; i++)
			o->key[i] = c[idx[i]].id;
		order_radix(o, idx, n);
	}
	if (key) {
		for (size_t i = 0; i < n; i++)
			o->key[i] = key(s, &c[idx[i]]) ^ flip;
		order_radix(o, idx, n);
	}
	if (group) {
		for (size_t i = 0; i < n; i++)
			o->key[i] = c[idx[i]].last_tid;
		order_radix(o, idx, n);
	}
	return true;
}
