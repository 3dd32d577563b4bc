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
 * Parked stacks: a suspend event may carry the CallTrace id of the stack
 * the coroutine parked at (CTP_EPOCH_TRACE_OFFSET); model_park keeps it in
 * the `parked` side array (by record slot, so the 128-byte record the
 * snapshots copy does not grow) until the next transition or death.  The
 * engine preserves those traces across CallTrace rotations.
 *
 * Names: a record's name is an id in the model's name pool (namepool.c),
 * set from the station's header (model_occupant) or from a code address
 * (model_name_pc); the record holds a reference from then until it is
 * reclaimed, so a name costs the record 4 bytes and the pool one entry per
 * distinct name.
 *
 * Long waits: a suspend the program marked as expected to last
 * (CTP_EPF_LONG_WAIT) sets the record's long_wait bit (model_long_wait),
 * which the lost-wakeup lint reads; the next transition or the death
 * clears it.  A mark per coroutine is the probe's business: it marks each
 * of that coroutine's suspends.
 *
 * One running context per thread.  A thread runs one execution context at
 * a time (a coroutine with a stack of its own: its events carry
 * CTP_EPF_CONTEXT; stackless ones may nest), so when a resume of one on
 * thread T is harvested, the context that was running on T (the last one
 * resumed there: `running`) was suspended by then --
 * its own suspend was lost, or is not harvested yet.  It is shown
 * suspended by implication, marked inferred, until its next harvested
 * transition says more.  Only the state is implied: the time accounting
 * stays the events' (an interval is charged to the state last harvested),
 * so that a live run and its replay agree.  Stations are harvested one after
 * the other, so an older resume may come after a newer one on the same thread:
 * then the coroutine whose resume is older is the one suspended.
 *
 * A census event (a coroutine that lived before a late attach) sets the
 * state it was in and since when, without counting a switch or charging
 * the time before it to anything: nobody watched it.
 *
 * Time accounting: each transition closes the interval since the previous
 * one and charges it to the previous state (running or suspended).  Rates
 * (switches/s, events/s) are recomputed by model_tick over the time since the
 * previous tick.
 *
 * The model is not thread-safe; the engine serialises access with a mutex.
 */
#include "engine/model/model.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "engine/model/namepool.h"
#include "engine/names/framekind.h"

/* The models made in this process so far: each one's uid (relaxed: only
 * the values' uniqueness matters, nothing is published through it). */
static atomic_uint_fast64_t model_uids;

bool model_init(struct model *m, uint32_t stations, uint64_t linger_ns)
{
	memset(m, 0, sizeof(*m));
	m->uid = atomic_fetch_add_explicit(&model_uids, 1,
					   memory_order_relaxed) +
		 1;
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
	/* Without it every coroutine is unnamed; nothing else changes. */
	m->names = namepool_create(NAMEPOOL_MAX);
	return true;
}

void model_finish(struct model *m)
{
	runmap_finish(&m->running);
	free(m->coro);
	free(m->sw_mark);
	free(m->parked);
	free(m->coro_at);
	free(m->parks);
	free(m->gen_of);
	namepool_destroy(m->names);
	free(m->free);
	free(m->by_station);
	free(m->watch.ring);
	memset(m, 0, sizeof(*m));
}

/* Doubles the record arrays.  New records are not touched here: model_open
 * zeroes one when it hands it out, the free stack hands out new indexes in
 * increasing order, and every loop stops at `used` (one past the highest
 * index ever handed out), so capacity that was never used costs no
 * resident memory. */
