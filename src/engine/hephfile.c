/*
 * hephfile: a Heph trace file, mapped and indexed for replay and
 * conversion.
 *
 * Opening maps the file read-only and walks its packets once from byte 0:
 *
 *   metadata  counted; the last `epoch` option (a u64) is kept; options we
 *             do not know are counted and passed over by their size, as the
 *             format wants (other writers may put metadata anywhere);
 *   event     one struct heph_ref in file order: where the packet is, its
 *             stream, counter, substream and times (decoded in full once,
 *             so that every later decode of it succeeds on the same bytes);
 *   bad       a problem is recorded with the packet's byte offset, then the
 *             bytes are scanned from the next one on for either magic that
 *             starts a packet which decodes; what lies between is counted in
 *             skipped_bytes.  A scan gives up after RESYNC_MAX bytes with no
 *             packet (and reading stops there, with a problem saying so);
 *   short     a packet whose size runs past the end of the file is a lie if
 *             a good packet follows it (a problem, and reading carries on
 *             there), and otherwise the file is truncated inside it
 *             (truncated, a problem, and reading stops).
 *
 * Then by_start orders the events by start time, stably (equal starts keep
 * file order): an LSD radix sort of (start - first start) on 11-bit digits,
 * skipping digits that are the same in every key -- a few passes over the
 * keys rather than n log n comparisons, since the index of a 10-million-event
 * file is on the way to the first screen.  A file already in start order is
 * noticed and not sorted.
 *
 * Bounds against a file that lies: at most HEPHFILE_MAX_EVENTS events (2^28,
 * 12 GiB of index) are kept; the scans for the next packet together decode
 * at most RESYNC_BUDGET bytes of candidate packets, so a file made of magics
 * can not make opening quadratic.
 *
 * The mapping is of a file other processes may change: one that is
 * truncated while mapped makes reads past its new end fault (SIGBUS).  The
 * size is taken at open; a caller that must survive a writer shrinking the
 * file under it (replay of a file still being recorded) keeps its own copy.
 * A file that changed in place only fails heph_file_event (it decodes
 * again).
 */
#define _GNU_SOURCE
#include "hephfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEPHFILE_MAX_EVENTS (1u << 28)
#define RESYNC_MAX (1u << 20)		    /* garbage bytes before giving up */
#define RESYNC_BUDGET ((uint64_t)256 << 20) /* candidate bytes decoded */
#define RADIX_BITS 11u
#define RADIX_DIGITS 6u /* 66 bits cover a u64 key */
#define RADIX_SIZE (1u << RADIX_BITS)

/* The state of one walk over the bytes. */
struct walk {
	struct heph_file *f;
	size_t cap;	 /* of f->ev */
	uint64_t budget; /* left for resync decodes */
	bool stop;
};

__attribute__((format(printf, 3, 4))) static void
problem_add(struct heph_file *f, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	struct heph_problem *p;

	f->problems_total++;
	if (f->nproblems >= HEPHFILE_PROBLEMS)
		return;
	p = &f->problems[f->nproblems++];
	p->off = off;
	va_start(ap, fmt);
	vsnprintf(p->what, sizeof(p->what), fmt, ap);
	va_end(ap);
}

static bool event_add(struct walk *w, uint64_t off,
		      const struct heph_packet *pk)
{
	struct heph_file *f = w->f;
	struct heph_ref *r;

	if (f->nev >= HEPHFILE_MAX_EVENTS) {
		problem_add(f, off,
			    "more than %u events: reading stopped here (split "
			    "the recording)",
			    HEPHFILE_MAX_EVENTS);
		return false;
	}
	if (f->nev == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 1024;
		struct heph_ref *ev;

		if (cap > HEPHFILE_MAX_EVENTS)
			cap = HEPHFILE_MAX_EVENTS;
		ev = realloc(f->ev, cap * sizeof(*ev));
		if (!ev) {
			problem_add(f, off,
				    "out of memory for the index after %zu "
				    "events: reading stopped here",
				    f->nev);
			return false;
		}
		f->ev = ev;
		w->cap = cap;
	}
	r = &f->ev[f->nev++];
	r->off = off;
	r->start = pk->start;
	r->end = pk->end;
	r->substream = pk->substream;
	r->stream = pk->stream;
	r->counter = pk->counter;
	r->size = pk->size;
	r->pad_ = 0;
	if (f->nev == 1 || pk->start < f->first_start)
		f->first_start = pk->start;
	if (f->nev == 1 || pk->end > f->last_end)
		f->last_end = pk->end;
	return true;
}

/* Where an option other than epoch was, for readers of their own options
 * (hephnames.c); the first HEPHFILE_META_MAX, doubling as they come. */
static void meta_keep(struct heph_file *f, uint64_t off)
{
	if (f->nmeta_off == f->cap_meta_off) {
		size_t cap = f->cap_meta_off ? f->cap_meta_off * 2 : 64;
		uint64_t *m;

		if (cap > HEPHFILE_META_MAX)
			return;
		m = realloc(f->meta_off, cap * sizeof(*m));
		if (!m)
			return;
		f->meta_off = m;
		f->cap_meta_off = cap;
	}
	f->meta_off[f->nmeta_off++] = off;
}

