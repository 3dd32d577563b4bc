/*
 * fuzzin: a fuzz input read as a stream of numbers, for the targets that
 * build their own structures from it.  Big-endian; past the end every
 * byte reads as 0, so any input, however short, drives a whole run.
 */
#ifndef COROTOP_FUZZIN_H
#define COROTOP_FUZZIN_H

#include <stddef.h>
#include <stdint.h>

struct fz_in {
	const uint8_t *d;
	size_t n, pos;
};

static inline uint8_t fz_u8(struct fz_in *in)
{
	return in->pos < in->n ? in->d[in->pos++] : 0;
}

static inline uint64_t fz_uint(struct fz_in *in, int bytes)
{
	uint64_t v = 0;

	for (int i = 0; i < bytes; i++)
		v = v << 8 | fz_u8(in);
	return v;
}

static inline uint16_t fz_u16(struct fz_in *in)
{
	return (uint16_t)fz_uint(in, 2);
}

static inline uint32_t fz_u32(struct fz_in *in)
{
	return (uint32_t)fz_uint(in, 4);
}

static inline uint64_t fz_u64(struct fz_in *in)
{
	return fz_uint(in, 8);
}

#endif
