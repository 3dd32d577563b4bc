/*
 * jsonparse: a strict RFC 8259 parser for text another process wrote (a ppt
 * buffer's description), into an immutable tree.
 *
 * Strict: exactly one value spanning the text (whitespace around it), no
 * trailing commas, no leading zeros, no NaN/Infinity/"+1"/"1."/".5", no byte
 * order mark, only the standard escapes (\u with four hex digits, a
 * surrogate only as a high/low pair, turned into UTF-8), no raw control
 * character and no invalid UTF-8 (overlong forms, encoded surrogates, past
 * U+10FFFF) in a string, no number that overflows a double (one that
 * underflows reads as 0 or a subnormal), no NUL in a key.  Duplicate keys are
 * kept; json_get finds the first.  A number written as an integer that fits
 * in int64 is also kept exactly (is_int, integer).
 *
 * Bounded: the text length, the nesting depth and the number of values are
 * checked against json_limits (a 0 field means its default), and a number
 * literal is at most JSON_NUMBER_MAX characters.  The parser does not
 * recurse: open containers live on an explicit stack of at most max_depth
 * entries, and their children on one scratch array until the container
 * closes, when they are copied into the tree.
 *
 * Memory: the tree lives in an arena of a few chunks, each at least twice
 * the previous (the first sized from the text), the json_doc itself in the
 * first; json_free frees the chunks.  The scratch array and the stack are
 * freed before json_parse returns.
 *
 * Errors name the byte offset where the text went wrong: "byte 17: expected
 * ':' after an object key".
 */
#define _GNU_SOURCE /* strtod_l, newlocale: numbers read in the C locale */
#include "common/jsonparse.h"

#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/utf8.h"

#define JSON_DEFAULT_BYTES ((size_t)1 << 20)
#define JSON_DEFAULT_DEPTH 64u
#define JSON_DEFAULT_VALUES ((size_t)200000)
#define JSON_NUMBER_MAX 512 /* characters in one number literal */
#define JSON_CHUNK_MIN ((size_t)4096)

struct json_chunk {
	struct json_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

struct json_doc {
	struct json_chunk *chunks;
	const struct json_value *root;
};

/* An open array or object, and the key of the member being read. */
struct json_open {
	struct json_value *v;
	size_t first; /* its first child in the scratch array */
	const char *key;
	size_t key_len;
};

struct json_parser {
	const unsigned char *s;
	size_t len, pos;
	struct json_limits lim;
	size_t nvalues;
	struct json_chunk *chunks;
	size_t next_chunk;
	struct json_member *scratch; /* children of the open containers */
	size_t nscratch, scratch_cap;
	struct json_open *stack;
	size_t depth;
	char *err;
	size_t errlen;
	bool failed; /* err holds the first error */
};

/* ---- arena ---------------------------------------------------------------*/

static void *json_alloc(struct json_parser *p, size_t size, size_t align)
{
	struct json_chunk *c = p->chunks;
	size_t at;

	if (c) {
		at = (c->used + align - 1) & ~(align - 1);
		if (at <= c->cap && size <= c->cap - at) {
			c->used = at + size;
			return (char *)c->data + at;
		}
	}
	if (size > SIZE_MAX / 2 - sizeof(*c))
		return NULL;
	if (p->next_chunk < size)
		p->next_chunk = size;
	c = malloc(sizeof(*c) + p->next_chunk);
	if (!c)
		return NULL;
	c->cap = p->next_chunk;
	c->used = size;
	c->next = p->chunks;
	p->chunks = c;
	if (p->next_chunk < SIZE_MAX / 4)
		p->next_chunk *= 2;
	return c->data;
}

static void json_free_chunks(struct json_chunk *c)
{
	while (c) {
		struct json_chunk *next = c->next;

		free(c);
		c = next;
	}
}

/* ---- errors --------------------------------------------------------------*/

/* Always returns false; only the first error is kept. */
static bool json_fail(struct json_parser *p, size_t at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->failed)
		return false;
	p->failed = true;
	n = snprintf(p->err, p->errlen, "byte %zu: ", at);
	if (n < 0 || (size_t)n >= p->errlen)
		return false;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}

static bool json_oom(struct json_parser *p)
{
	return json_fail(p, p->pos, "out of memory");
}

/* ---- scalars -------------------------------------------------------------*/

static void json_skip_ws(struct json_parser *p)
{
	while (p->pos < p->len) {
		unsigned char c = p->s[p->pos];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			return;
		p->pos++;
	}
}

