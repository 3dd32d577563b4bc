/*
 * cacheray: reads a Cacheray trace as a stream and counts where the memory
 * accesses went -- per type and member, per thread, per 64-byte cache line
 * -- to find the hot lines and the lines that threads share.
 *
 * The format (Cacheray's trace-format spec and what its runtime does): no
 * header, no magic, native byte order, each record written field by field,
 * so records are packed and unaligned.  The type byte carries an atomic
 * (0x40) and an unaligned (0x80) flag, stripped before the type is looked
 * at; only READ and WRITE may carry them.  READ/WRITE is 18 bytes, RTTA_ADD
 * 29 plus its typename, RTTA_REMOVE 17 (the spec's table for it stops after
 * Thread; we assume nothing follows, as for the other records).  The thread
 * id of RTTA records is not used.  The shipped runtime writes thread id 0
 * for every access, so per-thread and false-sharing results need a trace
 * from a runtime that records real ids; the report says so.  A
 * read-modify-write atomic is logged as a READ then a WRITE, both flagged
 * atomic: totals count both records, and atomic_rmw counts the pairs.
 *
 * Lines.  An access is counted (reads, writes, layout, types) on the line
 * it starts in; one that runs past that line's end also marks the next
 * line(s) with its thread, the bytes it touched there and whether it
 * wrote, so that sharing on them is seen (cacheray_cross).  When a region
 * leaves the map (removed, or dropped by an overlapping add), its memory
 * was freed: linetab_forget clears its bytes from the lines' thread slots,
 * so that the next owner of the memory is not taken to share its lines
 * with the last one -- unless a line is a suspect already (verdicts are
 * sticky).
 *
 * Speed (bench/cacheray).  The hot loop runs over whole 18-byte access
 * records in the caller's buffer with memcpy loads (no copy, no alignment
 * assumption), in a function of its own.  Caches make the common case a
 * few compares:
 *   - thread: a 256-entry direct-mapped table from id to index;
 *   - RTTA: the region or gap holding the last address and the element in
 *     it (the member offset needs no division while accesses stay in one
 *     element or step to the next), backed by 4,096 recent answers indexed
 *     by cache line that survive unrelated adds and removes (see
 *     cacheray_rcache_set), backed by the map;
 *   - line: the last line, backed by the line table, whose slot for the
 *     record 8 records ahead is prefetched (the table is megabytes).
 * Misses go to out-of-line slow paths.
 *
 * Only a record cut by the end of a chunk is copied (into `pend`, at most
 * CACHERAY_RECORD_MAX bytes) and completed by the next chunk.
 */
#include "cacheray/cacheray.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cacheray/cacheray_internal.h"
#include "common/hash.h"

__attribute__((format(printf, 3, 4))) static void
cacheray_fail(struct cacheray *c, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	int n;

	c->failed = true;
	c->err_offset = off;
	n = snprintf(c->err, sizeof(c->err), "byte %" PRIu64 ": ", off);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(c->err))
		vsnprintf(c->err + n, sizeof(c->err) - (size_t)n, fmt, ap);
	va_end(ap);
}

static uint64_t cacheray_hash(const void *p, size_t n, uint64_t seed)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* ---- types ---- */

struct cacheray_type_key {
	struct cacheray *c;
	const uint8_t *name;
	uint32_t len, elemsize;
};

static bool cacheray_type_eq(void *ctx, uint32_t rec)
{
	const struct cacheray_type_key *k = ctx;
	const struct cacheray_type *t = &k->c->types[rec];

	return !t->special && t->elemsize == k->elemsize &&
	       t->name_len == k->len && !memcmp(t->name, k->name, k->len);
}

