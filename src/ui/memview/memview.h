/*
 * cray_view: the interactive memory view of a Cacheray trace (corotop
 * --cacheray FILE on a terminal): totals, then four tabs -- false-sharing
 * suspects, hot lines, types with their members, threads -- refreshed
 * while the trace is read.  Its own curses screen and libev loop; the
 * coroutine TUI (tui.h) is not involved.
 *
 * Layers, one per file:
 *   cray_source.c  the input: open, check, read by budget, state
 *   cray_snap.c    copies of the reader's counts, taken per refresh
 *   memview_rows.c the tabs' column tables, rows, sorting, cells
 *   memview_keys.c the key table (dispatch and help)
 *   memview.c      loop, terminal setup and restore, actions
 *   ui/term/       the curses terminal, text, the list cursor and scroll,
 *                  the column layout, key draining (shared with the
 *                  coroutine TUI)
 *   memview_draw.c the screen: header, tabs, table, byte map, help, bar
 */
#ifndef COROTOP_CRAY_VIEW_H
#define COROTOP_CRAY_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ui/memview/memview_keys.h"
#include "ui/memview/memview_rows.h"
#include "engine/cacheray/cray_snap.h"
#include "engine/cacheray/cray_source.h"
#include "ui/term/keys.h"
#include "ui/term/list.h"

struct cray_view_options {
	unsigned delay_tenths; /* refresh interval (>= 1) */
	bool color;	       /* false: monochrome (-C); NO_COLOR also */
	bool mouse;
};

/*
 * Show the trace at path ("-": stdin; a FIFO is read as it is written)
 * until the user quits or a signal ends it; the terminal is restored on
 * every way out.  Returns corotop's exit code: 0 after q (whatever the
 * trace held: the screen said it), 1 when the trace or the terminal could
 * not be opened, 2 when path is a directory or a terminal, 128+N after
 * signal N.  Messages for those go to stderr.
 */
int cray_view_run(const char *path, const struct cray_view_options *opt);

/* ---- shared by memview.c and memview_draw.c ---- */

/* What an action or a watcher asks of the loop; nothing else draws.  The
 * terminal's reactions (term/keys.h), named for this view. */
enum cray_reaction {
	CRAY_REDRAW = TERM_REDRAW,   /* draw the screen */
	CRAY_REBUILD = TERM_REBUILD, /* rows again from the snapshot */
	CRAY_REFRESH = TERM_REFRESH, /* a new snapshot (not while paused) */
	CRAY_QUIT = TERM_QUIT,
};

struct cray_view {
	struct cray_view_options opt;
	struct cray_source src;
	struct cray_snap snap;
	struct cray_rows rows;
	bool have_snap;
	uint64_t snap_got; /* src.got when the snapshot was taken */
	enum cray_tab tab;
	struct term_list list[CRAY_TAB_COUNT]; /* cursor and scroll per tab */
	uint64_t sel_key[CRAY_TAB_COUNT];
	bool have_sel[CRAY_TAB_COUNT];
	bool help;
	int help_top;
	bool paused;
	bool typing;	 /* the search line is open */
	char line[64];	 /* ... as typed */
	char search[64]; /* in effect, lowercased */
	char message[160];
	/* Rate: records at the last refresh tick, and the rate since the
	 * one before (-1: not known yet). */
	uint64_t tick_ns, tick_records;
	double rate;
	/* Layout, as last drawn (actions page and click by it). */
	int first_row, nvisible;
	int tab_x[CRAY_TAB_COUNT + 1];
	bool color, ascii;
	int lines, cols;
	unsigned dirty;
	int exit_status;
};

/* Colour pairs (the same colours as the coroutine TUI's). */
enum cray_pair {
	CRAY_PAIR_HEADER = 1,
	CRAY_PAIR_TITLE,
	CRAY_PAIR_GOOD,
	CRAY_PAIR_DIM,
	CRAY_PAIR_WARN,
	CRAY_PAIR_SELECTED,
	CRAY_PAIR_METER,
};

/* memview_draw.c */
int cray_attr(const struct cray_view *v, enum cray_pair p);
void cray_draw(struct cray_view *v);

#endif
