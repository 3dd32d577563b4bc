/*
 * model: one record per coroutine, built from harvested events.
 *
 * A record is created when a station gets an occupant and is bound to that
 * station until the occupant dies; a recycled station therefore starts a new
 * record and never continues the history of the previous coroutine.  Dead
 * records stay visible for `linger_ns` (so a person sees that something
 * died) and are then reclaimed; records live in one growable array with a
 * free stack, so steady state does not allocate.
 *
 * Time accounting: each transition closes the interval since the previous
 * one and charges it to the previous state (running or suspended).  Rates
 * (switches/s, events/s) are recomputed by model_tick over the time since the
 * previous tick.
 *
 * The model is not thread-safe; the engine serialises access with a mutex.
 */
#include "model.h"

#include <stdlib.h>
#include <string.h>

bool model_init(struct model *m, uint32_t stations, uint64_t linger_ns)
{
	memset(m, 0, sizeof(*m));
	m->stations = stations;
	m->linger_ns = linger_ns;
	m->by_station = malloc((size_t)(stations ? stations : 1) *
			       sizeof(*m->by_station));
	if (!m->by_station)
		return false;
	for (uint32_t i = 0; i < stations; i++)
		m->by_station[i] = MODEL_NONE;
	m->t.stations_max = stations;
	m->next_id = 1;
	return true;
}

void model_finish(struct model *m)
{
	free(m->coro);
	free(m->free);
	free(m->by_station);
	free(m->watch.ring);
	memset(m, 0, sizeof(*m));
}

static bool model_grow(struct model *m)
{
	uint32_t cap = m->cap ? m->cap * 2 : 1024;
	struct model_coro *c;
	uint32_t *f;

	c = realloc(m->coro, (size_t)cap * sizeof(*c));
	if (!c)
		return false;
	m->coro = c;
	f = realloc(m->free, (size_t)cap * sizeof(*f));
	if (!f)
		return false;
	m->free = f;
	memset(&m->coro[m->cap], 0, (size_t)(cap - m->cap) * sizeof(*c));
	/* Push new indexes highest first so low indexes are used first. */
	for (uint32_t i = cap; i > m->cap; i--)
		m->free[m->nfree++] = i - 1;
	m->cap = cap;
	return true;
}

static struct model_coro *model_at(struct model *m, uint32_t station)
{
	uint32_t r;

	if (station >= m->stations)
		return NULL;
	r = m->by_station[station];
	return r == MODEL_NONE ? NULL : &m->coro[r];
}

void model_open(struct model *m, uint32_t station, uint64_t probe_id,
		uint64_t birth_ts)
{
	struct model_coro *c;
	uint32_t r;

	if (station >= m->stations)
		return;
	/* A missed close: the station already has its next occupant, so
	 * the old one's station was recycled. */
	if (m->by_station[station] != MODEL_NONE)
		model_close(m, station, birth_ts, true);
	if (!m->nfree && !model_grow(m))
		return; /* out of memory: the coroutine stays invisible */
	r = m->free[--m->nfree];
	c = &m->coro[r];
	memset(c, 0, sizeof(*c));
	c->in_use = 1;
	c->id = m->next_id++;
	c->probe_id = probe_id;
	c->birth_ts = birth_ts;
	c->state_ts = birth_ts;
	c->station = station;
	c->state = MODEL_SUSPENDED;
	m->by_station[station] = r;
	m->t.coroutines_seen++;
}

