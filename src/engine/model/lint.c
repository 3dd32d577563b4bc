/*
 * lint: per-coroutine warnings, computed from one model record at a time.
 *
 * Each lint is one row of a const table: its name (the config key and the
 * JSON string), a short tag for the WARN column, a help sentence, and the
 * unit its threshold is given in.  lint_check is a pure function of the
 * config, the record and `now`, so the engine can evaluate it on a snapshot
 * copy outside its lock and the tests can drive it at chosen timestamps.
 *
 *   lost-wakeup   suspended (not dead) for more than suspended_ns: nobody
 *                 resumed it; a wakeup may have been lost.  Not when the
 *                 program marked that suspend a long wait (record flag
 *                 `long_wait`: an idle keep-alive connection is not a
 *                 lost wakeup).  Nor for a context a memory scan
 *                 found (`scanned`) unless its runtime's lists prove
 *                 it waits (`waiting`: Boost.Fiber's wait queues) or
 *                 its stack's accessed bits prove it did not run since
 *                 state_ts (`idle`: engine/scan/scanner_idle.c).
 *   stall         running for more than running_ns without a switch: a
 *                 blocking call or a busy loop inside the coroutine.  Not
 *                 for a row a memory scan found (`scanned`: a thread, or
 *                 a context seen running): memory does not say when it
 *                 last switched.
 *   storm         more than storm_per_sec switches per second over the last
 *                 rate window: a resume storm (busy polling, ping-pong).
 *   dead-station  dead for more than dead_ns and its station was not
 *                 recycled (record flag `recycled`, set by the engine): the
 *                 slot stays occupied (an upstream writer never frees it).
 *
 * Every comparison is strict, so a threshold is the largest value that is
 * still fine.
 *
 * The first three are meant for the program's coroutines: a scheduler's
 * own contexts (record `kind`: a dispatcher, a thread's root) are not
 * judged by them.  An idle dispatcher waits for work while it runs (it
 * is the context that sleeps when no fiber is ready), a root may wait in
 * its thread's main function for as long as the program runs, and both
 * take part in most switches: none of that is a stall, a lost wakeup or a
 * storm.  dead-station is about the station, not the context, and holds
 * for every kind.
 */
#include "engine/model/lint.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The largest thresholds accepted: ~31 years, and 10^12 switches/s.  Both
 * keep the conversion to integer nanoseconds far from overflow. */
#define LINT_MAX_SECONDS 1e9
#define LINT_MAX_RATE 1e12

struct lint_info {
	const char *name;
	const char *tag;
	const char *unit;
	const char *help;
};

static const struct lint_info lint_table[LINT_COUNT] = {
	[LINT_LOST_WAKEUP] =
		{
			.name = "lost-wakeup",
			.tag = "WAKE?",
			.unit = "s",
			.help = "Suspended longer than the threshold: nobody "
				"resumed it, so a wakeup may have been lost.",
		},
	[LINT_STALL] =
		{
			.name = "stall",
			.tag = "STALL",
			.unit = "s",
			.help = "Running longer than the threshold without a "
				"switch: a blocking call or a busy loop.",
		},
	[LINT_STORM] =
		{
			.name = "storm",
			.tag = "STORM",
			.unit = "/s",
			.help = "More switches per second than the threshold: "
				"a resume storm (busy polling, ping-pong).",
		},
	[LINT_DEAD_STATION] =
		{
			.name = "dead-station",
			.tag = "DEAD",
			.unit = "s",
			.help = "Dead longer than the threshold and its "
				"station was not recycled: the slot leaks.",
		},
};

void lint_config_defaults(struct lint_config *c)
{
	memset(c, 0, sizeof(*c));
	for (int k = 0; k < LINT_COUNT; k++)
		c->enabled[k] = true;
	c->suspended_ns = 5000000000ull;
	c->running_ns = 1000000000ull;
	c->storm_per_sec = 10000.0;
	c->dead_ns = 1000000000ull;
}

/* Time since `since`, 0 when `since` lies in the future (a late event). */
static uint64_t lint_since(uint64_t now, uint64_t since)
{
	return now > since ? now - since : 0;
}

