/*
 * ppt-it: what the ppt integration tests (test-ppt.c, test-ppt-gen.c)
 * share: a target started alone and driven line by line on stdin, the
 * SysV segments a process created, the frames of a buffer in corotop's
 * JSON snapshots.  Header-only, static, after e2e.h.
 */
#ifndef COROTOP_PPT_IT_H
#define COROTOP_PPT_IT_H

#include <sys/ipc.h>
#include <sys/shm.h>

struct target {
	pid_t pid;
	int in, out;
};

static __attribute__((unused)) void target_start_args(struct target *t,
						      char *const argv[])
{
	int in[2], out[2];
	char line[128];

	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	t->pid = fork();
	assert_true(t->pid >= 0);
	if (t->pid == 0) {
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	t->in = in[1];
	t->out = out[0];
	assert_true(it_read_line(t->out, line, sizeof(line), 5000) > 0);
	assert_true(!strncmp(line, "ready ", 6));
}

static __attribute__((unused)) void target_start(struct target *t,
						 const char *path)
{
	char *argv[] = {(char *)path, NULL};

	target_start_args(t, argv);
}

/* One command, one answer line (which must start with "ok"). */
static __attribute__((unused)) void
target_cmd(struct target *t, const char *cmd, char *reply, size_t n)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%s\n", cmd);
	assert_int_equal(write(t->in, buf, strlen(buf)), (ssize_t)strlen(buf));
	assert_true(it_read_line(t->out, reply, n, 10000) >= 0);
	if (strncmp(reply, "ok", 2))
		fail_msg("target answered '%s' to '%s'", reply, cmd);
}

static __attribute__((unused)) void target_stop(struct target *t)
{
	int status;

	if (write(t->in, "quit\n", 5) < 0)
		kill(t->pid, SIGKILL);
	it_wait_pid(t->pid, 5000, &status);
	close(t->in);
	close(t->out);
}

/* Demo buffer's _hmem and _stat (or the legacy one's), via "state". */
static __attribute__((unused)) void target_state(struct target *t, int *hmem,
						 int *stat)
{
	char r[160];

	target_cmd(t, "state", r, sizeof(r));
	assert_int_equal(sscanf(r, "ok hmem=%d stat=%d", hmem, stat), 2);
}

/* Wait until corotop has published the buffer (its _hmem is set). */
static __attribute__((unused)) void wait_published(struct target *t)
{
	uint64_t end = it_now() + 30000000000ull;
	int hmem = 0, stat = 0;

	while (it_now() < end) {
		target_state(t, &hmem, &stat);
		if (hmem)
			return;
		it_sleep_ms(10);
	}
	fail_msg("corotop never published the buffer");
}

/* SysV segments created by process cpid, and how many of them are not
 * yet marked for removal. */
static __attribute__((unused)) size_t segments_of(pid_t cpid, size_t *unmarked)
{
	FILE *f = fopen("/proc/sysvipc/shm", "r");
	char line[512];
	size_t n = 0;

	*unmarked = 0;
	assert_non_null(f);
	if (!fgets(line, sizeof(line), f)) {
		fclose(f);
		return 0;
	}
	while (fgets(line, sizeof(line), f)) {
		long key, id, size;
		unsigned perms;
		int cp, lp;

		if (sscanf(line, "%ld %ld %o %ld %d %d", &key, &id, &perms,
			   &size, &cp, &lp) != 6 ||
		    cp != cpid)
			continue;
		n++;
		if (!(perms & SHM_DEST))
			(*unmarked)++;
	}
	fclose(f);
	return n;
}

/* The frames of buffer `name` in every snapshot line of out. */
struct seen {
	struct jv doc[16];
	size_t ndoc;
	const struct jv *frames[4096];
	size_t n;
	const struct jv *last_buffer;
};

static __attribute__((unused)) void collect(char *out, const char *name,
					    struct seen *s)
{
	char *lines[16];
	size_t nl = split_lines(out, lines, 16);

	memset(s, 0, sizeof(*s));
	assert_true(nl >= 1 && nl <= 16);
	for (size_t i = 0; i < nl; i++) {
		struct jv *v = &s->doc[s->ndoc++];
		const struct jv *bufs;

		json_must_parse(lines[i], v);
		bufs = json_need(v, "ppt.buffers", J_ARR);
		for (size_t b = 0; b < bufs->n; b++) {
			const struct jv *fr;

			if (strcmp(json_need(&bufs->items[b], "name", J_STR)->s,
				   name))
				continue;
			s->last_buffer = &bufs->items[b];
			fr = json_need(&bufs->items[b], "frames", J_ARR);
			assert_int_equal(
				json_u64(&bufs->items[b], "frames_omitted"), 0);
			for (size_t k = 0; k < fr->n && s->n < 4096; k++)
				s->frames[s->n++] = &fr->items[k];
		}
	}
	assert_non_null(s->last_buffer);
}

static __attribute__((unused)) void seen_free(struct seen *s)
{
	for (size_t i = 0; i < s->ndoc; i++)
		json_free(&s->doc[i]);
}

static char pidbuf[16];

static __attribute__((unused)) const char *pid_arg(pid_t pid)
{
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	return pidbuf;
}

#endif
