/*
 * procmem: another process's memory (src/engine/target/procmem.c).
 *
 * The target is a fork of this test, so its globals are at the addresses
 * they have here.  It waits on a pipe for one-letter commands and answers
 * with the current value of a global, which tells the test what the child
 * itself sees after procmem wrote it.  Checked: reads and writes of a
 * global; a write into a const object (read-only .rodata: the ptrace path),
 * unaligned, touching only its bytes; strings at the end of a mapping;
 * transfers that run past a mapping; the refusals (no such process, another
 * user, a zombie); seize/release leaving the child running and untraced;
 * procmem_explain and procmem_yama_scope; procmem_read_words, its runs of
 * consecutive words and an unmapped one among them.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/target/procmem.h"

#define NO_SUCH_PID ((pid_t)0x7ffffff0) /* above any pid_max */
#define RODATA_LEN 32

__attribute__((used)) int pm_global = 1234;
__attribute__((used)) const unsigned char pm_rodata[RODATA_LEN] = {
	0,  1,	2,  3,	4,  5,	6,  7,	8,  9,	10, 11, 12, 13, 14, 15,
	16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};

/* Two one-page mappings made before the fork: "hello" ending at the end of
 * the first (the page after it unmapped), and a page of 'x' with no NUL. */
static char *str_page, *x_page;
static long page;

struct child {
	pid_t pid;
	int cmd;  /* to the child */
	int resp; /* from it */
};

static void read_full(int fd, void *buf, size_t len)
{
	size_t n = 0;

	while (n < len) {
		ssize_t got = read(fd, (char *)buf + n, len - n);

		if (got < 0 && errno == EINTR)
			continue;
		assert_true(got > 0);
		n += (size_t)got;
	}
}

static void child_loop(int cmd, int resp)
{
	char c;

	while (read(cmd, &c, 1) == 1) {
		if (c == 'g') {
			int v = *(volatile int *)&pm_global;

			if (write(resp, &v, sizeof(v)) != sizeof(v))
				break;
		} else if (c == 'r') {
			unsigned char copy[RODATA_LEN];

			for (int i = 0; i < RODATA_LEN; i++)
				copy[i] = ((volatile const unsigned char *)
						   pm_rodata)[i];
			if (write(resp, copy, sizeof(copy)) != sizeof(copy))
				break;
		}
	}
	_exit(0);
}

static void child_start(struct child *c)
{
	int to[2], from[2];

	assert_int_equal(pipe(to), 0);
	assert_int_equal(pipe(from), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		close(to[1]);
		close(from[0]);
		child_loop(to[0], from[1]);
	}
	close(to[0]);
	close(from[1]);
	c->cmd = to[1];
	c->resp = from[0];
}

static void child_ask(struct child *c, char cmd, void *buf, size_t len)
{
	assert_int_equal(write(c->cmd, &cmd, 1), 1);
	read_full(c->resp, buf, len);
}

static void child_stop(struct child *c)
{
	int status;

	close(c->cmd);
	close(c->resp);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	assert_true(WIFEXITED(status));
}

/* The state letter in /proc/PID/status. */
static char proc_state(pid_t pid)
{
	char path[64], line[256], state = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "State:", 6))
			sscanf(line + 6, " %c", &state);
	fclose(f);
	return state;
}

/* The permissions of our own mapping that holds addr. */
static void self_perms(const void *addr, char perms[5])
{
	char line[512];
	uintptr_t a = (uintptr_t)addr;
	FILE *f = fopen("/proc/self/maps", "r");

	assert_non_null(f);
	perms[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		uintptr_t lo, hi;

		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %4s", &lo, &hi,
			   perms) == 3 &&
		    a >= lo && a < hi)
			break;
		perms[0] = '\0';
	}
	fclose(f);
}

static void test_read_write_global(void **state)
{
	struct child c;
	struct procmem pm;
	char err[512];
	int v = 0;

	(void)state;
	pm_global = 1234;
	child_start(&c);
	pm_global = 1; /* ours only: the child still has 1234 */
	assert_true(procmem_open(&pm, c.pid, err, sizeof(err)));
	assert_true(procmem_read(&pm, (uintptr_t)&pm_global, &v, sizeof(v), err,
				 sizeof(err)));
	assert_int_equal(v, 1234);
	v = 5678;
	assert_true(procmem_write(&pm, (uintptr_t)&pm_global, &v, sizeof(v),
				  err, sizeof(err)));
	v = 0;
	child_ask(&c, 'g', &v, sizeof(v));
	assert_int_equal(v, 5678);
	assert_int_equal(pm_global, 1);
	/* Zero bytes is a no-op, anywhere. */
	assert_true(procmem_read(&pm, 8, &v, 0, err, sizeof(err)));
	/* Unmapped: the message names the address. */
	assert_false(procmem_read(&pm, 0x8, &v, sizeof(v), err, sizeof(err)));
	assert_non_null(strstr(err, "0x8"));
	assert_false(procmem_write(&pm, 0x10, &v, sizeof(v), err, sizeof(err)));
	assert_non_null(strstr(err, "0x10"));
	/* A range that wraps the address space. */
	assert_false(procmem_read(&pm, UINT64_MAX - 1, &v, sizeof(v), err,
				  sizeof(err)));
	procmem_finish(&pm);
	child_stop(&c);
}

