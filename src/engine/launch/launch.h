/*
 * launch: start the target program with the CTP_* environment.  See launch.c.
 */
#ifndef COROTOP_LAUNCH_H
#define COROTOP_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What corotop asks of the target's probe, through its environment. */
struct launch_probe {
	unsigned sample_hz;  /* COROTOP_SAMPLE_HZ=N (its sampler); 0: unset */
	bool parked_stacks;  /* COROTOP_PARKED_STACKS=1; false: unset */
	const char *preload; /* put first in LD_PRELOAD, or NULL */
};

/* The descriptors the target gets as 0, 1 and 2; -1 keeps ours. */
struct launch_stdio {
	int in, out, err;
};

/*
 * Fork and exec argv[0] (searched in PATH) with CTP_SHM_PATH, CTP_SOCK_PATH
 * and CTP_MAX_STATIONS added to our environment, plus what `probe` asks
 * for (NULL: nothing; what it leaves unset keeps our environment's value).
 * The child gets the default signal mask and dispositions.  An exec failure
 * is reported here, with the errno of the child, not as a silent exit 127.
 * io (NULL: ours) says where its stdin, stdout and stderr go.  Returns the
 * pid or -1.
 */
pid_t launch_spawn(char *const *argv, const char *shm, const char *sock,
		   uint32_t stations, const struct launch_probe *probe,
		   const struct launch_stdio *io, char *err, size_t errlen);

/* Non-blocking: true (and the wait status) once `pid` has exited. */
bool launch_reap(pid_t pid, int *status);

/* SIGTERM `pid`, SIGKILL it after grace_ms, and return its wait status. */
int launch_terminate(pid_t pid, unsigned grace_ms);

#endif