uint32_t lint_check(const struct lint_config *c, const struct model_coro *co,
		    uint64_t now)
{
	uint32_t mask = 0;
	bool judged = co->kind == MODEL_COROUTINE;

	switch (co->state) {
	case MODEL_SUSPENDED:
		/* Not one a memory scan found, unless its runtime's lists
		 * say it waits or its untouched stack proves it did not run:
		 * a saved state that stays the same is no
		 * proof of a wait (a loop that yields at the same depth
		 * saves the same bytes each time). */
		if (judged && c->enabled[LINT_LOST_WAKEUP] && !co->long_wait &&
		    (!co->scanned || co->waiting || co->idle) &&
		    lint_since(now, co->state_ts) > c->suspended_ns)
			mask |= 1u << LINT_LOST_WAKEUP;
		break;
	case MODEL_RUNNING:
		if (judged && c->enabled[LINT_STALL] && !co->in_kernel &&
		    !co->scanned &&
		    lint_since(now, co->state_ts) > c->running_ns)
			mask |= 1u << LINT_STALL;
		break;
	case MODEL_DEAD:
		if (c->enabled[LINT_DEAD_STATION] && !co->recycled &&
		    lint_since(now, co->dead_ts) > c->dead_ns)
			mask |= 1u << LINT_DEAD_STATION;
		break;
	default:
		break;
	}
	if (judged && c->enabled[LINT_STORM] &&
	    co->sw_per_sec > c->storm_per_sec)
		mask |= 1u << LINT_STORM;
	return mask;
}

static const struct lint_info *lint_info(enum lint_kind k)
{
	return (unsigned)k < LINT_COUNT ? &lint_table[k] : NULL;
}

const char *lint_name(enum lint_kind k)
{
	return lint_info(k) ? lint_info(k)->name : "?";
}

const char *lint_tag(enum lint_kind k)
{
	return lint_info(k) ? lint_info(k)->tag : "?";
}

const char *lint_help(enum lint_kind k)
{
	return lint_info(k) ? lint_info(k)->help : "";
}

const char *lint_unit(enum lint_kind k)
{
	return lint_info(k) ? lint_info(k)->unit : "";
}

int lint_find(const char *name)
{
	for (int k = 0; k < LINT_COUNT; k++)
		if (strcmp(lint_table[k].name, name) == 0)
			return k;
	return -1;
}

static uint64_t *lint_time_field(struct lint_config *c, enum lint_kind k)
{
	switch (k) {
	case LINT_LOST_WAKEUP:
		return &c->suspended_ns;
	case LINT_STALL:
		return &c->running_ns;
	case LINT_DEAD_STATION:
		return &c->dead_ns;
	default:
		return NULL;
	}
}

double lint_threshold(const struct lint_config *c, enum lint_kind k)
{
	/* The cast only selects the field; nothing is written. */
	const uint64_t *ns = lint_time_field((struct lint_config *)c, k);

	if (ns)
		return (double)*ns / 1e9;
	return k == LINT_STORM ? c->storm_per_sec : 0.0;
}

bool lint_set_threshold(struct lint_config *c, enum lint_kind k, double v)
{
	uint64_t *ns = lint_time_field(c, k);

	if (!isfinite(v) || v < 0)
		return false;
	if (ns) {
		if (v > LINT_MAX_SECONDS)
			return false;
		*ns = (uint64_t)(v * 1e9 + 0.5); /* nearest ns */
		return true;
	}
	if (k != LINT_STORM || v > LINT_MAX_RATE)
		return false;
	c->storm_per_sec = v;
	return true;
}

void lint_format(uint32_t mask, char *buf, size_t n)
{
	size_t len = 0;

	if (!n)
		return;
	buf[0] = '\0';
	for (int k = 0; k < LINT_COUNT; k++) {
		int w;

		if (!(mask & (1u << k)))
			continue;
		w = snprintf(buf + len, n - len, "%s%s", len ? "," : "",
			     lint_table[k].tag);
		if (w < 0 || (size_t)w >= n - len) {
			/* Truncated: keep whole tags only. */
			buf[len] = '\0';
			return;
		}
		len += (size_t)w;
	}
}
