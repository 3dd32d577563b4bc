/*
 * memview_tabs: the memory view's four tabs, each a const table of columns
 * (title, width, priority, sort order, cell, help): adding a column is an
 * entry and a cell function.
 *
 *   False sharing  lines written by one thread and touched by another,
 *                  most accessed first: where the accesses fall (one
 *                  element, different elements, different regions),
 *                  whether the two threads' bytes are disjoint (false
 *                  sharing proper) or overlap (maybe true sharing), the
 *                  threads ("(w)": wrote; "+": more threads than the two
 *                  the reader keeps per line) and the types seen on it;
 *   Hot lines      the most accessed 64-byte lines, the same columns but
 *                  the bytes verdict;
 *   Types          per type: accesses, reads, writes, element size, RTTA
 *                  regions; an opened type is followed by its member rows
 *                  (one per offset within the element that was accessed);
 *   Threads        per thread id: accesses, reads, writes, share.
 *
 * Typenames come from the trace and may hold any byte: cells show bytes
 * outside printable ASCII as '?', as the batch report does.
 */
#define _GNU_SOURCE
#include "ui/memview/memview_tabs.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ui/memview/memview_rows.h"

/* A typename as text: cut at max with "...", n > max + 3. */
static void memview_tabs_name(char *b, size_t n, const char *s, size_t len,
			      size_t max)
{
	size_t o = 0;

	for (size_t i = 0; i < len && i < max && o + 1 < n; i++)
		b[o++] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	if (len > max && o + 4 <= n) {
		memcpy(b + o, "...", 3);
		o += 3;
	}
	if (n)
		b[o < n ? o : n - 1] = '\0';
}

/* ---- items ---- */

static const struct cray_type_copy *row_type(const struct memview_rows *r,
					     const struct memview_row *row)
{
	return &r->snap->types[row->item];
}

static const struct cray_member_copy *row_member(const struct memview_rows *r,
						 const struct memview_row *row)
{
	return row->member == MEMVIEW_ROW_ITEM ? NULL
					       : &r->snap->members[row->member];
}

