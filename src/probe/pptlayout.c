/*
 * pptlayout: a program's frame types (struct corotop_ppt_frame_type) laid
 * out on the wire the way the shipped ppt generator lays them out, the copy
 * plan that saves a caller's struct into that layout, and the JSON
 * description (_ppt_json_NAME) in the generator's Aeson encoding.
 *
 * Layout of one type:
 *   - the front seqno (int) at 0; with more than one type the 1-based
 *     discriminator "__ppt_type" (int) at 4;
 *   - the members, expanded: an interval x becomes x_start, x_end; a
 *     counter c becomes three members named c (counters 0..2); a counter
 *     interval c becomes c_0_start, c_0_end, c_1_start ... c_2_end;
 *   - sorted by size, largest first (stable), each at its alignment (int 4,
 *     byte 1, float 4, double 8, time 16, counter 8), a padding member
 *     "__pad_<offset>" filling each gap.
 * Where the last member ends is the type's minimum length.  Every type is
 * padded ("__ppt_endpad_<bytes>") to the largest minimum length L, rounded
 * up to 4; the back seqno goes at L, and every frame is L + 4 bytes.
 *
 * Copy plan: each expanded member is one copy from the caller's struct into
 * the frame; runs that are contiguous in both are merged into one, so a
 * struct laid out like the frame saves with one memcpy.
 */
#define _GNU_SOURCE
#include "probe/ppt_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

CTP_STATIC_ASSERT(sizeof(struct timespec) == 16, "timespec is 16 bytes (LP64)");

/* Caller structs larger than this are surely a mistake (bad offset). */
#define PPT_MAX_STRUCT 65536u
/* Items of one laid-out type: seqnos, discriminator, end padding, and
 * per expanded member (at most 6 per caller member) one padding. */
#define PPT_MAX_EXPANDED (6u * PPT_MAX_MEMBERS)
#define PPT_MAX_ITEMS (4u + 2u * PPT_MAX_EXPANDED)

enum item_kind {
	ITEM_FRONT,
	ITEM_TYPE,
	ITEM_MEMBER,
	ITEM_PAD,
	ITEM_ENDPAD,
	ITEM_BACK,
};

enum item_side {
	SIDE_NONE,
	SIDE_BEGIN,
	SIDE_END,
};

/* One member of a laid-out frame. */
struct item {
	const char *name; /* the caller's member name (ITEM_MEMBER) */
	uint32_t off, size, align;
	uint32_t src;	 /* offset in the caller's struct (ITEM_MEMBER) */
	uint8_t kind;	 /* enum item_kind */
	uint8_t wtype;	 /* enum corotop_ppt_type */
	int8_t counter;	 /* 0..2 for a counter, else -1 */
	uint8_t side;	 /* enum item_side */
	uint8_t ivl_max; /* second number of IntBegin/IntEnd: 1, or 2 */
	bool interval;	 /* fmDifferential */
};

struct laid_type {
	struct item *items;
	unsigned n;
	uint32_t minlen;
};

/* ---- names ---- */

bool ppt_name_valid(const char *s)
{
	size_t n;

	if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		    *s == '_'))
		return false;
	for (n = 0; s[n]; n++) {
		char ch = s[n];

		if (n >= PPT_NAME_MAX)
			return false;
		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		      (ch >= '0' && ch <= '9') || ch == '_'))
			return false;
	}
	return true;
}

