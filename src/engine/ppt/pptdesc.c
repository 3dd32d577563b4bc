/*
 * pptdesc: a ppt buffer's JSON description, which the traced program wrote
 * and corotop reads out of its memory, turned into frame layouts that the
 * agent can decode without trusting anything the text says.
 *
 * Two spellings (pptdesc.h): the shipped generator's Aeson encoding (tagged
 * "_lType"/"_lKind" objects, top-level "emit"/"frames") and the protocol
 * document's plain one ("buffer": {"emit", "frames"}, members with "name",
 * "type", "kind", ...).  Each member is read in whichever spelling it uses,
 * into a desc_item; keys nobody asked for are ignored.
 *
 * Then every frame type is checked on its own (sizes that match the types,
 * offsets inside PPTDESC_MAX_FRAME, no overlaps once sorted by offset,
 * exactly one front and one back seqno, a discriminator when there are
 * several types, names fit for a terminal) and against the first type (the
 * same size and the same seqno and discriminator offsets).  A description
 * that lies fails with PPTDESC_BAD_LAYOUT and a message naming the frame
 * type and member; nothing past the checks indexes by a value from the text.
 *
 * Columns are what a person sees: every member in offset order, with an
 * interval's begin/end pair folded into one column named by its stem.  A
 * pair is matched by stem, type, counter index and pair index: the Aeson
 * spelling names the stem (fmName) and the index (IntBegin [i, n]); the
 * plain one is read from the names (stem_start/stem_end, stem_I_start for
 * counter I).  A counter column is "stem[I]".
 */
#include "engine/ppt/pptdesc.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corotop/ppt.h"
#include "common/jsonparse.h"

/* One member as read, with what pairing needs. */
struct desc_item {
	struct ppt_member m;
	char base[PPTDESC_NAME_MAX]; /* interval stem: "work", "cost" */
	int64_t pair;		     /* which pair of that stem */
	int64_t ntypes;		     /* a discriminator's type count, or -1 */
	uint32_t order;		     /* index in the description */
	bool used;		     /* in a column already */
};

struct desc_parse {
	struct ppt_desc *d;
	char *err;
	size_t errlen;
	char frame[96];	 /* "frame type 'tick'", or "" */
	char member[96]; /* "member 'work_end'", or "" */
	struct desc_item *items;
};

static const uint32_t desc_type_size[] = {
	[PPT_T_INT] = 4,    [PPT_T_BYTE] = 1,  [PPT_T_FLOAT] = 4,
	[PPT_T_DOUBLE] = 8, [PPT_T_TIME] = 16, [PPT_T_COUNTER] = 8,
};
static const char *const desc_type_name[] = {
	[PPT_T_INT] = "int",	 [PPT_T_BYTE] = "byte",
	[PPT_T_FLOAT] = "float", [PPT_T_DOUBLE] = "double",
	[PPT_T_TIME] = "time",	 [PPT_T_COUNTER] = "counter",
};
static const char *const desc_kind_name[] = {
	[PPT_K_FRONT] = "front_seqno", [PPT_K_BACK] = "back_seqno",
	[PPT_K_TYPE] = "type",	       [PPT_K_MEMBER] = "member",
	[PPT_K_PADDING] = "padding",
};

/* Always false.  The message is prefixed by the frame and member read. */
static bool desc_fail(struct desc_parse *p, const char *fmt, ...)
{
	size_t n = 0;
	va_list ap;

	if (!p->err || !p->errlen)
		return false;
	p->err[0] = '\0';
	if (p->frame[0])
		n = (size_t)snprintf(p->err, p->errlen, "%s%s%s: ", p->frame,
				     p->member[0] ? ", " : "", p->member);
	if (n >= p->errlen)
		return false;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - n, fmt, ap);
	va_end(ap);
	return false;
}

/* An untrusted string made fit for a message: at most 32 bytes, anything
 * but printable ASCII as '?'. */
