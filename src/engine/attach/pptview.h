/*
 * pptview: what the facade's attach-mode queries hand out -- the attach's
 * state, each ppt buffer's, a delivered frame's place, a decoded frame's
 * cells, and the buffers a process publishes (--list-buffers).  Data
 * only: the facade (engine/engine.h) includes it, and engine/attach fills
 * these types (as engine/stacks/hotview.h is the hot stacks').  The
 * functions that return them are engine.h's.
 */
#ifndef COROTOP_ENGINE_ATTACH_PPTVIEW_H
#define COROTOP_ENGINE_ATTACH_PPTVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "corotop/ppt.h"

struct engine_ppt_info {
	bool enabled;	    /* attach mode */
	pid_t pid;	    /* the process attached to */
	pid_t agent_pid;    /* ours, as written to each _stat */
	bool target_gone;   /* it exited; buffers are frozen */
	size_t nbuffers;    /* buffers attached (or tried) */
	bool traced;	    /* the probe's buffer took the rendezvous */
	bool probe_said;    /* ... as its last "probe" frame says */
	int probe_errno;    /* why it could not map the region, or 0 */
	uint32_t ncounters; /* -c counters the kernel accepted */
	char counters[PPT_MAX_COUNTERS][32];
	char warning[512]; /* refused counters, buffers that failed */
	char refused[512]; /* the counters the kernel refused, and why */
};

/* Buffers attached at most (the first, by name; --buffer picks one). */
#define ENGINE_PPT_MAX_BUFFERS 64

/* Where the engine stands with a buffer. */
enum engine_ppt_state {
	ENGINE_PPT_DETACHED = 0,
	ENGINE_PPT_UNHOOKING, /* --force-attach: waiting for the client to let
				 go of the old segment */
	ENGINE_PPT_WAITING,   /* our segment published; no client yet */
	ENGINE_PPT_ATTACHED,  /* the client took it */
	ENGINE_PPT_GONE,      /* the target exited */
	ENGINE_PPT_LOST,      /* another agent took the buffer over */
};

/* One delivered frame's place and time (its bytes travel beside it). */
struct engine_ppt_frame {
	uint64_t pos;	/* delivery position: 0, 1, 2... (never reused) */
	uint32_t index; /* the frame's seqno */
	uint64_t ts;	/* CLOCK_MONOTONIC ns when it was read */
};

struct engine_ppt_buffer {
	char name[64];
	char object[256];
	enum engine_ppt_state state;
	bool dynamic, rendezvous, counters_setup;
	uint32_t frame_size, ntypes;
	uint64_t nframes;
	uint64_t delivered, lost, torn, resizes;
	double fps;		    /* frames per second over the last tick */
	uint64_t attach_latency_ns; /* _hmem written -> first frame, or 0 */
	uint64_t next_pos;	    /* positions 0 .. next_pos - 1 delivered */
	char warning[256];
};

/* One decoded member of a frame: its name (the description's, valid while
 * the description is) and its value as text. */
struct engine_ppt_cell {
	const char *name;
	char text[64];
};

struct engine_listed_buffer {
	char name[64];
	bool spec_spelling; /* __ppt_NAME_* (else the generator's _ppt_*_NAME)
			     */
	char object[256];   /* the file that defines it, as in maps */
	uint64_t hmem_addr, stat_addr, json_addr;
	int32_t agent_pid; /* _stat: 0 = free */
	bool agent_alive;  /* that agent still runs */
	int32_t hmem;	   /* _hmem: 0 = no segment published */
	bool described;	   /* _json read and valid */
	char abi[16];
	uint32_t frame_size;
	bool resize, rendezvous;
	char types[512]; /* "tick(count load work) io(fd cost[0] ...)" */
	char error[256]; /* why it is not described, or "" */
};

struct engine_buffer_list {
	struct engine_listed_buffer *e;
	size_t n;
	char warning[512]; /* objects skipped, and why */
};

#endif
