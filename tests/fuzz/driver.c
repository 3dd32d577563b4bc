/*
 * driver: runs a libFuzzer-style target without libFuzzer, so that every
 * fuzz target also runs in the normal (and sanitizer) test suites.
 *
 *   driver FILE...      replay the given inputs (a saved corpus or crash);
 *                       a directory stands for every file in it (the
 *                       crash inputs kept in tests/fuzz/regress/NAME/)
 *   driver -n N [-s S]  N pseudo-random inputs from seed S (default 1)
 *
 * The random inputs are biased towards valid-looking regions: magic, small
 * station counts, plausible seqs, so that the interesting paths are reached
 * and not only the "bad magic" early exit.
 */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corotop/ctp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t driver_rng = 1;

static uint64_t driver_next(void)
{
	/* xorshift64*: deterministic, good enough to spread inputs. */
	driver_rng ^= driver_rng >> 12;
	driver_rng ^= driver_rng << 25;
	driver_rng ^= driver_rng >> 27;
	return driver_rng * 2685821657736338717ull;
}

static size_t driver_make(uint8_t *buf, size_t cap)
{
	size_t region = CTP_HEADER_SIZE + 4 * CTP_STATION_SIZE;
	size_t n = 0;
	struct ctp_header hdr;

	memset(&hdr, 0, sizeof(hdr));
	buf[n++] = (uint8_t)(region / 64);
	memset(buf + n, 0, region);
	hdr.magic = CTP_MAGIC;
	hdr.version = CTP_VERSION;
	hdr.max_stations = (uint32_t)(driver_next() % 8);
	atomic_store(&hdr.allocated_count, (uint32_t)(driver_next() % 6));
	if (driver_next() % 2)
		hdr.ext.magic = CTP_HX_MAGIC;
	atomic_store(&hdr.ext.free_head, driver_next() % 8);
	memcpy(buf + n, &hdr, sizeof(hdr));
	for (unsigned s = 0; s < 4; s++) {
		uint8_t *st = buf + n + CTP_HEADER_SIZE + s * CTP_STATION_SIZE;
		uint64_t base = driver_next() % 64;

		if (driver_next() % 2) {
			uint32_t magic = CTP_STX_MAGIC;
			uint64_t gen = driver_next() % 3;

			memcpy(st + 0x240, &magic, 4);
			memcpy(st + 0x248, &gen, 8);
			memcpy(st + 0x250, &base, 8);
		}
		for (unsigned k = 0; k < CTP_SLOTS; k++) {
			uint64_t seq =
				driver_next() % 4
					? base * 2 + k * 2 + driver_next() % 3
					: driver_next();

			memcpy(st + 0x40 + k * 64 + 0x18, &seq, 8);
		}
		st[0x10] = (uint8_t)(driver_next() % 4 == 0);
	}
	n += region;
	/* Edits: mostly to seqs, gens and is_dead. */
	while (n + 19 < cap && driver_next() % 8) {
		size_t off = CTP_HEADER_SIZE +
			     (driver_next() % 4) * CTP_STATION_SIZE;
		uint64_t v = driver_next() % 200;

		switch (driver_next() % 3) {
		case 0:
			off += 0x40 + (driver_next() % 8) * 64 + 0x18;
			break;
		case 1:
			off += 0x248;
			v %= 4;
			break;
		default:
			off += 0x10;
			v = 1;
			break;
		}
		buf[n++] = (uint8_t)(off >> 8);
		buf[n++] = (uint8_t)off;
		buf[n++] = 8;
		memcpy(buf + n, &v, 8);
		n += 8;
	}
	return n;
}

/* Replay one saved input; 1 when it can not be read. */
static int driver_replay(const char *path)
{
	static uint8_t buf[1 << 20];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f) {
		perror(path);
		return 1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	return 0;
}

/* Every file of a directory, by name, so that a failure names its input. */
static int driver_replay_dir(const char *dir)
{
	struct dirent **names;
	char path[4096];
	int n = scandir(dir, &names, NULL, alphasort), rc = 0;

	if (n < 0) {
		perror(dir);
		return 1;
	}
	for (int k = 0; k < n; k++) {
		if (names[k]->d_name[0] != '.' && !rc) {
			snprintf(path, sizeof(path), "%s/%s", dir,
				 names[k]->d_name);
			printf("driver: %s\n", path);
			fflush(stdout);
			rc = driver_replay(path);
		}
		free(names[k]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	static uint8_t buf[16384];
	unsigned long count = 0;
	int i = 1;

	if (argc > 2 && strcmp(argv[1], "-n") == 0) {
		count = strtoul(argv[2], NULL, 10);
		i = 3;
		if (argc > 4 && strcmp(argv[3], "-s") == 0) {
			driver_rng = strtoull(argv[4], NULL, 10) | 1;
			i = 5;
		}
		for (unsigned long k = 0; k < count; k++) {
			size_t n = driver_make(buf, sizeof(buf));

			LLVMFuzzerTestOneInput(buf, n);
			/* And a fully random one of random length. */
			n = driver_next() % sizeof(buf);
			for (size_t j = 0; j < n; j++)
				buf[j] = (uint8_t)driver_next();
			LLVMFuzzerTestOneInput(buf, n);
		}
		printf("driver: %lu structured + %lu random inputs ok\n", count,
		       count);
	}
	for (; i < argc; i++) {
		DIR *d = opendir(argv[i]);

		if (d)
			closedir(d);
		if (d ? driver_replay_dir(argv[i]) : driver_replay(argv[i]))
			return 1;
	}
	return 0;
}
