/*
 * gate: the connection rules of corotop serve (gate.h).  One mutex over a
 * table of slots, taken on the library's threads when a connection
 * starts, is answered and closes, and by the sweep; each step is a walk
 * of at most `slots` entries.
 */
#define _GNU_SOURCE
#include "ui/serve/gate.h"

#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

struct gate_slot {
	bool used;
	bool answered; /* its request was read whole */
	bool shut;     /* shutdown(2) already called on it */
	int fd;
	uint64_t since; /* CLOCK_MONOTONIC of its arrival */
	uint8_t ip[16]; /* the client's address (IPv4 in the first 4) */
};

struct gate {
	pthread_mutex_t lock;
	struct gate_slot *slot;
	unsigned slots, soft, per_ip;
	uint64_t deadline_ns;
	struct gate_stats st;
};

struct gate *gate_create(unsigned slots, unsigned soft, unsigned per_ip,
			 uint64_t deadline_ns)
{
	struct gate *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->slot = calloc(slots ? slots : 1, sizeof(*g->slot));
	if (!g->slot) {
		free(g);
		return NULL;
	}
	pthread_mutex_init(&g->lock, NULL);
	g->slots = slots;
	g->soft = soft ? soft : 1;
	g->per_ip = per_ip ? per_ip : 1;
	g->deadline_ns = deadline_ns;
	return g;
}

void gate_destroy(struct gate *g)
{
	if (!g)
		return;
	pthread_mutex_destroy(&g->lock);
	free(g->slot);
	free(g);
}

/* With the lock held: shut slot s (once). */
static void gate_shut(struct gate_slot *s)
{
	if (s->shut)
		return;
	s->shut = true;
	(void)shutdown(s->fd, SHUT_RDWR);
}

/* With the lock held: the oldest connection still waiting for its request,
 * from ip when not NULL; NULL when there is none. */
static struct gate_slot *gate_oldest(struct gate *g, const uint8_t *ip)
{
	struct gate_slot *old = NULL;

	for (unsigned k = 0; k < g->slots; k++) {
		struct gate_slot *s = &g->slot[k];

		if (!s->used || s->shut || s->answered ||
		    (ip && memcmp(s->ip, ip, sizeof(s->ip))))
			continue;
		if (!old || s->since < old->since)
			old = s;
	}
	return old;
}

/* With the lock held: the address with the most connections still waiting
 * for their request (the first such in the table on a tie); NULL when none
 * waits.  Each step is a walk of the slots, so this is slots squared, only
 * when the soft limit is passed. */
static const uint8_t *gate_crowded(struct gate *g)
{
	const uint8_t *crowd = NULL;
	unsigned most = 0;

	for (unsigned k = 0; k < g->slots; k++) {
		struct gate_slot *s = &g->slot[k];
		unsigned n = 0;

		if (!s->used || s->shut || s->answered)
			continue;
		for (unsigned j = 0; j < g->slots; j++) {
			struct gate_slot *t = &g->slot[j];

			n += t->used && !t->shut && !t->answered &&
			     !memcmp(t->ip, s->ip, sizeof(s->ip));
		}
		if (n > most) {
			most = n;
			crowd = s->ip;
		}
	}
	return crowd;
}

/* With the lock held: the deadline applied at `now`. */
static unsigned gate_expire(struct gate *g, uint64_t now)
{
	unsigned n = 0;

	for (unsigned k = 0; k < g->slots; k++) {
		struct gate_slot *s = &g->slot[k];

		if (s->used && !s->shut && !s->answered &&
		    now - s->since > g->deadline_ns) {
			gate_shut(s);
			n++;
		}
	}
	g->st.expired += n;
	return n;
}

static void gate_ip(const struct sockaddr *addr, uint8_t ip[16])
{
	memset(ip, 0, 16);
	if (addr && addr->sa_family == AF_INET)
		memcpy(ip, &((const struct sockaddr_in *)addr)->sin_addr, 4);
	else if (addr && addr->sa_family == AF_INET6)
		memcpy(ip, &((const struct sockaddr_in6 *)addr)->sin6_addr, 16);
}

uintptr_t gate_enter(struct gate *g, int fd, const struct sockaddr *addr)
{
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC);
	struct gate_slot *free_slot = NULL, *victim;
	unsigned live = 0, from_ip = 0;
	uint8_t ip[16];

	gate_ip(addr, ip);
	pthread_mutex_lock(&g->lock);
	gate_expire(g, now);
	for (unsigned k = 0; k < g->slots; k++) {
		struct gate_slot *s = &g->slot[k];

		if (!s->used) {
			if (!free_slot)
				free_slot = s;
			continue;
		}
		if (s->shut)
			continue;
		live++;
		from_ip += !memcmp(s->ip, ip, sizeof(ip));
	}
	/* Room for this one: the oldest waiting from its address, then the
	 * oldest waiting from the address that waits most -- so a burst of
	 * reconnections from a few crowded addresses shuts their own, never
	 * an honest client's one connection still being read. */
	if (from_ip >= g->per_ip && (victim = gate_oldest(g, ip))) {
		gate_shut(victim);
		g->st.evicted++;
		live--;
	}
	if (live >= g->soft && (victim = gate_oldest(g, gate_crowded(g)))) {
		gate_shut(victim);
		g->st.evicted++;
	}
	if (!free_slot) {
		pthread_mutex_unlock(&g->lock);
		(void)shutdown(fd, SHUT_RDWR);
		return 0;
	}
	*free_slot = (struct gate_slot){
		.used = true,
		.fd = fd,
		.since = now,
	};
	memcpy(free_slot->ip, ip, sizeof(ip));
	g->st.entered++;
	pthread_mutex_unlock(&g->lock);
	return (uintptr_t)(free_slot - g->slot) + 1;
}

void gate_answered(struct gate *g, uintptr_t token)
{
	if (!token || token > g->slots)
		return;
	pthread_mutex_lock(&g->lock);
	g->slot[token - 1].answered = true;
	pthread_mutex_unlock(&g->lock);
}

void gate_leave(struct gate *g, uintptr_t token)
{
	if (!token || token > g->slots)
		return;
	pthread_mutex_lock(&g->lock);
	memset(&g->slot[token - 1], 0, sizeof(g->slot[0]));
	pthread_mutex_unlock(&g->lock);
}

unsigned gate_sweep(struct gate *g)
{
	unsigned n;

	pthread_mutex_lock(&g->lock);
	n = gate_expire(g, clock_now_ns(CLOCK_MONOTONIC));
	pthread_mutex_unlock(&g->lock);
	return n;
}

void gate_stats(struct gate *g, struct gate_stats *out)
{
	pthread_mutex_lock(&g->lock);
	*out = g->st;
	pthread_mutex_unlock(&g->lock);
}
