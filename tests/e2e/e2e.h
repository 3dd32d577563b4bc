/*
 * e2e: running the corotop binary the way people run it, for the e2e
 * tests (test-e2e.c, test-e2e-hot.c): fork/exec with stdout and stderr
 * captured, a private XDG_RUNTIME_DIR per test program that must be empty
 * again after every run, strict JSON snapshots, lines.
 *
 * Header-only, included by one test program each; the functions are
 * static (and marked unused: not every program calls every one).
 */
#ifndef COROTOP_E2E_H
#define COROTOP_E2E_H

#include <dirent.h>
#include <sys/stat.h>

#include "../common/itest.h"
#include "json-check.h"

struct proc {
	pid_t pid;
	int out, err;
	char *obuf, *ebuf;
	size_t olen, elen, ocap, ecap;
};

static char xdg[256];

static __attribute__((unused)) int setup_xdg(void **state)
{
	(void)state;
	snprintf(xdg, sizeof(xdg), "/tmp/itest-e2e.XXXXXX");
	return mkdtemp(xdg) ? 0 : -1;
}

/* The private runtime dir must be empty: nothing leaked. */
static __attribute__((unused)) void assert_xdg_empty(void)
{
	DIR *d = opendir(xdg);
	struct dirent *de;
	int leaked = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		print_error("leaked in the runtime dir: %s/%s\n", xdg,
			    de->d_name);
		leaked++;
	}
	closedir(d);
	assert_int_equal(leaked, 0);
}

/* A config directory of a test's own (XDG_CONFIG_HOME=dir, holding
 * corotop/config with `text`), and the CTP_* environment cleared: what
 * setup_xdg does, plus settings such as a lint threshold. */
static __attribute__((unused)) char conf_dir[256];

/* conf_dir made, holding corotop/config with `text`, and named by
 * XDG_CONFIG_HOME (setup_conf's part for a test whose group made xdg). */
