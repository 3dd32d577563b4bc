/*
 * ticker: the periodic skeleton of a front-end without a terminal (batch
 * output, corotop serve): wait for the next refresh or for one of the
 * signals the caller blocked (taken synchronously with sigtimedwait, so
 * that cleanup is ordinary code), and say which came.
 */
#ifndef COROTOP_TICKER_H
#define COROTOP_TICKER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct ticker {
	uint64_t period; /* ns */
	uint64_t next;	 /* CLOCK_MONOTONIC ns of the next tick */
	/* Behind by more than a period (a stopped process): start the
	 * schedule over rather than tick in a burst. */
	bool restart_behind;
};

enum ticker_event {
	TICKER_TICK,   /* a refresh is due (the next one is scheduled) */
	TICKER_IDLE,   /* nothing due: woken early, or the bound passed */
	TICKER_CHILD,  /* SIGCHLD */
	TICKER_SIGNAL, /* another signal of the set: *sig */
	TICKER_FAILED, /* sigtimedwait failed */
};

/* The first tick one period from now. */
void ticker_init(struct ticker *t, unsigned delay_tenths, bool restart_behind);

/* Wait for the next tick (ticking false: none is due any more) or a
 * signal of sigs, at most max_wait_ns (0: no bound).  SIGWINCH is
 * nothing to a front-end without a terminal: TICKER_IDLE. */
enum ticker_event ticker_wait(struct ticker *t, const sigset_t *sigs,
			      uint64_t max_wait_ns, bool ticking, int *sig);

#endif
