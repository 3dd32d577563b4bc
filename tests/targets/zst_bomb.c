/*
 * zst-bomb OUT BYTES: a compressed Heph trace built to hurt a reader -- a
 * decompression bomb of about BYTES bytes.  Written from the Heph and zstd
 * specifications alone (docs/../specs/heph-trace-format.md), not with
 * corotop's encoder.
 *
 * Each zstd frame holds 4 MiB of minimal "running" event packets (no
 * attributes), nearly all alike, with enough noise that the frame's
 * content stays under 512 times its compressed size: the per-frame cap a
 * reader has (hephzst.c) lets every frame through, and frames are many.
 * Prints the compressed and decompressed sizes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define FRAME (4u << 20)
#define PACKET 49u     /* 42 bytes of header fields, "running" */
#define RATIO_MAX 480u /* under the reader's 512 */
#define RATIO_MIN 300u

static void be32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static void be64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (56 - 8 * i));
}

/* One frame's packets: alike but every `every`-th, whose start is noise. */
static size_t fill(uint8_t *buf, unsigned every, uint64_t *rng)
{
	size_t n = 0;

	for (uint32_t k = 0; n + PACKET <= FRAME; k++, n += PACKET) {
		uint8_t *p = buf + n;
		uint64_t start = 1000;

		if (every && k % every == 0) {
			*rng = *rng * 6364136223846793005ull +
			       1442695040888963407ull;
			start = *rng >> 20;
		}
		be32(p, 0xC1FC1FB7u);
		be32(p + 4, PACKET);
		be32(p + 8, 1);	 /* stream */
		be32(p + 12, 0); /* counter */
		be64(p + 16, 7); /* substream */
		be64(p + 24, start);
		be64(p + 32, start + 10);
		p[40] = 0;
		p[41] = 7;
		memcpy(p + 42, "running", 7);
	}
	return n;
}

int main(int argc, char **argv)
{
	uint8_t *buf = malloc(FRAME);
	size_t cap = ZSTD_compressBound(FRAME);
	uint8_t *z = malloc(cap);
	unsigned long long want = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
	unsigned long long written = 0, inflated = 0;
	unsigned every = 128;
	uint64_t rng = 42;
	FILE *out;

	if (argc != 3 || !want || !buf || !z)
		return 2;
	out = fopen(argv[1], "wb");
	if (!out)
		return 3;
	while (written < want) {
		size_t n = fill(buf, every, &rng);
		size_t zn = ZSTD_compress(z, cap, buf, n, 3);

		if (ZSTD_isError(zn))
			return 4;
		/* Keep the frame just under the reader's ratio cap. */
		if (n / zn > RATIO_MAX && every > 1) {
			every = every * 3 / 4;
			continue;
		}
		if (n / zn < RATIO_MIN)
			every += every / 4 + 1;
		if (fwrite(z, 1, zn, out) != zn)
			return 5;
		written += zn;
		inflated += n;
	}
	if (fclose(out) != 0)
		return 5;
	printf("zst-bomb: %llu bytes, %llu decompressed (%.0fx)\n", written,
	       inflated, (double)inflated / (double)written);
	free(buf);
	free(z);
	return 0;
}
