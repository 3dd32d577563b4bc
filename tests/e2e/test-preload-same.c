/*
 * test-preload-same: programs that are legal but hostile to an
 * interposer, each run three ways -- natively, with libcorotop-preload in
 * LD_PRELOAD, and under `corotop --` (which preloads it and traces) --
 * must print the same and end with the same status.  The preload never
 * changes what a program does (issue 25).
 *
 * The programs (tests/targets):
 *   mkctx-args      makecontext with 1, 6, 7, 20, 32 and 40 pointer
 *                   arguments (over 32: glibc's makecontext reached
 *                   untouched, that context untraced, one note);
 *   boost-ucfiber   boost::context::fiber on Boost's ucontext backend,
 *                   which passes its record to makecontext as a pointer;
 *   fctx-host       two plugins loaded RTLD_LOCAL by a host that does not
 *                   link Boost, one on Debian's libboost_context, one on
 *                   another build of the interface (fcontext_b.S);
 *   fctx-return     an fcontext entry that returns (Boost: _exit(0)).
 *
 * The program's own output is compared: stdout and stderr together, less
 * the lines the preload or corotop add ("corotop: ..."), which are checked
 * on their own where a case expects one.  Under corotop the output goes to
 * --output FILE and corotop's exit status is the program's.  A sanitizer
 * build skips (the preload steps aside under ASan).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "e2e.h"

#ifndef ITEST_PRELOAD_LIB
#error "ITEST_PRELOAD_LIB must name libcorotop-preload"
#endif

/* How a run ended, as one number: an exit code, or 128 + a signal (what
 * corotop exits with for a program killed by one). */
static int ended(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

/* Run argv with stdout and stderr on one pipe, LD_PRELOAD set or not;
 * returns how it ended, its output in *out (to free). */
static int run_direct(char *const argv[], bool preload, char **out)
{
	struct proc p;
	int o[2], status;

	memset(&p, 0, sizeof(p));
	assert_int_equal(pipe2(o, O_CLOEXEC), 0);
	p.pid = fork();
	assert_true(p.pid >= 0);
	if (p.pid == 0) {
		if (dup2(o[1], 1) < 0 || dup2(o[1], 2) < 0)
			_exit(126);
		unsetenv("CTP_SHM_PATH");
		unsetenv("CTP_SOCK_PATH");
		unsetenv("CTP_MAX_STATIONS");
		if (preload)
			setenv("LD_PRELOAD", ITEST_PRELOAD_LIB, 1);
		else
			unsetenv("LD_PRELOAD");
		execv(argv[0], argv);
		_exit(127);
	}
	close(o[1]);
	p.out = o[0];
	p.err = -1;
	status = proc_finish(&p, 120000);
	*out = p.obuf;
	free(p.ebuf);
	return ended(status);
}

/* Run argv under corotop (batch, its output to a file); returns corotop's
 * exit status, the program's output in *out (to free). */
static int run_corotop(char *const argv[], char **out)
{
	char path[512], *cv[64];
	struct proc p;
	size_t n = 0, len;
	int rc;
	FILE *f;

	snprintf(path, sizeof(path), "%s.same-output", xdg);
	unlink(path);
	cv[n++] = ITEST_COROTOP;
	cv[n++] = "-b";
	cv[n++] = "-d";
	cv[n++] = "10";
	cv[n++] = "--output";
	cv[n++] = path;
	cv[n++] = "--";
	for (size_t i = 0; argv[i] && n < 63; i++)
		cv[n++] = argv[i];
	cv[n] = NULL;
	proc_start(&p, cv);
	rc = ended(proc_finish(&p, 120000));
	proc_free(&p);
	f = fopen(path, "r");
	assert_non_null(f);
	*out = NULL;
	len = 0;
	assert_true(getdelim(out, &len, '\0', f) >= 0 || feof(f));
	if (!*out)
		*out = calloc(1, 1);
	fclose(f);
	unlink(path);
	return rc;
}

/* out without the lines that start with "corotop: " (in place); how many
 * of those contained `note` (NULL: any). */
static unsigned strip_notes(char *out, const char *note)
{
	char *r = out, *w = out;
	unsigned found = 0;

	while (*r) {
		char *nl = strchr(r, '\n');
		size_t len = nl ? (size_t)(nl - r) + 1 : strlen(r);

		if (!strncmp(r, "corotop: ", 9)) {
			char save = r[len - 1];

			r[len - 1] = '\0';
			found += !note || strstr(r, note) != NULL;
			r[len - 1] = save;
		} else {
			memmove(w, r, len);
			w += len;
		}
		r += len;
	}
	*w = '\0';
	return found;
}

/*
 * The three runs of argv: the same output (less notes) and the same end,
 * which must be `want`; `note`, when set, is a note the preload must print
 * once in each of the two preloaded runs.
 */
static void same_three_ways(char *const argv[], int want, const char *note)
{
	char *native, *pre, *traced;
	int a = run_direct(argv, false, &native);
	int b = run_direct(argv, true, &pre);
	int c = run_corotop(argv, &traced);
	unsigned nb = strip_notes(pre, note), nc = strip_notes(traced, note);

	print_message("%s: native %d, LD_PRELOAD %d, corotop %d\n", argv[0], a,
		      b, c);
	strip_notes(native, NULL);
	if (strcmp(native, pre) || strcmp(native, traced))
		fail_msg(
			"%s: the output differs\n-- native:\n%s-- LD_PRELOAD:\n"
			"%s-- corotop:\n%s",
			argv[0], native, pre, traced);
	assert_int_equal(a, want);
	assert_int_equal(b, want);
	assert_int_equal(c, want);
	if (note) {
		assert_int_equal(nb, 1);
		assert_int_equal(nc, 1);
	}
	free(native);
	free(pre);
	free(traced);
	assert_xdg_empty();
}

static bool sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
	return true;
#endif
#endif
	return false;
}

static void test_makecontext_pointer_arguments(void **state)
{
	char *argv[] = {ITEST_MKCTX_ARGS, NULL};

	(void)state;
	if (sanitized())
		skip();
	same_three_ways(argv, 0, "makecontext with 40 arguments (over 32)");
}

static void test_boost_ucontext_fiber(void **state)
{
#ifdef ITEST_BOOST_UCFIBER
	char *argv[] = {ITEST_BOOST_UCFIBER, NULL};

	(void)state;
	if (sanitized())
		skip();
	same_three_ways(argv, 0, NULL);
#else
	(void)state;
	skip();
#endif
}

static void test_rtld_local_plugins(void **state)
{
#if defined(ITEST_FCTX_HOST) && defined(ITEST_FCTX_PLUGIN_B)
	char *argv[] = {ITEST_FCTX_HOST, "2000", ITEST_FCTX_PLUGIN_A,
			ITEST_FCTX_PLUGIN_B, NULL};

	(void)state;
	if (sanitized())
		skip();
	same_three_ways(argv, 0, NULL);
#else
	(void)state;
	skip();
#endif
}

static void test_fcontext_entry_returns(void **state)
{
#ifdef ITEST_FCTX_RETURN
	char *argv[] = {ITEST_FCTX_RETURN, NULL};

	(void)state;
	if (sanitized())
		skip();
	same_three_ways(argv, 0, NULL);
#else
	(void)state;
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_makecontext_pointer_arguments),
		cmocka_unit_test(test_boost_ucontext_fiber),
		cmocka_unit_test(test_rtld_local_plugins),
		cmocka_unit_test(test_fcontext_entry_returns),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup_xdg, teardown_xdg);
}
