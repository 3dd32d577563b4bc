/*
 * ctxscan: the parked Boost.Context contexts of a process that was never
 * prepared -- no probe, no preload -- found by reading its memory (issue
 * 30's fallback, for runtimes whose lists are not walked).
 *
 * What a parked context leaves.  jump_fcontext and ontop_fcontext push
 * the registers they keep onto the stack they leave and return that
 * stack pointer as the fcontext_t (engine/target/fcsave.c has the layout
 * per Boost build).  So a parked context is a saved area in some
 * writable region -- a thread's stack, an mmap'd fiber stack, or the heap
 * that Boost's fixedsize_stack takes its stacks from -- whose return
 * address slot holds an address in code right after a call.
 *
 * Why that is not enough.  Every park a fiber ever made leaves such an
 * area on its stack, and an ordinary frame with a frame pointer looks
 * like one too (saved rbp, then the return address).  What sets a live
 * park apart is that its fcontext_t is kept: the runtime stores it (a
 * boost::context::fiber, a Boost.Fiber context's c_ member) to resume it
 * later.  So the scan makes two passes over every writable region:
 *
 *   1. areas: at each 8-byte aligned address p, the area of layout l at p
 *      must lie, with the sp after it, inside p's region, and its return
 *      address in an executable region right after a call (the reader's
 *      after_call, its answers kept); where the layout has a
 *      saved MXCSR, its reserved high half must be 0.  Unlike fcsave_check's
 *      rule for a published area, the frame pointer is not judged: a
 *      program built without frame pointers parks with anything in it;
 *   2. stores: every aligned word of writable memory is looked up among
 *      the areas; an area some word outside itself points at is found.
 *
 * Dead stack.  Below a running thread's sp nothing is kept: the caller
 * passes those ranges (it has the threads' registers), and areas and
 * words there do not count.  Below a parked context's saved area its
 * stack is dead too, but where a stack that lives in the heap begins is
 * not known here, and its old frames keep pointers to their callers'
 * locals -- which look like stores of the ordinary frames above them
 * (seen with ASan's frame-pointer builds: one such frame per task).  So a
 * context kept only by words of its own region just below it (within
 * CTXSCAN_NEAR) is found but marked unsure; a runtime keeps a parked
 * context's handle elsewhere (a queue in the heap, a global, another
 * context's frame).  The result is ordered by address, with the stores'
 * count.
 *
 * Untrusted input.  The maps text may lie: regions are taken to whole
 * words, sorted, overlaps cut, and every region is read in chunks, each
 * read checked; a chunk that cannot be read whole is read again page by
 * page, a page that fails counted and read as zeros; a region larger
 * than CTXSCAN_REGION_MAX (an ASan process maps 14 TiB of shadow
 * read-write) is counted and skipped.  Memory is bounded: the areas kept
 * between the passes (CTXSCAN_AREAS_MAX), the code checks kept (half of
 * CTXSCAN_PCS), the regions (CTXSCAN_REGIONS_MAX) and one chunk buffer.
 * The target is only read.
 */
#define _GNU_SOURCE /* ucontext_t's field names, REG_RSP */
#include "engine/scan/ctxscan.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GLIBC__)
#include <ucontext.h>
#define CTXSCAN_HAVE_UC 1
#else
#define CTXSCAN_HAVE_UC 0
#endif

#include "common/hash.h"
#include "engine/target/fcsave.h"
#include "engine/target/procfs.h"

/* The bytes read at once; a chunk that cannot be read whole is read
 * again page by page (CTXSCAN_PAGE), the pages that fail as zeros.  Both
 * can be set smaller for a test (the fuzz target's build). */
#ifndef CTXSCAN_CHUNK
#define CTXSCAN_CHUNK (256u << 10)
#endif
#ifndef CTXSCAN_PAGE
#define CTXSCAN_PAGE 4096u
#endif
/* glibc's ucontext_t, as swapcontext and getcontext fill it: the bytes
 * read of one (up to its fpregs pointer's end), the pointer's offset and
 * where it points (its own __fpregs_mem: each save writes the pointer),
 * and the saved registers' offsets.  0 where glibc's x86_64 layout is not
 * the one built against: no ucontext is looked for. */
