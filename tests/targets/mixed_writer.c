/*
 * mixed_writer: one traced process that writes one cTP region in all three
 * styles at once, so the engine must tell them apart per station:
 *
 *   probe    coroutines through the real corotop probe (corotop_coro_*):
 *            station style, in the deep ring when the engine made one;
 *   seqlock  stations written the way the shipped SDKs write them
 *            (UPSTREAM-FACTS.md): per-slot seq + 1 (odd), payload,
 *            seq + 2, seq_cst fence, wake on tracer_sleeping;
 *   literal  stations written from the spec's text alone (ctp-protocol.md
 *            4.1): take the station's next seq (1, 2, 3, ...), write the
 *            payload into slot seq % 8, store seq last with release; wake
 *            with one non-blocking '1' when tracer_sleeping == 1.
 *
 * All stations are taken by fetch_add on allocated_count, as the spec says,
 * so the three kinds interleave in the region.  Payload as in itest.h:
 * probe_id = IT_PROBE_ID(c), addr = IT_ADDR(c, e), is_active = e & 1, with
 * coroutines numbered 3j (probe), 3j + 1 (seqlock), 3j + 2 (literal).
 *
 *   mixed_writer M K ACKFD
 *                         M coroutines of each kind, K events each,
 *                         round-robin; after each round, one byte is read
 *                         from ACKFD (-1: none), which the test writes once
 *                         the engine has delivered the round: the writer is
 *                         paced to the harvester, never to a clock, so no
 *                         ring can lap however slow the machine is
 *
 * Exit 0, or 77 when the CTP_* environment is missing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "corotop/ctp.h"
#include "corotop/probe.h"
#include "../common/itest.h"

struct mixed {
	struct ctp_header *hdr;
	struct ctp_station *stations;
	uint32_t max;
	int sock;
};

/* A hand-written coroutine: its station and its per-station counter. */
struct hand {
	struct ctp_station *s;
	uint64_t count;
};

