/*
 * keys: draining the terminal's keys for a view.
 *
 * curses is non-blocking here (term_init: nodelay), and the loop is woken
 * by the terminal's fd becoming readable; one wakeup may bring a burst of
 * keys (a paste, a key held down, the bytes of an escape sequence).  All
 * of them are read in one go.  Rows are rebuilt between two keys when the
 * first asked for it, so that the second moves over the rows the first
 * made; the screen is drawn once, after the loop pass.
 */
#include "ui/term/keys.h"

#include <curses.h>

unsigned term_keys_drain(const struct term_keys *k, void *ctx, unsigned dirty)
{
	int key;

	while ((key = getch()) != ERR) {
		dirty |= k->key(ctx, key);
		if (dirty & TERM_REBUILD) {
			k->rebuild(ctx);
			dirty = (dirty & ~(unsigned)TERM_REBUILD) | TERM_REDRAW;
		}
	}
	return dirty;
}
