/*
 * test-hostile: the corotop binary given paths and options meant to hurt
 * it (issue 13, section 4).
 *
 *   - a FIFO as --shm, --replay, --record, --jsonl, --folded or
 *     --speedscope: refused at once (the profiles replaced it by a file),
 *     exit 2, one line naming the FIFO (it used to block in open() with
 *     SIGINT, SIGTERM and SIGHUP blocked: only SIGKILL ended it);
 *   - --cacheray reads a FIFO on purpose: waiting for a writer, it still
 *     ends on SIGTERM;
 *   - usage mistakes found before anything starts: -c with an unknown
 *     counter, --folded or --speedscope into a directory that does not
 *     exist or is a directory: exit 2;
 *   - corotop convert -o: a symbolic link or the trace itself is refused
 *     (exit 2, nothing replaced), an existing file keeps its mode;
 *   - corotop serve --listen on an address other than loopback: refused
 *     (exit 2: no authentication, and what it serves defeats ASLR);
 *   - a decompression bomb (.heph.zst, 2.4 MB to 1 GB): replay refuses it
 *     in bounded memory (issue 26).
 *
 * Every wait has a deadline; a corotop that does not end in time is
 * killed and the test fails.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <dirent.h>
#include <sys/resource.h>

#include "corotop/ctp.h"
#include "../common/itest.h"
#include "json-check.h"

#include "e2e.h"

static char dir[256];

static int setup(void **state)
{
	if (setup_xdg(state))
		return -1;
	snprintf(dir, sizeof(dir), "/tmp/itest-hostile.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return -1;
	return teardown_xdg(state);
}

/* Reap p once its pipes are at EOF (proc_pump got there before its
 * deadline): a process that closed them is exiting, however long the
 * machine takes to let it, so the wait is generous (60 s).  True with the
 * status; false when the pipes are still open (it is still running at the
 * deadline) or the wait ran out: it is SIGKILLed and reaped. */
static bool reap_after_eof(struct proc *p, int *status)
{
	if ((p->out < 0 && p->err < 0) &&
	    it_wait_pid(p->pid, 60000, status) == 0)
		return true;
	kill(p->pid, SIGKILL);
	it_wait_pid(p->pid, 60000, status);
	return false;
}

/* Run argv with a deadline: its exit code, or a failed test (after
 * SIGKILL) when it is still running at the deadline. */
static int run_deadline(struct proc *p, char *const argv[], unsigned ms)
{
	int status;

	proc_start(p, argv);
	proc_pump(p, ms);
	if (!reap_after_eof(p, &status))
		fail_msg("%s %s did not end within %u ms", argv[1], argv[2],
			 ms);
	if (p->out >= 0)
		close(p->out);
	if (p->err >= 0)
		close(p->err);
	if (!p->obuf)
		p->obuf = calloc(1, 1);
	if (!p->ebuf)
		p->ebuf = calloc(1, 1);
	return exit_code(status);
}

/* One line on stderr, naming what and containing `has`. */
static void one_line(const struct proc *p, const char *what, const char *has)
{
	const char *nl = strchr(p->ebuf, '\n');

	if (!nl || nl[1] || !strstr(p->ebuf, what) || !strstr(p->ebuf, has))
		fail_msg("expected one line naming %s (%s), got: %s", what, has,
			 p->ebuf);
}

static void test_fifo_paths(void **state)
{
	char fifo[300];
	struct proc p;

	(void)state;
	snprintf(fifo, sizeof(fifo), "%s/ff", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	{
		char *shm[] = {ITEST_COROTOP, "--shm", fifo, "-b",
			       "-n",	      "1",     NULL};
		char *replay[] = {ITEST_COROTOP, "--replay", fifo, "-b",
				  "-n",		 "1",	     NULL};
		char *record[] = {ITEST_COROTOP, "--record", fifo, "-b",
				  "--",		 "true",     NULL};
		char *jsonl[] = {ITEST_COROTOP, "--jsonl", fifo, "-b",
				 "--",		"true",	   NULL};
		/* A profile written at the end replaced the FIFO with an
		 * empty file, and exited 0. */
		char *folded[] = {ITEST_COROTOP, "--folded", fifo, "-b",
				  "--",		 "true",     NULL};
		char *speedscope[] = {ITEST_COROTOP, "--speedscope", fifo, "-b",
				      "--",	     "true",	     NULL};
		char *const *runs[] = {shm,   replay, record,
				       jsonl, folded, speedscope};

		for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
			struct stat st;

			assert_int_equal(run_deadline(&p, runs[i], 30000), 2);
			one_line(&p, fifo, "FIFO");
			assert_string_equal(p.obuf, "");
			proc_free(&p);
			/* Still the FIFO. */
			assert_int_equal(stat(fifo, &st), 0);
			assert_true(S_ISFIFO(st.st_mode));
		}
	}
	assert_xdg_empty();
}

