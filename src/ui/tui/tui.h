/*
 * tui: the interactive ncurses interface.  One libev loop on the UI thread;
 * callbacks only set dirty flags, and one render plus one doupdate() happen
 * per loop pass (an ev_prepare watcher).  The UI reads engine snapshots only.
 *
 * Layers, one per file:
 *   keymap.c       the binding table: key -> action, plus help notes
 *   tui.c          loop, terminal setup/restore, shared actions, input line
 *   view.c         the views as a const table (view.h), moving between them
 *   table_view.c   row selection (filter, sort, group), the header and the
 *                  main table: the base view every other one stands on
 *   detail_view.c  one coroutine: its ring slots, timeline, percentiles
 *   help_view.c    keys and columns, drawn from the same tables
 *   warn_view.c    the lints and their worst offenders
 *   setup_view.c   lints and columns on and off, saved to the config
 *   hot_view.c     hot stacks (CallTrace): top list and caller tree
 *   ppt_view.c     the frames of the attached process's ppt buffers
 *   replay_ctl.c   time controls while replaying
 * ui/term holds what the memory view shares: the terminal, text, lists,
 * column layout, keys.
 *
 * struct tui holds what every view stands on: the snapshot, the table's
 * rows and their selection, the input line and the status message.  Each
 * other view keeps its own state (t->view_state), defined in its file.
 */
#ifndef COROTOP_TUI_H
#define COROTOP_TUI_H

#include <curses.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/model/lint.h"
#include "ui/rows/column.h"
#include "ui/rows/filter.h"
#include "ui/tui/keymap.h"
#include "ui/tui/thread_meters.h"
#include "ui/rows/rowset.h"
#include "ui/term/keys.h"
#include "ui/term/list.h"
#include "ui/term/text.h"
#include "ui/tui/view.h"

/* What an action asks the loop to do; actions never draw. */
enum tui_reaction {
	REACT_NONE = 0,
	REACT_REDRAW = TERM_REDRAW,   /* re-render the screen */
	REACT_REBUILD = TERM_REBUILD, /* re-select and re-sort rows */
	REACT_REFRESH = TERM_REFRESH, /* take a new snapshot now */
	REACT_QUIT = TERM_QUIT,
};

enum tui_input {
	INPUT_NONE = 0,
	INPUT_SEARCH,
	INPUT_FILTER,
	INPUT_GOTO, /* replay: a time to jump to */
};

struct tui_options {
	unsigned delay_tenths;
	bool color;
	bool mouse;
	int sort_column; /* enum column_id, or -1 for the default */
	bool sort_invert;
	const char *filter;
	struct lint_config lints;
	bool hidden[COL_COUNT];	 /* columns switched off */
	const char *config_path; /* where setup saves, or NULL */
	const char *folded_path; /* x writes here (--folded), or NULL */
	unsigned hot_by;	 /* --hot-by: the hot view's first rows */
};

/* One displayed line of the table: a coroutine or a thread group header. */
struct tui_row {
	uint32_t coro;	/* index into snap.coro, or UINT32_MAX for a header */
	uint64_t tid;	/* group headers: the thread */
	uint32_t count; /* group headers: coroutines in the group */
};

/*
 * The coroutine table's state (table_view.c), which every view stands on:
 * its rows, cursor, order, filter and scroll.  (bench/render.c sets these
 * fields to draw the table alone.)
 */
struct tui_table {
	struct tui_row *rows;
	size_t nrows, cap_rows;
	struct rowset rowset; /* rebuild's: filtered, then sorted */
	/* The table's cursor: a term_list, whose two fields bench/render.c
	 * also sets by name. */
	union {
		struct term_list list;
		struct {
			size_t selected; /* row index */
			size_t top;	 /* first row shown */
		};
	};
	int sort_column;
	bool sort_invert;
	bool group_by_thread;
	struct filter filter;
	/* Right/Left: the table's horizontal scroll, in screen columns; 0 is
	 * the fitted table, more the full one shifted (table_view.c). */
	int hscroll;
	/* Some coroutine of the snapshot has a name (rebuild): NAME is shown
	 * only then, so programs that name none keep its width. */
	bool named;
	/* The user has pressed a key or moved the cursor. Until then the
	 * cursor stays on the first row while the rows arrive, instead of
	 * following whichever coroutine the first refresh happened to list
	 * first; from then on it follows its coroutine. */
	bool chosen;
};