static uint32_t cacheray_type_new(struct cacheray *c, const void *name,
				  uint32_t len, uint32_t elemsize, bool special)
{
	struct cacheray_type *t = &c->types[c->ntypes];
	char *copy = malloc((size_t)len + 1);

	if (!copy)
		return UINT32_MAX;
	memcpy(copy, name, len);
	copy[len] = '\0';
	*t = (struct cacheray_type){
		.name = copy,
		.name_len = len,
		.elemsize = elemsize,
		.special = special,
	};
	c->name_bytes += len;
	if (!special && elemsize <= CACHERAY_MEMBER_MAX &&
	    c->member_offsets + elemsize <= c->cfg.max_member_offsets)
		t->members = calloc(elemsize, sizeof(*t->members));
	if (t->members)
		c->member_offsets += elemsize;
	else
		t->no_members = !special;
	return c->ntypes++;
}

/* The type index of (name, elemsize), created if new; UINT32_MAX: out of
 * memory. */
static uint32_t cacheray_type_get(struct cacheray *c, const uint8_t *name,
				  uint32_t len, uint32_t elemsize)
{
	struct cacheray_type_key k = {c, name, len, elemsize};
	uint64_t h = cacheray_hash(name, len, elemsize);
	uint32_t i = hashidx_find(&c->type_idx, h, cacheray_type_eq, &k);

	if (i != HASHIDX_NONE)
		return i;
	if (c->ntypes + 1 >= c->cfg.max_types ||
	    c->name_bytes + len > c->cfg.max_name_bytes) {
		if (!c->other_type) {
			i = cacheray_type_new(c, "(other types)", 13, 0, true);
			if (i == UINT32_MAX)
				return i;
			c->other_type = i;
		}
		return c->other_type;
	}
	i = cacheray_type_new(c, name, len, elemsize, false);
	if (i != UINT32_MAX)
		hashidx_insert(&c->type_idx, h, i);
	return i;
}

/* ---- threads ---- */

struct cacheray_thread_key {
	struct cacheray *c;
	uint64_t id;
};

static bool cacheray_thread_eq(void *ctx, uint32_t rec)
{
	const struct cacheray_thread_key *k = ctx;

	return !k->c->threads[rec].other && k->c->threads[rec].id == k->id;
}

static __attribute__((noinline)) uint32_t
cacheray_thread_slow(struct cacheray *c, uint64_t id)
{
	struct cacheray_thread_key k = {c, id};
	uint64_t h = id * HASH_GOLDEN;
	uint32_t i = hashidx_find(&c->thread_idx, h, cacheray_thread_eq, &k);

	if (i == HASHIDX_NONE) {
		if (c->nthreads + 1 >= c->cfg.max_threads) {
			if (!c->other_thread) {
				c->other_thread = c->nthreads++;
				c->threads[c->other_thread] =
					(struct cacheray_thread){.other = true};
			}
			return c->other_thread; /* not cached: counted */
		}
		i = c->nthreads++;
		c->threads[i] = (struct cacheray_thread){.id = id};
		hashidx_insert(&c->thread_idx, h, i);
	}
	c->tcache[id % CACHERAY_TCACHE].id = id;
	c->tcache[id % CACHERAY_TCACHE].idx = i + 1;
	return i;
}

/* ---- regions ---- */

/* A region's tag on the lines: its serial folded into 1..2^32-2 (0 is
 * "untyped", UINT32_MAX "no access yet").  Regions 2^32-2 adds apart share
 * a tag: a line holding both would say "one element" where it should say
 * "several regions", nothing worse -- the RTTA answers themselves are
 * checked with the full serial. */
static uint32_t cacheray_tag(uint64_t serial)
{
	return serial ? (uint32_t)((serial - 1) % (CACHELINE_NO_REGION - 1)) + 1
		      : 0;
}

/*
 * The region or gap holding addr into the one-entry cache: from the set of
 * recent answers when the one for addr's line holds addr and is still
 * valid, from the map otherwise.  A region answer stays valid until that
 * region is removed (or dropped by an overlapping add), a gap answer until
 * the next add -- a remove only makes gaps larger, so a cached gap is
 * still free of regions.  In a malloc-heavy trace the answers for live
 * objects thus survive the allocations of others.
 */
