/*
 * json_writer: JSON written as a stream of tokens, in the spirit of
 * bpftool's json_writer.  The caller says what comes next -- an object or
 * an array opens or closes, a key, a value -- and the writer puts the
 * commas and colons between them; it keeps no document, only where it
 * is: whether the current object or array has an element yet, and
 * whether a key waits for its value.  That is all a comma needs: a
 * closed container is always an element of its parent.
 *
 * Strings (keys included) follow the one escaping policy of every
 * corotop JSON output (common/jsonstr.h).  Integers are written in
 * decimal; a double takes its printf format explicitly, since the
 * outputs pin theirs ("%.1f", "%.17g"); a value with a shape of its own
 * (a quoted hex address, microseconds with three decimals) goes through
 * json_writer_valuef.  The output is compact: whitespace appears only
 * where the caller puts it (json_writer_break, json_writer_raw), so the
 * bytes are the same as the hand-written fprintf they replace.
 *
 * Tokens gather in a small buffer of the writer's and reach the FILE in
 * one fwrite when it fills, before a string that needs escaping, and at
 * json_writer_finish: one stdio call per token would make a 100k-row
 * batch snapshot several times slower than the fprintfs it replaces
 * (bench/json_snapshot).  Until json_writer_finish, the FILE may lack
 * the last bytes written.
 *
 * Nothing is checked at run time beyond the nesting depth in debug
 * builds (assert); the writer trusts its caller to pair begin and end.
 */
#ifndef COROTOP_JSON_WRITER_H
#define COROTOP_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_WRITER_BUF 1024

struct json_writer {
	FILE *f;
	unsigned depth; /* open objects and arrays */
	bool first;	/* the innermost one has no element yet */
	bool keyed;	/* a key was written: its value takes no comma */
	size_t len;	/* of buf, not yet written to f */
	char buf[JSON_WRITER_BUF];
};

/* Embedded: writes to f, which stays the caller's. */
void json_writer_init(struct json_writer *w, FILE *f);
/* Write what is buffered; every object and array closed (asserted);
 * nothing to free. */
void json_writer_finish(struct json_writer *w);

void json_writer_object_begin(struct json_writer *w);
void json_writer_object_end(struct json_writer *w);
void json_writer_array_begin(struct json_writer *w);
void json_writer_array_end(struct json_writer *w);

/* A key of the current object; the next call writes its value. */
void json_writer_key(struct json_writer *w, const char *key);
void json_writer_key_len(struct json_writer *w, const char *key, size_t len);

/* Values. */
void json_writer_string(struct json_writer *w, const char *s); /* NULL: "" */
void json_writer_string_len(struct json_writer *w, const char *s, size_t len);
void json_writer_uint(struct json_writer *w, uint64_t v);
void json_writer_int(struct json_writer *w, int64_t v);
void json_writer_double(struct json_writer *w, const char *fmt, double v);
/* v as printf's "%.<digits>f" writes it (an integral value, as most rates
 * and shares are, without a printf). */
void json_writer_fixed(struct json_writer *w, double v, unsigned digits);
void json_writer_bool(struct json_writer *w, bool v);
void json_writer_null(struct json_writer *w);
/* A string of `prefix` (written as it is: no quotes nor backslashes) and
 * v in lowercase hex, zero-padded to `width` digits (0: as few as v
 * needs): "0x%016" PRIx64 without a printf. */
void json_writer_hex(struct json_writer *w, const char *prefix, uint64_t v,
		     unsigned width);
/* A value formatted by the caller, written as it is (it must be JSON). */
void json_writer_valuef(struct json_writer *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Key and value in one call. */
void json_writer_string_field(struct json_writer *w, const char *key,
			      const char *s);
void json_writer_uint_field(struct json_writer *w, const char *key, uint64_t v);
void json_writer_int_field(struct json_writer *w, const char *key, int64_t v);
void json_writer_bool_field(struct json_writer *w, const char *key, bool v);
void json_writer_null_field(struct json_writer *w, const char *key);

/* The separator before the next element (a comma unless it is the
 * first), then `space` (whitespace): one element per line. */
void json_writer_break(struct json_writer *w, const char *space);
/* Whitespace between tokens, written as it is; no comma. */
void json_writer_raw(struct json_writer *w, const char *space);

#endif
