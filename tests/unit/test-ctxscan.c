/*
 * test-ctxscan: the memory scan for parked Boost.Context contexts
 * (src/engine/scan/ctxscan.c) on a synthetic process: regions backed by
 * buffers, a reader that refuses what is not backed, and a code check
 * that says "after a call" for a chosen set of return addresses.  Every
 * case knows exactly which areas are parked contexts, which are dead or
 * ordinary frames, and which words keep them, and checks the counts.
 * The same for glibc's ucontext_t, as swapcontext leaves one.
 */
#define _GNU_SOURCE /* ucontext_t's field names, REG_RSP */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <cmocka.h>

#include "engine/scan/ctxscan.h"
#include "engine/target/fcsave.h"

/* Boost 1.74 x86_64's shape, written here so the test runs anywhere. */
static const struct fcsave_layout fx_layout = {
	.lib = "test",
	.arch = "test",
	.size = 0x40,
	.fp_at = 0x30,
	.pc_at = 0x38,
	.sp_after = 0x40,
};

#define FX_MAX 8

struct fx_mem {
	uint64_t lo, hi;
	unsigned char *bytes;	 /* NULL: mapped but unreadable */
	uint64_t bad_lo, bad_hi; /* a part that cannot be read */
};

struct fx {
	struct fx_mem mem[FX_MAX];
	struct ctxscan_region reg[FX_MAX];
	size_t n;
	const struct fcsave_layout *layout; /* NULL: fx_layout */
	bool no_layout;			    /* ... or none at all */
	bool uc;			    /* ucontext_t looked for */
	struct ctxscan_range dead[4], running[4];
	size_t ndead, nrunning;
	uint64_t calls_pc[64]; /* pcs whose after_call was asked */
	size_t ncalls;
};

static bool fx_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	struct fx *f = ctx;

	for (size_t i = 0; i < f->n; i++) {
		const struct fx_mem *m = &f->mem[i];

		if (addr >= m->lo && addr < m->hi && n <= m->hi - addr) {
			if (!m->bytes ||
			    (addr < m->bad_hi && addr + n > m->bad_lo))
				return false;
			memcpy(buf, m->bytes + (addr - m->lo), n);
			return true;
		}
	}
	return false;
}

/* "After a call": a pc whose low nibble is 5. */
static bool fx_after_call(void *ctx, uint64_t pc)
{
	struct fx *f = ctx;

	if (f->ncalls < 64)
		f->calls_pc[f->ncalls] = pc;
	f->ncalls++;
	return (pc & 0xf) == 5;
}

static size_t fx_add(struct fx *f, uint64_t lo, uint64_t hi, unsigned flags,
		     bool readable)
{
	size_t i = f->n++;

	assert_true(i < FX_MAX);
	f->mem[i] = (struct fx_mem){
		.lo = lo,
		.hi = hi,
		.bytes = readable ? calloc(1, (size_t)(hi - lo)) : NULL};
	f->reg[i] = (struct ctxscan_region){.lo = lo, .hi = hi, .flags = flags};
	assert_true(!readable || f->mem[i].bytes);
	return i;
}

static void fx_put(struct fx *f, uint64_t addr, uint64_t v)
{
	for (size_t i = 0; i < f->n; i++)
		if (addr >= f->mem[i].lo && addr + 8 <= f->mem[i].hi) {
			memcpy(f->mem[i].bytes + (addr - f->mem[i].lo), &v, 8);
			return;
		}
	fail_msg("no region holds %#llx", (unsigned long long)addr);
}

/* A saved area at `at`: frame pointer fp, return address pc. */
static void fx_area(struct fx *f, uint64_t at, uint64_t fp, uint64_t pc)
{
	fx_put(f, at + fx_layout.fp_at, fp);
	fx_put(f, at + fx_layout.pc_at, pc);
}

/* A ucontext_t at `at` as swapcontext fills it: its fpregs pointer at
 * its own __fpregs_mem, saved sp and pc; with `parked`, the stack's top
 * word (sp - 8) still the return address the call pushed. */
