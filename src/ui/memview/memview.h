/*
 * memview: the interactive memory view of a Cacheray trace (corotop
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
#ifndef COROTOP_MEMVIEW_H
#define COROTOP_MEMVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ui/memview/memview_keys.h"
#include "ui/memview/memview_rows.h"
#include "cacheray/cray_snap.h"
#include "cacheray/cray_source.h"
#include "ui/term/keys.h"
#include "ui/term/list.h"

struct memview_options {
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
int memview_run(const char *path, const struct memview_options *opt);

/* ---- shared by memview.c and memview_draw.c ---- */

/* What an action or a watcher asks of the loop; nothing else draws.  The
 * terminal's reactions (term/keys.h), named for this view. */
enum memview_reaction {
	MEMVIEW_REDRAW = TERM_REDRAW,	/* draw the screen */
	MEMVIEW_REBUILD = TERM_REBUILD, /* rows again from the snapshot */
	MEMVIEW_REFRESH = TERM_REFRESH, /* a new snapshot (not while paused) */
	MEMVIEW_QUIT = TERM_QUIT,
};

struct memview {
	struct memview_options opt;
	struct cray_source src;
	struct cray_snap snap;
	struct memview_rows rows;
	bool have_snap;
	uint64_t snap_got; /* src.got when the snapshot was taken */
	enum memview_tab tab;
	struct term_list
		list[MEMVIEW_TAB_COUNT]; /* cursor and scroll per tab */
	uint64_t sel_key[MEMVIEW_TAB_COUNT];
	bool have_sel[MEMVIEW_TAB_COUNT];
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
	int tab_x[MEMVIEW_TAB_COUNT + 1];
	bool color, ascii;
	int lines, cols;
	unsigned dirty;
	int exit_status;
};

/* Colour pairs (the same colours as the coroutine TUI's). */
enum memview_pair {
	MEMVIEW_PAIR_HEADER = 1,
	MEMVIEW_PAIR_TITLE,
	MEMVIEW_PAIR_GOOD,
	MEMVIEW_PAIR_DIM,
	MEMVIEW_PAIR_WARN,
	MEMVIEW_PAIR_SELECTED,
	MEMVIEW_PAIR_METER,
};

/* memview_draw.c */
int memview_attr(const struct memview *v, enum memview_pair p);
void memview_draw(struct memview *v);

#endif
