/*
 * thread_meters: htop's CPU meters above the coroutine table, one per OS
 * thread of the target that runs coroutines (thread_meters.c says how
 * they are sampled and drawn), and their state.
 */
#ifndef COROTOP_THREAD_METERS_H
#define COROTOP_THREAD_METERS_H

#include <stddef.h>
#include <stdint.h>

/* One thread meter above the table (thread_meters.c). */
#define TUI_METERS_MAX 64
struct tui_meter {
	uint64_t tid;
	double pct;    /* CPU, of one CPU; < 0: not known */
	uint32_t coro; /* running on it now: index into snap.coro, or
			  UINT32_MAX */
};

struct thread_meters {
	/* The target's threads seen last (n: procfs listed them), when, and
	 * the meters shown. */
	size_t n, nmeters;
	uint64_t sampled_ns;
	struct tui_meter meters[TUI_METERS_MAX];
	/* The coroutines' threads at the last refresh: a change samples at
	 * once. */
	size_t ntids;
	uint64_t tids[TUI_METERS_MAX];
};

struct tui;

/* After a refresh, sample the threads' CPU (at most every half second)
 * and see who runs on them; how many lines the meters take on this
 * screen; draw them from line y. */
void thread_meters_update(struct tui *t);
int thread_meters_lines(const struct tui *t);
void thread_meters_draw(struct tui *t, int y);

#endif