static void fx_uc(struct fx *f, uint64_t at, uint64_t sp, uint64_t pc,
		  bool parked)
{
	fx_put(f, at + offsetof(ucontext_t, uc_mcontext.fpregs),
	       at + offsetof(ucontext_t, __fpregs_mem));
	fx_put(f, at + offsetof(ucontext_t, uc_mcontext.gregs) + 8 * REG_RSP,
	       sp);
	fx_put(f, at + offsetof(ucontext_t, uc_mcontext.gregs) + 8 * REG_RIP,
	       pc);
	fx_put(f, sp - 8, parked ? pc : pc + 0x100);
}

static void fx_free(struct fx *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->mem[i].bytes);
}

static size_t fx_scan(struct fx *f, struct ctxscan_found *out, size_t max,
		      struct ctxscan_stats *st)
{
	const struct ctxscan_input in = {
		.regions = f->reg,
		.nregions = f->n,
		.dead = f->dead,
		.ndead = f->ndead,
		.running = f->running,
		.nrunning = f->nrunning,
		.layout = f->no_layout ? NULL
			  : f->layout  ? f->layout
				       : &fx_layout,
		.ucontext = f->uc,
		.reader = {.read = fx_read,
			   .after_call = fx_after_call,
			   .ctx = f},
	};

	return ctxscan_fcontext(&in, out, max, st);
}

#define STACK_LO 0x10000u
#define STACK_HI 0x20000u
#define HEAP_LO 0x30000u
#define CODE_LO 0x400000u

/* The usual process: a stack, a heap, code. */
static void fx_process(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	fx_add(f, STACK_LO, STACK_HI, CTXSCAN_R | CTXSCAN_W, true);
	fx_add(f, HEAP_LO, HEAP_LO + 0x1000, CTXSCAN_R | CTXSCAN_W, true);
	fx_add(f, CODE_LO, CODE_LO + 0x1000, CTXSCAN_R | CTXSCAN_X, true);
}

/* Three kept areas found with where a walk starts and who keeps them
 * (one whose frame pointer is not a stack address: code without frame
 * pointers parks so); a dead one, a frame not after a call and a kept
 * pointer to nothing are not. */
static void test_found(void **state)
{
	struct ctxscan_found out[8];
	struct ctxscan_stats st;
	struct fx f;
	size_t n;

	(void)state;
	fx_process(&f);
	fx_area(&f, 0x1f000, 0x1f100, CODE_LO + 0x105); /* kept once */
	fx_put(&f, HEAP_LO + 0x10, 0x1f000);
	fx_area(&f, 0x18008, 0, CODE_LO + 0x215); /* kept twice */
	fx_put(&f, HEAP_LO + 0x100, 0x18008);
	fx_put(&f, HEAP_LO + 0x20, 0x18008);
	fx_area(&f, 0x15000, 0, CODE_LO + 0x305); /* dead: kept by none */
	fx_area(&f, 0x14000, 0, CODE_LO + 0x100); /* not after a call */
	fx_put(&f, HEAP_LO + 0x30, 0x14000);
	fx_area(&f, 0x13000, CODE_LO, CODE_LO + 0x405); /* fp: not a stack's */
	fx_put(&f, HEAP_LO + 0x38, 0x13000);
	fx_put(&f, HEAP_LO + 0x40, 0x12000);	  /* points at nothing */
	fx_area(&f, 0x16000, 0, CODE_LO + 0x305); /* 305 again, dead too */
	n = fx_scan(&f, out, 8, &st);
	assert_int_equal(n, 3);
	assert_int_equal(out[0].at, 0x13000);
	assert_int_equal(out[0].fp, CODE_LO);
	assert_int_equal(out[0].pc, CODE_LO + 0x405);
	memmove(out, out + 1, 2 * sizeof(*out));
	assert_int_equal(out[0].at, 0x18008);
	assert_int_equal(out[0].sp, 0x18008 + 0x40);
	assert_int_equal(out[0].fp, 0);
	assert_int_equal(out[0].pc, CODE_LO + 0x215);
	assert_int_equal(out[0].stored, 2);
	assert_int_equal(out[0].stored_at, HEAP_LO + 0x20);
	assert_int_equal(out[0].stack_lo, STACK_LO);
	assert_int_equal(out[0].stack_hi, STACK_HI);
	assert_int_equal(out[1].at, 0x1f000);
	assert_int_equal(out[1].fp, 0x1f100);
	assert_int_equal(out[1].stored, 1);
	assert_int_equal(out[1].stored_at, HEAP_LO + 0x10);
	assert_int_equal(st.areas, 5);
	assert_int_equal(st.not_stored, 2);
	assert_int_equal(st.found, 3);
	assert_int_equal(st.found_lost, 0);
	assert_false(out[0].unsure || out[1].unsure);
	assert_int_equal(st.unsure, 0);
	assert_int_equal(st.regions, 2);
	assert_int_equal(st.unread, 0);
	assert_false(st.oom);
	/* One question per distinct pc in code (305 twice, asked once):
	 * 105, 215, 305, 100, 405, and CODE_LO itself (0x13000's frame
	 * pointer slot holds it: the word 0x38 past 0x12ff8). */
	assert_int_equal(st.code_checks, 6);
	assert_int_equal(f.ncalls, 6);
	fx_free(&f);
}

