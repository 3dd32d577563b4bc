/*
 * hephcoronames: corotop_name and corotop_birth options into two tables.
 *
 * The recorder writes a coroutine's name once, right after its birth, as
 * a metadata packet: corotop's id for it (u64, the birth's third field),
 * then at most 47 bytes of name.  Other readers skip the option by its
 * size.  Names are untrusted: cut at NAMEPOOL_TEXT_MAX - 1 bytes and
 * cleaned to printable ASCII (namepool_clean), at most HEPH_CORONAMES_MAX
 * of each kept.  Births are kept only when some name is, so a recording
 * without names costs one pass over its options.
 */
#define _GNU_SOURCE
#include "engine/heph/hephcoronames.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/lowerbound.h"

#define HEPH_CORONAMES_MAX (1u << 24)

static bool hc_option(const struct heph_file *f, size_t i, const char *name,
		      struct heph_packet *p)
{
	size_t n = strlen(name);

	return heph_file_option(f, i, p) && p->option_len == n &&
	       !memcmp(p->option, name, n);
}

static int hc_name_cmp(const void *a, const void *b)
{
	const struct heph_coroname *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int hc_birth_cmp(const void *a, const void *b)
{
	const struct heph_corobirth *x = a, *y = b;

	if (x->sub != y->sub)
		return x->sub < y->sub ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void hc_names(struct heph_coronames *cn, const struct heph_file *f)
{
	size_t cap = 0, w = 0;

	for (size_t i = 0; i < f->nmeta_off && cn->nnames < HEPH_CORONAMES_MAX;
	     i++) {
		struct heph_coroname *nm;
		struct heph_packet p;

		if (!hc_option(f, i, "corotop_name", &p) || p.value_len <= 8)
			continue;
		if (!grow_array((void **)&cn->names, &cap, cn->nnames + 1,
				sizeof(*cn->names)))
			break;
		nm = &cn->names[cn->nnames];
		nm->id = heph_be64(p.value);
		if (nm->id &&
		    namepool_clean(nm->text, p.value + 8, p.value_len - 8))
			cn->nnames++;
	}
	if (!cn->nnames)
		return;
	/* One per id (a lying file may name one twice: one of them). */
	qsort(cn->names, cn->nnames, sizeof(*cn->names), hc_name_cmp);
	for (size_t i = 0; i < cn->nnames; i++)
		if (!w || cn->names[w - 1].id != cn->names[i].id)
			cn->names[w++] = cn->names[i];
	cn->nnames = w;
}

static void hc_births(struct heph_coronames *cn, const struct heph_file *f)
{
	size_t cap = 0;

	for (size_t i = 0; i < f->nmeta_off && cn->nbirths < HEPH_CORONAMES_MAX;
	     i++) {
		struct heph_packet p;
		uint64_t id;
		size_t k;

		if (!hc_option(f, i, "corotop_birth", &p) || p.value_len != 24)
			continue;
		if (!grow_array((void **)&cn->births, &cap, cn->nbirths + 1,
				sizeof(*cn->births)))
			break;
		id = heph_be64(p.value + 16);
		LOWER_BOUND(k, cn->names, cn->nnames, id, id);
		cn->births[cn->nbirths++] = (struct heph_corobirth){
			.sub = heph_be64(p.value),
			.ts = heph_be64(p.value + 8),
			.name = k < cn->nnames && cn->names[k].id == id
					? (uint32_t)k + 1
					: 0,
		};
	}
	if (cn->nbirths)
		qsort(cn->births, cn->nbirths, sizeof(*cn->births),
		      hc_birth_cmp);
}

void heph_coronames_init(struct heph_coronames *cn, const struct heph_file *f)
{
	memset(cn, 0, sizeof(*cn));
	hc_names(cn, f);
	if (cn->nnames)
		hc_births(cn, f);
}

void heph_coronames_finish(struct heph_coronames *cn)
{
	free(cn->names);
	free(cn->births);
	memset(cn, 0, sizeof(*cn));
}

const char *heph_coronames_id(const struct heph_coronames *cn, uint64_t id)
{
	size_t k;

	if (!cn->nnames)
		return NULL;
	LOWER_BOUND(k, cn->names, cn->nnames, id, id);
	return k < cn->nnames && cn->names[k].id == id ? cn->names[k].text
						       : NULL;
}

const char *heph_coronames_at(const struct heph_coronames *cn, uint64_t sub,
			      uint64_t ts)
{
	size_t lo = 0, hi = cn->nbirths;

	/* The first birth after (sub, ts); the one before it, if of sub,
	 * is the coroutine then. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct heph_corobirth *b = &cn->births[mid];

		if (b->sub < sub || (b->sub == sub && b->ts <= ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || cn->births[lo - 1].sub != sub || !cn->births[lo - 1].name)
		return NULL;
	return cn->names[cn->births[lo - 1].name - 1].text;
}
