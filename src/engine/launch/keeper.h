/*
 * keeper: a small process that holds the far end of the target's socket
 * connections, so that a target on the upstream SDKs survives a corotop
 * killed with SIGKILL, and relays the target's output to where it goes.
 * See keeper.c.
 *
 * One per process (corotop launches one target): the functions act on it
 * and do nothing when there is none.
 */
#ifndef COROTOP_KEEPER_H
#define COROTOP_KEEPER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* What a message between corotop and the keeper says. */
enum keeper_kind {
	KEEPER_SOCKET = 's', /* to it: a connection accepted on the socket */
	KEEPER_SYNC = 'y',   /* to it: relay what is there, then answer */
	KEEPER_SINK_FAILED = 'e', /* from it: the destination failed */
	KEEPER_SYNCED = 'd',	  /* from it: the answer to a sync */
};

/* The target's output, for the keeper to relay (output.h); -1: none. */
struct keeper_output {
	int source; /* our end of the target's pty or pipe */
	int sink;   /* the destination: --output, or our stderr */
	int copy;   /* the view's copy pipe, write end */
};

/*
 * Fork the keeper for `target` (just launched, not yet reaped), giving it
 * the listening socket and, when out is not NULL, the target's output to
 * relay (the caller then closes its copies of out's descriptors), and
 * record in `dir` (rundir_record) who the run directory serves: us, the
 * keeper, the target.  False when it could not be forked.
 */
bool keeper_start(const char *dir, pid_t target, int listen_fd,
		  const struct keeper_output *out);

/* Hand the keeper a copy of `fd`, a connection just accepted (without
 * blocking; a keeper that is gone or full is skipped).  Returns fd, so
 * that the accept loop can pass it on in the same expression. */
int keeper_hold(int fd);

/* The destination's first failed write as the keeper reported it: its
 * errno (0: none so far) and, in *at, the bytes written before it.  Never
 * waits.  One thread at a time (with keeper_stop). */
int keeper_sink_error(uint64_t *at);

/* How the relay ended, as keeper_stop learned it. */
struct keeper_end {
	int err; /* keeper_sink_error's */
	uint64_t at;
	bool synced; /* the keeper answered within sync_ms */
	bool ended;  /* nothing holds the output any more */
};

/*
 * Let go of the keeper.  `target_gone`: the target has exited, so
 * everything it wrote is readable: the keeper is asked to relay it and
 * answer (waiting up to sync_ms), and when nothing else holds the output
 * it is about to exit and is waited for.  Otherwise it is left to run on
 * (reaped by whoever inherits it) while the target or anything it forked
 * holds the output.  *end (may be NULL) says how the relay went.
 */
void keeper_stop(bool target_gone, unsigned sync_ms, struct keeper_end *end);

/* The keeper's pid, 0 when there is none (for tests). */
pid_t keeper_pid(void);

#endif