/* Words the child has at the addresses they have here (a fork): 3000,
 * more than one batch of iovecs, in runs of consecutive ones. */
#define PM_WORDS 3000
static uint64_t pm_words[PM_WORDS];

static void test_read_words(void **state)
{
	static uint64_t addrs[PM_WORDS + 2], out[PM_WORDS + 2];
	static uint8_t ok[PM_WORDS + 2];
	struct child c;
	struct procmem pm;
	char err[512];
	size_t n = 0, at_hole;
	char *hole, *pair, *edge;

	(void)state;
	for (size_t i = 0; i < PM_WORDS; i++)
		pm_words[i] = 0x1000 + i;
	/* A page mapped and unmapped before the fork: the child has none
	 * there either. */
	hole = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(hole != MAP_FAILED);
	assert_int_equal(munmap(hole, 4096), 0);
	/* Two pages, the second unmapped: edge is where the first ends. */
	pair = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(pair != MAP_FAILED);
	assert_int_equal(munmap(pair + 4096, 4096), 0);
	edge = pair + 4096;
	((uint64_t *)(void *)edge)[-2] = 0x5151;
	((uint64_t *)(void *)edge)[-1] = 0x5252;
	child_start(&c);
	memset(pair, 0, 4096);		       /* ours only */
	memset(pm_words, 0, sizeof(pm_words)); /* ours only */
	/* Every word but each 7th (runs of 6), the hole in the middle. */
	for (size_t i = 0; i < PM_WORDS; i++) {
		if (i % 7 == 6)
			continue;
		if (i == PM_WORDS / 2)
			addrs[n++] = (uintptr_t)hole;
		addrs[n++] = (uintptr_t)&pm_words[i];
	}
	at_hole = 0;
	while (addrs[at_hole] != (uintptr_t)hole)
		at_hole++;
	assert_true(procmem_open(&pm, c.pid, err, sizeof(err)));
	memset(out, 0xff, sizeof(out));
	assert_int_equal(procmem_read_words(&pm, addrs, out, ok, n), n - 1);
	for (size_t k = 0; k < n; k++) {
		assert_int_equal(ok[k], k != at_hole);
		if (k == at_hole) {
			assert_int_equal(out[k], 0);
			continue;
		}
		assert_int_equal(
			out[k],
			0x1000 + ((uint64_t *)(uintptr_t)addrs[k] - pm_words));
	}
	/* None at all; only the hole. */
	assert_int_equal(procmem_read_words(&pm, addrs, out, NULL, 0), 0);
	assert_int_equal(procmem_read_words(&pm, &addrs[at_hole], out, ok, 1),
			 0);
	assert_int_equal(out[0], 0);
	assert_int_equal(ok[0], 0);
	/* A run of consecutive words that crosses into an unmapped page:
	 * the words before it are read all the same. */
	{
		uint64_t run[3] = {(uintptr_t)edge - 16, (uintptr_t)edge - 8,
				   (uintptr_t)edge};

		assert_int_equal(procmem_read_words(&pm, run, out, ok, 3), 2);
		assert_int_equal(out[0], 0x5151);
		assert_int_equal(out[1], 0x5252);
		assert_int_equal(out[2], 0);
		assert_int_equal(ok[0] + ok[1] + ok[2], 2);
		assert_int_equal(ok[2], 0);
	}
	procmem_finish(&pm);
	child_stop(&c);
	munmap(pair, 4096);
}

