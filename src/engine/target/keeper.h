/*
 * keeper: a small process that holds the far end of the target's socket
 * connections, so that a target on the upstream SDKs survives a corotop
 * killed with SIGKILL.  See keeper.c.
 *
 * One per process (corotop launches one target): the functions act on it
 * and do nothing when there is none.
 */
#ifndef COROTOP_KEEPER_H
#define COROTOP_KEEPER_H

#include <stdbool.h>
#include <sys/types.h>

/* What a message to the keeper hands it. */
enum keeper_kind {
	KEEPER_SOCKET = 's', /* a connection accepted on the wake socket */
	KEEPER_OUTPUT = 'o', /* our end of the target's output (output.h) */
	KEEPER_FILE = 'f',   /* the --output file it is appended to */
};

/*
 * Fork the keeper for `target` (just launched, not yet reaped), giving it
 * the listening socket, and record in `dir` (rundir_record) who the run
 * directory serves: us, the keeper, the target.  False when it could not
 * be forked: the target then runs as it did before keepers existed.
 */
bool keeper_start(const char *dir, pid_t target, int listen_fd);

/* Hand the keeper a copy of `fd`, a connection just accepted (without
 * blocking; a keeper that is gone or full is skipped).  Returns fd, so
 * that the accept loop can pass it on in the same expression. */
int keeper_hold(int fd);

/* Hand the keeper copies of our end of the target's output and of the
 * --output file (-1: none): once corotop is gone it reads the output on,
 * into the file, so the target never blocks on a full pty. */
void keeper_hold_output(int out, int file);

/*
 * Let go of the keeper: it drains and holds the connections until the
 * target is gone, then exits.  `target_gone`: the target has exited, so
 * the keeper is about to, and is waited for; else it is left to run on
 * (and is reaped by whoever inherits it).
 */
void keeper_stop(bool target_gone);

/* The keeper's pid, 0 when there is none (for tests). */
pid_t keeper_pid(void);

#endif
