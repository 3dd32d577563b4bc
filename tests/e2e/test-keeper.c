/*
 * test-keeper: corotop killed with SIGKILL, through the real binary.
 *
 *   - A target on the upstream SDKs (keeper_target.c) must survive it: its
 *     next wake is a plain write() to the socket of a dead engine, which
 *     without the keeper (src/engine/launch/keeper.c) raises SIGPIPE (status
 * 141).
 *   - The run directory corotop leaves behind (ctp.shm, calltrace.shm, the
 *     socket) is kept by the next corotop while the target or the keeper
 *     lives, and removed by the first corotop after both are gone
 *     (src/engine/target/rundir.c).
 *
 *   - The target's output, which the TUI reads through a pty, goes on being
 *     drained by the keeper into the --output file: the target prints
 *     more than any pty holds after corotop is killed, and ends.
 *
 * The test is a child subreaper, so that the target and the keeper, whose
 * parent dies, become its children and their exit statuses are seen.
 * Every wait has a deadline; no step depends on who runs first.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "../common/itest.h"

static char xdg[128];

/* Start corotop with our private runtime dir; output to /dev/null. */
static pid_t kt_corotop(char *const *argv)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 1);
		dup2(null, 2);
		setenv("XDG_RUNTIME_DIR", xdg, 1);
		execv(ITEST_COROTOP, argv);
		_exit(127);
	}
	return pid;
}

/* A corotop that starts, sweeps, and exits at once. */
static void kt_sweep_run(void)
{
	char *argv[] = {"corotop", "-b", "-n", "1", "--", "true", NULL};
	int status;

	assert_int_equal(it_wait_pid(kt_corotop(argv), 20000, &status), 0);
	assert_true(WIFEXITED(status));
}

/* The one corotop.* entry in the runtime dir, "" if none. */
static void kt_rundir(char *out, size_t len)
{
	DIR *d = opendir(xdg);
	struct dirent *de;

	out[0] = '\0';
	assert_non_null(d);
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "corotop.", 8))
			snprintf(out, len, "%s/%s", xdg, de->d_name);
	closedir(d);
}

/* Wait (deadline) for the run directory's pids file, written once corotop
 * forked the keeper (the target may be ready before that): its 3 pids. */
static bool kt_read_pids(const char *path, int who[3], unsigned timeout_ms)
{
	uint64_t end = it_now() + (uint64_t)timeout_ms * 1000000u;

	while (it_now() < end) {
		FILE *f = fopen(path, "r");
		int n = 0;

		if (f) {
			while (n < 3 && fscanf(f, "%d %*u", &who[n]) == 1)
				n++;
			fclose(f);
		}
		if (n == 3)
			return true;
		it_sleep_ms(5);
	}
	return false;
}

/* `pid`'s descriptors whose link starts with prefix (or with prefix2,
 * when not NULL). */
static int kt_fds(pid_t pid, const char *prefix, const char *prefix2)
{
	char path[128], link[64], dir[32];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		ssize_t len;

		snprintf(path, sizeof(path), "%s/%.16s", dir, de->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		n += !strncmp(link, prefix, strlen(prefix)) ||
		     (prefix2 && !strncmp(link, prefix2, strlen(prefix2)));
	}
	if (d)
		closedir(d);
	return n;
}

/* The run directory (into dir) and who it serves, from its pids file:
 * corotop, the keeper, and `target`. */
static void kt_who(char *dir, size_t len, int who[3], pid_t target)
{
	char pids[600];

	kt_rundir(dir, len);
	assert_true(dir[0]);
	snprintf(pids, sizeof(pids), "%s/pids", dir);
	assert_true(kt_read_pids(pids, who, 20000));
	assert_int_equal(who[2], target);
}

/* Sockets among `pid`'s descriptors. */
static int kt_sockets(pid_t pid)
{
	return kt_fds(pid, "socket:", NULL);
}

/* Whether `pid` is the keeper set up: it names itself corotop-keeper
 * after it closed what it inherited from corotop's fork (the pty master
 * among them), so a pty master it holds after that is the one sent. */