static __attribute__((unused)) int write_conf(const char *text)
{
	char path[400];
	FILE *f;

	snprintf(conf_dir, sizeof(conf_dir), "/tmp/itest-conf.XXXXXX");
	if (!mkdtemp(conf_dir))
		return -1;
	snprintf(path, sizeof(path), "%s/corotop", conf_dir);
	if (mkdir(path, 0700))
		return -1;
	snprintf(path, sizeof(path), "%s/corotop/config", conf_dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	fclose(f);
	setenv("XDG_CONFIG_HOME", conf_dir, 1);
	return 0;
}

static __attribute__((unused)) int setup_conf(void **state, const char *text)
{
	if (setup_xdg(state) || write_conf(text))
		return -1;
	unsetenv("CTP_SHM_PATH");
	unsetenv("CTP_SOCK_PATH");
	unsetenv("CTP_MAX_STATIONS");
	return 0;
}

/* Remove what setup_conf made (and file `extra` in it, when not NULL). */
static __attribute__((unused)) void teardown_conf(const char *extra)
{
	char path[400];

	if (extra) {
		snprintf(path, sizeof(path), "%s/%s", conf_dir, extra);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/corotop/config", conf_dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/corotop", conf_dir);
	rmdir(path);
	rmdir(conf_dir);
}

static __attribute__((unused)) int teardown_xdg(void **state)
{
	DIR *d = opendir(xdg);
	struct dirent *de;
	char path[600];

	(void)state;
	/* Best effort: remove what a failed test left behind. */
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/ctp.shm", xdg, de->d_name);
		it_remove_region_dir(path);
		snprintf(path, sizeof(path), "%s/%s", xdg, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(xdg);
	snprintf(path, sizeof(path), "%s.not-a-region", xdg);
	unlink(path);
	for (int sig = 0; sig < 32; sig++) {
		snprintf(path, sizeof(path), "%s.shmpath-%d", xdg, sig);
		unlink(path);
	}
	return 0;
}

static __attribute__((unused)) void proc_start(struct proc *p,
					       char *const argv[])
{
	int o[2], e[2];

	memset(p, 0, sizeof(*p));
	assert_int_equal(pipe2(o, O_CLOEXEC), 0);
	assert_int_equal(pipe2(e, O_CLOEXEC), 0);
	p->pid = fork();
	assert_true(p->pid >= 0);
	if (p->pid == 0) {
		if (dup2(o[1], 1) < 0 || dup2(e[1], 2) < 0)
			_exit(126);
		setenv("XDG_RUNTIME_DIR", xdg, 1);
		/* A run that is not a terminal must not need one. */
		unsetenv("TERM");
		signal(SIGPIPE, SIG_DFL);
		execv(argv[0], argv);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	p->out = o[0];
	p->err = e[0];
}

static __attribute__((unused)) void proc_buf_read(int *fd, char **buf,
						  size_t *len, size_t *cap)
{
	char tmp[4096];
	ssize_t r = read(*fd, tmp, sizeof(tmp));

	if (r < 0 && errno == EINTR)
		return;
	if (r <= 0) {
		close(*fd);
		*fd = -1;
		return;
	}
	if (*len + (size_t)r + 1 > *cap) {
		*cap = (*len + (size_t)r + 1) * 2;
		*buf = realloc(*buf, *cap);
		assert_non_null(*buf);
	}
	memcpy(*buf + *len, tmp, (size_t)r);
	*len += (size_t)r;
	(*buf)[*len] = '\0';
}

/* Collect output for up to `ms` (or until both pipes close). */
static __attribute__((unused)) void proc_pump(struct proc *p, unsigned ms)
{
	uint64_t end = it_now() + (uint64_t)ms * 1000000u;

	while ((p->out >= 0 || p->err >= 0) && it_now() < end) {
		struct pollfd f[2] = {{.fd = p->out, .events = POLLIN},
				      {.fd = p->err, .events = POLLIN}};
		int left = (int)((end - it_now()) / 1000000u) + 1;

		if (poll(f, 2, left) <= 0)
			continue;
		if (f[0].revents)
			proc_buf_read(&p->out, &p->obuf, &p->olen, &p->ocap);
		if (f[1].revents)
			proc_buf_read(&p->err, &p->ebuf, &p->elen, &p->ecap);
	}
}

/* The next whole line of p's stdout after *off, as a copy to free; NULL
 * when none came within ms or the output ended.  For tests that read
 * snapshots as they come and wait for a condition with a deadline. */
static __attribute__((unused)) char *proc_next_line(struct proc *p, size_t *off,
						    unsigned ms)
{
	uint64_t end = it_now() + (uint64_t)ms * 1000000u;

	for (;;) {
		char *from = p->obuf ? p->obuf + *off : NULL;
		char *nl = from ? memchr(from, '\n', p->olen - *off) : NULL;

		if (nl) {
			char *line = strndup(from, (size_t)(nl - from));

			assert_non_null(line);
			*off += (size_t)(nl - from) + 1;
			return line;
		}
		if (p->out < 0 || it_now() >= end)
			return NULL;
		proc_pump(p, 20);
	}
}

/* The next whole line of p's stdout, waited for as long as it takes until
 * the absolute deadline `end` (it_now() time): NULL only when the output
 * ended or the deadline passed.  The loops that read snapshots until one
 * holds a condition use it, so a machine slow to print the next snapshot
 * makes them wait, not stop early. */
static __attribute__((unused)) char *proc_line_by(struct proc *p, size_t *off,
						  uint64_t end)
{
	uint64_t now = it_now();

	return proc_next_line(
		p, off, now < end ? (unsigned)((end - now) / 1000000u) + 1 : 0);
}

/* The next JSON snapshot corotop printed (parsed into v, the caller's to
 * free), past the program's own lines; false once the output ended or the
 * deadline `end` (it_now() time) passed. */
static __attribute__((unused)) bool snapshot_by(struct proc *p, size_t *off,
						uint64_t end, struct jv *v)
{
	char *line;

	while ((line = proc_line_by(p, off, end))) {
		if (line[0] == '{') {
			json_must_parse(line, v);
			free(line);
			return true;
		}
		free(line);
	}
	return false;
}

/*
 * The demo program `demo` started alone (no CTP_* in its environment), its
 * stdout to /dev/null, with -v and `--duration duration`; returns once it
 * says it runs: -v prints its first line on stderr after its workload (and
 * its probe's ppt buffer) started, so corotop -p finds it.  A sanitizer's
 * own notes ("==PID==WARNING: ASan doesn't fully support makecontext...")
 * may come first.  *err_fd: the read end of its stderr, left open (it
 * prints its summary there at exit).
 */
static __attribute__((unused)) pid_t
demo_spawn(const char *demo, const char *duration, int *err_fd)
{
	char line[512];
	int err[2];
	pid_t pid;

	assert_int_equal(pipe2(err, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		unsetenv("CTP_SHM_PATH");
		unsetenv("CTP_SOCK_PATH");
		unsetenv("CTP_MAX_STATIONS");
		if (null < 0 || dup2(null, 1) < 0 || dup2(err[1], 2) < 0)
			_exit(126);
		execl(demo, demo, "-v", "--duration", duration, (char *)NULL);
		_exit(127);
	}
	close(err[1]);
	do {
		line[0] = '\0';
		if (it_read_line(err[0], line, sizeof(line), 60000) <= 0)
			break;
	} while (!strncmp(line, "==", 2));
	if (strncmp(line, "corotop-demo: pid=", 18))
		fail_msg("the demo did not start: '%s'", line);
	*err_fd = err[0];
	return pid;
}

/* Read everything and wait; returns the wait status (fails on timeout). */
static __attribute__((unused)) int proc_finish(struct proc *p,
					       unsigned timeout_ms)
{
	int status;

	proc_pump(p, timeout_ms);
	/* Its output ended: it is exiting, but a loaded machine (or a
	 * sanitizer's exit checks) may take a while. */
	if (it_wait_pid(p->pid, 60000, &status) < 0)
		fail_msg("%s did not exit in time", "corotop");
	if (p->out >= 0)
		close(p->out);
	if (p->err >= 0)
		close(p->err);
	if (!p->obuf)
		p->obuf = calloc(1, 1);
	if (!p->ebuf)
		p->ebuf = calloc(1, 1);
	return status;
}

static __attribute__((unused)) void proc_free(struct proc *p)
{
	free(p->obuf);
	free(p->ebuf);
}

static __attribute__((unused)) int exit_code(int status)
{
	if (WIFSIGNALED(status))
		fail_msg("corotop died of signal %d", WTERMSIG(status));
	return WEXITSTATUS(status);
}

/* Run to completion; returns the exit code. */
static __attribute__((unused)) int run(struct proc *p, char *const argv[],
				       unsigned timeout_ms)
{
	proc_start(p, argv);
	return exit_code(proc_finish(p, timeout_ms));
}

/* ---- JSON shape ---- */

/* An unsigned integer member (json_u64 fails the test otherwise). */
static __attribute__((unused)) void need_uint(const struct jv *v,
					      const char *path)
{
	(void)json_u64(v, path);
}

/*
 * Check one snapshot line; returns its coroutine count.  `exited` expects
 * the target's final state.
 */
static __attribute__((unused)) size_t
check_snapshot(const char *line, bool exited, struct jv *out)
{
	const struct jv *co, *st, *es;

	json_must_parse(line, out);
	assert_int_equal(out->t, J_OBJ);
	need_uint(out, "ts");
	need_uint(out, "stations.allocated");
	need_uint(out, "stations.max");
	need_uint(out, "events.harvested");
	need_uint(out, "events.lost");
	need_uint(out, "events.untraced");
	json_need(out, "events.per_sec", J_NUM);
	assert_true(json_need(out, "events.per_sec", J_NUM)->num >= 0);
	json_need(out, "engine.sleeping", J_BOOL);
	assert_true(json_need(out, "engine.pass_gap_max_ms", J_NUM)->num >= 0);
	need_uint(out, "target.pid");
	assert_true(json_need(out, "target.pid", J_NUM)->num > 0);
	assert_int_equal(json_need(out, "target.running", J_BOOL)->b, !exited);
	es = json_get(out, "target.exit_status");
	assert_non_null(es);
	if (!exited)
		assert_int_equal(es->t, J_NULL);
	assert_true(json_need(out, "stations.allocated", J_NUM)->num <=
		    json_need(out, "stations.max", J_NUM)->num);
	co = json_need(out, "coroutines", J_ARR);
	for (size_t i = 0; i < co->n; i++) {
		const struct jv *c = &co->items[i];

		assert_int_equal(c->t, J_OBJ);
		need_uint(c, "probe_id");
		st = json_need(c, "state", J_STR);
		assert_true(!strcmp(st->s, "running") ||
			    !strcmp(st->s, "suspended") ||
			    !strcmp(st->s, "dead"));
		need_uint(c, "tid");
		assert_true(!strncmp(json_need(c, "addr", J_STR)->s, "0x", 2));
		need_uint(c, "seq");
		need_uint(c, "switches");
		need_uint(c, "age_ns");
		need_uint(c, "in_state_ns");
		st = json_need(c, "kind", J_STR);
		assert_true(!strcmp(st->s, "coroutine") ||
			    !strcmp(st->s, "dispatcher") ||
			    !strcmp(st->s, "root"));
		json_need(c, "name", J_STR); /* "" when it has none */
		assert_true(strlen(json_need(c, "where", J_STR)->s) > 0);
	}
	return co->n;
}

/* Split stdout into lines; every line must end with '\n'. */
static __attribute__((unused)) size_t split_lines(char *buf, char **lines,
						  size_t max)
{
	size_t n = 0;
	char *p = buf;

	while (*p) {
		char *nl = strchr(p, '\n');

		if (!nl)
			fail_msg("last line has no newline: %s", p);
		*nl = '\0';
		if (n < max)
			lines[n] = p;
		n++;
		p = nl + 1;
	}
	return n;
}

/* The first coroutine of the snapshot whose WHERE starts with `where`, or
 * NULL. */
static __attribute__((unused)) const struct jv *coro_where(const struct jv *v,
							   const char *where)
{
	const struct jv *co = json_get(v, "coroutines");

	for (size_t c = 0; co && c < co->n; c++)
		if (!strncmp(json_need(&co->items[c], "where", J_STR)->s, where,
			     strlen(where)))
			return &co->items[c];
	return NULL;
}

/* Some frame of coroutine c's parked stack names a function starting
 * with sym. */
static __attribute__((unused)) bool stack_has(const struct jv *c,
					      const char *sym)
{
	const struct jv *f = json_get(c, "parked_stack.frames");

	for (size_t k = 0; f && f->t == J_ARR && k < f->n; k++)
		if (!strncmp(json_need(&f->items[k], "symbol", J_STR)->s, sym,
			     strlen(sym)))
			return true;
	return false;
}

/* Some coroutine of the snapshot is parked at `where` (a prefix). */
static __attribute__((unused)) bool parked_at(const struct jv *v,
					      const char *where)
{
	return coro_where(v, where) != NULL;
}

#endif