static void meta_add(struct heph_file *f, uint64_t off,
		     const struct heph_packet *pk)
{
	f->nmeta++;
	if (pk->option_len != 5 || memcmp(pk->option, "epoch", 5)) {
		f->unknown_options++;
		meta_keep(f, off);
		return;
	}
	if (pk->value_len != 8) {
		problem_add(f, off,
			    "epoch option with a %u-byte value (want a u64, "
			    "8 bytes): ignored",
			    pk->value_len);
		return;
	}
	f->have_epoch = true;
	f->epoch_ns = heph_be64(pk->value);
}

/*
 * The offset of the next packet that decodes, from `from` on, or SIZE_MAX
 * (with *gave_up when the scan hit its limit rather than the end).
 */
static size_t resync(struct walk *w, size_t from, bool *gave_up)
{
	const uint8_t *m = w->f->map;
	size_t size = w->f->size;
	size_t lim = size - from > RESYNC_MAX ? from + RESYNC_MAX : size;
	struct heph_packet pk;

	*gave_up = false;
	for (size_t o = from; o < lim && size - o >= 8; o++) {
		uint32_t magic, psize;

		if (m[o] != 0x75 && m[o] != 0xC1)
			continue;
		magic = heph_be32(m + o);
		if (magic != HEPH_META_MAGIC && magic != HEPH_EVENT_MAGIC)
			continue;
		psize = heph_be32(m + o + 4);
		if (psize > size - o || psize > HEPH_PACKET_MAX)
			continue;
		if (psize > w->budget) {
			*gave_up = true;
			return SIZE_MAX;
		}
		w->budget -= psize;
		if (heph_decode(m + o, size - o, &pk, NULL, 0) == HEPH_OK)
			return o;
	}
	*gave_up = lim < size;
	return SIZE_MAX;
}

/* The packet at off did not decode (st, err): say so and find the next. */
static size_t walk_recover(struct walk *w, size_t off, enum heph_status st,
			   const char *err)
{
	struct heph_file *f = w->f;
	bool gave_up;
	size_t next = resync(w, off + 1, &gave_up);

	/* The outcome first: what[] may cut the end of err. */
	if (next != SIZE_MAX) {
		f->skipped_bytes += next - off;
		problem_add(f, off, "%zu bytes skipped%s: %s", next - off,
			    st == HEPH_SHORT ? " (the size lied)" : "", err);
		return next;
	}
	w->stop = true;
	if (st == HEPH_SHORT) {
		f->truncated = true;
		problem_add(f, off, "truncated: %s", err);
	} else if (gave_up) {
		problem_add(f, off,
			    "no packet in the next %u KiB, reading stopped: %s",
			    RESYNC_MAX >> 10, err);
	} else {
		f->skipped_bytes += f->size - off;
		problem_add(f, off, "%zu bytes skipped to the end: %s",
			    f->size - off, err);
	}
	return f->size;
}

static void walk_packets(struct walk *w)
{
	struct heph_file *f = w->f;
	size_t off = 0;
	struct heph_packet pk;
	char err[160];

	while (off < f->size && !w->stop) {
		enum heph_status st = heph_decode(f->map + off, f->size - off,
						  &pk, err, sizeof(err));

		if (st != HEPH_OK) {
			off = walk_recover(w, off, st, err);
			continue;
		}
		if (pk.kind == HEPH_META)
			meta_add(f, off, &pk);
		else if (!event_add(w, off, &pk))
			break;
		off += pk.size;
	}
}

/* ---- by start time ---- */

static uint32_t digit(uint64_t key, unsigned d)
{
	return (uint32_t)(key >> (d * RADIX_BITS)) & (RADIX_SIZE - 1);
}

/*
 * Stable LSD radix sort of idx by key (both n long): tmp_key and tmp_idx
 * are scratch of the same sizes.  Returns the array the result is in.
 */
static uint32_t *radix_sort(uint64_t *key, uint32_t *idx, uint64_t *tmp_key,
			    uint32_t *tmp_idx, size_t n, uint32_t *count)
{
	memset(count, 0, RADIX_DIGITS * RADIX_SIZE * sizeof(*count));
	for (size_t i = 0; i < n; i++)
		for (unsigned d = 0; d < RADIX_DIGITS; d++)
			count[d * RADIX_SIZE + digit(key[i], d)]++;
	for (unsigned d = 0; d < RADIX_DIGITS; d++) {
		uint32_t *c = count + d * RADIX_SIZE, sum = 0;
		uint64_t *kt;
		uint32_t *it;

		if (c[digit(key[0], d)] == n)
			continue; /* the same digit everywhere */
		for (uint32_t b = 0; b < RADIX_SIZE; b++) {
			uint32_t k = c[b];

			c[b] = sum;
			sum += k;
		}
		for (size_t i = 0; i < n; i++) {
			uint32_t to = c[digit(key[i], d)]++;

			tmp_key[to] = key[i];
			tmp_idx[to] = idx[i];
		}
		kt = key, key = tmp_key, tmp_key = kt;
		it = idx, idx = tmp_idx, tmp_idx = it;
	}
	return idx;
}