void model_event(struct model *m, uint32_t station, uint64_t ts, uint64_t tid,
		 uint64_t addr, uint64_t seq, uint64_t n, bool is_active)
{
	struct model_coro *c = model_at(m, station);
	struct model_transition *tr;
	unsigned slot;

	m->t.events++;
	if (!c)
		return;
	if (ts > c->state_ts) {
		if (c->state == MODEL_RUNNING)
			c->run_ns += ts - c->state_ts;
		else
			c->susp_ns += ts - c->state_ts;
	}
	if (ts > c->state_ts || !c->switches)
		c->state_ts = ts;
	c->state = is_active ? MODEL_RUNNING : MODEL_SUSPENDED;
	c->last_tid = tid;
	c->last_addr = addr;
	c->last_seq = seq;
	c->switches++;
	if (c->recent_count < MODEL_RECENT) {
		slot = (c->recent_head + c->recent_count) % MODEL_RECENT;
		c->recent_count++;
	} else {
		slot = c->recent_head;
		c->recent_head = (uint8_t)((c->recent_head + 1) % MODEL_RECENT);
	}
	tr = &c->recent[slot];
	tr->ts = ts;
	tr->tid = tid;
	tr->addr = addr;
	tr->seq = seq;
	tr->n = n;
	tr->is_active = is_active;
	tr->lost_before = c->pending_lost;
	c->pending_lost = 0;
	if (m->watch.id == c->id) {
		struct model_watch *w = &m->watch;
		uint32_t at = (w->head + w->count) % MODEL_WATCH_MAX;

		w->ring[at] = *tr;
		if (w->count < MODEL_WATCH_MAX)
			w->count++;
		else
			w->head = (w->head + 1) % MODEL_WATCH_MAX;
	}
}

void model_lost(struct model *m, uint32_t station, uint64_t count)
{
	struct model_coro *c = model_at(m, station);

	m->t.lost += count;
	if (!c)
		return;
	c->lost += count;
	c->pending_lost += count;
}

void model_close(struct model *m, uint32_t station, uint64_t now, bool recycled)
{
	struct model_coro *c = model_at(m, station);

	if (!c)
		return;
	if (now > c->state_ts) {
		if (c->state == MODEL_RUNNING)
			c->run_ns += now - c->state_ts;
		else
			c->susp_ns += now - c->state_ts;
		c->state_ts = now;
	}
	c->state = MODEL_DEAD;
	c->dead_ts = now;
	c->recycled = recycled;
	m->by_station[station] = MODEL_NONE;
}

void model_tick(struct model *m, uint64_t now)
{
	uint64_t dt = now > m->tick_ts ? now - m->tick_ts : 0;
	double secs = (double)dt / 1e9;

	m->t.running = m->t.suspended = m->t.dead = 0;
	for (uint32_t r = 0; r < m->cap; r++) {
		struct model_coro *c = &m->coro[r];

		if (!c->in_use)
			continue;
		if (c->state == MODEL_DEAD && now > c->dead_ts &&
		    now - c->dead_ts > m->linger_ns) {
			c->in_use = 0;
			m->free[m->nfree++] = r;
			continue;
		}
		if (m->tick_ts && secs > 0)
			c->sw_per_sec =
				(double)(c->switches - c->sw_mark) / secs;
		c->sw_mark = c->switches;
		if (c->state == MODEL_RUNNING)
			m->t.running++;
		else if (c->state == MODEL_DEAD)
			m->t.dead++;
		else
			m->t.suspended++;
	}
	if (m->tick_ts && secs > 0)
		m->t.events_per_sec =
			(double)(m->t.events - m->tick_events) / secs;
	m->tick_events = m->t.events;
	m->tick_ts = now;
}

const struct model_transition *model_coro_recent(const struct model_coro *c,
						 unsigned i)
{
	return &c->recent[(c->recent_head + i) % MODEL_RECENT];
}

void model_reset_rates(struct model *m, uint64_t now)
{
	for (uint32_t r = 0; r < m->cap; r++) {
		m->coro[r].sw_mark = m->coro[r].switches;
		m->coro[r].sw_per_sec = 0;
	}
	m->t.events_per_sec = 0;
	m->tick_events = m->t.events;
	m->tick_ts = now;
}

bool model_watch(struct model *m, uint64_t id)
{
	struct model_watch *w = &m->watch;

	w->id = 0;
	w->head = w->count = 0;
	if (!id)
		return true;
	if (!w->ring) {
		w->ring = calloc(MODEL_WATCH_MAX, sizeof(*w->ring));
		if (!w->ring)
			return false;
	}
	w->id = id;
	for (uint32_t r = 0; r < m->cap; r++) {
		const struct model_coro *c = &m->coro[r];

		if (!c->in_use || c->id != id)
			continue;
		for (unsigned i = 0; i < c->recent_count; i++)
			w->ring[w->count++] = *model_coro_recent(c, i);
		break;
	}
	return true;
}

const struct model_transition *model_watch_at(const struct model *m, uint32_t i)
{
	return &m->watch.ring[(m->watch.head + i) % MODEL_WATCH_MAX];
}
