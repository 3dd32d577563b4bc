/*
 * test-rundir: the sweep of run directories a killed corotop left behind
 * (src/engine/target/rundir.c), on directories made up in a private base:
 * what is provably stale goes, everything else stays -- live processes,
 * a pid reused by another process, symlinks, a wrong mode, another uid,
 * files it can not read, a planted FIFO.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "corotop/ctp.h"
#include "engine/target/rundir.h"

static char base[128];

static int setup(void **state)
{
	(void)state;
	snprintf(base, sizeof(base), "/tmp/itest-rundir.XXXXXX");
	return mkdtemp(base) ? 0 : -1;
}

static void rm_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char sub[512];

	while (d && (de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
			rm_tree(sub);
		else
			unlink(sub);
	}
	if (d)
		closedir(d);
	rmdir(path);
}

static int teardown(void **state)
{
	(void)state;
	rm_tree(base);
	return 0;
}

/* base/corotop.NAME, 0700, holding the files a run leaves. */
static void mk_run(const char *name, char *dir, size_t len)
{
	char path[512];
	int fd;

	snprintf(dir, len, "%s/corotop.%s", base, name);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/calltrace.shm", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
	snprintf(path, sizeof(path), "%s/ctp.sock", dir);
	assert_int_equal(mkfifo(path, 0600), 0); /* any non-directory */
}

