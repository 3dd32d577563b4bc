/*
 * snapshot: storage and derived values of a model copy.
 *
 * Lints are evaluated here, on the copy, at the snapshot's own ts: the
 * engine does it after releasing its lock, and the UI can redo it with new
 * thresholds without a new snapshot.
 */
#define _GNU_SOURCE
#include "engine/model/snapshot.h"

#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/numtext.h"
#include "engine/model/namepool.h"
#include "engine/target/kwait.h"
#include "engine/names/framekind.h"
#include "engine/names/namecache.h"
#include "engine/names/symname.h"

void snapshot_init(struct snapshot *s)
{
	memset(s, 0, sizeof(*s));
}

void snapshot_finish(struct snapshot *s)
{
	free(s->coro);
	free(s->changed);
	free(s->kernel);
	free(s->history);
	memset(s, 0, sizeof(*s));
}

bool snapshot_seed(struct snapshot *s, const struct snapshot *from)
{
	/* As much room as from has: its cap bounds every record's slot. */
	if (!from->copy_of || from->nchanged ||
	    !grow_array_fit((void **)&s->coro, &s->cap,
			    from->cap > from->count ? from->cap : from->count,
			    sizeof(*s->coro)))
		return false;
	if (from->count)
		memcpy(s->coro, from->coro, from->count * sizeof(*s->coro));
	s->count = from->count;
	s->nchanged = 0;
	s->copy_of = from->copy_of;
	s->copy_gen = from->copy_gen;
	s->copy_used = from->copy_used;
	return true;
}

static uint64_t snapshot_end(const struct snapshot *s,
			     const struct model_coro *c)
{
	return c->state == MODEL_DEAD ? c->dead_ts : s->ts;
}

uint64_t snapshot_age_ns(const struct snapshot *s, const struct model_coro *c)
{
	uint64_t end = snapshot_end(s, c);

	return end > c->birth_ts ? end - c->birth_ts : 0;
}

uint64_t snapshot_in_state_ns(const struct snapshot *s,
			      const struct model_coro *c)
{
	return s->ts > c->state_ts ? s->ts - c->state_ts : 0;
}

double snapshot_run_pct(const struct snapshot *s, const struct model_coro *c)
{
	uint64_t run = c->run_ns, susp = c->susp_ns;
	uint64_t open = 0, end = snapshot_end(s, c);

	if (end > c->state_ts)
		open = end - c->state_ts;
	if (c->state == MODEL_RUNNING)
		run += open;
	else if (c->state == MODEL_SUSPENDED)
		susp += open;
	if (run + susp == 0)
		return 0.0;
	return 100.0 * (double)run / (double)(run + susp);
}

const char *snapshot_state_name(uint8_t state)
{
	switch (state) {
	case MODEL_RUNNING:
		return "running";
	case MODEL_DEAD:
		return "dead";
	default:
		return "suspended";
	}
}

const char *snapshot_kind_name(uint8_t kind)
{
	switch (kind) {
	case MODEL_DISPATCHER:
		return "dispatcher";
	case MODEL_ROOT:
		return "root";
	default:
		return "coroutine";
	}
}

void snapshot_lint_record(struct snapshot *s, const struct lint_config *c,
			  struct model_coro *r)
{
	uint32_t w = lint_check(c, r, s->ts);

	/* Written only when it changed: a copy made again from the changed
	 * records is linted whole, and a line not written is not written
	 * back. */
	if (r->warn != (uint8_t)w)
		r->warn = (uint8_t)w;
	for (; w; w &= w - 1)
		s->warn_counts[__builtin_ctz(w)]++;
}

void snapshot_relint_record(struct snapshot *s, const struct lint_config *c,
			    struct model_coro *r)
{
	for (uint32_t w = r->warn; w; w &= w - 1)
		s->warn_counts[__builtin_ctz(w)]--;
	snapshot_lint_record(s, c, r);
}

bool snapshot_kernel(const struct snapshot *s, const struct model_coro *c,
		     long *nr)
{
	size_t k;

	*nr = -1;
	if (!c->in_kernel || !s->kernel || c < s->coro ||
	    c >= s->coro + s->count)
		return false;
	k = (size_t)(c - s->coro);
	if (k >= s->kernel_cap || !s->kernel[k])
		return false;
	*nr = s->kernel[k] - 2;
	return true;
}

const char *snapshot_kernel_text(const struct snapshot *s,
				 const struct model_coro *c, char *b, size_t n)
{
	long nr;

	if (!snapshot_kernel(s, c, &nr))
		return NULL;
	if (nr < 0)
		return "";
	if (kwait_syscall_name(nr))
		return kwait_syscall_name(nr);
	snprintf(b, n, "syscall %ld", nr);
	return b;
}

void snapshot_lint(struct snapshot *s, const struct lint_config *c)
{
	memset(s->warn_counts, 0, sizeof(s->warn_counts));
	for (size_t i = 0; i < s->count; i++)
		snapshot_lint_record(s, c, &s->coro[i]);
}