/* An area kept only by a word of its own (its frame pointer slot holding
 * its address) is not kept; a store on another stack is. */
static void test_self_store(void **state)
{
	struct ctxscan_found out[4];
	struct ctxscan_stats st;
	struct fx f;

	(void)state;
	fx_process(&f);
	fx_add(&f, 0x50000, 0x58000, CTXSCAN_R | CTXSCAN_W, true);
	fx_area(&f, 0x1e000, 0x1e000, CODE_LO + 0x105);
	fx_area(&f, 0x1d000, 0, CODE_LO + 0x115);
	fx_put(&f, 0x57ff8, 0x1d000); /* the other stack's top word */
	assert_int_equal(fx_scan(&f, out, 4, &st), 1);
	assert_int_equal(out[0].at, 0x1d000);
	assert_int_equal(out[0].stored_at, 0x57ff8);
	assert_int_equal(st.not_stored, 1);
	fx_free(&f);
}

/* Kept only by words just below it in its own stack (an old frame's
 * pointer to its caller's locals looks so): found, unsure; kept from
 * further away or from another region: sure. */
static void test_near(void **state)
{
	struct ctxscan_found out[4];
	struct ctxscan_stats st;
	struct fx f;

	(void)state;
	fx_process(&f);
	fx_area(&f, 0x1f000, 0, CODE_LO + 0x105);
	fx_put(&f, 0x1f000 - 0xd0, 0x1f000); /* just below: unsure */
	fx_put(&f, 0x1f000 - 4096, 0x1f000); /* at the reach: still */
	fx_area(&f, 0x1e000, 0, CODE_LO + 0x115);
	fx_put(&f, 0x1e000 - 0x10, 0x1e000);
	fx_put(&f, 0x1e000 - 4104, 0x1e000); /* past the reach: sure */
	fx_area(&f, 0x1b000, 0, CODE_LO + 0x125);
	fx_put(&f, 0x1b000 - 0x10, 0x1b000);
	fx_put(&f, HEAP_LO, 0x1b000); /* another region: sure */
	fx_area(&f, 0x19000, 0, CODE_LO + 0x135);
	fx_put(&f, 0x19000 + 0x48, 0x19000); /* above it: sure */
	assert_int_equal(fx_scan(&f, out, 4, &st), 4);
	assert_int_equal(out[0].at, 0x19000);
	assert_false(out[0].unsure);
	assert_int_equal(out[1].at, 0x1b000);
	assert_false(out[1].unsure);
	assert_int_equal(out[2].at, 0x1e000);
	assert_false(out[2].unsure);
	assert_int_equal(out[3].at, 0x1f000);
	assert_true(out[3].unsure);
	assert_int_equal(out[3].stored, 2);
	assert_int_equal(st.unsure, 1);
	fx_free(&f);
}

/* With a layout that saves MXCSR (Boost 1.74 x86_64 does, at +0): an
 * area whose first word has the register's reserved bits set (an array
 * of return addresses, a stack trace kept by a sanitizer) is no park. */
