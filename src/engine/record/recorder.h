/*
 * recorder: the Heph trace of a run (corotop --record FILE).  The harvest
 * side hands over what it sees -- events, opens, closes, losses -- as
 * fixed-size items on a ring; a writer thread turns each coroutine's
 * transitions into state intervals, one Heph event packet per interval,
 * and writes whole packets.  See recorder.c; the trace's shape is in
 * docs/WIRE.md ("Heph recordings").
 */
#ifndef COROTOP_RECORDER_H
#define COROTOP_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/model/event.h"

struct recorder;

struct recorder_hooks {
	/* The symbol of a target address, for people, into buf; false when
	 * unknown.  Called on the writer thread. */
	bool (*symbol)(void *ctx, uint64_t addr, char *buf, size_t n);
	/* The frames of CallTrace stack `trace`, innermost first; 0 when not
	 * known (yet).  Called on the writer thread. */
	size_t (*stack)(void *ctx, uint64_t trace, uint64_t *frames,
			size_t max);
	void *ctx;
};

struct recorder_stats {
	uint64_t items;	    /* handed over */
	uint64_t dropped;   /* ... dropped: the ring was full (recorded as a
			       "lost" event, never silently) */
	uint64_t intervals; /* event packets written (in the file) */
	uint64_t lost;	    /* "lost" packets written (in the file) */
	uint64_t bytes;	    /* written to the file */
	bool failed;	    /* a write failed: recording stopped, and with
			       it every count above */
	char error[160];
};

/* Create FILE (0600, O_NOFOLLOW; an existing file is replaced) for
 * `stations` stations, write the epoch packet and corotop's options (the
 * `command` traced, when not NULL), start the writer thread. */
struct recorder *recorder_create(const char *path, uint32_t stations,
				 const struct recorder_hooks *hooks,
				 const char *command, char *err, size_t errlen);

/* Harvest side, with the engine lock held (one producer at a time).  None
 * blocks or makes a syscall in the common case. */
/* id: the model's id for the coroutine (replay shows the same); name:
 * its name, cleaned, at most 47 bytes ("" or NULL: none); pid: the
 * process it lives in when that is not the target, else 0. */
void recorder_open(struct recorder *r, uint32_t station, uint64_t probe_id,
		   uint64_t ts, uint64_t id, const char *name, uint32_t pid);
void recorder_event(struct recorder *r, const struct harvest_event *ev);
/* What the engine learned about the station's coroutine after its birth:
 * its name from ts on -- the function at its entry pc (with made_for, the
 * function the probe said that entry was made for, 0: none), or (pc 0) a
 * text, at most 47 bytes -- and what it is (enum model_kind, from ts on;
 * at its birth, ts is the birth's). */
void recorder_named(struct recorder *r, uint32_t station, uint64_t ts,
		    uint64_t pc, uint64_t made_for, const char *text);
void recorder_kind(struct recorder *r, uint32_t station, uint64_t ts,
		   unsigned kind);
/* Its park that began at park_ts is, from `now` on, at `where` in the
 * program's code (a return address; 0: not known), learned at an earlier
 * park when `learned`, else walked -- and then its walked stack is
 * CallTrace `trace` (0: none kept).  Ignored once the coroutine moved
 * on. */
void recorder_where(struct recorder *r, uint32_t station, uint64_t park_ts,
		    uint64_t now, uint64_t where, uint64_t trace, bool learned);
void recorder_lost(struct recorder *r, uint32_t station, uint64_t count,
		   uint64_t ts);
void recorder_close(struct recorder *r, uint32_t station, uint64_t ts);
/* After each harvest pass (same thread, same lock): wake the writer if it
 * sleeps and enough items wait.  NULL is a no-op. */
void recorder_publish(struct recorder *r);
/* The target's pid, once known (a corotop_pid option). */
void recorder_target(struct recorder *r, int64_t pid);
/* It exited with status (or -1) and signal (or 0): corotop_exit. */
void recorder_exit(struct recorder *r, int status, int sig);

/* Stop: the writer drains the ring, closes every open interval at end_ts,
 * writes the rest and stops.  Idempotent. */
void recorder_stop(struct recorder *r, uint64_t end_ts);
void recorder_stats(struct recorder *r, struct recorder_stats *out);
/* recorder_stop if needed, then free.  False if a write failed, with
 * the reason in err. */
bool recorder_destroy(struct recorder *r, char *err, size_t errlen);

#ifdef RECORDER_TEST_HOOKS
/* Tests only (compile recorder.c with -DRECORDER_TEST_HOOKS): called on the
 * writer thread before each drain of the hand-over ring, before it reads
 * head.  A hook that blocks pauses the consumer, so that a test can lap the
 * ring on purpose.  Set it before recorder_create. */
extern void (*recorder_test_before_drain)(struct recorder *r);
#endif

#endif
