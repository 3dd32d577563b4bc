/*
 * test-threadstop: a short stop of a process's running threads
 * (src/engine/target/threadstop.c).
 *
 * The target is a fork of this test: a spinner thread that counts in
 * shared memory (and counts the SIGUSR1 it takes), a thread waiting in
 * epoll_wait and one in read, each on a pipe of its own (the reader goes
 * back to read after each byte), and its main thread waiting on a pipe.
 * Checked:
 *   stop       the spinner alone is stopped (its count stands still while
 *              stopped, its registers read), the waiters left waiting
 *              with their calls and stack pointers; a SIGUSR1 sent while
 *              it is stopped is taken once it is let go; it runs on;
 *   settled    a waiter woken while the others are stopped makes
 *              threadstop_settled false; none woken, true;
 *   nonblocking  no thread stopped, the spinner's count goes on;
 *   no EINTR   at the end the waiters' calls saw no EINTR, and the child
 *              exits 0;
 *   parse      schedstat's third field.
 * Every wait for the child has a deadline (30 s: a bound for a hung run).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine/target/threadstop.h"

#define DEADLINE_NS (30ull * 1000000000ull)

/* Shared with the child (MAP_SHARED): its counts and thread ids. */
struct shared {
	_Atomic uint64_t spins;
	_Atomic int sigusr1;
	_Atomic int reads;
	_Atomic int eintr;
	_Atomic pid_t spinner, epoller, reader;
};

struct child {
	pid_t pid;
	int dirfd;
	int epoll_w, read_w, main_w; /* the write ends of its pipes */
	struct shared *sh;
};

static struct shared *sh_child;
static int ep_r, rd_r, main_r;

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add_explicit(&sh_child->sigusr1, 1, memory_order_relaxed);
}

static void *spinner(void *arg)
{
	(void)arg;
	atomic_store(&sh_child->spinner, (pid_t)syscall(SYS_gettid));
	for (;;)
		atomic_fetch_add_explicit(&sh_child->spins, 1,
					  memory_order_relaxed);
	return NULL;
}

static void *epoller(void *arg)
{
	struct epoll_event ev = {.events = EPOLLIN};
	int ep = epoll_create1(0);

	(void)arg;
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, ep_r, &ev))
		_exit(2);
	atomic_store(&sh_child->epoller, (pid_t)syscall(SYS_gettid));
	while (epoll_wait(ep, &ev, 1, -1) < 0)
		if (errno == EINTR)
			atomic_fetch_add(&sh_child->eintr, 1);
	return NULL;
}

static void *reader(void *arg)
{
	char c;
	ssize_t r;

	(void)arg;
	atomic_store(&sh_child->reader, (pid_t)syscall(SYS_gettid));
	while ((r = read(rd_r, &c, 1)) != 0) {
		if (r < 0 && errno == EINTR)
			atomic_fetch_add(&sh_child->eintr, 1);
		else if (r > 0)
			atomic_fetch_add(&sh_child->reads, 1);
	}
	return NULL;
}

/* The child: its threads, then a wait for its main pipe to close. */
static void child_main(void)
{
	pthread_t t;
	char c;

	signal(SIGUSR1, on_usr1);
	if (pthread_create(&t, NULL, spinner, NULL) ||
	    pthread_create(&t, NULL, epoller, NULL) ||
	    pthread_create(&t, NULL, reader, NULL))
		_exit(2);
	while (read(main_r, &c, 1) != 0)
		;
	_exit(atomic_load(&sh_child->eintr) ? 3 : 0);
}

/* Whether thread tid of pid waits in the kernel. */
static bool waits(pid_t pid, pid_t tid)
{
	char path[96], text[64] = "";
	int fd;
	ssize_t got;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid,
		 (int)tid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	got = read(fd, text, sizeof(text) - 1);
	close(fd);
	return got > 0 && strncmp(text, "running", 7) != 0;
}

