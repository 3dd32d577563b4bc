/*
 * json-check: a small strict RFC 8259 parser for the tests.  Objects keep
 * their key order, numbers keep their text (so 64-bit values compare
 * exactly), strings are decoded.  jparse() accepts exactly one value
 * spanning the whole text; jget() fails the test on a missing key or a
 * wrong type.
 */
#ifndef COROTOP_TEST_JSON_CHECK_H
#define COROTOP_TEST_JSON_CHECK_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- parser ---- */

enum jt { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	enum jt t;
	bool b;
	char *s; /* J_STR: decoded; J_NUM: raw text */
	size_t n;
	struct jv *v; /* J_ARR/J_OBJ: n children */
	char **k;     /* J_OBJ: n keys */
};

struct jp {
	const char *p;
	bool bad;
};

static void jws(struct jp *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
		j->p++;
}

static int jhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static char *jstring(struct jp *j)
{
	size_t cap = 16, n = 0;
	char *out = malloc(cap);

	j->p++; /* opening quote */
	for (;;) {
		unsigned char c = (unsigned char)*j->p++;
		unsigned cp = 0;

		if (n + 8 > cap)
			out = realloc(out, cap *= 2);
		if (c == '"')
			break;
		if (c < 0x20) { /* includes the terminating NUL */
			j->bad = true;
			j->p--;
			break;
		}
		if (c != '\\') {
			out[n++] = (char)c;
			continue;
		}
		c = (unsigned char)*j->p++;
		switch (c) {
		case '"':
		case '\\':
		case '/':
			out[n++] = (char)c;
			continue;
		case 'b':
			out[n++] = '\b';
			continue;
		case 'f':
			out[n++] = '\f';
			continue;
		case 'n':
			out[n++] = '\n';
			continue;
		case 'r':
			out[n++] = '\r';
			continue;
		case 't':
			out[n++] = '\t';
			continue;
		case 'u':
			for (int i = 0; i < 4; i++) {
				int h = jhex(*j->p);

				if (h < 0) {
					j->bad = true;
					out[n] = '\0';
					return out;
				}
				cp = cp * 16 + (unsigned)h;
				j->p++;
			}
			if (cp >= 0xD800 && cp < 0xE000) { /* no surrogates */
				j->bad = true;
				break;
			}
			if (cp < 0x80) {
				out[n++] = (char)cp;
			} else if (cp < 0x800) {
				out[n++] = (char)(0xC0 | cp >> 6);
				out[n++] = (char)(0x80 | (cp & 0x3F));
			} else {
				out[n++] = (char)(0xE0 | cp >> 12);
				out[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
				out[n++] = (char)(0x80 | (cp & 0x3F));
			}
			continue;
		default:
			j->bad = true;
			j->p--;
			break;
		}
		break;
	}
	out[n] = '\0';
	return out;
}

static void jnumber(struct jp *j, struct jv *v)
{
	const char *s = j->p;

	if (*j->p == '-')
		j->p++;
	if (*j->p == '0')
		j->p++;
	else if (*j->p >= '1' && *j->p <= '9')
		while (*j->p >= '0' && *j->p <= '9')
			j->p++;
	else
		j->bad = true;
	if (*j->p == '.') {
		j->p++;
		if (!(*j->p >= '0' && *j->p <= '9'))
			j->bad = true;
		while (*j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if (*j->p == 'e' || *j->p == 'E') {
		j->p++;
		if (*j->p == '+' || *j->p == '-')
			j->p++;
		if (!(*j->p >= '0' && *j->p <= '9'))
			j->bad = true;
		while (*j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	v->t = J_NUM;
	v->s = strndup(s, (size_t)(j->p - s));
}

static void jvalue(struct jp *j, struct jv *v, int depth)
{
	memset(v, 0, sizeof(*v));
	jws(j);
	if (depth > 32 || j->bad) {
		j->bad = true;
		return;
	}
	if (*j->p == '{' || *j->p == '[') {
		bool obj = *j->p++ == '{';
		char close = obj ? '}' : ']';

		v->t = obj ? J_OBJ : J_ARR;
		jws(j);
		if (*j->p == close) {
			j->p++;
			return;
		}
		for (;;) {
			v->v = realloc(v->v, (v->n + 1) * sizeof(*v->v));
			v->k = realloc(v->k, (v->n + 1) * sizeof(*v->k));
			v->k[v->n] = NULL;
			if (obj) {
				jws(j);
				if (*j->p != '"') {
					j->bad = true;
					v->v[v->n++] = (struct jv){0};
					return;
				}
				v->k[v->n] = jstring(j);
				for (size_t i = 0; i < v->n; i++)
					if (!strcmp(v->k[i], v->k[v->n]))
						j->bad = true; /* duplicate */
				jws(j);
				if (*j->p++ != ':')
					j->bad = true;
			}
			jvalue(j, &v->v[v->n++], depth + 1);
			jws(j);
			if (*j->p == ',') {
				j->p++;
				continue;
			}
			if (*j->p++ != close)
				j->bad = true;
			return;
		}
	}
	if (*j->p == '"') {
		v->t = J_STR;
		v->s = jstring(j);
	} else if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "false", 5)) {
		v->t = J_BOOL;
		v->b = *j->p == 't';
		j->p += v->b ? 4 : 5;
	} else if (!strncmp(j->p, "null", 4)) {
		v->t = J_NULL;
		j->p += 4;
	} else {
		jnumber(j, v);
	}
}

static void jfree(struct jv *v)
{
	for (size_t i = 0; i < v->n; i++) {
		jfree(&v->v[i]);
		if (v->k)
			free(v->k[i]);
	}
	free(v->v);
	free(v->k);
	free(v->s);
}

/* Parse exactly one JSON value spanning all of `text`; false if invalid. */
static bool jparse(const char *text, struct jv *out)
{
	struct jp j = {text, false};

	jvalue(&j, out, 0);
	jws(&j);
	return !j.bad && *j.p == '\0';
}

static const struct jv *jget(const struct jv *o, const char *key, enum jt type)
{
	if (o->t != J_OBJ)
		fail_msg("'%s' looked up in a non-object", key);
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->k[i], key)) {
			if (o->v[i].t != type)
				fail_msg("key '%s' has type %d, want %d", key,
					 o->v[i].t, type);
			return &o->v[i];
		}
	fail_msg("missing key '%s'", key);
	return NULL;
}

static uint64_t ju64(const struct jv *o, const char *key)
{
	return strtoull(jget(o, key, J_NUM)->s, NULL, 10);
}

#endif
