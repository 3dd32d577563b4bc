/*
 * procfs: the bounded /proc and ELF-header readers
 * (src/engine/target/procfs.c): maps and status parsing on fixed texts, the
 * size bound of procfs_slurp, and procfs_open_regular refusing a FIFO without
 * blocking.
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
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/target/procfs.h"

static const char maps[] =
	"55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 123 /usr/bin/x\n"
	"7ffd3a1f0000-7ffd3a211000 rw-p 00000000 00:00 0     [stack]\n"
	"7ffd3a2fc000-7ffd3a300000 r--p 00000000 00:00 0     [vvar]\n"
	"7ffd3a300000-7ffd3a302000 r-xp 00000000 00:00 0     [vdso]\n"
	"7f0000000000-7f0000001000 r--p 00000000 08:01 9 /tmp/not [vdso]x\n";

static void test_maps_find(void **state)
{
	uint64_t start = 0, end = 0;

	(void)state;
	assert_true(procfs_maps_find(maps, "[vdso]", &start, &end));
	assert_true(start == 0x7ffd3a300000ull);
	assert_true(end == 0x7ffd3a302000ull);
	assert_true(procfs_maps_find(maps, "[stack]", &start, &end));
	assert_true(start == 0x7ffd3a1f0000ull);
	assert_false(procfs_maps_find(maps, "[heap]", &start, &end));
	assert_false(procfs_maps_find(maps, "", &start, &end));
	assert_false(procfs_maps_find("", "[vdso]", &start, &end));
	/* the last line without its newline */
	assert_true(procfs_maps_find("1000-2000 r-xp 0 00:00 0 [vdso]",
				     "[vdso]", &start, &end));
	assert_true(end == 0x2000);
	/* garbage where the range should be */
	assert_false(procfs_maps_find("zz-2000 r-xp 0 00:00 0 [vdso]\n",
				      "[vdso]", &start, &end));
	assert_false(procfs_maps_find("3000-2000 r-xp 0 00:00 0 [vdso]\n",
				      "[vdso]", &start, &end));
}

static void test_status_value(void **state)
{
	static const char st[] = "Name:\tcat\n"
				 "VmExe:\t      20 kB\n"
				 "VmLib:\t    1592 kB\n"
				 "XVmLib:\t 7 kB\n";

	(void)state;
	assert_true(procfs_status_value(st, "VmExe") == 20);
	assert_true(procfs_status_value(st, "VmLib") == 1592);
	assert_true(procfs_status_value(st, "VmRSS") == 0);
	assert_true(procfs_status_value(st, "Vm") == 0);
	assert_true(procfs_status_value("", "VmLib") == 0);
}

static void test_slurp_bound(void **state)
{
	char path[] = "/tmp/test-procfs-XXXXXX";
	int fd = mkstemp(path);
	size_t len = 0;
	char *buf, *data = malloc(100000);

	(void)state;
	assert_true(fd >= 0);
	memset(data, 'a', 100000);
	assert_int_equal(write(fd, data, 100000), 100000);
	close(fd);

	buf = procfs_slurp(AT_FDCWD, path, 1 << 20, &len);
	assert_non_null(buf);
	assert_int_equal(len, 100000);
	assert_int_equal(buf[len], '\0');
	free(buf);
	errno = 0;
	assert_null(procfs_slurp(AT_FDCWD, path, 50000, &len));
	assert_int_equal(errno, EFBIG);
	unlink(path);
	assert_null(procfs_slurp(AT_FDCWD, path, 1 << 20, &len));
	assert_int_equal(errno, ENOENT);
	free(data);

	buf = procfs_slurp(AT_FDCWD, "/proc/self/status", 1 << 16, &len);
	assert_non_null(buf);
	assert_true(procfs_status_value(buf, "VmExe") > 0);
	free(buf);
}

static void test_open_regular(void **state)
{
	char dir[] = "/tmp/test-procfs-XXXXXX", fifo[64];
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* would block forever without O_NONBLOCK: no writer */
	assert_int_equal(procfs_open_regular(AT_FDCWD, fifo), -1);
	assert_int_equal(procfs_open_regular(AT_FDCWD, dir), -1);
	assert_int_equal(procfs_open_regular(AT_FDCWD, "/dev/null"), -1);
	fd = procfs_open_regular(AT_FDCWD, "/proc/self/exe");
	assert_true(fd >= 0);
	close(fd);
	unlink(fifo);
	rmdir(dir);
}

static void test_elf_abi(void **state)
{
	uint32_t self = procfs_elf_abi(AT_FDCWD, "/proc/self/exe");

	(void)state;
	assert_true(self != 0);
	assert_true(self >> 24 == (sizeof(void *) == 8 ? 2 : 1)); /* class */
	assert_true(procfs_elf_abi(AT_FDCWD, "/proc/self/status") == 0);
	assert_true(procfs_elf_abi(AT_FDCWD, "/nonexistent") == 0);
}

/* A thread's sp and pc from its syscall file's text: waiting in a
 * syscall, stopped outside one, running, and malformed. */