#if CTXSCAN_HAVE_UC
#define CTXSCAN_UC_FPREGS offsetof(ucontext_t, uc_mcontext.fpregs)
#define CTXSCAN_UC_FPMEM offsetof(ucontext_t, __fpregs_mem)
#define CTXSCAN_UC_GREG(r)                                                     \
	(offsetof(ucontext_t, uc_mcontext.gregs) + 8u * (size_t)(r))
#define CTXSCAN_UC_SIZE (CTXSCAN_UC_FPREGS + 8u)
#define CTXSCAN_UC_SP CTXSCAN_UC_GREG(REG_RSP)
#define CTXSCAN_UC_FP CTXSCAN_UC_GREG(REG_RBP)
#define CTXSCAN_UC_PC CTXSCAN_UC_GREG(REG_RIP)
#else
#define CTXSCAN_UC_SIZE 0u
#define CTXSCAN_UC_PC 0u
#endif
/* A chunk's tail read again at the next chunk's head, so that an area
 * across the boundary is seen whole: the largest area of any layout, or
 * the part of a ucontext_t read. */
#define CTXSCAN_OVERLAP                                                        \
	((FCSAVE_AREA_MAX > CTXSCAN_UC_SIZE ? FCSAVE_AREA_MAX                  \
					    : CTXSCAN_UC_SIZE + 7u) &          \
	 ~7u)
_Static_assert(CTXSCAN_OVERLAP % 8 == 0 && CTXSCAN_CHUNK > CTXSCAN_OVERLAP &&
		       CTXSCAN_CHUNK % CTXSCAN_PAGE == 0 &&
		       CTXSCAN_PAGE % 8 == 0,
	       "chunks overlap by whole words, and hold whole pages");
/* At most this many slots looked at for one pc, and the pc table kept
 * at most half full: a miss costs little however many pcs a target
 * holds (past that, a pc is asked again each time). */
#define CTXSCAN_PC_PROBES 32u

/* An area kept between the passes (open addressing on `at`). */
struct ctxscan_area {
	uint64_t at; /* 0: empty */
	uint64_t fp, pc;
	uint64_t sp;	 /* a ucontext_t's saved sp (fcontext: from at) */
	bool uc;	 /* a ucontext_t at `at`, not a saved area */
	uint32_t region; /* index into the sorted writable regions */
	uint32_t stored;
	uint32_t stored_near; /* ... of them just below it, in its region */
	uint64_t stored_at;
};

/* A pc's verdict, cached (open addressing; pc 0: empty). */
struct ctxscan_pc {
	uint64_t pc;
	bool ok;
};
#define CTXSCAN_PCS_BITS 16
#define CTXSCAN_PCS (1u << CTXSCAN_PCS_BITS)

struct ctxscan {
	const struct fcsave_layout *l; /* NULL: no saved areas looked for */
	bool uc;		       /* ucontext_t looked for */
	const struct ctxscan_reader *rd;
	/* writable, executable, dead, running: sorted, disjoint */
	struct ctxscan_region *w, *x, *d, *run;
	size_t nw, nx, nd, nrun;
	struct ctxscan_area *areas;
	uint32_t areas_cap, nareas;
	struct ctxscan_pc *pcs;
	uint32_t npcs;	     /* pcs kept */
	uint64_t seed;	     /* hash_seed: the hashes' */
	uint64_t x_lo, x_hi; /* the executable regions' span */
	uint64_t lo, hi;     /* the areas' address range, for pass 2 */
	unsigned char *buf;
	struct ctxscan_stats st;
};

