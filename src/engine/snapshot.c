/*
 * snapshot: storage and derived values of a model copy.
 */
#include "snapshot.h"

#include <stdlib.h>
#include <string.h>

void snapshot_init(struct snapshot *s)
{
	memset(s, 0, sizeof(*s));
}

void snapshot_finish(struct snapshot *s)
{
	free(s->coro);
	memset(s, 0, sizeof(*s));
}

static uint64_t snapshot_end(const struct snapshot *s,
			     const struct model_coro *c)
{
	return c->state == MODEL_DEAD ? c->dead_ts : s->ts;
}

uint64_t snapshot_age_ns(const struct snapshot *s, const struct model_coro *c)
{
	uint64_t end = snapshot_end(s, c);

	return end > c->birth_ts ? end - c->birth_ts : 0;
}

uint64_t snapshot_in_state_ns(const struct snapshot *s,
			      const struct model_coro *c)
{
	return s->ts > c->state_ts ? s->ts - c->state_ts : 0;
}

double snapshot_run_pct(const struct snapshot *s, const struct model_coro *c)
{
	uint64_t run = c->run_ns, susp = c->susp_ns;
	uint64_t open = 0, end = snapshot_end(s, c);

	if (end > c->state_ts)
		open = end - c->state_ts;
	if (c->state == MODEL_RUNNING)
		run += open;
	else if (c->state == MODEL_SUSPENDED)
		susp += open;
	if (run + susp == 0)
		return 0.0;
	return 100.0 * (double)run / (double)(run + susp);
}

const char *snapshot_state_name(uint8_t state)
{
	switch (state) {
	case MODEL_RUNNING:
		return "running";
	case MODEL_DEAD:
		return "dead";
	default:
		return "suspended";
	}
}
