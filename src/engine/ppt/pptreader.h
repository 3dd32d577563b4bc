/*
 * pptreader: the agent's cursor over one data block, a ring of frames the
 * client overwrites.  It hands out each frame once, in index order, and
 * accounts for every index exactly once: delivered, lost (overwritten
 * before it was read, or never completed) or torn (seen half written and
 * never completed).  See pptreader.c.
 *
 * Indexes are 32-bit and wrap; they start at 1 (0 marks a slot never
 * written, or one being written under the multithreaded protocol).  Frame i
 * lives in slot (i + shift) % nframes, shift 0 unless pptreader_sync learnt
 * another.  One poll, from the cursor c:
 *   - slot c % n holds frame c whole (back == front == c): deliver, c++;
 *   - it holds a newer whole frame (c + k*n): frame c was overwritten:
 *     lost, c++;
 *   - it holds an older frame, or zeros, or a torn frame: frame c is not
 *     there yet.  Stop, unless it has been so for stall_ns and a whole
 *     frame newer than c exists in the next `lookahead` slots: then its
 *     writer died or stalled, count it (torn if it was last seen torn, else
 *     lost) and move on.
 * Reads follow the ordering in corotop/ppt.h (back acquire, copy, acquire
 * fence, front): a frame delivered is a frame the writer completed.
 *
 * The block is untrusted memory another process maps: the reader only
 * reads within [base, base + nframes * frame_size), and it counts no more
 * frames lost or torn than a writer could have written: a budget that
 * starts full (PPTREADER_CREDIT_MAX, the farthest one poll may move) and
 * earns one index per nanosecond of the clock passed to pptreader_poll.  (SysV
 * segments can not be truncated under a mapping: no SIGBUS to guard against.)
 */
#ifndef COROTOP_PPTREADER_H
#define COROTOP_PPTREADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The lost + torn budget: full at init, one index per nanosecond after.
 * 3 * 2^30 is the largest single jump (pptreader.c, resync). */
#define PPTREADER_CREDIT_MAX (3ull << 30)

struct pptreader_stats {
	uint64_t delivered;
	uint64_t lost;
	uint64_t torn;
	uint64_t stalls; /* polls that stopped at an incomplete frame */
};

struct pptreader {
	const unsigned char *base; /* the data block */
	uint64_t nframes;
	uint32_t frame_size;
	uint32_t front_off, back_off; /* seqno offsets in a frame */
	uint32_t cursor;	      /* next index expected */
	uint32_t shift;		      /* frame i is in slot (i + shift) % n */
	uint64_t stall_ns, stall_since;
	uint64_t lag_checked; /* last check for a writer 2^31 ahead */
	uint32_t stall_at;    /* index the stall is on */
	bool stall_torn;      /* ... last seen torn */
	unsigned lookahead;   /* slots searched for a newer whole frame */
	uint64_t credit;      /* indexes lost + torn may still count */
	uint64_t credit_at;   /* the clock when it was last earned */
	struct pptreader_stats st;
};

/* Frames start at index `first` (1 for a fresh buffer; the agent passes
 * the first index it wants, so that frames written before it attached are
 * not delivered... see pptreader_skip_existing). */
void pptreader_init(struct pptreader *r, const void *base, uint64_t nframes,
		    uint32_t frame_size, uint32_t front_off, uint32_t back_off,
		    uint32_t first);
/* Move the cursor past every whole frame already in the block: only
 * frames written from now on are delivered.  Returns the new cursor. */
uint32_t pptreader_skip_existing(struct pptreader *r);
/* A client whose index did not start with our attach (the generator's
 * counts every save, and its revisions rotate the slots): learn the
 * rotation from the newest whole frame, check the other whole frames sit
 * where it puts them, and put the cursor on the oldest one the block
 * holds.  Returns how many whole frames agree (0: none yet, or they
 * disagree -- a block read at the wrong offset -- and nothing changed). */
unsigned pptreader_sync(struct pptreader *r);
/* Point at a new block (a resize); the cursor stays. */
void pptreader_rebase(struct pptreader *r, const void *base, uint64_t nframes);

/* Deliver up to max frames: copies each into buf (frame_size bytes each,
 * consecutive) and its index into idx.  now_ns drives the stall rule.
 * Returns the number delivered; call again while it returns max. */
size_t pptreader_poll(struct pptreader *r, uint64_t now_ns, void *buf,
		      uint32_t *idx, size_t max);

#endif
