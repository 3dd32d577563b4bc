/*
 * keeper_target: a target shaped like a program on the upstream SDKs
 * (UPSTREAM-FACTS.md, upstream_writer.c) for the keeper test: one station,
 * slot-style seqs, and the wake as the SDKs do it -- if tracer_sleeping is
 * 1, CAS it to 0 and write() one byte to a blocking socket, SIGPIPE left at
 * its default.  It does not link the probe.
 *
 *   keeper_target READY
 *
 * Records a few events, writes its pid to READY (whole, by rename), then
 * waits for SIGUSR1 (60 s at most: exit 4).  The test kills corotop in
 * between.  Then it stores tracer_sleeping = 1 -- the state of an engine
 * killed asleep, forced because whether the engine slept at the kill is
 * the scheduler's choice -- and records one more event, which wakes the
 * (dead) engine through the socket.  Exit 0 when that write went through;
 * a write to a socket nobody holds raises SIGPIPE (status 141).  Exit 77
 * without the CTP_* environment.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
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

static struct ctp_header *hdr;
static struct ctp_station *st;
static int sock = -1;
static uint64_t count;

static uint64_t kt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int kt_attach(void)
{
	const char *shm = getenv(CTP_ENV_SHM);
	const char *path = getenv(CTP_ENV_SOCK);
	const char *max = getenv(CTP_ENV_MAX);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t size;
	int fd;

	if (!shm || !path || !max)
		return -1;
	size = (size_t)ctp_region_size((uint32_t)strtoul(max, NULL, 10));
	fd = open(shm, O_RDWR);
	if (fd < 0)
		return -1;
	hdr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (hdr == MAP_FAILED)
		return -1;
	/* Blocking, no MSG_NOSIGNAL anywhere: as the SDKs. */
	sock = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	/* The station the count hands out (corotop's preload may have taken
	 * one first: its process station). */
	uint32_t i = atomic_fetch_add_explicit(&hdr->allocated_count, 1,
					       memory_order_relaxed);

	if (i >= (uint32_t)strtoul(max, NULL, 10))
		return -1;
	st = (struct ctp_station *)((char *)hdr + CTP_HEADER_SIZE) + i;
	__atomic_store_n(&st->probe_id, 0x4b00000001ull, __ATOMIC_RELAXED);
	__atomic_store_n(&st->birth_ts, kt_now(), __ATOMIC_RELAXED);
	return 0;
}

/* One event, the SDK way.  1 when it wrote a wake byte. */
static int kt_record(int active)
{
	struct ctp_epoch *e = &st->slots[count++ % CTP_SLOTS];
	uint64_t old = atomic_load_explicit(&e->seq, memory_order_relaxed);
	uint32_t one = 1;

	/* release: pairs with the engine's acquire of seq (odd: writing) */
	atomic_store_explicit(&e->seq, old + 1, memory_order_release);
	__atomic_store_n(&e->addr, 0x1000 + count, __ATOMIC_RELAXED);
	__atomic_store_n(&e->tid, (uint64_t)syscall(SYS_gettid),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&e->timestamp, kt_now(), __ATOMIC_RELAXED);
	__atomic_store_n(&e->is_active, (uint8_t)active, __ATOMIC_RELAXED);
	/* release: pairs with the engine's acquire of seq (even: done) */
	atomic_store_explicit(&e->seq, old + 2, memory_order_release);
	/* seq_cst: pairs with the engine's fence between storing
	 * tracer_sleeping = 1 and its last scan (Dekker). */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&hdr->tracer_sleeping, memory_order_relaxed) ==
		    1 &&
	    atomic_compare_exchange_strong(&hdr->tracer_sleeping, &one, 0)) {
		if (write(sock, "1", 1) != 1)
			return -1;
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct timespec wait = {60, 0};
	char tmp[512], line[32];
	sigset_t usr1;
	int fd, len;

	if (argc != 2)
		return 2;
	if (kt_attach() < 0) {
		fprintf(stderr, "keeper_target: no cTP environment\n");
		return 77;
	}
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	for (int i = 0; i < 16; i++)
		if (kt_record(i & 1) < 0)
			return 3;
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	len = snprintf(line, sizeof(line), "%d\n", (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, line, (size_t)len) != len || close(fd) < 0 ||
	    rename(tmp, argv[1]) < 0)
		return 3;
	if (sigtimedwait(&usr1, NULL, &wait) != SIGUSR1)
		return 4;
	/* The engine died asleep (forced, see the top comment). */
	atomic_store_explicit(&hdr->tracer_sleeping, 1, memory_order_relaxed);
	return kt_record(1) == 1 ? 0 : 5;
}