static void child_start(struct child *c)
{
	int e[2], r[2], m[2];
	char path[64];
	uint64_t end = now_ns() + DEADLINE_NS;

	c->sh = mmap(NULL, sizeof(*c->sh), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(c->sh != MAP_FAILED);
	assert_int_equal(pipe(e), 0);
	assert_int_equal(pipe(r), 0);
	assert_int_equal(pipe(m), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		sh_child = c->sh;
		ep_r = e[0];
		rd_r = r[0];
		main_r = m[0];
		close(e[1]);
		close(r[1]);
		close(m[1]);
		child_main();
	}
	close(e[0]);
	close(r[0]);
	close(m[0]);
	c->epoll_w = e[1];
	c->read_w = r[1];
	c->main_w = m[1];
	snprintf(path, sizeof(path), "/proc/%d", (int)c->pid);
	c->dirfd = open(path, O_RDONLY | O_DIRECTORY);
	assert_true(c->dirfd >= 0);
	/* Every thread started; the waiters waiting, the main thread too. */
	while (!atomic_load(&c->sh->spinner) || !atomic_load(&c->sh->epoller) ||
	       !atomic_load(&c->sh->reader) ||
	       !waits(c->pid, atomic_load(&c->sh->epoller)) ||
	       !waits(c->pid, atomic_load(&c->sh->reader)) ||
	       !waits(c->pid, c->pid)) {
		assert_true(now_ns() < end);
		usleep(1000);
	}
}

/* Ends the child: its waiters woken, its main pipe closed; its exit
 * status (0: no call saw EINTR). */
static int child_stop(struct child *c)
{
	uint64_t end = now_ns() + DEADLINE_NS;
	int status;
	pid_t w;

	assert_int_equal(write(c->epoll_w, "x", 1), 1);
	close(c->read_w);
	close(c->main_w);
	close(c->epoll_w);
	while ((w = waitpid(c->pid, &status, WNOHANG)) == 0) {
		if (now_ns() >= end) {
			kill(c->pid, SIGKILL);
			fail_msg("the child did not exit within the deadline");
		}
		usleep(1000);
	}
	assert_int_equal(w, c->pid);
	close(c->dirfd);
	munmap(c->sh, sizeof(*c->sh));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static const struct threadstop_thread *find(const struct threadstop_thread *t,
					    size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].tid == tid)
			return &t[i];
	return NULL;
}

/* Waits until the spinner's count moves (it runs). */
static void runs_on(struct child *c)
{
	uint64_t end = now_ns() + DEADLINE_NS;
	uint64_t at = atomic_load(&c->sh->spins);

	while (atomic_load(&c->sh->spins) == at) {
		assert_true(now_ns() < end);
		usleep(1000);
	}
}

static void test_stop(void **state)
{
	struct child c;
	struct threadstop *ts;
	struct threadstop_stats st;
	const struct threadstop_thread *t;
	const struct threadstop_thread *sp, *ep, *rd, *mn;
	uint64_t spins, end;
	size_t n;

	(void)state;
	child_start(&c);
	ts = threadstop_create(c.pid, c.dirfd, false);
	assert_non_null(ts);
	n = threadstop_begin(ts, &t);
	assert_int_equal(n, 4);
	sp = find(t, n, atomic_load(&c.sh->spinner));
	ep = find(t, n, atomic_load(&c.sh->epoller));
	rd = find(t, n, atomic_load(&c.sh->reader));
	mn = find(t, n, c.pid);
	assert_non_null(sp);
	assert_non_null(ep);
	assert_non_null(rd);
	assert_non_null(mn);
	assert_int_equal(sp->how, THREADSTOP_STOPPED);
	assert_true(sp->held);
	assert_true(sp->sp != 0 && sp->pc != 0);
	for (const struct threadstop_thread *w = ep; w; w = w == ep   ? rd
							    : w == rd ? mn
								      : NULL) {
		assert_int_equal(w->how, THREADSTOP_WAITING);
		assert_true(w->nr >= 0);
		assert_true(w->sp != 0 && w->pc != 0);
	}
	assert_int_equal(rd->nr, SYS_read);
	/* Stopped: its count stands still. */
	spins = atomic_load(&c.sh->spins);
	usleep(20000);
	assert_int_equal(atomic_load(&c.sh->spins), spins);
	assert_true(threadstop_settled(ts));
	/* A signal sent meanwhile waits for it to be let go. */
	assert_int_equal(syscall(SYS_tgkill, c.pid, sp->tid, SIGUSR1), 0);
	threadstop_end(ts);
	threadstop_stats(ts, &st);
	assert_int_equal(st.stops, 1);
	assert_int_equal(st.stopped, 1);
	assert_int_equal(st.waiting, 3);
	assert_true(st.pause_ns > 0 && st.pause_ns <= st.pause_max_ns);
	end = now_ns() + DEADLINE_NS;
	while (atomic_load(&c.sh->sigusr1) != 1) {
		assert_true(now_ns() < end);
		usleep(1000);
	}
	runs_on(&c);
	threadstop_destroy(ts);
	assert_int_equal(child_stop(&c), 0);
}

