/*
 * warn_view: the warnings pane (w).  For each lint: whether it is on, its
 * threshold, how many coroutines trip it, and the worst offenders (longest
 * in their state first), so a lost wakeup is one key away from the table.
 */
#define _GNU_SOURCE
#include <curses.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/duration.h"
#include "engine/ctp/lint.h"
#include "ui/tui/tui.h"

static int warn_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct snapshot *s = ctx;
	uint64_t a =
		snapshot_in_state_ns(s, *(const struct model_coro *const *)pa);
	uint64_t b =
		snapshot_in_state_ns(s, *(const struct model_coro *const *)pb);

	return a < b ? 1 : a > b ? -1 : 0;
}

static void warn_view_draw(struct tui *t)
{
	const struct snapshot *s = &t->snap;
	const struct model_coro **list;
	int y = 5;

	list = malloc((s->count ? s->count : 1) * sizeof(*list));
	if (!list)
		return;
	for (int k = 0; k < LINT_COUNT && y < t->lines - 2; k++) {
		const struct lint_config *lc = &t->lints;
		size_t n = 0;
		int shown = 0;

		for (size_t i = 0; i < s->count; i++)
			if (s->coro[i].warn & (1u << k))
				list[n++] = &s->coro[i];
		qsort_r(list, n, sizeof(*list), warn_cmp, (void *)s);
		term_text(y, 1, A_BOLD, "%-6s %-13s", lint_tag(k),
			  lint_name(k));
		term_text(y++, 22, n ? tui_attr(t, PAIR_WARN) : TUI_NORMAL,
			  "%s  threshold %g%s  %zu coroutine%s",
			  lc->enabled[k] ? "on " : "off", lint_threshold(lc, k),
			  lint_unit(k), n, n == 1 ? "" : "s");
		term_text(y++, 3, A_DIM, "%s", lint_help(k));
		for (size_t i = 0; i < n && y < t->lines - 2 && shown < 5;
		     i++, shown++) {
			char in[16];

			duration_format(in, sizeof(in),
					snapshot_in_state_ns(s, list[i]));
			term_text(y++, 5, A_NORMAL,
				  "%14" PRIx64 " %c %8s  tid %-8" PRIu64
				  " 0x%" PRIx64,
				  list[i]->probe_id, list[i]->state, in,
				  list[i]->last_tid, list[i]->last_addr);
		}
		if ((size_t)shown < n && y < t->lines - 2)
			term_text(y++, 5, A_DIM,
				  "... and %zu more (filter the table: \\ then "
				  "%s)",
				  n - (size_t)shown, lint_tag(k));
		y++;
	}
	free(list);
	term_text(t->lines - 1, 0, A_NORMAL,
		  "Esc back   S setup thresholds   F1 help   q quit");
}

const struct tui_view_impl warn_view_impl = {
	.name = "warnings",
	.opens = ACT_WARNINGS,
	.draw = warn_view_draw,
};