/* The wire name of an item into buf (PPT_NAME_MAX + 16 is enough). */
static void item_name(const struct item *it, char *buf, size_t n)
{
	switch (it->kind) {
	case ITEM_FRONT:
		snprintf(buf, n, "%s", PPT_FRONT_SEQNO);
		break;
	case ITEM_TYPE:
		snprintf(buf, n, "%s", PPT_TYPE_NAME);
		break;
	case ITEM_BACK:
		snprintf(buf, n, "%s", PPT_BACK_SEQNO);
		break;
	case ITEM_PAD:
		snprintf(buf, n, "__pad_%u", it->off);
		break;
	case ITEM_ENDPAD:
		snprintf(buf, n, "__ppt_endpad_%u", it->size);
		break;
	default:
		if (it->side == SIDE_NONE)
			snprintf(buf, n, "%s", it->name);
		else if (it->counter >= 0)
			snprintf(buf, n, "%s_%d_%s", it->name, it->counter,
				 it->side == SIDE_BEGIN ? "start" : "end");
		else
			snprintf(buf, n, "%s_%s", it->name,
				 it->side == SIDE_BEGIN ? "start" : "end");
		break;
	}
}

/* ---- validation and expansion ---- */

/* Wire size (= alignment) of one value of a base type; 0 if unknown. */
static uint32_t type_size(unsigned base)
{
	switch (base) {
	case COROTOP_PPT_INT:
	case COROTOP_PPT_FLOAT:
		return 4;
	case COROTOP_PPT_DOUBLE:
	case COROTOP_PPT_COUNTER:
		return 8;
	case COROTOP_PPT_TIME:
		return 16;
	case COROTOP_PPT_BYTE:
		return 1;
	default:
		return 0;
	}
}

/* Bytes a member takes in the caller's struct. */
static uint32_t member_csize(unsigned type)
{
	unsigned base = type & ~COROTOP_PPT_INTERVAL;
	uint32_t one = type_size(base) * (base == COROTOP_PPT_COUNTER ? 3 : 1);

	return type & COROTOP_PPT_INTERVAL ? 2 * one : one;
}

static bool member_valid(const struct corotop_ppt_member *m)
{
	unsigned base = m->type & ~COROTOP_PPT_INTERVAL;

	if (!ppt_name_valid(m->name) || strncmp(m->name, "__ppt", 5) == 0 ||
	    strncmp(m->name, "__pad_", 6) == 0)
		return false;
	if (m->type & ~(COROTOP_PPT_INTERVAL | 0xffu) || !type_size(base))
		return false;
	return m->offset <= PPT_MAX_STRUCT - member_csize(m->type);
}

/* Append the expanded members of m to items (frame order not yet). */
static unsigned expand(const struct corotop_ppt_member *m, struct item *out)
{
	unsigned base = m->type & ~COROTOP_PPT_INTERVAL, n = 0;
	bool ivl = (m->type & COROTOP_PPT_INTERVAL) != 0;
	uint32_t sz = type_size(base), src = (uint32_t)m->offset;
	unsigned ncnt = base == COROTOP_PPT_COUNTER ? 3 : 1;

	for (unsigned i = 0; i < ncnt; i++) {
		for (unsigned s = 0; s < (ivl ? 2u : 1u); s++) {
			struct item *it = &out[n++];

			memset(it, 0, sizeof(*it));
			it->name = m->name;
			it->kind = ITEM_MEMBER;
			it->wtype = (uint8_t)base;
			it->size = it->align = sz;
			it->counter = (int8_t)(ncnt == 3 ? (int)i : -1);
			it->interval = ivl;
			it->side =
				ivl ? (s ? SIDE_END : SIDE_BEGIN) : SIDE_NONE;
			it->ivl_max = ncnt == 3 ? 2 : 1;
			/* A counter interval is start[3] then end[3]. */
			it->src = src + i * sz + s * sz * ncnt;
		}
	}
	return n;
}