static bool model_grow(struct model *m)
{
	uint32_t cap = m->cap ? m->cap * 2 : 1024;
	/* Each array holds m->cap until all six have grown; cap is 1024
	 * times a power of two, so each grows to exactly cap. */
	size_t c_coro = m->cap, c_sw = m->cap, c_parked = m->cap, c_at = m->cap,
	       c_free = m->cap, c_gen = m->cap;

	if (!grow_array((void **)&m->coro, &c_coro, cap, sizeof(*m->coro)) ||
	    !grow_array((void **)&m->sw_mark, &c_sw, cap,
			sizeof(*m->sw_mark)) ||
	    !grow_array((void **)&m->parked, &c_parked, cap,
			sizeof(*m->parked)) ||
	    !grow_array((void **)&m->coro_at, &c_at, cap,
			sizeof(*m->coro_at)) ||
	    !grow_array((void **)&m->free, &c_free, cap, sizeof(*m->free)) ||
	    !grow_array((void **)&m->gen_of, &c_gen, cap, sizeof(*m->gen_of)))
		return false;
	/* The park marks: every bit of the new records clear. */
	uint64_t *parks = realloc(m->parks, cap / 64 * sizeof(*parks));

	if (!parks)
		return false;
	memset(parks + m->cap / 64, 0, (cap - m->cap) / 64 * sizeof(*parks));
	m->parks = parks;
	/* Push new indexes highest first so low indexes are used first. */
	for (uint32_t i = cap; i > m->cap; i--)
		m->free[m->nfree++] = i - 1;
	m->cap = cap;
	return true;
}

/* The station's record, to be written: touched (model_touch). */
static struct model_coro *model_at(struct model *m, uint32_t station)
{
	uint32_t r;

	if (station >= m->stations)
		return NULL;
	r = m->by_station[station];
	if (r == MODEL_NONE)
		return NULL;
	model_touch(m, r);
	return &m->coro[r];
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
	if (r >= m->used)
		m->used = r + 1;
	c = &m->coro[r];
	memset(c, 0, sizeof(*c));
	m->sw_mark[r] = 0;
	m->parked[r] = 0;
	m->coro_at[r] = 0;
	c->in_use = 1;
	c->id = m->next_id++;
	c->slot = r;
	c->probe_id = probe_id;
	c->birth_ts = birth_ts;
	c->state_ts = birth_ts;
	c->station = station;
	c->state = MODEL_SUSPENDED;
	m->by_station[station] = r;
	model_touch(m, r);
	m->t.coroutines_seen++;
}

void model_occupant(struct model *m, uint32_t station, const char *name,
		    uint64_t coro)
{
	struct model_coro *c = model_at(m, station);
	uint32_t old;

	if (!c)
		return;
	m->coro_at[c->slot] = coro;
	old = c->name;
	c->name = namepool_intern(m->names, name, 0);
	namepool_drop(m->names, old);
}

void model_pid(struct model *m, uint32_t station, uint32_t pid)
{
	struct model_coro *c = model_at(m, station);

	if (c)
		c->pid = pid;
}

void model_found(struct model *m, uint32_t station, bool unsure, bool waiting)
{
	struct model_coro *c = model_at(m, station);

	if (c) {
		c->scanned = 1;
		c->unsure = unsure;
		c->waiting = waiting;
	}
}

void model_idle(struct model *m, uint32_t station, bool idle, uint64_t since,
		uint64_t now)
{
	struct model_coro *c = model_at(m, station);

	if (!c || !c->scanned || c->state != MODEL_SUSPENDED)
		return;
	c->idle = idle;
	c->state_ts = idle ? since : now;
}

void model_name_pc(struct model *m, uint32_t station, uint64_t pc)
{
	model_name_made(m, station, pc, 0);
}

void model_name_made(struct model *m, uint32_t station, uint64_t pc,
		     uint64_t made_for)
{
	struct model_coro *c = model_at(m, station);
	char text[NAMEPOOL_TEXT_MAX];
	uint64_t had;
	uint32_t old;

	if (!c)
		return;
	old = c->name;
	namepool_get(m->names, old, text, sizeof(text), &had);
	if (had == pc && namepool_made_for(m->names, old) == made_for)
		return;
	c->name = namepool_intern_made(m->names, text, pc, made_for);
	namepool_drop(m->names, old);
}

