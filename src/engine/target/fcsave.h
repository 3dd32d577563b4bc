/*
 * fcsave: the registers Boost.Context's switch saved for a parked
 * fcontext, read in the target and checked before a walk starts from
 * them.  See fcsave.c.
 */
#ifndef COROTOP_FCSAVE_H
#define COROTOP_FCSAVE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/target/framecheck.h"
#include "engine/target/stackwalk.h"

/* One checked layout: the area jump_fcontext and ontop_fcontext of one
 * Boost.Context build push before they switch (their fcontext_t points
 * at it). */
struct fcsave_layout {
	const char *lib;   /* the mapped file's name */
	const char *arch;  /* for people: the table is per architecture */
	uint32_t size;	   /* bytes read at the fcontext_t */
	uint32_t fp_at;	   /* the frame pointer register's slot */
	uint32_t pc_at;	   /* the return address into the switch's caller */
	uint32_t sp_after; /* the caller's sp: fcontext_t + sp_after */
	/* The saved MXCSR's slot (32 bits; the register's reserved high 16
	 * bits are 0 in any value it held), when has_mxcsr. */
	bool has_mxcsr;
	uint32_t mxcsr_at;
};

/* The largest area of any layout. */
#define FCSAVE_AREA_MAX 64u

/* Why an area was not used (FCSAVE_OK: it was). */
enum fcsave_verdict {
	FCSAVE_OK,
	FCSAVE_UNKNOWN, /* no checked layout: version, arch, none mapped */
	FCSAVE_STACK,	/* the area, or the sp after it, not in the stack */
	FCSAVE_FP,	/* the frame pointer neither 0 nor in the stack */
	FCSAVE_PC,	/* the return address not after a call in code */
	FCSAVE_UNREAD,	/* the area could not be read */
};

/* The layout of a library by its file's name (a path's last part) on
 * corotop's own architecture; NULL when it is not in the table. */
const struct fcsave_layout *fcsave_layout_named(const char *name);

/* The Boost.Context a maps text (/proc/PID/maps) maps for execution:
 * its layout, or NULL -- none mapped, one not in the table, or two
 * different ones (which one switched is not known). */
const struct fcsave_layout *fcsave_layout_in_maps(const char *maps);

/* Process pid's, as fcsave_layout_in_maps; NULL when its maps cannot
 * be read. */
const struct fcsave_layout *fcsave_layout_of(pid_t pid);

/* Do the area at `at`, and the sp after it, lie in [stack_lo, stack_hi)
 * (and is it aligned)?  What to know before reading it. */
bool fcsave_in_stack(const struct fcsave_layout *l, uint64_t at,
		     uint64_t stack_lo, uint64_t stack_hi);

/*
 * The area `area` (l->size bytes, read at `at` in the target), checked:
 * the area and the sp after it inside [stack_lo, stack_hi), the frame
 * pointer 0 or inside the stack, the return address in executable code
 * right after a call (framecheck_frame; fc NULL: not checked).  area NULL:
 * it could not be read.  FCSAVE_OK fills *out (sp, fp, pc and the stack)
 * for a walk.
 */
enum fcsave_verdict fcsave_check(const struct fcsave_layout *l, uint64_t at,
				 const unsigned char *area, uint64_t stack_lo,
				 uint64_t stack_hi, struct framecheck *fc,
				 struct stackwalk_start *out);

#endif
