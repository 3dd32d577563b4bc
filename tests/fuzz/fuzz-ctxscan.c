/*
 * fuzz-ctxscan: the memory scan for parked contexts
 * (src/engine/scan/ctxscan.c) on a process made of arbitrary bytes --
 * what a target's memory and maps text can hold: any words, any regions.
 *
 * The input builds up to FZ_REGIONS regions at fixed, disjoint places
 * (each up to FZ_SPAN bytes, some starting off a word boundary, any of
 * r/w/x, readable or not, some with unreadable pages), fills their
 * bytes (raw, or words planted to point at another region's addresses,
 * its 8-byte aligned ones most often, so that areas and stores are
 * reached), picks dead ranges, a max, and sometimes adds lying regions
 * that overlap the others; the layout saves MXCSR or not.  This build's
 * scan reads 512-byte chunks of 64-byte pages (scan_small_dep), so chunk
 * ends and page retries are met at every region size.  The code check
 * says "after a call" for pcs
 * whose low nibble the input chose.  Nothing may crash or read outside a
 * region, and:
 *   - areas == dead + running + areas_lost + not_stored + found, and the count
 *     returned is min(found, max), found_lost the rest;
 *   - without lying regions, the result is exactly a brute-force scan's:
 *     every 8-aligned p in a readable writable region with the area and
 *     the sp after it inside, its pc in an executable region and "after a
 *     call", not in a dead or running range, whose value some word of a
 *     readable writable region holds, outside [p, p + size) and outside
 *     the dead ranges -- lowest first, with the store count, the lowest
 *     store address, and unsure when every store lies in its region
 *     within CTXSCAN_NEAR below it.
 *
 * Built as a libFuzzer target with clang (-Dfuzz=true) and, always, with
 * tests/fuzz/driver.c, which replays a seeded pseudo-random corpus.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzzin.h"
#include "engine/scan/ctxscan.h"
#include "engine/target/fcsave.h"

#define FZ_REGIONS 5
#define FZ_SPAN 4096u
#define FZ_BASE 0x100000u
#define FZ_STRIDE 0x10000u /* region i lies at FZ_BASE + i * FZ_STRIDE */
#define FZ_OUT 64

static struct fcsave_layout fz_layout = {
	.lib = "fuzz",
	.arch = "fuzz",
	.size = 0x40,
	.fp_at = 0x30,
	.pc_at = 0x38,
	.sp_after = 0x40,
};

struct fz_mem {
	uint64_t lo, hi; /* as declared: lo may be unaligned */
	unsigned flags;
	bool readable;
	uint64_t bad_lo, bad_hi; /* whole FZ_PAGEs that cannot be read */
	unsigned char bytes[FZ_SPAN + 8];
};

/* The scan's page and chunk in this build (meson: scan_small_dep). */
#define FZ_PAGE 64u

struct fz {
	struct fz_mem mem[FZ_REGIONS];
	unsigned nmem;
	unsigned call_nibble; /* pcs ending in it are "after a call" */
};

static bool fz_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	struct fz *f = ctx;

	for (unsigned i = 0; i < f->nmem; i++) {
		const struct fz_mem *m = &f->mem[i];

		if (addr >= m->lo && addr < m->hi && n <= m->hi - addr) {
			if (!m->readable ||
			    (addr < m->bad_hi && addr + n > m->bad_lo))
				return false;
			memcpy(buf, m->bytes + (addr - m->lo), n);
			return true;
		}
	}
	return false;
}

static bool fz_after_call(void *ctx, uint64_t pc)
{
	const struct fz *f = ctx;

	return (pc & 0xf) == f->call_nibble;
}

/* A word as the scan sees it: 0 in a page that cannot be read. */
static uint64_t fz_word(const struct fz_mem *m, uint64_t at)
{
	uint64_t w;

	if (at < m->bad_hi && at + 8 > m->bad_lo)
		return 0;
	memcpy(&w, m->bytes + (at - m->lo), 8);
	return w;
}

/* A region's bounds as the scan takes them: whole words. */
static uint64_t fz_lo(const struct fz_mem *m)
{
	return (m->lo + 7) & ~7ull;
}

static uint64_t fz_hi(const struct fz_mem *m)
{
	return m->hi & ~7ull;
}

static bool fz_in_ranges(const struct ctxscan_range *r, size_t n, uint64_t a)
{
	for (size_t i = 0; i < n; i++)
		if (a >= r[i].lo && a < r[i].hi)
			return true;
	return false;
}

