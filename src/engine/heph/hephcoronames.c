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
#include "engine/names/framekind.h"

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

static int hc_u64_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

/* The recording's corotop_symbol text of each of the n sorted, distinct
 * addresses at[] into sym[k] (HEPH_NAME_LEN + 1 bytes each; "" when it
 * has none): one pass over the options. */
static void hc_symbols(const struct heph_file *f, const uint64_t *at, size_t n,
		       char (*sym)[HEPH_NAME_LEN + 1])
{
	for (size_t i = 0; n && i < f->nmeta_off; i++) {
		struct heph_packet p;
		uint64_t addr;
		size_t k, len;

		if (!hc_option(f, i, "corotop_symbol", &p) || p.value_len <= 8)
			continue;
		addr = heph_be64(p.value);
		LOWER_BOUND_ARRAY(k, at, n, addr);
		if (k == n || at[k] != addr)
			continue;
		len = p.value_len - 8 < HEPH_NAME_LEN ? p.value_len - 8
						      : HEPH_NAME_LEN;
		memcpy(sym[k], p.value + 8, len);
		sym[k][len] = '\0';
	}
}

/* The sorted, distinct pcs (and made_for functions) of the names named
 * without text; their count. */
static size_t hc_named_addrs(const struct heph_coronames *cn, uint64_t *at)
{
	size_t n = 0, w = 0;

	for (size_t i = 0; i < cn->nnamed; i++) {
		const struct heph_coronamed *nm = &cn->named[i];

		if (!nm->pc || nm->text[0])
			continue;
		at[n++] = nm->pc;
		if (nm->made_for)
			at[n++] = nm->made_for;
	}
	qsort(at, n, sizeof(*at), hc_u64_cmp);
	for (size_t i = 0; i < n; i++)
		if (!w || at[w - 1] != at[i])
			at[w++] = at[i];
	return w;
}

/* The function's name of each pc named without text, the way the live
 * view names it (framekind_coro_name_made): one more pass over the
 * options, for the corotop_symbol of those pcs and of the functions
 * their entries were made for. */
static void hc_named_pcs(struct heph_coronames *cn, const struct heph_file *f)
{
	char(*sym)[HEPH_NAME_LEN + 1] = NULL;
	uint64_t *at;
	size_t n;

	at = calloc(cn->nnamed ? 2 * cn->nnamed : 1, sizeof(*at));
	if (!at)
		return;
	n = hc_named_addrs(cn, at);
	if (n)
		sym = calloc(n, sizeof(*sym));
	if (!sym) {
		free(at);
		return;
	}
	hc_symbols(f, at, n, sym);
	for (size_t i = 0; i < cn->nnamed; i++) {
		struct heph_coronamed *nm = &cn->named[i];
		char name[NAMEPOOL_TEXT_MAX];
		size_t k, m = n;

		if (!nm->pc || nm->text[0])
			continue;
		LOWER_BOUND_ARRAY(k, at, n, nm->pc);
		if (k == n || !sym[k][0])
			continue;
		if (nm->made_for)
			LOWER_BOUND_ARRAY(m, at, n, nm->made_for);
		framekind_coro_name_made(sym[k], m < n ? sym[m] : NULL, name,
					 sizeof(name));
		namepool_clean(nm->text, (const uint8_t *)name, strlen(name));
	}
	free(sym);
	free(at);
}

/* Each corotop_made_for (id, time, pc) onto the name with a pc it came
 * with: the same id and time (cn->named sorted). */
static void hc_made_for(struct heph_coronames *cn, const struct heph_file *f)
{
	for (size_t i = 0; i < f->nmeta_off; i++) {
		struct heph_packet p;
		uint64_t id, ts;
		size_t k;

		if (!hc_option(f, i, "corotop_made_for", &p) ||
		    p.value_len != 24)
			continue;
		id = heph_be64(p.value);
		ts = heph_be64(p.value + 8);
		LOWER_BOUND(k, cn->named, cn->nnamed, id, id);
		for (; k < cn->nnamed && cn->named[k].id == id; k++)
			if (cn->named[k].ts == ts && cn->named[k].pc)
				cn->named[k].made_for = heph_be64(p.value + 16);
	}
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
	hc_made_for(cn, f);
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
