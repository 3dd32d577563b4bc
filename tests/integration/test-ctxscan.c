/*
 * test-ctxscan: the memory scan (src/engine/scan/ctxscan.c) on a live
 * process that was never prepared -- tests/targets/fctx_parked.c, raw
 * Boost.Context tasks on Debian's libboost_context, each parked twice so
 * that its stack keeps a dead saved area below the live one.  The target
 * prints the fcontext_t it keeps for each task: the truth.  The scan
 * reads the target with procmem and framecheck, as corotop would, and
 * takes the dead stack below each thread's sp from /proc/PID/task/TID/
 * syscall (the thread waits in read()).
 *
 * Asserted: every kept context found and sure (no false negative); in a
 * plain build nothing else found (no false positive; an ASan build's are
 * counted and printed: docs/SCAN.md); the tasks' dead parks and main's
 * old parks not taken; the target then exits 0 as it would have.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/scan/ctxscan.h"
#include "engine/target/fcsave.h"
#include "engine/target/framecheck.h"
#include "engine/target/procfs.h"
#include "engine/target/procmem.h"

#define TASKS 64
#define MAX_REGIONS 4096

struct live {
	pid_t pid;
	int in; /* the target's stdin: closed to end it */
	FILE *out;
	uint64_t kept[TASKS];
	struct procmem pm;
	struct framecheck *fc;
};

static bool live_read(void *ctx, uint64_t addr, void *buf, size_t n)
{
	struct live *l = ctx;
	char err[128];

	return procmem_read(&l->pm, addr, buf, n, err, sizeof(err));
}

static bool live_after_call(void *ctx, uint64_t pc)
{
	struct live *l = ctx;

	return framecheck_frame(l->fc, pc, false) == FRAMECHECK_OK;
}

