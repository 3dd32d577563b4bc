/*
 * dump: `corotop dump`'s text -- every coroutine of one snapshot with its
 * state, thread, name and whole parked stack, grouped: the lost-wakeup
 * suspects first, then running, suspended and dead, as `py-spy dump`
 * prints a process's threads.  What a user pastes into a bug report.
 * (`--json` is batch's JSON object, whose rows carry their stacks.)
 */
#include "ui/batch/dump.h"

#include <inttypes.h>
#include <stdio.h>

#include "engine/model/lint.h"
#include "ui/rows/column.h"

/* Frames printed per stack. */
#define DUMP_FRAMES 64

/* The groups, in print order, and which rows each takes. */
enum dump_group {
	DUMP_SUSPECT, /* suspended, flagged lost-wakeup */
	DUMP_RUNNING,
	DUMP_SUSPENDED,
	DUMP_DEAD,
	DUMP_GROUPS
};

static const char *const dump_titles[DUMP_GROUPS] = {
	[DUMP_SUSPECT] = "Lost-wakeup suspects (suspended past the threshold)",
	[DUMP_RUNNING] = "Running",
	[DUMP_SUSPENDED] = "Suspended",
	[DUMP_DEAD] = "Dead",
};

static enum dump_group dump_group_of(const struct model_coro *c)
{
	if (c->warn & (1u << LINT_LOST_WAKEUP))
		return DUMP_SUSPECT;
	switch (c->state) {
	case MODEL_RUNNING:
		return DUMP_RUNNING;
	case MODEL_DEAD:
		return DUMP_DEAD;
	default:
		return DUMP_SUSPENDED;
	}
}

/* One coroutine: a line, then its stack, innermost first. */
static void dump_coro(FILE *f, const struct snapshot *s,
		      const struct model_coro *c, const struct batch_hot *hot)
{
	char id[40], tid[24], state[24], name[256], where[256], buf[512];
	uint64_t frames[DUMP_FRAMES], trace = 0;
	size_t n = 0;

	column_table[COL_ID].cell(id, sizeof(id), s, c);
	column_table[COL_TID].cell(tid, sizeof(tid), s, c);
	column_table[COL_IN_STATE].cell(state, sizeof(state), s, c);
	column_table[COL_NAME].cell(name, sizeof(name), s, c);
	fprintf(f, "  %s \"%s\" %s, thread %s", id, name,
		snapshot_state_name(c->state), tid);
	if (!(c->scanned && s->target.core)) /* a core: not since when */
		fprintf(f, ", for %s", state);
	if (c->scanned && c->state == MODEL_RUNNING && s->target.core)
		fputs(" [a thread: its registers in the core]", f);
	else if (c->scanned && c->waiting)
		fputs(" [found by a scan; waiting, its scheduler's lists say]",
		      f);
	else if (c->scanned && c->idle)
		fputs(" [found by a scan; has not run for that long: its stack "
		      "was not touched]",
		      f);
	else if (c->scanned)
		fputs(c->unsure ? " [found by a scan, not proven live]"
				: " [found by a scan]",
		      f);
	fputc('\n', f);
	/* Parked, or a core's running thread (the stack it was on). */
	if (hot && hot->parked &&
	    (c->state == MODEL_SUSPENDED ||
	     (c->state == MODEL_RUNNING && c->scanned)))
		n = hot->parked(hot->ctx, c, frames, DUMP_FRAMES, &trace);
	for (size_t k = 0; k < n; k++)
		fprintf(f, "      %s\n",
			hot->name(hot->ctx, frames[k], k == 0, true, buf,
				  sizeof(buf)));
	if (!n && c->last_addr)
		fprintf(f, "      at %s\n",
			snapshot_where_of(s, c, c->last_addr, true, where,
					  sizeof(where)));
}

void dump_print_text(FILE *f, const struct snapshot *s, const uint32_t *idx,
		     size_t n, const struct batch_hot *hot)
{
	size_t count[DUMP_GROUPS] = {0};
	char target[64];

	for (size_t i = 0; i < n; i++)
		count[dump_group_of(&s->coro[idx[i]])]++;
	snapshot_target_text(s, target, sizeof(target));
	fprintf(f, "corotop dump - %s\n", target);
	fprintf(f,
		"%zu coroutines: %zu lost-wakeup suspects, %zu running, %zu "
		"suspended, %zu dead\n",
		n, count[DUMP_SUSPECT], count[DUMP_RUNNING],
		count[DUMP_SUSPENDED], count[DUMP_DEAD]);
	if (s->target.core && s->core.registry)
		fprintf(f,
			"Read from the probe's registry in the core: %" PRIu32
			" coroutines (%" PRIu32 " unreadable); their ages and "
			"times in state count to its latest transition\n",
			s->core.registry_live, s->core.registry_unread);
	else if (s->target.core)
		fprintf(f,
			"Found by scanning the core's memory: %" PRIu32
			" contexts, %" PRIu32
			" not proven live (?ID); their age, switches and time "
			"in state are unknown\n",
			s->scan.found, s->scan.unsure);
	else if (s->target.scanned)
		fprintf(f,
			"Found by scanning its memory (no probe, no ppt "
			"buffer): %" PRIu32 " contexts, %" PRIu32
			" not proven live (?ID); their age and switches are "
			"unknown, their time in state counts from the scan "
			"(>)\n",
			s->scan.found, s->scan.unsure);
	for (int g = 0; g < DUMP_GROUPS; g++) {
		if (!count[g])
			continue;
		fprintf(f, "\n%s (%zu)\n", dump_titles[g], count[g]);
		for (size_t i = 0; i < n; i++)
			if (dump_group_of(&s->coro[idx[i]]) ==
			    (enum dump_group)g)
				dump_coro(f, s, &s->coro[idx[i]], hot);
	}
	if (!n)
		fputs("\nNo coroutine found.\n", f);
}
