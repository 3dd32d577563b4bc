/*
 * tui: the interactive ncurses interface.  One libev loop on the UI thread;
 * callbacks only set dirty flags, and one render plus one doupdate() happen
 * per loop pass (an ev_prepare watcher).  The UI reads engine snapshots only.
 *
 * Layers, one per file:
 *   keymap.c       the binding table: key -> action, plus help notes
 *   tui.c          loop, terminal setup/restore, actions, input line
 *   term.c         the curses terminal (shared with the memory view)
 *   table_view.c   row selection (filter, sort, group) and the main table
 *   detail_view.c  one coroutine: its ring slots, timeline, percentiles
 *   help_view.c    keys and columns, drawn from the same tables
 *   hot_view.c     hot stacks (CallTrace): top list and caller tree
 */
#ifndef COROTOP_TUI_H
#define COROTOP_TUI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/ctp/lint.h"
#include "ui/rows/column.h"
#include "ui/rows/filter.h"
#include "ui/tui/keymap.h"
#include "ui/rows/order.h"
#include "ui/rows/pptfilter.h"
#include "ui/term/keys.h"
#include "ui/term/list.h"
#include "ui/term/text.h"

enum tui_view {
	VIEW_TABLE = 0,
	VIEW_DETAIL,
	VIEW_HELP,
	VIEW_WARNINGS,
	VIEW_SETUP,
	VIEW_HOT,
	VIEW_PPT,
};

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
};

/* The hot-stacks view's copies and cursor (hot_view.c). */
struct hot_ui {
	bool tree;	 /* the caller -> callee tree, not the top list */
	bool expand_all; /* nodes' state unless toggled (E / C) */
	struct engine_calltrace_stats stats;
	struct hot_stack *stacks; /* the top list, copied on refresh */
	size_t nstacks;
	struct hot_node *nodes; /* the tree, pre-order */
	size_t nnodes;
	uint64_t *path;	   /* per node: hash of the names from the root */
	uint32_t *visible; /* node index per tree row */
	size_t nvisible;
	uint64_t *toggled; /* paths whose open state is not expand_all */
	size_t ntoggled;
	struct term_list list;
	uint64_t selected_key; /* stack id (list) or path (tree) */
};

/* The ppt view's state (ppt_view.c): the buffers as of the last refresh,
 * a copy of the selected buffer's newest frames, the rows the filter keeps
 * (newest first), and its own filter and search. */
#define PPT_UI_BUFFERS 64
struct ppt_ui {
	struct engine_ppt_info info;
	struct engine_ppt_buffer bufs[PPT_UI_BUFFERS];
	size_t nbufs;
	size_t tab; /* the buffer shown */
	bool tab_set;
	/* The copy: a ring of cap frames, positions next - n .. next - 1. */
	unsigned char *bytes;
	struct pptagent_frame *meta;
	size_t cap, n;
	uint64_t next;	  /* engine position after the newest copied */
	uint64_t omitted; /* frames that went by faster than the copy */
	uint32_t *rows;	  /* ring slots, newest first */
	size_t nrows;
	struct term_list list;
	uint64_t selected_pos;
	struct pptfilter filter;
	char search[64]; /* lowercased */
};

/* One displayed line of the table: a coroutine or a thread group header. */
struct tui_row {
	uint32_t coro;	/* index into snap.coro, or UINT32_MAX for a header */
	uint64_t tid;	/* group headers: the thread */
	uint32_t count; /* group headers: coroutines in the group */
};

struct tui {
	struct engine *engine;
	struct tui_options opt;
	struct snapshot snap;
	bool have_snap;

	struct tui_row *rows;
	size_t nrows, cap_rows;
	uint32_t *idx;	       /* rebuild's scratch: filtered, then sorted */
	struct order order;    /* the sort's buffers */
	/* The table's cursor: a term_list, whose two fields bench/render.c
	 * also sets by name. */
	union {
		struct term_list list;
		struct {
			size_t selected; /* row index */
			size_t top;	 /* first row shown */
		};
	};
	uint64_t selected_id;  /* model id kept across refreshes */
	uint64_t watching;     /* model id whose history the engine keeps */

	enum tui_view view;
	enum tui_view back; /* where Esc goes from help */
	int sort_column;
	bool sort_invert;
	bool group_by_thread;
	bool paused;

	struct filter filter;
	char search[64]; /* lowercased */
	enum tui_input input;
	char line[128];	  /* input line being edited */
	char before[128]; /* the filter in effect when editing began */
	size_t line_len;
	char message[160]; /* one-shot status line */

	struct lint_config lints; /* as sent to the engine */
	bool hidden[COL_COUNT];
	int setup_item;
	int help_top; /* first help line shown (narrow, scrolled) */

	struct hot_ui hot;
	struct ppt_ui ppt;
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

/* table_view.c */
void table_view_rebuild(struct tui *t);
void table_view_draw(struct tui *t);
void table_view_header(struct tui *t);
int table_view_first_row(const struct tui *t);
int table_view_visible_rows(const struct tui *t);
/* Column under screen column x in the table header, or -1. */
int table_view_column_at(const struct tui *t, int x);
const struct model_coro *table_view_selected(const struct tui *t);
/* Move selection to the next (dir 1) or previous (-1) search match. */
bool table_view_search(struct tui *t, int dir, bool include_current);

/* detail_view.c / help_view.c */
void detail_view_draw(struct tui *t);
void help_view_draw(struct tui *t);
void warn_view_draw(struct tui *t);
void setup_view_draw(struct tui *t);
/* Keys while the setup screen is shown; returns reactions. */
unsigned setup_view_key(struct tui *t, int key);

/* hot_view.c */
void hot_view_refresh(struct tui *t);
void hot_view_draw(struct tui *t);
/* An action in the hot view: its reactions, or -1 when the action keeps
 * its table meaning.  page: rows per page. */
int hot_view_action(struct tui *t, enum tui_action a, int page);
unsigned hot_view_export(struct tui *t);
/* "leaf <- caller <- ..." by function name, into b. */
void hot_view_stack_line(struct tui *t, const struct hot_stack *s, char *b,
			 size_t n);
void hot_ui_finish(struct hot_ui *h);

/* ppt_view.c */
void ppt_view_refresh(struct tui *t);
void ppt_view_draw(struct tui *t);
/* An action in the ppt view: its reactions, or -1 for the default. */
int ppt_view_action(struct tui *t, enum tui_action a, int page);
/* The search/filter line while the ppt view is shown. */
void ppt_view_search(struct tui *t, int dir, bool include_current);
bool ppt_view_filter(struct tui *t, const char *text, char *err, size_t errlen);
void ppt_ui_finish(struct ppt_ui *p);

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