static void live_start(struct live *l)
{
	int in[2], out[2];
	char line[128];
	size_t n = 0;

	memset(l, 0, sizeof(*l));
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	l->pid = fork();
	assert_true(l->pid >= 0);
	if (l->pid == 0) {
		char count[16];

		snprintf(count, sizeof(count), "%d", TASKS);
		dup2(in[0], 0);
		dup2(out[1], 1);
		execl(ITEST_FCTX_PARKED, ITEST_FCTX_PARKED, count,
		      (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	l->in = in[1];
	l->out = fdopen(out[0], "r");
	assert_non_null(l->out);
	/* The target prints once every task is parked (a pipe read: no
	 * deadline of ours, the meson timeout ends a hang). */
	assert_non_null(fgets(line, sizeof(line), l->out));
	assert_string_equal(line, "parked=64\n");
	while (n < TASKS && fgets(line, sizeof(line), l->out)) {
		unsigned long long v;

		assert_int_equal(sscanf(line, "fctx=%llx", &v), 1);
		l->kept[n++] = v;
	}
	assert_int_equal(n, TASKS);
}

static int live_stop(struct live *l)
{
	int status;

	close(l->in);
	fclose(l->out);
	assert_int_equal(waitpid(l->pid, &status, 0), l->pid);
	return status;
}

/* Each thread's dead stack and running frames, split at its sp
 * (procfs_thread_sps).  The target prints, then blocks in read(): until
 * it does, its thread is "running" (no sp).  Wait for it, within a
 * deadline (a slow machine, not a race). */
static size_t live_dead(pid_t pid, const struct ctxscan_region *r, size_t nr,
			struct ctxscan_range *dead,
			struct ctxscan_range *running, size_t max)
{
	uint64_t sps[16];
	size_t nsp, busy = 0, n = 0;
	char path[64];
	int dirfd;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd >= 0);
	for (int tries = 0;; tries++) {
		nsp = procfs_thread_sps(dirfd, sps, 16, &busy);
		if (!busy && nsp)
			break;
		if (tries >= 30000)
			fail_msg("the target's threads never waited");
		usleep(1000);
	}
	close(dirfd);
	for (size_t i = 0; i < nsp && n < max; i++)
		if (ctxscan_split(r, nr, sps[i], &dead[n], &running[n]))
			n++;
	return n;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_live(void **state)
{
	static struct ctxscan_region regions[MAX_REGIONS];
	static struct ctxscan_found found[TASKS * 16];
	struct ctxscan_range dead[16], running[16];
	struct ctxscan_stats st;
	const struct fcsave_layout *layout;
	struct live l;
	char path[64], err[256];
	char *maps;
	size_t len = 0, nr, n, sure, false_sure;
	FILE *f;
	int status;

	(void)state;
	live_start(&l);
	layout = fcsave_layout_of(l.pid);
	if (!layout) {
		live_stop(&l);
		skip(); /* a Boost.Context whose layout fcsave does not list */
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)l.pid);
	f = fopen(path, "r");
	assert_non_null(f);
	maps = malloc(1 << 20);
	assert_non_null(maps);
	len = fread(maps, 1, (1 << 20) - 1, f);
	fclose(f);
	nr = ctxscan_regions(maps, len, regions, MAX_REGIONS);
	free(maps);
	assert_true(nr > 0);
	assert_true(procmem_open(&l.pm, l.pid, err, sizeof(err)));
	l.fc = framecheck_create(l.pid);
	assert_non_null(l.fc);

	struct ctxscan_input in = {
		.regions = regions,
		.nregions = nr,
		.dead = dead,
		.ndead = live_dead(l.pid, regions, nr, dead, running, 16),
		.running = running,
		.layout = layout,
		.reader = {.read = live_read,
			   .after_call = live_after_call,
			   .ctx = &l},
	};

	assert_int_equal(in.ndead, 1); /* one thread */
	in.nrunning = in.ndead;
	n = ctxscan_fcontext(&in, found, TASKS * 16, &st);
	print_message(
		"ctxscan: %zu found (%" PRIu64 " unsure; %d kept), %" PRIu64
		" areas, %" PRIu64 " dead, %" PRIu64 " not stored, %" PRIu64
		" running, %" PRIu64 " MiB read, %" PRIu64
		" GiB skipped, %" PRIu64 " code checks\n",
		n, st.unsure, TASKS, st.areas, st.dead, st.not_stored,
		st.running, st.bytes >> 20, st.skipped >> 30, st.code_checks);
	qsort(l.kept, TASKS, sizeof(*l.kept), u64_cmp);
	for (size_t i = 0; i < n; i++)
		if (!bsearch(&found[i].at, l.kept, TASKS, sizeof(*l.kept),
			     u64_cmp))
			print_message("ctxscan: not kept (%s): at %#" PRIx64
				      " pc %#" PRIx64 " fp %#" PRIx64
				      " stored %u at %#" PRIx64 "\n",
				      found[i].unsure ? "unsure" : "SURE",
				      found[i].at, found[i].pc, found[i].fp,
				      found[i].stored, found[i].stored_at);
	/* Every kept one found, and sure: no false negative. */
	sure = false_sure = 0;
	for (size_t i = 0; i < TASKS; i++) {
		const struct ctxscan_found *hit = NULL;

		for (size_t k = 0; k < n && !hit; k++)
			if (found[k].at == l.kept[i])
				hit = &found[k];
		assert_non_null(hit);
		assert_false(hit->unsure);
		assert_int_equal(hit->sp, l.kept[i] + layout->sp_after);
	}
	for (size_t i = 0; i < n; i++)
		if (!found[i].unsure)
			sure++;
	false_sure = sure - TASKS;
	assert_int_equal(st.found_lost, 0);
	assert_int_equal(st.unsure, n - sure);
	print_message("ctxscan: false positives: %zu sure, %zu unsure\n",
		      false_sure, n - sure);
#ifndef __SANITIZE_ADDRESS__
	/* No false positive at all.  An ASan build has both kinds: its
	 * frame records leave old frames' pointers to their callers'
	 * locals below each task's park (unsure), and its stack depot
	 * keeps arrays of return addresses whose first words are small
	 * numbers (sure: only unwinding them would tell). */
	assert_int_equal(n, TASKS);
#endif
	/* Each task's first park is still on its stack, kept by nothing;
	 * main's parks lie below its sp. */
	assert_true(st.not_stored >= TASKS);
	assert_true(st.dead >= 1);
	assert_false(st.oom);
	framecheck_destroy(l.fc);
	procmem_finish(&l.pm);
	status = live_stop(&l);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