static int ctxscan_cmp(const void *a, const void *b)
{
	const struct ctxscan_region *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The regions with any of `flags`, sorted, overlaps cut off. */
static struct ctxscan_region *ctxscan_pick(const struct ctxscan_region *r,
					   size_t n, unsigned flags, bool words,
					   size_t *count)
{
	struct ctxscan_region *out = malloc((n ? n : 1) * sizeof(*out));
	size_t k = 0, kept = 0;
	uint64_t top = 0;

	if (!out)
		return NULL;
	/* Whole words only (words): a lying maps text may give any
	 * bounds, and the passes read aligned words from a region's
	 * start.  Ranges to test addresses against stay as given. */
	for (size_t i = 0; i < n; i++) {
		struct ctxscan_region a = r[i];

		if (words) {
			a.lo = a.lo > UINT64_MAX - 7 ? UINT64_MAX & ~7ull
						     : (a.lo + 7) & ~7ull;
			a.hi &= ~7ull;
		}
		if ((a.flags & flags) && a.lo < a.hi)
			out[k++] = a;
	}
	qsort(out, k, sizeof(*out), ctxscan_cmp);
	/* Each byte in one region: what an earlier region covers is cut
	 * off (top: the highest end kept), a region left empty dropped. */
	for (size_t i = 0; i < k; i++) {
		if (out[i].lo < top)
			out[i].lo = top;
		if (out[i].lo >= out[i].hi)
			continue;
		top = out[i].hi;
		out[kept++] = out[i];
	}
	*count = kept;
	return out;
}

/* A layout the scan can read: its area within the chunks' overlap, its
 * slots inside it. */
static bool ctxscan_layout_ok(const struct fcsave_layout *l)
{
	return l && l->size <= CTXSCAN_OVERLAP && l->size >= 8 &&
	       l->pc_at <= l->size - 8 && l->fp_at <= l->size - 8 &&
	       (!l->has_mxcsr || l->mxcsr_at <= l->size - 4);
}

/* Ranges as regions, sorted, disjoint (to share the sort and the
 * search); NULL when out of memory. */
static struct ctxscan_region *ctxscan_ranges(const struct ctxscan_range *r,
					     size_t n, size_t *count)
{
	struct ctxscan_region *tmp = malloc((n ? n : 1) * sizeof(*tmp));
	struct ctxscan_region *out;

	if (!tmp)
		return NULL;
	for (size_t i = 0; i < n; i++)
		tmp[i] = (struct ctxscan_region){
			.lo = r[i].lo, .hi = r[i].hi, .flags = CTXSCAN_W};
	out = ctxscan_pick(tmp, n, CTXSCAN_W, false, count);
	free(tmp);
	return out;
}

/* The index of the region holding addr, or -1. */
static long ctxscan_find(const struct ctxscan_region *r, size_t n,
			 uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < r[mid].lo)
			hi = mid;
		else if (addr >= r[mid].hi)
			lo = mid + 1;
		else
			return (long)mid;
	}
	return -1;
}

