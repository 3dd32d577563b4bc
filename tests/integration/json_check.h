/*
 * json_check: a small strict JSON (RFC 8259) parser for the e2e tests, so
 * that corotop's "-f json" lines are checked by the grammar, not by string
 * matching, and without depending on an interpreter being installed.
 *
 * Strict means: exactly one value per text (whitespace around it allowed),
 * no trailing commas, no leading zeros, no NaN/Infinity, no raw control
 * characters in strings, only the standard escapes with four hex digits for
 * \u, no duplicate keys in an object, nesting at most 64 deep.  The result is
 * a small tree with dotted-path lookup (json_get(v, "events.lost")).
 */
#ifndef COROTOP_JSON_CHECK_H
#define COROTOP_JSON_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum json_type { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	enum json_type t;
	bool b;
	double num;
	char *s;  /* J_STR: decoded (UTF-8 escapes kept raw); J_NUM: text */
	size_t n; /* J_ARR/J_OBJ: element count */
	struct jv *items;
	char **keys; /* J_OBJ */
};

struct json_parser {
	const char *p;
	const char *err;
	int depth;
};

static void json_free(struct jv *v)
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

static void json_ws(struct json_parser *jp)
{
	while (*jp->p == ' ' || *jp->p == '\t' || *jp->p == '\n' ||
	       *jp->p == '\r')
		jp->p++;
}

static bool json_fail(struct json_parser *jp, const char *why)
{
	if (!jp->err)
		jp->err = why;
	return false;
}

static int json_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool json_string(struct json_parser *jp, char **out)
{
	size_t cap = 16, n = 0;
	char *s;

	if (*jp->p != '"')
		return json_fail(jp, "expected a string");
	jp->p++;
	s = malloc(cap);
	if (!s)
		return json_fail(jp, "out of memory");
	for (;;) {
		unsigned char c = (unsigned char)*jp->p;

		if (n + 8 > cap) {
			char *t = realloc(s, cap *= 2);

			if (!t) {
				free(s);
				return json_fail(jp, "out of memory");
			}
			s = t;
		}
		if (c == '\0') {
			free(s);
			return json_fail(jp, "unterminated string");
		}
		if (c < 0x20) {
			free(s);
			return json_fail(jp, "control character in string");
		}
		jp->p++;
		if (c == '"')
			break;
		if (c != '\\') {
			s[n++] = (char)c;
			continue;
		}
		c = (unsigned char)*jp->p++;
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
			for (int i = 0; i < 4; i++) {
				if (json_hex(jp->p[i]) < 0) {
					free(s);
					return json_fail(jp, "bad \\u escape");
				}
			}
			/* Kept raw: the tests never look inside. */
			s[n++] = '\\';
			s[n++] = 'u';
			memcpy(&s[n], jp->p, 4);
			n += 4;
			jp->p += 4;
			break;
		default:
			free(s);
			return json_fail(jp, "bad escape");
		}
	}
	s[n] = '\0';
	*out = s;
	return true;
}

static bool json_number(struct json_parser *jp, struct jv *v)
{
	const char *start = jp->p;
	char *end;

	if (*jp->p == '-')
		jp->p++;
	if (*jp->p == '0') {
		jp->p++;
	} else if (*jp->p >= '1' && *jp->p <= '9') {
		while (*jp->p >= '0' && *jp->p <= '9')
			jp->p++;
	} else {
		return json_fail(jp, "bad number");
	}
	if (*jp->p == '.') {
		jp->p++;
		if (!(*jp->p >= '0' && *jp->p <= '9'))
			return json_fail(jp, "bad fraction");
		while (*jp->p >= '0' && *jp->p <= '9')
			jp->p++;
	}
	if (*jp->p == 'e' || *jp->p == 'E') {
		jp->p++;
		if (*jp->p == '+' || *jp->p == '-')
			jp->p++;
		if (!(*jp->p >= '0' && *jp->p <= '9'))
			return json_fail(jp, "bad exponent");
		while (*jp->p >= '0' && *jp->p <= '9')
			jp->p++;
	}
	v->t = J_NUM;
	v->s = strndup(start, (size_t)(jp->p - start));
	if (!v->s)
		return json_fail(jp, "out of memory");
	v->num = strtod(v->s, &end);
	return true;
}

