/*
 * ticker: the periodic skeleton of batch output and corotop serve
 * (ticker.h).
 */
#define _GNU_SOURCE
#include "ui/batch/ticker.h"

#include <errno.h>
#include <time.h>

#include "common/clock.h"

void ticker_init(struct ticker *t, unsigned delay_tenths, bool restart_behind)
{
	t->period = (uint64_t)delay_tenths * 100000000u;
	t->next = clock_now_ns(CLOCK_MONOTONIC) + t->period;
	t->restart_behind = restart_behind;
}

enum ticker_event ticker_wait(struct ticker *t, const sigset_t *sigs,
			      uint64_t max_wait_ns, bool ticking, int *sig)
{
	uint64_t now = clock_now_ns(CLOCK_MONOTONIC), ns = max_wait_ns;
	struct timespec wait;
	siginfo_t si;

	if (ticking) {
		uint64_t due = now < t->next ? t->next - now : 0;

		if (!max_wait_ns || due < ns)
			ns = due;
	}
	wait.tv_sec = (time_t)(ns / 1000000000u);
	wait.tv_nsec = (long)(ns % 1000000000u);
	*sig = sigtimedwait(sigs, &si, &wait);
	if (*sig == SIGCHLD)
		return TICKER_CHILD;
	if (*sig == SIGWINCH)
		return TICKER_IDLE;
	if (*sig > 0)
		return TICKER_SIGNAL;
	if (*sig < 0 && errno != EAGAIN && errno != EINTR)
		return TICKER_FAILED;
	now = clock_now_ns(CLOCK_MONOTONIC);
	if (!ticking || now < t->next)
		return TICKER_IDLE;
	t->next += t->period;
	if (t->restart_behind && t->next < now)
		t->next = now + t->period;
	return TICKER_TICK;
}
