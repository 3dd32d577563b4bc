/*
 * upstream_writer: a traced program that writes cTP exactly the way the
 * shipped upstream C++20 and Rust SDKs do (UPSTREAM-FACTS.md), and does not
 * link the corotop probe.  It is what an engine meets when it runs a program
 * built against upstream:
 *
 *   - a station per coroutine by fetch_add on allocated_count, never reused;
 *   - probe_id and birth_ts plain stores, no station extension (the
 *     flexible bytes stay zero);
 *   - per event: slot = event_count % 8; seq = old + 1 (release); addr, tid
 *     (gettid on every event), timestamp, is_active; seq = old + 2
 *     (release); seq_cst fence; if tracer_sleeping == 1, CAS it to 0 and
 *     write the byte '1' to the socket with a plain write();
 *   - is_dead = 1 as a plain store (a relaxed atomic here, the C11 spelling
 *     that is not a data race).
 *
 * So every slot counts its own writes (+2 each), the "slot style" of ctp.h.
 *
 *   upstream_writer seq M K EVERY US WAKE_EVERY [ACKFD]
 *     M coroutines, K events each, round-robin (payload as in itest.h);
 *     sleep US every EVERY events.  After every WAKE_EVERY events the
 *     socket wake is forced, not hoped for: each next event first waits
 *     until the engine is asleep (tracer_sleeping == 1, at most 60 s), until
 *     one of them wakes it over the socket; then the writer waits (at most
 *     60 s) until the engine has read that byte (SIOCOUTQ 0), so the wake is
 *     in the engine's books whatever the machine's speed.  With ACKFD, read
 *     one byte from it after each round of M events, which the test writes
 *     once the round is delivered (itest.h it_pace).
 *
 * Prints "upstream wakes=N forced=N untraced=N" on stderr; exit 0, 1 when
 * a wait above ran out, or 77 when the CTP_* environment is missing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/sockios.h>

#include "corotop/ctp.h"
#include "../common/itest.h"

struct up {
	struct ctp_header *hdr;
	struct ctp_station *stations;
	uint32_t max;
	int sock;
	unsigned long wakes, untraced;
};

struct up_coro {
	struct ctp_station *s;
	uint64_t count;
};

static int up_attach(struct up *u)
{
	const char *shm = getenv(CTP_ENV_SHM);
	const char *sock = getenv(CTP_ENV_SOCK);
	const char *max = getenv(CTP_ENV_MAX);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t size;
	int fd;

	if (!shm || !sock || !max)
		return -1;
	u->max = (uint32_t)strtoul(max, NULL, 10);
	size = (size_t)ctp_region_size(u->max);
	fd = open(shm, O_RDWR);
	if (fd < 0)
		return -1;
	u->hdr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (u->hdr == MAP_FAILED)
		return -1;
	if (u->hdr->magic != CTP_MAGIC)
		fprintf(stderr, "upstream: magic mismatch (warning only)\n");
	u->stations = (struct ctp_station *)((char *)u->hdr + CTP_HEADER_SIZE);
	u->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (u->sock >= 0 &&
	    connect(u->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
	    errno != EINPROGRESS) {
		close(u->sock);
		u->sock = -1;
	}
	return 0;
}

static void up_open(struct up *u, struct up_coro *c, uint64_t probe_id)
{
	uint32_t idx = atomic_fetch_add_explicit(&u->hdr->allocated_count, 1,
						 memory_order_relaxed);

	c->count = 0;
	c->s = NULL;
	if (idx >= u->max) {
		u->untraced++;
		return;
	}
	c->s = &u->stations[idx];
	__atomic_store_n(&c->s->probe_id, probe_id, __ATOMIC_RELAXED);
	__atomic_store_n(&c->s->birth_ts, it_now(), __ATOMIC_RELAXED);
}

static void up_record(struct up *u, struct up_coro *c, int is_active,
		      uint64_t addr)
{
	struct ctp_epoch *e;
	uint64_t old;
	uint32_t one = 1;

	if (!c->s)
		return;
	e = &c->s->slots[c->count % CTP_SLOTS];
	c->count++;
	old = atomic_load_explicit(&e->seq, memory_order_relaxed);
	atomic_store_explicit(&e->seq, old + 1, memory_order_release);
	__atomic_store_n(&e->addr, addr, __ATOMIC_RELAXED);
	__atomic_store_n(&e->tid, (uint64_t)syscall(SYS_gettid),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&e->timestamp, it_now(), __ATOMIC_RELAXED);
	__atomic_store_n(&e->is_active, (uint8_t)(is_active != 0),
			 __ATOMIC_RELAXED);
	atomic_store_explicit(&e->seq, old + 2, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&u->hdr->tracer_sleeping,
				 memory_order_relaxed) == 1 &&
	    atomic_compare_exchange_strong(&u->hdr->tracer_sleeping, &one, 0)) {
		u->wakes++;
		if (u->sock >= 0 && write(u->sock, "1", 1) < 0)
			fprintf(stderr, "upstream: wake write: %s\n",
				strerror(errno));
	}
}

/* The engine asleep (its flag set), waited for at most 60 s. */
static bool up_wait_asleep(struct up *u)
{
	uint64_t end = it_now() + 60000000000ull;

	/* relaxed: only waited for; the record's own fence and CAS decide
	 * whether it wakes the engine. */
	while (atomic_load_explicit(&u->hdr->tracer_sleeping,
				    memory_order_relaxed) != 1) {
		if (it_now() > end) {
			fprintf(stderr, "upstream: the engine never slept "
					"within 60 s\n");
			return false;
		}
		it_sleep_us(200);
	}
	return true;
}