void model_name_text(struct model *m, uint32_t station, const char *name)
{
	struct model_coro *c = model_at(m, station);
	char text[NAMEPOOL_TEXT_MAX];
	uint64_t pc;
	uint32_t old;

	if (!c || !name || !*name)
		return;
	/* A walk that found what the runtime made it for: a probe that did
	 * not say (an older preload, a census) leaves a coroutine. */
	if (c->kind == MODEL_COROUTINE && framekind_role(name))
		c->kind = MODEL_DISPATCHER;
	old = c->name;
	namepool_get(m->names, old, text, sizeof(text), &pc);
	if (text[0])
		return; /* the probe's, or already derived */
	c->name = namepool_intern(m->names, name, pc);
	namepool_drop(m->names, old);
}

uint64_t model_coro_at(const struct model *m, uint32_t slot)
{
	return slot < m->used ? m->coro_at[slot] : 0;
}

/* c's state is known again (a harvested transition, or its death). */
static void model_seen(struct model *m, struct model_coro *c)
{
	m->t.inferred -= c->inferred;
	c->inferred = 0;
}

/* Record r's running interval ends at ts, by implication. */
static void model_infer_suspend(struct model *m, struct model_coro *r)
{
	r->state = MODEL_SUSPENDED;
	m->t.inferred += !r->inferred;
	r->inferred = 1;
}

/* The state an interval since c's last transition is charged to: what
 * was harvested, not what was implied (the accounting stays the one the
 * events give, live or replayed). */
static uint8_t model_charged(const struct model_coro *c)
{
	return c->inferred ? MODEL_RUNNING : c->state;
}

/* c was just resumed on tid at ts (its own event's time: c->state_ts may
 * be later, after an implied suspend): whatever else ran there last is
 * suspended -- or c is, when the other's resume is the newer. */
static void model_one_running(struct model *m, struct model_coro *c,
			      uint64_t tid, uint64_t ts)
{
	struct runmap_entry *e;
	struct model_coro *h;

	if (!c->context || !(e = runmap_entry(&m->running, tid)))
		return;
	if (e->id && e->slot < m->used && e->slot != c->slot) {
		h = &m->coro[e->slot];
		if (h->in_use && h->id == e->id && h->context &&
		    h->state == MODEL_RUNNING && h->last_tid == tid) {
			if (h->state_ts > ts) {
				model_infer_suspend(m, c);
				return; /* h runs there now */
			}
			model_infer_suspend(m, h);
			model_touch(m, h->slot);
		}
	}
	e->slot = c->slot;
	e->id = c->id;
}

/* The time from c's last transition to `to`, charged to the state it was
 * in (model_charged); nothing when `to` is not later. */
static inline void model_charge(struct model_coro *c, uint64_t to)
{
	if (to <= c->state_ts)
		return;
	if (model_charged(c) == MODEL_RUNNING)
		c->run_ns += to - c->state_ts;
	else
		c->susp_ns += to - c->state_ts;
}

void model_event(struct model *m, uint32_t station, uint64_t ts, uint64_t tid,
		 uint64_t addr, uint64_t seq, uint64_t n, uint32_t slot,
		 bool is_active)
{
	struct model_coro *c = model_at(m, station);

	m->t.events++;
	if (!c)
		return;
	model_charge(c, ts);
	if (ts > c->state_ts || !c->switches)
		c->state_ts = ts;
	c->state = is_active ? MODEL_RUNNING : MODEL_SUSPENDED;
	model_seen(m, c);
	c->long_wait = 0;
	c->last_tid = tid;
	c->last_addr = addr;
	c->last_seq = seq;
	c->switches++;
	if (is_active)
		model_one_running(m, c, tid, ts);
	else
		model_mark_park(m, c->slot);
	if (m->watch.id == c->id) {
		struct model_watch *w = &m->watch;
		uint32_t at = (w->head + w->count) % MODEL_WATCH_MAX;

		w->ring[at] = (struct model_transition){
			.ts = ts,
			.tid = tid,
			.addr = addr,
			.seq = seq,
			.n = n,
			.slot = slot,
			.lost_before = c->pending_lost,
			.is_active = is_active,
		};
		if (w->count < MODEL_WATCH_MAX)
			w->count++;
		else
			w->head = (w->head + 1) % MODEL_WATCH_MAX;
	}
	c->pending_lost = 0;
}

