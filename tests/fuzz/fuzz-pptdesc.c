/*
 * fuzz-pptdesc: the JSON parser and the ppt description reader against
 * text a hostile or broken program can put behind _ppt_json_NAME.
 *
 * Each input is used twice:
 *   - as raw text, for json_parse (with limits taken from the input, so the
 *     depth and value limits are reached) and pptdesc_parse;
 *   - as a list of edits to a valid description (the demo buffer of
 *     tests/common/pptdesc-demo.h, in either spelling): byte overwrites,
 *     deletions, insertions of tokens that matter (numbers at the edges,
 *     escapes), numbers and strings swapped for others (offsets, sizes,
 *     seqno, kind and interval tags, names), array elements (members,
 *     frames, tags) duplicated or removed -- one to four edits, most of
 *     which keep the text JSON, so that inputs reach the layout checks and
 *     not only the tokenizer.
 * Neither may crash, leak or read outside the text, and:
 *   - an accepted JSON tree is well formed: finite numbers, is_int only
 *     where the integer is the number, NUL-terminated valid UTF-8 strings of
 *     the stated length, keys without NUL, within the depth and value
 *     limits;
 *   - an accepted description satisfies every invariant the decoder relies
 *     on (fuzz_check_desc); a refused one holds nothing (types NULL), and
 *     its message is printable ASCII.
 *
 * Built as a libFuzzer target with clang (-Dfuzz=true) and, always, with
 * tests/fuzz/driver.c, which replays a seeded pseudo-random corpus.
 */
#define _POSIX_C_SOURCE 200809L /* strnlen */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonparse.h"
#include "engine/ppt/pptdesc.h"
#include "pptdesc-demo.h"

#define FUZZ_TEXT_MAX (64u << 10)

#define FUZZ_ASSERT(c)                                                         \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "fuzz-pptdesc: %s:%d: %s\n", __FILE__, \
				__LINE__, #c);                                 \
			abort();                                               \
		}                                                              \
	} while (0)

/* ---- JSON tree -----------------------------------------------------------*/

