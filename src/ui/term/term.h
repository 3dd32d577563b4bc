/*
 * term: the curses terminal as both interactive views set it up -- the
 * coroutine TUI (tui.c) and the memory view (memview.c).  See term.c.
 *
 * Order of use:
 *   term_prepare   before the screen exists: locale, escape delay
 *   (the view makes its screen: initscr, or newterm on another tty)
 *   term_init      restore hooks, input modes, mouse
 *   term_colors    the view's colour pairs, from its const table
 *   term_size      the size, asked of the terminal (also on SIGWINCH)
 *   term_finish    restore the terminal (also done at exit or a crash)
 */
#ifndef COROTOP_TERM_H
#define COROTOP_TERM_H

#include <stdbool.h>
#include <stddef.h>

/* One colour pair: fg on bg (-1: the terminal's default colour); on a
 * terminal with 256 colours, fg256 replaces fg unless it is 0. */
struct term_pair {
	short pair;
	short fg, bg;
	short fg256;
};

/* The locale from the environment, and a 25 ms escape delay unless
 * ESCDELAY says otherwise.  Returns true when the codeset is not UTF-8:
 * the view then draws in ASCII only. */
bool term_prepare(void);

/* Once the view's screen exists: restore the terminal at exit and on a
 * crash (SIGSEGV, SIGABRT, SIGFPE, SIGILL), keys unbuffered and unechoed,
 * keypad on, getch non-blocking, no cursor; clicks and the wheel reported
 * when mouse is set. */
void term_init(bool mouse);

/* endwin, once: a no-op before term_init and after the first call. */
void term_finish(void);

/* The pairs of the table, unless want is false, the terminal has no
 * colours or NO_COLOR is set.  Returns whether colours are on. */
bool term_colors(bool want, const struct term_pair *pairs, size_t npairs);

/* The terminal's size into *lines and *cols, curses resized to it first
 * when it changed (and the screen marked for a full repaint). */
void term_size(int *lines, int *cols);

#endif
