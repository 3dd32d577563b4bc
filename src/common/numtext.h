/*
 * numtext: unsigned integers as text without printf, for the cells that
 * are formatted 100k times per refresh (filtering, the table).  Each
 * writes at most n-1 characters plus the terminator and returns the length
 * written; a number that does not fit yields "" rather than a truncated,
 * wrong number.
 */
#ifndef COROTOP_NUMTEXT_H
#define COROTOP_NUMTEXT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline size_t numtext_put(char *b, size_t n, const char *digits,
				 size_t len)
{
	if (!n)
		return 0;
	if (len >= n)
		len = 0;
	memcpy(b, digits, len);
	b[len] = '\0';
	return len;
}

/* Decimal. */
static inline size_t numtext_dec(char *b, size_t n, uint64_t v)
{
	char tmp[20];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return numtext_put(b, n, tmp + i, sizeof(tmp) - i);
}

/* Lowercase hex, no prefix. */
static inline size_t numtext_hex(char *b, size_t n, uint64_t v)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[16];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = hex[v & 15];
		v >>= 4;
	} while (v);
	return numtext_put(b, n, tmp + i, sizeof(tmp) - i);
}

#endif