/* Well-formed UTF-8, checked independently of json.c. */
static bool fuzz_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t len;

		if (s[i] < 0x80) {
			i++;
			continue;
		}
		if ((s[i] & 0xe0) == 0xc0)
			len = 2, cp = s[i] & 0x1f;
		else if ((s[i] & 0xf0) == 0xe0)
			len = 3, cp = s[i] & 0x0f;
		else if ((s[i] & 0xf8) == 0xf0)
			len = 4, cp = s[i] & 0x07;
		else
			return false;
		if (n - i < len)
			return false;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
		    (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

/* Returns the number of values under v (v included). */
static size_t fuzz_check_value(const struct json_value *v, unsigned depth,
			       unsigned max_depth)
{
	size_t count = 1;

	FUZZ_ASSERT(v != NULL);
	switch (v->type) {
	case JSON_NULL:
	case JSON_FALSE:
	case JSON_TRUE:
		break;
	case JSON_NUMBER:
		FUZZ_ASSERT(isfinite(v->u.number));
		if (v->is_int)
			FUZZ_ASSERT((double)v->integer == v->u.number);
		break;
	case JSON_STRING:
		FUZZ_ASSERT(v->u.string[v->n] == '\0');
		FUZZ_ASSERT(
			fuzz_utf8((const unsigned char *)v->u.string, v->n));
		FUZZ_ASSERT(json_str(v) == v->u.string);
		break;
	case JSON_ARRAY:
		FUZZ_ASSERT(depth < max_depth);
		for (uint32_t i = 0; i < v->n; i++) {
			FUZZ_ASSERT(json_at(v, i) == v->u.items[i]);
			count += fuzz_check_value(v->u.items[i], depth + 1,
						  max_depth);
		}
		FUZZ_ASSERT(json_at(v, v->n) == NULL);
		break;
	case JSON_OBJECT:
		FUZZ_ASSERT(depth < max_depth);
		for (uint32_t i = 0; i < v->n; i++) {
			const struct json_member *m = &v->u.members[i];

			FUZZ_ASSERT(strlen(m->key) == m->key_len);
			FUZZ_ASSERT(fuzz_utf8((const unsigned char *)m->key,
					      m->key_len));
			/* json_get finds the first of duplicate keys */
			FUZZ_ASSERT(json_get(v, m->key) != NULL);
			count += fuzz_check_value(m->value, depth + 1,
						  max_depth);
		}
		break;
	default:
		FUZZ_ASSERT(!"json type");
	}
	return count;
}

static void fuzz_check_err(const char *err, size_t errlen)
{
	size_t n = strnlen(err, errlen);

	FUZZ_ASSERT(n > 0 && n < errlen);
	for (size_t i = 0; i < n; i++)
		if (err[i] < 0x20 || err[i] >= 0x7f) {
			fprintf(stderr, "fuzz-pptdesc: byte 0x%02x in \"%s\"\n",
				(unsigned char)err[i], err);
			abort();
		}
}

static void fuzz_json(const char *text, size_t len,
		      const struct json_limits *lim)
{
	char err[128];
	struct json_doc *doc = json_parse(text, len, lim, err, sizeof(err));
	unsigned max_depth = lim && lim->max_depth ? lim->max_depth : 64;
	size_t max_values = lim && lim->max_values ? lim->max_values : 200000;

	if (!doc) {
		fuzz_check_err(err, sizeof(err));
		FUZZ_ASSERT(strncmp(err, "byte ", 5) == 0);
		return;
	}
	FUZZ_ASSERT(fuzz_check_value(json_root(doc), 0, max_depth) <=
		    max_values);
	json_free(doc);
}

/* ---- descriptions --------------------------------------------------------*/

static bool fuzz_name_ok(const char *s, bool empty_ok)
{
	size_t n = strnlen(s, PPTDESC_NAME_MAX);

	if (n == PPTDESC_NAME_MAX || (n == 0 && !empty_ok))
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

static void fuzz_check_layout(const struct ppt_desc *d,
			      const struct ppt_layout *l)
{
	static const uint32_t size_of[] = {4, 1, 4, 8, 16, 8};
	uint8_t covered[PPTDESC_MAX_MEMBERS];
	unsigned fronts = 0, backs = 0, types = 0;
	uint32_t end = 0, last_col = 0;

	FUZZ_ASSERT(fuzz_name_ok(l->name, false));
	FUZZ_ASSERT(l->nmembers >= 2 && l->nmembers <= PPTDESC_MAX_MEMBERS);
	FUZZ_ASSERT(l->members != NULL && l->cols != NULL);
	memset(covered, 0, sizeof(covered));
	for (uint32_t i = 0; i < l->nmembers; i++) {
		const struct ppt_member *m = &l->members[i];

		FUZZ_ASSERT(fuzz_name_ok(m->name, false));
		FUZZ_ASSERT(m->type <= PPT_T_COUNTER);
		FUZZ_ASSERT(m->kind <= PPT_K_PADDING);
		FUZZ_ASSERT(m->interval <= PPT_I_END);
		FUZZ_ASSERT(m->size >= 1);
		FUZZ_ASSERT(m->offset >= end); /* sorted, no overlap */
		end = m->offset + m->size;
		FUZZ_ASSERT(end <= d->frame_size);
		if (m->type == PPT_T_COUNTER)
			FUZZ_ASSERT(m->counter >= 0 &&
				    (uint32_t)m->counter < d->counter_count);
		else
			FUZZ_ASSERT(m->counter == -1);
		if (m->interval != PPT_I_NONE)
			FUZZ_ASSERT(m->kind == PPT_K_MEMBER);
		switch (m->kind) {
		case PPT_K_FRONT:
			fronts++;
			FUZZ_ASSERT(m->offset == d->front_off);
			break;
		case PPT_K_BACK:
			backs++;
			FUZZ_ASSERT(m->offset == d->back_off);
			break;
		case PPT_K_TYPE:
			types++;
			FUZZ_ASSERT(m->offset == d->type_off);
			break;
		case PPT_K_MEMBER:
			FUZZ_ASSERT(m->size == size_of[m->type]);
			break;
		case PPT_K_PADDING:
			break;
		}
		if (m->kind <= PPT_K_TYPE)
			FUZZ_ASSERT(m->type == PPT_T_INT && m->size == 4);
	}
	FUZZ_ASSERT(end == d->frame_size);
	FUZZ_ASSERT(fronts == 1 && backs == 1);
	FUZZ_ASSERT(types == (d->type_off == UINT32_MAX ? 0u : 1u));

	FUZZ_ASSERT(l->ncols <= l->nmembers);
	for (uint32_t c = 0; c < l->ncols; c++) {
		const struct ppt_column *col = &l->cols[c];
		const struct ppt_member *b, *e;
		uint32_t first;

		FUZZ_ASSERT(fuzz_name_ok(col->name, false));
		FUZZ_ASSERT(col->begin < l->nmembers && col->end < l->nmembers);
		b = &l->members[col->begin];
		e = &l->members[col->end];
		FUZZ_ASSERT(b->kind == PPT_K_MEMBER && e->kind == PPT_K_MEMBER);
		FUZZ_ASSERT(col->type == b->type && col->type == e->type);
		if (col->interval) {
			FUZZ_ASSERT(col->begin != col->end);
			FUZZ_ASSERT(b->interval == PPT_I_BEGIN);
			FUZZ_ASSERT(e->interval == PPT_I_END);
			FUZZ_ASSERT(b->counter == e->counter);
		} else {
			FUZZ_ASSERT(col->begin == col->end);
		}
		covered[col->begin]++;
		if (col->end != col->begin)
			covered[col->end]++;
		/* columns in the order of their first member */
		first = col->begin < col->end ? col->begin : col->end;
		FUZZ_ASSERT(c == 0 || first > last_col);
		last_col = first;
	}
	/* every member in exactly one column, nothing else in any */
	for (uint32_t i = 0; i < l->nmembers; i++)
		FUZZ_ASSERT(covered[i] ==
			    (l->members[i].kind == PPT_K_MEMBER ? 1 : 0));
}

static void fuzz_check_desc(const struct ppt_desc *d)
{
	FUZZ_ASSERT(strnlen(d->abi, sizeof(d->abi)) < sizeof(d->abi));
	FUZZ_ASSERT(d->abi[0] == '1' && d->abi[1] == '.');
	FUZZ_ASSERT(fuzz_name_ok(d->name, true));
	FUZZ_ASSERT(d->ntypes >= 1 && d->ntypes <= PPTDESC_MAX_TYPES);
	FUZZ_ASSERT(d->types != NULL);
	FUZZ_ASSERT(d->counter_count >= 1 && d->counter_count <= 3);
	FUZZ_ASSERT(d->frame_size >= 8 && d->frame_size <= PPTDESC_MAX_FRAME);
	FUZZ_ASSERT(d->front_off <= d->frame_size - 4);
	FUZZ_ASSERT(d->back_off <= d->frame_size - 4);
	FUZZ_ASSERT(d->front_off != d->back_off);
	if (d->ntypes > 1)
		FUZZ_ASSERT(d->type_off != UINT32_MAX);
	if (d->type_off != UINT32_MAX)
		FUZZ_ASSERT(d->type_off <= d->frame_size - 4);
	for (uint32_t t = 0; t < d->ntypes; t++)
		fuzz_check_layout(d, &d->types[t]);
}

static void fuzz_desc(const char *text, size_t len)
{
	struct ppt_desc d;
	char err[256];
	enum pptdesc_status st = pptdesc_parse(text, len, &d, err, sizeof(err));

	if (st == PPTDESC_OK) {
		fuzz_check_desc(&d);
	} else {
		FUZZ_ASSERT(st == PPTDESC_BAD_JSON ||
			    st == PPTDESC_ABI_MISMATCH ||
			    st == PPTDESC_BAD_LAYOUT);
		FUZZ_ASSERT(d.types == NULL && d.ntypes == 0);
		fuzz_check_err(err, sizeof(err));
	}
	pptdesc_finish(&d);
}

/* ---- edits ---------------------------------------------------------------*/

/* The first FUZZ_NNUMBERS are numbers. */
static const char *const fuzz_tokens[] = {
	"0",
	"-1",
	"1.5",
	"4",
	"8",
	"16",
	"64",
	"65535",
	"65536",
	"1e9",
	"1000000000",
	"9223372036854775808",
	"-0",
	"null",
	"true",
	"\"\"",
	"[]",
	"{}",
	",",
	":",
	"\"",
	"\\u0000",
	"\\u001b",
	"\\uD800",
	"\"x\"",
	"\"FrontSeq\"",
	"\"BackSeq\"",
	"\"LKTypeDescrim\"",
	"\"IntBegin\"",
	"\"IntEnd\"",
	"\"PCounter\"",
	"_start",
	"_end",
	"2.0.0",
	"\"resize\"",
	"\"tag\"",
	"\"contents\"",
	"[0,null]",
	"3",
};
#define FUZZ_NTOKENS (sizeof(fuzz_tokens) / sizeof(fuzz_tokens[0]))
#define FUZZ_NNUMBERS 13

/* String contents: the tags and names the reader looks for. */
static const char *const fuzz_strings[] = {
	"FrontSeq",   "BackSeq",     "LKTypeDescrim",
	"LKPadding",  "LKMember",    "LKSeqno",
	"IntBegin",   "IntEnd",	     "PCounter",
	"PTime",      "PIntegral",   "PRational",
	"PPInt",      "PPByte",	     "PPFloat",
	"work_start", "work_end",    "cost_1_start",
	"cost_2_end", "cost",	     "member",
	"padding",    "front_seqno", "back_seqno",
	"type",	      "begin",	     "end",
	"counter",    "time",	     "int",
	"byte",	      "double",	     "",
	"\\u001b",    "resize",	     "on",
	"ETimeVal",   "1.0.0",	     "2.0.0",
	"1.0",	      "_lOffset",    "_lSize",
	"offset",     "size",	     "tCounterCount",
};
#define FUZZ_NSTRINGS (sizeof(fuzz_strings) / sizeof(fuzz_strings[0]))

struct fuzz_text {
	char s[FUZZ_TEXT_MAX];
	size_t n;
};

static void fuzz_insert(struct fuzz_text *t, size_t at, const char *s, size_t n)
{
	if (at > t->n || n > sizeof(t->s) - t->n)
		return;
	memmove(t->s + at + n, t->s + at, t->n - at);
	memcpy(t->s + at, s, n);
	t->n += n;
}

static void fuzz_delete(struct fuzz_text *t, size_t at, size_t n)
{
	if (at >= t->n)
		return;
	if (n > t->n - at)
		n = t->n - at;
	memmove(t->s + at, t->s + at + n, t->n - at - n);
	t->n -= n;
}

/* The array element object at or after `at` (a '{' after '[' or ',', which
 * in JSON only starts an array element): [*b, *e). */
static bool fuzz_element(const struct fuzz_text *t, size_t at, size_t *b,
			 size_t *e)
{
	int depth = 0;

	while (at < t->n && !(t->s[at] == '{' && at > 0 &&
			      (t->s[at - 1] == '[' || t->s[at - 1] == ',')))
		at++;
	*b = at;
	for (; at < t->n; at++) {
		depth += t->s[at] == '{';
		depth -= t->s[at] == '}';
		if (depth == 0) {
			*e = at + 1;
			return true;
		}
	}
	return false;
}

/* The contents of the k-th string (mod their count): [*b, *e). */
static bool fuzz_string(const struct fuzz_text *t, size_t k, size_t *b,
			size_t *e)
{
	size_t count = 0, open = 0;
	bool in = false;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < t->n; i++) {
			if (t->s[i] == '\\' && in) {
				i++;
			} else if (t->s[i] == '"') {
				in = !in;
				if (in) {
					open = i + 1;
				} else if (pass == 1 && count-- == 0) {
					*b = open;
					*e = i;
					return true;
				} else if (pass == 0) {
					count++;
				}
			}
		}
		if (count == 0)
			return false;
		count = k % count;
		in = false;
	}
	return false;
}