void model_census(struct model *m, uint32_t station, uint64_t ts, uint64_t tid,
		  uint64_t addr, uint64_t seq, bool is_active)
{
	struct model_coro *c = model_at(m, station);

	m->t.events++;
	m->t.census++;
	if (!c)
		return;
	c->state_ts = ts;
	c->state = is_active ? MODEL_RUNNING : MODEL_SUSPENDED;
	model_seen(m, c);
	c->long_wait = 0;
	c->last_tid = tid;
	c->last_addr = addr;
	c->last_seq = seq;
	c->pending_lost = 0;
	if (is_active)
		model_one_running(m, c, tid, ts);
	else
		model_mark_park(m, c->slot);
}

void model_mark_park(struct model *m, uint32_t r)
{
	if (r < m->cap)
		m->parks[r / 64] |= 1ull << (r % 64);
}

uint32_t model_take_parks(struct model *m, uint32_t *cursor, uint32_t *out,
			  uint32_t max)
{
	uint32_t words = (m->used + 63) / 64, n = 0, start, w;

	if (!words || !max)
		return 0;
	start = *cursor % (words * 64);
	w = start / 64;
	/* From the cursor on, round robin, the start word visited twice: its
	 * bits from the cursor first, those below it last.  The cursor goes
	 * past the last record taken, so records that re-park at every tick
	 * never keep the others waiting. */
	for (uint32_t k = 0; k <= words; k++, w = (w + 1) % words) {
		uint64_t mask = ~0ull, b;

		if (k == 0)
			mask <<= start % 64;
		else if (k == words)
			mask = start % 64 ? (1ull << (start % 64)) - 1 : 0;
		for (b = m->parks[w] & mask; b && n < max; b &= b - 1) {
			unsigned i = (unsigned)__builtin_ctzll(b);

			m->parks[w] &= ~(1ull << i);
			out[n++] = w * 64 + i;
			*cursor = w * 64 + i + 1;
		}
		if (n == max)
			break;
	}
	return n;
}

void model_context(struct model *m, uint32_t station)
{
	struct model_coro *c = model_at(m, station);

	if (c)
		c->context = 1;
}

void model_kind(struct model *m, uint32_t station, enum model_kind kind)
{
	struct model_coro *c = model_at(m, station);

	if (c)
		c->kind = kind;
}

void model_park(struct model *m, uint32_t station, uint64_t trace)
{
	/* The side array only, which copies do not hold: not a touch (the
	 * suspend it follows touched the record already). */
	const struct model_coro *c = model_station_coro(m, station);

	if (c)
		m->parked[c->slot] = trace;
}

void model_long_wait(struct model *m, uint32_t station, bool long_wait)
{
	struct model_coro *c = model_at(m, station);

	if (c && c->state == MODEL_SUSPENDED)
		c->long_wait = long_wait;
}

void model_where(struct model *m, uint32_t station, uint64_t addr)
{
	struct model_coro *c = model_at(m, station);

	if (c && c->state == MODEL_SUSPENDED && addr)
		c->last_addr = addr;
}

/* a + b, or UINT64_MAX when that does not fit: a lying region can name
 * seqs near 2^64, and a total must not wrap to a small number. */
static uint64_t model_sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void model_lost(struct model *m, uint32_t station, uint64_t count)
{
	struct model_coro *c = model_at(m, station);

	m->t.lost = model_sat_add(m->t.lost, count);
	if (!c)
		return;
	c->lost = model_sat_add(c->lost, count);
	c->pending_lost = count >= UINT32_MAX - c->pending_lost
				  ? UINT32_MAX
				  : c->pending_lost + (uint32_t)count;
}

