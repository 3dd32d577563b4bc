/*
 * gate: which connections corotop serve keeps when clients crowd it.
 *
 * libmicrohttpd refuses a connection at accept once its limits are
 * reached, and closes one only when it has been idle for its timeout: a
 * client that sends one header line every few seconds, over many
 * connections, holds every slot for as long as it likes, and honest
 * scrapes are refused.  The gate gives the server its own rules, applied
 * as each connection arrives (and on every sweep):
 *   - a request must be whole (its headers read, its answer begun) within
 *     the deadline of its connection's arrival, or the connection is shut;
 *   - past `per_ip` connections from one address, that address's oldest
 *     connection still waiting for its request is shut to make room;
 *   - past `soft` connections at once, the oldest still waiting from the
 *     address with the most such connections is shut -- a slow client is
 *     older than a fresh one, and a crowd's reconnections shut the crowd,
 *     not a lone honest client whose request is still being read.
 * The library's own limits are set above the gate's (http.c), so that it
 * never refuses first.  A connection is shut with shutdown(2) on its
 * socket, which its thread then sees and closes; the gate forgets it when
 * the library says it closed, before the library closes the socket, so a
 * descriptor reused by another file is never touched.
 */
#ifndef COROTOP_SERVE_GATE_H
#define COROTOP_SERVE_GATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct gate;

/* At most `slots` connections tracked (the library's own limit). */
struct gate *gate_create(unsigned slots, unsigned soft, unsigned per_ip,
			 uint64_t deadline_ns);
void gate_destroy(struct gate *g);

/* A connection arrived on socket fd from addr: room made for it; returns
 * its token (0: no slot, the connection is shut). */
uintptr_t gate_enter(struct gate *g, int fd, const struct sockaddr *addr);
/* Its request was read whole: no deadline from now on, never evicted. */
void gate_answered(struct gate *g, uintptr_t token);
/* It closed (before its socket is). */
void gate_leave(struct gate *g, uintptr_t token);
/* Shut the connections past their deadline; returns how many. */
unsigned gate_sweep(struct gate *g);

struct gate_stats {
	uint64_t entered, evicted, expired;
};
void gate_stats(struct gate *g, struct gate_stats *out);

#endif
