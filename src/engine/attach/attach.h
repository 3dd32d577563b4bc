/*
 * attach: attach mode's side of the engine (corotop -p PID) -- the ppt
 * buffers a running process publishes, an agent attached to each and
 * polled on a thread of its own, the process watched through a pidfd,
 * the probe's buffer handed the engine's region (the rendezvous), and the
 * doorbell that makes the probe notice at once (attach.c, doorbell.c);
 * and what callers read of ppt buffers and frames, with or without an
 * engine (buffers.c).
 *
 * One opaque object, made by the live modes (NULL in the others: every
 * function below then answers as a mode without buffers).  What it needs
 * of the engine it is given, never reached for: the stop flag and pipe,
 * the region it hands over, and a callback for the process's end --
 * struct attach_env, at create.
 */
#ifndef COROTOP_ENGINE_ATTACH_ATTACH_H
#define COROTOP_ENGINE_ATTACH_ATTACH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/attach/pptview.h"

struct attach;
struct ppt_desc;
struct procmem;
struct region;

/* What attach reads of the engine, and calls back.  Pointers into the
 * engine, valid from create to destroy. */
struct attach_env {
	/* The engine's stop flag (acquire: pairs with engine_stop's acq_rel
	 * exchange) and its stop pipe's read end (made after create). */
	atomic_bool *stop;
	const int *stop_fd;
	const struct region *region; /* handed to the probe at start */
	void *ctx;
	/* The process exited (the ppt thread, no lock held): the engine
	 * stops its clock and marks the target ended. */
	void (*gone)(void *ctx);
};

/* The engine's settings attach uses (engine_config's of the same
 * names). */
struct attach_config {
	pid_t attach_pid;	   /* 0: not attach mode */
	const char *ppt_buffer;	   /* attach only this buffer (NULL: all) */
	const char *counters;	   /* -c LIST, or NULL */
	bool force_attach;	   /* take buffers another agent holds */
	uint64_t ppt_block_frames; /* data block size in frames (0: default) */
	unsigned sample_hz;	   /* told to the probe at the rendezvous */
	bool parked_stacks; /* ... and whether to capture parked stacks */
	/* A process without any ppt buffer is not refused: its contexts
	 * are scanned instead (engine/scan; attach_scanning). */
	bool scan_fallback;
};

/* Lifecycle.  create: find the buffers (before the region exists: a
 * process without any is refused early; NULL with err); start: attach
 * them and start the ppt thread; stop: join it; destroy: detach what is
 * still ours and free (NULL: a no-op). */
struct attach *attach_create(const struct attach_env *env,
			     const struct attach_config *cfg, char *err,
			     size_t errlen);
bool attach_start(struct attach *p, char *err, size_t errlen);
void attach_stop(struct attach *p);
void attach_destroy(struct attach *p);
/* The process publishes no ppt buffer, and scan_fallback let it in:
 * nothing is attached, its memory is read and its exit watched. */
bool attach_scanning(const struct attach *p);
/* The process's memory (the census walks in it), or NULL when not
 * attached to one. */
struct procmem *attach_pm(struct attach *p);

/* What callers read (engine.h's engine_ppt_info, engine_ppt_buffers,
 * engine_ppt_desc, engine_ppt_frames and engine_ppt_resize forward
 * here): copies under the ppt lock; any thread. */
void attach_info(struct attach *p, struct engine_ppt_info *out);
size_t attach_buffers(struct attach *p, struct engine_ppt_buffer *out,
		      size_t max);
const struct ppt_desc *attach_desc(struct attach *p, size_t i);
size_t attach_frames(struct attach *p, size_t i, uint64_t from, void *bytes,
		     struct engine_ppt_frame *meta, size_t max, uint64_t *next,
		     uint64_t *skipped);
bool attach_resize(struct attach *p, size_t i, uint64_t nframes, char *err,
		   size_t errlen);

/* buffers.c: what a description says and a frame decoded (engine.h's
 * engine_ppt_frame_size, _types, _type, _column and _cells), -c checked,
 * and a process's buffers listed without writing to it
 * (engine_list_buffers, engine_buffer_list_finish). */
uint32_t attach_frame_size(const struct ppt_desc *d);
size_t attach_types(const struct ppt_desc *d);
const char *attach_type(const struct ppt_desc *d, size_t t, size_t *ncolumns);
const char *attach_column(const struct ppt_desc *d, size_t t, size_t c);
size_t attach_cells(const struct ppt_desc *d, const void *frame, bool json,
		    const char **type, struct engine_ppt_cell *out, size_t max);
bool attach_counters_valid(const char *list, char *why, size_t n);
bool attach_list_buffers(pid_t pid, struct engine_buffer_list *out, char *err,
			 size_t errlen);
void attach_buffer_list_finish(struct engine_buffer_list *l);

#endif
