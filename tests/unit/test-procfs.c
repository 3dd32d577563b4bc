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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_find),
		cmocka_unit_test(test_status_value),
		cmocka_unit_test(test_slurp_bound),
		cmocka_unit_test(test_open_regular),
		cmocka_unit_test(test_elf_abi),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
