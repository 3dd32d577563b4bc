/*
 * snapshot: storage and derived values of a model copy.
 *
 * Lints are evaluated here, on the copy, at the snapshot's own ts: the
 * engine does it after releasing its lock, and the UI can redo it with new
 * thresholds without a new snapshot.
 */
#include "engine/ctp/snapshot.h"

#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/hash.h"
#include "common/numtext.h"

void snapshot_init(struct snapshot *s)
{
	memset(s, 0, sizeof(*s));
}

void snapshot_finish(struct snapshot *s)
{
	free(s->coro);
	free(s->history);
	free(s->names.addr);
	free(s->names.full);
	free(s->names.brief);
	free(s->names.text);
	memset(s, 0, sizeof(*s));
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

void snapshot_lint_record(struct snapshot *s, const struct lint_config *c,
			  struct model_coro *r)
{
	uint32_t w = lint_check(c, r, s->ts);

	r->warn = w;
	for (; w; w &= w - 1)
		s->warn_counts[__builtin_ctz(w)]++;
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
	else if (s->target.attached)
		/* Not our child: attached through ppt as agent getpid(). */
		snprintf(b, n, "pid %d %s, agent pid %d", (int)s->target.pid,
			 s->target.running ? "attached" : "exited",
			 (int)getpid());
	else if (s->target.running)
		snprintf(b, n, "pid %d running", (int)s->target.pid);
	else if (s->target.term_signal)
		snprintf(b, n, "pid %d killed by signal %d", (int)s->target.pid,
			 s->target.term_signal);
	else
		snprintf(b, n, "pid %d exited %d", (int)s->target.pid,
			 s->target.exit_code);
	return b;
}

/* ---- names ---- */

/* The slot of addr, or of the empty slot it would take (slots > 0). */
static uint32_t snapshot_name_slot(const struct snapshot_names *t,
				   uint64_t addr)
{
	uint32_t i = (uint32_t)hash_fib(addr, 64 - __builtin_ctz(t->slots));

	while (t->addr[i] && t->addr[i] != addr)
		i = (i + 1) & (t->slots - 1);
	return i;
}

void snapshot_names_reset(struct snapshot *s)
{
	struct snapshot_names *t = &s->names;

	if (t->n)
		memset(t->addr, 0, t->slots * sizeof(*t->addr));
	t->n = 0;
	t->len = 0;
}

bool snapshot_name_known(const struct snapshot *s, uint64_t addr)
{
	const struct snapshot_names *t = &s->names;

	return t->slots && addr && t->addr[snapshot_name_slot(t, addr)];
}

/* Twice the slots (or the first 64), every entry placed again. */
static bool snapshot_names_grow(struct snapshot_names *t)
{
	struct snapshot_names old = *t;
	uint32_t slots = t->slots ? t->slots * 2 : 64;

	if (slots < t->slots) /* 2^32 entries: never, but bounded */
		return false;
	t->addr = calloc(slots, sizeof(*t->addr));
	t->full = malloc(slots * sizeof(*t->full));
	t->brief = malloc(slots * sizeof(*t->brief));
	if (!t->addr || !t->full || !t->brief) {
		free(t->addr);
		free(t->full);
		free(t->brief);
		t->addr = old.addr;
		t->full = old.full;
		t->brief = old.brief;
		return false;
	}
	t->slots = slots;
	for (uint32_t i = 0; i < old.slots; i++) {
		uint32_t k;

		if (!old.addr[i])
			continue;
		k = snapshot_name_slot(t, old.addr[i]);
		t->addr[k] = old.addr[i];
		t->full[k] = old.full[i];
		t->brief[k] = old.brief[i];
	}
	free(old.addr);
	free(old.full);
	free(old.brief);
	return true;
}

/* A copy of str in the text; its offset, or SNAPSHOT_NO_NAME. */
static uint32_t snapshot_name_text(struct snapshot_names *t, const char *str)
{
	size_t l = strlen(str);
	size_t at = t->len;

	if (at + l + 1 >= SNAPSHOT_NO_NAME ||
	    !grow_array((void **)&t->text, &t->cap, at + l + 1, 1))
		return SNAPSHOT_NO_NAME;
	memcpy(t->text + at, str, l + 1);
	t->len += l + 1;
	return (uint32_t)at;
}

bool snapshot_name_put(struct snapshot *s, uint64_t addr, const char *full,
		       const char *brief)
{
	struct snapshot_names *t = &s->names;
	uint32_t k;

	if (!addr)
		return false;
	if ((t->n + 1) * 2 > t->slots && !snapshot_names_grow(t))
		return false;
	k = snapshot_name_slot(t, addr);
	if (!t->addr[k])
		t->n++;
	t->addr[k] = addr;
	t->full[k] = t->brief[k] = SNAPSHOT_NO_NAME;
	if (full && brief) {
		t->full[k] = snapshot_name_text(t, full);
		t->brief[k] = snapshot_name_text(t, brief);
		if (t->brief[k] == SNAPSHOT_NO_NAME)
			t->full[k] = SNAPSHOT_NO_NAME;
	}
	return t->full[k] != SNAPSHOT_NO_NAME || !full;
}

const char *snapshot_where(const struct snapshot *s, uint64_t addr, bool full,
			   char *buf, size_t n)
{
	const struct snapshot_names *t = &s->names;
	uint32_t k, at;

	if (!n)
		return buf;
	if (t->slots && addr) {
		k = snapshot_name_slot(t, addr);
		at = full ? t->full[k] : t->brief[k];
		if (t->addr[k] && at != SNAPSHOT_NO_NAME) {
			snprintf(buf, n, "%s", t->text + at);
			return buf;
		}
	}
	if (n > 2) {
		buf[0] = '0';
		buf[1] = 'x';
		numtext_hex(buf + 2, n - 2, addr);
	} else {
		buf[0] = '\0';
	}
	return buf;
}