static int mixed_attach(struct mixed *m)
{
	const char *shm = getenv(CTP_ENV_SHM);
	const char *sock = getenv(CTP_ENV_SOCK);
	const char *max = getenv(CTP_ENV_MAX);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (!shm || !sock || !max)
		return -1;
	m->max = (uint32_t)strtoul(max, NULL, 10);
	fd = open(shm, O_RDWR);
	if (fd < 0)
		return -1;
	m->hdr = mmap(NULL, (size_t)ctp_region_size(m->max),
		      PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m->hdr == MAP_FAILED)
		return -1;
	m->stations = (struct ctp_station *)((char *)m->hdr + CTP_HEADER_SIZE);
	m->sock = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	if (m->sock >= 0 &&
	    connect(m->sock, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
	    errno != EINPROGRESS) {
		close(m->sock);
		m->sock = -1;
	}
	return 0;
}

static void hand_open(struct mixed *m, struct hand *h, uint64_t probe_id)
{
	/* relaxed: the spec's allocator; the station's data is ordered by
	 * its seqs. */
	uint32_t idx = atomic_fetch_add_explicit(&m->hdr->allocated_count, 1,
						 memory_order_relaxed);

	h->count = 0;
	h->s = idx < m->max ? &m->stations[idx] : NULL;
	if (!h->s)
		return;
	h->s->probe_id = probe_id;
	h->s->birth_ts = it_now();
}

static void payload(struct ctp_epoch *e, uint64_t addr, int active)
{
	__atomic_store_n(&e->addr, addr, __ATOMIC_RELAXED);
	__atomic_store_n(&e->tid, (uint64_t)syscall(SYS_gettid),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&e->timestamp, it_now(), __ATOMIC_RELAXED);
	__atomic_store_n(&e->is_active, (uint8_t)active, __ATOMIC_RELAXED);
}

static void wake(struct mixed *m, bool cas)
{
	uint32_t one = 1;

	/* relaxed: after the writer's fence (seqlock) or release (literal);
	 * a missed wake costs the engine's bounded sleep, never data. */
	if (atomic_load_explicit(&m->hdr->tracer_sleeping,
				 memory_order_relaxed) != 1)
		return;
	if (cas && !atomic_compare_exchange_strong_explicit(
			   &m->hdr->tracer_sleeping, &one, 0,
			   memory_order_acq_rel, memory_order_relaxed))
		return;
	if (m->sock >= 0 && write(m->sock, "1", 1) < 0 && errno != EAGAIN)
		fprintf(stderr, "mixed: wake: %s\n", strerror(errno));
}

/* The shipped SDKs: a seqlock per slot. */
static void seqlock_record(struct mixed *m, struct hand *h, uint64_t addr,
			   int active)
{
	struct ctp_epoch *e = &h->s->slots[h->count++ % CTP_SLOTS];
	/* relaxed: our own slot. */
	uint64_t old = atomic_load_explicit(&e->seq, memory_order_relaxed);

	atomic_store_explicit(&e->seq, old + 1, memory_order_release);
	payload(e, addr, active);
	atomic_store_explicit(&e->seq, old + 2, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	wake(m, true);
}

/* The spec's text: next seq, slot seq % 8, payload, seq last (release). */
static void literal_record(struct mixed *m, struct hand *h, uint64_t addr,
			   int active)
{
	uint64_t seq = ++h->count;
	struct ctp_epoch *e = &h->s->slots[seq % CTP_SLOTS];

	payload(e, addr, active);
	atomic_store_explicit(&e->seq, seq, memory_order_release);
	wake(m, false);
}

int main(int argc, char **argv)
{
	struct mixed m = {0};
	struct corotop_coro *pc;
	struct hand *sl, *li;
	unsigned n, k;
	int ack;

	if (argc != 4)
		return 2;
	n = (unsigned)strtoul(argv[1], NULL, 10);
	k = (unsigned)strtoul(argv[2], NULL, 10);
	ack = atoi(argv[3]);
	if (!corotop_probe_init() || mixed_attach(&m) < 0) {
		fprintf(stderr, "mixed: not traced: %s\n",
			corotop_probe_status());
		return 77;
	}
	pc = calloc(n, sizeof(*pc));
	sl = calloc(n, sizeof(*sl));
	li = calloc(n, sizeof(*li));
	if (!pc || !sl || !li)
		return 1;
	/* Interleave the kinds' stations. */
	for (unsigned j = 0; j < n; j++) {
		corotop_coro_open(&pc[j], IT_PROBE_ID(3 * j));
		hand_open(&m, &sl[j], IT_PROBE_ID(3 * j + 1));
		hand_open(&m, &li[j], IT_PROBE_ID(3 * j + 2));
		if (!sl[j].s || !li[j].s)
			return 1;
	}
	for (unsigned e = 0; e < k; e++) {
		for (unsigned j = 0; j < n; j++) {
			if (e & 1)
				corotop_coro_resume(&pc[j], IT_ADDR(3 * j, e));
			else
				corotop_coro_suspend(&pc[j], IT_ADDR(3 * j, e));
			seqlock_record(&m, &sl[j], IT_ADDR(3 * j + 1, e),
				       (int)(e & 1));
			literal_record(&m, &li[j], IT_ADDR(3 * j + 2, e),
				       (int)(e & 1));
		}
		if (ack >= 0 && !it_await_ack(ack))
			return 1;
	}
	for (unsigned j = 0; j < n; j++) {
		corotop_coro_close(&pc[j]);
		/* release, not the SDKs' plain store: the last seq must be
		 * visible to an engine that sees the flag (J). */
		atomic_store_explicit(&sl[j].s->is_dead, 1,
				      memory_order_release);
		atomic_store_explicit(&li[j].s->is_dead, 1,
				      memory_order_release);
	}
	free(pc);
	free(sl);
	free(li);
	return 0;
}
