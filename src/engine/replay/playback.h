/*
 * playback: a recording played back (corotop --replay FILE) -- the replay
 * of replay.c and the clock that moves its position.  The engine fills in
 * playback_inputs -- the file, its symbol table, its lock, the lint
 * settings and target a snapshot carries, and its SIGBUS guard -- and
 * calls these for its replay mode and its replay controls (engine.h); a
 * playback never sees the engine itself.  See playback.c.
 */
#ifndef COROTOP_PLAYBACK_H
#define COROTOP_PLAYBACK_H

#include <pthread.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/model/lint.h"
#include "engine/model/snapshot.h"

struct symtab;

/* What the engine gives a playback; the pointers outlive it. */
struct playback_inputs {
	const char *path;   /* --replay FILE */
	uint64_t linger_ns; /* dead coroutines stay listed this long */
	bool play;	    /* start playing (else paused at the start) */
	/* Names the recording's addresses from its table while it plays. */
	struct symtab *symtab;
	/* The engine's lock: the clock and the snapshots are under it, and
	 * *lints and *target are read with it held. */
	pthread_mutex_t *lock;
	const struct lint_config *lints;
	const struct snapshot_target *target;
	/* The calling thread's SIGBUS landing pad: jb while the mapped
	 * recording is read, NULL after. */
	void (*guard)(sigjmp_buf *jb);
};

/* What playback_info tells (engine.h, struct engine_replay_info). */
struct playback_info {
	uint64_t pos, t0, t1, ran, epoch_ns;
	double speed;
	bool playing, ours, truncated;
	int64_t pid;
	size_t events, coroutines, problems;
	char problem[160];
	char path[512];
	char command[256];
};

/* Index in->path and name its addresses through in->symtab; NULL with the
 * reason in err (an unreadable, empty or truncated-while-read file). */
struct playback *playback_create(const struct playback_inputs *in, char *err,
				 size_t errlen);
/* NULL is a no-op. */
void playback_destroy(struct playback *p);

/* The recording at the position, with the watched coroutine's history,
 * linted; the last complete one (and the error) after a fault. */
void playback_snapshot(struct playback *p, struct snapshot *out);
void playback_watch(struct playback *p, uint64_t id);
/* Where model record `id` is parked at the position: its frames. */
size_t playback_parked_stack(struct playback *p, uint64_t id, uint64_t *frames,
			     size_t max);

/* The controls (engine.h: engine_replay_*); speed is clamped by the
 * caller. */
void playback_info(struct playback *p, struct playback_info *out);
void playback_play(struct playback *p, bool play);
void playback_speed(struct playback *p, double speed);
void playback_seek(struct playback *p, uint64_t t);
uint64_t playback_step(struct playback *p, uint64_t id, int dir);

#endif