static void cacheray_rcache_set(struct cacheray *c, uint64_t addr)
{
	struct cacheray_rset *e =
		&c->rset[hash_fib(addr >> 6, 64 - CACHERAY_RSET_BITS)];

	if (addr - e->start > e->span ||
	    (e->serial ? !rtta_still(&c->rtta, e->stamp, e->serial)
		       : e->stamp != c->adds_gen)) {
		struct rtta_hit h;

		rtta_lookup(&c->rtta, addr, &h);
		*e = (struct cacheray_rset){
			.start = h.start,
			.span = h.last - h.start,
			.elemsize = h.elemsize,
			.type = h.region ? h.type : 0,
			.serial = h.serial,
			.tag = cacheray_tag(h.serial),
			.stamp = h.region ? h.node : c->adds_gen,
		};
	}
	c->rc = (struct cacheray_rcache){
		.start = e->start,
		.span = e->span,
		.elem_start = e->start,
		.elemsize = e->elemsize,
		.type = e->type,
		.tag = e->tag,
		.region = e->serial != 0,
	};
}

static __attribute__((noinline)) void cacheray_region_slow(struct cacheray *c,
							   uint64_t addr)
{
	cacheray_rcache_set(c, addr);
}

/* The rtta hook: a region left the map (removed, or dropped by an
 * overlapping add), so its memory was freed -- whoever used its bytes no
 * longer shares their lines with whoever uses them next. */
static void cacheray_freed(void *ctx, uint64_t start, uint64_t last)
{
	struct cacheray *c = ctx;

	linetab_forget(&c->lines, start, last);
}

/* After an add (added) or a remove: drop the answers that went stale. */
static void cacheray_rtta_changed(struct cacheray *c, bool added)
{
	if (added && ++c->adds_gen == 0) {
		/* Wrapped: no gap answer may match by chance. */
		memset(c->rset, 0, sizeof(c->rset));
		c->adds_gen = 1;
	}
	cacheray_rcache_set(c, c->rc.start);
}

/* The element holding addr when it is not the cached one. */
static __attribute__((noinline)) void cacheray_elem_slow(struct cacheray *c,
							 uint64_t addr)
{
	uint64_t d = addr - c->rc.start, i = d / c->rc.elemsize;

	c->rc.elem = (uint32_t)i;
	c->rc.elem_start = c->rc.start + i * c->rc.elemsize;
}

/* ---- lines ---- */

static __attribute__((noinline)) struct cacheline *
cacheray_line_slow(struct cacheray *c, uint64_t key)
{
	c->last_key = key;
	c->last_line = linetab_get(&c->lines, key);
	return c->last_line;
}

/* A free slot for thread index + 1 `ts` on a line (slot 1 is free). */
static __attribute__((noinline)) unsigned
cacheray_line_thread(struct cacheline *l, uint16_t ts)
{
	if (!l->thread[0]) {
		l->thread[0] = ts;
		return 0;
	}
	l->thread[1] = ts;
	return 1;
}

static __attribute__((noinline)) void
cacheray_line_place(struct cacheline *l, uint32_t tag, uint32_t elem)
{
	if (l->region == CACHELINE_NO_REGION) {
		l->region = tag;
		l->elem = elem;
	} else if (l->region != tag) {
		l->flags |= CACHELINE_REGIONS;
	} else if (l->elem != elem) {
		l->flags |= CACHELINE_ELEMS;
	}
}

static __attribute__((noinline)) void cacheray_line_type(struct cacheline *l,
							 uint16_t ty)
{
	if (!l->type[0])
		l->type[0] = ty;
	else if (!l->type[1])
		l->type[1] = ty;
	else if (l->type[1] != ty)
		l->flags |= CACHELINE_MORE_TYPES;
}

/* The thread slot of thread index + 1 `ts` on a line: the n bytes from
 * byte lo on that it touched (n 0 counts as 1; they stop at the line's
 * end) and whether it wrote; a third thread only sets the "more" flags. */