static bool fz_exec(const struct fz *f, uint64_t pc)
{
	for (unsigned i = 0; i < f->nmem; i++)
		if ((f->mem[i].flags & CTXSCAN_X) && pc >= fz_lo(&f->mem[i]) &&
		    pc < fz_hi(&f->mem[i]))
			return true;
	return false;
}

/* The brute-force scan (regions disjoint): what ctxscan must find. */
static size_t fz_expect(const struct fz *f, const struct ctxscan_range *dead,
			size_t ndead, const struct ctxscan_range *run,
			size_t nrun, struct ctxscan_found *out, size_t max,
			uint64_t *found)

{
	size_t k = 0;

	*found = 0;
	for (unsigned i = 0; i < f->nmem; i++) {
		const struct fz_mem *m = &f->mem[i];

		if (!(m->flags & CTXSCAN_W) || !m->readable)
			continue;
		for (uint64_t p = fz_lo(m); p + fz_layout.sp_after < fz_hi(m);
		     p += 8) {
			uint64_t pc = fz_word(m, p + fz_layout.pc_at);
			uint64_t ctl = fz_word(m, p + fz_layout.mxcsr_at);
			struct ctxscan_found e = {0};
			uint32_t near = 0;

			if ((fz_layout.has_mxcsr && (uint32_t)ctl >> 16) ||
			    !p || !fz_exec(f, pc) ||
			    !fz_after_call((void *)f, pc) ||
			    fz_in_ranges(dead, ndead, p) ||
			    fz_in_ranges(run, nrun, p))
				continue;
			for (unsigned j = 0; j < f->nmem; j++) {
				const struct fz_mem *s = &f->mem[j];

				if (!(s->flags & CTXSCAN_W) || !s->readable)
					continue;
				for (uint64_t w = fz_lo(s); w + 8 <= fz_hi(s);
				     w += 8) {
					if (fz_word(s, w) != p ||
					    (w >= p &&
					     w - p < fz_layout.size) ||
					    fz_in_ranges(dead, ndead, w))
						continue;
					if (!e.stored || w < e.stored_at)
						e.stored_at = w;
					e.stored++;
					near += j == i && w < p &&
						p - w <= CTXSCAN_NEAR;
				}
			}
			if (!e.stored)
				continue;
			e.at = p;
			e.sp = p + fz_layout.sp_after;
			e.fp = fz_word(m, p + fz_layout.fp_at);
			e.pc = pc;
			e.stack_lo = fz_lo(m);
			e.stack_hi = fz_hi(m);
			e.unsure = near == e.stored;
			(*found)++;
			if (k < max)
				out[k++] = e;
		}
	}
	return k;
}