static bool kt_keeper_ready(pid_t pid)
{
	char path[64], comm[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	return !strcmp(comm, "corotop-keeper\n");
}

/* Wait (deadline) until the keeper holds the target's connection: its
 * channel to corotop, the listening socket, and one more. */
static bool kt_keeper_holds(pid_t keeper, unsigned timeout_ms)
{
	uint64_t end = it_now() + (uint64_t)timeout_ms * 1000000u;

	while (it_now() < end) {
		/* Set up first: right after the fork it holds corotop's. */
		if (kt_keeper_ready(keeper) && kt_sockets(keeper) >= 3)
			return true;
		it_sleep_ms(5);
	}
	return false;
}

/* Wait (deadline) for `path` to hold a pid. */
static pid_t kt_read_pid(const char *path, unsigned timeout_ms)
{
	uint64_t end = it_now() + (uint64_t)timeout_ms * 1000000u;

	while (it_now() < end) {
		FILE *f = fopen(path, "r");
		int pid = 0;

		if (f) {
			if (fscanf(f, "%d", &pid) != 1)
				pid = 0;
			fclose(f);
		}
		if (pid > 0)
			return pid;
		it_sleep_ms(5);
	}
	return -1;
}

/* corotop -b -- KEEPER_TARGET READY (argv) started, its keeper holding the
 * target's connection, then corotop killed with SIGKILL: the target and
 * the keeper orphaned, their pids out; dir: the run directory. */
static void kt_orphan_keeper(char *argv[], char *ready, size_t readylen,
			     char *dir, size_t dirlen, pid_t *target,
			     pid_t *keeper)
{
	int status, who[3] = {0};
	pid_t corotop;

	snprintf(ready, readylen, "%s.ready", xdg);
	unlink(ready);
	corotop = kt_corotop(argv);
	*target = kt_read_pid(ready, 20000);
	assert_true(*target > 0);
	kt_who(dir, dirlen, who, *target);
	assert_int_equal(who[0], corotop);
	*keeper = who[1];
	assert_true(*keeper > 0 && kill(*keeper, 0) == 0);
	/* The target connected before it said ready; corotop accepts and
	 * hands the connection over on its own thread: wait for that. */
	assert_true(kt_keeper_holds(*keeper, 20000));
	assert_int_equal(kill(corotop, SIGKILL), 0);
	assert_int_equal(it_wait_pid(corotop, 20000, &status), 0);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

static void test_sigkill_keeps_target(void **state)
{
	char ready[256], dir[512], kept[600];
	char *argv[] = {"corotop", "-b",	  "-d",	 "1",
			"--",	   KEEPER_TARGET, ready, NULL};
	int status;
	pid_t keeper, target;

	(void)state;
	kt_orphan_keeper(argv, ready, sizeof(ready), dir, sizeof(dir), &target,
			 &keeper);

	/* The target and the keeper live: the next corotop keeps it all. */
	kt_sweep_run();
	snprintf(kept, sizeof(kept), "%s/ctp.sock", dir);
	assert_true(it_path_exists(kept));
	snprintf(kept, sizeof(kept), "%s/ctp.shm", dir);
	assert_true(it_path_exists(kept));

	/* Its next wake writes to the socket of the dead engine. */
	assert_int_equal(kill(target, SIGUSR1), 0);
	assert_int_equal(it_wait_pid(target, 20000, &status), 0);
	if (WIFSIGNALED(status))
		print_error("target killed by signal %d\n", WTERMSIG(status));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* The keeper goes with its target. */
	assert_int_equal(it_wait_pid(keeper, 20000, &status), 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	/* All three gone: the next corotop sweeps the directory. */
	kt_sweep_run();
	kt_rundir(kept, sizeof(kept));
	assert_string_equal(kept, "");
	unlink(ready);
}

/* An orphaned keeper ends on SIGTERM, as keeper.c says: it blocked the
 * terminal's signals on top of the mask it inherited from corotop, which
 * blocks SIGTERM (sigtimedwait), so it ignored SIGTERM for as long as its
 * target lived. */
static void test_keeper_ends_on_sigterm(void **state)
{
	char ready[256], dir[512];
	char *argv[] = {"corotop", "-b",	  "-d",	 "1",
			"--",	   KEEPER_TARGET, ready, NULL};
	int status;
	pid_t keeper, target;

	(void)state;
	kt_orphan_keeper(argv, ready, sizeof(ready), dir, sizeof(dir), &target,
			 &keeper);

	assert_int_equal(kill(keeper, SIGTERM), 0);
	assert_int_equal(it_wait_pid(keeper, 20000, &status), 0);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	/* Its target goes on; end it (its next wake finds no reader: the
	 * SDK's write may raise SIGPIPE now, so any end will do). */
	kill(target, SIGKILL);
	(void)it_wait_pid(target, 20000, &status);
	kt_sweep_run();
	unlink(ready);
}

/* Whether `pid` holds a pty master (the keeper's copy of the output). */
static bool kt_holds_pty(pid_t pid)
{
	return kt_fds(pid, "/dev/ptmx", "/dev/pts/ptmx") > 0;
}

/*
 * corotop's TUI (the binary exe) on a terminal of our own, as a shell
 * would run it: `shell` is the session leader holding the terminal (so
 * that corotop's death hangs nothing up), corotop its child.  The shell
 * writes corotop's wait status to status_path (NULL: nowhere) once it
 * ends.  Returns the shell; *corotop is read from the run directory's pids
 * file by the caller.
 */
static pid_t kt_tui_as(const char *exe, char *const *argv, int *master,
		       const char *status_path)
{
	int slave;
	pid_t shell;
	struct winsize ws = {.ws_row = 24, .ws_col = 80};

	assert_int_equal(openpty(master, &slave, NULL, NULL, &ws), 0);
	shell = fork();
	assert_true(shell >= 0);
	if (shell == 0) {
		pid_t c;
		int st = -1;

		close(*master);
		setsid();
		ioctl(slave, TIOCSCTTY, 0);
		dup2(slave, 0);
		dup2(slave, 1);
		dup2(slave, 2);
		if (slave > 2)
			close(slave);
		c = fork();
		if (c == 0) {
			setenv("XDG_RUNTIME_DIR", xdg, 1);
			setenv("TERM", "xterm", 1);
			execv(exe, argv);
			_exit(127);
		}
		while (waitpid(c, &st, 0) < 0 && errno == EINTR)
			;
		if (status_path) {
			char tmp[300];
			FILE *f;

			snprintf(tmp, sizeof(tmp), "%s.tmp", status_path);
			f = fopen(tmp, "w");
			if (f) {
				fprintf(f, "%d\n", st);
				fclose(f);
				rename(tmp, status_path);
			}
		}
		/* Hold the terminal until told to go. */
		pause();
		_exit(0);
	}
	close(slave);
	fcntl(*master, F_SETFL, O_NONBLOCK);
	return shell;
}

static pid_t kt_tui(char *const *argv, int *master)
{
	return kt_tui_as(ITEST_COROTOP, argv, master, NULL);
}

/* Wait (deadline) until `pid`, whose parent was killed, is our child. */
static bool kt_adopted(pid_t pid, unsigned timeout_ms)
{
	uint64_t end = it_now() + (uint64_t)timeout_ms * 1000000u;

	while (it_now() < end) {
		char path[64];
		int ppid = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%*d (%*[^)]) %*c %d", &ppid) != 1)
				ppid = 0;
			fclose(f);
		}
		if (ppid == getpid())
			return true;
		it_sleep_ms(5);
	}
	return false;
}

/* Drop what the TUI drew, so it never blocks on its terminal. */
static void kt_drain(int master)
{
	char buf[4096];

	while (read(master, buf, sizeof(buf)) > 0)
		;
}

/* What the TUI's terminal showed, kept (the last 64 KiB). */
static char kt_screen[65536];
static size_t kt_screen_len;

static void kt_collect(int master)
{
	char buf[4096];
	ssize_t got;

	while ((got = read(master, buf, sizeof(buf))) > 0) {
		if (kt_screen_len + (size_t)got >= sizeof(kt_screen))
			kt_screen_len = 0;
		memcpy(kt_screen + kt_screen_len, buf, (size_t)got);
		kt_screen_len += (size_t)got;
		kt_screen[kt_screen_len] = '\0';
	}
}

/* Wait (deadline, collecting the screen) for the wait status the TUI's
 * shell writes; -1 on timeout. */
static int kt_tui_status(int master, const char *status_path,
			 unsigned timeout_ms)
{
	uint64_t end = it_now() + (uint64_t)timeout_ms * 1000000u;

	while (it_now() < end) {
		kt_collect(master);
		if (it_path_exists(status_path)) {
			FILE *f = fopen(status_path, "r");
			int v = -1;

			assert_non_null(f);
			assert_int_equal(fscanf(f, "%d", &v), 1);
			fclose(f);
			return v;
		}
		it_sleep_ms(5);
	}
	return -1;
}

/* Wait (deadline) until `pid` has exited (a zombie, or gone), keeping
 * the TUI's terminal drained. */
static bool kt_exited(pid_t pid, int master, unsigned timeout_ms)
{
	uint64_t end = it_now() + (uint64_t)timeout_ms * 1000000u;

	while (it_now() < end) {
		char path[64], state = 0;
		FILE *f;

		kt_collect(master);
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		f = fopen(path, "r");
		if (!f)
			return true;
		if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
			state = 0;
		fclose(f);
		if (state == 'Z' || state == 'X')
			return true;
		it_sleep_ms(5);
	}
	return false;
}

/* The whole of `path` (malloc'd, NUL-terminated), or NULL. */
static char *kt_slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t cap = 0;
	ssize_t got;

	if (!f)
		return NULL;
	got = getdelim(&text, &cap, '\0', f);
	fclose(f);
	if (got < 0) {
		free(text);
		return strdup("");
	}
	return text;
}