/* Caller members overlap, or two wire names collide. */
static bool type_clashes(const struct corotop_ppt_frame_type *t,
			 const struct item *ex, unsigned nex)
{
	char a[PPT_NAME_MAX + 16], b[PPT_NAME_MAX + 16];

	for (unsigned i = 0; i < t->nmembers; i++) {
		const struct corotop_ppt_member *x = &t->members[i];

		for (unsigned j = i + 1; j < t->nmembers; j++) {
			const struct corotop_ppt_member *y = &t->members[j];

			if (x->offset < y->offset + member_csize(y->type) &&
			    y->offset < x->offset + member_csize(x->type))
				return true;
		}
	}
	/* The three members of a plain counter share their name on
	 * purpose: compare names of different caller members only. */
	for (unsigned i = 0; i < nex; i++) {
		item_name(&ex[i], a, sizeof(a));
		for (unsigned j = i + 1; j < nex; j++) {
			if (ex[j].name == ex[i].name)
				continue;
			item_name(&ex[j], b, sizeof(b));
			if (strcmp(a, b) == 0)
				return true;
		}
	}
	return false;
}

/* Lay out one type up to its minimum length (no end padding, no back). */
static int type_layout(const struct corotop_ppt_frame_type *t, unsigned ntypes,
		       struct laid_type *lt)
{
	struct item ex[PPT_MAX_EXPANDED];
	unsigned nex = 0;
	uint32_t off;

	if (!ppt_name_valid(t->name) || !t->members || t->nmembers == 0 ||
	    t->nmembers > PPT_MAX_MEMBERS)
		return -EINVAL;
	for (unsigned i = 0; i < t->nmembers; i++) {
		if (!member_valid(&t->members[i]))
			return -EINVAL;
		nex += expand(&t->members[i], ex + nex);
	}
	if (type_clashes(t, ex, nex))
		return -EINVAL;
	/* Stable insertion sort, largest first. */
	for (unsigned i = 1; i < nex; i++) {
		struct item x = ex[i];
		unsigned j = i;

		for (; j > 0 && ex[j - 1].size < x.size; j--)
			ex[j] = ex[j - 1];
		ex[j] = x;
	}
	lt->n = 0;
	lt->items[lt->n++] = (struct item){.kind = ITEM_FRONT,
					   .wtype = COROTOP_PPT_INT,
					   .size = 4,
					   .align = 4,
					   .counter = -1};
	off = 4;
	if (ntypes > 1) {
		lt->items[lt->n++] = (struct item){.kind = ITEM_TYPE,
						   .wtype = COROTOP_PPT_INT,
						   .off = 4,
						   .size = 4,
						   .align = 4,
						   .counter = -1};
		off = 8;
	}
	for (unsigned i = 0; i < nex; i++) {
		uint32_t at =
			(off + ex[i].align - 1) / ex[i].align * ex[i].align;

		if (at != off)
			lt->items[lt->n++] =
				(struct item){.kind = ITEM_PAD,
					      .wtype = COROTOP_PPT_BYTE,
					      .off = off,
					      .size = at - off,
					      .align = 1,
					      .counter = -1};
		ex[i].off = at;
		lt->items[lt->n++] = ex[i];
		off = at + ex[i].size;
	}
	lt->minlen = off;
	return 0;
}

/* Pad to L and put the back seqno there. */
static void type_finish(struct laid_type *lt, uint32_t L)
{
	if (lt->minlen < L)
		lt->items[lt->n++] = (struct item){.kind = ITEM_ENDPAD,
						   .wtype = COROTOP_PPT_BYTE,
						   .off = lt->minlen,
						   .size = L - lt->minlen,
						   .align = 1,
						   .counter = -1};
	lt->items[lt->n++] = (struct item){.kind = ITEM_BACK,
					   .wtype = COROTOP_PPT_INT,
					   .off = L,
					   .size = 4,
					   .align = 4,
					   .counter = -1};
}

/* Merge the members into copies; returns how many. */
static uint32_t type_plan(const struct laid_type *lt, struct ppt_copy *ops)
{
	uint32_t n = 0;

	for (unsigned i = 0; i < lt->n; i++) {
		const struct item *it = &lt->items[i];
		struct ppt_copy *prev = n ? &ops[n - 1] : NULL;

		if (it->kind != ITEM_MEMBER)
			continue;
		if (prev && prev->dst + prev->len == it->off &&
		    prev->src + prev->len == it->src) {
			prev->len = (uint16_t)(prev->len + it->size);
			continue;
		}
		ops[n++] = (struct ppt_copy){.src = it->src,
					     .dst = (uint16_t)it->off,
					     .len = (uint16_t)it->size};
	}
	return n;
}

