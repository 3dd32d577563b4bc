/*
 * ref_harvester: a reference cTP engine that behaves as UPSTREAM-FACTS.md
 * describes the upstream Go engine, to compare corotop against on the same
 * machine and load (bench/loaded_loss.sh).  Written from that description;
 * no upstream code.
 *
 *   ref_harvester spin|none STATIONS -- CMD [ARGS...]
 *
 * It creates the shm file (1 KiB header + STATIONS KiB, no corotop
 * extension) and a Unix stream socket in a private directory, starts CMD
 * with CTP_SHM_PATH, CTP_SOCK_PATH and CTP_MAX_STATIONS, and then:
 *   spin  scans every allocated station's eight slots without pause while
 *         scans find data: acquire-load seq, skip it when odd or <= the
 *         last seq seen there, copy, re-load, discard the copy if seq moved.
 *         It counts no loss.  After a scan that found nothing: flag
 *         tracer_sleeping = 1, scan once more, then wait on the socket for a
 *         wake byte with a 50 ms deadline.
 *   none  reads nothing: the writer's cost with no engine at all.
 * When CMD exits it scans once more and prints "harvested=N" on stdout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "corotop/ctp.h"

#define REF_MAX_CLIENTS 64

struct ref {
	struct ctp_header *hdr;
	struct ctp_station *st;
	uint32_t max;
	uint64_t (*last)[CTP_SLOTS];
	uint64_t harvested;
};

static size_t ref_scan(struct ref *r)
{
	/* acquire: as the Go engine's atomic load; nothing stronger. */
	uint32_t n = atomic_load_explicit(&r->hdr->allocated_count,
					  memory_order_acquire);
	size_t got = 0;

	if (n > r->max)
		n = r->max;
	for (uint32_t i = 0; i < n; i++)
		for (unsigned k = 0; k < CTP_SLOTS; k++) {
			struct ctp_epoch *e = &r->st[i].slots[k];
			/* acquire pairs with the writer's release. */
			uint64_t seq = atomic_load_explicit(
				&e->seq, memory_order_acquire);
			volatile uint64_t sink;

			if ((seq & 1) || seq <= r->last[i][k])
				continue;
			sink = __atomic_load_n(&e->timestamp,
					       __ATOMIC_RELAXED) ^
			       __atomic_load_n(&e->addr, __ATOMIC_RELAXED) ^
			       __atomic_load_n(&e->tid, __ATOMIC_RELAXED);
			(void)sink;
			atomic_thread_fence(memory_order_acquire);
			/* relaxed after the fence: the re-check. */
			if (atomic_load_explicit(&e->seq,
						 memory_order_relaxed) != seq)
				continue;
			r->last[i][k] = seq;
			got++;
		}
	r->harvested += got;
	return got;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/ref_harvester.XXXXXX", shm[64], sockp[64], maxs[16];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct pollfd p[1 + REF_MAX_CLIENTS];
	struct ref r = {0};
	bool spin;
	size_t size;
	nfds_t np = 1;
	pid_t pid;
	int fd, lfd, status = 0;

	if (argc < 5 || strcmp(argv[3], "--") ||
	    (strcmp(argv[1], "spin") && strcmp(argv[1], "none"))) {
		fprintf(stderr, "usage: ref_harvester spin|none STATIONS -- "
				"CMD [ARGS...]\n");
		return 2;
	}
	spin = !strcmp(argv[1], "spin");
	r.max = (uint32_t)strtoul(argv[2], NULL, 10);
	if (!r.max || r.max > CTP_MAX_STATIONS_LIMIT || !mkdtemp(dir))
		return 1;
	snprintf(shm, sizeof(shm), "%s/ctp.shm", dir);
	snprintf(sockp, sizeof(sockp), "%s/ctp.sock", dir);
	snprintf(maxs, sizeof(maxs), "%u", r.max);
	size = (size_t)ctp_region_size(r.max);
	fd = open(shm, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0)
		return 1;
	r.hdr = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	r.last = calloc(r.max, sizeof(*r.last));
	if (r.hdr == MAP_FAILED || !r.last)
		return 1;
	r.hdr->magic = CTP_MAGIC;
	r.hdr->version = CTP_VERSION;
	r.hdr->max_stations = r.max;
	r.st = (struct ctp_station *)((char *)r.hdr + CTP_HEADER_SIZE);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sockp);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(lfd, 64))
		return 1;
	p[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
	signal(SIGPIPE, SIG_IGN);
	setenv(CTP_ENV_SHM, shm, 1);
	setenv(CTP_ENV_SOCK, sockp, 1);
	setenv(CTP_ENV_MAX, maxs, 1);
	pid = fork();
	if (pid == 0) {
		execvp(argv[4], argv + 4);
		_exit(127);
	}
	for (;;) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		if (!spin) {
			usleep(1000);
			continue;
		}
		if (ref_scan(&r))
			continue;
		/* seq_cst, as Go's atomic store: pairs with the writer's
		 * fence before its sleeping check; the re-scan catches a
		 * writer that wrote before it saw the flag. */
		atomic_store_explicit(&r.hdr->tracer_sleeping, 1,
				      memory_order_seq_cst);
		if (ref_scan(&r)) {
			atomic_store_explicit(&r.hdr->tracer_sleeping, 0,
					      memory_order_relaxed);
			continue;
		}
		if (poll(p, np, 50) > 0) {
			char buf[64];

			if (p[0].revents & POLLIN) {
				int c = accept4(lfd, NULL, NULL,
						SOCK_NONBLOCK | SOCK_CLOEXEC);

				if (c >= 0 && np < 1 + REF_MAX_CLIENTS)
					p[np++] = (struct pollfd){
						.fd = c, .events = POLLIN};
				else if (c >= 0)
					close(c);
			}
			for (nfds_t i = 1; i < np; i++)
				if (p[i].revents &&
				    read(p[i].fd, buf, sizeof(buf)) == 0) {
					close(p[i].fd);
					p[i--] = p[--np];
				}
		}
		/* relaxed: the engine's own flag, reset on every wake. */
		atomic_store_explicit(&r.hdr->tracer_sleeping, 0,
				      memory_order_relaxed);
	}
	if (spin)
		ref_scan(&r);
	printf("harvested=%llu\n", (unsigned long long)r.harvested);
	unlink(shm);
	unlink(sockp);
	rmdir(dir);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
