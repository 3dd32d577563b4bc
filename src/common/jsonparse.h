/*
 * jsonparse: a strict, bounded JSON (RFC 8259) parser into an immutable tree,
 * for untrusted text (ppt descriptions read from another process).  See json.c.
 *
 * Bounded: the text length, the nesting depth and the number of values are
 * limited (json_limits); a text over any limit, malformed, with a
 * control character in a string, a lone surrogate, trailing bytes or a
 * number out of range is an error whose message names the byte offset.
 * Duplicate keys are allowed; json_get returns the first.
 */
#ifndef COROTOP_JSON_H
#define COROTOP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum json_type {
	JSON_NULL = 0,
	JSON_FALSE,
	JSON_TRUE,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
};

struct json_value;

struct json_member {
	const char *key; /* NUL-terminated, UTF-8 (may contain "\u0000"? no:
			    a key with a NUL is an error) */
	size_t key_len;
	const struct json_value *value;
};

struct json_value {
	enum json_type type;
	uint32_t n; /* array items, object members, string bytes */
	union {
		double number;
		const char *string; /* NUL-terminated copy, n bytes */
		const struct json_value *const *items;
		const struct json_member *members;
	} u;
	/* JSON_NUMBER written as an integer (no '.', 'e') that fits. */
	bool is_int;
	int64_t integer;
};

struct json_limits {
	size_t max_bytes;   /* default 1 MiB */
	unsigned max_depth; /* default 64 */
	size_t max_values;  /* default 200,000 */
};

struct json_doc;

/* NULL with a message such as "byte 17: expected ':'" in err.  lim NULL:
 * the defaults.  text need not be NUL-terminated. */
struct json_doc *json_parse(const char *text, size_t len,
			    const struct json_limits *lim, char *err,
			    size_t errlen);
void json_free(struct json_doc *doc);
const struct json_value *json_root(const struct json_doc *doc);

/* Member `key` of an object, or NULL (also when v is not an object). */
const struct json_value *json_get(const struct json_value *v, const char *key);
/* Item i of an array, or NULL. */
const struct json_value *json_at(const struct json_value *v, size_t i);
/* The string, or NULL when v is not a string. */
const char *json_str(const struct json_value *v);
/* An integer number within [lo, hi] into *out; false otherwise. */
bool json_int(const struct json_value *v, int64_t lo, int64_t hi, int64_t *out);

#endif