static inline __attribute__((always_inline)) void
cacheray_line_mark(struct cacheline *l, uint16_t ts, unsigned w, unsigned lo,
		   unsigned n)
{
	uint64_t m;
	unsigned s;

	if (l->thread[0] == ts) {
		s = 0;
	} else if (l->thread[1] == ts) {
		s = 1;
	} else if (l->thread[1]) {
		/* A third thread (or more): no slot. */
		l->flags |= CACHELINE_MORE | (w ? CACHELINE_MORE_W : 0);
		return;
	} else {
		s = cacheray_line_thread(l, ts);
	}
	m = n >= 64 ? ~0ull : (2ull << (n ? n - 1 : 0)) - 1;
	l->bytes[s] |= m << lo;
	l->flags |= (uint8_t)(w << s); /* CACHELINE_W0 / _W1 */
}

/*
 * An access that runs past its line (rare): the lines after the one it
 * starts in get the thread, the bytes it touched there and whether it
 * wrote -- so that sharing on them is seen -- but not the access itself
 * (it is counted once, with its type and layout, where it starts).  Lines
 * past the cap are skipped; nothing wraps past the top of memory.  Called
 * before the access's own line is looked up (the table may grow here).
 */
static __attribute__((noinline)) void cacheray_cross(struct cacheray *c,
						     uint64_t addr,
						     unsigned size, unsigned w,
						     uint16_t ts)
{
	uint64_t last =
		addr > UINT64_MAX - (size - 1) ? UINT64_MAX : addr + (size - 1);

	for (uint64_t n = (addr >> 6) + 1; n <= last >> 6; n++) {
		uint64_t left = last - (n << 6); /* bytes after the first */
		struct cacheline *l = cacheray_line_slow(c, n + 1);

		if (l)
			cacheray_line_mark(l, ts, w, 0,
					   left >= 63 ? 64
						      : (unsigned)left + 1);
	}
}

/* ---- records ---- */

static __attribute__((noinline)) void cacheray_atomic(struct cacheray *c,
						      unsigned w, uint64_t addr,
						      uint64_t tid,
						      uint64_t off)
{
	if (!w) {
		c->rmw_addr = addr;
		c->rmw_tid = tid;
		c->rmw_end = off + CACHERAY_ACCESS_SIZE;
	} else if (c->rmw_end == off && off && c->rmw_addr == addr &&
		   c->rmw_tid == tid) {
		c->rmw++;
	}
}

/*
 * Prefetch distances, in bytes of trace: the line slot of the record 8
 * records on (the hash table is megabytes, a random line is a cache miss),
 * and the trace stream 2 KiB on.  Measured on bench/cacheray: +8 % and
 * +6 %.
 */
#define CACHERAY_PREFETCH_AHEAD (8 * CACHERAY_ACCESS_SIZE)
#define CACHERAY_STREAM_AHEAD 2048

/* Start loading the line slot of the record at p (any bytes: a hint). */
static inline void cacheray_prefetch(const struct cacheray *c, const uint8_t *p)
{
	uint64_t addr;

	memcpy(&addr, p + 1, 8);
	__builtin_prefetch(linetab_slot(&c->lines, (addr >> 6) + 1));
}

