/*
 * replay: a Heph recording as the live engine would have shown it.
 *
 * Opening indexes the file (hephfile.c), then groups its events once:
 *
 *   intervals  events described "running" or "suspended" (corotop's own
 *              recordings), or any other description (another writer's
 *              trace: each event is a span the substream ran, and the gaps
 *              between spans are time it was suspended);
 *   losses     events described "lost", with a `count` attribute;
 *   groups     a corotop recording's substream is a probe id, which the
 *              probe reuses, so its intervals are cut into coroutines
 *              where one ends before the next starts (a death and a
 *              birth); another writer's (stream, substream) is one
 *              coroutine for the whole trace.
 *
 * Grouping is a counting sort over a hash of the group keys -- two passes
 * over the events, no comparison sort unless a writer put a group's events
 * out of order -- because it is on the way to the first screen.
 *
 * A moment t is then computed from what this builds (replay_moment.c).
 *
 * The file is untrusted: hephfile checked every packet it indexed, every
 * attribute is looked up by name and type, and counts and times from the
 * file only ever bound loops over what is in memory.
 */
#define _GNU_SOURCE
#include "engine/replay/replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/lowerbound.h"
#include "engine/model/namepool.h"
#include "engine/heph/hephcoronames.h"
#include "engine/heph/streammap.h"

/* Groups are keyed (substream) for corotop's recordings (stream 0),
 * (stream, substream) for others': their numbers in a streammap. */

static bool rp_option_is(const struct heph_packet *p, const char *name)
{
	size_t n = strlen(name);

	return p->option_len == n && !memcmp(p->option, name, n);
}

/* ---- open ---- */

/* A corotop_birth option (out of memory: that birth is not known, and
 * the substream's gaps stand in for it).  last[g] (g: the probe id's
 * entry in m) remembers it for its corotop_death, which follows it in
 * the file (the death's time is the harvest's, which may come after the
 * probe id's next birth: time can not match them). */
static void rp_birth_add(struct replay *r, struct streammap *m, uint32_t **last,
			 size_t *nlast, uint64_t sub, uint64_t ts, uint64_t id)
{
	long g;

	if (!grow_array((void **)&r->birth_opt, &r->cap_birth_opt,
			r->nbirth_opt + 1, sizeof(*r->birth_opt)))
		return;
	g = streammap_get(m, sub, 0, true);
	if (g >= 0 &&
	    grow_array((void **)last, nlast, (size_t)g + 1, sizeof(**last)))
		(*last)[g] = (uint32_t)r->nbirth_opt;
	r->birth_opt[r->nbirth_opt++] =
		(struct replay_birth){.sub = sub, .ts = ts, .id = id};
}

/* A corotop_death: the latest birth of its probe id before it died
 * without running. */
static void rp_death_add(struct replay *r, struct streammap *m,
			 const uint32_t *last, size_t nlast, uint64_t sub,
			 uint64_t ts)
{
	long g = streammap_get(m, sub, 0, false);
	struct replay_birth *b;

	if (g < 0 || (size_t)g >= nlast)
		return;
	b = &r->birth_opt[last[g]];
	if (!b->death)
		b->death = ts > b->ts ? ts : b->ts + 1; /* 0 is "none" */
}

/* A corotop_coro_pid: the process of the coroutine with corotop's id
 * `id`, whose birth it follows (a name may come between: the last two
 * births are looked at).  A pid that does not fit a pid_t is ignored. */
static void rp_coro_pid(struct replay *r, uint64_t id, uint64_t pid)
{
	if (!id || !pid || pid > INT32_MAX)
		return;
	for (size_t k = r->nbirth_opt; k > 0 && k + 2 > r->nbirth_opt; k--)
		if (r->birth_opt[k - 1].id == id) {
			r->birth_opt[k - 1].pid = (uint32_t)pid;
			return;
		}
}