static void test_settled(void **state)
{
	struct child c;
	struct threadstop *ts;
	const struct threadstop_thread *t;
	uint64_t end;

	(void)state;
	child_start(&c);
	ts = threadstop_create(c.pid, c.dirfd, false);
	assert_non_null(ts);
	assert_int_equal(threadstop_begin(ts, &t), 4);
	/* The reader wakes, reads a byte, and waits again: it ran. */
	assert_int_equal(write(c.read_w, "x", 1), 1);
	end = now_ns() + DEADLINE_NS;
	while (atomic_load(&c.sh->reads) != 1 ||
	       !waits(c.pid, atomic_load(&c.sh->reader))) {
		assert_true(now_ns() < end);
		usleep(1000);
	}
	assert_false(threadstop_settled(ts));
	/* Looked at again: nobody ran since. */
	assert_true(threadstop_settled(ts));
	threadstop_end(ts);
	threadstop_destroy(ts);
	assert_int_equal(child_stop(&c), 0);
}

static void test_nonblocking(void **state)
{
	struct child c;
	struct threadstop *ts;
	struct threadstop_stats st;
	const struct threadstop_thread *t, *sp;
	size_t n;

	(void)state;
	child_start(&c);
	ts = threadstop_create(c.pid, c.dirfd, true);
	assert_non_null(ts);
	n = threadstop_begin(ts, &t);
	assert_int_equal(n, 4);
	sp = find(t, n, atomic_load(&c.sh->spinner));
	assert_non_null(sp);
	assert_int_equal(sp->how, THREADSTOP_RUNNING);
	assert_false(sp->held);
	runs_on(&c); /* not stopped */
	threadstop_end(ts);
	threadstop_stats(ts, &st);
	assert_int_equal(st.stops, 0);
	assert_int_equal(st.stopped, 0);
	assert_int_equal(st.running, 1);
	threadstop_destroy(ts);
	assert_int_equal(child_stop(&c), 0);
}

static void test_parse(void **state)
{
	uint64_t ran = 7;

	(void)state;
	assert_true(threadstop_parse_ran("123 456 789\n", &ran));
	assert_int_equal(ran, 789);
	assert_false(threadstop_parse_ran("123 456\n", &ran));
	assert_false(threadstop_parse_ran("", &ran));
	assert_false(threadstop_parse_ran("a b c", &ran));
	assert_int_equal(ran, 789);
}

/* stat's field 39, past a name that holds spaces and ')'. */
static void test_parse_cpu(void **state)
{
	char line[1024];
	char tail[512] = "";

	(void)state;
	/* Fields 3..38 (36 of them), then 39 = 1, then two more. */
	for (int f = 3; f <= 38; f++)
		strcat(tail, f == 3 ? "S " : "0 ");
	snprintf(line, sizeof(line), "4242 (a) b (c)) %s1 0 0\n", tail);
	assert_int_equal(threadstop_parse_cpu(line), 1);
	snprintf(line, sizeof(line), "4242 (w) %s17\n", tail);
	assert_int_equal(threadstop_parse_cpu(line), 17);
	snprintf(line, sizeof(line), "4242 (w) %s", tail);
	assert_int_equal(threadstop_parse_cpu(line), -1); /* cut short */
	snprintf(line, sizeof(line), "4242 (w) %sx 0\n", tail);
	assert_int_equal(threadstop_parse_cpu(line), -1);
	snprintf(line, sizeof(line), "4242 (w) %s99999999999 0\n", tail);
	assert_int_equal(threadstop_parse_cpu(line), -1);
	assert_int_equal(threadstop_parse_cpu("no paren"), -1);
	assert_int_equal(threadstop_parse_cpu(""), -1);
}

/* The stat of a thread of ours names the CPU it runs on. */
static void test_parse_cpu_live(void **state)
{
	char path[64], line[1024];
	FILE *f;
	cpu_set_t was, one;
	int cpu;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof(was), &was), 0);
	cpu = sched_getcpu();
	assert_true(cpu >= 0);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	assert_int_equal(sched_setaffinity(0, sizeof(one), &one), 0);
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)gettid());
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	fclose(f);
	assert_int_equal(sched_setaffinity(0, sizeof(was), &was), 0);
	assert_int_equal(threadstop_parse_cpu(line), cpu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_settled),
		cmocka_unit_test(test_nonblocking),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_cpu),
		cmocka_unit_test(test_parse_cpu_live),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
