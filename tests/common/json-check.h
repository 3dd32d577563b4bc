/*
 * json-check: one small strict JSON (RFC 8259) parser for the tests, so that
 * corotop's JSON output (batch "-f json" snapshots, the jsonl event log) is
 * checked by the grammar rather than by string matching, and without
 * depending on an interpreter being installed.  Used by the unit tests
 * (test-batch.c) and the end-to-end tests (test-e2e.c).
 *
 * Concept.  json_parse() accepts exactly one value spanning the whole text
 * (whitespace around it allowed) and builds a small tree.  Strict means:
 * no trailing garbage, no trailing commas, no unquoted keys, no duplicate
 * keys, no leading zeros, no NaN/Infinity/"+1"/"1."/"-", no raw control
 * characters in strings, only the standard escapes (\u with exactly four hex
 * digits; surrogates only as a valid high/low pair), valid UTF-8 only, and
 * at most JSON_MAX_DEPTH nested arrays/objects.  A rejected text reports why
 * (a fixed message) and where (the byte offset of the offending character),
 * and leaves an empty value behind, so json_free() is always safe.
 *
 * The tree: objects keep their key order; numbers keep their literal text
 * (so 64-bit integers compare exactly) next to a double; strings and keys
 * are decoded to UTF-8 (a string's length is kept, since "\u0000" is legal;
 * a key may not contain it).
 *
 * Lookups take a dotted path of object keys ("events.lost"): json_get()
 * returns NULL when a step is missing; json_need() fails the cmocka test on
 * a missing member or a wrong type; json_u64() on a number that is not an
 * unsigned integer or does not fit in 64 bits.  json_must_parse() fails the
 * test on invalid JSON, naming the reason and the byte offset.
 *
 * Everything is static inline: a test uses what it needs, unused functions
 * do not warn.
 */
#ifndef COROTOP_TEST_JSON_CHECK_H
#define COROTOP_TEST_JSON_CHECK_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define JSON_MAX_DEPTH 64

enum json_type { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	enum json_type t;
	bool b;	    /* J_BOOL */
	double num; /* J_NUM: the value (rounded, for big integers) */
	char *s;    /* J_STR: decoded, NUL-terminated; J_NUM: literal text */
	size_t len; /* J_STR/J_NUM: bytes in s, without the terminator */
	size_t n;   /* J_ARR/J_OBJ: member count */
	struct jv *items;
	char **keys; /* J_OBJ: n decoded keys, parallel to items */
};

/* Why and where json_parse() rejected a text. */
struct json_err {
	const char *why; /* a fixed message; NULL when the text was valid */
	size_t at;	 /* byte offset of the offending character */
};

struct json_parser {
	const char *p;
	const char *why;
	const char *at;
	int depth;
};

static inline const char *json_type_name(enum json_type t)
{
	static const char *const names[] = {"null",   "boolean", "number",
					    "string", "array",	 "object"};

	return (unsigned)t < sizeof(names) / sizeof(*names) ? names[t]
							    : "invalid";
}

