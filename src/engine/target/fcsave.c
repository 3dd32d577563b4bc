/*
 * fcsave: where a parked Boost.Context fcontext can be walked from, read
 * from the registers its own switch saved.
 *
 * jump_fcontext and ontop_fcontext push the registers they must keep onto
 * the stack they leave and return that stack pointer as the fcontext_t.
 * Among them are the frame pointer and the return address into the
 * switch's caller, and the caller's stack pointer is the area's end: the
 * exact registers of the parked context, where the probe's (taken a few
 * calls before, in the interposer's wrapper) are close to them only.
 * libcorotop-preload publishes the fcontext_t of each park on the
 * context's station (corotop_coro_set_saved, docs/WIRE.md), and the
 * walker (engine/stacks/walks.c) starts from the area when both hold:
 *
 *   - the layout is known: the area differs between Boost versions and
 *     architectures (later versions add a shadow-stack slot, aarch64 saves
 *     other registers), so only a version listed here, mapped by the
 *     target, is read -- one library only, told by its file's name in
 *     /proc/PID/maps (a Boost linked statically, or none: not read);
 *   - the area passes fcsave_check: it lies in the context's stack, the
 *     stack pointer after it too, the frame pointer is 0 or in the stack,
 *     and the return address is in executable code right after a call
 *     (framecheck's rule, the one every walked frame passes).
 *
 * Otherwise the walk starts from the probe's registers, as before.
 *
 * The table.  Boost 1.74 x86_64 SysV (Debian's libboost_context.so.1.74.0,
 * jump_x86_64_sysv_elf_gas.S), checked against the installed library's
 * disassembly: `lea -0x38(%rsp),%rsp` under the call's return address,
 * then MXCSR and the x87 control word at +0x00, r12 +0x08, r13 +0x10,
 * r14 +0x18, r15 +0x20, rbx +0x28, rbp +0x30; the return address at
 * +0x38; the caller's sp at +0x40.  No TLS or shadow-stack slot in this
 * build; ontop_fcontext saves the same.
 */
#define _GNU_SOURCE
#include "engine/target/fcsave.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/target/procfs.h"

#define FCSAVE_MAPS_MAX (64u << 20) /* bytes of /proc/PID/maps */
#define FCSAVE_LIB "libboost_context.so"

static const struct fcsave_layout fcsave_table[] = {
#if defined(__x86_64__)
	{
		.lib = "libboost_context.so.1.74.0",
		.arch = "x86_64",
		.size = 0x40,
		.fp_at = 0x30,
		.pc_at = 0x38,
		.sp_after = 0x40,
		.has_mxcsr = true,
		.mxcsr_at = 0x00,
	},
#endif
	/* a sentinel, so that the table is never empty */
	{.lib = NULL},
};

const struct fcsave_layout *fcsave_layout_named(const char *name)
{
	for (size_t k = 0; name && fcsave_table[k].lib; k++)
		if (!strcmp(name, fcsave_table[k].lib))
			return &fcsave_table[k];
	return NULL;
}

const struct fcsave_layout *fcsave_layout_in_maps(const char *maps)
{
	char lib[256];

	procfs_maps_lib(maps, FCSAVE_LIB, lib, sizeof(lib));
	return fcsave_layout_named(lib[0] ? lib : NULL);
}

const struct fcsave_layout *fcsave_layout_of(pid_t pid)
{
	const struct fcsave_layout *l;
	char path[64];
	size_t len;
	char *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = procfs_slurp(AT_FDCWD, path, FCSAVE_MAPS_MAX, &len);
	if (!maps)
		return NULL;
	l = fcsave_layout_in_maps(maps);
	free(maps);
	return l;
}

bool fcsave_in_stack(const struct fcsave_layout *l, uint64_t at,
		     uint64_t stack_lo, uint64_t stack_hi)
{
	/* No overflow: at >= stack_lo, and the sizes are small. */
	return l && stack_lo < stack_hi && at >= stack_lo && at < stack_hi &&
	       stack_hi - at >= l->size && stack_hi - at > l->sp_after &&
	       !(at & 7);
}

static uint64_t fcsave_word(const unsigned char *area, uint32_t at)
{
	uint64_t w;

	memcpy(&w, area + at, sizeof(w));
	return w;
}

enum fcsave_verdict fcsave_check(const struct fcsave_layout *l, uint64_t at,
				 const unsigned char *area, uint64_t stack_lo,
				 uint64_t stack_hi, struct framecheck *fc,
				 struct stackwalk_start *out)
{
	uint64_t sp, fp, pc;

	if (!l)
		return FCSAVE_UNKNOWN;
	if (!fcsave_in_stack(l, at, stack_lo, stack_hi))
		return FCSAVE_STACK;
	if (!area)
		return FCSAVE_UNREAD;
	sp = at + l->sp_after;
	fp = fcsave_word(area, l->fp_at);
	pc = fcsave_word(area, l->pc_at);
	if (fp && (fp < stack_lo || fp >= stack_hi))
		return FCSAVE_FP;
	if (pc < STACKWALK_MIN_CODE ||
	    (fc && framecheck_frame(fc, pc, false) != FRAMECHECK_OK))
		return FCSAVE_PC;
	*out = (struct stackwalk_start){
		.sp = sp,
		.fp = fp,
		.pc = pc,
		.stack_lo = stack_lo,
		.stack_hi = stack_hi,
	};
	return FCSAVE_OK;
}