static int rp_birth_cmp2(const void *a, const void *b)
{
	const struct replay_birth *x = a, *y = b;

	if (x->sub != y->sub)
		return x->sub < y->sub ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* The births recorded for substream sub: *n of them from the returned. */
static const struct replay_birth *rp_births_of(const struct replay *r,
					       uint64_t sub, size_t *n)
{
	size_t lo, end;

	*n = 0;
	if (!r->birth_opt)
		return NULL; /* NULL + 0 is undefined in C */
	LOWER_BOUND(lo, r->birth_opt, r->nbirth_opt, sub, sub);
	for (end = lo; end < r->nbirth_opt && r->birth_opt[end].sub == sub;
	     end++)
		;
	*n = end - lo;
	return r->birth_opt + lo;
}

/* A corotop_kind: kept until the births are all known (rp_births_link).
 * A kind this corotop does not know is none. */
static void rp_kind_add(struct replay *r, uint64_t id, uint64_t ts,
			uint64_t kind)
{
	if (!id || kind > MODEL_ROOT ||
	    !grow_array((void **)&r->kinds, &r->cap_kinds, r->nkinds + 1,
			sizeof(*r->kinds)))
		return;
	r->kinds[r->nkinds++] =
		(struct replay_kind){.id = id, .ts = ts, .kind = (uint8_t)kind};
}

static int rp_kind_cmp(const void *a, const void *b)
{
	const struct replay_kind *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Each birth's names and kind, by its id (interned once per birth; a
 * coroutine takes its birth's): the name given at the birth, the one
 * found later (a text, or an entry pc that snapshots name as the live
 * view does), and its last kind. */
static void rp_births_link(struct replay *r)
{
	struct heph_coronames cn;

	heph_coronames_init(&cn, &r->f);
	if (cn.nnames || cn.nnamed)
		r->names = namepool_create(NAMEPOOL_MAX);
	if (r->nkinds)
		qsort(r->kinds, r->nkinds, sizeof(*r->kinds), rp_kind_cmp);
	for (size_t i = 0; i < r->nbirth_opt; i++) {
		struct replay_birth *b = &r->birth_opt[i];
		const char *name = b->id ? heph_coronames_id(&cn, b->id) : NULL;
		size_t k, nn = 0;
		const struct heph_coronamed *nm =
			b->id ? heph_coronames_named(&cn, b->id, &nn) : NULL;

		if (name && r->names)
			b->name = namepool_intern(r->names, name, 0);
		b->named = (uint32_t)r->nnamed;
		for (k = 0; r->names && k < nn &&
			    grow_array((void **)&r->named, &r->cap_named,
				       r->nnamed + 1, sizeof(*r->named));
		     k++)
			r->named[r->nnamed++] = (struct replay_named){
				.ts = nm[k].ts,
				.name = namepool_intern_made(
					r->names, nm[k].pc ? "" : nm[k].text,
					nm[k].pc, nm[k].made_for),
			};
		b->nnamed = (uint32_t)r->nnamed - b->named;
		LOWER_BOUND(k, r->kinds, r->nkinds, id, b->id + 1);
		if (b->id && k && r->kinds[k - 1].id == b->id) {
			b->kind = r->kinds[k - 1].kind; /* its last */
			b->kind_ts = r->kinds[k - 1].ts;
		}
	}
	heph_coronames_finish(&cn);
	free(r->kinds);
	r->kinds = NULL;
	r->nkinds = r->cap_kinds = 0;
}

/* corotop's own options (hephfile kept where they are). */
static void rp_options(struct replay *r)
{
	const struct heph_file *f = &r->f;
	struct streammap m;
	uint32_t *last = NULL;
	size_t nlast = 0;

	streammap_init(&m);
	for (size_t i = 0; i < f->nmeta_off; i++) {
		struct heph_packet p;

		if (!heph_file_option(f, i, &p) || p.option_len < 7 ||
		    memcmp(p.option, "corotop", 7))
			continue;
		if (p.option_len == 7)
			r->ours = true;
		else if (rp_option_is(&p, "corotop_pid") && p.value_len == 8)
			r->pid = (int64_t)heph_be64(p.value);
		else if (rp_option_is(&p, "corotop_end") && p.value_len == 8)
			r->end_mark = heph_be64(p.value);
		else if (rp_option_is(&p, "corotop_birth") &&
			 (p.value_len == 16 || p.value_len == 24))
			rp_birth_add(r, &m, &last, &nlast, heph_be64(p.value),
				     heph_be64(p.value + 8),
				     p.value_len == 24 ? heph_be64(p.value + 16)
						       : 0);
		else if (rp_option_is(&p, "corotop_coro_pid") &&
			 p.value_len == 16)
			rp_coro_pid(r, heph_be64(p.value),
				    heph_be64(p.value + 8));
		else if (rp_option_is(&p, "corotop_kind") && p.value_len == 24)
			rp_kind_add(r, heph_be64(p.value),
				    heph_be64(p.value + 8),
				    heph_be64(p.value + 16));
		else if (rp_option_is(&p, "corotop_death") && p.value_len == 16)
			rp_death_add(r, &m, last, nlast, heph_be64(p.value),
				     heph_be64(p.value + 8));
		else if (rp_option_is(&p, "corotop_exit") &&
			 p.value_len == 16) {
			r->exited = true;
			r->exit_code = (int)(int64_t)heph_be64(p.value);
			r->exit_signal = (int)(int64_t)heph_be64(p.value + 8);
		} else if (rp_option_is(&p, "corotop_command")) {
			size_t n = p.value_len < sizeof(r->command) - 1
					   ? p.value_len
					   : sizeof(r->command) - 1;

			memcpy(r->command, p.value, n);
			r->command[n] = 0;
			for (size_t k = 0; k < n; k++)
				if ((unsigned char)r->command[k] < 0x20)
					r->command[k] = '?';
		}
	}
	streammap_finish(&m);
	free(last);
	rp_births_link(r);
	heph_stacks_init(&r->stacks, &r->f);
}

static int rp_iv_cmp(const void *a, const void *b)
{
	const struct replay_iv *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->ev < y->ev ? -1 : x->ev > y->ev;
}

/* qsort has no context argument in C11: the replay being sorted. */
static const struct replay *rp_sort_r;

static int rp_birth_cmp(const void *a, const void *b)
{
	const struct replay_coro *x = &rp_sort_r->coro[*(const uint32_t *)a];
	const struct replay_coro *y = &rp_sort_r->coro[*(const uint32_t *)b];

	if (x->birth != y->birth)
		return x->birth < y->birth ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

static int rp_id_cmp(const void *a, const void *b)
{
	uint64_t x = rp_sort_r->coro[*(const uint32_t *)a].id;
	uint64_t y = rp_sort_r->coro[*(const uint32_t *)b].id;

	return x < y ? -1 : x > y;
}

static int rp_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A loss found in the file, before it is given to its coroutine. */
struct rp_loss {
	uint64_t ts, count;
	uint32_t coro; /* UINT32_MAX: corotop's own, or nobody's */
};

static int rp_loss_cmp(const void *a, const void *b)
{
	const struct rp_loss *x = a, *y = b;

	if (x->coro != y->coro)
		return x->coro < y->coro ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Pass 1: each event's group and kind; intervals counted per group. */
static bool rp_classify(struct replay *r, struct streammap *m, uint32_t *grp,
			uint32_t **count, size_t *cap_count, size_t *nloss)
{
	const struct heph_file *f = &r->f;

	for (size_t i = 0; i < f->nev; i++) {
		const struct heph_ref *e = &f->ev[i];
		/* The description, as the index recognized it. */
		unsigned k = e->kind;
		long g;

		if (k == HEPH_DESC_LOST) {
			grp[i] = UINT32_MAX - 1;
			(*nloss)++;
			continue;
		}
		if (r->ours && k == HEPH_DESC_OTHER) {
			grp[i] = UINT32_MAX;
			r->other_events++;
			continue;
		}
		g = streammap_get(m, e->substream, r->ours ? 0 : e->stream,
				  true);
		if (g < 0 || g >= (1L << 31) - 2)
			return false;
		if ((size_t)g >= *cap_count) {
			size_t had = *cap_count;

			if (!grow_array((void **)count, cap_count,
					(size_t)g + 1, sizeof(**count)))
				return false;
			memset(*count + had, 0,
			       (*cap_count - had) * sizeof(**count));
		}
		(*count)[g]++;
		grp[i] =
			(uint32_t)g | (k == HEPH_DESC_SUSPENDED ? 0 : 1u << 31);
		if (e->end > r->t1)
			r->t1 = e->end;
	}
	return true;
}

/* A new coroutine of substream sub, zeroed otherwise; NULL: memory. */
static struct replay_coro *rp_coro_new(struct replay *r, uint64_t sub,
				       size_t *cap)
{
	struct replay_coro *c;

	if (!grow_array((void **)&r->coro, cap, r->ncoro + 1, sizeof(*r->coro)))
		return NULL;
	c = &r->coro[r->ncoro++];
	memset(c, 0, sizeof(*c));
	c->substream = sub;
	return c;
}

/* What coroutine c is told by its birth b. */
static void rp_coro_of(struct replay_coro *c, const struct replay_birth *b)
{
	c->id = b->id;
	c->name = b->name;
	c->pid = b->pid;
	c->named = b->named;
	c->nnamed = b->nnamed;
	c->kind = b->kind;
	c->kind_ts = b->kind_ts;
}

/* Coroutine of intervals iv[first .. k), born at birth (or at its first
 * start when that is unknown or later). */
static bool rp_emit(struct replay *r, uint64_t sub, size_t first, size_t k,
		    const struct replay_birth *birth, size_t *cap)
{
	struct replay_coro *c = rp_coro_new(r, sub, cap);

	if (!c)
		return false;
	c->first = (uint32_t)first;
	c->n = (uint32_t)(k - first);
	c->birth = r->iv[first].start;
	if (birth && birth->ts < c->birth)
		c->birth = birth->ts;
	if (birth) {		      /* rp_cut's births are r->birth_opt's */
		rp_coro_of(c, birth); /* its id is checked in rp_ids */
		r->birth_opt[birth - r->birth_opt].used = true;
	}
	return true;
}

/* Coroutines corotop saw born that never ran: a birth no interval came
 * to.  Each is suspended from its birth on, until its corotop_death, or
 * the next birth of its probe id (it was gone by then), or the end. */
static bool rp_unrun(struct replay *r, size_t *cap)
{
	for (size_t i = 0; i < r->nbirth_opt; i++) {
		const struct replay_birth *b = &r->birth_opt[i];
		const struct replay_birth *next =
			i + 1 < r->nbirth_opt &&
					r->birth_opt[i + 1].sub == b->sub
				? &r->birth_opt[i + 1]
				: NULL;
		struct replay_coro *c;
		uint64_t end = 0;

		if (b->used)
			continue;
		if (b->death)
			end = b->death;
		else if (next)
			end = next->ts;
		c = rp_coro_new(r, b->sub, cap);
		if (!c)
			return false;
		rp_coro_of(c, b);
		c->birth = c->end = b->ts;
		if (end) {
			c->end = end;
			c->dead = true;
		}
	}
	return true;
}

/* Cut one group's intervals iv[a .. b) (in time order) into coroutines,
 * which are then consecutive in r->coro, in time order.  corotop's
 * recordings say when each coroutine was born: the latest birth at or
 * before an interval's start owns it.  Without births, a gap between two
 * intervals is a death and a birth. */
static bool rp_cut(struct replay *r, uint64_t sub, size_t a, size_t b,
		   size_t *cap)
{
	size_t first = a, nb = 0, j = 0;
	const struct replay_birth *bb =
		r->ours ? rp_births_of(r, sub, &nb) : NULL;
	const struct replay_birth *birth = NULL, *latest = NULL;
	bool have = false;

	for (size_t k = a; k < b; k++) {
		bool born = false;

		while (j < nb && bb[j].ts <= r->iv[k].start) {
			born = true;
			latest = &bb[j++];
		}
		/* run_before still holds the interval's end (rp_group). */
		if (k > first &&
		    (born || (r->ours && !nb &&
			      r->iv[k].start > r->iv[k - 1].run_before))) {
			if (!rp_emit(r, sub, first, k, have ? birth : NULL,
				     cap))
				return false;
			first = k;
			have = false;
		}
		if (born) {
			birth = latest;
			have = true;
		}
	}
	return rp_emit(r, sub, first, b, have ? birth : NULL, cap);
}

/* Running time before each interval, births, deaths.  On entry each
 * interval's run_before holds its end (rp_group put it there, so that
 * this pass reads the intervals in order rather than the file's index at
 * random); it leaves the running time before the interval there. */
static void rp_coro_finish(struct replay *r, struct replay_coro *c)
{
	uint64_t run = 0, end = 0;

	for (uint32_t k = c->first; k < c->first + c->n; k++) {
		uint64_t iv_end = r->iv[k].run_before;

		r->iv[k].run_before = run;
		if (r->iv[k].running && iv_end > r->iv[k].start)
			run += iv_end - r->iv[k].start;
		if (iv_end > end)
			end = iv_end;
	}
	c->end = end;
	c->dead = r->ours && c->end < (r->end_mark ? r->end_mark : r->t1);
}

/* Pass 2: intervals into their groups (counting sort), then coroutines. */
static bool rp_group(struct replay *r, struct streammap *m, const uint32_t *grp,
		     uint32_t *count, size_t ngroups, uint32_t *gco)
{
	const struct heph_file *f = &r->f;
	uint64_t *pos = malloc((ngroups + 1) * sizeof(*pos));
	uint64_t *gsub = malloc((ngroups + 1) * sizeof(*gsub));
	size_t cap = 0, at = 0;

	if (!pos || !gsub) {
		free(pos);
		free(gsub);
		return false;
	}
	for (size_t g = 0; g < ngroups; g++) {
		pos[g] = at;
		at += count[g];
	}
	pos[ngroups] = at;
	for (size_t g = 0; g < ngroups; g++)
		gsub[g] = m->key[g].substream;
	r->niv = at;
	for (size_t i = 0; i < f->nev; i++) {
		uint32_t g = grp[i] & ~(1u << 31);

		if (grp[i] >= UINT32_MAX - 1)
			continue;
		r->iv[pos[g]++] = (struct replay_iv){
			.start = f->ev[i].start,
			/* The end until rp_coro_finish; never before the
			 * start (a file may say so). */
			.run_before = f->ev[i].end < f->ev[i].start
					      ? f->ev[i].start
					      : f->ev[i].end,
			.ev = (uint32_t)i,
			.running = grp[i] >> 31,
		};
	}
	at = 0;
	for (size_t g = 0; g < ngroups; g++) {
		size_t a = at, b = at + count[g];
		bool sorted = true;

		for (size_t k = a + 1; k < b && sorted; k++)
			sorted = r->iv[k - 1].start <= r->iv[k].start;
		if (!sorted)
			qsort(r->iv + a, b - a, sizeof(*r->iv), rp_iv_cmp);
		gco[g] = (uint32_t)r->ncoro;
		if (!rp_cut(r, gsub[g], a, b, &cap)) {
			free(pos);
			free(gsub);
			return false;
		}
		at = b;
	}
	gco[ngroups] = (uint32_t)r->ncoro; /* the ones that never ran after */
	if (r->ours && !rp_unrun(r, &cap)) {
		free(pos);
		free(gsub);
		return false;
	}
	free(pos);
	free(gsub);
	for (size_t k = 0; k < gco[ngroups]; k++)
		rp_coro_finish(r, &r->coro[k]);
	return true;
}

/* The coroutine of group (sub, stream) alive at ts, or the last one born
 * before it; UINT32_MAX when none.  gco[g] .. gco[g + 1]: group g's. */
static uint32_t rp_owner(const struct replay *r, struct streammap *m,
			 const uint32_t *gco, uint64_t sub, uint32_t stream,
			 uint64_t ts)
{
	long g = streammap_get(m, sub, r->ours ? 0 : stream, false);
	uint32_t lo, hi;

	if (g < 0)
		return UINT32_MAX;
	lo = gco[g];
	hi = gco[g + 1];
	/* The first born after ts; the one before it is the owner. */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->coro[mid].birth <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > gco[g] ? lo - 1 : UINT32_MAX;
}

/* a + b, or UINT64_MAX past it: loss counts come from the file, and a
 * total that wraps would report a few lost events instead of a flood. */
static uint64_t rp_sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Losses: each to its coroutine (lost, by coroutine) and to the whole
 * (glost, by time).  The running sums (cum) saturate. */
static bool rp_losses(struct replay *r, struct streammap *m,
		      const uint32_t *grp, const uint32_t *gco, size_t nloss)
{
	const struct heph_file *f = &r->f;
	struct rp_loss *l = calloc(nloss ? nloss : 1, sizeof(*l));
	size_t n = 0;

	r->lost = calloc(nloss ? nloss : 1, sizeof(*r->lost));
	r->glost = calloc(nloss ? nloss : 1, sizeof(*r->glost));
	if (!l || !r->lost || !r->glost) {
		free(l);
		return false;
	}
	for (size_t i = 0; i < f->nev && n < nloss; i++) {
		struct heph_packet p;
		uint64_t count = 1;

		if (grp[i] != UINT32_MAX - 1)
			continue;
		if (heph_file_event(f, i, &p))
			heph_packet_u64(&p, "count", &count);
		l[n].ts = f->ev[i].start;
		l[n].count = count;
		l[n].coro = f->ev[i].stream == 0 && f->ev[i].substream == 0
				    ? UINT32_MAX
				    : rp_owner(r, m, gco, f->ev[i].substream,
					       f->ev[i].stream, l[n].ts);
		r->glost[n] = (struct replay_lost){l[n].ts, count, 0};
		n++;
	}
	r->nglost = n;
	qsort(r->glost, n, sizeof(*r->glost), rp_u64_cmp); /* ts is first */
	for (size_t i = 0; i < n; i++)
		r->glost[i].cum = rp_sat_add(i ? r->glost[i - 1].cum : 0,
					     r->glost[i].count);
	qsort(l, n, sizeof(*l), rp_loss_cmp);
	for (size_t i = 0; i < n; i++) {
		struct replay_coro *c;

		if (l[i].coro == UINT32_MAX)
			break; /* sorted last */
		c = &r->coro[l[i].coro];
		if (!c->nl)
			c->lfirst = (uint32_t)r->nlost;
		r->lost[r->nlost] = (struct replay_lost){
			l[i].ts, l[i].count,
			rp_sat_add(c->nl ? r->lost[r->nlost - 1].cum : 0,
				   l[i].count)};
		c->nl++;
		r->nlost++;
	}
	free(l);
	return true;
}

/* Ids: corotop's own when every coroutine has one and no two share it
 * (the live model's, so replay and live agree), else 1, 2, ... in birth
 * order (ties: file order).  by_id lists coroutines by ascending id. */
static void rp_ids(struct replay *r)
{
	bool recorded = r->ncoro > 0;

	for (size_t k = 0; k < r->ncoro; k++) {
		r->by_id[k] = (uint32_t)k;
		recorded = recorded && r->coro[k].id;
	}
	rp_sort_r = r;
	qsort(r->by_id, r->ncoro, sizeof(*r->by_id),
	      recorded ? rp_id_cmp : rp_birth_cmp);
	for (size_t k = 1; recorded && k < r->ncoro; k++)
		recorded =
			r->coro[r->by_id[k - 1]].id != r->coro[r->by_id[k]].id;
	if (!recorded)
		qsort(r->by_id, r->ncoro, sizeof(*r->by_id), rp_birth_cmp);
	rp_sort_r = NULL;
	for (size_t k = 0; k < r->ncoro && !recorded; k++)
		r->coro[r->by_id[k]].id = k + 1;
}

/* r->ran: the moment before the deaths that end the recording -- those
 * after its last transition or birth (a kill, the program's exit) --
 * or its end when none comes after. */
static void rp_ran(struct replay *r, bool ok)
{
	uint64_t last = r->t0, first_death = UINT64_MAX;

	r->ran = r->t1;
	if (!r->ours || !ok)
		return;
	for (size_t k = 0; k < r->niv; k++)
		if (r->iv[k].start > last)
			last = r->iv[k].start;
	for (size_t k = 0; k < r->ncoro; k++)
		if (r->coro[k].birth > last)
			last = r->coro[k].birth;
	for (size_t k = 0; k < r->ncoro; k++)
		if (r->coro[k].dead && r->coro[k].end > last &&
		    r->coro[k].end < first_death)
			first_death = r->coro[k].end;
	if (first_death <= r->t1)
		r->ran = first_death - 1;
}

static bool rp_build(struct replay *r, char *err, size_t errlen)
{
	struct streammap m;
	uint32_t *grp = NULL, *count = NULL, *gco = NULL;
	size_t cap_count = 0, nloss = 0;
	bool ok = false;

	r->pid = -1;
	streammap_init(&m);
	rp_options(r);
	if (r->nbirth_opt)
		qsort(r->birth_opt, r->nbirth_opt, sizeof(*r->birth_opt),
		      rp_birth_cmp2);
	r->t0 = r->f.nev ? r->f.first_start : 0;
	grp = malloc((r->f.nev ? r->f.nev : 1) * sizeof(*grp));
	r->iv = malloc((r->f.nev ? r->f.nev : 1) * sizeof(*r->iv));
	if (grp && r->iv &&
	    rp_classify(r, &m, grp, &count, &cap_count, &nloss) &&
	    (gco = malloc((m.n + 1) * sizeof(*gco))) &&
	    rp_group(r, &m, grp, count, m.n, gco) &&
	    rp_losses(r, &m, grp, gco, nloss)) {
		r->births =
			malloc((r->ncoro ? r->ncoro : 1) * sizeof(*r->births));
		r->by_id =
			malloc((r->ncoro ? r->ncoro : 1) * sizeof(*r->by_id));
		if (r->births && r->by_id) {
			for (size_t k = 0; k < r->ncoro; k++) {
				r->births[k] = r->coro[k].birth;
				if (r->coro[k].birth < r->t0)
					r->t0 = r->coro[k].birth;
				/* A birth or death after the last interval
				 * (of one that never ran) is in it too. */
				if (r->coro[k].end > r->t1)
					r->t1 = r->coro[k].end;
			}
			qsort(r->births, r->ncoro, sizeof(*r->births),
			      rp_u64_cmp);
			rp_ids(r);
			ok = true;
		}
	}
	if (r->end_mark > r->t1)
		r->t1 = r->end_mark;
	if (r->t1 < r->t0)
		r->t1 = r->t0;
	rp_ran(r, ok);
	free(grp);
	free(count);
	free(gco);
	streammap_finish(&m);
	if (!ok)
		snprintf(err, errlen, "out of memory indexing %zu events",
			 r->f.nev);
	return ok;
}

bool replay_open(struct replay *r, const char *path, uint64_t linger_ns,
		 char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->path, sizeof(r->path), "%s", path);
	r->linger_ns = linger_ns;
	/* Replay never needs the events by start time: no sort. */
	if (!heph_file_open_flags(&r->f, path, HEPH_FILE_NOSORT, err, errlen))
		return false;
	if (rp_build(r, err, errlen))
		return true;
	replay_close(r);
	return false;
}

bool replay_open_bytes(struct replay *r, const uint8_t *p, size_t size,
		       uint64_t linger_ns, char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	r->linger_ns = linger_ns;
	if (!heph_file_index_bytes(&r->f, p, size, err, errlen))
		return false;
	if (rp_build(r, err, errlen))
		return true;
	replay_close(r);
	return false;
}

void replay_close(struct replay *r)
{
	heph_file_close(&r->f);
	free(r->iv);
	free(r->coro);
	free(r->births);
	free(r->by_id);
	free(r->birth_opt);
	free(r->kinds);
	free(r->named);
	heph_stacks_finish(&r->stacks);
	free(r->lost);
	free(r->glost);
	namepool_destroy(r->names);
	memset(r, 0, sizeof(*r));
}
