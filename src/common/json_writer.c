/*
 * json_writer: commas and nesting for the JSON outputs (json_writer.h
 * has the concept).  Each value first writes what separates it from the
 * one before: nothing after a key or at the start of a container, a
 * comma otherwise.
 */
#include "common/json_writer.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "common/jsonstr.h"

void json_writer_init(struct json_writer *w, FILE *f)
{
	w->f = f;
	w->depth = 0;
	w->first = true;
	w->keyed = false;
	w->len = 0;
}

static void json_writer_flush(struct json_writer *w)
{
	if (w->len)
		fwrite(w->buf, 1, w->len, w->f);
	w->len = 0;
}

void json_writer_finish(struct json_writer *w)
{
	assert(w->depth == 0 && !w->keyed);
	json_writer_flush(w);
	w->f = NULL;
}

static void json_writer_put(struct json_writer *w, const char *s, size_t n)
{
	if (n > sizeof(w->buf) - w->len) {
		json_writer_flush(w);
		if (n > sizeof(w->buf)) {
			fwrite(s, 1, n, w->f);
			return;
		}
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
}

static void json_writer_putc(struct json_writer *w, char c)
{
	if (w->len == sizeof(w->buf))
		json_writer_flush(w);
	w->buf[w->len++] = c;
}

/* s[0..len) as a JSON string: printable ASCII without quotes or
 * backslashes is written as it is (what jsonstr_write would write);
 * anything else by jsonstr_write itself, the one policy. */
static void json_writer_text(struct json_writer *w, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len && p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' &&
	       p[i] != '\\')
		i++;
	if (i < len) {
		json_writer_flush(w);
		jsonstr_write(w->f, s, len);
		return;
	}
	json_writer_putc(w, '"');
	json_writer_put(w, s, len);
	json_writer_putc(w, '"');
}

/* Before a value or a key: a comma unless it opens its container (or
 * follows its key, or a break already wrote one). */
static void json_writer_sep(struct json_writer *w)
{
	if (w->keyed)
		w->keyed = false;
	else if (!w->first)
		json_writer_putc(w, ',');
	w->first = false;
}

static void json_writer_open(struct json_writer *w, char c)
{
	json_writer_sep(w);
	json_writer_putc(w, c);
	w->depth++;
	w->first = true;
}

static void json_writer_close(struct json_writer *w, char c)
{
	assert(w->depth > 0 && !w->keyed);
	json_writer_putc(w, c);
	w->depth--;
	w->first = false; /* the closed one was an element of its parent */
}

/* printf into the buffer (the FILE when it does not fit). */
static void json_writer_vprintf(struct json_writer *w, const char *fmt,
				va_list ap)
{
	va_list again;
	int n;

	va_copy(again, ap);
	n = vsnprintf(w->buf + w->len, sizeof(w->buf) - w->len, fmt, ap);
	if (n >= 0 && (size_t)n < sizeof(w->buf) - w->len) {
		w->len += (size_t)n;
	} else if (n >= 0) {
		json_writer_flush(w);
		vfprintf(w->f, fmt, again);
	}
	va_end(again);
}

static void json_writer_printf(struct json_writer *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	json_writer_vprintf(w, fmt, ap);
	va_end(ap);
}

void json_writer_object_begin(struct json_writer *w)
{
	json_writer_open(w, '{');
}

void json_writer_object_end(struct json_writer *w)
{
	json_writer_close(w, '}');
}

void json_writer_array_begin(struct json_writer *w)
{
	json_writer_open(w, '[');
}

void json_writer_array_end(struct json_writer *w)
{
	json_writer_close(w, ']');
}

void json_writer_key_len(struct json_writer *w, const char *key, size_t len)
{
	assert(w->depth > 0 && !w->keyed);
	json_writer_sep(w);
	json_writer_text(w, key, len);
	json_writer_putc(w, ':');
	w->keyed = true;
}

void json_writer_key(struct json_writer *w, const char *key)
{
	json_writer_key_len(w, key, strlen(key));
}