/* One READ/WRITE record at p (18 bytes), at stream offset off. */
static inline __attribute__((always_inline)) void
cacheray_access(struct cacheray *c, const uint8_t *p, uint64_t off)
{
	const unsigned t = p[0], w = t & 1, size = p[9];
	uint64_t addr, tid;
	struct cacheray_type *ty;
	struct cacheline *l;
	uint32_t ti, idx;
	uint16_t ts;

	memcpy(&addr, p + 1, 8);
	memcpy(&tid, p + 10, 8);
	c->kind[t]++;
	c->access_bytes += size;
	if (t & CACHERAY_EVENT_MASK_ATOMIC)
		cacheray_atomic(c, w, addr, tid, off);

	idx = c->tcache[tid % CACHERAY_TCACHE].idx;
	ti = idx && c->tcache[tid % CACHERAY_TCACHE].id == tid
		     ? idx - 1
		     : cacheray_thread_slow(c, tid);
	c->threads[ti].n[w]++;
	if (__builtin_expect((addr & 63) + size > 64, 0)) {
		c->cross_line++;
		cacheray_cross(c, addr, size, w, (uint16_t)(ti + 1));
	}

	if (addr - c->rc.start > c->rc.span)
		cacheray_region_slow(c, addr);
	ty = &c->types[c->rc.type];
	ty->n[w]++;
	if (c->rc.region) {
		uint64_t d = addr - c->rc.elem_start;

		if (d >= c->rc.elemsize) {
			if (d - c->rc.elemsize < c->rc.elemsize) {
				/* The next element: a sweep, no division. */
				c->rc.elem_start += c->rc.elemsize;
				c->rc.elem++;
			} else {
				cacheray_elem_slow(c, addr);
			}
		}
		if (ty->members)
			ty->members[addr - c->rc.elem_start].n[w]++;
	}

	l = (addr >> 6) + 1 == c->last_key
		    ? c->last_line
		    : cacheray_line_slow(c, (addr >> 6) + 1);
	if (!l) {
		c->dropped++;
		return;
	}
	if (w)
		l->writes++;
	else
		l->reads++;
	ts = (uint16_t)(ti + 1);
	cacheray_line_mark(l, ts, w, (unsigned)(addr & 63), size);
	if (l->region != c->rc.tag || l->elem != c->rc.elem)
		cacheray_line_place(l, c->rc.tag,
				    c->rc.region ? c->rc.elem : 0);
	if (l->type[0] != c->rc.type + 1 && l->type[1] != c->rc.type + 1)
		cacheray_line_type(l, (uint16_t)(c->rc.type + 1));
}

/*
 * The hot loop: the whole READ/WRITE records (flags or not) from p on;
 * returns where they stop.  base + (uintptr_t)p is p's stream offset.
 */
static __attribute__((noinline)) const uint8_t *cacheray_run(struct cacheray *c,
							     const uint8_t *p,
							     const uint8_t *end,
							     uint64_t base)
{
	while ((size_t)(end - p) >= CACHERAY_ACCESS_SIZE &&
	       !(p[0] & ~(CACHERAY_FLAGS | CACHERAY_EVENT_WRITE))) {
		if ((size_t)(end - p) >=
		    CACHERAY_PREFETCH_AHEAD + CACHERAY_ACCESS_SIZE)
			cacheray_prefetch(c, p + CACHERAY_PREFETCH_AHEAD);
		/* The trace itself, further on (a hint: never faults, so
		 * past the end of the buffer is fine). */
		__builtin_prefetch(
			(const void *)((uintptr_t)p + CACHERAY_STREAM_AHEAD));
		cacheray_access(c, p, base + (uint64_t)(uintptr_t)p);
		p += CACHERAY_ACCESS_SIZE;
	}
	return p;
}

/*
 * The size of the record at p, of which avail (>= 1) bytes are here: its
 * full size, or, while its size is not known yet, the bytes needed to know
 * it.  0 when it is not a valid record (the reader has failed).
 */