/* Every byte sent on the socket read by the engine, waited for at most
 * 60 s: SIOCOUTQ counts what the peer has not read yet. */
static bool up_wait_read(struct up *u)
{
	uint64_t end = it_now() + 60000000000ull;
	int left = 1;

	while (u->sock >= 0 && ioctl(u->sock, SIOCOUTQ, &left) == 0 && left) {
		if (it_now() > end)
			break;
		it_sleep_us(200);
	}
	if (u->sock >= 0 && left == 0)
		return true;
	fprintf(stderr, "upstream: the wake byte was not read (%s)\n",
		u->sock < 0 ? "no socket" : "60 s");
	return false;
}

static void up_close(struct up_coro *c)
{
	if (c->s)
		atomic_store_explicit(&c->s->is_dead, 1, memory_order_relaxed);
}

int main(int argc, char **argv)
{
	struct up u = {0};
	struct up_coro *co;
	unsigned m, k, every, us, wake_every;
	unsigned long count = 0, forced = 0;
	bool need_wake = false;
	int ack = -1;

	if (argc < 7 || strcmp(argv[1], "seq")) {
		fprintf(stderr, "usage: upstream_writer seq M K EVERY US "
				"WAKE_EVERY [ACKFD]\n");
		return 2;
	}
	m = (unsigned)strtoul(argv[2], NULL, 10);
	k = (unsigned)strtoul(argv[3], NULL, 10);
	every = (unsigned)strtoul(argv[4], NULL, 10);
	us = (unsigned)strtoul(argv[5], NULL, 10);
	wake_every = (unsigned)strtoul(argv[6], NULL, 10);
	if (argc > 7)
		ack = atoi(argv[7]);
	if (up_attach(&u) < 0) {
		fprintf(stderr, "upstream: no cTP environment\n");
		return 77;
	}
	co = calloc(m, sizeof(*co));
	if (!co)
		return 1;
	for (unsigned c = 0; c < m; c++)
		up_open(&u, &co[c], IT_PROBE_ID(c));
	for (unsigned e = 0; e < k; e++) {
		for (unsigned c = 0; c < m; c++) {
			unsigned long w0 = u.wakes;

			if (need_wake && !up_wait_asleep(&u))
				return 1;
			up_record(&u, &co[c], (int)(e & 1), IT_ADDR(c, e));
			/* The engine may have woken by its bound between our
			 * look and the record (no wake then): the next event
			 * tries again. */
			if (need_wake && u.wakes > w0) {
				need_wake = false;
				forced++;
				if (!up_wait_read(&u))
					return 1;
			}
			count++;
			if (every && count % every == 0)
				it_sleep_us(us);
			if (wake_every && count % wake_every == 0)
				need_wake = true;
		}
		if (ack >= 0 && !it_await_ack(ack))
			return 1;
	}
	for (unsigned c = 0; c < m; c++)
		up_close(&co[c]);
	fprintf(stderr, "upstream wakes=%lu forced=%lu untraced=%lu\n", u.wakes,
		forced, u.untraced);
	free(co);
	return 0;
}