static bool index_by_start(struct heph_file *f, char *err, size_t errlen)
{
	size_t n = f->nev, i;
	uint64_t *key = NULL, *tmp_key = NULL;
	uint32_t *idx, *tmp_idx = NULL, *count = NULL, *res;
	bool ok = false;

	idx = malloc((n ? n : 1) * sizeof(*idx));
	if (!idx)
		goto out;
	for (i = 0; i < n; i++)
		idx[i] = (uint32_t)i;
	for (i = 1; i < n && f->ev[i].start >= f->ev[i - 1].start; i++)
		;
	if (i >= n) { /* already in start order */
		f->by_start = idx;
		return true;
	}
	key = malloc(n * sizeof(*key));
	tmp_key = malloc(n * sizeof(*tmp_key));
	tmp_idx = malloc(n * sizeof(*tmp_idx));
	count = malloc(RADIX_DIGITS * RADIX_SIZE * sizeof(*count));
	if (!key || !tmp_key || !tmp_idx || !count)
		goto out;
	for (i = 0; i < n; i++)
		key[i] = f->ev[i].start - f->first_start;
	res = radix_sort(key, idx, tmp_key, tmp_idx, n, count);
	if (res == tmp_idx) {
		tmp_idx = idx;
		idx = res;
	}
	f->by_start = idx;
	idx = NULL;
	ok = true;
out:
	if (!ok && err && errlen)
		snprintf(err, errlen,
			 "out of memory sorting %zu events by start time", n);
	free(idx);
	free(key);
	free(tmp_key);
	free(tmp_idx);
	free(count);
	return ok;
}

/* ---- the file ---- */

bool heph_file_index_bytes(struct heph_file *f, const uint8_t *p, size_t size,
			   char *err, size_t errlen)
{
	struct walk w = {.f = f, .budget = RESYNC_BUDGET};
	struct heph_ref *ev;

	memset(f, 0, sizeof(*f));
	f->map = p;
	f->size = p ? size : 0;
	walk_packets(&w);
	/* Give back what doubling left unused. */
	if (f->nev && f->nev < w.cap) {
		ev = realloc(f->ev, f->nev * sizeof(*ev));
		if (ev)
			f->ev = ev;
	}
	if (!index_by_start(f, err, errlen)) {
		heph_file_close(f);
		return false;
	}
	return true;
}

bool heph_file_open(struct heph_file *f, const char *path, char *err,
		    size_t errlen)
{
	struct stat st;
	void *map = NULL;
	int fd;

	memset(f, 0, sizeof(*f));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open %s: %s", path,
			 strerror(errno));
		return false;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "cannot stat %s: %s", path,
			 strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen,
			 "%s is not a regular file (record to a file, or copy "
			 "the stream into one first)",
			 path);
		goto fail;
	}
	if ((uint64_t)st.st_size > SIZE_MAX / 2) {
		snprintf(err, errlen, "%s is too large to map (%lld bytes)",
			 path, (long long)st.st_size);
		goto fail;
	}
	if (st.st_size > 0) {
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd,
			   0);
		if (map == MAP_FAILED) {
			snprintf(err, errlen, "cannot map %s (%lld bytes): %s",
				 path, (long long)st.st_size, strerror(errno));
			goto fail;
		}
		/* Read once from start to end now, then again at random
		 * (replay): read ahead, but keep the pages. */
		madvise(map, (size_t)st.st_size, MADV_WILLNEED);
	}
	close(fd);
	if (!heph_file_index_bytes(f, map, (size_t)st.st_size, err, errlen)) {
		if (map)
			munmap(map, (size_t)st.st_size);
		return false;
	}
	f->mapped = map != NULL;
	return true;
fail:
	close(fd);
	return false;
}

void heph_file_close(struct heph_file *f)
{
	if (f->mapped && f->map)
		munmap((void *)f->map, f->size);
	free(f->ev);
	free(f->by_start);
	free(f->meta_off);
	memset(f, 0, sizeof(*f));
}

bool heph_file_event(const struct heph_file *f, size_t i,
		     struct heph_packet *out)
{
	const struct heph_ref *r;

	if (i >= f->nev)
		return false;
	r = &f->ev[i];
	if (r->off > f->size || f->size - r->off < r->size)
		return false;
	return heph_decode(f->map + r->off, r->size, out, NULL, 0) == HEPH_OK &&
	       out->kind == HEPH_EVENT && out->size == r->size;
}

size_t heph_file_seek(const struct heph_file *f, uint64_t t)
{
	size_t lo = 0, hi = f->nev;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->ev[f->by_start[mid]].start < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