/* True once pid waits in the kernel for the other end of a FIFO. */
static bool waits_for_partner(pid_t pid, unsigned ms)
{
	uint64_t end = it_now() + (uint64_t)ms * 1000000u;
	char path[64], buf[64];

	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	while (it_now() < end) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = '\0';
		if (strstr(buf, "partner") || strstr(buf, "fifo"))
			return true;
		it_sleep_ms(10);
	}
	return false;
}

static void test_cacheray_fifo_interruptible(void **state)
{
	char fifo[300];
	char *argv[] = {ITEST_COROTOP, "--cacheray", fifo, "-b", NULL};
	struct proc p;
	int status;

	(void)state;
	snprintf(fifo, sizeof(fifo), "%s/cray", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	proc_start(&p, argv);
	if (!waits_for_partner(p.pid, 30000)) {
		kill(p.pid, SIGKILL);
		it_wait_pid(p.pid, 60000, &status);
		close(p.out);
		close(p.err);
		skip(); /* no wchan to prove it is waiting in open() */
	}
	kill(p.pid, SIGTERM);
	proc_pump(&p, 30000);
	if (!reap_after_eof(&p, &status))
		fail_msg("--cacheray FIFO ignored SIGTERM");
	assert_true(WIFSIGNALED(status) ? WTERMSIG(status) == SIGTERM
					: WEXITSTATUS(status) == 128 + SIGTERM);
	close(p.out >= 0 ? p.out : -1);
	close(p.err >= 0 ? p.err : -1);
	proc_free(&p);
}

static void test_usage_up_front(void **state)
{
	char missing[300], folded[300];
	struct proc p;

	(void)state;
	snprintf(missing, sizeof(missing), "%s/no/such/dir/out.folded", dir);
	snprintf(folded, sizeof(folded), "%s/ok.folded", dir);
	{
		/* Checked while parsing: no process is looked at. */
		char *ctr[] = {ITEST_COROTOP, "-p", "1", "-c", "bogus", NULL};
		char *fold[] = {ITEST_COROTOP, "-b",   "--folded", missing,
				"--",	       "true", NULL};
		char *speed[] = {ITEST_COROTOP, "-b", "--speedscope", dir, "--",
				 "true",	NULL};
		char *both[] = {ITEST_COROTOP, "-b",	       "--folded",
				folded,	       "--speedscope", missing,
				"--",	       "true",	       NULL};

		assert_int_equal(run_deadline(&p, ctr, 30000), 2);
		one_line(&p, "bogus", "-c");
		proc_free(&p);
		assert_int_equal(run_deadline(&p, fold, 30000), 2);
		one_line(&p, missing, "--folded");
		assert_string_equal(p.obuf, ""); /* nothing ran */
		proc_free(&p);
		assert_int_equal(run_deadline(&p, speed, 30000), 2);
		one_line(&p, dir, "directory");
		proc_free(&p);
		assert_int_equal(run_deadline(&p, both, 30000), 2);
		one_line(&p, missing, "--speedscope");
		proc_free(&p);
	}
	/* The check leaves nothing behind. */
	assert_false(it_path_exists(folded));
	assert_xdg_empty();
}

/* A 2.4 MB .heph.zst whose frames each pass the per-frame ratio cap but
 * decompress to 1 GB in all (tests/targets/zst_bomb.c): replay refuses it,
 * exit 1, naming COROTOP_ZST_RATIO, and stays under 512 MiB (it peaked
 * at 2 GB indexing it).  The RSS is checked outside sanitizer builds,
 * whose shadow memory is not the program's. */
static void test_zst_bomb(void **state)
{
#ifdef ITEST_ZST_BOMB
	char bomb[320];
	char *gen[] = {ITEST_ZST_BOMB, bomb, "2400000", NULL};
	char *replay[] = {ITEST_COROTOP, "--replay", bomb, "-b", "-f",
			  "json",	 "-n",	     "1",  NULL};
	struct rusage ru;
	struct proc p;
	uint64_t end;
	int status;

	(void)state;
	snprintf(bomb, sizeof(bomb), "%s/bomb.heph.zst", dir);
	assert_int_equal(run(&p, gen, 120000), 0);
	print_message("%s", p.obuf);
	proc_free(&p);
	proc_start(&p, replay);
	/* Its output first (a pipe must not fill), then its end. */
	end = it_now() + 120000000000ull;
	while ((p.out >= 0 || p.err >= 0) && it_now() < end)
		proc_pump(&p, 50);
	if (p.out >= 0 || p.err >= 0)
		kill(p.pid, SIGKILL); /* reported below: killed */
	assert_int_equal(wait4(p.pid, &status, 0, &ru), p.pid);
	p.pid = 0;
	print_message("replay of the bomb: status %d, max RSS %ld MiB\n",
		      WIFEXITED(status) ? WEXITSTATUS(status) : -1,
		      ru.ru_maxrss / 1024);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	assert_non_null(p.ebuf);
	assert_non_null(strstr(p.ebuf, "COROTOP_ZST_RATIO"));
	if (!it_sanitized())
		assert_true(ru.ru_maxrss < 512 * 1024);
	proc_free(&p);
	unlink(bomb);
#else
	(void)state;
	skip();
#endif
}

/* corotop serve on an address other machines reach: refused, exit 2,
 * one line saying what would be exposed (it bound, and served the
 * target's addresses, tids, names and stacks to anyone, no password).
 * Loopback, IPv4 or IPv6, is still served. */
static void test_serve_loopback_only(void **state)
{
	static const char *const refused[] = {
		"0.0.0.0:0", "[::]:0", "192.0.2.1:9464", "[::ffff:10.0.0.1]:0"};
	struct proc p;

	(void)state;
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		char *argv[] = {
			ITEST_COROTOP, "serve", "--listen", (char *)refused[i],
			"--",	       "true",	NULL};

		assert_int_equal(run_deadline(&p, argv, 30000), 2);
		one_line(&p, refused[i], "not a loopback address");
		assert_non_null(strstr(p.ebuf, "ASLR"));
		proc_free(&p);
	}
	{
		/* Loopback: it serves (and ends with its target). */
		char *argv[] = {ITEST_COROTOP, "serve", "--listen",
				"127.0.0.2:0", "--",	"true",
				NULL};

		uint64_t end = it_now() + 60000000000ull;

		proc_start(&p, argv);
		while ((!p.ebuf ||
			!strstr(p.ebuf, "listening on http://127.0.0.2:")) &&
		       p.err >= 0 && it_now() < end)
			proc_pump(&p, 20);
		kill(p.pid, SIGTERM);
		(void)proc_finish(&p, 30000);
		if (!strstr(p.ebuf, "listening on http://127.0.0.2:"))
			fail_msg("loopback refused: %s", p.ebuf);
		proc_free(&p);
	}
	assert_xdg_empty();
}