static void test_mxcsr(void **state)
{
	struct fcsave_layout l = fx_layout;
	struct ctxscan_found out[4];
	struct ctxscan_stats st;
	struct fx f;

	(void)state;
	fx_process(&f);
	fx_area(&f, 0x1f000, 0, CODE_LO + 0x105);
	fx_put(&f, 0x1f000, 0x37f00001f80ull); /* x87 CW 0x37f, MXCSR 0x1f80 */
	fx_put(&f, HEAP_LO, 0x1f000);
	fx_area(&f, 0x1e000, 0, CODE_LO + 0x115);
	fx_put(&f, 0x1e000, CODE_LO + 0x1234); /* a trace's first pc */
	fx_put(&f, HEAP_LO + 8, 0x1e000);
	assert_int_equal(fx_scan(&f, out, 4, &st), 2); /* not checked */
	l.has_mxcsr = true;
	l.mxcsr_at = 0;
	f.layout = &l;
	assert_int_equal(fx_scan(&f, out, 4, &st), 1);
	assert_int_equal(out[0].at, 0x1f000);
	assert_int_equal(st.areas, 1);
	fx_free(&f);
}

/* A region longer than the scan's chunk: an area across a chunk's end is
 * found once, and so are those at the region's two ends. */
static void test_chunks(void **state)
{
	const uint64_t lo = 0x1000000, hi = lo + (1u << 20);
	const uint64_t across = lo + (256u << 10) - 0x20;
	struct ctxscan_found out[8];
	struct ctxscan_stats st;
	struct fx f;

	(void)state;
	memset(&f, 0, sizeof(f));
	fx_add(&f, lo, hi, CTXSCAN_R | CTXSCAN_W, true);
	fx_add(&f, CODE_LO, CODE_LO + 0x1000, CTXSCAN_X, true);
	fx_add(&f, HEAP_LO, HEAP_LO + 0x1000, CTXSCAN_W, true);
	fx_area(&f, across, 0, CODE_LO + 0x105);
	fx_area(&f, lo, 0, CODE_LO + 0x115);
	/* The last area whose sp after it still lies in the region. */
	fx_area(&f, hi - 0x48, 0, CODE_LO + 0x125);
	fx_put(&f, HEAP_LO, across);
	fx_put(&f, HEAP_LO + 8, lo);
	fx_put(&f, HEAP_LO + 16, hi - 0x48);
	assert_int_equal(fx_scan(&f, out, 8, &st), 3);
	assert_int_equal(out[0].at, lo);
	assert_int_equal(out[1].at, across);
	assert_int_equal(out[2].at, hi - 0x48);
	assert_int_equal(st.areas, 3);
	fx_free(&f);
}

/* Every placement of an area across a chunk's end: found once. */
static void test_chunk_ends(void **state)
{
	const uint64_t lo = 0x1000000, chunk = 256u << 10;
	struct ctxscan_found out[4];
	struct ctxscan_stats st;
	struct fx f;

	(void)state;
	for (uint64_t d = 8; d <= 136; d += 8) {
		memset(&f, 0, sizeof(f));
		fx_add(&f, lo, lo + 3 * chunk, CTXSCAN_R | CTXSCAN_W, true);
		fx_add(&f, CODE_LO, CODE_LO + 0x1000, CTXSCAN_X, true);
		fx_add(&f, HEAP_LO, HEAP_LO + 0x1000, CTXSCAN_W, true);
		fx_area(&f, lo + chunk - d, 0, CODE_LO + 0x105);
		fx_put(&f, HEAP_LO, lo + chunk - d);
		assert_int_equal(fx_scan(&f, out, 4, &st), 1);
		assert_int_equal(out[0].at, lo + chunk - d);
		assert_int_equal(st.areas, 1);
		fx_free(&f);
	}
}

/* A page that cannot be read in the middle of a chunk costs that page
 * only: the areas before and after it in the same chunk are found, and
 * a store in it is not seen. */
