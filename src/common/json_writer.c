/*
 * json_writer: commas and nesting for the JSON outputs (json_writer.h
 * has the concept).  Each value first writes what separates it from the
 * one before: nothing after a key or at the start of a container, a
 * comma otherwise.
 */
#include "common/json_writer.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>

#include "common/jsonstr.h"

void json_writer_init(struct json_writer *w, FILE *f)
{
	*w = (struct json_writer){.f = f, .first = true};
}

void json_writer_finish(struct json_writer *w)
{
	assert(w->depth == 0 && !w->keyed);
	w->f = NULL;
}

/* Before a value or a key: a comma unless it opens its container (or
 * follows its key, or a break already wrote one). */
static void json_writer_sep(struct json_writer *w)
{
	if (w->keyed)
		w->keyed = false;
	else if (!w->first)
		fputc(',', w->f);
	w->first = false;
}

static void json_writer_open(struct json_writer *w, int c)
{
	json_writer_sep(w);
	fputc(c, w->f);
	w->depth++;
	w->first = true;
}

static void json_writer_close(struct json_writer *w, int c)
{
	assert(w->depth > 0 && !w->keyed);
	fputc(c, w->f);
	w->depth--;
	w->first = false; /* the closed one was an element of its parent */
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
	jsonstr_write(w->f, key, len);
	fputc(':', w->f);
	w->keyed = true;
}

void json_writer_key(struct json_writer *w, const char *key)
{
	json_writer_key_len(w, key, strlen(key));
}

void json_writer_string_len(struct json_writer *w, const char *s, size_t len)
{
	json_writer_sep(w);
	jsonstr_write(w->f, s, len);
}

void json_writer_string(struct json_writer *w, const char *s)
{
	json_writer_sep(w);
	jsonstr_write_cstr(w->f, s);
}

void json_writer_uint(struct json_writer *w, uint64_t v)
{
	json_writer_sep(w);
	fprintf(w->f, "%" PRIu64, v);
}

void json_writer_int(struct json_writer *w, int64_t v)
{
	json_writer_sep(w);
	fprintf(w->f, "%" PRId64, v);
}

void json_writer_double(struct json_writer *w, const char *fmt, double v)
{
	json_writer_sep(w);
	fprintf(w->f, fmt, v);
}

void json_writer_bool(struct json_writer *w, bool v)
{
	json_writer_sep(w);
	fputs(v ? "true" : "false", w->f);
}

void json_writer_null(struct json_writer *w)
{
	json_writer_sep(w);
	fputs("null", w->f);
}

void json_writer_valuef(struct json_writer *w, const char *fmt, ...)
{
	va_list ap;

	json_writer_sep(w);
	va_start(ap, fmt);
	vfprintf(w->f, fmt, ap);
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
		fputc(',', w->f);
	fputs(space, w->f);
	w->first = true; /* the comma is written: the element takes none */
}

void json_writer_raw(struct json_writer *w, const char *space)
{
	fputs(space, w->f);
}