static size_t cacheray_size(struct cacheray *c, const uint8_t *p, size_t avail,
			    uint64_t off)
{
	const unsigned t = p[0], base = t & ~CACHERAY_FLAGS & 0xff;
	uint32_t len;

	switch (base) {
	case CACHERAY_EVENT_READ:
	case CACHERAY_EVENT_WRITE:
		return CACHERAY_ACCESS_SIZE;
	case CACHERAY_EVENT_RTTA_ADD:
	case CACHERAY_EVENT_RTTA_REMOVE:
		if (t & CACHERAY_FLAGS) {
			cacheray_fail(c, off,
				      "RTTA record type 0x%02x carries the "
				      "atomic/unaligned flags (only READ and "
				      "WRITE may); not a Cacheray trace, or "
				      "it is corrupt here",
				      t);
			return 0;
		}
		if (base == CACHERAY_EVENT_RTTA_REMOVE)
			return CACHERAY_REMOVE_SIZE;
		if (avail < CACHERAY_ADD_FIXED)
			return CACHERAY_ADD_FIXED;
		memcpy(&len, p + 25, 4);
		if (len > CACHERAY_NAME_MAX) {
			cacheray_fail(c, off,
				      "RTTA_ADD typename length %" PRIu32
				      " is over the %d-byte limit; the trace "
				      "is corrupt here",
				      len, CACHERAY_NAME_MAX);
			return 0;
		}
		return CACHERAY_ADD_FIXED + len;
	default:
		cacheray_fail(c, off,
			      "unknown record type 0x%02x (0x%02x without the "
			      "atomic/unaligned flags); not a Cacheray trace, "
			      "or it is corrupt here",
			      t, base);
		return 0;
	}
}

static bool cacheray_add(struct cacheray *c, const uint8_t *p, uint64_t off)
{
	uint32_t elemsize, count, len, type, dropped;
	uint64_t addr, bytes;

	memcpy(&addr, p + 1, 8);
	memcpy(&elemsize, p + 17, 4);
	memcpy(&count, p + 21, 4);
	memcpy(&len, p + 25, 4);
	bytes = (uint64_t)elemsize * count;
	(void)off;
	/* A record that parses but maps nothing (element size 0, e.g. an
	 * empty GNU C struct, or a region past the top of the address
	 * space) is counted as empty, and reading goes on. */
	if (!elemsize || (bytes && addr > UINT64_MAX - (bytes - 1))) {
		c->adds++;
		c->empty++;
		return true;
	}
	type = cacheray_type_get(c, p + CACHERAY_ADD_FIXED, len, elemsize);
	if (type == UINT32_MAX)
		goto err_nomem;
	c->types[type].regions++;
	c->adds++;
	if (!bytes) {
		c->empty++;
		return true;
	}
	c->serial++; /* from 1: 0 is "untyped" */
	switch (rtta_add(&c->rtta, addr, bytes, type, elemsize, c->serial,
			 &dropped)) {
	case RTTA_ADDED:
		break;
	case RTTA_FULL:
		c->full++;
		break;
	case RTTA_NOMEM:
		goto err_nomem;
	}
	c->overlaps += dropped;
	cacheray_rtta_changed(c, true);
	return true;
err_nomem:
	cacheray_fail(c, off, "out of memory for RTTA region 0x%016" PRIx64,
		      addr);
	return false;
}

/* One complete record of n bytes (n from cacheray_size) at offset off. */
static bool cacheray_record(struct cacheray *c, const uint8_t *p, uint64_t off)
{
	uint64_t addr;

	switch (p[0] & ~CACHERAY_FLAGS) {
	case CACHERAY_EVENT_RTTA_ADD:
		if (!cacheray_add(c, p, off))
			return false; /* not counted: the counts stop before it
				       */
		c->kind[p[0]]++;
		return true;
	case CACHERAY_EVENT_RTTA_REMOVE:
		c->kind[p[0]]++;
		c->removes++;
		memcpy(&addr, p + 1, 8);
		if (!rtta_remove(&c->rtta, addr))
			c->unknown++;
		cacheray_rtta_changed(c, false);
		return true;
	default:
		cacheray_access(c, p, off);
		return true;
	}
}