static void test_write_rodata(void **state)
{
	struct child c;
	struct procmem pm;
	char err[512], perms[5];
	unsigned char in[11], got[RODATA_LEN];

	(void)state;
	/* The point of the case: the object is in a read-only mapping. */
	self_perms(pm_rodata, perms);
	assert_int_equal(perms[0], 'r');
	assert_int_equal(perms[1], '-');
	child_start(&c);
	assert_true(procmem_open(&pm, c.pid, err, sizeof(err)));
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(0xa0 + i);
	/* Offset 5, 11 bytes: a partial word at both ends. */
	assert_true(procmem_write(&pm, (uintptr_t)pm_rodata + 5, in, sizeof(in),
				  err, sizeof(err)));
	child_ask(&c, 'r', got, sizeof(got));
	for (int i = 0; i < RODATA_LEN; i++) {
		int want = i >= 5 && i < 16 ? 0xa0 + i - 5 : i;

		assert_int_equal(got[i], want);
	}
	/* Ours is untouched, and the child runs on untraced. */
	assert_int_equal(pm_rodata[5], 5);
	assert_int_not_equal(proc_state(c.pid), 't');
	procmem_finish(&pm);
	child_stop(&c);
}

static void test_read_string(void **state)
{
	struct child c;
	struct procmem pm;
	char err[512], buf[4096];
	uint64_t hello = (uintptr_t)str_page + (uint64_t)page - 6;

	(void)state;
	child_start(&c);
	assert_true(procmem_open(&pm, c.pid, err, sizeof(err)));
	assert_true(procmem_read_string(&pm, hello, buf, 64, err, sizeof(err)));
	assert_string_equal(buf, "hello");
	/* Exactly room for it, and one byte too few. */
	assert_true(procmem_read_string(&pm, hello, buf, 6, err, sizeof(err)));
	assert_string_equal(buf, "hello");
	assert_false(procmem_read_string(&pm, hello, buf, 5, err, sizeof(err)));
	assert_non_null(strstr(err, "not terminated within 4 bytes"));
	assert_false(procmem_read_string(&pm, hello, buf, 0, err, sizeof(err)));
	/* No NUL before the unmapped page. */
	assert_false(procmem_read_string(&pm, (uintptr_t)x_page + 100, buf,
					 sizeof(buf), err, sizeof(err)));
	/* A plain read across the end of the mapping is short: an error. */
	assert_false(procmem_read(&pm, hello, buf, 12, err, sizeof(err)));
	snprintf(buf, sizeof(buf), "0x%" PRIx64, hello);
	assert_non_null(strstr(err, buf));
	assert_true(procmem_read(&pm, hello, buf, 6, err, sizeof(err)));
	procmem_finish(&pm);
	child_stop(&c);
}

static void test_no_such_process(void **state)
{
	struct procmem pm;
	char err[512];

	(void)state;
	assert_false(procmem_open(&pm, NO_SUCH_PID, err, sizeof(err)));
	assert_non_null(strstr(err, "no such process"));
	assert_false(procmem_open(&pm, 0, err, sizeof(err)));
	assert_false(procmem_open(&pm, -1, err, sizeof(err)));
	assert_false(procmem_alive(NO_SUCH_PID));
	assert_true(procmem_alive(getpid()));
}

