/*
 * output_view: what the launched target printed (o).  Its stdout and
 * stderr come through a pty corotop owns (engine/launch/output.c), so they
 * never draw over the table; this view shows the last OUTPUT_LINES lines,
 * as a pager that follows the end as `tail -f` does until it is scrolled
 * up, and follows again at End.  It reads them through the engine's
 * facade (engine_output_lines), on the loop's thread, which drains them.  The
 * header counts the lines not yet seen here (table_view_header).
 */
#include <curses.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ui/tui/tui.h"

/* The pager: the first line shown, unless following the end. */
struct output_view {
	uint64_t top;
	bool follow;
};

static struct output_view *output_of(const struct tui *t)
{
	return t->view_state[VIEW_OUTPUT];
}

static void *output_view_create(struct tui *t)
{
	struct output_view *v = calloc(1, sizeof(*v));

	(void)t;
	if (v)
		v->follow = true;
	return v;
}

static void output_view_destroy(void *state)
{
	free(state);
}

/* Rows for lines: below the title, above the key bar. */
static int output_rows(const struct tui *t)
{
	int n = t->lines - TABLE_HEADER_LINES - 2;

	return n > 0 ? n : 0;
}

/* Lines shown: the kept ones, and the line being written when there is
 * one. */
static uint64_t output_end(const struct engine_output_lines *o)
{
	return o->total + (o->partial ? 1 : 0);
}

/* The first line shown: pinned to the end when following, and never
 * before the oldest line kept or past the last page. */
static uint64_t output_top(const struct tui *t,
			   const struct engine_output_lines *o)
{
	struct output_view *v = output_of(t);
	uint64_t end = output_end(o), rows = (uint64_t)output_rows(t);
	uint64_t last = end > rows ? end - rows : 0;

	if (last < o->first)
		last = o->first;
	if (v->follow || v->top > last)
		v->top = last;
	if (v->top < o->first)
		v->top = o->first;
	return v->top;
}

/* One line as the terminal can show it: without UTF-8, '?' for every
 * byte above 0x7e. */
static void output_draw_line(const struct tui *t, int y, const char *s)
{
	char buf[ENGINE_OUTPUT_LINE_MAX + 1];
	size_t i = 0;

	if (!t->ascii) {
		term_text(y, 0, A_NORMAL, "%.*s", ENGINE_OUTPUT_LINE_MAX, s);
		return;
	}
	for (; s[i] && i < ENGINE_OUTPUT_LINE_MAX; i++)
		buf[i] = (unsigned char)s[i] > 0x7e ? '?' : s[i];
	buf[i] = '\0';
	term_text(y, 0, A_NORMAL, "%s", buf);
}

static void output_view_draw(struct tui *t)
{
	struct engine_output_lines ol, *o = &ol;
	int y = TABLE_HEADER_LINES, rows = output_rows(t);
	int title = tui_attr(t, PAIR_TITLE);
	uint64_t top, end;

	engine_output_lines(t->engine, o);
	term_fill(y, title);
	if (!o->on) {
		term_text(y, 0, title, " Output");
		term_text(y + 1, 1, A_NORMAL, "%s",
			  "corotop did not start this program, so its output "
			  "is not corotop's to show.");
		term_text(t->lines - 1, 0, A_NORMAL, "Esc back   q quit");
		return;
	}
	top = output_top(t, o);
	end = output_end(o);
	term_text(y, 0, title, " Output of the target  %" PRIu64 " line%s%s%s",
		  o->total, o->total == 1 ? "" : "s",
		  o->first ? " (older ones dropped)" : "",
		  output_of(t)->follow ? "  following"
				       : "  scrolled (End follows)");
	if (o->file_error[0])
		term_text(y, t->cols / 2, title | A_BOLD, " %s", o->file_error);
	y++;
	if (end == o->first)
		term_text(y, 1, A_DIM, "%s",
			  o->ended ? "the target printed nothing"
				   : "nothing printed yet");
	for (int i = 0; i < rows && top + (uint64_t)i < end; i++)
		output_draw_line(
			t, y + i,
			engine_output_line(t->engine, top + (uint64_t)i));
	if (o->ended && end > o->first && top + (uint64_t)rows > end &&
	    y + (int)(end - top) < t->lines - 1)
		term_text(y + (int)(end - top), 1, A_DIM, "%s",
			  "-- end of output --");
	t->output_seen = o->total;
	term_text(t->lines - 1, 0, A_NORMAL, "%s",
		  "Esc back   Up/Down PgUp/PgDn Home scroll   End follow   "
		  "F10 quit");
}

static int output_view_action(struct tui *t, enum tui_action a, int page)
{
	struct output_view *v = output_of(t);
	enum term_motion m = keymap_motion(a);
	long rows = output_rows(t), step;
	struct engine_output_lines o;
	uint64_t top, end, last;

	(void)page;
	if (m == TERM_MOTION_NONE)
		return -1;
	engine_output_lines(t->engine, &o);
	if (!o.on)
		return REACT_NONE;
	top = output_top(t, &o);
	end = output_end(&o);
	last = end > (uint64_t)rows ? end - (uint64_t)rows : 0;
	step = term_motion_step(m, term_list_page((int)rows), (long)end);
	if (step < 0 && (uint64_t)-step > top)
		top = 0;
	else
		top = (uint64_t)((long)top + step);
	v->top = top < o.first ? o.first : top;
	/* Down to the end follows again, as less +F does. */
	v->follow = v->top >= last;
	return REACT_REDRAW;
}

static unsigned output_view_mouse(struct tui *t, const MEVENT *ev)
{
	if (ev->bstate & BUTTON4_PRESSED)
		return (unsigned)output_view_action(t, ACT_UP, 0) |
		       (unsigned)output_view_action(t, ACT_UP, 0) |
		       (unsigned)output_view_action(t, ACT_UP, 0);
	if (ev->bstate & BUTTON5_PRESSED)
		return (unsigned)output_view_action(t, ACT_DOWN, 0) |
		       (unsigned)output_view_action(t, ACT_DOWN, 0) |
		       (unsigned)output_view_action(t, ACT_DOWN, 0);
	return REACT_NONE;
}

const struct tui_view_impl output_view_impl = {
	.name = "output",
	.opens = ACT_OUTPUT,
	.create = output_view_create,
	.destroy = output_view_destroy,
	.draw = output_view_draw,
	.action = output_view_action,
	.mouse = output_view_mouse,
};