static const struct cray_thread_copy *row_thread(const struct memview_rows *r,
						 const struct memview_row *row)
{
	return &r->snap->threads[row->item];
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

/* ---- lines ---- */

static int line_addr_cmp(const void *a, const void *b)
{
	const struct cacheray_line *x = a, *y = b;

	return cmp_u64(x->addr, y->addr);
}

static int line_acc_cmp(const void *a, const void *b)
{
	const struct cacheray_line *x = a, *y = b;

	return cmp_u64(x->reads + x->writes, y->reads + y->writes);
}

static int line_reads_cmp(const void *a, const void *b)
{
	const struct cacheray_line *x = a, *y = b;

	return cmp_u64(x->reads, y->reads);
}

static int line_writes_cmp(const void *a, const void *b)
{
	const struct cacheray_line *x = a, *y = b;

	return cmp_u64(x->writes, y->writes);
}

static void line_addr(const struct memview_rows *r,
		      const struct memview_row *row, char *b, size_t n)
{
	snprintf(b, n, "0x%" PRIx64, memview_rows_line(r, row)->addr);
}

static void line_acc(const struct memview_rows *r,
		     const struct memview_row *row, char *b, size_t n)
{
	const struct cacheray_line *l = memview_rows_line(r, row);

	snprintf(b, n, "%" PRIu64, l->reads + l->writes);
}

static void line_reads(const struct memview_rows *r,
		       const struct memview_row *row, char *b, size_t n)
{
	snprintf(b, n, "%" PRIu64, memview_rows_line(r, row)->reads);
}

static void line_writes(const struct memview_rows *r,
			const struct memview_row *row, char *b, size_t n)
{
	snprintf(b, n, "%" PRIu64, memview_rows_line(r, row)->writes);
}

static void line_layout(const struct memview_rows *r,
			const struct memview_row *row, char *b, size_t n)
{
	snprintf(b, n, "%s",
		 cacheray_layout_text(memview_rows_line(r, row)->layout));
}

static void line_bytes(const struct memview_rows *r,
		       const struct memview_row *row, char *b, size_t n)
{
	const struct cacheray_line *l = memview_rows_line(r, row);

	snprintf(b, n, "%s",
		 l->nthreads < 2   ? "-"
		 : l->more_threads ? "unknown"
		 : l->disjoint	   ? "disjoint"
				   : "overlap");
}

static void line_threads(const struct memview_rows *r,
			 const struct memview_row *row, char *b, size_t n)
{
	const struct cacheray_line *l = memview_rows_line(r, row);
	size_t o = 0;

	b[0] = '\0';
	for (unsigned s = 0; s < l->nthreads && o < n; s++) {
		if (l->thread[s].t->other)
			o += (size_t)snprintf(b + o, n - o, "%sother",
					      s ? "," : "");
		else
			o += (size_t)snprintf(b + o, n - o, "%s%" PRIu64,
					      s ? "," : "", l->thread[s].t->id);
		if (l->thread[s].wrote && o < n)
			o += (size_t)snprintf(b + o, n - o, "(w)");
	}
	if (l->more_threads && o < n)
		snprintf(b + o, n - o, "%s",
			 l->more_threads_wrote ? ",+(w)" : ",+");
}

static void line_types(const struct memview_rows *r,
		       const struct memview_row *row, char *b, size_t n)
{
	const struct cacheray_line *l = memview_rows_line(r, row);
	size_t o = 0;

	b[0] = '\0';
	for (unsigned s = 0; s < l->ntypes && o + 1 < n; s++) {
		if (s)
			b[o++] = ',';
		memview_tabs_name(b + o, n - o, l->type[s]->name,
				  l->type[s]->name_len, 60);
		o += strlen(b + o);
	}
	if (l->more_types && o + 5 <= n)
		memcpy(b + o, ",...", 5);
}

/* The columns both line tabs show, each written once; the tables below
 * list them (the hot lines have no BYTES verdict).  On a narrow screen
 * LAYOUT goes first; then, on False sharing, TYPES (prio): what the
 * suspects are about is which threads touch which bytes. */
#define LINE_COL_ADDR                                                          \
	{                                                                      \
		.title = "LINE", .width = 14, .left = true, .priority = 0,     \
		.cmp = line_addr_cmp, .cell = line_addr,                       \
		.help = "the 64-byte cache line (its first address)"           \
	}
#define LINE_COL_ACC                                                           \
	{                                                                      \
		.title = "ACCESSES", .width = 9, .priority = 0, .desc = true,  \
		.cmp = line_acc_cmp, .cell = line_acc,                         \
		.help = "reads and writes on the line"                         \
	}
#define LINE_COL_READS                                                         \
	{                                                                      \
		.title = "READS", .width = 8, .priority = 1, .desc = true,     \
		.cmp = line_reads_cmp, .cell = line_reads,                     \
		.help = "reads on the line"                                    \
	}
#define LINE_COL_WRITES                                                        \
	{                                                                      \
		.title = "WRITES", .width = 8, .priority = 1, .desc = true,    \
		.cmp = line_writes_cmp, .cell = line_writes,                   \
		.help = "writes on the line"                                   \
	}
#define LINE_COL_LAYOUT                                                        \
	{                                                                      \
		.title = "LAYOUT", .width = 13, .left = true, .priority = 4,   \
		.cell = line_layout,                                           \
		.help = "one-element, diff-elements (of one region), "         \
			"diff-regions, untyped"                                \
	}
#define LINE_COL_THREADS                                                       \
	{                                                                      \
		.title = "THREADS", .width = 14, .left = true, .priority = 2,  \
		.cell = line_threads,                                          \
		.help = "thread ids on the line, (w): wrote; +: more threads"  \
	}
#define LINE_COL_TYPES(prio)                                                   \
	{                                                                      \
		.title = "TYPES", .width = -1, .left = true, .priority = prio, \
		.cell = line_types,                                            \
		.help = "the types seen on the line (... more)"                \
	}

static const struct memview_column sharing_cols[] = {
	LINE_COL_ADDR,
	LINE_COL_ACC,
	LINE_COL_READS,
	LINE_COL_WRITES,
	LINE_COL_LAYOUT,
	{.title = "BYTES",
	 .width = 8,
	 .left = true,
	 .priority = 2,
	 .cell = line_bytes,
	 .help = "the two threads' bytes: disjoint (false sharing) or overlap"},
	LINE_COL_THREADS,
	LINE_COL_TYPES(3),
};

static const struct memview_column hot_cols[] = {
	LINE_COL_ADDR,	 LINE_COL_ACC,	   LINE_COL_READS,    LINE_COL_WRITES,
	LINE_COL_LAYOUT, LINE_COL_THREADS, LINE_COL_TYPES(0),
};

/* ---- types ---- */

static uint64_t type_acc(const struct cray_type_copy *t)
{
	return t->n[0] + t->n[1];
}

static int type_acc_cmp(const void *a, const void *b)
{
	return cmp_u64(type_acc(a), type_acc(b));
}

static int type_reads_cmp(const void *a, const void *b)
{
	const struct cray_type_copy *x = a, *y = b;

	return cmp_u64(x->n[0], y->n[0]);
}

static int type_writes_cmp(const void *a, const void *b)
{
	const struct cray_type_copy *x = a, *y = b;

	return cmp_u64(x->n[1], y->n[1]);
}

static int type_size_cmp(const void *a, const void *b)
{
	const struct cray_type_copy *x = a, *y = b;

	return cmp_u64(x->elemsize, y->elemsize);
}

static int type_regions_cmp(const void *a, const void *b)
{
	const struct cray_type_copy *x = a, *y = b;

	return cmp_u64(x->regions, y->regions);
}

static int type_name_cmp(const void *a, const void *b)
{
	const struct cray_type_copy *x = a, *y = b;
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);

	return c ? c : cmp_u64(x->name_len, y->name_len);
}