struct tui {
	struct engine *engine;
	struct tui_options opt;
	struct snapshot snap;
	bool have_snap;
	bool paused;

	struct tui_table table; /* table_view.c: what every view stands on */
	uint64_t selected_id;	/* model id kept across refreshes */
	uint64_t watching;	/* model id whose history the engine keeps */
	struct thread_meters threads; /* the meters above the table */

	enum tui_view view;		  /* shown (view.h) */
	enum tui_view under;		  /* an overlay's: the view under it */
	void *view_state[TUI_VIEW_COUNT]; /* each view's own, or NULL */

	/* The search and filter line, for the rows of the view shown. */
	char search[64]; /* lowercased */
	enum tui_input input;
	char line[128];	  /* input line being edited */
	char before[128]; /* the filter in effect when editing began */
	size_t line_len;
	char message[160]; /* one-shot status line */

	struct lint_config lints; /* as sent to the engine */
	bool hidden[COL_COUNT];

	/* The launched target's output is captured (engine_output_lines),
	 * drained by the loop.  output_seen: its lines when the output view
	 * last showed them. */
	bool output;
	uint64_t output_seen;

	bool replay;	      /* --replay: keymap_replay first */
	char replay_name[96]; /* the recording, for the header */

	bool color;
	bool ascii; /* no UTF-8: ASCII-only drawing */
	int lines, cols;
	unsigned dirty; /* enum tui_reaction bits pending */
	bool quit;
	int exit_status;
};

/* Run the interactive interface until the user quits or a signal ends it.
 * The terminal is restored on every way out. Returns corotop's exit code. */
int tui_run(struct engine *e, const struct tui_options *opt);
/* The engine's publish_hook (engine_config) while tui_run runs: wakes the
 * loop from the harvest thread (ctx unused). */
void tui_publish_hook(void *ctx);

/* The view shown. */
static inline const struct tui_view_impl *tui_view(const struct tui *t)
{
	return tui_views[t->view];
}

/* The view whose rows search and filter act on: the one shown when it has
 * rows of its own, else the table. */
static inline const struct tui_view_impl *tui_view_rows(const struct tui *t)
{
	return tui_view(t)->search ? tui_view(t) : tui_views[VIEW_TABLE];
}

/* The view that refreshes and follows: the one shown, or the one under it
 * when it is an overlay. */
static inline const struct tui_view_impl *tui_view_under(const struct tui *t)
{
	return tui_view(t)->overlay ? tui_views[t->under] : tui_view(t);
}

/* table_view.c: the table's rows, which every view stands on. */
/* The header's lines: title, two meters, status. */
#define TABLE_HEADER_LINES 4
void table_view_rebuild(struct tui *t);
void table_view_header(struct tui *t);
void table_view_draw(struct tui *t);
/* Rows on the screen below the header; a page of the table. */
int table_view_visible_rows(const struct tui *t);
/* Move the selection by delta rows (group headers are stepped over). */
unsigned table_view_move(struct tui *t, long delta);
/* Sort by the next (dir 1) or previous (-1) column, or again (0). */
unsigned table_view_sort(struct tui *t, int dir);

/* detail_view.c: the selection moved to another coroutine, whose detail
 * opens at its top. */
void detail_view_forget(struct tui *t);

/* hot_view.c, for the detail view and the export key (x, any view). */
/* "leaf <- caller <- ..." by function name, into b. */
void hot_view_stack_line(struct tui *t, const struct engine_hot_stack *s,
			 char *b, size_t n);
unsigned hot_view_export(struct tui *t);

/* Colour pairs; 0 when colours are off. */
enum tui_pair {
	PAIR_HEADER = 1,
	PAIR_TITLE,
	PAIR_RUNNING,
	PAIR_DEAD,
	PAIR_WARN,
	PAIR_SELECTED,
	PAIR_METER,
	PAIR_GROUP,
};
/* A_NORMAL as a plain int, for attribute expressions. */
#define TUI_NORMAL ((int)A_NORMAL)
int tui_attr(const struct tui *t, enum tui_pair p);

#endif
