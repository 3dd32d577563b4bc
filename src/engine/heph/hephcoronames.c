/*
 * hephcoronames: corotop_name and corotop_birth options into two tables.
 *
 * The recorder writes a coroutine's name once, right after its birth, as
 * a metadata packet: corotop's id for it (u64, the birth's third field),
 * then at most 47 bytes of name.  Other readers skip the option by its
 * size.  A name corotop found later (a zero-code coroutine named after
 * its entry function, or its walk's) is a corotop_named option: the id,
 * the time from which it holds, the entry pc (0: none), then the text
 * (empty with a pc: the function's name is read from the recording's
 * corotop_symbol for pc, the way the live view names it).  Names are
 * untrusted: cut at NAMEPOOL_TEXT_MAX - 1 bytes and cleaned to printable
 * ASCII (namepool_clean), at most HEPH_CORONAMES_MAX of each kept.
 * Births are kept only when some name is, so a recording without names
 * costs one pass over its options.
 */
#define _GNU_SOURCE
#include "engine/heph/hephcoronames.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/lowerbound.h"
#include "engine/heph/hephnames.h"
#include "engine/symbols/framekind.h"

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

static int hc_named_cmp(const void *a, const void *b)
{
	const struct heph_coronamed *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int hc_named_pc_cmp(const void *a, const void *b)
{
	const struct heph_coronamed *const *x = a, *const *y = b;

	return (*x)->pc < (*y)->pc ? -1 : (*x)->pc > (*y)->pc;
}

/* The function's name of each pc named without text: one more pass over
 * the options, for the corotop_symbol of those pcs. */
static void hc_named_pcs(struct heph_coronames *cn, const struct heph_file *f)
{
	struct heph_coronamed **by_pc;
	size_t n = 0;

	by_pc = calloc(cn->nnamed ? cn->nnamed : 1, sizeof(*by_pc));
	if (!by_pc)
		return;
	for (size_t i = 0; i < cn->nnamed; i++)
		if (cn->named[i].pc && !cn->named[i].text[0])
			by_pc[n++] = &cn->named[i];
	if (n)
		qsort(by_pc, n, sizeof(*by_pc), hc_named_pc_cmp);
	for (size_t i = 0; n && i < f->nmeta_off; i++) {
		char sym[HEPH_NAME_LEN + 1], name[NAMEPOOL_TEXT_MAX];
		struct heph_packet p;
		uint64_t addr;
		size_t lo, hi, len;

		if (!hc_option(f, i, "corotop_symbol", &p) || p.value_len <= 8)
			continue;
		addr = heph_be64(p.value);
		for (lo = 0, hi = n; lo < hi;) {
			size_t mid = lo + (hi - lo) / 2;

			if (by_pc[mid]->pc < addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == n || by_pc[lo]->pc != addr)
			continue;
		len = p.value_len - 8 < sizeof(sym) - 1 ? p.value_len - 8
							: sizeof(sym) - 1;
		memcpy(sym, p.value + 8, len);
		sym[len] = '\0';
		framekind_coro_name(sym, name, sizeof(name));
		for (; lo < n && by_pc[lo]->pc == addr; lo++)
			namepool_clean(by_pc[lo]->text, (const uint8_t *)name,
				       strlen(name));
	}
	free(by_pc);
}

static void hc_named(struct heph_coronames *cn, const struct heph_file *f)
{
	size_t cap = 0;

	for (size_t i = 0; i < f->nmeta_off && cn->nnamed < HEPH_CORONAMES_MAX;
	     i++) {
		struct heph_coronamed *nm;
		struct heph_packet p;

		if (!hc_option(f, i, "corotop_named", &p) || p.value_len < 24)
			continue;
		if (!grow_array((void **)&cn->named, &cap, cn->nnamed + 1,
				sizeof(*cn->named)))
			break;
		nm = &cn->named[cn->nnamed];
		*nm = (struct heph_coronamed){
			.id = heph_be64(p.value),
			.ts = heph_be64(p.value + 8),
			.pc = heph_be64(p.value + 16),
			.seq = i,
		};
		if (p.value_len > 24)
			namepool_clean(nm->text, p.value + 24,
				       p.value_len - 24);
		if (nm->id && (nm->pc || nm->text[0]))
			cn->nnamed++;
	}
	if (!cn->nnamed)
		return;
	qsort(cn->named, cn->nnamed, sizeof(*cn->named), hc_named_cmp);
	hc_named_pcs(cn, f);
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
			.id = id,
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
	hc_named(cn, f);
	if (cn->nnames || cn->nnamed)
		hc_births(cn, f);
}

void heph_coronames_finish(struct heph_coronames *cn)
{
	free(cn->names);
	free(cn->named);
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

const struct heph_coronamed *
heph_coronames_named(const struct heph_coronames *cn, uint64_t id, size_t *n)
{
	size_t k, end;

	*n = 0;
	if (!cn->nnamed)
		return NULL;
	LOWER_BOUND(k, cn->named, cn->nnamed, id, id);
	for (end = k; end < cn->nnamed && cn->named[end].id == id; end++)
		;
	*n = end - k;
	return *n ? &cn->named[k] : NULL;
}

/* The last name of id's with a text, at or before ts; NULL: none. */
static const char *hc_named_text(const struct heph_coronames *cn, uint64_t id,
				 uint64_t ts)
{
	size_t n;
	const struct heph_coronamed *nm = heph_coronames_named(cn, id, &n);
	const char *text = NULL;

	for (size_t k = 0; k < n && nm[k].ts <= ts; k++)
		if (nm[k].text[0])
			text = nm[k].text;
	return text;
}

const char *heph_coronames_best(const struct heph_coronames *cn, uint64_t id)
{
	const char *given = heph_coronames_id(cn, id);

	return given ? given : hc_named_text(cn, id, UINT64_MAX);
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
	if (!lo || cn->births[lo - 1].sub != sub)
		return NULL;
	if (!cn->births[lo - 1].name)
		return hc_named_text(cn, cn->births[lo - 1].id, ts);
	return cn->names[cn->births[lo - 1].name - 1].text;
}