static void type_n(const struct memview_rows *r, const struct memview_row *row,
		   int which, char *b, size_t n)
{
	const struct cray_member_copy *m = row_member(r, row);
	const uint64_t *v = m ? m->n : row_type(r, row)->n;

	if (m && m->offset == CRAY_SNAP_NO_MEMBERS)
		b[0] = '\0';
	else if (which < 0)
		snprintf(b, n, "%" PRIu64, v[0] + v[1]);
	else
		snprintf(b, n, "%" PRIu64, v[which]);
}

static void type_acc_cell(const struct memview_rows *r,
			  const struct memview_row *row, char *b, size_t n)
{
	type_n(r, row, -1, b, n);
}

static void type_reads_cell(const struct memview_rows *r,
			    const struct memview_row *row, char *b, size_t n)
{
	type_n(r, row, 0, b, n);
}

static void type_writes_cell(const struct memview_rows *r,
			     const struct memview_row *row, char *b, size_t n)
{
	type_n(r, row, 1, b, n);
}

static void type_size_cell(const struct memview_rows *r,
			   const struct memview_row *row, char *b, size_t n)
{
	const struct cray_type_copy *t = row_type(r, row);

	if (row_member(r, row) || t->special)
		b[0] = '\0';
	else
		snprintf(b, n, "%" PRIu32, t->elemsize);
}

static void type_regions_cell(const struct memview_rows *r,
			      const struct memview_row *row, char *b, size_t n)
{
	const struct cray_type_copy *t = row_type(r, row);

	if (row_member(r, row) || t->special)
		b[0] = '\0';
	else
		snprintf(b, n, "%" PRIu64, t->regions);
}

static void type_name_cell(const struct memview_rows *r,
			   const struct memview_row *row, char *b, size_t n)
{
	const struct cray_type_copy *t = row_type(r, row);
	const struct cray_member_copy *m = row_member(r, row);
	const char *mark;

	if (m && m->offset == CRAY_SNAP_NO_MEMBERS) {
		snprintf(b, n,
			 "    (no member counts: element over %d bytes "
			 "or the counter budget spent)",
			 CACHERAY_MEMBER_MAX);
		return;
	}
	if (m) {
		snprintf(b, n, "    +%" PRIu32, m->offset);
		return;
	}
	mark = t->special ? " "
	       : memview_rows_is_open(r, t->index)
		       ? (r->ascii ? "-" : "\u25be")
		       : (r->ascii ? "+" : "\u25b8");
	snprintf(b, n, "%s ", mark);
	memview_tabs_name(b + strlen(b), n - strlen(b), t->name, t->name_len,
			  200);
}

static const struct memview_column types_cols[] = {
	{.title = "ACCESSES",
	 .width = 10,
	 .priority = 0,
	 .desc = true,
	 .cmp = type_acc_cmp,
	 .cell = type_acc_cell,
	 .help = "reads and writes in regions of the type (member: at the "
		 "offset)"},
	{.title = "READS",
	 .width = 10,
	 .priority = 1,
	 .desc = true,
	 .cmp = type_reads_cmp,
	 .cell = type_reads_cell,
	 .help = "reads"},
	{.title = "WRITES",
	 .width = 10,
	 .priority = 1,
	 .desc = true,
	 .cmp = type_writes_cmp,
	 .cell = type_writes_cell,
	 .help = "writes"},
	{.title = "ELEMSIZE",
	 .width = 8,
	 .priority = 2,
	 .desc = true,
	 .cmp = type_size_cmp,
	 .cell = type_size_cell,
	 .help = "element size in bytes (RTTA elemsize)"},
	{.title = "REGIONS",
	 .width = 8,
	 .priority = 2,
	 .desc = true,
	 .cmp = type_regions_cmp,
	 .cell = type_regions_cell,
	 .help = "RTTA regions added with the type"},
	{.title = "NAME",
	 .width = -1,
	 .left = true,
	 .priority = 0,
	 .cmp = type_name_cmp,
	 .cell = type_name_cell,
	 .help = "typename; an opened type lists +OFFSET rows (its members)"},
};

/* ---- threads ---- */

static int thread_id_cmp(const void *a, const void *b)
{
	const struct cray_thread_copy *x = a, *y = b;

	if (x->other != y->other)
		return x->other ? 1 : -1;
	return cmp_u64(x->id, y->id);
}