static void test_bad_page(void **state)
{
	const uint64_t lo = 0x1000000;
	struct ctxscan_found out[4];
	struct ctxscan_stats st;
	struct fx f;

	(void)state;
	memset(&f, 0, sizeof(f));
	fx_add(&f, lo, lo + (1u << 20), CTXSCAN_R | CTXSCAN_W, true);
	fx_add(&f, CODE_LO, CODE_LO + 0x1000, CTXSCAN_X, true);
	fx_area(&f, lo + 0x8000, 0, CODE_LO + 0x105);
	fx_area(&f, lo + 0x18000, 0, CODE_LO + 0x115);
	fx_area(&f, lo + 0x20000, 0, CODE_LO + 0x125);
	fx_put(&f, lo + 0x30000, lo + 0x8000);
	fx_put(&f, lo + 0x30008, lo + 0x18000);
	fx_put(&f, lo + 0x10008, lo + 0x20000); /* in the bad page */
	f.mem[0].bad_lo = lo + 0x10000;
	f.mem[0].bad_hi = lo + 0x11000;
	assert_int_equal(fx_scan(&f, out, 4, &st), 2);
	assert_int_equal(out[0].at, lo + 0x8000);
	assert_int_equal(out[1].at, lo + 0x18000);
	assert_int_equal(st.unread, 0x1000);
	assert_int_equal(st.not_stored, 1);
	fx_free(&f);
}

/* More areas than the table's first size: it grows, and every one is
 * found with its own store. */
static void test_grow(void **state)
{
	const uint64_t lo = 0x1000000, heap = 0x2000000;
	const unsigned n = 5000;
	static struct ctxscan_found out[5000];
	struct ctxscan_stats st;
	struct fx f;

	(void)state;
	memset(&f, 0, sizeof(f));
	fx_add(&f, lo, lo + (uint64_t)n * 0x40 + 0x40, CTXSCAN_R | CTXSCAN_W,
	       true);
	fx_add(&f, heap, heap + (uint64_t)n * 8, CTXSCAN_R | CTXSCAN_W, true);
	fx_add(&f, CODE_LO, CODE_LO + 0x1000, CTXSCAN_X, true);
	for (unsigned i = 0; i < n; i++) {
		fx_area(&f, lo + (uint64_t)i * 0x40, 0, CODE_LO + 0x105);
		fx_put(&f, heap + (uint64_t)i * 8, lo + (uint64_t)i * 0x40);
	}
	assert_int_equal(fx_scan(&f, out, n, &st), n);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(out[i].at, lo + (uint64_t)i * 0x40);
		assert_int_equal(out[i].stored_at, heap + (uint64_t)i * 8);
	}
	assert_int_equal(st.areas, n);
	assert_int_equal(st.areas_lost, 0);
	assert_int_equal(st.code_checks, 1);
	fx_free(&f);
}

/* A lying maps text: regions out of order, overlapping, empty and
 * inverted; one that cannot be read.  Nothing is read twice as two
 * regions, nothing unbacked is trusted, and the unread bytes are
 * counted. */
static void test_lying_regions(void **state)
{
	struct ctxscan_found out[4];
	struct ctxscan_stats st;
	struct fx f;

	(void)state;
	memset(&f, 0, sizeof(f));
	fx_add(&f, CODE_LO, CODE_LO + 0x1000, CTXSCAN_X, true);
	fx_add(&f, 0x60000, 0x70000, CTXSCAN_W, false); /* unreadable */
	fx_add(&f, STACK_LO, STACK_HI, CTXSCAN_R | CTXSCAN_W, true);
	/* The same stack again, and a part of it: overlaps cut away. */
	fx_add(&f, STACK_LO, STACK_HI, CTXSCAN_W, false);
	fx_add(&f, STACK_LO + 0x1000, STACK_LO + 0x2000, CTXSCAN_W, false);
	fx_add(&f, 0x90000, 0x90000, CTXSCAN_W, false); /* empty */
	f.reg[f.n] = (struct ctxscan_region){
		.lo = 0xa0000, .hi = 0x9f000, .flags = CTXSCAN_W};
	f.mem[f.n++] = (struct fx_mem){.lo = 0xa0000, .hi = 0x9f000};
	fx_area(&f, 0x1c000, 0, CODE_LO + 0x105);
	fx_put(&f, STACK_HI - 8, 0x1c000);
	assert_int_equal(fx_scan(&f, out, 4, &st), 1);
	assert_int_equal(out[0].at, 0x1c000);
	assert_int_equal(out[0].stored, 1);
	assert_int_equal(st.regions, 2);
	assert_int_equal(st.unread, 0x10000);
	assert_int_equal(st.skipped, 0);
	/* A reservation of terabytes: skipped, not read (the reader would
	 * refuse it anyway: unbacked). */
	f.reg[f.n] = (struct ctxscan_region){.lo = 1ull << 40,
					     .hi = (1ull << 40) + (16ull << 40),
					     .flags = CTXSCAN_R | CTXSCAN_W};
	f.mem[f.n++] = (struct fx_mem){.lo = 1ull << 40,
				       .hi = (1ull << 40) + (16ull << 40)};
	assert_int_equal(fx_scan(&f, out, 4, &st), 1);
	assert_int_equal(st.skipped, 16ull << 40);
	assert_int_equal(st.regions, 2);
	assert_int_equal(st.unread, 0x10000);
	fx_free(&f);
}

