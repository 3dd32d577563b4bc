/*
 * batch_loop: batch mode's loop -- a snapshot printed every delay until
 * -n of them, the target's end or a signal; or, replaying, one every
 * delay of trace time (or at each --at moment) and one at the end -- and
 * the pieces corotop serve shares with it: a frame's hot stacks and ppt
 * states as batch output prints them.
 */
#ifndef COROTOP_BATCH_LOOP_H
#define COROTOP_BATCH_LOOP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "ui/batch/batch.h"
#include "ui/rows/filter.h"

struct batch_options {
	bool json;	       /* -f json (else text) */
	unsigned iterations;   /* -n: 0 = until the target ends or a signal */
	unsigned delay_tenths; /* -d */
	unsigned hot_stacks;   /* --hot-stacks */
	enum engine_hot_by hot_by;
	unsigned ppt_frames;   /* --ppt-frames: per buffer and snapshot */
	int sort_column;       /* --sort (enum column_id), < 0: by model id */
	struct filter *filter; /* -F (the caller's; never NULL) */
	const sigset_t *sigs;  /* blocked: taken by the loop */
	/* corotop dump: one snapshot once the target's coroutines are in
	 * (a scan's first pass, else one delay), text grouped by state. */
	bool dump;
};

struct batch_loop;

struct batch_loop *batch_loop_create(struct engine *e,
				     const struct batch_options *o);
void batch_loop_destroy(struct batch_loop *b);

/* A live run: the exit status (the target's, 128+N for signal N, 0 after
 * -n snapshots or when an observer's engine stopped, 1 on failure). */
int batch_loop_live(struct batch_loop *b);
/* corotop dump (o.dump): 0 once printed, 128+N for signal N. */
int batch_loop_dump(struct batch_loop *b);
/* A replay: at the moments at[0..nat) (trace ns), or with none, every
 * delay of trace time and the end; 128+N when signal N stops it. */
int batch_loop_replay(struct batch_loop *b, const uint64_t *at, size_t nat);
/* The engine's error the snapshots printed said (NULL: none, or no
 * snapshot printed). */
const char *batch_loop_error(const struct batch_loop *b);

/* The hot stacks of frame f as batch output prints them, with the
 * engine's names (labels: rows named as f's granularity shows them). */
void batch_hot_of(struct batch_hot *hot, struct engine *e,
		  const struct engine_frame *f, bool labels);
/* The ppt buffers' states of frame f (no frames), into buf (room for
 * f->nbuf). */
void batch_ppt_of(struct batch_ppt *ppt, struct batch_ppt_buffer *buf,
		  struct engine *e, const struct engine_frame *f);

#endif
