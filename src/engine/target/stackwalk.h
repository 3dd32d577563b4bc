/*
 * stackwalk: the stack of a coroutine parked in another process, walked
 * from the frame record its probe kept (a census, corotop/ctp.h) through
 * that process's memory.  See stackwalk.c.
 */
#ifndef COROTOP_STACKWALK_H
#define COROTOP_STACKWALK_H

#include <stddef.h>
#include <stdint.h>

#include "engine/target/framecheck.h"
#include "engine/target/procmem.h"

/* Where to start: as struct ctp_census (the engine copies it in). */
struct stackwalk_start {
	uint64_t sp;		     /* lowest address the walk may read */
	uint64_t fp;		     /* the first frame record */
	uint64_t pc;		     /* the innermost return address */
	uint64_t stack_lo, stack_hi; /* the declared stack; 0, 0: unknown */
	/* pc is where a running thread was interrupted (a core's thread),
	 * not a return address: it follows no call. */
	bool leaf;
};

/* Largest step between two frame records, and the lowest code address: the
 * probe's own walk (src/probe/unwind.h) uses the same. */
#define STACKWALK_MAX_STEP (1u << 20)
#define STACKWALK_MIN_CODE 0x10000u
/* Bytes read at a time around a frame record. */
#define STACKWALK_CHUNK 4096u

struct stackwalk_stats {
	uint64_t reads; /* process_vm_readv calls */
	/* Why the walk stopped at a frame framecheck refused, or
	 * FRAMECHECK_OK (it stopped for another reason, or did not). */
	enum framecheck_verdict stopped;
};

/*
 * Walk: frames[0] = pc, then the return address of each frame record from
 * fp, innermost first, at most max, each one framecheck_frame keeps (fc
 * NULL: every one; the first refused ends the walk, st->stopped says
 * why; nothing is counted in fc).  Returns how many were stored; 0 when
 * the stack is unknown (no declared stack holding sp and fp: the frames
 * below a suspend recorded on a thread's stack have been overwritten
 * since) or pc is not a code address.  st may be NULL.
 */
size_t stackwalk_fp(struct procmem *pm, const struct stackwalk_start *s,
		    struct framecheck *fc, uint64_t *frames, size_t max,
		    struct stackwalk_stats *st);

#endif
