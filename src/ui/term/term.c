/*
 * term: the one curses terminal of the process, shared by the two
 * interactive views (the coroutine TUI and the memory view).  Everything
 * about it is the same for both but the screen itself: the TUI calls
 * initscr, the memory view newterm on the terminal its keys come from (the
 * trace may be on stdin), so each view makes its screen between
 * term_prepare and term_init.  Curses keeps one current terminal, so the
 * state here is static too.
 *
 * Both views take signals through a signalfd, so curses' own SIGWINCH
 * handler never runs: term_size asks the terminal and tells curses.
 *
 * The terminal is restored on every way out: term_finish on the normal
 * path, the same from an atexit handler, and from a crash handler that
 * then dies of the same signal.
 */
#define _GNU_SOURCE
#include "ui/term/term.h"

#include <curses.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Read by the crash handler (term_fatal): a signal-safe flag. */
static volatile sig_atomic_t term_active;

bool term_prepare(void)
{
	const char *cs;
	bool ascii;

	setlocale(LC_ALL, "");
	cs = nl_langinfo(CODESET);
	ascii = !cs || strcmp(cs, "UTF-8") != 0;
	if (!getenv("ESCDELAY"))
		set_escdelay(25);
	return ascii;
}

void term_finish(void)
{
	if (term_active) {
		term_active = false;
		endwin();
	}
}

/* A crash must not leave the terminal raw: restore it, then die of the
 * same signal.  (endwin is not async-signal-safe; for a dying process a
 * usable terminal is worth the risk, as in htop.) */
static void term_fatal(int sig)
{
	term_finish();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Home and End as terminals send them whatever TERM says -- a terminal
 * inside tmux or screen, rxvt, the Linux console, xterm in either cursor
 * mode -- added to what terminfo names (htop defines the same).  Without
 * them Home under tmux with TERM=xterm-256color arrives as Esc [ 1 ~. */
static const struct {
	const char *seq;
	int key;
} term_extra_keys[] = {
	{"\033[1~", KEY_HOME}, {"\033[4~", KEY_END}, {"\033[7~", KEY_HOME},
	{"\033[8~", KEY_END},  {"\033[H", KEY_HOME}, {"\033[F", KEY_END},
	{"\033OH", KEY_HOME},  {"\033OF", KEY_END},
};

void term_init(bool mouse)
{
	term_active = true;
	atexit(term_finish);
	signal(SIGSEGV, term_fatal);
	signal(SIGABRT, term_fatal);
	signal(SIGFPE, term_fatal);
	signal(SIGILL, term_fatal);
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	for (size_t i = 0;
	     i < sizeof(term_extra_keys) / sizeof(term_extra_keys[0]); i++)
		define_key(term_extra_keys[i].seq, term_extra_keys[i].key);
	nodelay(stdscr, TRUE);
	curs_set(0);
	if (mouse)
		mousemask(BUTTON1_CLICKED | BUTTON1_PRESSED | BUTTON4_PRESSED |
				  BUTTON5_PRESSED,
			  NULL);
	mouseinterval(0);
}

bool term_colors(bool want, const struct term_pair *pairs, size_t npairs)
{
	bool rich;

	if (!want || !has_colors() || getenv("NO_COLOR"))
		return false;
	start_color();
	use_default_colors();
	rich = COLORS >= 256;
	for (size_t i = 0; i < npairs; i++) {
		const struct term_pair *p = &pairs[i];

		init_pair(p->pair, rich && p->fg256 ? p->fg256 : p->fg, p->bg);
	}
	return true;
}

void term_size(int *lines, int *cols)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row &&
	    ws.ws_col && (ws.ws_row != LINES || ws.ws_col != COLS)) {
		resize_term(ws.ws_row, ws.ws_col);
		/* The terminal's contents are unknown now: repaint all. */
		clearok(curscr, TRUE);
	}
	getmaxyx(stdscr, *lines, *cols);
}
