/*
 * writer: a traced program for the integration and e2e tests.  It links the
 * real probe (libcorotop-probe), attaches through the CTP_* environment like
 * any traced program, and writes events whose payload says who wrote them:
 * probe_id = IT_PROBE_ID(c), addr = IT_ADDR(c, e), is_active = e & 1 (see
 * itest.h), so a test can check every harvested event against the writer.
 *
 * Modes (argv[1]):
 *   seq M K EVERY US [ACKFD]
 *                        M coroutines, K events each, round-robin; sleep US
 *                        microseconds every EVERY events; close all.  With
 *                        ACKFD, also wait for one byte on it every EVERY
 *                        events: a reader that acks what it read paces the
 *                        writer, so no ring laps however slow the machine.
 *   churn TOTAL LIVE K US
 *                        TOTAL short-lived coroutines, LIVE alive at a time,
 *                        K events each; sleep US after every round of LIVE
 *                        events.  Before a birth that would need a recycled
 *                        station it waits (bounded) until the engine has put
 *                        one on the free list: pacing to the harvester.
 *   ctl CTLFD ACKFD      commands, one byte each, read from CTLFD:
 *                        'o' open a coroutine, 'w' one event on each open
 *                        coroutine, 'c' close all, 'q' quit.  Each command is
 *                        acknowledged with 'k' on ACKFD (-1: none); 'q'
 *                        first writes a "stats ..." line there.
 *   spin CTLFD OUTFD     one coroutine, an event and a "tick N" line on OUTFD
 *                        every 2 ms until 'q' arrives on CTLFD; first line
 *                        "shm PATH PID", last line "stats ...".
 *   exit CODE            a few events, then exit(CODE)
 *   signal SIG           a few events, then raise(SIG)
 *   shmpath FILE SECS    write "CTP_SHM_PATH PID" to FILE, then events every
 *                        5 ms for SECS seconds
 *   run SECS M           M coroutines switching every millisecond for SECS
 *   named SECS           as run with 5 coroutines opened with names
 *                        (corotop_coro_open_named): "acceptor" (static),
 *                        "conn 42" (copied, then the buffer overwritten),
 *                        "bad\x1b[31m\x7f" (control bytes), 60 'x' (too long)
 *                        and none
 *
 * Exit status 77: the probe did not attach (its reason goes to stderr).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "corotop/ctp.h"
#include "corotop/probe.h"
#include "../common/itest.h"

#define WRITER_MAX_CTL 1024

static int writer_need_probe(void)
{
	if (corotop_probe_live_)
		return 0;
	fprintf(stderr, "writer: probe not attached: %s\n",
		corotop_probe_status());
	return 77;
}

static void writer_stats_line(char *buf, size_t len)
{
	struct corotop_probe_stats st;

	corotop_probe_stats(&st);
	snprintf(buf, len,
		 "stats opened=%" PRIu64 " recycled=%" PRIu64
		 " untraced=%" PRIu64 " wakes=%" PRIu64 "\n",
		 st.opened, st.recycled, st.untraced, st.wakes);
}

static unsigned long writer_arg(char **argv, int i, int argc)
{
	if (i >= argc) {
		fprintf(stderr, "writer: missing argument %d\n", i);
		exit(2);
	}
	return strtoul(argv[i], NULL, 0);
}

static int writer_seq(unsigned m, unsigned k, unsigned every, unsigned us,
		      int ack)
{
	struct corotop_coro *co = calloc(m, sizeof(*co));
	unsigned long count = 0;
	char line[160];

	if (!co)
		return 1;
	for (unsigned c = 0; c < m; c++)
		corotop_coro_open(&co[c], IT_PROBE_ID(c));
	for (unsigned e = 0; e < k; e++) {
		for (unsigned c = 0; c < m; c++) {
			corotop_coro_record(&co[c], (int)(e & 1),
					    IT_ADDR(c, e));
			if (!every || ++count % every)
				continue;
			if (us)
				it_sleep_us(us);
			if (ack >= 0 && !it_await_ack(ack)) {
				free(co);
				return 3;
			}
		}
	}
	for (unsigned c = 0; c < m; c++)
		corotop_coro_close(&co[c]);
	writer_stats_line(line, sizeof(line));
	fprintf(stderr, "writer seq: %s", line);
	free(co);
	return 0;
}

/* Wait until a birth will find a station: fresh, or recycled. */
static void writer_wait_station(const struct ctp_header *hdr, uint32_t max)
{
	/* A deadline, not a pace: a loaded machine may keep the engine
	 * from recycling for a while. */
	uint64_t end = it_now() + 60000000000ull;

	while (it_now() < end) {
		if (atomic_load_explicit(&hdr->allocated_count,
					 memory_order_acquire) < max)
			return;
		if ((uint32_t)atomic_load_explicit(&hdr->ext.free_head,
						   memory_order_acquire))
			return;
		it_sleep_us(100);
	}
	fprintf(stderr, "writer churn: no free station after 60 s\n");
}