/* A child with the given uids, waiting for EOF; as root only. */
static pid_t other_user_start(uid_t r, uid_t e, uid_t s, int *fd)
{
	int to[2], from[2];
	char c = 0;
	pid_t pid;

	assert_int_equal(pipe(to), 0);
	assert_int_equal(pipe(from), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(to[1]);
		close(from[0]);
		if (setresgid(65534, 65534, 65534) || setresuid(r, e, s))
			_exit(1);
		if (write(from[1], "k", 1) != 1)
			_exit(1);
		while (read(to[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(to[0]);
	close(from[1]);
	read_full(from[0], &c, 1);
	close(from[0]);
	*fd = to[1];
	return pid;
}

/* As root: a child that became uid 65534, and one that kept only a saved
 * uid 65534, are both refused although the kernel would allow root. */
static void test_other_user(void **state)
{
	struct procmem pm;
	char err[512];
	int fd, status;
	pid_t pid;

	(void)state;
	if (geteuid() != 0)
		skip(); /* no other uid to make; see test_other_user_init */
	pid = other_user_start(65534, 65534, 65534, &fd);
	assert_false(procmem_open(&pm, pid, err, sizeof(err)));
	assert_non_null(strstr(err, "another user"));
	assert_non_null(strstr(err, "uid 65534"));
	close(fd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	pid = other_user_start(0, 0, 65534, &fd);
	assert_false(procmem_open(&pm, pid, err, sizeof(err)));
	assert_non_null(strstr(err, "saved 65534"));
	close(fd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Not root: init (uid 0) is another user's. */
static void test_other_user_init(void **state)
{
	struct procmem pm;
	char err[512];

	(void)state;
	if (geteuid() == 0)
		skip(); /* init is ours; see test_other_user */
	assert_false(procmem_open(&pm, 1, err, sizeof(err)));
	assert_non_null(strstr(err, "another user"));
	assert_non_null(strstr(err, "uid 0"));
}

static void test_seize_release(void **state)
{
	struct child c;
	struct procmem pm;
	char err[512];
	unsigned char in[3] = {0xee, 0xef, 0xf0}, back[3], got[RODATA_LEN];
	int v = 0;

	(void)state;
	child_start(&c);
	assert_true(procmem_open(&pm, c.pid, err, sizeof(err)));
	assert_int_equal(procmem_seize(&pm), 0);
	assert_true(pm.seized);
	assert_int_equal(proc_state(c.pid), 't'); /* in a ptrace-stop */
	assert_int_equal(procmem_seize(&pm), 0);  /* already: a no-op */
	/* The forced write under our own stop. */
	assert_true(procmem_write(&pm, (uintptr_t)pm_rodata + 29, in,
				  sizeof(in), err, sizeof(err)));
	assert_true(procmem_read(&pm, (uintptr_t)pm_rodata + 29, back,
				 sizeof(back), err, sizeof(err)));
	assert_memory_equal(back, in, sizeof(in));
	procmem_release(&pm);
	assert_false(pm.seized);
	procmem_release(&pm); /* not seized: a no-op */
	/* It runs: it answers. */
	child_ask(&c, 'r', got, sizeof(got));
	assert_memory_equal(got + 29, in, sizeof(in));
	assert_int_equal(got[28], 28);
	child_ask(&c, 'g', &v, sizeof(v));
	/* Not traced any more: a second seize succeeds (a tracer still
	 * attached would get EPERM). */
	assert_int_equal(procmem_seize(&pm), 0);
	procmem_finish(&pm); /* releases */
	assert_false(pm.seized);
	child_ask(&c, 'g', &v, sizeof(v));
	child_stop(&c);
	/* Gone (reaped): ESRCH. */
	pm = (struct procmem){.pid = c.pid};
	assert_int_equal(procmem_seize(&pm), -ESRCH);
	assert_false(pm.seized);
}

static void test_explain(void **state)
{
	char err[512], pidtext[32];
	int scope = procmem_yama_scope();
	bool yama = access("/proc/sys/kernel/yama/ptrace_scope", F_OK) == 0;

	(void)state;
	assert_int_equal(scope >= 0, yama);
	procmem_explain(EPERM, getppid(), err, sizeof(err));
	snprintf(pidtext, sizeof(pidtext), "process %d", (int)getppid());
	assert_non_null(strstr(err, pidtext));
	assert_non_null(strstr(err, "refused"));
	if (scope > 0 && geteuid() != 0)
		assert_non_null(strstr(err, "ptrace_scope"));
	procmem_explain(ESRCH, getppid(), err, sizeof(err));
	assert_non_null(strstr(err, strerror(ESRCH)));
	/* A tiny buffer: truncated, terminated. */
	procmem_explain(EPERM, 1, err, 8);
	assert_int_equal(strlen(err), 7);
}

static void test_zombie(void **state)
{
	struct procmem pm;
	char err[512];
	siginfo_t info;
	pid_t pid = fork();

	(void)state;
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	/* Exited, not reaped (WNOWAIT): a zombie. */
	memset(&info, 0, sizeof(info));
	assert_int_equal(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT), 0);
	assert_int_equal(proc_state(pid), 'Z');
	assert_false(procmem_alive(pid));
	assert_false(procmem_open(&pm, pid, err, sizeof(err)));
	assert_non_null(strstr(err, "exited"));
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_false(procmem_alive(pid));
}

static int setup(void **state)
{
	void *two;

	(void)state;
	page = sysconf(_SC_PAGESIZE);
	two = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (two == MAP_FAILED)
		return -1;
	str_page = two;
	munmap(str_page + page, (size_t)page);
	memcpy(str_page + page - 6, "hello", 6);
	two = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (two == MAP_FAILED)
		return -1;
	x_page = two;
	munmap(x_page + page, (size_t)page);
	memset(x_page, 'x', (size_t)page);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_write_global),
		cmocka_unit_test(test_read_words),
		cmocka_unit_test(test_write_rodata),
		cmocka_unit_test(test_read_string),
		cmocka_unit_test(test_no_such_process),
		cmocka_unit_test(test_other_user),
		cmocka_unit_test(test_other_user_init),
		cmocka_unit_test(test_seize_release),
		cmocka_unit_test(test_explain),
		cmocka_unit_test(test_zombie),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