static void fuzz_edit(struct fuzz_text *t, const uint8_t *op)
{
	size_t pos = t->n ? ((size_t)op[1] << 8 | op[2]) % t->n : 0;
	const char *tok = fuzz_tokens[op[3] % FUZZ_NTOKENS];
	size_t b, e;

	switch (op[0] % 32) {
	case 0: /* overwrite a byte */
		if (t->n)
			t->s[pos] = (char)op[3];
		break;
	case 1: /* delete a few bytes */
		fuzz_delete(t, pos, op[3] % 8 + 1u);
		break;
	case 2: /* insert a token */
		fuzz_insert(t, pos, tok, strlen(tok));
		break;
	case 3: /* a structural character */
		if (t->n)
			t->s[pos] = "{}[],:\"\\ 0"[op[3] % 10];
		break;
	case 4: /* a number for another */
	case 5:
	case 6:
	case 7:
	case 8:
	case 9:
	case 10:
	case 11:
		while (pos < t->n && (t->s[pos] < '0' || t->s[pos] > '9'))
			pos++;
		b = pos;
		while (pos < t->n && t->s[pos] >= '0' && t->s[pos] <= '9')
			pos++;
		if (b == t->n)
			break;
		fuzz_delete(t, b, pos - b);
		tok = fuzz_tokens[op[3] % FUZZ_NNUMBERS];
		fuzz_insert(t, b, tok, strlen(tok));
		break;
	case 12: /* duplicate an element (a member, a frame, a tag) */
	case 13:
	case 14:
	case 15:
		if (fuzz_element(t, pos, &b, &e) && e - b < 4096) {
			char copy[4097];

			copy[0] = ',';
			memcpy(copy + 1, t->s + b, e - b);
			fuzz_insert(t, e, copy, e - b + 1);
		}
		break;
	case 16: /* remove an element and a comma next to it */
	case 17:
	case 18:
		if (!fuzz_element(t, pos, &b, &e))
			break;
		if (e < t->n && t->s[e] == ',')
			e++;
		else if (t->s[b - 1] == ',')
			b--;
		fuzz_delete(t, b, e - b);
		break;
	default: /* a string for another */
		if (fuzz_string(t, pos, &b, &e)) {
			tok = fuzz_strings[op[3] % FUZZ_NSTRINGS];
			fuzz_delete(t, b, e - b);
			fuzz_insert(t, b, tok, strlen(tok));
		}
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fuzz_text t;
	struct json_limits lim = {0};
	const char *seed;

	/* As raw text, with the defaults and with small limits. */
	fuzz_json((const char *)data, size, NULL);
	if (size > 2) {
		lim.max_depth = data[0] % 8;
		lim.max_values = data[1] % 64;
		lim.max_bytes = size - data[2] % 3;
		fuzz_json((const char *)data, size, &lim);
	}
	fuzz_desc((const char *)data, size);

	/* As edits to a valid description. */
	seed = size && (data[0] & 0x80) ? pptdesc_demo_plain
					: pptdesc_demo_generator;
	t.n = strlen(seed);
	memcpy(t.s, seed, t.n);
	for (size_t i = 1, k = 0; i + 4 <= size && k < (data[0] & 3u) + 1;
	     i += 4, k++)
		fuzz_edit(&t, data + i);
	fuzz_json(t.s, t.n, NULL);
	fuzz_desc(t.s, t.n);
	return 0;
}
