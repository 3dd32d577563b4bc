/*
 * ctp_writer: the traced program of bench/loaded_loss.sh -- a cTP writer in
 * one of two styles, paced or flat out, that reports what it wrote and how
 * long that took, so an engine's capture share and its cost to the writer
 * can be computed from outside.
 *
 *   ctp_writer probe|sdk T M K US
 *     T threads, each with M coroutines of K events, round-robin; after
 *     each round (M events) the thread sleeps US microseconds (0: flat out).
 *   probe  corotop's probe (corotop_coro_*), as a program linking it would;
 *   sdk    the shipped upstream SDKs' write (UPSTREAM-FACTS.md): per-slot
 *          seqlock, gettid per event, seq_cst fence, a socket byte when
 *          tracer_sleeping == 1 (MSG_NOSIGNAL: the bench outlives engines).
 *
 * Prints "written=N elapsed_ns=T" on stderr (T: the threads' wall time).
 * Exit 77 when the CTP_* environment is missing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "corotop/ctp.h"
#include "corotop/probe.h"

static bool sdk;
static unsigned m_coros, k_events, pace_us;
static struct ctp_header *hdr;
static uint32_t max_st;
static int sock = -1;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int sdk_attach(void)
{
	const char *shm = getenv(CTP_ENV_SHM), *sp = getenv(CTP_ENV_SOCK);
	const char *mx = getenv(CTP_ENV_MAX);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (!shm || !sp || !mx)
		return -1;
	max_st = (uint32_t)strtoul(mx, NULL, 10);
	fd = open(shm, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	hdr = mmap(NULL, (size_t)ctp_region_size(max_st),
		   PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (hdr == MAP_FAILED)
		return -1;
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sp);
	if (sock >= 0 && connect(sock, (struct sockaddr *)&sa, sizeof(sa)) &&
	    errno != EINPROGRESS) {
		close(sock);
		sock = -1;
	}
	return 0;
}

struct sdk_coro {
	struct ctp_station *s;
	uint64_t count;
};

static void sdk_record(struct sdk_coro *c, int active, uint64_t addr)
{
	struct ctp_epoch *e;
	uint64_t old;
	uint32_t one = 1;

	if (!c->s)
		return;
	e = &c->s->slots[c->count++ % CTP_SLOTS];
	/* relaxed: our own slot's seq. */
	old = atomic_load_explicit(&e->seq, memory_order_relaxed);
	/* release, odd: the SDKs' in-progress mark. */
	atomic_store_explicit(&e->seq, old + 1, memory_order_release);
	__atomic_store_n(&e->addr, addr, __ATOMIC_RELAXED);
	__atomic_store_n(&e->tid, (uint64_t)syscall(SYS_gettid),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&e->timestamp, now_ns(), __ATOMIC_RELAXED);
	__atomic_store_n(&e->is_active, (uint8_t)active, __ATOMIC_RELAXED);
	/* release, even: complete; pairs with the engine's acquire. */
	atomic_store_explicit(&e->seq, old + 2, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	/* relaxed after the fence; the CAS decides who wakes. */
	if (atomic_load_explicit(&hdr->tracer_sleeping, memory_order_relaxed) ==
		    1 &&
	    atomic_compare_exchange_strong_explicit(&hdr->tracer_sleeping, &one,
						    0, memory_order_acq_rel,
						    memory_order_relaxed) &&
	    sock >= 0)
		(void)send(sock, "1", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void *writer_main(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	struct corotop_coro *pc = calloc(m_coros, sizeof(*pc));
	struct sdk_coro *sc = calloc(m_coros, sizeof(*sc));
	struct timespec ts = {(time_t)(pace_us / 1000000u),
			      (long)(pace_us % 1000000u) * 1000};

	if (!pc || !sc)
		abort();
	for (unsigned i = 0; i < m_coros; i++) {
		uint64_t id = ((uint64_t)t << 32) | (i + 1);

		if (sdk) {
			/* relaxed: the spec's allocator. */
			uint32_t idx = atomic_fetch_add_explicit(
				&hdr->allocated_count, 1, memory_order_relaxed);

			sc[i].s = idx < max_st ? (struct ctp_station
							  *)((char *)hdr +
							     CTP_HEADER_SIZE) +
							 idx
					       : NULL;
			if (sc[i].s)
				sc[i].s->probe_id = id;
		} else {
			corotop_coro_open(&pc[i], id);
		}
	}
	for (unsigned k = 0; k < k_events; k++) {
		for (unsigned i = 0; i < m_coros; i++) {
			if (sdk)
				sdk_record(&sc[i], (int)(k & 1), k);
			else
				corotop_coro_record(&pc[i], (int)(k & 1), k);
		}
		if (pace_us)
			nanosleep(&ts, NULL);
	}
	for (unsigned i = 0; i < m_coros; i++) {
		if (sdk && sc[i].s)
			/* release: the last seq before the flag. */
			atomic_store_explicit(&sc[i].s->is_dead, 1,
					      memory_order_release);
		else if (!sdk)
			corotop_coro_close(&pc[i]);
	}
	free(pc);
	free(sc);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[64];
	unsigned threads;
	uint64_t t0, t1;

	if (argc != 6 || (strcmp(argv[1], "probe") && strcmp(argv[1], "sdk"))) {
		fprintf(stderr, "usage: ctp_writer probe|sdk T M K US\n");
		return 2;
	}
	sdk = !strcmp(argv[1], "sdk");
	threads = (unsigned)strtoul(argv[2], NULL, 10);
	m_coros = (unsigned)strtoul(argv[3], NULL, 10);
	k_events = (unsigned)strtoul(argv[4], NULL, 10);
	pace_us = (unsigned)strtoul(argv[5], NULL, 10);
	if (!threads || threads > 64 || !m_coros)
		return 2;
	if (sdk ? sdk_attach() < 0 : !corotop_probe_init()) {
		fprintf(stderr, "ctp_writer: not traced\n");
		return 77;
	}
	t0 = now_ns();
	for (unsigned t = 0; t < threads; t++)
		if (pthread_create(&th[t], NULL, writer_main,
				   (void *)(uintptr_t)t))
			return 1;
	for (unsigned t = 0; t < threads; t++)
		pthread_join(th[t], NULL);
	t1 = now_ns();
	fprintf(stderr, "written=%llu elapsed_ns=%llu\n",
		(unsigned long long)threads * m_coros * k_events,
		(unsigned long long)(t1 - t0));
	return 0;
}
