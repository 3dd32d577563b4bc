/*
 * framecheck: is a word a stack walk found a return address in the
 * target's code?  See framecheck.c.
 */
#ifndef COROTOP_FRAMECHECK_H
#define COROTOP_FRAMECHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Why a frame is refused (or FRAMECHECK_OK). */
enum framecheck_verdict {
	FRAMECHECK_OK,
	FRAMECHECK_NOT_CODE,	   /* not in an executable mapping */
	FRAMECHECK_NOT_AFTER_CALL, /* in code, but no call ends before it */
};

/* Walks stopped at a refused frame, by why (each walk counts once: it
 * stops at its first refused frame). */
struct framecheck_stats {
	uint64_t not_code;
	uint64_t not_after_call;
	uint64_t maps_reads; /* /proc/PID/maps read */
	uint64_t code_reads; /* instruction bytes read (verdicts not cached) */
};

struct framecheck;

/* Checks for the frames of process pid (its maps are read at the first
 * check).  NULL when out of memory or pid <= 0.  Thread-safe. */
struct framecheck *framecheck_create(pid_t pid);
/* The same for the process a core file holds (it outlives fc). */
struct corefile;
struct framecheck *framecheck_create_core(const struct corefile *core);
void framecheck_destroy(struct framecheck *fc);
/* The same checks for another process (what was learnt is dropped, the
 * counts go on): the slot of a process that was replaced. */
void framecheck_retarget(struct framecheck *fc, pid_t pid);

/*
 * The verdict on a return address (`leaf`: an interrupted pc, the first
 * frame of a sample, which follows no call: only its mapping is checked).
 * A verdict on code is kept (code does not change while it is mapped);
 * instruction bytes that cannot be read leave the mapping check alone.
 */
enum framecheck_verdict framecheck_frame(struct framecheck *fc, uint64_t addr,
					 bool leaf);

/* What a walk's frames are, so what each one must pass. */
enum framecheck_rule {
	FRAMECHECK_RETURNS, /* every frame a return address (a parked walk) */
	FRAMECHECK_FROM_PC, /* frames[0] an interrupted pc (a sample), the
			     * rest return addresses */
	FRAMECHECK_IN_CODE, /* every frame only in code: a stack a program
			     * stored itself (corotop_calltrace_put takes
			     * frames "as the caller chooses") */
};

/*
 * How many of frames[0..n) a walk keeps: the frames before the first one
 * refused under `rule`.  *why says why it stopped (FRAMECHECK_OK: all
 * kept).  Counts nothing: the caller counts the walk it keeps
 * (framecheck_count).  fc NULL: all kept.
 */
size_t framecheck_walk(struct framecheck *fc, const uint64_t *frames, size_t n,
		       enum framecheck_rule rule, enum framecheck_verdict *why);
/* Count a walk stopped for `why` (FRAMECHECK_OK counts nothing). */
void framecheck_count(struct framecheck *fc, enum framecheck_verdict why);
void framecheck_stats(struct framecheck *fc, struct framecheck_stats *out);

/*
 * Does a call instruction end exactly where the n bytes at b end (b[n-1]
 * is the byte just before the return address)?  x86-64: E8 rel32, and
 * FF /2 in every addressing form, with legacy and REX prefixes; aarch64:
 * BL, BLR and the pointer-authenticated BLRA*.  The target's architecture
 * is corotop's own; framecheck_call_before picks the function for it, and
 * is NULL on any other (the mapping check alone).
 */
bool framecheck_call_x86_64(const unsigned char *b, size_t n);
bool framecheck_call_aarch64(const unsigned char *b, size_t n);
extern bool (*const framecheck_call_before)(const unsigned char *b, size_t n);

/* The most instruction bytes framecheck reads before a return address. */
#define FRAMECHECK_CODE_BYTES 15u

#endif