/* More found than asked for: the first `max` by address, the rest
 * counted; no layout, too many regions, or none: nothing. */
static void test_limits(void **state)
{
	struct ctxscan_input in = {
		.layout = &fx_layout,
		.reader = {.read = fx_read, .after_call = fx_after_call}};
	struct ctxscan_found out[3];
	struct ctxscan_stats st;
	struct fx f;

	(void)state;
	fx_process(&f);
	for (unsigned i = 0; i < 5; i++) {
		fx_area(&f, STACK_LO + 0x1000 * i, 0, CODE_LO + 0x105);
		fx_put(&f, HEAP_LO + 8 * i, STACK_LO + 0x1000 * i);
	}
	assert_int_equal(fx_scan(&f, out, 3, &st), 3);
	assert_int_equal(out[0].at, STACK_LO);
	assert_int_equal(out[1].at, STACK_LO + 0x1000);
	assert_int_equal(out[2].at, STACK_LO + 0x2000);
	assert_int_equal(st.found, 5);
	assert_int_equal(st.found_lost, 2);
	in.reader.ctx = &f;
	in.regions = f.reg;
	in.nregions = f.n;
	in.layout = NULL;
	assert_int_equal(ctxscan_fcontext(&in, out, 3, &st), 0);
	in.layout = &fx_layout;
	in.nregions = CTXSCAN_REGIONS_MAX + 1;
	assert_int_equal(ctxscan_fcontext(&in, out, 3, &st), 0);
	in.nregions = 0;
	assert_int_equal(ctxscan_fcontext(&in, out, 3, &st), 0);
	assert_int_equal(st.areas, 0);
	in.nregions = f.n;
	in.ndead = 1; /* and no dead array */
	assert_int_equal(ctxscan_fcontext(&in, out, 3, &st), 0);
	assert_true(st.refused);
	assert_int_equal(ctxscan_fcontext(NULL, out, 3, &st), 0);
	assert_true(st.refused);
	in.ndead = 0;
	/* Nowhere to write: refused; nothing asked: counted. */
	assert_int_equal(ctxscan_fcontext(&in, NULL, 3, &st), 0);
	assert_true(st.refused);
	assert_int_equal(ctxscan_fcontext(&in, NULL, 0, &st), 0);
	assert_false(st.refused);
	assert_int_equal(st.found, 5);
	assert_int_equal(st.found_lost, 5);
	fx_free(&f);
}

/* A running thread's stack below its sp is dead: an area there is not a
 * parked context though a global still points at it (a scheduler's
 * "where I came from" after it resumed), and a word there keeps
 * nothing. */
/* ucontext_t (x86_64 glibc): one parked, found with its saved sp and pc
 * and kept by itself; one whose context moved on (its stack's top no
 * longer holds its pc), one in dead stack, one whose sp lies in running
 * frames (it runs), one whose fpregs pointer points elsewhere and one
 * whose pc follows no call are not.  Without the flag, none is looked
 * for; without a layout, only they are. */