/* A new value, starting at byte at. */
static struct json_value *json_new(struct json_parser *p, size_t at,
				   enum json_type t)
{
	struct json_value *v;

	if (p->nvalues >= p->lim.max_values) {
		json_fail(p, at, "more than %zu values", p->lim.max_values);
		return NULL;
	}
	v = json_alloc(p, sizeof(*v), _Alignof(struct json_value));
	if (!v) {
		json_oom(p);
		return NULL;
	}
	memset(v, 0, sizeof(*v));
	v->type = t;
	p->nvalues++;
	return v;
}

static int json_hex4(const unsigned char *s)
{
	int v = 0;

	for (int i = 0; i < 4; i++) {
		unsigned char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

static size_t json_put_utf8(unsigned char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xc0 | cp >> 6);
		o[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xe0 | cp >> 12);
		o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (unsigned char)(0xf0 | cp >> 18);
	o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The \u escape at s[i] (i < end, s[i] == 'u' after the backslash): its
 * code point, a surrogate pair joined; *used gets the bytes read after the
 * backslash.  -1 on error (reported). */
static long json_unicode(struct json_parser *p, size_t i, size_t end,
			 size_t *used)
{
	int hi, lo;

	if (end - i < 5 || (hi = json_hex4(p->s + i + 1)) < 0)
		return json_fail(p, i - 1, "\\u needs four hex digits"), -1;
	*used = 5;
	if (hi < 0xd800 || hi > 0xdfff)
		return hi;
	if (hi >= 0xdc00)
		return json_fail(p, i - 1, "lone low surrogate \\u%04X", hi),
		       -1;
	if (end - i < 11 || p->s[i + 5] != '\\' || p->s[i + 6] != 'u' ||
	    (lo = json_hex4(p->s + i + 7)) < 0xdc00 || lo > 0xdfff)
		return json_fail(p, i - 1,
				 "high surrogate \\u%04X without a low one",
				 hi),
		       -1;
	*used = 11;
	return 0x10000 + ((long)(hi - 0xd800) << 10) + (lo - 0xdc00);
}

/* Each escape letter, followed by the byte it stands for. */
static const char json_escapes[] = "\"\"\\\\//b\bf\fn\nr\rt\t";

/* The string whose opening quote is at p->pos, decoded into the arena. */
static bool json_string(struct json_parser *p, const char **out,
			size_t *out_len)
{
	size_t start = p->pos, i = p->pos + 1, end, n = 0;
	unsigned char *buf;

	/* Find the closing quote; the decoder below checks what is inside
	 * (no valid UTF-8 sequence contains a '"' byte). */
	for (end = i; end < p->len && p->s[end] != '"';)
		end += p->s[end] == '\\' ? 2 : 1;
	if (end >= p->len)
		return json_fail(p, start, "unterminated string");
	if (end - i > UINT32_MAX)
		return json_fail(p, start, "string longer than 4 GiB");
	buf = json_alloc(p, end - i + 1, 1);
	if (!buf)
		return json_oom(p);
	while (i < end) {
		unsigned char c = p->s[i];
		const char *esc;
		size_t k;
		long cp;

		if (c < 0x20)
			return json_fail(p, i,
					 "control character 0x%02x in a "
					 "string (write it as \\u%04x)",
					 c, c);
		if (c >= 0x80) {
			k = utf8_len(p->s + i, end - i);
			if (!k)
				return json_fail(p, i,
						 "invalid UTF-8 (byte 0x%02x) "
						 "in a string",
						 c);
			memcpy(buf + n, p->s + i, k);
			n += k;
			i += k;
			continue;
		}
		if (c != '\\') {
			buf[n++] = c;
			i++;
			continue;
		}
		/* A backslash before `end` is never the last byte before it:
		 * the scan above stepped over the byte it escapes. */
		c = p->s[++i];
		if (c == 'u') {
			cp = json_unicode(p, i, end, &k);
			if (cp < 0)
				return false;
			n += json_put_utf8(buf + n, (unsigned)cp);
			i += k;
			continue;
		}
		/* letters sit at even offsets; control bytes are no letter */
		esc = c >= 0x20 ? strchr(json_escapes, c) : NULL;
		if (!esc || (esc - json_escapes) % 2)
			return json_fail(p, i - 1, "invalid escape \\%c",
					 c > 0x20 && c < 0x7f ? c : '?');
		buf[n++] = (unsigned char)esc[1];
		i++;
	}
	buf[n] = '\0';
	*out = (const char *)buf;
	*out_len = n;
	p->pos = end + 1;
	return true;
}

static size_t json_digits(struct json_parser *p)
{
	size_t from = p->pos;

	while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
		p->pos++;
	return p->pos - from;
}

/* strtod in the C locale, whatever LC_NUMERIC the program set: the locale
 * object is made once (a lost race frees its copy) and never freed. */
static double json_strtod(const char *s)
{
	static _Atomic(locale_t) c_locale;
	/* acquire: pairs with the release of the compare-exchange below, so
	 * a locale seen is a locale fully made. */
	locale_t loc = atomic_load_explicit(&c_locale, memory_order_acquire);

	if (!loc) {
		locale_t mine = newlocale(LC_ALL_MASK, "C", (locale_t)0);
		locale_t none = (locale_t)0;

		if (!mine)
			return strtod(s, NULL);
		/* release: pairs with the acquire load above. */
		if (atomic_compare_exchange_strong_explicit(
			    &c_locale, &none, mine, memory_order_acq_rel,
			    memory_order_acquire)) {
			loc = mine;
		} else {
			freelocale(mine);
			loc = none;
		}
	}
	return strtod_l(s, NULL, loc);
}

static struct json_value *json_number(struct json_parser *p)
{
	size_t start = p->pos, len;
	bool integral = true, neg = false;
	char buf[JSON_NUMBER_MAX + 1];
	struct json_value *v;
	double d;

	if (p->s[p->pos] == '-') {
		neg = true;
		p->pos++;
	}
	if (p->pos < p->len && p->s[p->pos] == '0') {
		p->pos++;
		if (p->pos < p->len && p->s[p->pos] >= '0' &&
		    p->s[p->pos] <= '9')
			return json_fail(p, p->pos - 1,
					 "number with a leading zero"),
			       NULL;
	} else if (!json_digits(p)) {
		return json_fail(p, p->pos, "expected a digit after '-'"), NULL;
	}
	if (p->pos < p->len && p->s[p->pos] == '.') {
		integral = false;
		p->pos++;
		if (!json_digits(p))
			return json_fail(p, p->pos,
					 "expected a digit after "
					 "'.'"),
			       NULL;
	}
	if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
		integral = false;
		p->pos++;
		if (p->pos < p->len &&
		    (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
			p->pos++;
		if (!json_digits(p))
			return json_fail(p, p->pos,
					 "expected a digit in the exponent"),
			       NULL;
	}
	len = p->pos - start;
	if (len > JSON_NUMBER_MAX)
		return json_fail(p, start, "number longer than %d characters",
				 JSON_NUMBER_MAX),
		       NULL;
	memcpy(buf, p->s + start, len);
	buf[len] = '\0';
	d = json_strtod(buf);
	if (!isfinite(d))
		return json_fail(p, start, "number %.40s out of range", buf),
		       NULL;
	v = json_new(p, start, JSON_NUMBER);
	if (!v)
		return NULL;
	v->u.number = d;
	if (integral) {
		/* Exactly, digit by digit: the magnitude fits in uint64 or the
		 * number is not an int64. */
		uint64_t mag = 0,
			 lim = neg ? (uint64_t)INT64_MAX + 1 : INT64_MAX;
		bool fits = true;

		for (size_t i = neg; i < len && fits; i++) {
			unsigned dig = (unsigned)(buf[i] - '0');

			if (mag > (lim - dig) / 10)
				fits = false;
			else
				mag = mag * 10 + dig;
		}
		if (fits) {
			v->is_int = true;
			if (!neg)
				v->integer = (int64_t)mag;
			else if (mag > INT64_MAX)
				v->integer = INT64_MIN;
			else
				v->integer = -(int64_t)mag;
		}
	}
	return v;
}

static struct json_value *json_literal(struct json_parser *p)
{
	static const struct {
		const char *word;
		enum json_type type;
	} lits[] = {{"true", JSON_TRUE},
		    {"false", JSON_FALSE},
		    {"null", JSON_NULL}};

	for (size_t i = 0; i < sizeof(lits) / sizeof(lits[0]); i++) {
		size_t n = strlen(lits[i].word);

		if (p->len - p->pos >= n &&
		    memcmp(p->s + p->pos, lits[i].word, n) == 0) {
			p->pos += n;
			return json_new(p, p->pos - n, lits[i].type);
		}
	}
	return NULL;
}

/* ---- containers ----------------------------------------------------------*/

static bool json_push_child(struct json_parser *p, const char *key,
			    size_t key_len, const struct json_value *v)
{
	if (!grow_array((void **)&p->scratch, &p->scratch_cap, p->nscratch + 1,
			sizeof(*p->scratch)))
		return json_oom(p);
	p->scratch[p->nscratch].key = key;
	p->scratch[p->nscratch].key_len = key_len;
	p->scratch[p->nscratch].value = v;
	p->nscratch++;
	return true;
}

/* Copy the children of the innermost open container into the tree. */
static bool json_close(struct json_parser *p)
{
	struct json_open *o = &p->stack[p->depth - 1];
	size_t n = p->nscratch - o->first;
	/* (the scratch array is NULL until a first child is pushed) */
	const struct json_member *kids = n ? p->scratch + o->first : NULL;

	if (n > UINT32_MAX)
		return json_fail(p, p->pos, "more than 2^32 items");
	o->v->n = (uint32_t)n;
	if (o->v->type == JSON_OBJECT && n) {
		struct json_member *m = json_alloc(
			p, n * sizeof(*m), _Alignof(struct json_member));

		if (!m)
			return json_oom(p);
		memcpy(m, kids, n * sizeof(*m));
		o->v->u.members = m;
	} else if (n) {
		const struct json_value **items =
			json_alloc(p, n * sizeof(*items), _Alignof(void *));

		if (!items)
			return json_oom(p);
		for (size_t i = 0; i < n; i++)
			items[i] = kids[i].value;
		o->v->u.items = items;
	}
	p->nscratch = o->first;
	p->depth--;
	return true;
}

/* An object key and its ':', for the innermost open container. */
static bool json_key(struct json_parser *p)
{
	struct json_open *o = &p->stack[p->depth - 1];
	size_t at = p->pos;

	if (p->pos >= p->len || p->s[p->pos] != '"')
		return json_fail(p, p->pos, "expected a string key");
	if (!json_string(p, &o->key, &o->key_len))
		return false;
	if (memchr(o->key, '\0', o->key_len))
		return json_fail(p, at, "object key contains \\u0000");
	json_skip_ws(p);
	if (p->pos >= p->len || p->s[p->pos] != ':')
		return json_fail(p, p->pos, "expected ':' after an object key");
	p->pos++;
	return true;
}

/* Open an array or object at p->pos.  *v is set when it is empty (then
 * already closed). */
static bool json_open(struct json_parser *p, struct json_value **done)
{
	bool obj = p->s[p->pos] == '{';
	struct json_value *v;
	struct json_open *o;

	*done = NULL;
	if (p->depth >= p->lim.max_depth)
		return json_fail(p, p->pos, "nested deeper than %u",
				 p->lim.max_depth);
	v = json_new(p, p->pos, obj ? JSON_OBJECT : JSON_ARRAY);
	if (!v)
		return false;
	o = &p->stack[p->depth++];
	o->v = v;
	o->first = p->nscratch;
	o->key = NULL;
	o->key_len = 0;
	p->pos++;
	json_skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == (obj ? '}' : ']')) {
		p->pos++;
		*done = v;
		return json_close(p);
	}
	return obj ? json_key(p) : true;
}

static bool json_scalar(struct json_parser *p, struct json_value **out)
{
	unsigned char c = p->s[p->pos];

	if (c == '"') {
		const char *s;
		size_t n;
		struct json_value *v = json_new(p, p->pos, JSON_STRING);

		if (!v || !json_string(p, &s, &n))
			return false;
		v->u.string = s;
		v->n = (uint32_t)n;
		*out = v;
		return true;
	}
	if (c == '-' || (c >= '0' && c <= '9'))
		*out = json_number(p);
	else if (!(*out = json_literal(p)) && !p->failed)
		return json_fail(p, p->pos, "expected a value, found '%c'",
				 c >= 0x20 && c < 0x7f ? c : '?');
	return *out != NULL;
}

/* The parse loop: read a value (opening containers as they come), then hand
 * it to its container, closing containers while their end follows. */
static const struct json_value *json_run(struct json_parser *p)
{
	struct json_value *v;

	for (;;) {
		json_skip_ws(p);
		if (p->pos >= p->len)
			return json_fail(p, p->pos,
					 "expected a value, found the end"),
			       NULL;
		if (p->s[p->pos] == '[' || p->s[p->pos] == '{') {
			if (!json_open(p, &v))
				return NULL;
			if (!v)
				continue; /* read its first child */
		} else if (!json_scalar(p, &v)) {
			return NULL;
		}
		/* v is complete: attach it, and close what ends here. */
		for (;;) {
			struct json_open *o;
			unsigned char c;

			if (p->depth == 0)
				return v;
			o = &p->stack[p->depth - 1];
			if (!json_push_child(p, o->key, o->key_len, v))
				return NULL;
			json_skip_ws(p);
			c = p->pos < p->len ? p->s[p->pos] : 0;
			if (c == ',') {
				p->pos++;
				json_skip_ws(p);
				if (o->v->type == JSON_OBJECT && !json_key(p))
					return NULL;
				break;
			}
			if (c != (o->v->type == JSON_OBJECT ? '}' : ']'))
				return json_fail(p, p->pos,
						 o->v->type == JSON_OBJECT
							 ? "expected ',' or "
							   "'}' in an object"
							 : "expected ',' or "
							   "']' in an array"),
				       NULL;
			p->pos++;
			v = o->v;
			if (!json_close(p))
				return NULL;
		}
	}
}

struct json_doc *json_parse(const char *text, size_t len,
			    const struct json_limits *lim, char *err,
			    size_t errlen)
{
	char dummy[1] = "";
	struct json_parser p = {
		.s = (const unsigned char *)text,
		.len = len,
		.err = err && errlen ? err : dummy,
		.errlen = err && errlen ? errlen : sizeof(dummy),
	};
	const struct json_value *root = NULL;
	struct json_doc *doc;

	p.err[0] = '\0';
	p.lim.max_bytes =
		lim && lim->max_bytes ? lim->max_bytes : JSON_DEFAULT_BYTES;
	p.lim.max_depth =
		lim && lim->max_depth ? lim->max_depth : JSON_DEFAULT_DEPTH;
	p.lim.max_values =
		lim && lim->max_values ? lim->max_values : JSON_DEFAULT_VALUES;
	if (!text && len)
		return json_fail(&p, 0, "no text"), NULL;
	if (len > p.lim.max_bytes)
		return json_fail(&p, p.lim.max_bytes,
				 "text longer than the limit of %zu bytes",
				 p.lim.max_bytes),
		       NULL;
	/* Room for a typical tree in the first chunk: the text's length in
	 * strings plus a value per few bytes. */
	p.next_chunk = len < ((size_t)1 << 26) ? 3 * len + JSON_CHUNK_MIN
					       : (size_t)1 << 28;
	doc = json_alloc(&p, sizeof(*doc), _Alignof(struct json_doc));
	/* Never deeper than one container per byte. */
	if (doc) {
		size_t nstack = p.lim.max_depth < len ? p.lim.max_depth : len;

		p.stack = malloc((nstack + 1) * sizeof(*p.stack));
	}
	if (!doc || !p.stack)
		json_oom(&p);
	else
		root = json_run(&p);
	if (root) {
		json_skip_ws(&p);
		if (p.pos < p.len) {
			json_fail(&p, p.pos,
				  "unexpected bytes after the value");
			root = NULL;
		}
	}
	free(p.scratch);
	free(p.stack);
	if (!root) {
		json_free_chunks(p.chunks);
		return NULL;
	}
	doc->chunks = p.chunks;
	doc->root = root;
	return doc;
}

void json_free(struct json_doc *doc)
{
	if (doc)
		json_free_chunks(doc->chunks);
}

const struct json_value *json_root(const struct json_doc *doc)
{
	return doc ? doc->root : NULL;
}

const struct json_value *json_get(const struct json_value *v, const char *key)
{
	if (!v || v->type != JSON_OBJECT || !key)
		return NULL;
	for (uint32_t i = 0; i < v->n; i++)
		if (strcmp(v->u.members[i].key, key) == 0)
			return v->u.members[i].value;
	return NULL;
}

const struct json_value *json_at(const struct json_value *v, size_t i)
{
	if (!v || v->type != JSON_ARRAY || i >= v->n)
		return NULL;
	return v->u.items[i];
}

const char *json_str(const struct json_value *v)
{
	return v && v->type == JSON_STRING ? v->u.string : NULL;
}

bool json_int(const struct json_value *v, int64_t lo, int64_t hi, int64_t *out)
{
	if (!v || v->type != JSON_NUMBER || !v->is_int || v->integer < lo ||
	    v->integer > hi)
		return false;
	if (out)
		*out = v->integer;
	return true;
}