/* A ctp.shm header naming `pid` as its engine. */
static void mk_header(const char *dir, pid_t pid)
{
	struct ctp_header hdr;
	char path[512];
	int fd;

	memset(&hdr, 0, sizeof(hdr));
	hdr.magic = CTP_MAGIC;
	hdr.version = CTP_VERSION;
	hdr.ext.magic = CTP_HX_MAGIC;
	hdr.ext.engine_pid = (uint32_t)pid;
	snprintf(path, sizeof(path), "%s/ctp.shm", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, &hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	close(fd);
}

static void mk_pids_text(const char *dir, const char *text)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/pids", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* A pid that was alive when recorded and is gone now. */
static pid_t dead_pid(const char *dir)
{
	int p[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[1]);
		if (read(p[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[0]);
	if (dir) /* recorded while alive, with its start time */
		assert_true(rundir_record(dir, &pid, 1));
	close(p[1]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	return pid;
}

static void test_start_time(void **state)
{
	(void)state;
	assert_true(rundir_start_time(getpid()) > 0);
	assert_int_equal(rundir_start_time(dead_pid(NULL)), 0);
	assert_int_equal(rundir_start_time(0), 0);
	assert_int_equal(rundir_start_time(-1), 0);
}

/* Every process in pids gone: the directory goes, whole. */
static void test_dead_swept(void **state)
{
	char dir[256];

	(void)state;
	mk_run("dead01", dir, sizeof(dir));
	dead_pid(dir);
	rundir_sweep(base);
	assert_false(exists(dir));
}

/* One process alive (us, with our start time): kept. */
static void test_live_kept(void **state)
{
	char dir[256], text[128];

	(void)state;
	mk_run("live01", dir, sizeof(dir));
	snprintf(text, sizeof(text), "%d 1\n%d %llu\n", (int)dead_pid(NULL),
		 (int)getpid(),
		 (unsigned long long)rundir_start_time(getpid()));
	mk_pids_text(dir, text);
	rundir_sweep(base);
	assert_true(exists(dir));
}

/* Our pid with another start time: a reused pid, not the recorded process;
 * swept. */
static void test_reused_pid_swept(void **state)
{
	char dir[256], text[64];

	(void)state;
	mk_run("reus01", dir, sizeof(dir));
	snprintf(text, sizeof(text), "%d %llu\n", (int)getpid(),
		 (unsigned long long)rundir_start_time(getpid()) + 1);
	mk_pids_text(dir, text);
	rundir_sweep(base);
	assert_false(exists(dir));
}

/* No pids: the engine pid of ctp.shm.  Dead: swept.  Alive and started
 * before the directory: kept.  Alive but started after the directory last
 * changed (a reused pid): swept.  No header at all: kept. */
static void test_header(void **state)
{
	char dead[256], live[256], reused[256], none[256];
	struct timespec old[2] = {{.tv_sec = 1000000}, {.tv_sec = 1000000}};

	(void)state;
	mk_run("hdr001", dead, sizeof(dead));
	mk_header(dead, dead_pid(NULL));
	mk_run("hdr002", live, sizeof(live));
	mk_header(live, getpid());
	mk_run("hdr003", reused, sizeof(reused));
	mk_header(reused, getpid());
	assert_int_equal(utimensat(AT_FDCWD, reused, old, 0), 0);
	mk_run("hdr004", none, sizeof(none));
	rundir_sweep(base);
	assert_false(exists(dead));
	assert_true(exists(live));
	assert_false(exists(reused));
	assert_true(exists(none));
}

/* What is not a 0700 directory of ours is never touched: a symlink to a
 * stale directory, a stale directory of mode 0755, one of another uid. */
static void test_not_ours_kept(void **state)
{
	char real[256], link[256], wide[256], other[256], path[512];

	(void)state;
	snprintf(real, sizeof(real), "%s/elsewhere", base);
	assert_int_equal(mkdir(real, 0700), 0);
	dead_pid(real);
	snprintf(link, sizeof(link), "%s/corotop.link01", base);
	assert_int_equal(symlink(real, link), 0);
	mk_run("wide01", wide, sizeof(wide));
	dead_pid(wide);
	assert_int_equal(chmod(wide, 0755), 0);
	other[0] = '\0';
	if (geteuid() == 0) {
		mk_run("othr01", other, sizeof(other));
		dead_pid(other);
		assert_int_equal(chown(other, 65534, 65534), 0);
	}
	rundir_sweep(base);
	assert_true(exists(link));
	snprintf(path, sizeof(path), "%s/pids", real);
	assert_true(exists(path));
	assert_true(exists(wide));
	if (other[0])
		assert_true(exists(other));
	else
		print_message("not root: another uid's directory not tried\n");
}

/* Inside a stale directory: a symlink is removed as a link (its target
 * stays), a subdirectory is not entered (so the directory stays), a file
 * of another uid stays. */
static void test_inside(void **state)
{
	char dir[256], target[256], path[512];
	int fd;

	(void)state;
	snprintf(target, sizeof(target), "%s/precious", base);
	fd = open(target, O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	close(fd);
	mk_run("insd01", dir, sizeof(dir));
	dead_pid(dir);
	snprintf(path, sizeof(path), "%s/link", dir);
	assert_int_equal(symlink(target, path), 0);
	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	rundir_sweep(base);
	assert_true(exists(target));
	snprintf(path, sizeof(path), "%s/link", dir);
	assert_false(exists(path));
	snprintf(path, sizeof(path), "%s/calltrace.shm", dir);
	assert_false(exists(path));
	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_true(exists(path));
}

/* A FIFO planted as pids does not block the sweep (and proves nothing:
 * judged by the header, here a live one). */
static void test_fifo_pids(void **state)
{
	char dir[256], path[512];

	(void)state;
	mk_run("fifo01", dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/pids", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	mk_header(dir, getpid());
	rundir_sweep(base);
	assert_true(exists(dir));
}

/* Written once: a second record is refused, the first stays. */
static void test_record_once(void **state)
{
	char dir[256], path[512], text[64] = "";
	pid_t me = getpid();
	struct stat st;
	FILE *f;

	(void)state;
	mk_run("once01", dir, sizeof(dir));
	assert_true(rundir_record(dir, &me, 1));
	assert_false(rundir_record(dir, &me, 1));
	snprintf(path, sizeof(path), "%s/pids", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(text, sizeof(text), f));
	fclose(f);
	assert_int_equal(atoi(text), (int)me);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_start_time),
		cmocka_unit_test_setup_teardown(test_dead_swept, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_live_kept, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_reused_pid_swept, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_header, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_ours_kept, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_inside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_pids, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_record_once, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
