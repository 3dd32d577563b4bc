/*
 * jsonstr: bytes written as one JSON string, with the one policy every
 * JSON, JSONL and Chrome output of corotop follows (batch snapshots,
 * --list-buffers, the Cacheray report, speedscope, corotop convert):
 *
 *   - valid UTF-8 passes verbatim (a name "Grüße" stays "Grüße");
 *   - a byte that does not start a whole, shortest, in-range sequence (a
 *     stray continuation byte like 0x9b, an overlong form, a surrogate, a
 *     code point past U+10FFFF, a sequence cut short) becomes U+FFFD, one
 *     per byte, and the bytes after it are read afresh;
 *   - '"' and '\' are escaped, and so are the control characters
 *     (U+0000-U+001F, U+007F) as \u00XX.
 *
 * The names come from other programs' files and memory: whatever they
 * hold, the output parses as JSON and says the same thing every time.
 */
#ifndef COROTOP_JSONSTR_H
#define COROTOP_JSONSTR_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at p[0..n) (1 to 4), or 0 when
 * p[0] does not start one.  p[0] is 0x80 or above. */
static inline size_t jsonstr_utf8_len(const unsigned char *p, size_t n)
{
	unsigned c = p[0], cp;
	size_t need = c >= 0xf0 && c <= 0xf4   ? 3
		      : c >= 0xe0 && c <= 0xef ? 2
		      : c >= 0xc2 && c <= 0xdf ? 1
					       : 0;

	if (!need || need >= n)
		return 0;
	cp = need == 3 ? c & 7 : need == 2 ? c & 15 : c & 31;
	for (size_t k = 1; k <= need; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[k] & 0x3f);
	}
	if ((need == 2 && cp < 0x800) ||
	    (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return need + 1;
}

/* s[0..len) as a JSON string, quotes included. */
static inline void jsonstr_write(FILE *f, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0; /* p[run..i) is still to be written as is */

	fputc('"', f);
	while (i < len) {
		unsigned c = p[i];
		size_t u;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			i++;
			continue;
		}
		if (c >= 0x80 && (u = jsonstr_utf8_len(p + i, len - i))) {
			i += u;
			continue;
		}
		fwrite(p + run, 1, i - run, f);
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", (int)c);
		else if (c < 0x80)
			fprintf(f, "\\u%04x", c);
		else
			fputs("\\ufffd", f);
		run = ++i;
	}
	fwrite(p + run, 1, i - run, f);
	fputc('"', f);
}

/* A NUL-terminated string (NULL: ""). */
static inline void jsonstr_write_cstr(FILE *f, const char *s)
{
	jsonstr_write(f, s ? s : "", s ? strlen(s) : 0);
}

#endif