static uint64_t ctxscan_word(const unsigned char *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

static uint32_t ctxscan_u32(const unsigned char *p)
{
	uint32_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

/* Whether pc (already found in an executable region) follows a call:
 * the reader's answer, kept in a small table. */
static bool ctxscan_code(struct ctxscan *s, uint64_t pc)
{
	struct ctxscan_pc *e, *empty = NULL;
	uint32_t h;
	bool ok;

	h = (uint32_t)hash_fib(pc ^ s->seed, 64 - CTXSCAN_PCS_BITS);
	for (uint32_t k = 0; k < CTXSCAN_PC_PROBES; k++) {
		e = &s->pcs[(h + k) & (CTXSCAN_PCS - 1)];
		if (e->pc == pc)
			return e->ok;
		if (!e->pc) {
			empty = e;
			break;
		}
	}
	s->st.code_checks++;
	ok = s->rd->after_call(s->rd->ctx, pc);
	if (empty && s->npcs < CTXSCAN_PCS / 2) {
		empty->pc = pc;
		empty->ok = ok;
		s->npcs++;
	}
	return ok;
}

static struct ctxscan_area *ctxscan_slot(struct ctxscan *s, uint64_t at)
{
	uint32_t mask = s->areas_cap - 1;
	/* The addresses are the target's: seeded, so none can pick slots. */
	uint32_t h = (uint32_t)hash_fib(
		at ^ s->seed, 64 - (unsigned)__builtin_ctz(s->areas_cap));

	for (;; h = (h + 1) & mask)
		if (s->areas[h].at == at || !s->areas[h].at)
			return &s->areas[h];
}

/* Twice the room for areas (kept at most half full), up to
 * CTXSCAN_AREAS_MAX of them; false when it may not or can not. */
static bool ctxscan_grow(struct ctxscan *s)
{
	struct ctxscan_area *old = s->areas;
	uint32_t cap = s->areas_cap;

	if (cap >= 2 * CTXSCAN_AREAS_MAX)
		return false;
	s->areas = calloc((size_t)cap * 2, sizeof(*s->areas));
	if (!s->areas) {
		s->areas = old;
		return false;
	}
	s->areas_cap = cap * 2;
	for (uint32_t i = 0; i < cap; i++)
		if (old[i].at)
			*ctxscan_slot(s, old[i].at) = old[i];
	free(old);
	return true;
}

/* Keep a found context (an area, or a ucontext_t) for pass 2. */
static void ctxscan_keep(struct ctxscan *s, const struct ctxscan_area *in)
{
	struct ctxscan_area *a;

	if (s->nareas >= s->areas_cap / 2 && !ctxscan_grow(s)) {
		s->st.areas_lost++;
		return;
	}
	a = ctxscan_slot(s, in->at);
	/* A saved area and a ucontext_t at one address (only bytes made
	 * up can be both): the first is kept, the other counted lost. */
	if (a->at) {
		s->st.areas_lost++;
		return;
	}
	*a = *in;
	s->nareas++;
	if (in->at < s->lo)
		s->lo = in->at;
	if (in->at > s->hi)
		s->hi = in->at;
}

/* A saved area of the layout at `at` (its bytes at b), in region wi. */
static void ctxscan_area_at(struct ctxscan *s, size_t wi, uint64_t at,
			    const unsigned char *b)
{
	const struct fcsave_layout *l = s->l;
	const struct ctxscan_region *r = &s->w[wi];
	uint64_t fp, pc;

	if (!fcsave_in_stack(l, at, r->lo, r->hi))
		return;
	/* A saved MXCSR has its reserved bits clear: an array of return
	 * addresses (a sanitizer's or profiler's stack traces) does not. */
	if (l->has_mxcsr && ctxscan_u32(b + l->mxcsr_at) >> 16)
		return;
	pc = ctxscan_word(b + l->pc_at);
	if (pc < s->x_lo || pc >= s->x_hi || ctxscan_find(s->x, s->nx, pc) < 0)
		return;
	/* The frame pointer is not judged: code built without frame
	 * pointers keeps anything in it (a live park's rbp can hold an
	 * address in libboost_context itself). */
	fp = ctxscan_word(b + l->fp_at);
	if (!ctxscan_code(s, pc))
		return;
	s->st.areas++;
	if (ctxscan_find(s->d, s->nd, at) >= 0) {
		s->st.dead++;
		return;
	}
	if (ctxscan_find(s->run, s->nrun, at) >= 0) {
		s->st.running++;
		return;
	}
	ctxscan_keep(s, &(struct ctxscan_area){.at = at,
					       .fp = fp,
					       .pc = pc,
					       .region = (uint32_t)wi});
}

#if CTXSCAN_HAVE_UC
/* A ucontext_t at `at` (its first CTXSCAN_UC_SIZE bytes at b), that
 * swapcontext or getcontext filled: its fpregs pointer points into
 * itself, its saved sp lies in a writable region, its saved pc right
 * after a call.  The struct is the context: it keeps itself (stored
 * once, at itself), unless it lies in dead stack; one whose sp lies in
 * dead stack or running frames is running, or was left behind. */
static void ctxscan_uc_at(struct ctxscan *s, uint64_t at,
			  const unsigned char *b)
{
	uint64_t sp, pc, ret;
	long wi;

	if (ctxscan_word(b + CTXSCAN_UC_FPREGS) != at + CTXSCAN_UC_FPMEM)
		return;
	sp = ctxscan_word(b + CTXSCAN_UC_SP);
	pc = ctxscan_word(b + CTXSCAN_UC_PC);
	if ((sp & 7) || (wi = ctxscan_find(s->w, s->nw, sp)) < 0 ||
	    pc < s->x_lo || pc >= s->x_hi ||
	    ctxscan_find(s->x, s->nx, pc) < 0 || !ctxscan_code(s, pc))
		return;
	s->st.ucontexts++;
	/* swapcontext saved its return address from the stack's top (pc at
	 * sp - 8): a context that resumed has since called something else
	 * from there, one still parked has not.  (A coroutine that ended
	 * right after its last resume, calling nothing, still passes.) */
	if (!s->rd->read(s->rd->ctx, sp - 8, &ret, sizeof(ret)) || ret != pc) {
		s->st.moved++;
		return;
	}
	if (ctxscan_find(s->d, s->nd, at) >= 0 ||
	    ctxscan_find(s->d, s->nd, sp) >= 0) {
		s->st.dead++;
		return;
	}
	if (ctxscan_find(s->run, s->nrun, sp) >= 0) {
		s->st.running++;
		return;
	}
	ctxscan_keep(
		s, &(struct ctxscan_area){.at = at,
					  .sp = sp,
					  .fp = ctxscan_word(b + CTXSCAN_UC_FP),
					  .pc = pc,
					  .uc = true,
					  .region = (uint32_t)wi,
					  .stored = 1,
					  .stored_at = at});
}
#endif

/* Pass 1 on one chunk: [base, base + len) of writable region wi, the
 * areas (and ucontext_t) that start before `end` (the rest are the next
 * chunk's). */
static void ctxscan_areas_in(struct ctxscan *s, size_t wi, uint64_t base,
			     const unsigned char *b, size_t len, uint64_t end)
{
	for (size_t off = (8 - (base & 7)) & 7; off + 8 <= len; off += 8) {
		uint64_t at = base + off;

		if (at >= end)
			break;
		if (!at) /* 0 marks an empty slot (a lying maps text) */
			continue;
		if (s->l && off + s->l->size <= len)
			ctxscan_area_at(s, wi, at, b + off);
#if CTXSCAN_HAVE_UC
		if (s->uc && off + CTXSCAN_UC_SIZE <= len &&
		    at + CTXSCAN_UC_SIZE <= s->w[wi].hi)
			ctxscan_uc_at(s, at, b + off);
#endif
	}
}

/* Pass 2 on one chunk: the words that point at a kept area. */
static void ctxscan_stores_in(struct ctxscan *s, size_t wi, uint64_t base,
			      const unsigned char *b, size_t len)
{
	for (size_t off = (8 - (base & 7)) & 7; off + 8 <= len; off += 8) {
		uint64_t v = ctxscan_word(b + off), where = base + off;
		struct ctxscan_area *a;

		if (v < s->lo || v > s->hi || (v & 7))
			continue;
		a = ctxscan_slot(s, v);
		if (!a->at)
			continue;
		/* A word of the area itself keeps nothing, nor one in dead
		 * stack. */
		if ((where >= v &&
		     where - v < (a->uc ? CTXSCAN_UC_SIZE : s->l->size)) ||
		    ctxscan_find(s->d, s->nd, where) >= 0)
			continue;
		if (!a->stored || where < a->stored_at)
			a->stored_at = where;
		/* Saturating: one value in 2^32 words (a page mapped many
		 * times) must not wrap to "kept by nothing". */
		if (a->stored == UINT32_MAX)
			continue;
		a->stored++;
		if (a->region == wi && where < v && v - where <= CTXSCAN_NEAR)
			a->stored_near++;
	}
}

/* len bytes at `at` into the buffer: whole, or else page by page, a page
 * that cannot be read left as zeros (no pc, no store: nothing).  The
 * bytes that could not be read are counted in pass 1. */
static void ctxscan_fill(struct ctxscan *s, int pass, uint64_t at, size_t len)
{
	if (s->rd->read(s->rd->ctx, at, s->buf, len))
		return;
	for (size_t off = 0; off < len;) {
		/* To the next page boundary (at is 8-aligned, maybe not
		 * page-aligned). */
		size_t n = CTXSCAN_PAGE - (size_t)((at + off) % CTXSCAN_PAGE);

		if (n > len - off)
			n = len - off;
		if (!s->rd->read(s->rd->ctx, at + off, s->buf + off, n)) {
			memset(s->buf + off, 0, n);
			if (pass == 1)
				s->st.unread += n;
		}
		off += n;
	}
}

/* Each writable region in chunks, overlapping by CTXSCAN_OVERLAP;
 * pass 1 (areas) or 2 (stores). */
static void ctxscan_pass(struct ctxscan *s, int pass)
{
	for (size_t i = 0; i < s->nw; i++) {
		const struct ctxscan_region *r = &s->w[i];

		if (r->hi - r->lo > CTXSCAN_REGION_MAX) {
			if (pass == 1)
				s->st.skipped += r->hi - r->lo;
			continue;
		}
		if (pass == 1)
			s->st.regions++;
		for (uint64_t at = r->lo; at < r->hi;) {
			uint64_t left = r->hi - at;
			size_t len = left < CTXSCAN_CHUNK ? (size_t)left
							  : CTXSCAN_CHUNK;
			uint64_t next = at + len;

			if (pass == 1)
				s->st.bytes += len;
			ctxscan_fill(s, pass, at, len);
			if (pass == 1) {
				/* Areas starting in [at, next - overlap),
				 * unless this is the region's last chunk. */
				uint64_t end = next < r->hi
						       ? next - CTXSCAN_OVERLAP
						       : next;

				ctxscan_areas_in(s, i, at, s->buf, len, end);
				next = end;
			} else {
				ctxscan_stores_in(s, i, at, s->buf, len);
			}
			at = next;
		}
	}
}

static int ctxscan_area_cmp(const void *a, const void *b)
{
	const struct ctxscan_area *x = a, *y = b;

	return x->at < y->at ? -1 : x->at > y->at;
}

/* After both passes: the kept areas something stores, lowest first, into
 * out (at most max); the table is not a table any more after it. */
static size_t ctxscan_take(struct ctxscan *s, struct ctxscan_found *out,
			   size_t max)
{
	uint32_t n = 0;
	size_t k = 0;

	for (uint32_t i = 0; i < s->areas_cap; i++) {
		const struct ctxscan_area *a = &s->areas[i];

		if (!a->at)
			continue;
		if (!a->stored)
			s->st.not_stored++;
		else
			s->areas[n++] = *a; /* n <= i */
	}
	qsort(s->areas, n, sizeof(*s->areas), ctxscan_area_cmp);
	s->st.found = n;
	for (uint32_t i = 0; i < n; i++) {
		const struct ctxscan_area *a = &s->areas[i];

		if (k == max) {
			s->st.found_lost = n - i;
			break;
		}
		out[k++] = (struct ctxscan_found){
			.at = a->at,
			.sp = a->uc ? a->sp : a->at + s->l->sp_after,
			.fp = a->fp,
			.pc = a->pc,
			.pc_at = a->at + (a->uc ? CTXSCAN_UC_PC : s->l->pc_at),
			.stack_lo = s->w[a->region].lo,
			.stack_hi = s->w[a->region].hi,
			.stored_at = a->stored_at,
			.stored = a->stored,
			.unsure = a->stored == a->stored_near,
			.ucontext = a->uc,
		};
		s->st.unsure += a->stored == a->stored_near;
	}
	return k;
}

size_t ctxscan_fcontext(const struct ctxscan_input *in,
			struct ctxscan_found *out, size_t max,
			struct ctxscan_stats *st)
{
	struct ctxscan s = {.lo = UINT64_MAX, .seed = hash_seed()};
	size_t k = 0;

	if (st)
		memset(st, 0, sizeof(*st));
	if (!in || (in->layout && !ctxscan_layout_ok(in->layout)) ||
	    (!in->layout && !in->ucontext) || (!out && max) ||
	    !in->reader.read || !in->reader.after_call ||
	    (!in->regions && in->nregions) || (!in->dead && in->ndead) ||
	    (!in->running && in->nrunning) ||
	    in->nregions > CTXSCAN_REGIONS_MAX ||
	    in->ndead > CTXSCAN_REGIONS_MAX ||
	    in->nrunning > CTXSCAN_REGIONS_MAX) {
		if (st)
			st->refused = true;
		return 0;
	}
	s.l = in->layout;
	s.uc = in->ucontext && CTXSCAN_HAVE_UC;
	s.rd = &in->reader;
	s.d = ctxscan_ranges(in->dead, in->ndead, &s.nd);
	s.run = ctxscan_ranges(in->running, in->nrunning, &s.nrun);
	s.w = ctxscan_pick(in->regions, in->nregions, CTXSCAN_W, true, &s.nw);
	s.x = ctxscan_pick(in->regions, in->nregions, CTXSCAN_X, true, &s.nx);
	s.areas_cap = 4096; /* grows to 2 * CTXSCAN_AREAS_MAX */
	s.areas = calloc(s.areas_cap, sizeof(*s.areas));
	s.pcs = calloc(CTXSCAN_PCS, sizeof(*s.pcs));
	s.buf = malloc(CTXSCAN_CHUNK);
	if (s.d && s.run && s.w && s.x && s.areas && s.pcs && s.buf) {
		if (s.nx) {
			s.x_lo = s.x[0].lo;
			s.x_hi = s.x[s.nx - 1].hi;
		}
		ctxscan_pass(&s, 1);
		if (s.nareas)
			ctxscan_pass(&s, 2);
		k = ctxscan_take(&s, out, max);
	} else {
		s.st.oom = true;
	}
	free(s.buf);
	free(s.pcs);
	free(s.areas);
	free(s.x);
	free(s.w);
	free(s.d);
	free(s.run);
	if (st)
		*st = s.st;
	return k;
}

size_t ctxscan_regions(const char *maps, size_t len, struct ctxscan_region *out,
		       size_t max)
{
	const char *p = maps, *end = maps + len;
	size_t k = 0;

	while (p < end && k < max) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		struct procfs_maps_line m;

		if (procfs_maps_line(p, (size_t)(eol - p), &m) &&
		    !(m.path_len == 10 && !memcmp(m.path, "[vsyscall]", 10)) &&
		    !(m.path_len == 6 && !memcmp(m.path, "[vvar]", 6)))
			out[k++] = (struct ctxscan_region){
				.lo = m.start,
				.hi = m.end,
				.flags = (m.read ? CTXSCAN_R : 0u) |
					 (m.write ? CTXSCAN_W : 0u) |
					 (m.exec ? CTXSCAN_X : 0u),
			};
		p = nl ? nl + 1 : end;
	}
	return k;
}

bool ctxscan_split(const struct ctxscan_region *r, size_t n, uint64_t sp,
		   struct ctxscan_range *dead, struct ctxscan_range *running)
{
	for (size_t i = 0; i < n; i++)
		if ((r[i].flags & CTXSCAN_W) && sp > r[i].lo && sp < r[i].hi) {
			*dead = (struct ctxscan_range){r[i].lo, sp};
			*running = (struct ctxscan_range){sp, r[i].hi};
			return true;
		}
	return false;
}