/* ---- JSON ---- */

struct jbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

__attribute__((format(printf, 2, 3))) static void
jb_printf(struct jbuf *j, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (j->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(j->p + j->len, j->cap - j->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			j->oom = true;
			return;
		}
		if ((size_t)n < j->cap - j->len) {
			j->len += (size_t)n;
			return;
		}
		char *q = realloc(j->p, 2 * j->cap + (size_t)n);

		if (!q) {
			j->oom = true;
			return;
		}
		j->p = q;
		j->cap = 2 * j->cap + (size_t)n;
	}
}

/*
 * The probe's copy of corotop's one JSON string policy (common/utf8.h and
 * common/jsonstr.h, which the probe may not include: it is loaded into the
 * traced program and includes only src/wire).  Keep the two alike:
 * unit-pptlayout's test_tag_value_policy holds them to the same output.
 */

/* The length (2 to 4) of the well-formed UTF-8 sequence at s (n bytes
 * there, s[0] >= 0x80), or 0: common/utf8.h's utf8_len. */
static size_t jb_utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len;

	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0; /* overlong */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates */
	else if (c == 0xf0)
		lo = 0x90; /* overlong */
	else if (c == 0xf4)
		hi = 0x8f; /* past U+10FFFF */
	if (len > n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/* A JSON string, as common/jsonstr.h's jsonstr_write writes it: valid
 * UTF-8 verbatim, any other byte U+FFFD, '"' and '\' escaped, control
 * characters (U+0000-U+001F, U+007F) as \u00XX.  Names are identifiers;
 * a tag value may hold any bytes. */
static void jb_str(struct jbuf *j, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), i = 0, u;

	jb_printf(j, "\"");
	while (i < len) {
		unsigned ch = p[i];

		if (ch == '"' || ch == '\\')
			jb_printf(j, "\\%c", (int)ch);
		else if (ch < 0x20 || ch == 0x7f)
			jb_printf(j, "\\u%04x", ch);
		else if (ch < 0x80)
			jb_printf(j, "%c", (int)ch);
		else if ((u = jb_utf8_len(p + i, len - i))) {
			jb_printf(j, "%.*s", (int)u, s + i);
			i += u;
			continue;
		} else
			jb_printf(j, "\\ufffd");
		i++;
	}
	jb_printf(j, "\"");
}

static const char *const fm_types[] = {
	[COROTOP_PPT_INT] = "PInt",	    [COROTOP_PPT_FLOAT] = "PFloat",
	[COROTOP_PPT_DOUBLE] = "PDouble",   [COROTOP_PPT_TIME] = "PTime",
	[COROTOP_PPT_COUNTER] = "PCounter", [COROTOP_PPT_BYTE] = "PByte",
};

static void json_type(struct jbuf *j, const struct item *it)
{
	switch (it->wtype) {
	case COROTOP_PPT_INT:
		jb_printf(j, "{\"tag\":\"PIntegral\",\"contents\":"
			     "[\"PPInt\",null]}");
		break;
	case COROTOP_PPT_BYTE:
		jb_printf(j, "{\"tag\":\"PIntegral\",\"contents\":"
			     "[\"PPByte\",null]}");
		break;
	case COROTOP_PPT_FLOAT:
		jb_printf(j, "{\"tag\":\"PRational\",\"contents\":"
			     "[\"PPFloat\",null]}");
		break;
	case COROTOP_PPT_DOUBLE:
		jb_printf(j, "{\"tag\":\"PRational\",\"contents\":"
			     "[\"PPDouble\",null]}");
		break;
	case COROTOP_PPT_TIME:
		jb_printf(j, "{\"tag\":\"PTime\",\"contents\":null}");
		break;
	default:
		jb_printf(j, "{\"tag\":\"PCounter\",\"contents\":[%d,null]}",
			  it->counter);
		break;
	}
}