static bool json_value(struct json_parser *jp, struct jv *v);

static bool json_push(struct json_parser *jp, struct jv *v, size_t *cap)
{
	if (v->n < *cap)
		return true;
	*cap = *cap ? *cap * 2 : 8;
	v->items = realloc(v->items, *cap * sizeof(*v->items));
	if (v->t == J_OBJ)
		v->keys = realloc(v->keys, *cap * sizeof(*v->keys));
	if (!v->items || (v->t == J_OBJ && !v->keys))
		return json_fail(jp, "out of memory");
	return true;
}

static bool json_container(struct json_parser *jp, struct jv *v, char close)
{
	size_t cap = 0;

	v->t = close == '}' ? J_OBJ : J_ARR;
	if (++jp->depth > 64)
		return json_fail(jp, "nested too deep");
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
		if (v->t == J_OBJ) {
			if (!json_string(jp, &key))
				return false;
			for (size_t i = 0; i < v->n; i++) {
				if (!strcmp(v->keys[i], key)) {
					free(key);
					return json_fail(jp, "duplicate key");
				}
			}
			json_ws(jp);
			if (*jp->p != ':') {
				free(key);
				return json_fail(jp, "expected ':'");
			}
			jp->p++;
		}
		if (!json_push(jp, v, &cap)) {
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
				return json_fail(jp, "trailing comma");
			continue;
		}
		if (*jp->p == close) {
			jp->p++;
			jp->depth--;
			return true;
		}
		return json_fail(jp, "expected ',' or a closing bracket");
	}
}

static bool json_value(struct json_parser *jp, struct jv *v)
{
	json_ws(jp);
	switch (*jp->p) {
	case '{':
		return json_container(jp, v, '}');
	case '[':
		return json_container(jp, v, ']');
	case '"':
		v->t = J_STR;
		return json_string(jp, &v->s);
	case 't':
		if (strncmp(jp->p, "true", 4))
			return json_fail(jp, "bad literal");
		jp->p += 4;
		v->t = J_BOOL;
		v->b = true;
		return true;
	case 'f':
		if (strncmp(jp->p, "false", 5))
			return json_fail(jp, "bad literal");
		jp->p += 5;
		v->t = J_BOOL;
		return true;
	case 'n':
		if (strncmp(jp->p, "null", 4))
			return json_fail(jp, "bad literal");
		jp->p += 4;
		v->t = J_NULL;
		return true;
	default:
		return json_number(jp, v);
	}
}

/* Parse exactly one JSON value from text.  On failure *where is set. */
static bool json_parse(const char *text, struct jv *out, const char **why,
		       size_t *where)
{
	struct json_parser jp = {.p = text};
	bool ok;

	memset(out, 0, sizeof(*out));
	ok = json_value(&jp, out);
	if (ok) {
		json_ws(&jp);
		if (*jp.p)
			ok = json_fail(&jp, "text after the value");
	}
	if (!ok) {
		*why = jp.err;
		*where = (size_t)(jp.p - text);
		json_free(out);
	}
	return ok;
}

/* Member by dotted path ("a.b.c"), or NULL. */
static const struct jv *json_get(const struct jv *v, const char *path)
{
	char key[128];

	while (*path) {
		const char *dot = strchr(path, '.');
		size_t len = dot ? (size_t)(dot - path) : strlen(path);
		const struct jv *next = NULL;

		if (v->t != J_OBJ || len >= sizeof(key))
			return NULL;
		memcpy(key, path, len);
		key[len] = '\0';
		for (size_t i = 0; i < v->n; i++)
			if (!strcmp(v->keys[i], key))
				next = &v->items[i];
		if (!next)
			return NULL;
		v = next;
		path += len + (dot ? 1 : 0);
	}
	return v;
}

#endif
