/*
 * test-refwatch: the accessed-bit proof that a mapping was not touched
 * (src/engine/target/refwatch.c).
 *
 * The target is a fork of this test with three mappings: A, which it
 * reads when told (a byte on a pipe, answered once done); B, which it
 * never touches; C, which a thread of it reads in a tight loop (its
 * translation stays in the TLB: refwatch_arm must flush it).  Checked:
 *   arm        right after an arm, A and B read 0 kB touched;
 *   touch      once the child read A, A reads touched, B still not;
 *   ours       a process_vm_readv of B marks B touched (why a scan never
 *              reads a stack it watches);
 *   hot        C, read in a loop since before the arm, reads touched;
 *   gone       a mapping unmapped, a start that is no mapping's, or one
 *              split since (its other parts' touches would not count),
 *              reads REFWATCH_GONE;
 *   exited     arm and read fail on a process that is gone;
 *   parse      a crafted smaps: a line longer than the buffer skipped, a
 *              mapping without its Referenced line, numbers that do not
 *              fit, lines cut anywhere.
 * Every wait for the child has a deadline (30 s: a bound for a hung run).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/target/refwatch.h"

#define DEADLINE_NS (30ull * 1000000000ull)
#define MAP_LEN (64u * 1024u)

struct child {
	pid_t pid;
	int dirfd;
	int cmd_w, ack_r;
	uint64_t lo[3], hi[3]; /* A, B, C: sorted below */
	char *a, *b, *c;
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static char *hot;
static _Atomic uint64_t *spins; /* shared with the parent */

static void *reader(void *arg)
{
	volatile char sum = 0;

	(void)arg;
	for (;;) {
		sum += *(volatile char *)hot; /* a load each time */
		/* relaxed: a count on its own, read by the parent's wait
		 * (relaxed too); nothing else is published with it. */
		atomic_fetch_add_explicit(spins, 1, memory_order_relaxed);
	}
	return NULL;
}

/* The child: the reader thread on C, then commands on fd. */
static void child_main(struct child *ch, int cmd_r, int ack_w)
{
	pthread_t t;
	char x;

	/* C of its own (not shared with the parent since the fork). */
	memset(ch->c, 2, MAP_LEN);
	hot = ch->c;
	if (pthread_create(&t, NULL, reader, NULL))
		_exit(3);
	while (read(cmd_r, &x, 1) == 1) {
		volatile char v;

		if (x == 't')
			v = ch->a[100];
		else if (x == 'u')
			munmap(ch->a, MAP_LEN);
		else if (x == 's') /* B split in three */
			mprotect(ch->b + 8192, 4096, PROT_READ);
		(void)v;
		if (write(ack_w, &x, 1) != 1)
			_exit(4);
	}
	_exit(0);
}

