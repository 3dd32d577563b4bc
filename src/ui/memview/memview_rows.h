/*
 * memview_rows: the rows a tab of the memory view shows from a snapshot:
 * sorted by the chosen column, types followed by the member rows of those
 * the user opened; their cells' text and keys.  No curses: the view lays
 * the cells out.  See memview_rows.c.
 */
#ifndef COROTOP_MEMVIEW_ROWS_H
#define COROTOP_MEMVIEW_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cacheray/cray_snap.h"
#include "ui/memview/memview_tabs.h"

struct memview_rows {
	const struct cray_snap *snap;
	enum memview_tab tab;
	bool ascii; /* open/closed markers without UTF-8 */
	int sort[MEMVIEW_TAB_COUNT];
	bool invert[MEMVIEW_TAB_COUNT];
	uint8_t *open; /* bit per reader type index: members shown */
	size_t open_bits;
	struct memview_row *row;
	size_t nrows, cap;
	uint32_t *idx, *tmp; /* the sort's scratch */
	size_t cap_idx;
};

/* The line of a row of a line tab (False sharing, Hot lines). */
static inline const struct cacheray_line *
memview_rows_line(const struct memview_rows *r, const struct memview_row *row)
{
	return &r->snap->lines[r->tab == MEMVIEW_TAB_SHARING][row->item];
}

void memview_rows_init(struct memview_rows *r);
void memview_rows_finish(struct memview_rows *r);

/* The rows of tab from snap (which must outlive them).  False when out of
 * memory (no rows then). */
bool memview_rows_build(struct memview_rows *r, const struct cray_snap *snap,
			enum memview_tab tab);

/* The next (dir 1) or previous (-1) sortable column of the current tab;
 * dir 0 keeps the column.  The caller rebuilds. */
void memview_rows_sort(struct memview_rows *r, int dir);

/* Types: whether the members of reader type index are shown; set. */
bool memview_rows_is_open(const struct memview_rows *r, uint32_t index);
bool memview_rows_set_open(struct memview_rows *r, uint32_t index, bool open);

/* The reader type index of a Types row (its type's, for a member row);
 * UINT32_MAX for other tabs. */
uint32_t memview_rows_type(const struct memview_rows *r, size_t i);
/* Whether a Types row's type has anything to open (not "(untyped)"). */
bool memview_rows_openable(const struct memview_rows *r, size_t i);

/* The text of row i's cell in column col. */
void memview_rows_cell(const struct memview_rows *r, size_t i, int col, char *b,
		       size_t n);

/* A key that names row i across rebuilds (line address, type and member,
 * thread), and the row with that key (SIZE_MAX: gone). */
uint64_t memview_rows_key(const struct memview_rows *r, size_t i);
size_t memview_rows_find(const struct memview_rows *r, uint64_t key);

/* Whether any cell of row i contains needle (lowercase), ignoring case. */
bool memview_rows_match(const struct memview_rows *r, size_t i,
			const char *needle);

#endif