/* Wait (deadline) until `path` holds `needle`. */
static bool kt_file_has(const char *path, const char *needle,
			unsigned timeout_ms)
{
	uint64_t end = it_now() + (uint64_t)timeout_ms * 1000000u;

	while (it_now() < end) {
		char *text = kt_slurp(path);
		bool has = text && strstr(text, needle);

		free(text);
		if (has)
			return true;
		it_sleep_ms(10);
	}
	return false;
}

/* Run corotop (batch) with stdout to /dev/null and stderr to err_path
 * (NULL: /dev/null; "/dev/full" works too): its wait status. */
static int kt_batch(char *const *argv, const char *err_path)
{
	int status = -1;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		int err = err_path ? open(err_path,
					  O_WRONLY | O_CREAT | O_TRUNC, 0600)
				   : null;

		dup2(null, 0);
		dup2(null, 1);
		dup2(err, 2);
		setenv("XDG_RUNTIME_DIR", xdg, 1);
		execv(ITEST_COROTOP, argv);
		_exit(127);
	}
	assert_int_equal(it_wait_pid(pid, 60000, &status), 0);
	return status;
}

static void test_sigkill_keeps_output(void **state)
{
	char ready[256], go[256], out[256], cmd[1024], dir[512];
	char *argv[] = {"corotop", "--output", out, "--",
			"/bin/sh", "-c",       cmd, NULL};
	int master, who[3] = {0}, status;
	pid_t shell, target;
	uint64_t end;
	FILE *f;
	char *text = NULL;
	size_t cap = 0;
	ssize_t got;

	(void)state;
	snprintf(ready, sizeof(ready), "%s.out-ready", xdg);
	snprintf(go, sizeof(go), "%s.out-go", xdg);
	snprintf(out, sizeof(out), "%s.out-log", xdg);
	unlink(ready);
	unlink(go);
	unlink(out);
	/* 20000 lines of about 12 bytes: more than a pty holds (4 KiB to
	 * 64 KiB), so the target ends only if someone reads. */
	snprintf(cmd, sizeof(cmd),
		 "echo before; echo $$ > %s; while [ ! -e %s ]; do sleep "
		 "0.01; done; i=0; while [ $i -lt 20000 ]; do echo line $i; "
		 "i=$((i+1)); done; echo after-kill",
		 ready, go);
	shell = kt_tui(argv, &master);
	end = it_now() + 20000000000ull;
	target = -1;
	while (target <= 0 && it_now() < end) {
		kt_drain(master);
		target = kt_read_pid(ready, 10);
	}
	assert_true(target > 0);
	kt_who(dir, sizeof(dir), who, target);
	/* The keeper got its copy of the output (sent right after the fork
	 * that made it).  Right after the fork it still holds corotop's own
	 * descriptors, so look only once it is set up. */
	end = it_now() + 20000000000ull;
	while (!(kt_keeper_ready(who[1]) && kt_holds_pty(who[1])) &&
	       it_now() < end) {
		kt_drain(master);
		it_sleep_ms(5);
	}
	assert_true(kt_keeper_ready(who[1]));
	assert_true(kt_holds_pty(who[1]));

	assert_int_equal(kill(who[0], SIGKILL), 0);
	f = fopen(go, "w");
	assert_non_null(f);
	fclose(f);
	assert_true(kt_adopted(target, 20000));
	assert_true(kt_adopted(who[1], 20000));
	/* The target prints everything and ends: someone read it. */
	assert_int_equal(it_wait_pid(target, 60000, &status), 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(it_wait_pid(who[1], 20000, &status), 0);
	f = fopen(out, "r");
	assert_non_null(f);
	got = getdelim(&text, &cap, '\0', f);
	fclose(f);
	assert_true(got > 0);
	assert_non_null(strstr(text, "before\n"));
	assert_non_null(strstr(text, "\nline 19999\nafter-kill\n"));
	free(text);

	kill(shell, SIGTERM);
	assert_int_equal(it_wait_pid(shell, 20000, &status), 0);
	close(master);
	kt_sweep_run();
	unlink(ready);
	unlink(go);
	unlink(out);
}

/* Per-test file names under our runtime dir's name (tag: which test),
 * none of them left over: the target's ready and go files, the --output
 * file and the TUI's status file. */
struct kt_files {
	char ready[256], go[256], out[256], st[256];
};

static void kt_files_unlink(const struct kt_files *f)
{
	unlink(f->ready);
	unlink(f->go);
	unlink(f->out);
	unlink(f->st);
}

static void kt_files_init(struct kt_files *f, const char *tag)
{
	snprintf(f->ready, sizeof(f->ready), "%s.%s-ready", xdg, tag);
	snprintf(f->go, sizeof(f->go), "%s.%s-go", xdg, tag);
	snprintf(f->out, sizeof(f->out), "%s.%s-log", xdg, tag);
	snprintf(f->st, sizeof(f->st), "%s.%s-status", xdg, tag);
	kt_files_unlink(f);
}

/* The TUI's shell told to go, and its terminal closed. */
static void kt_tui_end(pid_t shell, int master)
{
	int status;

	kill(shell, SIGTERM);
	assert_int_equal(it_wait_pid(shell, 20000, &status), 0);
	close(master);
}

/* Start the TUI (exe) and wait (deadline) for the target's pid in the
 * ready file, keeping the terminal drained (and collected). */
static pid_t kt_tui_target(const char *exe, char *const *argv,
			   const struct kt_files *f, int *master, pid_t *target)
{
	pid_t shell = kt_tui_as(exe, argv, master, f->st);

	*target = -1;
	kt_screen_len = 0;
	for (uint64_t end = it_now() + 20000000000ull;
	     *target <= 0 && it_now() < end;) {
		kt_collect(*master);
		*target = kt_read_pid(f->ready, 10);
	}
	assert_true(*target > 0);
	return shell;
}

/*
 * corotop killed at the worst moment: right after it read a chunk of the
 * target's output (corotop-hooked, COROTOP_TEST_KILL_AT_READ), which the
 * old design had not written to the file yet, and the keeper resumed from
 * the pty after it.  Every line must be in the file, once, in order.
 */
static void test_kill_at_read_keeps_every_line(void **state)
{
	struct kt_files f;
	char cmd[1024], dir[512];
	char *argv[] = {"corotop", "--output", f.out, "--",
			"/bin/sh", "-c",       cmd,   NULL};
	int master, who[3] = {0}, status;
	pid_t shell, target;
	size_t len = 0, cap = 20000 * 12 + 64;
	char *want = malloc(cap), *text;

	(void)state;
	assert_non_null(want);
	kt_files_init(&f, "kr");
	snprintf(cmd, sizeof(cmd),
		 "echo before; echo $$ > %s; while [ ! -e %s ]; do sleep "
		 "0.01; done; i=0; while [ $i -lt 20000 ]; do echo line $i; "
		 "i=$((i+1)); done; echo end",
		 f.ready, f.go);
	len += (size_t)snprintf(want + len, cap - len, "before\n");
	for (int i = 0; i < 20000; i++)
		len += (size_t)snprintf(want + len, cap - len, "line %d\n", i);
	len += (size_t)snprintf(want + len, cap - len, "end\n");
	/* Read 1 is "before" (or more); the kill comes amid the lines. */
	setenv("COROTOP_TEST_KILL_AT_READ", "3", 1);
	shell = kt_tui_target(COROTOP_HOOKED, argv, &f, &master, &target);
	unsetenv("COROTOP_TEST_KILL_AT_READ");
	kt_who(dir, sizeof(dir), who, target);
	fclose(fopen(f.go, "w"));
	status = kt_tui_status(master, f.st, 60000);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_true(kt_adopted(target, 20000));
	assert_int_equal(it_wait_pid(target, 60000, &status), 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_true(kt_adopted(who[1], 20000));
	assert_int_equal(it_wait_pid(who[1], 20000, &status), 0);
	text = kt_slurp(f.out);
	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	assert_string_equal(text, want);
	free(text);
	free(want);
	kt_tui_end(shell, master);
	kt_sweep_run();
	kt_files_unlink(&f);
}

/* A destination that fails: batch mode says so and exits 1 -- or with
 * the target's own status when that is not 0. */
static void test_full_destination_batch(void **state)
{
	char err[256];
	char *argv[] = {"corotop", "-b", "--output", "/dev/full", "--",
			"/bin/sh", "-c", "echo one", NULL};
	char *argv3[] = {"corotop", "-b", "--output",	      "/dev/full", "--",
			 "/bin/sh", "-c", "echo one; exit 3", NULL};
	char *argv_err[] = {"corotop", "-b",	   "--", "/bin/sh",
			    "-c",      "echo one", NULL};
	int status;
	char *text;

	(void)state;
	snprintf(err, sizeof(err), "%s.full-err", xdg);
	status = kt_batch(argv, err);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	text = kt_slurp(err);
	assert_non_null(text);
	if (!strstr(text, "--output /dev/full: No space left on device"))
		fail_msg("stderr: %s", text);
	free(text);
	status = kt_batch(argv3, err);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 3);
	/* No --output: the target's output goes to our stderr, which
	 * fails too. */
	status = kt_batch(argv_err, "/dev/full");
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	unlink(err);
}

/* The same in the TUI: the message after it quits, and status 1. */
static void test_full_destination_tui(void **state)
{
	struct kt_files f;
	char cmd[512];
	char *argv[] = {"corotop", "--output", "/dev/full", "--",
			"/bin/sh", "-c",       cmd,	    NULL};
	int master, status;
	pid_t shell, target;

	(void)state;
	kt_files_init(&f, "ft");
	snprintf(cmd, sizeof(cmd), "echo one; echo $$ > %s", f.ready);
	shell = kt_tui_target(ITEST_COROTOP, argv, &f, &master, &target);
	assert_true(kt_exited(target, master, 20000));
	assert_int_equal(write(master, "q", 1), 1);
	status = kt_tui_status(master, f.st, 20000);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	kt_collect(master);
	if (!strstr(kt_screen, "No space left on device"))
		fail_msg("the terminal never said why");
	kt_tui_end(shell, master);
	kt_files_unlink(&f);
}

/*
 * A daemon the target forked keeps printing after the user quit the TUI:
 * into the --output file, through the keeper, which stays while the pty is
 * held and goes when the daemon does.  Batch mode: the same, to stderr.
 */
static void test_daemon_output_kept(void **state)
{
	struct kt_files f;
	char cmd[1024], dir[512];
	char *argv[] = {"corotop", "--output", f.out, "--",
			"/bin/sh", "-c",       cmd,   NULL};
	char *bargv[] = {"corotop", "-b", "--", "/bin/sh", "-c", cmd, NULL};
	int master, who[3] = {0}, status;
	pid_t shell, target;

	(void)state;
	kt_files_init(&f, "dm");
	snprintf(cmd, sizeof(cmd),
		 "(while [ ! -e %s ]; do sleep 0.01; done; echo daemon-line) "
		 "& echo main; echo $$ > %s",
		 f.go, f.ready);
	shell = kt_tui_target(ITEST_COROTOP, argv, &f, &master, &target);
	kt_who(dir, sizeof(dir), who, target);
	assert_true(kt_exited(target, master, 20000));
	assert_int_equal(write(master, "q", 1), 1);
	status = kt_tui_status(master, f.st, 20000);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* corotop is gone; the daemon prints now. */
	assert_true(kill(who[1], 0) == 0);
	fclose(fopen(f.go, "w"));
	assert_true(kt_file_has(f.out, "main\ndaemon-line\n", 20000));
	assert_true(kt_adopted(who[1], 20000));
	assert_int_equal(it_wait_pid(who[1], 20000, &status), 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	kt_tui_end(shell, master);

	/* Batch mode, no --output: our stderr gets it, after we exit. */
	unlink(f.go);
	unlink(f.ready);
	status = kt_batch(bargv, f.out);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	fclose(fopen(f.go, "w"));
	assert_true(kt_file_has(f.out, "main\ndaemon-line\n", 20000));
	kt_sweep_run();
	kt_files_unlink(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigkill_keeps_target),
		cmocka_unit_test(test_keeper_ends_on_sigterm),
		cmocka_unit_test(test_sigkill_keeps_output),
		cmocka_unit_test(test_kill_at_read_keeps_every_line),
		cmocka_unit_test(test_full_destination_batch),
		cmocka_unit_test(test_full_destination_tui),
		cmocka_unit_test(test_daemon_output_kept),
	};
	int rc;

	/* Orphans of the corotop we kill become ours. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		return 77;
	snprintf(xdg, sizeof(xdg), "/tmp/itest-keeper.XXXXXX");
	if (!mkdtemp(xdg))
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(xdg);
	return rc;
}