static const char *desc_quote(const char *s, char out[40])
{
	size_t i = 0;

	for (; s && s[i] && i < 32; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	if (s && s[i])
		out[i++] = '.', out[i++] = '.', out[i++] = '.';
	out[i] = '\0';
	return out;
}

/* NULL when v is a name fit for the screen, else what is wrong with it. */
static const char *desc_name_bad(const struct json_value *v)
{
	const char *s = json_str(v);

	if (!s)
		return "name is missing or not a string";
	if (v->n == 0)
		return "name is empty";
	if (v->n >= PPTDESC_NAME_MAX)
		return "name is longer than 63 bytes";
	for (uint32_t i = 0; i < v->n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return "name has a control or non-ASCII byte";
	return NULL;
}

/* Member a (else b) of v. */
static const struct json_value *desc_either(const struct json_value *v,
					    const char *a, const char *b)
{
	const struct json_value *r = json_get(v, a);

	return r ? r : json_get(v, b);
}

/* Member key of object a, else of object b (the top level, else
 * "buffer"). */
static const struct json_value *
desc_in(const struct json_value *a, const struct json_value *b, const char *key)
{
	const struct json_value *r = json_get(a, key);

	return r ? r : json_get(b, key);
}

static bool desc_is(const char *s, const char *want)
{
	return s && strcmp(s, want) == 0;
}

/* ---- the buffer ----------------------------------------------------------*/

static enum pptdesc_status desc_abi(struct desc_parse *p,
				    const struct json_value *root)
{
	const struct json_value *a = json_get(root, "abi");
	const char *s = json_str(a), *c;
	unsigned long major = 0;
	char q[40];

	if (!s)
		return desc_fail(p, "the description has no \"abi\" string"),
		       PPTDESC_BAD_LAYOUT;
	c = s;
	/* Three numbers of 1..5 digits, no leading zeros (semver). */
	for (int part = 0; part < 3; part++) {
		const char *from = c;
		unsigned long v = 0;
		int digits = 0;

		for (; *c >= '0' && *c <= '9' && digits < 6; c++, digits++)
			v = v * 10 + (unsigned long)(*c - '0');
		if (digits == 0 || digits == 6 ||
		    (digits > 1 && *from == '0') || *c != (part < 2 ? '.' : 0))
			return desc_fail(p,
					 "abi \"%s\" is not MAJOR.MINOR.PATCH",
					 desc_quote(s, q)),
			       PPTDESC_BAD_LAYOUT;
		if (part == 0)
			major = v;
		c += part < 2;
	}
	if ((size_t)(c - s) != a->n || a->n >= sizeof(p->d->abi))
		return desc_fail(p, "abi \"%s\" is not MAJOR.MINOR.PATCH",
				 desc_quote(s, q)),
		       PPTDESC_BAD_LAYOUT;
	memcpy(p->d->abi, s, a->n + 1);
	if (major != PPT_ABI_MAJOR)
		return desc_fail(p, "buffer ABI %s, corotop speaks %d.x (%s)",
				 p->d->abi, PPT_ABI_MAJOR, PPT_ABI),
		       PPTDESC_ABI_MISMATCH;
	return PPTDESC_OK;
}

static bool desc_has_tag(const struct json_value *tags, const char *key,
			 const char *value)
{
	const struct json_value *t;

	for (size_t i = 0; (t = json_at(tags, i)) != NULL; i++)
		if (desc_is(json_str(json_get(t, "key")), key) &&
		    desc_is(json_str(json_get(t, "value")), value))
			return true;
	return false;
}

static bool desc_true(const struct json_value *v, const char *key)
{
	const struct json_value *b = json_get(v, key);

	return b && b->type == JSON_TRUE;
}

/* The sizes corotop decodes with must be the target's. */
static bool desc_target(struct desc_parse *p, const struct json_value *target)
{
	static const struct {
		const char *key;
		int64_t bytes;
	} want[] = {{"tInt", 4},
		    {"tFloat", 4},
		    {"tDouble", 8},
		    {"tTime", 16},
		    {"tCounter", 8}};
	const struct json_value *v;
	int64_t n;

	p->d->counter_count = PPT_MAX_COUNTERS;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		v = json_get(target, want[i].key);
		if (v && !json_int(v, want[i].bytes, want[i].bytes, NULL))
			return desc_fail(p,
					 "target.%s is not %" PRId64
					 ": corotop reads 64-bit Linux "
					 "targets only",
					 want[i].key, want[i].bytes);
	}
	v = json_get(target, "tCounterCount");
	if (v) {
		if (!json_int(v, 1, PPT_MAX_COUNTERS, &n))
			return desc_fail(p, "target.tCounterCount is not an "
					    "integer in 1..3");
		p->d->counter_count = (uint32_t)n;
	}
	return true;
}

static bool desc_buffer(struct desc_parse *p, const struct json_value *root,
			const struct json_value *buf,
			const struct json_value *emit)
{
	const struct json_value *tags = desc_in(root, buf, "tags");
	const struct json_value *name;
	const char *why;

	p->d->resize = desc_has_tag(tags, "resize", "on") ||
		       desc_true(root, "resize") || desc_true(buf, "resize") ||
		       desc_true(emit, "resize");
	p->d->rendezvous =
		desc_has_tag(tags, COROTOP_RDV_TAG_KEY, COROTOP_RDV_TAG_VALUE);
	/* corotop's client library, which follows data_block_hmem; the
	 * generator's code does not. */
	p->d->corotop_client =
		p->d->rendezvous ||
		desc_has_tag(tags, COROTOP_RDV_TAG_KEY, "client/1");
	p->d->timeval =
		desc_is(json_str(json_get(json_get(emit, "_eTimeRep"), "tag")),
			"ETimeVal");
	name = json_get(json_get(emit, "_eBuffer"), "ebName");
	if (!json_str(name))
		name = json_get(buf, "name");
	if (!json_str(name))
		name = json_get(emit, "name");
	if (json_str(name) && name->n) {
		if ((why = desc_name_bad(name)) != NULL)
			return desc_fail(p, "the buffer's %s", why);
		memcpy(p->d->name, name->u.string, name->n + 1);
	}
	return desc_target(p, desc_in(root, buf, "target"));
}

/* ---- members -------------------------------------------------------------*/

static bool desc_aeson_type(struct desc_parse *p, const struct json_value *t,
			    struct desc_item *it)
{
	const char *tag = json_str(json_get(t, "tag"));
	const struct json_value *c = json_get(t, "contents");
	const char *sub = json_str(json_at(c, 0));
	int64_t k;
	char q[40], q2[40];

	if (desc_is(tag, "PIntegral") && desc_is(sub, "PPInt"))
		it->m.type = PPT_T_INT;
	else if (desc_is(tag, "PIntegral") && desc_is(sub, "PPByte"))
		it->m.type = PPT_T_BYTE;
	else if (desc_is(tag, "PRational") && desc_is(sub, "PPFloat"))
		it->m.type = PPT_T_FLOAT;
	else if (desc_is(tag, "PRational") && desc_is(sub, "PPDouble"))
		it->m.type = PPT_T_DOUBLE;
	else if (desc_is(tag, "PTime"))
		it->m.type = PPT_T_TIME;
	else if (desc_is(tag, "PCounter")) {
		if (!json_int(json_at(c, 0), 0, p->d->counter_count - 1, &k))
			return desc_fail(p,
					 "counter index is not an integer in "
					 "0..%" PRIu32,
					 p->d->counter_count - 1);
		it->m.type = PPT_T_COUNTER;
		it->m.counter = (int)k;
	} else
		return desc_fail(p, "unknown _lType \"%s\" \"%s\"",
				 desc_quote(tag, q), desc_quote(sub, q2));
	return true;
}

static bool desc_aeson_kind(struct desc_parse *p, const struct json_value *k,
			    struct desc_item *it)
{
	const char *tag = json_str(json_get(k, "tag"));
	const struct json_value *c = json_get(k, "contents");
	const struct json_value *fm, *side;
	char q[40];

	if (desc_is(tag, "LKSeqno") && desc_is(json_str(c), "FrontSeq")) {
		it->m.kind = PPT_K_FRONT;
	} else if (desc_is(tag, "LKSeqno") && desc_is(json_str(c), "BackSeq")) {
		it->m.kind = PPT_K_BACK;
	} else if (desc_is(tag, "LKTypeDescrim")) {
		it->m.kind = PPT_K_TYPE;
		if (c && c->type != JSON_NULL &&
		    !json_int(c, 0, INT64_MAX, &it->ntypes))
			return desc_fail(p, "type count is not an integer");
	} else if (desc_is(tag, "LKPadding")) {
		it->m.kind = PPT_K_PADDING;
	} else if (desc_is(tag, "LKMember")) {
		it->m.kind = PPT_K_MEMBER;
		fm = json_get(json_at(c, 0), "fmName");
		if (fm && fm->type != JSON_NULL) {
			const char *why = desc_name_bad(fm);

			if (why)
				return desc_fail(p, "fmName: %s", why);
			memcpy(it->base, fm->u.string, fm->n + 1);
		}
		side = json_at(c, 1);
		if (!side || side->type == JSON_NULL)
			return true;
		tag = json_str(json_get(side, "tag"));
		if (desc_is(tag, "IntBegin"))
			it->m.interval = PPT_I_BEGIN;
		else if (desc_is(tag, "IntEnd"))
			it->m.interval = PPT_I_END;
		else
			return desc_fail(p, "unknown interval side \"%s\"",
					 desc_quote(tag, q));
		c = json_at(json_get(side, "contents"), 0);
		if (c && !json_int(c, 0, INT32_MAX, &it->pair))
			return desc_fail(p, "interval index is not an integer");
	} else {
		return desc_fail(p, "unknown _lKind \"%s\"",
				 desc_quote(tag, q));
	}
	return true;
}

static bool desc_plain(struct desc_parse *p, const struct json_value *jm,
		       struct desc_item *it)
{
	const char *type = json_str(json_get(jm, "type"));
	const char *kind = json_str(json_get(jm, "kind"));
	const char *side = json_str(json_get(jm, "interval"));
	size_t i;
	int64_t k;
	char q[40];

	for (i = 0; i <= PPT_T_COUNTER && !desc_is(type, desc_type_name[i]);)
		i++;
	if (i > PPT_T_COUNTER)
		return desc_fail(p, "unknown type \"%s\"", desc_quote(type, q));
	it->m.type = (enum ppt_mtype)i;
	for (i = 0; i <= PPT_K_PADDING && !desc_is(kind, desc_kind_name[i]);)
		i++;
	if (i > PPT_K_PADDING)
		return desc_fail(p, "unknown kind \"%s\"", desc_quote(kind, q));
	it->m.kind = (enum ppt_kind)i;
	if (desc_is(side, "begin"))
		it->m.interval = PPT_I_BEGIN;
	else if (desc_is(side, "end"))
		it->m.interval = PPT_I_END;
	else if (json_get(jm, "interval") &&
		 json_get(jm, "interval")->type != JSON_NULL)
		return desc_fail(p, "interval is not \"begin\" or \"end\"");
	if (it->m.interval != PPT_I_NONE && it->m.kind != PPT_K_MEMBER)
		return desc_fail(p, "a %s can not be an interval", kind);
	if (it->m.type == PPT_T_COUNTER) {
		if (!json_int(json_get(jm, "counter"), 0,
			      p->d->counter_count - 1, &k))
			return desc_fail(p,
					 "counter index is not an integer in "
					 "0..%" PRIu32,
					 p->d->counter_count - 1);
		it->m.counter = (int)k;
		it->pair = k;
	}
	return true;
}

/* The stem of an interval member read from its name: "work" of
 * "work_start", "cost" of "cost_1_end" (counter 1). */
static void desc_stem(struct desc_item *it)
{
	const char *suffix = it->m.interval == PPT_I_BEGIN ? "_start" : "_end";
	size_t n = strlen(it->m.name), s = strlen(suffix);
	char idx[16];

	memcpy(it->base, it->m.name, n + 1);
	if (n > s && strcmp(it->base + n - s, suffix) == 0)
		it->base[n -= s] = '\0';
	if (it->m.counter < 0)
		return;
	s = (size_t)snprintf(idx, sizeof(idx), "_%d", it->m.counter);
	if (n > s && strcmp(it->base + n - s, idx) == 0)
		it->base[n - s] = '\0';
}

static bool desc_member(struct desc_parse *p, const struct json_value *jm,
			uint32_t i, struct desc_item *it)
{
	bool aeson = json_get(jm, "_lOffset") || json_get(jm, "_lKind");
	const struct json_value *name = json_get(jm, aeson ? "_lName" : "name");
	const char *why = desc_name_bad(name);
	int64_t off, size;

	memset(it, 0, sizeof(*it));
	it->m.counter = -1;
	it->ntypes = -1;
	it->order = i;
	snprintf(p->member, sizeof(p->member), "member %" PRIu32, i + 1);
	if (jm->type != JSON_OBJECT)
		return desc_fail(p, "is not an object");
	if (why)
		return desc_fail(p, "%s", why);
	memcpy(it->m.name, name->u.string, name->n + 1);
	snprintf(p->member, sizeof(p->member), "member '%s'", it->m.name);
	if (!json_int(json_get(jm, aeson ? "_lOffset" : "offset"), 0,
		      PPTDESC_MAX_FRAME, &off))
		return desc_fail(p, "offset is not an integer in 0..%d",
				 PPTDESC_MAX_FRAME);
	if (!json_int(json_get(jm, aeson ? "_lSize" : "size"), 1,
		      PPTDESC_MAX_FRAME, &size))
		return desc_fail(p, "size is not an integer in 1..%d",
				 PPTDESC_MAX_FRAME);
	if (off + size > PPTDESC_MAX_FRAME)
		return desc_fail(p,
				 "offset %" PRId64 " + size %" PRId64
				 " is past the largest frame (%d bytes)",
				 off, size, PPTDESC_MAX_FRAME);
	it->m.offset = (uint32_t)off;
	it->m.size = (uint32_t)size;
	if (aeson ? !desc_aeson_type(p, json_get(jm, "_lType"), it) ||
			    !desc_aeson_kind(p, json_get(jm, "_lKind"), it)
		  : !desc_plain(p, jm, it))
		return false;
	if (it->m.interval != PPT_I_NONE && !it->base[0])
		desc_stem(it);
	switch (it->m.kind) {
	case PPT_K_FRONT:
	case PPT_K_BACK:
	case PPT_K_TYPE:
		if (it->m.type != PPT_T_INT || it->m.size != PPT_SEQNO_SIZE)
			return desc_fail(p,
					 "a %s must be a 4-byte int, not a %s "
					 "of %" PRIu32 " bytes",
					 desc_kind_name[it->m.kind],
					 desc_type_name[it->m.type],
					 it->m.size);
		break;
	case PPT_K_PADDING:
		break; /* any size: it is skipped */
	case PPT_K_MEMBER:
		if (it->m.size != desc_type_size[it->m.type])
			return desc_fail(p,
					 "a %s member is %" PRIu32
					 " bytes, not %" PRIu32,
					 desc_type_name[it->m.type],
					 desc_type_size[it->m.type],
					 it->m.size);
		break;
	}
	return true;
}

/* ---- frames --------------------------------------------------------------*/

static int desc_by_offset(const void *a, const void *b)
{
	const struct desc_item *x = a, *y = b;

	if (x->m.offset != y->m.offset)
		return x->m.offset < y->m.offset ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The column of items[i] (a member not yet in one), pairing an interval
 * side with the first unused matching other side. */
static void desc_column(struct desc_item *items, uint32_t n, uint32_t i,
			struct ppt_column *col)
{
	struct desc_item *it = &items[i], *o = NULL;
	uint32_t j;

	memset(col, 0, sizeof(*col));
	it->used = true;
	col->type = it->m.type;
	col->begin = col->end = (uint16_t)i;
	for (j = 0; it->m.interval != PPT_I_NONE && j < n; j++) {
		o = &items[j];
		if (!o->used && o->m.kind == PPT_K_MEMBER &&
		    o->m.interval != PPT_I_NONE &&
		    o->m.interval != it->m.interval &&
		    o->m.type == it->m.type && o->m.counter == it->m.counter &&
		    o->pair == it->pair && strcmp(o->base, it->base) == 0)
			break;
	}
	if (it->m.interval != PPT_I_NONE && j < n) {
		o->used = true;
		col->interval = true;
		col->begin = (uint16_t)(it->m.interval == PPT_I_BEGIN ? i : j);
		col->end = (uint16_t)(it->m.interval == PPT_I_BEGIN ? j : i);
		if (it->m.counter >= 0)
			snprintf(col->name, sizeof(col->name), "%.58s[%c]",
				 it->base, '0' + it->m.counter % 10);
		else
			memcpy(col->name, it->base, sizeof(col->name));
	} else if (it->m.interval == PPT_I_NONE && it->m.counter >= 0) {
		snprintf(col->name, sizeof(col->name), "%.58s[%c]", it->m.name,
			 '0' + it->m.counter % 10);
	} else {
		memcpy(col->name, it->m.name, sizeof(col->name));
	}
}

/* Check the sorted items of one frame type; *offs gets the front, back
 * and discriminator offsets (UINT32_MAX: none) and *size the frame's. */
static bool desc_check(struct desc_parse *p, uint32_t n, uint32_t ntypes,
		       uint32_t offs[3], uint32_t *size)
{
	struct desc_item *items = p->items;
	unsigned count[3] = {0, 0, 0};
	uint32_t end = 0;

	offs[0] = offs[1] = offs[2] = UINT32_MAX;
	for (uint32_t i = 0; i < n; i++) {
		const struct ppt_member *m = &items[i].m;

		snprintf(p->member, sizeof(p->member), "member '%s'", m->name);
		if (i > 0 && m->offset < end)
			return desc_fail(
				p,
				"offset %" PRIu32 " (%" PRIu32
				" bytes) overlaps member '%s' "
				"(offset %" PRIu32 ", %" PRIu32 " bytes)",
				m->offset, m->size, items[i - 1].m.name,
				items[i - 1].m.offset, items[i - 1].m.size);
		end = m->offset + m->size;
		if (m->kind <= PPT_K_TYPE) {
			count[m->kind]++;
			offs[m->kind] = m->offset;
		}
		if (items[i].ntypes >= 0 && items[i].ntypes != ntypes)
			return desc_fail(p,
					 "counts %" PRId64 " frame types, the "
					 "description has %" PRIu32,
					 items[i].ntypes, ntypes);
	}
	p->member[0] = '\0';
	if (count[PPT_K_FRONT] != 1 || count[PPT_K_BACK] != 1)
		return desc_fail(p,
				 "has %u front and %u back seqnos, needs one "
				 "of each",
				 count[PPT_K_FRONT], count[PPT_K_BACK]);
	if (count[PPT_K_TYPE] > 1 || (ntypes > 1 && count[PPT_K_TYPE] != 1))
		return desc_fail(p,
				 "has %u type discriminators, needs %s (the "
				 "buffer has %" PRIu32 " frame types)",
				 count[PPT_K_TYPE],
				 ntypes > 1 ? "one" : "at most one", ntypes);
	*size = end;
	return true;
}

static bool desc_frame(struct desc_parse *p, const struct json_value *jf,
		       uint32_t t, uint32_t ntypes)
{
	struct ppt_desc *d = p->d;
	struct ppt_layout *l = &d->types[t];
	const struct json_value *name = desc_either(jf, "_flName", "name");
	const struct json_value *list = desc_either(jf, "_flLayout", "members");
	const char *why = desc_name_bad(name);
	uint32_t n, size = 0, offs[3];

	snprintf(p->frame, sizeof(p->frame), "frame type %" PRIu32, t + 1);
	p->member[0] = '\0';
	if (!jf || jf->type != JSON_OBJECT)
		return desc_fail(p, "is not an object");
	if (why)
		return desc_fail(p, "%s", why);
	memcpy(l->name, name->u.string, name->n + 1);
	snprintf(p->frame, sizeof(p->frame), "frame type '%s'", l->name);
	if (!list || list->type != JSON_ARRAY)
		return desc_fail(p,
				 "has no member list (_flLayout or members)");
	n = list->n;
	if (n > PPTDESC_MAX_MEMBERS)
		return desc_fail(p, "has %" PRIu32 " members, more than %d", n,
				 PPTDESC_MAX_MEMBERS);
	for (uint32_t i = 0; i < n; i++)
		if (!desc_member(p, json_at(list, i), i, &p->items[i]))
			return false;
	qsort(p->items, n, sizeof(*p->items), desc_by_offset);
	if (!desc_check(p, n, ntypes, offs, &size))
		return false;
	if (t == 0) {
		d->frame_size = size;
		d->front_off = offs[PPT_K_FRONT];
		d->back_off = offs[PPT_K_BACK];
		d->type_off = offs[PPT_K_TYPE];
	} else if (size != d->frame_size) {
		return desc_fail(p,
				 "is %" PRIu32 " bytes, '%s' is %" PRIu32
				 ": every type must have one size",
				 size, d->types[0].name, d->frame_size);
	} else if (offs[PPT_K_FRONT] != d->front_off ||
		   offs[PPT_K_BACK] != d->back_off ||
		   offs[PPT_K_TYPE] != d->type_off) {
		return desc_fail(p,
				 "has its seqnos or discriminator at other "
				 "offsets than '%s'",
				 d->types[0].name);
	}
	l->members = calloc(n, sizeof(*l->members));
	l->cols = calloc(n, sizeof(*l->cols));
	if (!l->members || !l->cols)
		return desc_fail(p, "out of memory");
	l->nmembers = n;
	for (uint32_t i = 0; i < n; i++)
		l->members[i] = p->items[i].m;
	for (uint32_t i = 0; i < n; i++)
		if (p->items[i].m.kind == PPT_K_MEMBER && !p->items[i].used)
			desc_column(p->items, n, i, &l->cols[l->ncols++]);
	return true;
}

enum pptdesc_status pptdesc_parse(const char *json, size_t len,
				  struct ppt_desc *d, char *err, size_t errlen)
{
	struct desc_parse p = {.d = d, .err = err, .errlen = errlen};
	enum pptdesc_status st = PPTDESC_BAD_LAYOUT;
	const struct json_value *root, *buf, *emit, *frames;
	struct json_doc *doc;
	char jerr[128], abi[sizeof(d->abi)];

	memset(d, 0, sizeof(*d));
	if (err && errlen)
		err[0] = '\0';
	doc = json_parse(json, len, NULL, jerr, sizeof(jerr));
	root = json_root(doc);
	if (!root || root->type != JSON_OBJECT) {
		desc_fail(&p, "the description is not a JSON object: %s",
			  doc ? "it is another value" : jerr);
		json_free(doc);
		return PPTDESC_BAD_JSON;
	}
	st = desc_abi(&p, root);
	if (st != PPTDESC_OK)
		goto out;
	st = PPTDESC_BAD_LAYOUT;
	buf = json_get(root, "buffer");
	emit = desc_in(root, buf, "emit");
	frames = desc_in(root, buf, "frames");
	if (!desc_buffer(&p, root, buf, emit))
		goto out;
	if (!frames || frames->type != JSON_ARRAY || frames->n == 0 ||
	    frames->n > PPTDESC_MAX_TYPES) {
		desc_fail(&p,
			  "the description has %" PRIu32 " frame types, "
			  "corotop reads 1..%d",
			  frames && frames->type == JSON_ARRAY ? frames->n : 0,
			  PPTDESC_MAX_TYPES);
		goto out;
	}
	d->types = calloc(frames->n, sizeof(*d->types));
	p.items = calloc(PPTDESC_MAX_MEMBERS, sizeof(*p.items));
	if (!d->types || !p.items) {
		desc_fail(&p, "out of memory");
		goto out;
	}
	d->ntypes = frames->n;
	for (uint32_t t = 0; t < frames->n; t++)
		if (!desc_frame(&p, json_at(frames, t), t, frames->n))
			goto out;
	st = PPTDESC_OK;
out:
	free(p.items);
	json_free(doc);
	if (st != PPTDESC_OK) {
		memcpy(abi, d->abi, sizeof(abi));
		pptdesc_finish(d);
		memcpy(d->abi, abi, sizeof(abi));
	}
	return st;
}

void pptdesc_finish(struct ppt_desc *d)
{
	if (!d)
		return;
	for (uint32_t t = 0; d->types && t < d->ntypes; t++) {
		free(d->types[t].members);
		free(d->types[t].cols);
	}
	free(d->types);
	memset(d, 0, sizeof(*d));
}
