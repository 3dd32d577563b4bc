/*
 * pptagent: corotop's side of the ppt protocol for one buffer of a running
 * process -- attach in the protocol's order, poll the data block, resize it,
 * detach.  See pptagent.c; the wire is in corotop/ppt.h.
 *
 * One agent is used by one thread at a time (the engine's ppt thread, or the
 * caller after that thread stopped); what other threads read, they read
 * through copies the engine takes under its own lock.
 */
#ifndef COROTOP_PPTAGENT_H
#define COROTOP_PPTAGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "corotop/ppt.h"
#include "engine/ppt/pptdesc.h"
#include "engine/ppt/pptfind.h"
#include "engine/ppt/pptreader.h"
#include "engine/target/procmem.h"

#define PPTAGENT_DEFAULT_FRAMES 65536u
#define PPTAGENT_MAX_FRAMES (1u << 22) /* 4 Mi frames */
#define PPTAGENT_MAX_BYTES (256ull << 20)

struct pptagent_config {
	bool force;	  /* --force-attach: take over a busy _stat */
	uint64_t nframes; /* data block size in frames (0: default) */
	/* Counters the client should count per frame (already probed). */
	uint32_t ncounters;
	uint8_t counters[PPT_MAX_COUNTERS][PPT_PERF_ATTR_SIZE];
	/* For a buffer whose JSON asks for corotop's rendezvous: what to
	 * hand the probe (NULL: attach it as a plain buffer). */
	const struct corotop_rendezvous *rdv;
	/* Frames kept for display, the newest ones (0: 4096). */
	uint32_t history;
	/* Grow a dynamic data block (x4, up to max_frames) after a poll that
	 * lost frames. */
	bool auto_grow;
	uint64_t max_frames;
};

enum pptagent_state {
	PPTAGENT_DETACHED = 0,
	PPTAGENT_UNHOOKING, /* --force-attach: _hmem is 0 until the client
			       lets go of the old segment (at a save) */
	PPTAGENT_WAITING,   /* _hmem written; the client has not attached */
	PPTAGENT_ATTACHED,  /* the client set PPT_CLIENT_FLAG_ATTACHED */
	PPTAGENT_GONE,	    /* the target exited */
	PPTAGENT_LOST,	    /* another agent took the buffer over: _stat
			       no longer holds our pid (warning says whose) */
};

/* The agent holds the buffer: its words in the target are ours. */
static inline bool pptagent_live(enum pptagent_state s)
{
	return s == PPTAGENT_UNHOOKING || s == PPTAGENT_WAITING ||
	       s == PPTAGENT_ATTACHED;
}

struct pptagent_stats {
	uint64_t delivered, lost, torn; /* pptreader's books */
	uint64_t resizes;
	uint64_t attach_ns;	 /* CLOCK_MONOTONIC when _hmem was written */
	uint64_t first_frame_ns; /* ... when the first frame was read, or 0 */
	bool counters_setup;	 /* the client set COUNTERS_SETUP */
};

/* A frame kept for display: raw bytes are in the agent's history. */
struct pptagent_frame {
	uint64_t pos;	/* delivery position: 0, 1, 2... (never reused) */
	uint32_t index; /* the frame's seqno */
	uint64_t ts;	/* CLOCK_MONOTONIC ns when it was read */
};

struct pptagent {
	struct pptfind_buffer sym;
	struct ppt_desc desc;
	bool have_desc;
	/* Static layout: where the client may put the frames (the generator's
	 * revisions disagree; the first poll with frames tells), and our
	 * control segment's size. */
	uint32_t offsets[4];
	uint32_t noffsets;
	/* --force-attach over a client that holds an old segment. */
	int stale_id;
	int64_t stale_dtime;
	uint64_t hmem_checked;	/* last check that _hmem is still ours */
	uint64_t owner_checked; /* ... that _stat still holds our pid */
	unsigned rewrites; /* _hmem written again after a client zeroed it */
	struct procmem *pm;
	enum pptagent_state state;
	bool dynamic;
	bool rendezvous; /* the control segment carries a corotop_rendezvous */
	int ctl_id, data_id;
	void *ctl_map; /* our mapping of the control segment */
	size_t ctl_size;
	const void *data; /* our mapping of the frames (read-only) */
	size_t data_size;
	uint64_t nframes;
	/* A resize in flight: the new block, published in data_block_hmem,
	 * not yet acknowledged. */
	int next_id;
	const void *next_data;
	size_t next_size;
	uint64_t next_nframes;
	uint64_t ack_ns; /* when the ack was seen (drain the old block) */
	bool synced;	 /* the reader's cursor is on the client's frames */
	struct pptreader reader;
	struct pptagent_config cfg;
	struct pptagent_stats st;
	/* History ring of the newest frames (hist_cap of them). */
	unsigned char *hist;
	struct pptagent_frame *hist_meta;
	uint32_t hist_cap;
	uint64_t hist_pos; /* frames ever delivered = next position */
	/* Scratch for one poll. */
	unsigned char *scratch;
	uint32_t *scratch_idx;
	size_t scratch_cap;
	char warning[256]; /* the last problem worth showing, or "" */
};

/*
 * Attach to buffer `sym` of pm's process, in the protocol's order: read and
 * parse _json (the ABI must be 1.x), check _stat (busy: an error naming the
 * agent pid and whether it still runs, unless cfg->force), write our pid to
 * _stat, create the segments (0600, marked for removal as soon as we have
 * mapped them: Linux lets the client attach a marked segment, so nothing is
 * left behind even if corotop is SIGKILLed), and write _hmem last.  False
 * with a message; then nothing is left in the target or in the system.
 */
bool pptagent_attach(struct pptagent *a, struct procmem *pm,
		     const struct pptfind_buffer *sym,
		     const struct pptagent_config *cfg, char *err,
		     size_t errlen);

/* Read what the client wrote since the last poll (and notice its attach,
 * a resize's ack, counters).  Returns the frames delivered. */
size_t pptagent_poll(struct pptagent *a, uint64_t now_ns);

/* Dynamic layout: publish a new data block of nframes frames; the client
 * switches at its next save; the old block is drained, then let go.  False
 * with a message (static layout, a resize in flight, no memory). */
bool pptagent_resize(struct pptagent *a, uint64_t nframes, char *err,
		     size_t errlen);

/* _hmem = 0 and _stat = 0 in the target (when it still runs), then our
 * mappings go; the kernel frees the segments once the client lets go. */
void pptagent_detach(struct pptagent *a);

/* The target is gone: let go of our mappings without writing anything. */
void pptagent_forget(struct pptagent *a);
/* Free what attach allocated (after detach or forget; idempotent). */
void pptagent_finish(struct pptagent *a);

/* Frame at history position pos: its bytes (desc.frame_size) and meta, or
 * NULL when pos is older than the history or not delivered yet. */
const void *pptagent_frame(const struct pptagent *a, uint64_t pos,
			   struct pptagent_frame *meta);

/* The oldest position still in the history. */
uint64_t pptagent_oldest(const struct pptagent *a);

#endif
