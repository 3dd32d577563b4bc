/*
 * hephstacks: one pass over a recording's options for its corotop_stack
 * ones, kept as (id, option index) sorted by id; a stack is decoded from
 * its option only when asked.  The file is untrusted: an option shorter
 * than an id, or whose length is not whole u64s, is skipped; a second one
 * for an id is ignored; at most HEPH_STACKS_MAX are kept.
 */
#define _GNU_SOURCE
#include "engine/heph/hephstacks.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/lowerbound.h"

#define HEPH_STACKS_MAX (1u << 20)

static int hs_cmp(const void *a, const void *b)
{
	const struct heph_stack_ref *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->opt < y->opt ? -1 : x->opt > y->opt;
}

void heph_stacks_init(struct heph_stacks *s, const struct heph_file *f)
{
	size_t cap = 0, w = 0;

	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < f->nmeta_off && s->n < HEPH_STACKS_MAX; i++) {
		struct heph_packet p;

		if (!heph_file_option(f, i, &p) || p.option_len != 13 ||
		    memcmp(p.option, "corotop_stack", 13) || p.value_len < 16 ||
		    p.value_len % 8)
			continue;
		if (!grow_array((void **)&s->v, &cap, s->n + 1, sizeof(*s->v)))
			break;
		s->v[s->n++] = (struct heph_stack_ref){.id = heph_be64(p.value),
						       .opt = (uint32_t)i};
	}
	if (!s->n)
		return;
	qsort(s->v, s->n, sizeof(*s->v), hs_cmp);
	for (size_t i = 0; i < s->n; i++)
		if (!w || s->v[w - 1].id != s->v[i].id)
			s->v[w++] = s->v[i];
	s->n = w;
}

void heph_stacks_finish(struct heph_stacks *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

size_t heph_stacks_find(const struct heph_stacks *s, const struct heph_file *f,
			uint64_t id, uint64_t *frames, size_t max)
{
	struct heph_packet o;
	size_t k, n = 0;

	if (!s->n)
		return 0;
	LOWER_BOUND(k, s->v, s->n, id, id);
	if (k == s->n || s->v[k].id != id ||
	    !heph_file_option(f, s->v[k].opt, &o))
		return 0;
	for (; n < (o.value_len - 8) / 8 && n < max; n++)
		frames[n] = heph_be64(o.value + 8 * (n + 1));
	return n;
}

size_t heph_stacks_of(const struct heph_stacks *s, const struct heph_file *f,
		      const struct heph_packet *p, uint64_t *frames, size_t max)
{
	struct heph_attr a;
	uint32_t pos = 0;
	uint64_t id = 0;
	size_t n = 0;

	while (heph_attr_next(p, &pos, &a)) {
		if (a.name_len != 5 || memcmp(a.name, "stack", 5) ||
		    a.type != (HEPH_U64 | HEPH_ARRAY))
			continue;
		for (; n < a.count && n < max; n++)
			frames[n] = heph_attr_u64(&a, (uint16_t)n);
		return n;
	}
	if (!heph_packet_u64(p, "stack_id", &id))
		return 0;
	return heph_stacks_find(s, f, id, frames, max);
}
