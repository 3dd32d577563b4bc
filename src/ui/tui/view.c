/*
 * view: the list of views, and moving between them.
 *
 * Views move in two ways.  An action that opens a view (its `opens`)
 * toggles it: shown from anywhere, and a second press goes back to the
 * table.  A view may also show another itself (Enter on a table row shows
 * the detail view; Esc shows the table).  Either way the open callback of
 * the view shown runs, so that a view opened afresh (hot stacks, ppt
 * frames) refreshes its copies first and help remembers what it covers.
 */
#include "ui/tui/view.h"

#include <stdlib.h>

#include "ui/tui/tui.h"

const struct tui_view_impl *const tui_views[TUI_VIEW_COUNT] = {
	[VIEW_TABLE] = &table_view_impl, [VIEW_DETAIL] = &detail_view_impl,
	[VIEW_HELP] = &help_view_impl,	 [VIEW_WARNINGS] = &warn_view_impl,
	[VIEW_SETUP] = &setup_view_impl, [VIEW_HOT] = &hot_view_impl,
	[VIEW_PPT] = &ppt_view_impl,	 [VIEW_OUTPUT] = &output_view_impl,
};

unsigned tui_view_show(struct tui *t, enum tui_view v)
{
	enum tui_view from = t->view;

	t->view = v;
	if (tui_views[v]->open)
		tui_views[v]->open(t, from);
	return REACT_REDRAW;
}

unsigned tui_view_back(struct tui *t)
{
	t->view = t->under;
	return REACT_REDRAW;
}

unsigned tui_view_toggle(struct tui *t, enum tui_view v)
{
	return tui_view_show(t, t->view == v ? VIEW_TABLE : v);
}

int tui_view_opened_by(enum tui_action a)
{
	for (int v = 0; a != ACT_NONE && v < TUI_VIEW_COUNT; v++)
		if (tui_views[v]->opens == a)
			return v;
	return -1;
}

bool tui_views_create(struct tui *t)
{
	for (int v = 0; v < TUI_VIEW_COUNT; v++) {
		if (!tui_views[v]->create)
			continue;
		t->view_state[v] = tui_views[v]->create(t);
		if (!t->view_state[v]) {
			tui_views_destroy(t);
			return false;
		}
	}
	return true;
}

void tui_views_destroy(struct tui *t)
{
	for (int v = 0; v < TUI_VIEW_COUNT; v++) {
		if (t->view_state[v] && tui_views[v]->destroy)
			tui_views[v]->destroy(t->view_state[v]);
		t->view_state[v] = NULL;
	}
}