const char *snapshot_target_text(const struct snapshot *s, char *b, size_t n)
{
	if (s->observer)
		snprintf(b, n, "observer");
	else if (s->target.core)
		/* Frozen at its dump. */
		snprintf(b, n, "core of pid %d (%s)", (int)s->target.pid,
			 s->core.command[0] ? s->core.command : "?");
	else if (s->target.scanned)
		/* No probe, no buffer: its memory is read. */
		snprintf(b, n, "pid %d %s", (int)s->target.pid,
			 s->target.running ? "scanned" : "exited");
	else if (s->target.attached)
		/* Not our child: attached through ppt as agent getpid(). */
		snprintf(b, n, "pid %d %s, agent pid %d", (int)s->target.pid,
			 s->target.running ? "attached" : "exited",
			 (int)getpid());
	else if (s->target.running)
		snprintf(b, n, "pid %d running", (int)s->target.pid);
	else if (s->target.term_signal && sigabbrev_np(s->target.term_signal))
		snprintf(b, n, "pid %d killed by SIG%s", (int)s->target.pid,
			 sigabbrev_np(s->target.term_signal));
	else if (s->target.term_signal)
		snprintf(b, n, "pid %d killed by signal %d", (int)s->target.pid,
			 s->target.term_signal);
	else if (s->target.exited)
		snprintf(b, n, "pid %d exited (status %d)", (int)s->target.pid,
			 s->target.exit_code);
	else
		snprintf(b, n, "pid %d", (int)s->target.pid);
	return b;
}

/* The name under cache key `key`, else hex of addr. */
static const char *snapshot_code_settled(const struct snapshot *s, uint64_t key,
					 uint64_t addr, bool full, char *buf,
					 size_t n, bool *settled)
{
	*settled = true;
	if (!n)
		return buf;
	/* Beyond user space: no symbol is there (nor room for a process in
	 * the key). */
	if (s->names && addr && SNAPSHOT_ADDR_NAMEABLE(addr) &&
	    SNAPSHOT_KEY_SPACE(key) != SNAPSHOT_SPACE_NONE &&
	    namecache_name(s->names, key, full, buf, n, settled))
		return buf;
	if (n > 2) {
		buf[0] = '0';
		buf[1] = 'x';
		numtext_hex(buf + 2, n - 2, addr);
	} else {
		buf[0] = '\0';
	}
	return buf;
}

const char *snapshot_where_settled(const struct snapshot *s, uint64_t addr,
				   bool full, char *buf, size_t n,
				   bool *settled)
{
	return snapshot_code_settled(s, SNAPSHOT_WHERE_KEY(addr), addr, full,
				     buf, n, settled);
}

const char *snapshot_where(const struct snapshot *s, uint64_t addr, bool full,
			   char *buf, size_t n)
{
	bool settled;

	return snapshot_where_settled(s, addr, full, buf, n, &settled);
}

uint16_t snapshot_space(const struct snapshot *s, const struct model_coro *c)
{
	if (!c->pid || (pid_t)c->pid == s->target.pid)
		return 0;
	for (uint32_t k = 0; k < s->nspaces && k < SNAPSHOT_SPACES_MAX; k++)
		if (s->spaces[k] == c->pid)
			return (uint16_t)(k + 1);
	return SNAPSHOT_SPACE_NONE;
}

/*
 * WHERE in a runtime's frame that runs the program's code inlined (a
 * lambda inlined into Boost.Fiber's worker_context<F>::run_, the frame a
 * walk shows when the program has none of its own): said in the program's
 * words, "F (file:LINE)" -- the line is the inlined code's, the program's
 * own file.  A context a runtime made for itself is left as it is.
 */
static const char *snapshot_where_inlined(char *buf, size_t n)
{
	char fn[NAMECACHE_NAME_MAX], f[NAMECACHE_NAME_MAX];
	size_t len;
	const char *at;

	if (!n)
		return buf;
	len = symname_function_len(buf);
	if (!len || len >= sizeof(fn))
		return buf;
	memcpy(fn, buf, len);
	fn[len] = '\0';
	if (!framekind_inlined(fn, f, sizeof(f)) || strchr(f, ' '))
		return buf;
	at = strstr(buf + len, " (");
	snprintf(fn, sizeof(fn), "%s%s", f, at ? at : "");
	snprintf(buf, n, "%s", fn);
	return buf;
}

const char *snapshot_where_of_settled(const struct snapshot *s,
				      const struct model_coro *c, uint64_t addr,
				      bool full, char *buf, size_t n,
				      bool *settled)
{
	snapshot_code_settled(
		s,
		SNAPSHOT_KEY_IN(SNAPSHOT_WHERE_KEY(addr), snapshot_space(s, c)),
		addr, full, buf, n, settled);
	return snapshot_where_inlined(buf, n);
}

const char *snapshot_where_of(const struct snapshot *s,
			      const struct model_coro *c, uint64_t addr,
			      bool full, char *buf, size_t n)
{
	bool settled;

	return snapshot_where_of_settled(s, c, addr, full, buf, n, &settled);
}

const char *snapshot_name_settled(const struct snapshot *s,
				  const struct model_coro *c, char *buf,
				  size_t n, bool *settled)
{
	char where[NAMECACHE_NAME_MAX], made[NAMECACHE_NAME_MAX];
	uint64_t pc = 0, made_for;
	bool made_settled = true;

	*settled = true;
	if (!n)
		return buf;
	if (!namepool_get(s->coro_names, c->name, buf, n, &pc) || buf[0] || !pc)
		return buf;
	/* An entry: named at itself, not at a call site; by its function,
	 * or the program's function a runtime's template was made for --
	 * by name, or by type and the function the probe found (made_for). */
	made_for = namepool_made_for(s->coro_names, c->name);
	snapshot_code_settled(s, SNAPSHOT_KEY_IN(pc, snapshot_space(s, c)), pc,
			      false, where, sizeof(where), settled);
	if (made_for)
		snapshot_code_settled(
			s, SNAPSHOT_KEY_IN(made_for, snapshot_space(s, c)),
			made_for, false, made, sizeof(made), &made_settled);
	framekind_coro_name_made(where, made_for ? made : NULL, buf, n);
	*settled = *settled && made_settled;
	return buf;
}

const char *snapshot_name(const struct snapshot *s, const struct model_coro *c,
			  char *buf, size_t n)
{
	bool settled;

	return snapshot_name_settled(s, c, buf, n, &settled);
}