static inline void json_free(struct jv *v)
{
	for (size_t i = 0; i < v->n; i++) {
		json_free(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->s);
	memset(v, 0, sizeof(*v));
}

/* Record the first failure (`at` is the offending character). */
static inline bool json_fail(struct json_parser *jp, const char *at,
			     const char *why)
{
	if (!jp->why) {
		jp->why = why;
		jp->at = at;
	}
	return false;
}

static inline void json_ws(struct json_parser *jp)
{
	while (*jp->p == ' ' || *jp->p == '\t' || *jp->p == '\n' ||
	       *jp->p == '\r')
		jp->p++;
}

static inline bool json_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline int json_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Four hex digits at jp->p (stops at the NUL terminator). */
static inline bool json_hex4(struct json_parser *jp, uint32_t *cp)
{
	*cp = 0;
	for (int i = 0; i < 4; i++) {
		int h = json_hex(jp->p[i]);

		if (h < 0)
			return false;
		*cp = *cp << 4 | (uint32_t)h;
	}
	jp->p += 4;
	return true;
}

/*
 * Length of the well-formed UTF-8 sequence (2 to 4 bytes) that starts with a
 * byte >= 0x80 at p, or 0: no overlong forms, no encoded surrogates, nothing
 * above U+10FFFF (RFC 3629, table 3-7 of the Unicode standard).
 */
static inline size_t json_utf8_len(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	unsigned char lo = 0x80, hi = 0xBF;
	size_t len;

	if (u[0] >= 0xC2 && u[0] <= 0xDF)
		len = 2;
	else if (u[0] >= 0xE0 && u[0] <= 0xEF)
		len = 3;
	else if (u[0] >= 0xF0 && u[0] <= 0xF4)
		len = 4;
	else
		return 0;
	if (u[0] == 0xE0)
		lo = 0xA0;
	else if (u[0] == 0xED)
		hi = 0x9F;
	else if (u[0] == 0xF0)
		lo = 0x90;
	else if (u[0] == 0xF4)
		hi = 0x8F;
	if (u[1] < lo || u[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (u[i] < 0x80 || u[i] > 0xBF)
			return 0;
	return len;
}

static inline size_t json_put_utf8(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | cp >> 12);
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | cp >> 18);
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* The \u escape whose backslash is at `at`; jp->p is past the 'u'. */
static inline bool json_unicode_escape(struct json_parser *jp, const char *at,
				       uint32_t *cp)
{
	uint32_t lo;

	if (!json_hex4(jp, cp))
		return json_fail(jp, at, "bad \\u escape (four hex digits)");
	if (*cp >= 0xDC00 && *cp <= 0xDFFF)
		return json_fail(jp, at, "unpaired low surrogate");
	if (*cp < 0xD800 || *cp > 0xDBFF)
		return true;
	if (jp->p[0] != '\\' || jp->p[1] != 'u')
		return json_fail(jp, at, "unpaired high surrogate");
	jp->p += 2;
	if (!json_hex4(jp, &lo))
		return json_fail(jp, jp->p - 2,
				 "bad \\u escape (four hex digits)");
	if (lo < 0xDC00 || lo > 0xDFFF)
		return json_fail(jp, at, "unpaired high surrogate");
	*cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
	return true;
}

/* A string at jp->p, decoded into a new buffer. */
static inline bool json_string(struct json_parser *jp, char **out,
			       size_t *outlen)
{
	size_t cap = 16, n = 0;
	char *s;

	if (*jp->p != '"')
		return json_fail(jp, jp->p, "expected a string");
	jp->p++;
	s = malloc(cap);
	if (!s)
		return json_fail(jp, jp->p, "out of memory");
	for (;;) {
		const char *at = jp->p;
		unsigned char c = (unsigned char)*jp->p;
		uint32_t cp;
		size_t k;

		if (n + 8 > cap) { /* room for any one step and the NUL */
			char *t = realloc(s, cap *= 2);

			if (!t) {
				free(s);
				return json_fail(jp, at, "out of memory");
			}
			s = t;
		}
		if (c == '\0') {
			free(s);
			return json_fail(jp, at, "unterminated string");
		}
		if (c < 0x20) {
			free(s);
			return json_fail(jp, at,
					 "raw control character in a string");
		}
		if (c >= 0x80) {
			k = json_utf8_len(jp->p);
			if (!k) {
				free(s);
				return json_fail(jp, at, "invalid UTF-8");
			}
			memcpy(&s[n], jp->p, k);
			n += k;
			jp->p += k;
			continue;
		}
		jp->p++;
		if (c == '"')
			break;
		if (c != '\\') {
			s[n++] = (char)c;
			continue;
		}
		c = (unsigned char)*jp->p;
		if (c)
			jp->p++;
		switch (c) {
		case '"':
		case '\\':
		case '/':
			s[n++] = (char)c;
			break;
		case 'b':
			s[n++] = '\b';
			break;
		case 'f':
			s[n++] = '\f';
			break;
		case 'n':
			s[n++] = '\n';
			break;
		case 'r':
			s[n++] = '\r';
			break;
		case 't':
			s[n++] = '\t';
			break;
		case 'u':
			if (!json_unicode_escape(jp, at, &cp)) {
				free(s);
				return false;
			}
			n += json_put_utf8(&s[n], cp);
			break;
		default:
			free(s);
			return json_fail(jp, at,
					 c ? "bad escape"
					   : "unterminated string");
		}
	}
	s[n] = '\0';
	*out = s;
	*outlen = n;
	return true;
}

static inline bool json_number(struct json_parser *jp, struct jv *v)
{
	const char *start = jp->p;
	size_t len;

	if (*jp->p == '-')
		jp->p++;
	if (*jp->p == '0') {
		jp->p++;
		if (json_digit(*jp->p))
			return json_fail(jp, start, "leading zero");
	} else if (*jp->p >= '1' && *jp->p <= '9') {
		while (json_digit(*jp->p))
			jp->p++;
	} else if (jp->p == start) {
		return json_fail(jp, start,
				 *start ? "unexpected character"
					: "unexpected end of text");
	} else {
		return json_fail(jp, jp->p, "bad number (digit expected)");
	}
	if (*jp->p == '.') {
		jp->p++;
		if (!json_digit(*jp->p))
			return json_fail(jp, jp->p,
					 "bad fraction (digit expected)");
		while (json_digit(*jp->p))
			jp->p++;
	}
	if (*jp->p == 'e' || *jp->p == 'E') {
		jp->p++;
		if (*jp->p == '+' || *jp->p == '-')
			jp->p++;
		if (!json_digit(*jp->p))
			return json_fail(jp, jp->p,
					 "bad exponent (digit expected)");
		while (json_digit(*jp->p))
			jp->p++;
	}
	len = (size_t)(jp->p - start);
	v->s = malloc(len + 1);
	if (!v->s)
		return json_fail(jp, start, "out of memory");
	memcpy(v->s, start, len);
	v->s[len] = '\0';
	v->len = len;
	v->t = J_NUM;
	v->num = strtod(v->s, NULL); /* the grammar is checked already */
	return true;
}

static inline bool json_value(struct json_parser *jp, struct jv *v);

/* Room for one more member; *cap is the capacity of items (and keys). */
static inline bool json_grow(struct json_parser *jp, struct jv *v, size_t *cap)
{
	size_t want = *cap ? *cap * 2 : 8;
	struct jv *items;

	if (v->n < *cap)
		return true;
	items = realloc(v->items, want * sizeof(*items));
	if (!items)
		return json_fail(jp, jp->p, "out of memory");
	v->items = items;
	if (v->t == J_OBJ) {
		char **keys = realloc(v->keys, want * sizeof(*keys));

		if (!keys)
			return json_fail(jp, jp->p, "out of memory");
		v->keys = keys;
	}
	*cap = want;
	return true;
}

/* An object member's key and ':'; *key is new on success. */
static inline bool json_key(struct json_parser *jp, const struct jv *v,
			    char **key)
{
	const char *at = jp->p;
	size_t len;

	if (*jp->p != '"')
		return json_fail(jp, at,
				 *jp->p ? "expected a quoted key"
					: "unexpected end of text");
	if (!json_string(jp, key, &len))
		return false;
	if (memchr(*key, '\0', len)) {
		free(*key);
		return json_fail(jp, at, "\\u0000 in a key (not supported)");
	}
	for (size_t i = 0; i < v->n; i++) {
		if (!strcmp(v->keys[i], *key)) {
			free(*key);
			return json_fail(jp, at, "duplicate key");
		}
	}
	json_ws(jp);
	if (*jp->p != ':') {
		free(*key);
		return json_fail(jp, jp->p, "expected ':'");
	}
	jp->p++;
	return true;
}

static inline bool json_container(struct json_parser *jp, struct jv *v)
{
	char close = *jp->p == '{' ? '}' : ']';
	size_t cap = 0;

	v->t = close == '}' ? J_OBJ : J_ARR;
	if (++jp->depth > JSON_MAX_DEPTH)
		return json_fail(jp, jp->p, "nested too deep");
	jp->p++;
	json_ws(jp);
	if (*jp->p == close) {
		jp->p++;
		jp->depth--;
		return true;
	}
	for (;;) {
		char *key = NULL;

		json_ws(jp);
		if (v->t == J_OBJ && !json_key(jp, v, &key))
			return false;
		if (!json_grow(jp, v, &cap)) {
			free(key);
			return false;
		}
		memset(&v->items[v->n], 0, sizeof(v->items[0]));
		if (v->t == J_OBJ)
			v->keys[v->n] = key;
		v->n++;
		if (!json_value(jp, &v->items[v->n - 1]))
			return false;
		json_ws(jp);
		if (*jp->p == ',') {
			jp->p++;
			json_ws(jp);
			if (*jp->p == close)
				return json_fail(jp, jp->p, "trailing comma");
			continue;
		}
		if (*jp->p == close) {
			jp->p++;
			jp->depth--;
			return true;
		}
		if (!*jp->p)
			return json_fail(jp, jp->p, "unexpected end of text");
		return json_fail(jp, jp->p,
				 close == '}' ? "expected ',' or '}'"
					      : "expected ',' or ']'");
	}
}

static inline bool json_literal(struct json_parser *jp, const char *word)
{
	size_t len = strlen(word);

	if (strncmp(jp->p, word, len))
		return json_fail(jp, jp->p, "bad literal");
	jp->p += len;
	return true;
}

static inline bool json_value(struct json_parser *jp, struct jv *v)
{
	json_ws(jp);
	switch (*jp->p) {
	case '{':
	case '[':
		return json_container(jp, v);
	case '"':
		v->t = J_STR;
		return json_string(jp, &v->s, &v->len);
	case 't':
		v->t = J_BOOL;
		v->b = true;
		return json_literal(jp, "true");
	case 'f':
		v->t = J_BOOL;
		return json_literal(jp, "false");
	case 'n':
		v->t = J_NULL;
		return json_literal(jp, "null");
	default:
		return json_number(jp, v);
	}
}

/*
 * Parse exactly one JSON value spanning all of `text` into *out.  On failure
 * *out is left empty (json_free() is still safe) and, when err is not NULL,
 * err says why and at which byte; on success err->why is NULL.
 */
static inline bool json_parse(const char *text, struct jv *out,
			      struct json_err *err)
{
	struct json_parser jp = {.p = text};
	bool ok;

	memset(out, 0, sizeof(*out));
	ok = json_value(&jp, out);
	if (ok) {
		json_ws(&jp);
		if (*jp.p)
			ok = json_fail(&jp, jp.p, "text after the value");
	}
	if (!ok)
		json_free(out);
	if (err) {
		err->why = ok ? NULL : jp.why;
		err->at = ok ? 0 : (size_t)(jp.at - text);
	}
	return ok;
}

/* Parse `text` or fail the test, naming the reason and the byte offset. */
static inline void json_must_parse(const char *text, struct jv *out)
{
	struct json_err err;

	if (!json_parse(text, out, &err))
		fail_msg("invalid JSON (%s at byte %zu): %s", err.why, err.at,
			 text);
}

/* Member by dotted path of object keys ("a.b.c"), or NULL. */
static inline const struct jv *json_get(const struct jv *v, const char *path)
{
	while (*path) {
		const char *dot = strchr(path, '.');
		size_t len = dot ? (size_t)(dot - path) : strlen(path);
		const struct jv *next = NULL;

		if (v->t != J_OBJ)
			return NULL;
		for (size_t i = 0; i < v->n && !next; i++)
			if (!strncmp(v->keys[i], path, len) &&
			    v->keys[i][len] == '\0')
				next = &v->items[i];
		if (!next)
			return NULL;
		v = next;
		path += len + (dot ? 1 : 0);
	}
	return v;
}

/* Member by dotted path with type t, or fail the test. */
static inline const struct jv *json_need(const struct jv *v, const char *path,
					 enum json_type t)
{
	const struct jv *m = json_get(v, path);

	if (!m) {
		if (v->t != J_OBJ)
			fail_msg("JSON key '%s' looked up in a %s", path,
				 json_type_name(v->t));
		fail_msg("JSON key '%s' missing", path);
		return NULL;
	}
	if (m->t != t)
		fail_msg("JSON key '%s' is a %s, expected a %s", path,
			 json_type_name(m->t), json_type_name(t));
	return m;
}

/* An integer literal without sign, fraction or exponent. */
static inline bool json_is_uint(const struct jv *v)
{
	return v->t == J_NUM && v->s[0] != '-' && !strpbrk(v->s, ".eE");
}

/* Member by dotted path as an exact unsigned 64-bit integer, or fail. */
static inline uint64_t json_u64(const struct jv *v, const char *path)
{
	const struct jv *m = json_need(v, path, J_NUM);
	unsigned long long u;

	if (!json_is_uint(m))
		fail_msg("JSON key '%s' is not an unsigned integer: %s", path,
			 m->s);
	errno = 0;
	u = strtoull(m->s, NULL, 10);
	if (errno == ERANGE)
		fail_msg("JSON key '%s' does not fit in 64 bits: %s", path,
			 m->s);
	return (uint64_t)u;
}

#endif
