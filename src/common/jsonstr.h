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
 * The probe, which may include only src/wire, keeps a copy for its ppt
 * descriptions (probe/pptlayout.c, jb_str).
 */
#ifndef COROTOP_JSONSTR_H
#define COROTOP_JSONSTR_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/utf8.h"

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
		if (c >= 0x80 && (u = utf8_len(p + i, len - i))) {
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