static void json_kind(struct jbuf *j, const struct item *it, unsigned ntypes)
{
	switch (it->kind) {
	case ITEM_FRONT:
	case ITEM_BACK:
		jb_printf(j, "{\"tag\":\"LKSeqno\",\"contents\":\"%s\"}",
			  it->kind == ITEM_FRONT ? "FrontSeq" : "BackSeq");
		break;
	case ITEM_TYPE:
		jb_printf(j, "{\"tag\":\"LKTypeDescrim\",\"contents\":%u}",
			  ntypes);
		break;
	case ITEM_PAD:
	case ITEM_ENDPAD:
		jb_printf(j, "{\"tag\":\"LKPadding\",\"contents\":%u}",
			  it->size);
		break;
	default:
		jb_printf(j,
			  "{\"tag\":\"LKMember\",\"contents\":[{\"fmType\":");
		jb_str(j, fm_types[it->wtype]);
		jb_printf(j, ",\"fmName\":");
		jb_str(j, it->name);
		jb_printf(j, ",\"fmDifferential\":%s},",
			  it->interval ? "true" : "false");
		if (it->side == SIDE_NONE)
			jb_printf(j, "null]}");
		else
			jb_printf(
				j, "{\"tag\":\"%s\",\"contents\":[%d,%u]}]}",
				it->side == SIDE_BEGIN ? "IntBegin" : "IntEnd",
				it->counter < 0 ? 0 : it->counter, it->ivl_max);
		break;
	}
}

static void json_frame(struct jbuf *j, const char *name,
		       const struct laid_type *lt, unsigned ntypes)
{
	char nm[PPT_NAME_MAX + 16];

	jb_printf(j, "{\"_flName\":");
	jb_str(j, name);
	jb_printf(j, ",\"_flFrame\":[");
	jb_str(j, name);
	jb_printf(j, ",[]],\"_flLayout\":[");
	for (unsigned i = 0; i < lt->n; i++) {
		const struct item *it = &lt->items[i];

		jb_printf(j, "%s{\"_lType\":", i ? "," : "");
		json_type(j, it);
		jb_printf(j,
			  ",\"_lOffset\":%u,\"_lAlignment\":%u,\"_lSize\":%u,"
			  "\"_lKind\":",
			  it->off, it->align, it->size);
		json_kind(j, it, ntypes);
		item_name(it, nm, sizeof(nm));
		jb_printf(j, ",\"_lName\":");
		jb_str(j, nm);
		jb_printf(j, "}");
	}
	jb_printf(j, "]}");
}

static char *json_build(const char *bufname,
			const struct corotop_ppt_frame_type *t,
			const struct laid_type *lt, unsigned ntypes,
			unsigned flags, const char *tag_value)
{
	struct jbuf j = {.p = malloc(4096), .cap = 4096};

	if (!j.p)
		return NULL;
	j.p[0] = '\0';
	jb_printf(&j, "{\"abi\":\"%s\",\"tags\":[{\"key\":\"%s\",\"value\":",
		  PPT_ABI, COROTOP_RDV_TAG_KEY);
	jb_str(&j, tag_value);
	jb_printf(&j, "}");
	if (flags & COROTOP_PPT_RESIZE)
		jb_printf(&j, ",{\"key\":\"resize\",\"value\":\"on\"}");
	jb_printf(&j, "],\"metadata\":[],\"emit\":{\"_eBuffer\":{\"ebName\":");
	jb_str(&j, bufname);
	jb_printf(&j,
		  ",\"ebMinElements\":null},\"_eLanguage\":\"ELangC\","
		  "\"_eTimeRep\":{\"tag\":\"ETimeSpec\",\"contents\":"
		  "\"ETimeClockMonotonic\"},\"_eRuntime\":{\"erMultithread\":"
		  "true},\"_eTags\":[],\"_eOptions\":[]},\"target\":{"
		  "\"tDouble\":8,\"tFloat\":4,\"tInt\":4,\"tTime\":16,"
		  "\"tCounter\":8,\"tPadTo\":4,\"tCounterCount\":%u},"
		  "\"frames\":[",
		  PPT_MAX_COUNTERS);
	for (unsigned i = 0; i < ntypes; i++) {
		if (i)
			jb_printf(&j, ",");
		json_frame(&j, t[i].name, &lt[i], ntypes);
	}
	jb_printf(&j, "]}");
	if (j.oom) {
		free(j.p);
		return NULL;
	}
	return j.p;
}

