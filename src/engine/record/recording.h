/*
 * recording: the engine's side of --record (recorder.c writes the file).
 * The engine fills in recording_inputs -- what is traced, its symbols, the
 * model, its lock, and three questions only the engine can answer (a
 * parked stack's frames, the engine's clock, the frame learned for a
 * park) -- and hands over what the harvest sees; the recording adds what
 * the model learned from it and keeps the books a snapshot carries.  It
 * never sees the engine itself.  See recording.c.
 */
#ifndef COROTOP_RECORDING_H
#define COROTOP_RECORDING_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/model/event.h"
#include "engine/model/model.h"
#include "engine/model/snapshot.h"
#include "engine/record/recorder.h"

struct symtab;

/* What the engine gives a recording; the pointers outlive it. */
struct recording_inputs {
	const char *path; /* --record FILE */
	/* What is traced, for the replay's header: a command, else a pid,
	 * else an observed region (each may be NULL / 0). */
	char *const *argv;
	pid_t attach_pid;
	const char *shm_path;
	uint32_t stations;     /* the region's */
	struct symtab *symtab; /* names the writer thread asks (own lock) */
	/* The model the harvest fills, read with `lock` held; the lock also
	 * serialises recording_target with the harvest side's pushes. */
	const struct model *model;
	pthread_mutex_t *lock;
	/* The frames of parked stack `trace`, innermost first; 0 when not
	 * known (yet).  Called on the writer thread. */
	size_t (*stack)(void *ctx, uint64_t trace, uint64_t *frames,
			size_t max);
	/* The engine's clock (CLOCK_MONOTONIC, stopped at the target's
	 * exit).  With `lock` held. */
	uint64_t (*now)(void *ctx);
	/* The program frame learned for model record `id` parked at switch
	 * address `at`, or 0; its walked stack's id into *stack.  With `lock`
	 * held. */
	uint64_t (*learned)(void *ctx, uint64_t id, uint64_t at,
			    uint64_t *stack);
	void *ctx;
};

/* Open in->path and start the writer; NULL with the reason in err. */
struct recording *recording_create(const struct recording_inputs *in, char *err,
				   size_t errlen);
/* Stop if needed, then free; false with the reason when the file could
 * not be written.  NULL is a no-op (true). */
bool recording_destroy(struct recording *r, char *err, size_t errlen);

/* The harvest side, with the lock held (recorder.h says what each is). */
void recording_open(struct recording *r, uint32_t station, uint64_t probe_id,
		    uint64_t ts, uint64_t id, const char *name, uint32_t pid);
void recording_lost(struct recording *r, uint32_t station, uint64_t count,
		    uint64_t ts);
void recording_close(struct recording *r, uint32_t station, uint64_t ts);
void recording_publish(struct recording *r);
/*
 * A harvested event, after the model took it: to the recording, with what
 * the model learned from it (a census walk's name and WHERE; a suspend's
 * learned WHERE).  name_was, kind_was: the record's before.
 */
void recording_event(struct recording *r, const struct harvest_event *ev,
		     uint32_t name_was, unsigned kind_was);
/*
 * What the model learned of record c (lock held): its name, when no longer
 * name_was, and its kind, when no longer kind_was; a park's place in the
 * program and its walked stack (where: a return address; learned: found at
 * an earlier park).  No-ops when r is NULL.
 */
void recording_learned(struct recording *r, const struct model_coro *c,
		       uint32_t name_was, unsigned kind_was);
void recording_where(struct recording *r, const struct model_coro *c,
		     uint64_t where, uint64_t trace, bool learned);

/* The target's pid, once known (takes the lock).  NULL: no-op. */
void recording_target(struct recording *r, pid_t pid);
/* After the threads stopped: the exit, if the target exited, and the
 * end.  NULL: no-op. */
void recording_stop(struct recording *r, bool exited, int exit_code,
		    int term_signal);

/* Why recording stopped early, or NULL (NULL r: NULL). */
const char *recording_warning(struct recording *r);
/* The recorder's books for a snapshot (on = false for a NULL r). */
void recording_snapshot(struct recording *r, struct snapshot_record *out);
/* The recorder's statistics (zeros for a NULL r). */
void recording_stats(struct recording *r, struct recorder_stats *out);

#endif
