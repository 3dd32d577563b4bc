/*
 * replay_moment: a Heph recording at one moment t, as the live model
 * would hold it, computed from what replay.c built at open -- not
 * replayed.
 *
 * For each coroutine a binary search finds the interval in force at t,
 * whose packet is decoded for the address, seq and thread; switches are
 * its rank, the running time before it was summed at open (run_before),
 * and rates count the transitions of the second before t.  Every snapshot
 * costs O(coroutines x log intervals), wherever t is; so do a
 * coroutine's history, its parked stack, and the step to the next or
 * previous transition.
 *
 * The file is untrusted: every attribute is looked up by name and type,
 * and counts from it only bound loops over what is in memory.
 */
#define _GNU_SOURCE
#include "engine/replay/replay.h"

#include "common/grow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The coroutine with id `id`, or NULL. */
static const struct replay_coro *rp_find(const struct replay *r, uint64_t id)
{
	size_t lo = 0, hi = r->ncoro;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->coro[r->by_id[mid]].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return id && lo < r->ncoro && r->coro[r->by_id[lo]].id == id
		       ? &r->coro[r->by_id[lo]]
		       : NULL;
}

/* ---- moments ---- */

/* How many of the n sorted-by-start intervals at iv start at or before t. */
static size_t rp_upto(const struct replay_iv *iv, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (iv[mid].start <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* How many of the n losses (by time) happened at or before t, and their
 * count in *sum. */
static size_t rp_lost_upto(const struct replay_lost *l, size_t n, uint64_t t,
			   uint64_t *sum)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l[mid].ts <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	*sum = lo ? l[lo - 1].cum : 0;
	return lo;
}

static size_t rp_u64_upto(const uint64_t *v, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The transition that began interval k: its thread, address and seq,
 * and whether the program marked the wait it began as long; where (may
 * be NULL): the park's place in the program, when recorded and known at
 * t, else 0, and whether it was learned at an earlier park. */
static void rp_transition(const struct replay *r, uint32_t k, uint64_t t,
			  struct model_transition *out, bool *long_wait,
			  uint64_t *where, bool *learned)
{
	uint64_t lw = 0, wl = 0, w = 0, wat = 0, b = 0, bat = 0;

	const struct heph_ref *e = &r->f.ev[r->iv[k].ev];
	struct heph_packet p;

	memset(out, 0, sizeof(*out));
	out->slot = MODEL_NO_SLOT; /* a recording keeps no slots */
	out->ts = r->iv[k].start;
	out->tid = e->stream;
	out->is_active = (uint8_t)r->iv[k].running;
	if (heph_file_event(&r->f, r->iv[k].ev, &p)) {
		heph_packet_u64(&p, "addr", &out->addr);
		heph_packet_u64(&p, "seq", &out->seq);
		heph_packet_u64(&p, "long_wait", &lw);
		if (where && !out->is_active) {
			heph_packet_u64(&p, "where", &w);
			heph_packet_u64(&p, "where_at", &wat);
			heph_packet_u64(&p, "where_learned", &wl);
			heph_packet_u64(&p, "where_before", &b);
			heph_packet_u64(&p, "where_before_at", &bat);
		}
	}
	*long_wait = lw != 0;
	/* Shown from when the live view knew it (a walk may come late,
	 * after a frame learned at an earlier park). */
	if (wat > t) {
		w = b && bat <= t ? b : 0;
		wl = 1;
	}
	if (where) {
		*where = w;
		*learned = w && wl;
	}
}

/* Coroutine k at t into out; false when it is not visible then. */
static bool rp_coro_at(const struct replay *r, size_t k, uint64_t t,
		       struct model_coro *out)
{
	const struct replay_coro *c = &r->coro[k];
	const struct replay_iv *iv = r->iv + c->first;
	uint64_t lsum = 0, ev_end, old;
	struct model_transition tr;
	bool long_wait, learned;
	uint64_t where;
	size_t i;

	/* Most coroutines of a long recording are not alive at t: they
	 * cost two comparisons, not a search of their intervals. */
	if (c->birth > t)
		return false;
	if (c->dead && t >= c->end && t - c->end > r->linger_ns)
		return false;
	i = rp_upto(iv, c->n, t);
	memset(out, 0, sizeof(*out));
	out->id = c->id;
	out->slot = (uint32_t)k;
	out->station = MODEL_NONE;
	out->probe_id = c->substream;
	out->name = c->name;
	for (uint32_t j = 0; j < c->nnamed && r->named[c->named + j].ts <= t;
	     j++)
		out->name = r->named[c->named + j].name;
	out->kind = t >= c->kind_ts ? c->kind : MODEL_COROUTINE;
	out->pid = c->pid;
	out->birth_ts = c->birth;
	out->in_use = 1;
	/* Not recorded: where a station went.  No dead-station warnings. */
	out->recycled = 1;
	rp_lost_upto(r->lost + c->lfirst, c->nl, t, &lsum);
	out->lost = lsum;
	if (!i) { /* born, not run yet (or never: then maybe dead) */
		out->state = MODEL_SUSPENDED;
		out->state_ts = c->birth;
		out->pending_lost =
			lsum > UINT32_MAX ? UINT32_MAX : (uint32_t)lsum;
		if (c->dead && t >= c->end) {
			out->state = MODEL_DEAD;
			out->state_ts = out->dead_ts = c->end;
			out->susp_ns = c->end - c->birth;
		}
		return true;
	}
	i--;
	rp_transition(r, c->first + (uint32_t)i, t, &tr, &long_wait, &where,
		      &learned);
	out->last_tid = tr.tid;
	out->last_addr = where ? where : tr.addr;
	out->where_learned = learned;
	out->last_seq = tr.seq;
	out->switches = i + 1;
	out->run_ns = iv[i].run_before;
	out->susp_ns = iv[i].start - c->birth > iv[i].run_before
			       ? iv[i].start - c->birth - iv[i].run_before
			       : 0;
	out->state = iv[i].running ? MODEL_RUNNING : MODEL_SUSPENDED;
	out->state_ts = iv[i].start;
	out->long_wait = !iv[i].running && long_wait;
	ev_end = r->f.ev[iv[i].ev].end;
	if (c->dead && i + 1 == c->n && t >= c->end) {
		if (iv[i].running)
			out->run_ns += c->end - iv[i].start;
		else
			out->susp_ns += c->end - iv[i].start;
		out->state = MODEL_DEAD;
		out->state_ts = out->dead_ts = c->end;
	} else if (!r->ours && t >= ev_end && ev_end > iv[i].start &&
		   iv[i].running) {
		/* Another writer's span ended: suspended since. */
		out->run_ns += ev_end - iv[i].start;
		out->state = MODEL_SUSPENDED;
		out->state_ts = ev_end;
	}
	/* Losses since the transition (the next one would carry them). */
	{
		uint64_t before = 0;

		rp_lost_upto(r->lost + c->lfirst, c->nl, iv[i].start, &before);
		out->pending_lost = lsum - before > UINT32_MAX
					    ? UINT32_MAX
					    : (uint32_t)(lsum - before);
	}
	old = t >= 1000000000u ? t - 1000000000u : 0;
	out->sw_per_sec = (double)(i + 1 - rp_upto(iv, c->n, old));
	return true;
}

void replay_snapshot(const struct replay *r, uint64_t t, struct snapshot *out)
{
	uint64_t lsum = 0, old;
	size_t k = 0;

	if (t < r->t0)
		t = r->t0;
	if (t > r->t1)
		t = r->t1;
	out->ts = t;
	out->wall_ns = r->f.have_epoch ? r->f.epoch_ns + t : 0;
	out->sleeping = false;
	out->observer = false;
	out->error = NULL;
	out->coro_names = r->names;
	memset(&out->t, 0, sizeof(out->t));
	memset(out->warn_counts, 0, sizeof(out->warn_counts));
	grow_array_fit((void **)&out->coro, &out->cap, r->ncoro,
		       sizeof(*out->coro));
	old = t >= 1000000000u ? t - 1000000000u : 0;
	for (size_t i = 0; i < r->ncoro && k < out->cap; i++) {
		const struct replay_coro *rc = &r->coro[i];
		struct model_coro *c = &out->coro[k];

		/* Transitions up to t, and in the second before it, come from
		 * the coroutines themselves: the visible ones counted them
		 * already, the gone ones had all of theirs. */
		if (!rp_coro_at(r, i, t, c)) {
			if (rc->birth > t || !rc->n)
				continue;
			out->t.events += rc->n;
			if (r->iv[rc->first + rc->n - 1].start > old)
				out->t.events_per_sec +=
					(double)(rc->n -
						 rp_upto(r->iv + rc->first,
							 rc->n, old));
			continue;
		}
		k++;
		out->t.events += c->switches;
		out->t.events_per_sec += c->sw_per_sec;
		model_totals_count(&out->t, c);
	}
	out->count = k;
	rp_lost_upto(r->glost, r->nglost, t, &lsum);
	out->t.lost = lsum;
	out->t.coroutines_seen = rp_u64_upto(r->births, r->ncoro, t);
}

/* ---- one coroutine ---- */

size_t replay_history(const struct replay *r, uint64_t id, uint64_t t,
		      struct model_transition *out, size_t max)
{
	const struct replay_coro *c;
	size_t upto, from, n = 0, li;

	c = rp_find(r, id);
	if (!c || !max)
		return 0;
	upto = rp_upto(r->iv + c->first, c->n, t);
	from = upto > max ? upto - max : 0;
	li = 0;
	for (size_t i = from; i < upto; i++) {
		struct model_transition *tr = &out[n++];
		uint64_t lost = 0;
		bool lw; /* (the coroutine's record carries it, not a row) */

		rp_transition(r, c->first + (uint32_t)i, t, tr, &lw, NULL,
			      NULL);
		tr->n = i;
		/* Losses found since the previous transition. */
		while (li < c->nl && r->lost[c->lfirst + li].ts <= tr->ts) {
			if (i == 0 || r->lost[c->lfirst + li].ts >
					      r->iv[c->first + i - 1].start) {
				uint64_t k = r->lost[c->lfirst + li].count;

				/* Counts come from the file: saturate. */
				lost = k > UINT64_MAX - lost ? UINT64_MAX
							     : lost + k;
			}
			li++;
		}
		tr->lost_before = lost;
	}
	return n;
}

size_t replay_parked_stack(const struct replay *r, uint64_t id, uint64_t t,
			   uint64_t *frames, size_t max)
{
	const struct replay_coro *c;
	struct heph_packet p;
	uint64_t at = 0;
	size_t i;

	c = rp_find(r, id);
	if (!c)
		return 0;
	i = rp_upto(r->iv + c->first, c->n, t);
	if (!i || r->iv[c->first + i - 1].running ||
	    (c->dead && i == c->n && t >= c->end) ||
	    !heph_file_event(&r->f, r->iv[c->first + i - 1].ev, &p))
		return 0;
	/* A walk's stack: from when the live view had it; before, the one
	 * its WHERE was learned from, if any (recorder.c). */
	if (heph_packet_u64(&p, "stack_at", &at) && at > t) {
		uint64_t before = 0, before_at = 0;

		if (!heph_packet_u64(&p, "stack_before_id", &before) ||
		    !heph_packet_u64(&p, "where_before_at", &before_at) ||
		    before_at > t)
			return 0;
		return heph_stacks_find(&r->stacks, &r->f, before, frames, max);
	}
	return heph_stacks_of(&r->stacks, &r->f, &p, frames, max);
}

uint64_t replay_step(const struct replay *r, uint64_t id, uint64_t t, int dir)
{
	uint64_t to;

	const struct replay_coro *c = id ? rp_find(r, id) : NULL;

	if (c) {
		const struct replay_iv *iv = r->iv + c->first;
		size_t i = rp_upto(iv, c->n, t);

		if (dir > 0)
			return i < c->n		       ? iv[i].start
			       : c->dead && t < c->end ? c->end
						       : t;
		/* Its death, when that is the latest before t (forwards
		 * steps to it too). */
		if (c->dead && i == c->n && c->end < t &&
		    (!i || c->end > iv[i - 1].start))
			return c->end;
		/* The last start before t, not at it (starts may be equal). */
		i = t ? rp_upto(iv, c->n, t - 1) : 0;
		return i ? iv[i - 1].start : t;
	}
	/* Any coroutine: the nearest transition of each, by its intervals
	 * (one search per coroutine: this is a key press). */
	to = t;
	for (size_t k = 0; k < r->ncoro; k++) {
		const struct replay_iv *iv = r->iv + r->coro[k].first;
		uint32_t n = r->coro[k].n;
		size_t i;
		uint64_t s;

		if (dir > 0) {
			i = rp_upto(iv, n, t);
			if (i < n && (to == t || iv[i].start < to))
				to = iv[i].start;
		} else if (t) {
			/* The last start before t, not at it. */
			i = rp_upto(iv, n, t - 1);
			s = i ? iv[i - 1].start : t;
			if (s < t && (to == t || s > to))
				to = s;
		}
	}
	/* A death is a transition too (to D), as for one coroutine above:
	 * the nearest one, if it comes first (one pass: this is a key). */
	for (size_t k = 0; k < r->ncoro; k++) {
		uint64_t d = r->coro[k].end;

		if (r->coro[k].dead && (dir > 0 ? d > t && (to == t || d < to)
						: d < t && (to == t || d > to)))
			to = d;
	}
	return to;
}
