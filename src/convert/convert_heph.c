/*
 * convert_heph: corotop convert --to heph -- a trace's plain Heph bytes,
 * for tools that read Heph but not zstd.  A compressed recording (zstd
 * frames, engine/heph/hephzst.h) is decompressed frame by frame, never
 * whole into memory; frames that can not be read are told to problem()
 * and left out (the Heph bytes of the others follow each other, as a
 * reader of the compressed file sees them).  A plain trace is copied.
 */
#define _GNU_SOURCE
#include "convert/convert.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/heph/hephzst.h"

static bool ch_put(FILE *out, const uint8_t *p, size_t n, uint64_t *bytes,
		   char *err, size_t errlen)
{
	if (n && fwrite(p, 1, n, out) != n) {
		snprintf(err, errlen, "writing: %s", strerror(errno));
		return false;
	}
	*bytes += n;
	return true;
}

static bool ch_frames(const uint8_t *z, size_t n, FILE *out,
		      convert_problem_fn problem, void *ctx, uint64_t *bytes,
		      size_t *problems, char *err, size_t errlen)
{
	struct heph_zst *zs = heph_zst_create(z, n);
	enum heph_zst_step st;
	const uint8_t *p;
	size_t len;
	uint64_t uoff, at;
	char why[200];
	bool ok = true;

	if (!zs) {
		snprintf(err, errlen, "out of memory for zstd frames");
		return false;
	}
	while (ok && (st = heph_zst_next(zs, &p, &len, &uoff, &at, why,
					 sizeof(why))) != HEPH_ZST_END) {
		if (st == HEPH_ZST_FRAME) {
			ok = ch_put(out, p, len, bytes, err, errlen);
			continue;
		}
		(*problems)++;
		if (problem)
			problem(ctx, at, why);
		if (st == HEPH_ZST_CUT)
			break;
	}
	heph_zst_destroy(zs);
	return ok;
}

bool convert_heph(const char *in, FILE *out, convert_problem_fn problem,
		  void *ctx, uint64_t *bytes, size_t *problems, char *err,
		  size_t errlen)
{
	struct stat st;
	void *map = NULL;
	bool ok;
	int fd;

	*bytes = 0;
	*problems = 0;
	fd = open(in, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(err, errlen, "cannot open %s: %s", in,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s is not a regular file", in);
		close(fd);
		return false;
	}
	if (st.st_size > 0) {
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd,
			   0);
		if (map == MAP_FAILED) {
			snprintf(err, errlen, "cannot map %s: %s", in,
				 strerror(errno));
			close(fd);
			return false;
		}
	}
	close(fd);
	if (heph_zst_is(map, (size_t)st.st_size))
		ok = ch_frames(map, (size_t)st.st_size, out, problem, ctx,
			       bytes, problems, err, errlen);
	else
		ok = ch_put(out, map, (size_t)st.st_size, bytes, err, errlen);
	if (map)
		munmap(map, (size_t)st.st_size);
	return ok;
}
