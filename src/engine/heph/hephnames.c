/*
 * hephnames: corotop_symbol options into a table.
 *
 * The recorder names each address once, when it first writes it (an
 * interval's `addr`, a frame of a `stack`): a metadata packet whose value
 * is the address (u64, big-endian) and then the name, at most
 * HEPH_NAME_LEN bytes of UTF-8.  Other readers skip the option by its size.
 *
 * Names are untrusted: at most HEPH_NAMES_MAX are kept, each cut at
 * HEPH_NAME_LEN bytes, and control characters (and ';', the folded
 * format's separator) become '?', so a name can be printed anywhere.
 */
#define _GNU_SOURCE
#include "engine/heph/hephnames.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/lowerbound.h"

static int hn_cmp(const void *a, const void *b)
{
	const struct heph_name *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Equal addresses: the later one first (it wins the dedup). */
	return x->off > y->off ? -1 : x->off < y->off;
}

void heph_names_init(struct heph_names *n, const struct heph_file *f)
{
	size_t cap = 0, pool_cap = 0, w = 0;

	memset(n, 0, sizeof(*n));
	for (size_t i = 0; i < f->nmeta_off && n->n < HEPH_NAMES_MAX; i++) {
		struct heph_packet p;
		size_t len;

		if (!heph_file_option(f, i, &p) || p.option_len != 14 ||
		    memcmp(p.option, "corotop_symbol", 14) || p.value_len < 9)
			continue;
		len = p.value_len - 8 > HEPH_NAME_LEN ? HEPH_NAME_LEN
						      : p.value_len - 8;
		if (!grow_array((void **)&n->v, &cap, n->n + 1,
				sizeof(*n->v)) ||
		    !grow_array((void **)&n->pool, &pool_cap,
				n->pool_len + len + 1, 1))
			break;
		n->v[n->n].addr = heph_be64(p.value);
		n->v[n->n].off = (uint32_t)n->pool_len;
		for (size_t k = 0; k < len; k++) {
			unsigned char c = p.value[8 + k];

			n->pool[n->pool_len++] =
				c < 0x20 || c == 0x7f || c == ';' ? '?'
								  : (char)c;
		}
		n->pool[n->pool_len++] = 0;
		n->n++;
	}
	if (!n->n)
		return;
	qsort(n->v, n->n, sizeof(*n->v), hn_cmp);
	for (size_t i = 0; i < n->n; i++)
		if (!w || n->v[w - 1].addr != n->v[i].addr)
			n->v[w++] = n->v[i];
	n->n = w;
}

void heph_names_finish(struct heph_names *n)
{
	free(n->v);
	free(n->pool);
	memset(n, 0, sizeof(*n));
}

const char *heph_names_find(const struct heph_names *n, uint64_t addr)
{
	size_t lo = 0;

	if (n)
		LOWER_BOUND(lo, n->v, n->n, addr, addr);
	return lo < (n ? n->n : 0) && n->v[lo].addr == addr
		       ? n->pool + n->v[lo].off
		       : NULL;
}

size_t heph_names_value(uint64_t addr, const char *name, uint8_t *buf,
			size_t len)
{
	size_t nl = strnlen(name, HEPH_NAME_LEN);

	if (len < 8 + nl)
		return 0;
	for (int i = 0; i < 8; i++)
		buf[i] = (uint8_t)(addr >> (56 - 8 * i));
	memcpy(buf + 8, name, nl);
	return 8 + nl;
}