/* Complete the pending record from [p, end); returns where it stopped. */
static const uint8_t *cacheray_complete(struct cacheray *c, const uint8_t *p,
					const uint8_t *end)
{
	while (c->npend) {
		size_t need = cacheray_size(c, c->pend, c->npend, c->offset);
		size_t take;

		if (!need)
			return NULL;
		if (c->npend >= need) {
			if (!cacheray_record(c, c->pend, c->offset))
				return NULL;
			c->offset += need;
			c->npend = 0;
			break;
		}
		take = need - c->npend;
		if (take > (size_t)(end - p))
			take = (size_t)(end - p);
		memcpy(c->pend + c->npend, p, take);
		c->npend += (uint32_t)take;
		p += take;
		if (c->npend < need)
			break; /* p == end: wait for more */
	}
	return p;
}

bool cacheray_feed(struct cacheray *c, const void *buf, size_t len)
{
	const uint8_t *p = buf, *end = p + len;

	if (c->failed)
		return false;
	if (!len)
		return true;
	if (c->npend) {
		p = cacheray_complete(c, p, end);
		if (!p)
			return false;
	}
	while (p < end) {
		const uint8_t *q = p;
		uint64_t base = c->offset - (uint64_t)(uintptr_t)p;
		size_t need;

		q = cacheray_run(c, q, end, base);
		c->offset += (uint64_t)(q - p);
		p = q;
		if (p == end)
			break;
		need = cacheray_size(c, p, (size_t)(end - p), c->offset);
		if (!need)
			return false;
		if ((size_t)(end - p) < need) {
			/* Cut by the chunk's end (need may only be the fixed
			 * part of an RTTA_ADD: cacheray_complete asks
			 * again). */
			c->npend = (uint32_t)(end - p);
			memcpy(c->pend, p, c->npend);
			break;
		}
		if (!cacheray_record(c, p, c->offset))
			return false;
		c->offset += need;
		p += need;
	}
	return true;
}

/* ---- life cycle (the queries are in cacheray_query.c) ---- */

static uint32_t cacheray_clamp(uint32_t v, uint32_t def, uint32_t lo,
			       uint32_t hi)
{
	v = v ? v : def;
	return v < lo ? lo : v > hi ? hi : v;
}

struct cacheray *cacheray_create(const struct cacheray_config *cfg)
{
	struct cacheray *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (cfg)
		c->cfg = *cfg;
	/* Indexes + 1 must fit the lines' uint16_t fields. */
	c->cfg.max_threads = cacheray_clamp(c->cfg.max_threads, 4096, 2, 65534);
	c->cfg.max_types = cacheray_clamp(c->cfg.max_types, 16384, 3, 65534);
	if (!c->cfg.max_member_offsets)
		c->cfg.max_member_offsets = 4u << 20;
	if (!c->cfg.max_name_bytes)
		c->cfg.max_name_bytes = 16u << 20;
	rtta_init(&c->rtta, c->cfg.max_regions);
	c->rtta.on_remove = cacheray_freed;
	c->rtta.ctx = c;
	c->types = calloc(c->cfg.max_types, sizeof(*c->types));
	c->threads = calloc(c->cfg.max_threads, sizeof(*c->threads));
	if (!c->types || !c->threads ||
	    !hashidx_init(&c->type_idx, c->cfg.max_types) ||
	    !hashidx_init(&c->thread_idx, c->cfg.max_threads) ||
	    !linetab_init(&c->lines, c->cfg.max_lines) ||
	    cacheray_type_new(c, "(untyped)", 9, 0, true) != 0)
		goto err;
	c->cfg.max_lines = c->lines.max;
	c->cfg.max_regions = c->rtta.max;
	c->adds_gen = 1; /* zeroed answers are stale */
	cacheray_rcache_set(c, 0);
	return c;
err:
	cacheray_destroy(c);
	return NULL;
}

void cacheray_destroy(struct cacheray *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; c->types && i < c->ntypes; i++) {
		free((char *)c->types[i].name);
		free(c->types[i].members);
	}
	free(c->types);
	free(c->threads);
	hashidx_finish(&c->type_idx);
	hashidx_finish(&c->thread_idx);
	linetab_finish(&c->lines);
	rtta_finish(&c->rtta);
	free(c);
}
