/*
 * workload: the coroutine population corotop-demo runs, something worth
 * watching in corotop.
 *
 *   conn_main            long-lived "connections": mostly asleep in
 *                        conn_wait_readable (an I/O-like wait), a little
 *                        parsing, a short conn_write_response wait; they
 *                        close after a while and the spawner replaces them
 *   cpu_*_main           long-lived CPU burners in burn_compress_block,
 *                        burn_hash_table_rehash and burn_parse_request,
 *                        yielding every slice and resting in between
 *   pipe_*_main          producer/consumer pairs talking over a channel
 *   request_main         short-lived: parse, call a "backend", reply, exit;
 *                        spawned continuously at --spawn-rate per second
 *   spawner_main         paces request_main and tops the connections up
 *   stuck_wait_for_reply deliberately stuck forever: waits for a reply on a
 *                        channel nobody ever sends to (a lost wakeup)
 *
 * Role sizes: the stuck ones, one spawner, up to 5 burners, up to 4 pipe
 * pairs, then connections fill the --coroutines target.  Request handlers
 * come on top of it (a handful alive at any time).
 */
#ifndef COROTOP_DEMO_WORKLOAD_H
#define COROTOP_DEMO_WORKLOAD_H

#include <stdint.h>

struct scheduler;
struct workload;

struct workload_config {
	unsigned coroutines; /* long-lived target, stuck ones included */
	unsigned stuck;
	unsigned spawn_rate; /* request_main spawns per second */
	uint64_t seed;
};

struct workload_roles {
	unsigned stuck;
	unsigned burners;
	unsigned pipe_pairs;
	unsigned conns;
};

/* NULL with errno on failure.  Spawns nothing yet. */
struct workload *workload_create(struct scheduler *s,
				 const struct workload_config *cfg);
/* Spawn the initial population.  0 or negative errno. */
int workload_start(struct workload *w);
/* After scheduler_stop(): frees the channels and the rest. */
void workload_destroy(struct workload *w);
void workload_roles(const struct workload *w, struct workload_roles *out);

#endif