void json_writer_string_len(struct json_writer *w, const char *s, size_t len)
{
	json_writer_sep(w);
	json_writer_text(w, s, len);
}

void json_writer_string(struct json_writer *w, const char *s)
{
	json_writer_sep(w);
	json_writer_text(w, s ? s : "", s ? strlen(s) : 0);
}

void json_writer_uint(struct json_writer *w, uint64_t v)
{
	char d[20], *p = d + sizeof(d);

	json_writer_sep(w);
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	json_writer_put(w, p, (size_t)(d + sizeof(d) - p));
}

void json_writer_hex(struct json_writer *w, const char *prefix, uint64_t v,
		     unsigned width)
{
	char d[16], *p = d + sizeof(d);

	json_writer_sep(w);
	json_writer_putc(w, '"');
	json_writer_put(w, prefix, strlen(prefix));
	do
		*--p = "0123456789abcdef"[v & 15];
	while (v >>= 4);
	for (size_t n = (size_t)(d + sizeof(d) - p); n < width; n++)
		json_writer_putc(w, '0');
	json_writer_put(w, p, (size_t)(d + sizeof(d) - p));
	json_writer_putc(w, '"');
}

void json_writer_int(struct json_writer *w, int64_t v)
{
	json_writer_sep(w);
	json_writer_printf(w, "%" PRId64, v);
}

void json_writer_double(struct json_writer *w, const char *fmt, double v)
{
	json_writer_sep(w);
	json_writer_printf(w, fmt, v);
}

void json_writer_fixed(struct json_writer *w, double v, unsigned digits)
{
	double a = v < 0 ? -v : v;
	char d[20], *p = d + sizeof(d);
	uint64_t u;

	/* Not integral (or not a number, or too large): printf's. */
	if (!(a < 1e15) || (double)(u = (uint64_t)a) != a) {
		json_writer_sep(w);
		json_writer_printf(w, "%.*f", (int)digits, v);
		return;
	}
	/* Its digits, a point and zeros: what %.Nf writes for an integral
	 * value, "-0.0" for minus zero included. */
	json_writer_sep(w);
	if (signbit(v))
		json_writer_putc(w, '-');
	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	json_writer_put(w, p, (size_t)(d + sizeof(d) - p));
	if (digits)
		json_writer_putc(w, '.');
	for (unsigned k = 0; k < digits; k++)
		json_writer_putc(w, '0');
}

void json_writer_bool(struct json_writer *w, bool v)
{
	json_writer_sep(w);
	if (v)
		json_writer_put(w, "true", 4);
	else
		json_writer_put(w, "false", 5);
}

void json_writer_null(struct json_writer *w)
{
	json_writer_sep(w);
	json_writer_put(w, "null", 4);
}

void json_writer_valuef(struct json_writer *w, const char *fmt, ...)
{
	va_list ap;

	json_writer_sep(w);
	va_start(ap, fmt);
	json_writer_vprintf(w, fmt, ap);
	va_end(ap);
}

void json_writer_string_field(struct json_writer *w, const char *key,
			      const char *s)
{
	json_writer_key(w, key);
	json_writer_string(w, s);
}

void json_writer_uint_field(struct json_writer *w, const char *key, uint64_t v)
{
	json_writer_key(w, key);
	json_writer_uint(w, v);
}

void json_writer_int_field(struct json_writer *w, const char *key, int64_t v)
{
	json_writer_key(w, key);
	json_writer_int(w, v);
}

void json_writer_bool_field(struct json_writer *w, const char *key, bool v)
{
	json_writer_key(w, key);
	json_writer_bool(w, v);
}

void json_writer_null_field(struct json_writer *w, const char *key)
{
	json_writer_key(w, key);
	json_writer_null(w);
}

void json_writer_break(struct json_writer *w, const char *space)
{
	assert(!w->keyed);
	if (!w->first)
		json_writer_putc(w, ',');
	json_writer_put(w, space, strlen(space));
	w->first = true; /* the comma is written: the element takes none */
}

void json_writer_raw(struct json_writer *w, const char *space)
{
	json_writer_put(w, space, strlen(space));
}