static char *map_one(void)
{
	char *m = mmap(NULL, MAP_LEN + 8192, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(m != MAP_FAILED);
	/* A guard page below and above: a mapping of its own, as a
	 * stack's, whatever lies next to it (a mapping like it next to
	 * another merges with it). */
	assert_int_equal(mprotect(m, 4096, PROT_NONE), 0);
	assert_int_equal(mprotect(m + 4096 + MAP_LEN, 4096, PROT_NONE), 0);
	memset(m + 4096, 1, MAP_LEN);
	return m + 4096;
}

static void child_start(struct child *ch)
{
	int cmd[2], ack[2];
	char path[64];

	spins = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(spins != MAP_FAILED);
	ch->a = map_one();
	ch->b = map_one();
	ch->c = map_one();
	assert_int_equal(pipe(cmd), 0);
	assert_int_equal(pipe(ack), 0);
	ch->pid = fork();
	assert_true(ch->pid >= 0);
	if (!ch->pid) {
		close(cmd[1]);
		close(ack[0]);
		child_main(ch, cmd[0], ack[1]);
	}
	close(cmd[0]);
	close(ack[1]);
	ch->cmd_w = cmd[1];
	ch->ack_r = ack[0];
	snprintf(path, sizeof(path), "/proc/%d", (int)ch->pid);
	ch->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(ch->dirfd >= 0);
}

static void child_say(struct child *ch, char x)
{
	char got = 0;

	assert_int_equal(write(ch->cmd_w, &x, 1), 1);
	assert_int_equal(read(ch->ack_r, &got, 1), 1);
	assert_int_equal(got, x);
}

static void child_end(struct child *ch)
{
	uint64_t t0 = now_ns();
	int st = 0;
	pid_t w;

	close(ch->cmd_w);
	close(ch->ack_r);
	kill(ch->pid, SIGKILL);
	while ((w = waitpid(ch->pid, &st, WNOHANG)) == 0 &&
	       now_ns() - t0 < DEADLINE_NS)
		usleep(1000);
	assert_int_equal(w, ch->pid);
}

/* kB touched of A, B and C (in that order), from one read. */
static void touched(struct child *ch, uint64_t out[3])
{
	uint64_t lo[3] = {(uintptr_t)ch->a, (uintptr_t)ch->b, (uintptr_t)ch->c};
	uint64_t kb[3];
	int order[3] = {0, 1, 2};

	/* refwatch_read wants them sorted. */
	for (int i = 0; i < 3; i++)
		for (int j = i + 1; j < 3; j++)
			if (lo[order[j]] < lo[order[i]]) {
				int t = order[i];

				order[i] = order[j];
				order[j] = t;
			}
	for (int i = 0; i < 3; i++) {
		ch->lo[i] = lo[order[i]];
		ch->hi[i] = ch->lo[i] + MAP_LEN;
	}
	assert_int_equal(refwatch_read(ch->dirfd, ch->lo, ch->hi, kb, 3), 0);
	for (int i = 0; i < 3; i++)
		out[order[i]] = kb[i];
}

static void test_watch(void **state)
{
	struct child ch;
	uint64_t kb[3];
	char buf[8];
	struct iovec l = {buf, sizeof(buf)}, r;
	uint64_t t0;

	(void)state;
	child_start(&ch);
	child_say(&ch, 'x'); /* up: its reader thread runs */
	/* ... and has read C for long enough that its CPU caches C's
	 * translation: the arm must make it drop it. */
	t0 = now_ns();
	/* relaxed: pairs with the reader's relaxed count; only its value
	 * matters. */
	while (atomic_load_explicit(spins, memory_order_relaxed) < 10000000 &&
	       now_ns() - t0 < DEADLINE_NS)
		usleep(1000);

	/* arm: nothing but the reader's C touched since. */
	assert_int_equal(refwatch_arm(ch.dirfd), 0);
	touched(&ch, kb);
	assert_int_equal(kb[0], 0);
	assert_int_equal(kb[1], 0);

	/* hot: read in a loop since before the arm, seen touched. */
	t0 = now_ns();
	while (touched(&ch, kb), kb[2] == 0 && now_ns() - t0 < DEADLINE_NS)
		usleep(1000);
	assert_true(kb[2] > 0 && kb[2] != REFWATCH_GONE);

	/* touch: A read by the child. */
	child_say(&ch, 't');
	touched(&ch, kb);
	assert_true(kb[0] > 0 && kb[0] != REFWATCH_GONE);
	assert_int_equal(kb[1], 0);

	/* ours: a read of B through process_vm_readv touches it. */
	r = (struct iovec){ch.b + 8, sizeof(buf)};
	assert_int_equal(process_vm_readv(ch.pid, &l, 1, &r, 1, 0),
			 (ssize_t)sizeof(buf));
	touched(&ch, kb);
	assert_true(kb[1] > 0 && kb[1] != REFWATCH_GONE);

	/* arm again: A and B untouched again. */
	assert_int_equal(refwatch_arm(ch.dirfd), 0);
	touched(&ch, kb);
	assert_int_equal(kb[0], 0);
	assert_int_equal(kb[1], 0);

	/* gone: A unmapped; a start that is no mapping's. */
	child_say(&ch, 'u');
	touched(&ch, kb);
	assert_true(kb[0] == REFWATCH_GONE);
	assert_int_equal(kb[1], 0);
	{
		uint64_t lo = (uintptr_t)ch.b + 4096, hi = lo + 4096, one;

		assert_int_equal(refwatch_read(ch.dirfd, &lo, &hi, &one, 1), 0);
		assert_true(one == REFWATCH_GONE);
	}
	/* split: B is not the mapping it was (the touches of its other
	 * parts would not be counted). */
	child_say(&ch, 's');
	touched(&ch, kb);
	assert_true(kb[1] == REFWATCH_GONE);

	/* exited: a process that is gone. */
	child_end(&ch);
	assert_true(refwatch_arm(ch.dirfd) < 0);
	assert_true(refwatch_read(ch.dirfd, ch.lo, ch.hi, kb, 3) < 0);
	close(ch.dirfd);
}

/* A directory of our own whose "smaps" is text. */
static int fake_smaps(char *dir, size_t n, const char *text, size_t len)
{
	int fd, d;

	snprintf(dir, n, "/tmp/test-refwatch-XXXXXX");
	assert_non_null(mkdtemp(dir));
	d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(d >= 0);
	fd = openat(d, "smaps", O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	return d;
}

static void fake_end(int d, const char *dir)
{
	assert_int_equal(unlinkat(d, "smaps", 0), 0);
	close(d);
	assert_int_equal(rmdir(dir), 0);
}

static void test_parse(void **state)
{
	size_t big = 200u * 1024u, len = 0;
	char *text = malloc(big + 4096), dir[64];
	uint64_t lo[5] = {0x1000, 0x3000, 0x5000, 0x7000, 0x9000}, kb[5];
	uint64_t hi[5] = {0x2000, 0x4000, 0x6000, 0x8000, 0xa000};
	uint64_t grown = 0x1800;
	int d;

	(void)state;
	assert_non_null(text);
	/* 0x1000: Referenced 12; 0x3000: its header longer than the buffer
	 * (skipped: its lines are taken for no mapping's); 0x5000: no
	 * Referenced line; 0x7000: a number too long; 0x9000: not there. */
	len += (size_t)sprintf(text + len, "1000-2000 rw-p 00000000 00:00 0\n"
					   "Size:                  4 kB\n"
					   "Referenced:           12 kB\n"
					   "3000-4000 rw-p 00000000 00:00 0 /");
	memset(text + len, 'x', big - len);
	len = big;
	len += (size_t)sprintf(text + len,
			       "\nReferenced:            8 kB\n"
			       "5000-6000 rw-p 00000000 00:00 0\n"
			       "Rss:                   4 kB\n"
			       "7000-8000 rw-p 00000000 00:00 0\n"
			       "Referenced: 99999999999999999999999999 kB\n"
			       "a000-b000 rw-p 00000000 00:00 0\n"
			       "Referenced:            4 kB");
	d = fake_smaps(dir, sizeof(dir), text, len);
	assert_int_equal(refwatch_read(d, lo, hi, kb, 5), 0);
	assert_int_equal(kb[0], 12);
	assert_true(kb[1] == REFWATCH_GONE);
	assert_true(kb[2] == REFWATCH_GONE);
	assert_true(kb[3] > 0 && kb[3] != REFWATCH_GONE);
	assert_true(kb[4] == REFWATCH_GONE);
	/* None asked: nothing read. */
	assert_int_equal(refwatch_read(d, lo, hi, kb, 0), 0);
	/* A mapping that ends elsewhere than asked: not the same one. */
	assert_int_equal(refwatch_read(d, lo, &grown, kb, 1), 0);
	assert_true(kb[0] == REFWATCH_GONE);
	fake_end(d, dir);
	/* Every cut of a short text: never more than it says. */
	for (size_t cut = 0; cut <= 90; cut++) {
		static const char t[] = "1000-2000 rw-p 0 00:00 0\n"
					"Referenced:           12 kB\n"
					"3000-4000 rw-p 0 00:00 0\n"
					"Referenced: 7 kB\n";

		if (cut > sizeof(t) - 1)
			break;
		d = fake_smaps(dir, sizeof(dir), t, cut);
		assert_int_equal(refwatch_read(d, lo, hi, kb, 2), 0);
		assert_true(kb[0] == 12 || kb[0] == 1 || kb[0] == 0 ||
			    kb[0] == REFWATCH_GONE);
		assert_true(kb[1] == 7 || kb[1] == 0 || kb[1] == REFWATCH_GONE);
		fake_end(d, dir);
	}
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_watch),
		cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