static void test_ucontext(void **state)
{
	struct ctxscan_found out[8];
	struct ctxscan_stats st;
	struct fx f;
	size_t n;

	(void)state;
	fx_process(&f);
	f.uc = true;
	f.dead[f.ndead++] = (struct ctxscan_range){STACK_LO, 0x14000};
	f.running[f.nrunning++] = (struct ctxscan_range){0x1e000, STACK_HI};
	fx_uc(&f, HEAP_LO + 0x100, 0x1b008, CODE_LO + 0x135, true);
	fx_uc(&f, HEAP_LO + 0x500, 0x1c008, CODE_LO + 0x145, false);
	fx_uc(&f, 0x11000, 0x1d008, CODE_LO + 0x155, true); /* dead */
	fx_uc(&f, HEAP_LO + 0x900, 0x1e108, CODE_LO + 0x165, true);
	fx_uc(&f, HEAP_LO + 0xc00, 0x1d808, CODE_LO + 0x175, true);
	fx_put(&f, HEAP_LO + 0xc00 + offsetof(ucontext_t, uc_mcontext.fpregs),
	       HEAP_LO + 0xc00 + offsetof(ucontext_t, __fpregs_mem) + 8);
	fx_uc(&f, 0x18000, 0x1a808, CODE_LO + 0x184, true); /* no call */
	f.no_layout = true;
	n = fx_scan(&f, out, 8, &st);
	assert_int_equal(n, 1);
	assert_true(out[0].ucontext);
	assert_false(out[0].unsure);
	assert_int_equal(out[0].at, HEAP_LO + 0x100);
	assert_int_equal(out[0].sp, 0x1b008);
	assert_int_equal(out[0].pc, CODE_LO + 0x135);
	assert_int_equal(out[0].stack_lo, STACK_LO);
	assert_int_equal(out[0].stored, 1);
	assert_int_equal(st.ucontexts, 4);
	assert_int_equal(st.moved, 1);
	assert_int_equal(st.dead, 1);
	assert_int_equal(st.running, 1);
	/* Not asked for: none. */
	f.uc = false;
	f.no_layout = false;
	assert_int_equal(fx_scan(&f, out, 8, &st), 0);
	assert_int_equal(st.ucontexts, 0);
	/* Neither kind asked for: refused. */
	f.no_layout = true;
	assert_int_equal(fx_scan(&f, out, 8, &st), 0);
	assert_true(st.refused);
	fx_free(&f);
}

static void test_dead_stack(void **state)
{
	struct ctxscan_found out[4];
	struct ctxscan_stats st;
	struct fx f;

	(void)state;
	fx_process(&f);
	/* The thread runs with sp 0x1a000: [STACK_LO, 0x1a000) is dead. */
	f.dead[f.ndead++] = (struct ctxscan_range){STACK_LO, 0x1a000};
	fx_area(&f, 0x11000, 0, CODE_LO + 0x105); /* its old park */
	fx_put(&f, HEAP_LO, 0x11000);
	fx_area(&f, 0x1b000, 0, CODE_LO + 0x115); /* live, above sp */
	fx_put(&f, HEAP_LO + 8, 0x1b000);
	fx_area(&f, 0x1c000, 0, CODE_LO + 0x125); /* kept by dead stack */
	fx_put(&f, 0x12000, 0x1c000);
	assert_int_equal(fx_scan(&f, out, 4, &st), 1);
	assert_int_equal(out[0].at, 0x1b000);
	assert_int_equal(st.areas, 3);
	assert_int_equal(st.dead, 1);
	assert_int_equal(st.not_stored, 1);
	/* Without the thread's sp, both are taken. */
	f.ndead = 0;
	assert_int_equal(fx_scan(&f, out, 4, &st), 3);
	fx_free(&f);
}

/* A running thread's frames above its sp: a frame's return address slot
 * makes an area of the bytes before it, and a pointer to a local just
 * there keeps it -- not a parked context.  A word there still keeps a
 * parked context elsewhere. */