/* Field by field: the struct has padding. */
static bool fz_same(const struct ctxscan_found *a,
		    const struct ctxscan_found *b)
{
	return a->at == b->at && a->sp == b->sp && a->fp == b->fp &&
	       a->pc == b->pc && a->stack_lo == b->stack_lo &&
	       a->stack_hi == b->stack_hi && a->stored_at == b->stored_at &&
	       a->stored == b->stored && a->unsure == b->unsure;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fz f;
	struct fz_in in = {.d = data, .n = size};
	struct ctxscan_region reg[FZ_REGIONS + 2];
	struct ctxscan_range dead[2], run[2];
	struct ctxscan_found got[FZ_OUT], want[FZ_OUT];
	struct ctxscan_stats st;
	size_t nreg, ndead, nrun, max, n, nw;
	uint64_t found;
	bool lying;

	memset(&f, 0, sizeof(f));
	fz_layout.has_mxcsr = fz_u8(&in) % 2;
	f.nmem = 1 + fz_u8(&in) % FZ_REGIONS;
	f.call_nibble = fz_u8(&in) & 0xf;
	for (unsigned i = 0; i < f.nmem; i++) {
		struct fz_mem *m = &f.mem[i];
		unsigned len = 8 * (1 + fz_u16(&in) % (FZ_SPAN / 8));

		uint8_t shape = fz_u8(&in);

		m->lo = FZ_BASE + (uint64_t)i * FZ_STRIDE +
			(shape % 8 == 0 ? shape / 8 % 8 : 0);
		m->hi = m->lo + len;
		m->flags = fz_u8(&in) & 7;
		m->readable = fz_u8(&in) % 8 != 0;
		if (shape % 4 == 1) { /* a run of whole pages unreadable */
			uint64_t a = (m->lo + fz_u16(&in) % len) &
				     ~(uint64_t)(FZ_PAGE - 1);

			m->bad_lo = a;
			m->bad_hi = a + FZ_PAGE * (1 + fz_u8(&in) % 4);
		}
	}
	/* The bytes: words raw, or pointing into a region (aligned most of
	 * the time), or runs left 0. */
	for (unsigned i = 0; i < f.nmem; i++) {
		struct fz_mem *m = &f.mem[i];

		for (uint64_t at = 0; at + 8 <= m->hi - m->lo; at += 8) {
			/* (a word may start at an unaligned lo: the scan
			 * reads whole words from fz_lo) */
			uint8_t how = fz_u8(&in);
			uint64_t w = 0;

			if (in.pos >= in.n)
				break;
			if (how < 64) {
				w = fz_u64(&in);
			} else if (how < 192) {
				const struct fz_mem *t =
					&f.mem[fz_u8(&in) % f.nmem];
				uint64_t off = fz_u16(&in) % (t->hi - t->lo);

				w = t->lo + (how < 160 ? off & ~7ull : off);
			}
			memcpy(m->bytes + at, &w, 8);
		}
	}
	nreg = 0;
	for (unsigned i = 0; i < f.nmem; i++)
		reg[nreg++] = (struct ctxscan_region){f.mem[i].lo, f.mem[i].hi,
						      f.mem[i].flags};
	lying = fz_u8(&in) % 4 == 0;
	if (lying) {
		/* Overlaps: a region across two others, and one inside. */
		reg[nreg++] = (struct ctxscan_region){
			FZ_BASE + fz_u16(&in),
			FZ_BASE + fz_u32(&in) % (FZ_REGIONS * FZ_STRIDE),
			fz_u8(&in) & 7};
		reg[nreg++] = (struct ctxscan_region){
			FZ_BASE + 8, FZ_BASE + 8 + fz_u16(&in) % FZ_SPAN,
			fz_u8(&in) & 7};
	}
	ndead = fz_u8(&in) % 3;
	for (size_t i = 0; i < ndead; i++) {
		const struct fz_mem *t = &f.mem[fz_u8(&in) % f.nmem];
		uint64_t a = t->lo + fz_u16(&in) % FZ_SPAN;

		dead[i] = (struct ctxscan_range){a, a + fz_u16(&in) % FZ_SPAN};
	}
	nrun = fz_u8(&in) % 3;
	for (size_t i = 0; i < nrun; i++) {
		const struct fz_mem *t = &f.mem[fz_u8(&in) % f.nmem];
		uint64_t a = t->lo + fz_u16(&in) % FZ_SPAN;

		run[i] = (struct ctxscan_range){a, a + fz_u16(&in) % FZ_SPAN};
	}
	max = fz_u8(&in) % (FZ_OUT + 1);

	const struct ctxscan_input input = {
		.regions = reg,
		.nregions = nreg,
		.dead = dead,
		.ndead = ndead,
		.running = run,
		.nrunning = nrun,
		.layout = &fz_layout,
		.reader = {.read = fz_read,
			   .after_call = fz_after_call,
			   .ctx = &f},
	};

	struct ctxscan_input with_uc = input;

	/* With glibc's ucontext_t looked for too: every struct found is
	 * accounted for (kept by itself: never "not stored"), the result
	 * stays ordered and bounded; the oracle below knows saved areas
	 * only. */
	with_uc.ucontext = true;
	n = ctxscan_fcontext(&with_uc, got, max, &st);
	if (!st.oom && (st.areas + st.ucontexts - st.moved !=
				st.dead + st.running + st.areas_lost +
					st.not_stored + st.found ||
			n != (st.found < max ? st.found : max)))
		abort();
	for (size_t i = 1; i < n; i++)
		if (got[i].at <= got[i - 1].at)
			abort();
	n = ctxscan_fcontext(&input, got, max, &st);
	if (st.oom)
		return 0;
	if (st.areas != st.dead + st.running + st.areas_lost + st.not_stored +
				st.found ||
	    n != (st.found < max ? st.found : max) ||
	    st.found_lost != st.found - n)
		abort();
	for (size_t i = 1; i < n; i++)
		if (got[i].at <= got[i - 1].at)
			abort();
	if (lying)
		return 0;
	nw = fz_expect(&f, dead, ndead, run, nrun, want, max, &found);
	if (found != st.found || nw != n)
		abort();
	for (size_t i = 0; i < n; i++)
		if (!fz_same(&got[i], &want[i]))
			abort();
	return 0;
}
