/*
 * utf8: the length of one well-formed UTF-8 sequence (RFC 3629), the one
 * test of UTF-8 the JSON writer (jsonstr.h) and the JSON parser
 * (jsonparse.c) share: no overlong forms, no encoded surrogates, nothing
 * past U+10FFFF, no sequence cut short.
 */
#ifndef COROTOP_UTF8_H
#define COROTOP_UTF8_H

#include <stddef.h>

/* The length (2 to 4) of the well-formed sequence at s (n bytes there,
 * s[0] >= 0x80), or 0 when s[0] does not start one. */
static inline size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len;

	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0; /* overlong */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates */
	else if (c == 0xf0)
		lo = 0x90; /* overlong */
	else if (c == 0xf4)
		hi = 0x8f; /* past U+10FFFF */
	if (len > n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

#endif