void model_close(struct model *m, uint32_t station, uint64_t now, bool recycled)
{
	struct model_coro *c = model_at(m, station);

	if (!c)
		return;
	model_charge(c, now);
	if (now > c->state_ts)
		c->state_ts = now;
	c->state = MODEL_DEAD;
	model_seen(m, c);
	c->long_wait = 0;
	m->parked[c->slot] = 0;
	c->dead_ts = now;
	c->recycled = recycled;
	m->by_station[station] = MODEL_NONE;
}

void model_tick(struct model *m, uint64_t now)
{
	uint64_t dt = now > m->tick_ts ? now - m->tick_ts : 0;
	/* A rate over a few microseconds (the engine's last tick when it
	 * stops right after another) says nothing: one switch would read as
	 * a storm.  Shorter intervals leave the rates and their marks alone,
	 * and the next tick measures over the whole time. */
	bool rates = m->tick_ts && dt >= MODEL_RATE_MIN_NS;
	double secs = (double)dt / 1e9;

	m->t.running = m->t.suspended = m->t.dead = 0;
	for (uint32_t r = 0; r < m->used; r++) {
		struct model_coro *c = &m->coro[r];

		if (!c->in_use)
			continue;
		if (c->state == MODEL_DEAD && now > c->dead_ts &&
		    now - c->dead_ts > m->linger_ns) {
			c->in_use = 0;
			namepool_drop(m->names, c->name);
			c->name = 0;
			m->free[m->nfree++] = r;
			model_touch(m, r);
			continue;
		}
		if (rates) {
			double rate =
				(double)(c->switches - m->sw_mark[r]) / secs;

			if (rate != c->sw_per_sec) {
				c->sw_per_sec = rate;
				model_touch(m, r);
			}
			m->sw_mark[r] = c->switches;
		} else if (!m->tick_ts) {
			m->sw_mark[r] = c->switches;
		}
		model_totals_count(&m->t, c);
	}
	if (rates)
		m->t.events_per_sec =
			(double)(m->t.events - m->tick_events) / secs;
	if (rates || !m->tick_ts) {
		m->tick_events = m->t.events;
		m->tick_ts = now;
	}
}

void model_reset_rates(struct model *m, uint64_t now)
{
	for (uint32_t r = 0; r < m->used; r++) {
		if (!m->coro[r].in_use)
			continue;
		m->sw_mark[r] = m->coro[r].switches;
		m->coro[r].sw_per_sec = 0;
		model_touch(m, r);
	}
	m->t.events_per_sec = 0;
	m->tick_events = m->t.events;
	m->tick_ts = now;
}

uint32_t model_find_at(const struct model *m, uint64_t id, uint32_t slot)
{
	/* Ids are never reused and a record keeps its slot for life: the
	 * slot holds this id, or the record is gone. */
	if (id && slot < m->used && m->coro[slot].in_use &&
	    m->coro[slot].id == id)
		return slot;
	return MODEL_NONE;
}

const struct model_coro *model_station_coro(const struct model *m,
					    uint32_t station)
{
	uint32_t r;

	if (station >= m->stations)
		return NULL;
	r = m->by_station[station];
	return r == MODEL_NONE ? NULL : &m->coro[r];
}

uint32_t model_find(const struct model *m, uint64_t id)
{
	for (uint32_t r = 0; r < m->used; r++)
		if (m->coro[r].in_use && m->coro[r].id == id)
			return r;
	return MODEL_NONE;
}

bool model_watch(struct model *m, uint64_t id,
		 const struct model_transition *seed, uint32_t nseed)
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
	if (nseed > MODEL_WATCH_MAX)
		nseed = MODEL_WATCH_MAX;
	if (nseed)
		memcpy(w->ring, seed, nseed * sizeof(*seed));
	w->count = nseed;
	return true;
}

const struct model_transition *model_watch_at(const struct model *m, uint32_t i)
{
	return &m->watch.ring[(m->watch.head + i) % MODEL_WATCH_MAX];
}