/* ---- the whole buffer ---- */

static bool tag_valid(const char *s)
{
	size_t n = strnlen(s, PPT_TAG_VALUE_MAX + 1);

	return n > 0 && n <= PPT_TAG_VALUE_MAX;
}

static int layout_check(const char *bufname,
			const struct corotop_ppt_frame_type *t, unsigned ntypes,
			unsigned flags, const char *tag_value)
{
	if (!ppt_name_valid(bufname) || !t || ntypes == 0 ||
	    ntypes > PPT_MAX_TYPES || (flags & ~COROTOP_PPT_RESIZE) ||
	    !tag_valid(tag_value))
		return -EINVAL;
	for (unsigned i = 0; i < ntypes; i++)
		for (unsigned k = i + 1; k < ntypes; k++)
			if (t[i].name && t[k].name &&
			    strcmp(t[i].name, t[k].name) == 0)
				return -EINVAL;
	return 0;
}

int ppt_layout_build(struct ppt_layout *l, const char *bufname,
		     const struct corotop_ppt_frame_type *t, unsigned ntypes,
		     unsigned flags, const char *tag_value)
{
	struct laid_type lt[PPT_MAX_TYPES];
	struct item *items;
	uint32_t L = 0, nops = 0;
	int err;

	memset(l, 0, sizeof(*l));
	err = layout_check(bufname, t, ntypes, flags, tag_value);
	if (err)
		return err;
	items = calloc((size_t)ntypes * PPT_MAX_ITEMS, sizeof(*items));
	if (!items)
		return -ENOMEM;
	for (unsigned i = 0; i < ntypes; i++) {
		lt[i].items = items + (size_t)i * PPT_MAX_ITEMS;
		err = type_layout(&t[i], ntypes, &lt[i]);
		if (err)
			goto out;
		if (lt[i].minlen > L)
			L = lt[i].minlen;
	}
	L = (L + 3) / 4 * 4;
	for (unsigned i = 0; i < ntypes; i++)
		type_finish(&lt[i], L);
	err = -ENOMEM;
	l->ops = calloc((size_t)ntypes * PPT_MAX_EXPANDED, sizeof(*l->ops));
	l->json = json_build(bufname, t, lt, ntypes, flags, tag_value);
	if (!l->ops || !l->json)
		goto out;
	for (unsigned i = 0; i < ntypes; i++) {
		l->plans[i].ops = l->ops + nops;
		l->plans[i].nops = type_plan(&lt[i], l->ops + nops);
		l->plans[i].discrim = ntypes > 1 ? i + 1 : 0;
		nops += l->plans[i].nops;
	}
	l->frame_size = L + PPT_SEQNO_SIZE;
	l->back_off = L;
	l->ntypes = ntypes;
	err = 0;
out:
	free(items);
	if (err)
		ppt_layout_finish(l);
	return err;
}

void ppt_layout_finish(struct ppt_layout *l)
{
	free(l->ops);
	free(l->json);
	memset(l, 0, sizeof(*l));
}