/* convert -o: a symbolic link is refused (not replaced), the trace itself
 * (by name or by a hard link) is refused (not destroyed), and an existing
 * file keeps its mode; a new one gets 0666 less the umask. */
static void test_convert_output_safety(void **state)
{
	char rec[300], lnk[300], hard[300], out[300], victim[300];
	char *record[] = {ITEST_COROTOP, "-b", "-d", "3",
			  "--record",	 rec,  "--", ITEST_WRITER,
			  "run",	 "1",  "8",  NULL};
	char *to_link[] = {ITEST_COROTOP, "convert", "--to", "jsonl",
			   rec,		  "-o",	     lnk,    NULL};
	char *to_self[] = {ITEST_COROTOP, "convert", "--to", "jsonl",
			   rec,		  "-o",	     rec,    NULL};
	char *to_hard[] = {ITEST_COROTOP, "convert", "--to", "jsonl",
			   rec,		  "-o",	     hard,   NULL};
	char *to_out[] = {ITEST_COROTOP, "convert", "--to", "jsonl",
			  rec,		 "-o",	    out,    NULL};
	struct stat before, st;
	struct proc p;
	mode_t old_mask;

	(void)state;
	snprintf(rec, sizeof(rec), "%s/t.heph", dir);
	snprintf(lnk, sizeof(lnk), "%s/link.jsonl", dir);
	snprintf(hard, sizeof(hard), "%s/hard.heph", dir);
	snprintf(out, sizeof(out), "%s/out.jsonl", dir);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	assert_int_equal(run_deadline(&p, record, 30000), 0);
	proc_free(&p);
	assert_int_equal(stat(rec, &before), 0);
	assert_true(before.st_size > 0);

	close(open(victim, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	assert_int_equal(symlink(victim, lnk), 0);
	assert_int_equal(run_deadline(&p, to_link, 30000), 2);
	one_line(&p, lnk, "symbolic link");
	proc_free(&p);
	assert_int_equal(lstat(lnk, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_size, 0);

	assert_int_equal(run_deadline(&p, to_self, 30000), 2);
	one_line(&p, rec, "trace being converted");
	proc_free(&p);
	assert_int_equal(link(rec, hard), 0);
	assert_int_equal(run_deadline(&p, to_hard, 30000), 2);
	proc_free(&p);
	assert_int_equal(stat(rec, &st), 0);
	assert_int_equal(st.st_size, before.st_size);
	assert_int_equal(st.st_ino, before.st_ino);

	/* A new file: 0666 less the umask (here 022). */
	old_mask = umask(022);
	assert_int_equal(run_deadline(&p, to_out, 30000), 0);
	umask(old_mask);
	proc_free(&p);
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_true(st.st_size > 0);
	/* An existing file keeps its mode. */
	assert_int_equal(chmod(out, 0640), 0);
	assert_int_equal(run_deadline(&p, to_out, 30000), 0);
	proc_free(&p);
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_uid, geteuid());
}

/*
 * An observed region truncated while corotop watches it: the engine stops
 * on the SIGBUS, the snapshots say so ("engine stopped" with the error,
 * never "harvesting"), and the run (no -n) ends and exits 1 naming it,
 * instead of printing the error forever or exiting 0.
 */
static void test_truncated_observer_exits_1(void **state)
{
	char path[300];
	char *argv[] = {ITEST_COROTOP, "-b", "-d", "1", "--shm", path, NULL};
	struct ctp_header h;
	struct ctp_epoch e;
	struct proc p;
	size_t off = 0;
	char *line;
	int fd, status;

	(void)state;
	snprintf(path, sizeof(path), "%s/region.shm", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)ctp_region_size(4)), 0);
	memset(&h, 0, sizeof(h));
	h.magic = CTP_MAGIC;
	h.version = CTP_VERSION;
	h.max_stations = 4;
	h.allocated_count = 1;
	assert_int_equal(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	/* One event of an SDK-style writer on station 0. */
	memset(&e, 0, sizeof(e));
	e.seq = 2;
	e.tid = 1;
	assert_int_equal(
		pwrite(fd, &e, sizeof(e),
		       CTP_HEADER_SIZE + offsetof(struct ctp_station, slots)),
		(ssize_t)sizeof(e));
	close(fd);
	proc_start(&p, argv);
	line = proc_next_line(&p, &off, 30000);
	if (!line)
		fail_msg("no first snapshot: %s", p.ebuf ? p.ebuf : "");
	free(line);
	assert_int_equal(truncate(path, 0), 0);
	status = proc_finish(&p, 60000);
	print_message("exit %d; stderr: %s", exit_code(status), p.ebuf);
	assert_int_equal(exit_code(status), 1);
	assert_non_null(strstr(p.ebuf, "SIGBUS"));
	assert_non_null(strstr(p.obuf, "engine stopped"));
	proc_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fifo_paths, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_cacheray_fifo_interruptible, setup, teardown),
		cmocka_unit_test_setup_teardown(test_serve_loopback_only, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_zst_bomb, setup, teardown),
		cmocka_unit_test_setup_teardown(test_usage_up_front, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_convert_output_safety,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated_observer_exits_1,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