static void test_running(void **state)
{
	struct ctxscan_found out[4];
	struct ctxscan_stats st;
	struct fx f;

	(void)state;
	fx_process(&f);
	f.dead[f.ndead++] = (struct ctxscan_range){STACK_LO, 0x1a000};
	f.running[f.nrunning++] = (struct ctxscan_range){0x1a000, STACK_HI};
	fx_area(&f, 0x1a100, 0x1a200, CODE_LO + 0x105); /* a live frame */
	fx_put(&f, HEAP_LO, 0x1a100);
	assert_int_equal(fx_scan(&f, out, 4, &st), 0);
	assert_int_equal(st.running, 1);
	assert_int_equal(st.areas, 1);
	/* A parked context in the heap, kept by the running frame. */
	fx_area(&f, HEAP_LO + 0x800, 0, CODE_LO + 0x125);
	fx_put(&f, 0x1a300, HEAP_LO + 0x800);
	assert_int_equal(fx_scan(&f, out, 4, &st), 1);
	assert_int_equal(out[0].at, HEAP_LO + 0x800);
	assert_false(out[0].unsure);
	assert_int_equal(st.running, 1);
	fx_free(&f);
}

/* A maps text into regions: perms taken, [vsyscall] and [vvar] and
 * malformed lines left out, the bound kept. */
static void test_regions(void **state)
{
	static const char maps[] =
		"55d0c0000000-55d0c0001000 r--p 00000000 08:01 12 /bin/x\n"
		"55d0c0001000-55d0c0002000 r-xp 00001000 08:01 12 /bin/x\n"
		"garbage line\n"
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n"
		"7ffd00100000-7ffd00102000 r--p 00000000 00:00 0 [vvar]\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 "
		"[vsyscall]\n"
		"7f0000000000-7f0000001000 ---p 00000000 00:00 0\n"
		"7f0000001000-7f0000002000 rw-p 00000000 00:00 0";
	struct ctxscan_region r[8];

	(void)state;
	assert_int_equal(ctxscan_regions(maps, sizeof(maps) - 1, r, 8), 5);
	assert_int_equal(r[0].flags, CTXSCAN_R);
	assert_int_equal(r[1].flags, CTXSCAN_R | CTXSCAN_X);
	assert_int_equal(r[2].lo, 0x7ffd00000000ull);
	assert_int_equal(r[2].hi, 0x7ffd00021000ull);
	assert_int_equal(r[2].flags, CTXSCAN_R | CTXSCAN_W);
	assert_int_equal(r[3].flags, 0);
	assert_int_equal(r[4].lo, 0x7f0000001000ull);
	assert_int_equal(r[4].flags, CTXSCAN_R | CTXSCAN_W);
	assert_int_equal(ctxscan_regions(maps, sizeof(maps) - 1, r, 2), 2);
	assert_int_equal(ctxscan_regions(maps, 0, r, 8), 0);
}

/* A waiting thread's region split at its sp: below dead, above running;
 * an sp in no writable region: nothing. */
static void test_split(void **state)
{
	struct ctxscan_region r[2] = {
		{CODE_LO, CODE_LO + 0x1000, CTXSCAN_X},
		{STACK_LO, STACK_HI, CTXSCAN_R | CTXSCAN_W},
	};
	struct ctxscan_range dead, run;

	(void)state;
	assert_true(ctxscan_split(r, 2, 0x1a000, &dead, &run));
	assert_int_equal(dead.lo, STACK_LO);
	assert_int_equal(dead.hi, 0x1a000);
	assert_int_equal(run.lo, 0x1a000);
	assert_int_equal(run.hi, STACK_HI);
	assert_false(ctxscan_split(r, 2, CODE_LO + 8, &dead, &run));
	assert_false(ctxscan_split(r, 2, STACK_LO, &dead, &run));
	assert_false(ctxscan_split(r, 2, 0, &dead, &run));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_found),
		cmocka_unit_test(test_self_store),
		cmocka_unit_test(test_near),
		cmocka_unit_test(test_mxcsr),
		cmocka_unit_test(test_chunks),
		cmocka_unit_test(test_chunk_ends),
		cmocka_unit_test(test_bad_page),
		cmocka_unit_test(test_grow),
		cmocka_unit_test(test_lying_regions),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_dead_stack),
		cmocka_unit_test(test_running),
		cmocka_unit_test(test_regions),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_ucontext),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
