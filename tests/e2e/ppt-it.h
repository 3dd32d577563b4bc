/*
 * ppt-it: what the ppt integration tests (test-ppt.c, test-ppt-gen.c)
 * share: a target started alone and driven line by line on stdin, the
 * SysV segments a process created, the frames of a buffer in corotop's
 * JSON snapshots (however many snapshots there are), and a run of corotop
 * read as it goes until the frames a test saved have all been shown, then
 * ended with SIGINT: no run ends after a fixed number of snapshots while
 * the test or the engine may still be on its way.  Every wait has a
 * deadline of 30-60 s, a bound only a broken run reaches.  Header-only,
 * static, after e2e.h.
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
	if (it_read_line(t->out, line, sizeof(line), 60000) <= 0)
		fail_msg("%s never said it was ready", argv[0]);
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
	if (it_read_line(t->out, reply, n, 60000) < 0)
		fail_msg("the target did not answer '%s' in 60 s", cmd);
	if (strncmp(reply, "ok", 2))
		fail_msg("target answered '%s' to '%s'", reply, cmd);
}

static __attribute__((unused)) void target_stop(struct target *t)
{
	int status;

	if (write(t->in, "quit\n", 5) < 0)
		kill(t->pid, SIGKILL);
	it_wait_pid(t->pid, 30000, &status);
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

/* The frames of buffer `name` in corotop's snapshot lines, any number of
 * them: every document parsed (kept, the frames point into them), and
 * buffer `name` as the last snapshot that listed it shows it. */
struct seen {
	struct jv **doc;
	size_t ndoc, doc_cap;
	const struct jv **frames;
	size_t n, frames_cap;
	const struct jv *last_buffer;
	const struct jv *last_doc;
};

/* Add one snapshot line (copied: line may go afterwards). */
static __attribute__((unused)) void seen_line(struct seen *s, const char *line,
					      const char *name)
{
	struct jv *v = calloc(1, sizeof(*v));
	const struct jv *bufs;

	assert_non_null(v);
	if (s->ndoc == s->doc_cap) {
		s->doc_cap = s->doc_cap ? s->doc_cap * 2 : 16;
		s->doc = realloc(s->doc, s->doc_cap * sizeof(*s->doc));
		assert_non_null(s->doc);
	}
	s->doc[s->ndoc++] = v;
	json_must_parse(line, v);
	s->last_doc = v;
	bufs = json_need(v, "ppt.buffers", J_ARR);
	for (size_t b = 0; b < bufs->n; b++) {
		const struct jv *fr;

		if (strcmp(json_need(&bufs->items[b], "name", J_STR)->s, name))
			continue;
		s->last_buffer = &bufs->items[b];
		fr = json_need(&bufs->items[b], "frames", J_ARR);
		assert_int_equal(json_u64(&bufs->items[b], "frames_omitted"),
				 0);
		for (size_t k = 0; k < fr->n; k++) {
			if (s->n == s->frames_cap) {
				s->frames_cap =
					s->frames_cap ? s->frames_cap * 2 : 256;
				s->frames = realloc(s->frames,
						    s->frames_cap *
							    sizeof(*s->frames));
				assert_non_null(s->frames);
			}
			s->frames[s->n++] = &fr->items[k];
		}
	}
}

/* Add every line of text (each must end with a newline). */
static __attribute__((unused)) void seen_text(struct seen *s, const char *text,
					      const char *name)
{
	while (*text) {
		const char *nl = strchr(text, '\n');
		char *line;

		if (!nl)
			fail_msg("last line has no newline: %s", text);
		line = strndup(text, (size_t)(nl - text));
		assert_non_null(line);
		seen_line(s, line, name);
		free(line);
		text = nl + 1;
	}
}

/* Every snapshot line of out, however many: at least one, and buffer
 * `name` in one of them. */
static __attribute__((unused)) void collect(const char *out, const char *name,
					    struct seen *s)
{
	memset(s, 0, sizeof(*s));
	seen_text(s, out, name);
	assert_true(s->ndoc >= 1);
	assert_non_null(s->last_buffer);
}

static __attribute__((unused)) void seen_free(struct seen *s)
{
	for (size_t i = 0; i < s->ndoc; i++) {
		json_free(s->doc[i]);
		free(s->doc[i]);
	}
	free(s->doc);
	free(s->frames);
	memset(s, 0, sizeof(*s));
}

/* corotop -b -f json (no -n) running as p: read its snapshots as they come
 * until buffer `name` showed `want` frames in all (deadline 60 s: how soon
 * depends on the machine), then end it with SIGINT, which detaches as any
 * end does (exit 130), and add what it printed before it ended.  The
 * caller then checks exact counts: frames it never saved, or saved twice,
 * show up as s->n != want. */
static __attribute__((unused)) void frames_then_sigint(struct proc *p,
						       const char *name,
						       size_t want,
						       struct seen *s)
{
	uint64_t end = it_now() + 60000000000ull;
	size_t off = 0;
	char *line;
	int status;

	memset(s, 0, sizeof(*s));
	while (s->n < want && (line = proc_line_by(p, &off, end)) != NULL) {
		seen_line(s, line, name);
		free(line);
	}
	if (s->n < want) {
		kill(p->pid, SIGINT);
		fail_msg("corotop showed %zu of the %zu frames of %s in 60 s: "
			 "%s",
			 s->n, want, name, p->ebuf ? p->ebuf : "");
	}
	kill(p->pid, SIGINT);
	status = proc_finish(p, 30000);
	if (exit_code(status) != 128 + SIGINT)
		fail_msg("corotop ended with %d, not 130: %s",
			 exit_code(status), p->ebuf);
	seen_text(s, p->obuf + off, name);
	assert_non_null(s->last_buffer);
}

static char pidbuf[16];

static __attribute__((unused)) const char *pid_arg(pid_t pid)
{
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	return pidbuf;
}

#endif