static void test_syscall_sp(void **state)
{
	uint64_t sp = 1, pc = 1;

	(void)state;
	assert_true(procfs_syscall_sp("0 0x0 0x7ffc1000 0x1 0x0 0x0 0x0 "
				      "0x7ffc0f80 0x7f0012345678\n",
				      &sp, &pc));
	assert_int_equal(sp, 0x7ffc0f80);
	assert_int_equal(pc, 0x7f0012345678);
	assert_true(procfs_syscall_sp("-1 0x7ffc0e00 0x401000\n", &sp, &pc));
	assert_int_equal(sp, 0x7ffc0e00);
	assert_int_equal(pc, 0x401000);
	assert_false(procfs_syscall_sp("running\n", &sp, &pc));
	assert_false(procfs_syscall_sp("", &sp, &pc));
	assert_false(procfs_syscall_sp("0 0x1 0x2\n0x3", &sp, &pc));
	assert_false(procfs_syscall_sp("0 0x1 0x2 0x3 0x4", &sp, &pc));
	assert_false(procfs_syscall_sp("0 1 2 3 4 5 6 7 8\n", &sp, &pc));
	assert_false(procfs_syscall_sp("x 0x1 0x2\n", &sp, &pc));
	assert_false(procfs_syscall_sp(
		"0 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8 0x9\n", &sp, &pc));
	assert_false(procfs_syscall_sp("0 0x1 0xffffffffffffffffff 0x3\n", &sp,
				       &pc));
}

/* A thread that says where its stack is, then blocks in read(). */
struct blocked {
	int fd;
	uint64_t lo, hi; /* its stack */
	int ready;	 /* set (release) once lo and hi are */
};

static void *blocked_reader(void *arg)
{
	struct blocked *b = arg;
	pthread_attr_t a;
	void *addr;
	size_t size;
	char c;

	if (!pthread_getattr_np(pthread_self(), &a)) {
		if (!pthread_attr_getstack(&a, &addr, &size)) {
			b->lo = (uint64_t)(uintptr_t)addr;
			b->hi = b->lo + size;
		}
		pthread_attr_destroy(&a);
	}
	/* release: pairs with the test's acquire load of ready. */
	__atomic_store_n(&b->ready, 1, __ATOMIC_RELEASE);
	return (void *)(intptr_t)read(b->fd, &c, 1);
}

/* This process: a thread blocked in read() has its sp read, inside its
 * own stack.  (The thread reading the files is in a syscall too, its own
 * read: the kernel reports it, so it is among the sps, not "running".) */
static void test_thread_sps(void **state)
{
	struct blocked b = {0};
	uint64_t sps[8];
	size_t n = 0, running = 0;
	bool found = false;
	pthread_t th;
	int p[2], dirfd;

	(void)state;
	assert_int_equal(pipe(p), 0);
	b.fd = p[0];
	assert_int_equal(pthread_create(&th, NULL, blocked_reader, &b), 0);
	dirfd = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd >= 0);
	/* Until the thread reaches read() it runs: wait for its sp, with a
	 * deadline. */
	for (int tries = 0; tries < 30000 && !found; tries++) {
		/* acquire: pairs with the thread's release store. */
		if (__atomic_load_n(&b.ready, __ATOMIC_ACQUIRE)) {
			n = procfs_thread_sps(dirfd, sps, 8, &running);
			for (size_t i = 0; i < n && !found; i++)
				found = sps[i] >= b.lo && sps[i] < b.hi;
		}
		if (!found)
			usleep(1000);
	}
	assert_true(b.hi > b.lo);
	assert_true(found);
	assert_true(n >= 1 && n <= 2);
	assert_int_equal(procfs_thread_sps(dirfd, sps, 0, NULL), 0);
	close(dirfd);
	assert_int_equal(write(p[1], "x", 1), 1);
	pthread_join(th, NULL);
	close(p[0]);
	close(p[1]);
}

/* procfs_maps_lib: the one executable mapping of a library, by prefix. */
static void test_maps_lib(void **state)
{
	const char one[] =
		"1000-2000 r--p 00000000 08:01 7 "
		"/usr/lib/libboost_fiber.so.1.74.0\n"
		"2000-3000 r-xp 00001000 08:01 7 "
		"/usr/lib/libboost_fiber.so.1.74.0\n"
		"3000-4000 r-xp 00000000 08:01 8 /usr/lib/libc.so.6\n";
	const char two[] = "2000-3000 r-xp 00001000 08:01 7 "
			   "/usr/lib/libboost_fiber.so.1.74.0\n"
			   "5000-6000 r-xp 00001000 08:01 9 "
			   "/opt/libboost_fiber.so.1.83.0\n";
	const char data_only[] = "1000-2000 rw-p 00000000 08:01 7 "
				 "/usr/lib/libboost_fiber.so.1.74.0\n";
	char out[64], tiny[8];

	(void)state;
	assert_string_equal(
		procfs_maps_lib(one, "libboost_fiber.so.", out, sizeof(out)),
		"libboost_fiber.so.1.74.0");
	assert_string_equal(
		procfs_maps_lib(two, "libboost_fiber.so.", out, sizeof(out)),
		"");
	assert_string_equal(procfs_maps_lib(data_only, "libboost_fiber.so.",
					    out, sizeof(out)),
			    "");
	assert_string_equal(
		procfs_maps_lib(one, "libboost_context", out, sizeof(out)), "");
	/* A name that does not fit: none. */
	assert_string_equal(
		procfs_maps_lib(one, "libboost_fiber.so.", tiny, sizeof(tiny)),
		"");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_find),
		cmocka_unit_test(test_maps_lib),
		cmocka_unit_test(test_status_value),
		cmocka_unit_test(test_slurp_bound),
		cmocka_unit_test(test_open_regular),
		cmocka_unit_test(test_elf_abi),
		cmocka_unit_test(test_syscall_sp),
		cmocka_unit_test(test_thread_sps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
