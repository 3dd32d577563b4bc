/*
 * late-target: a program started without corotop, with the probe linked
 * and a thread switching one coroutine every millisecond, for the tests of
 * late attach (corotop -p PID through the probe's "corotop" buffer).
 * Driven line by line on stdin, like ppt-target:
 *
 *   live   "ok live=L hmem=H stat=S maps=M": corotop_probe_live_, the
 *          corotop buffer's _hmem and _stat, and how many mappings of
 *          corotop's region files (ctp.shm, calltrace.shm) the process has
 *   quit   exit 0
 *
 * It prints "ready PID" first.  PR_SET_PTRACER_ANY lets a non-root corotop
 * attach under Yama ptrace_scope 1.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "corotop/ppt.h"
#include "corotop/probe.h"

extern struct ppt_stat _ppt_stat_corotop;

static void *switcher(void *arg)
{
	struct corotop_coro c;
	struct timespec ms = {0, 1000000};
	uint64_t k = 0;

	(void)arg;
	corotop_coro_open(&c, 0x1a7e);
	for (;;) {
		corotop_coro_resume(&c, 0x1000 + (k & 7));
		corotop_coro_suspend(&c, 0x2000 + (k & 7));
		k++;
		nanosleep(&ms, NULL);
	}
	return NULL;
}

/* Mappings of the region's files: "/ctp.shm", "/calltrace.shm" or
 * "/snapshots.shm" (with --sample) at the end of a line of /proc/self/maps
 * (a retired one is anonymous). */
static int region_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "/ctp.shm") ||
		    strstr(line, "/calltrace.shm") ||
		    strstr(line, "/snapshots.shm"))
			n++;
	fclose(f);
	return n;
}

int main(void)
{
	char line[128];
	pthread_t th;

	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pthread_create(&th, NULL, switcher, NULL)) {
		puts("err thread");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "live", 4))
			printf("ok live=%d hmem=%d stat=%d maps=%d\n",
			       __atomic_load_n(&corotop_probe_live_,
					       __ATOMIC_RELAXED),
			       __atomic_load_n(&_ppt_hmem_corotop,
					       __ATOMIC_RELAXED),
			       (int)__atomic_load_n(
				       &_ppt_stat_corotop.ppt_agent_pid,
				       __ATOMIC_RELAXED),
			       region_maps());
		else if (!strncmp(line, "quit", 4))
			return 0;
		else
			puts("err unknown");
	}
	return 0;
}
