/*
 * cfi_walk: what walking a parked stack with the target's CFI costs the
 * engine (engine/symbols/unwinder.c through symtab_unwind), on this very
 * process.
 *
 * A chain of DEPTH functions built without frame pointers (as Debian
 * builds Boost and libstdc++) calls a capture function, which keeps what
 * the probe keeps at a suspend: the return address, the stack pointer
 * after the return, and a frame pointer register that means nothing.
 * Then, while the chain stays put:
 *
 *   cold   the first walk of a fresh symbol table: /proc/self/maps read,
 *          every module on the stack opened, its CFI and symbols loaded;
 *   warm   each later walk, as the engine makes one per parked coroutine:
 *          symtab_unwind with the frames marked as program or runtime
 *          (one symbol lookup per frame, cached after the first walk),
 *          memory read through process_vm_readv on our own pid, in 4 KiB
 *          windows, as engine_unwind reads the target's.
 *
 * Prints frames found, cold ms, and warm us per walk and ns per frame
 * (median, p90, p99 over the runs).  The engine makes at most 16 walks a
 * tick (ENGINE_UNWIND_BUDGET) while watching.
 *
 * Usage: cfi_walk [walks] (default 2001).
 */
#include "bench.h"

#include <sys/uio.h>

#include "engine/symbols/symtab.h"

#define CFI_DEPTH 24
#define CFI_MAX 64
#define CFI_WINDOW 4096u

struct cfi_reader {
	uint64_t lo, hi, base;
	size_t len;
	unsigned char buf[CFI_WINDOW];
};

static struct cfi_reader cfi_rd;
static struct unwinder_regs cfi_regs;

/* Our own memory as the engine reads the target's: process_vm_readv. */
static bool cfi_read(void *ctx, uint64_t addr, uint64_t *word)
{
	struct cfi_reader *r = ctx;

	if (addr < r->lo || addr > r->hi - 8)
		return false;
	if (r->len < 8 || addr < r->base || addr - r->base > r->len - 8) {
		uint64_t base = addr & ~(uint64_t)(CFI_WINDOW - 1);
		size_t len;
		struct iovec l, rm;

		if (base < r->lo)
			base = r->lo;
		len = r->hi - base < CFI_WINDOW ? (size_t)(r->hi - base)
						: CFI_WINDOW - (base & 4095u);
		l = (struct iovec){r->buf, len};
		rm = (struct iovec){(void *)(uintptr_t)base, len};
		if (process_vm_readv(getpid(), &l, 1, &rm, 1, 0) !=
		    (ssize_t)len)
			return false;
		r->base = base;
		r->len = len;
	}
	memcpy(word, r->buf + (addr - r->base), 8);
	return true;
}

static uint64_t cfi_frames[CFI_MAX];
static double *cfi_us;
static size_t cfi_walks, cfi_n;
static double cfi_cold_ms;
static struct symtab cfi_tab;

static uint64_t cfi_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The walks, from the capture point (the chain below stays put). */
static __attribute__((noinline)) void cfi_capture(void)
{
	uint64_t *rec = __builtin_frame_address(0);
	struct symtab_unwound marks;
	uint64_t t0;

	cfi_regs.pc = (uint64_t)(uintptr_t)__builtin_return_address(0);
	cfi_regs.sp = (uint64_t)(uintptr_t)(rec + 2);
	cfi_regs.fp = 0xdeadbeefu;
	cfi_rd.lo = cfi_regs.sp;
	cfi_rd.hi = cfi_regs.sp + 512 * 1024;
	symtab_init(&cfi_tab);
	symtab_set_pid(&cfi_tab, getpid());
	t0 = cfi_now();
	cfi_rd.len = 0;
	symtab_unwind(&cfi_tab, &cfi_regs, cfi_read, &cfi_rd, cfi_frames,
		      CFI_MAX, true, &marks);
	cfi_cold_ms = (double)(cfi_now() - t0) / 1e6;
	cfi_n = marks.n;
	for (size_t i = 0; i < cfi_walks; i++) {
		t0 = cfi_now();
		cfi_rd.len = 0;
		symtab_unwind(&cfi_tab, &cfi_regs, cfi_read, &cfi_rd,
			      cfi_frames, CFI_MAX, true, &marks);
		cfi_us[i] = (double)(cfi_now() - t0) / 1e3;
		if (marks.n != cfi_n)
			bench_die("walk %zu found %zu frames, not %zu", i,
				  marks.n, cfi_n);
	}
	symtab_finish(&cfi_tab);
}

static volatile int cfi_sink;

static __attribute__((noinline, optimize("omit-frame-pointer"))) void
cfi_chain(int depth)
{
	if (depth > 0)
		cfi_chain(depth - 1);
	else
		cfi_capture();
	cfi_sink = depth; /* not a tail call */
}

int main(int argc, char **argv)
{
	struct bench_dist d;

	cfi_walks = argc > 1 ? strtoul(argv[1], NULL, 10) : 2001;
	if (!cfi_walks)
		bench_die("usage: cfi_walk [walks]");
	cfi_us = calloc(cfi_walks, sizeof(*cfi_us));
	if (!cfi_us)
		bench_die("out of memory");
	cfi_chain(CFI_DEPTH);
	if (cfi_n < CFI_DEPTH)
		bench_die(
			"the walk found %zu frames, fewer than the chain's %d",
			cfi_n, CFI_DEPTH);
	d = bench_dist(cfi_us, cfi_walks);
	printf("cfi_walk: %zu frames (a chain of %d without frame pointers)\n",
	       cfi_n, CFI_DEPTH);
	printf("cfi_walk: cold (fresh symbol table) %.2f ms\n", cfi_cold_ms);
	printf("cfi_walk: warm, %zu walks: p50 %.1f us  p90 %.1f us  p99 "
	       "%.1f us  max %.1f us;  p50 %.0f ns per frame\n",
	       cfi_walks, d.p50, d.p90, d.p99, d.max,
	       d.p50 * 1e3 / (double)cfi_n);
	free(cfi_us);
	return 0;
}