static int thread_acc_cmp(const void *a, const void *b)
{
	const struct cray_thread_copy *x = a, *y = b;

	return cmp_u64(x->n[0] + x->n[1], y->n[0] + y->n[1]);
}

static int thread_reads_cmp(const void *a, const void *b)
{
	const struct cray_thread_copy *x = a, *y = b;

	return cmp_u64(x->n[0], y->n[0]);
}

static int thread_writes_cmp(const void *a, const void *b)
{
	const struct cray_thread_copy *x = a, *y = b;

	return cmp_u64(x->n[1], y->n[1]);
}

static void thread_id_cell(const struct memview_rows *r,
			   const struct memview_row *row, char *b, size_t n)
{
	const struct cray_thread_copy *t = row_thread(r, row);

	if (t->other)
		snprintf(b, n, "(other threads)");
	else
		snprintf(b, n, "%" PRIu64, t->id);
}

static void thread_acc_cell(const struct memview_rows *r,
			    const struct memview_row *row, char *b, size_t n)
{
	const struct cray_thread_copy *t = row_thread(r, row);

	snprintf(b, n, "%" PRIu64, t->n[0] + t->n[1]);
}

static void thread_reads_cell(const struct memview_rows *r,
			      const struct memview_row *row, char *b, size_t n)
{
	snprintf(b, n, "%" PRIu64, row_thread(r, row)->n[0]);
}

static void thread_writes_cell(const struct memview_rows *r,
			       const struct memview_row *row, char *b, size_t n)
{
	snprintf(b, n, "%" PRIu64, row_thread(r, row)->n[1]);
}

static void thread_share_cell(const struct memview_rows *r,
			      const struct memview_row *row, char *b, size_t n)
{
	const struct cray_thread_copy *t = row_thread(r, row);
	uint64_t all = r->snap->tot.accesses;

	snprintf(b, n, "%.1f",
		 all ? 100.0 * (double)(t->n[0] + t->n[1]) / (double)all : 0.0);
}

static const struct memview_column threads_cols[] = {
	{.title = "THREAD",
	 .width = 20,
	 .left = true,
	 .priority = 0,
	 .cmp = thread_id_cmp,
	 .cell = thread_id_cell,
	 .help = "thread id as the trace records it"},
	{.title = "ACCESSES",
	 .width = 12,
	 .priority = 0,
	 .desc = true,
	 .cmp = thread_acc_cmp,
	 .cell = thread_acc_cell,
	 .help = "reads and writes by the thread"},
	{.title = "READS",
	 .width = 12,
	 .priority = 1,
	 .desc = true,
	 .cmp = thread_reads_cmp,
	 .cell = thread_reads_cell,
	 .help = "reads"},
	{.title = "WRITES",
	 .width = 12,
	 .priority = 1,
	 .desc = true,
	 .cmp = thread_writes_cmp,
	 .cell = thread_writes_cell,
	 .help = "writes"},
	{.title = "SHARE%",
	 .width = 7,
	 .priority = 2,
	 .desc = true,
	 .cell = thread_share_cell,
	 .help = "the thread's part of all accesses"},
};

#define MEMVIEW_COLS(a) .cols = a, .ncols = (int)(sizeof(a) / sizeof(a[0]))

void memview_tabs_layout(const struct memview_tab_impl *t, int cols,
			 struct term_layout *lay)
{
	struct term_layout_column col[TERM_LAYOUT_MAX];
	int n = t->ncols < TERM_LAYOUT_MAX ? t->ncols : TERM_LAYOUT_MAX;

	for (int c = 0; c < n; c++)
		col[c] = (struct term_layout_column){
			.width = t->cols[c].width,
			.priority = t->cols[c].priority,
		};
	term_layout(lay, col, n, cols);
}

const struct memview_tab_impl memview_tabs[MEMVIEW_TAB_COUNT] = {
	[MEMVIEW_TAB_SHARING] =
		{.name = "False sharing",
		 MEMVIEW_COLS(sharing_cols),
		 .sort = 1,
		 .empty = "No false-sharing suspect: no line was "
			  "written by one thread and touched by "
			  "another."},
	[MEMVIEW_TAB_HOT] = {.name = "Hot lines",
			     MEMVIEW_COLS(hot_cols),
			     .sort = 1,
			     .empty = "No accesses yet."},
	[MEMVIEW_TAB_TYPES] = {.name = "Types",
			       MEMVIEW_COLS(types_cols),
			       .sort = 0,
			       .empty = "No accesses and no RTTA regions yet."},
	[MEMVIEW_TAB_THREADS] = {.name = "Threads",
				 MEMVIEW_COLS(threads_cols),
				 .sort = 1,
				 .empty = "No accesses yet."},
};