static int writer_churn(unsigned total, unsigned live, unsigned k, unsigned us)
{
	struct corotop_coro *co = calloc(live, sizeof(*co));
	unsigned *id = calloc(live, sizeof(*id));
	unsigned *ev = calloc(live, sizeof(*ev));
	const char *shm = getenv(CTP_ENV_SHM);
	uint32_t max = (uint32_t)strtoul(getenv(CTP_ENV_MAX), NULL, 10);
	unsigned born = 0, alive = 0;
	struct ctp_header *hdr;
	char line[160];
	int fd;

	if (!co || !id || !ev)
		return 1;
	/* A read-only look at the header: cursor and free-list head. */
	fd = open(shm, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	hdr = mmap(NULL, CTP_HEADER_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (hdr == MAP_FAILED)
		return 1;
	for (unsigned s = 0; s < live && born < total; s++) {
		writer_wait_station(hdr, max);
		id[s] = born++;
		ev[s] = 0;
		corotop_coro_open(&co[s], IT_PROBE_ID(id[s]));
		alive++;
	}
	while (alive) {
		for (unsigned s = 0; s < live; s++) {
			if (ev[s] >= k)
				continue;
			corotop_coro_record(&co[s], (int)(ev[s] & 1),
					    IT_ADDR(id[s], ev[s]));
			if (++ev[s] < k)
				continue;
			corotop_coro_close(&co[s]);
			alive--;
			if (born < total) {
				writer_wait_station(hdr, max);
				id[s] = born++;
				ev[s] = 0;
				corotop_coro_open(&co[s], IT_PROBE_ID(id[s]));
				alive++;
			}
		}
		if (us)
			it_sleep_us(us);
	}
	writer_stats_line(line, sizeof(line));
	fprintf(stderr, "writer churn: %s", line);
	munmap(hdr, CTP_HEADER_SIZE);
	free(co);
	free(id);
	free(ev);
	return 0;
}

static void writer_ack(int fd, const char *s)
{
	size_t n = strlen(s);

	if (fd >= 0 && write(fd, s, n) != (ssize_t)n)
		exit(3);
}

static int writer_ctl(int ctl, int ack)
{
	static struct corotop_coro co[WRITER_MAX_CTL];
	static unsigned ev[WRITER_MAX_CTL];
	static bool open_[WRITER_MAX_CTL];
	unsigned n = 0;
	char line[160];

	for (;;) {
		char cmd;
		ssize_t r = read(ctl, &cmd, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return 0; /* the test went away */
		switch (cmd) {
		case 'o':
			if (n < WRITER_MAX_CTL) {
				corotop_coro_open(&co[n], IT_PROBE_ID(n));
				open_[n] = true;
				ev[n] = 0;
				n++;
			}
			break;
		case 'w':
			for (unsigned c = 0; c < n; c++) {
				if (!open_[c])
					continue;
				corotop_coro_record(&co[c], (int)(ev[c] & 1),
						    IT_ADDR(c, ev[c]));
				ev[c]++;
			}
			break;
		case 'c':
			for (unsigned c = 0; c < n; c++) {
				if (open_[c])
					corotop_coro_close(&co[c]);
				open_[c] = false;
			}
			break;
		case 'q':
			writer_stats_line(line, sizeof(line));
			writer_ack(ack, line);
			return 0;
		default:
			break;
		}
		writer_ack(ack, "k");
	}
}

static int writer_spin(int ctl, int out)
{
	struct corotop_coro co;
	char line[160];
	uint64_t i = 0;

	fcntl(ctl, F_SETFL, fcntl(ctl, F_GETFL) | O_NONBLOCK);
	dprintf(out, "shm %s %d\n", getenv(CTP_ENV_SHM), (int)getpid());
	corotop_coro_open(&co, IT_PROBE_ID(0));
	for (;;) {
		char cmd = 0;

		corotop_coro_record(&co, (int)(i & 1), IT_ADDR(0, i));
		if (dprintf(out, "tick %" PRIu64 "\n", i) < 0)
			return 4;
		i++;
		if (read(ctl, &cmd, 1) == 1 && cmd == 'q')
			break;
		it_sleep_ms(2);
	}
	corotop_coro_close(&co);
	writer_stats_line(line, sizeof(line));
	dprintf(out, "%s", line);
	return 0;
}

static void writer_few(unsigned n)
{
	struct corotop_coro co;

	corotop_coro_open(&co, IT_PROBE_ID(0));
	for (unsigned e = 0; e < n; e++)
		corotop_coro_record(&co, (int)(e & 1), IT_ADDR(0, e));
	corotop_coro_close(&co);
}

static int writer_shmpath(const char *file, unsigned secs)
{
	const char *shm = getenv(CTP_ENV_SHM);
	char tmp[4096];
	uint64_t end = it_now() + (uint64_t)secs * 1000000000u;
	struct corotop_coro co;
	uint64_t i = 0;
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	f = fopen(tmp, "w");
	if (!f)
		return 1;
	fprintf(f, "%s %d\n", shm ? shm : "-", (int)getpid());
	if (fclose(f) != 0 || rename(tmp, file) != 0)
		return 1;
	corotop_coro_open(&co, IT_PROBE_ID(0));
	while (it_now() < end) {
		corotop_coro_record(&co, (int)(i & 1), IT_ADDR(0, i));
		i++;
		it_sleep_ms(5);
	}
	corotop_coro_close(&co);
	return 0;
}

static int writer_run(unsigned secs, unsigned m)
{
	struct corotop_coro *co = calloc(m, sizeof(*co));
	uint64_t end = it_now() + (uint64_t)secs * 1000000000u;
	uint64_t e = 0;

	if (!co)
		return 1;
	for (unsigned c = 0; c < m; c++)
		corotop_coro_open(&co[c], IT_PROBE_ID(c));
	while (it_now() < end) {
		for (unsigned c = 0; c < m; c++)
			corotop_coro_record(&co[c], (int)((e + c) & 1),
					    IT_ADDR(c, e));
		e++;
		it_sleep_ms(1);
	}
	for (unsigned c = 0; c < m; c++)
		corotop_coro_close(&co[c]);
	free(co);
	return 0;
}

/* writer named SECS: see the top. */
static int writer_named(unsigned secs)
{
	struct corotop_coro co[5];
	char buf[64], long_name[61];
	uint64_t end = it_now() + (uint64_t)secs * 1000000000u;
	uint64_t e = 0;

	memset(long_name, 'x', 60);
	long_name[60] = '\0';
	corotop_coro_open_named(&co[0], IT_PROBE_ID(0), "acceptor",
				COROTOP_NAME_STATIC);
	snprintf(buf, sizeof(buf), "conn %d", 42);
	corotop_coro_open_named(&co[1], IT_PROBE_ID(1), buf, COROTOP_NAME_COPY);
	memset(buf, '!', sizeof(buf) - 1); /* copied: no effect */
	corotop_coro_open_named(&co[2], IT_PROBE_ID(2), "bad\x1b[31m\x7f",
				COROTOP_NAME_COPY);
	corotop_coro_open_named(&co[3], IT_PROBE_ID(3), long_name,
				COROTOP_NAME_COPY);
	corotop_coro_open(&co[4], IT_PROBE_ID(4));
	while (it_now() < end) {
		for (unsigned c = 0; c < 5; c++)
			corotop_coro_record(&co[c], (int)((e + c) & 1),
					    IT_ADDR(c, e));
		e++;
		it_sleep_ms(1);
	}
	for (unsigned c = 0; c < 5; c++)
		corotop_coro_close(&co[c]);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int rc;

	if (!strcmp(mode, "exit")) {
		if (corotop_probe_live_)
			writer_few(5);
		return (int)writer_arg(argv, 2, argc);
	}
	if (!strcmp(mode, "signal")) {
		int sig = (int)writer_arg(argv, 2, argc);

		if (corotop_probe_live_)
			writer_few(5);
		signal(sig, SIG_DFL);
		raise(sig);
		return 1;
	}
	rc = writer_need_probe();
	if (rc)
		return rc;
	if (!strcmp(mode, "seq"))
		return writer_seq((unsigned)writer_arg(argv, 2, argc),
				  (unsigned)writer_arg(argv, 3, argc),
				  (unsigned)writer_arg(argv, 4, argc),
				  (unsigned)writer_arg(argv, 5, argc),
				  argc > 6 ? (int)writer_arg(argv, 6, argc)
					   : -1);
	if (!strcmp(mode, "churn"))
		return writer_churn((unsigned)writer_arg(argv, 2, argc),
				    (unsigned)writer_arg(argv, 3, argc),
				    (unsigned)writer_arg(argv, 4, argc),
				    (unsigned)writer_arg(argv, 5, argc));
	if (!strcmp(mode, "ctl"))
		return writer_ctl((int)strtol(argv[2], NULL, 10),
				  argc > 3 ? (int)strtol(argv[3], NULL, 10)
					   : -1);
	if (!strcmp(mode, "spin"))
		return writer_spin((int)writer_arg(argv, 2, argc),
				   (int)writer_arg(argv, 3, argc));
	if (!strcmp(mode, "shmpath"))
		return writer_shmpath(argc > 2 ? argv[2] : "",
				      (unsigned)writer_arg(argv, 3, argc));
	if (!strcmp(mode, "run"))
		return writer_run((unsigned)writer_arg(argv, 2, argc),
				  (unsigned)writer_arg(argv, 3, argc));
	if (!strcmp(mode, "named"))
		return writer_named((unsigned)writer_arg(argv, 2, argc));
	fprintf(stderr, "writer: unknown mode '%s'\n", mode);
	return 2;
}
