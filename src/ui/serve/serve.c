/*
 * serve: the engine published over HTTP.
 *
 * The main thread owns the engine, as in batch mode: every refresh period
 * it takes one snapshot (engine_snapshot: the only time the model's lock
 * is held), the engine's statistics, the ppt buffers and the hot stacks,
 * renders the metrics in both formats, and publishes the lot as one
 * immutable, reference-counted state.  A scrape only copies the rendered
 * text of the latest state under serve's own lock: however many scrapes
 * come, and however slowly they read, the engine's lock is taken once per
 * refresh, and the harvest thread never waits for a client.
 *
 * /snapshot renders batch mode's JSON object from the state it holds a
 * reference to (the rows ordered as batch mode orders them: -F and
 * --sort), one render at a time (json_lock: the frame names and parked
 * stacks it asks the engine for are asked by one thread at a time, as in
 * batch mode; engine_stop waits for it).  Its "ppt" member has each
 * buffer's state but no frames: those are batch mode's "since the
 * previous snapshot", which a server with many clients has no one
 * previous snapshot for.
 *
 * When the target exits (SIGCHLD), the engine drains its last words, the
 * final state is published, and serve keeps answering from it -- target
 * up 0 and its exit status -- until a signal stops it.
 */
#define _GNU_SOURCE
#include "ui/serve/serve.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/grow.h"
#include "ui/batch/batch.h"
#include "ui/rows/order.h"
#include "ui/serve/http.h"
#include "ui/serve/metrics.h"

/* /snapshot bodies kept alive at once for slow readers (serve_snapshot). */
#define SERVE_JSON_MAX 2

struct serve_state {
	unsigned refs; /* under serve.lock */
	struct snapshot snap;
	struct engine_stats stats;
	struct engine_ppt_info ppt;
	struct engine_ppt_buffer buf[ENGINE_PPT_MAX_BUFFERS];
	size_t nbuf;
	struct engine_calltrace_stats ct;
	struct engine_hot_stack *hot; /* options.hot_stacks of them */
	size_t nhot;
	char *text[2]; /* metrics, by enum metrics_format */
	size_t len[2];
	struct serve_json *json; /* its /snapshot, once asked for */
};

struct serve {
	struct serve_options o;
	struct http *http;
	struct engine *engine;
	pthread_mutex_t lock; /* cur, spare and every state's refs */
	struct serve_state *cur, *spare;
	/* One /snapshot render at a time; engine_stop takes it too. */
	pthread_mutex_t json_lock;
	struct order order; /* json_lock */
	uint32_t *idx;
	size_t cap_idx;
	struct webconfig web; /* --web-config (empty without) */
	/* Rendered /snapshot bodies alive, and the newest (lock). */
	unsigned njson;
	struct serve_json *newest;
};

struct serve_json;
static void serve_json_put(struct serve_json *j);

static void serve_state_free(struct serve_state *st)
{
	if (!st)
		return;
	serve_json_put(st->json);
	snapshot_finish(&st->snap);
	free(st->hot);
	free(st->text[0]);
	free(st->text[1]);
	free(st);
}

static struct serve_state *serve_state_new(const struct serve *s)
{
	struct serve_state *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	snapshot_init(&st->snap);
	if (s->o.hot_stacks)
		st->hot = calloc(s->o.hot_stacks, sizeof(*st->hot));
	return st;
}

/* Drop a reference; the last one keeps the state for the next refresh
 * (its snapshot's arrays are reused) or frees it. */
static void serve_release(struct serve *s, struct serve_state *st)
{
	struct serve_state *drop = NULL;

	pthread_mutex_lock(&s->lock);
	if (--st->refs == 0) {
		if (!s->spare)
			s->spare = st;
		else
			drop = st;
	}
	pthread_mutex_unlock(&s->lock);
	serve_state_free(drop);
}

static bool serve_render(struct serve_state *st, unsigned top_where,
			 enum metrics_format fmt)
{
	struct metrics_input in = {
		.s = &st->snap,
		.stats = &st->stats,
		.ppt = &st->ppt,
		.buf = st->buf,
		.nbuf = st->nbuf,
		.top_where = top_where,
	};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	bool ok;

	if (!f)
		return false;
	ok = metrics_render(f, &in, fmt);
	if (fclose(f) || !ok) {
		free(text);
		return false;
	}
	free(st->text[fmt]);
	st->text[fmt] = text;
	st->len[fmt] = len;
	return true;
}

/* Main thread: a new state from the engine, published. */
void serve_refresh(struct serve *s, struct engine *e)
{
	struct serve_state *st, *old;

	/* Set once, before the first state is published (under s->lock):
	 * the request threads read it only after taking a state. */
	if (s->engine != e)
		s->engine = e;

	pthread_mutex_lock(&s->lock);
	st = s->spare;
	s->spare = NULL;
	pthread_mutex_unlock(&s->lock);
	if (st) { /* a spare: its JSON was the old state's */
		serve_json_put(st->json);
		st->json = NULL;
	}
	if (!st)
		st = serve_state_new(s);
	if (!st)
		return; /* out of memory: the previous state stays */
	engine_snapshot(e, &st->snap);
	engine_stats(e, &st->stats);
	engine_ppt_info(e, &st->ppt);
	st->nbuf = st->ppt.enabled ? engine_ppt_buffers(e, st->buf,
							ENGINE_PPT_MAX_BUFFERS)
				   : 0;
	engine_calltrace_stats(e, &st->ct);
	st->nhot = st->ct.enabled && st->hot
			   ? engine_hot_stacks(e, 0, ENGINE_HOT_BY_TOTAL,
					       st->hot, s->o.hot_stacks)
			   : 0;
	if (!serve_render(st, s->o.top_where, METRICS_PROMETHEUS) ||
	    !serve_render(st, s->o.top_where, METRICS_OPENMETRICS)) {
		fprintf(stderr, "corotop serve: out of memory rendering the "
				"metrics; serving the previous ones\n");
		serve_state_free(st);
		return;
	}
	pthread_mutex_lock(&s->lock);
	old = s->cur;
	st->refs = 1; /* the publication's */
	s->cur = st;
	pthread_mutex_unlock(&s->lock);
	if (old)
		serve_release(s, old);
}

/* ---- the HTTP source ---- */

static bool serve_metrics(void *ctx, enum metrics_format fmt, char **body,
			  size_t *len)
{
	struct serve *s = ctx;
	bool ok = false;

	pthread_mutex_lock(&s->lock);
	if (s->cur && (*body = malloc(s->cur->len[fmt] + 1))) {
		memcpy(*body, s->cur->text[fmt], s->cur->len[fmt]);
		*len = s->cur->len[fmt];
		ok = true;
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

static const char *serve_frame_name(void *ctx, uint64_t addr, bool leaf,
				    bool full, char *buf, size_t len)
{
	return engine_frame_name(ctx, addr, leaf, full, buf, len);
}

static size_t serve_parked(void *ctx, const struct model_coro *c,
			   uint64_t *frames, size_t max, uint64_t *trace_id)
{
	return engine_parked_stack_of(ctx, c, frames, max, trace_id);
}

/* The rows as batch mode prints them (json_lock held); NULL: all, in
 * snapshot order (no memory). */
static const uint32_t *serve_rows(struct serve *s, const struct snapshot *snap,
				  size_t *n)
{
	struct filter none;
	struct filter *f = s->o.filter;
	const uint32_t *idx = NULL;

	if (!grow_array_fit((void **)&s->idx, &s->cap_idx, snap->count,
			    sizeof(*s->idx)))
		return NULL;
	if (!f) {
		filter_init(&none);
		f = &none;
	}
	*n = filter_select(f, snap, s->idx);
	if (order_sort(&s->order, snap, s->idx, *n, s->o.sort_column, false,
		       false))
		idx = s->idx;
	if (f == &none)
		filter_finish(&none);
	return idx;
}

/* One /snapshot rendered: every answer that sends it holds a reference,
 * and so does its state while it is the one rendered for it. */
struct serve_json {
	struct serve *owner;
	unsigned refs; /* under serve.lock */
	size_t len;
	char *data;
};

/* Drop a reference to j (NULL: none); the last one frees it. */
static void serve_json_put(struct serve_json *j)
{
	struct serve *s;
	bool last;

	if (!j)
		return;
	s = j->owner;
	pthread_mutex_lock(&s->lock);
	last = --j->refs == 0;
	if (last) {
		s->njson--;
		if (s->newest == j)
			s->newest = NULL;
	}
	pthread_mutex_unlock(&s->lock);
	if (last) {
		free(j->data);
		free(j);
	}
}

static void serve_json_release(void *cls)
{
	serve_json_put(cls);
}

/* The state's JSON, rendered (json_lock held); NULL: out of memory. */
static struct serve_json *serve_json_render(struct serve *s,
					    struct serve_state *st)
{
	struct batch_ppt_buffer pb[ENGINE_PPT_MAX_BUFFERS];
	struct batch_ppt ppt = {0};
	struct batch_hot hot = {0};
	struct serve_json *j = calloc(1, sizeof(*j));
	const uint32_t *idx;
	size_t n = 0;
	FILE *f;

	if (!j)
		return NULL;
	j->owner = s;
	f = open_memstream(&j->data, &j->len);
	if (!f) {
		free(j);
		return NULL;
	}
	ppt.info = st->ppt;
	for (size_t i = 0; i < st->nbuf; i++)
		pb[i] = (struct batch_ppt_buffer){
			.b = st->buf[i], .desc = engine_ppt_desc(s->engine, i)};
	ppt.buf = pb;
	ppt.n = st->nbuf;
	hot = (struct batch_hot){.s = st->hot,
				 .n = st->nhot,
				 .ct = &st->ct,
				 .name = serve_frame_name,
				 .parked = serve_parked,
				 .ctx = s->engine};
	idx = serve_rows(s, &st->snap, &n);
	batch_print_json(f, &st->snap, idx, n, &hot, &ppt);
	if (fclose(f)) {
		free(j->data);
		free(j);
		return NULL;
	}
	return j;
}

/*
 * The current state's JSON, shared: rendered once per state, by the first
 * request that asks (one render at a time: json_lock).  Bodies held by
 * answers still being sent are bounded: with SERVE_JSON_MAX of them alive,
 * a request gets the newest rendered instead of a new one (a refresh or
 * two old) -- sixty clients that never read hold one copy, not sixty.
 */
static bool serve_snapshot(void *ctx, struct http_body *out)
{
	struct serve *s = ctx;
	struct serve_state *st;
	struct serve_json *j = NULL;

	pthread_mutex_lock(&s->lock);
	st = s->cur;
	if (st) {
		st->refs++;
		if ((j = st->json))
			j->refs++;
	}
	pthread_mutex_unlock(&s->lock);
	if (!st)
		return false;
	if (!j) {
		pthread_mutex_lock(&s->json_lock);
		pthread_mutex_lock(&s->lock);
		if ((j = st->json) ||
		    (s->njson >= SERVE_JSON_MAX && (j = s->newest)))
			j->refs++;
		pthread_mutex_unlock(&s->lock);
		if (!j && (j = serve_json_render(s, st))) {
			pthread_mutex_lock(&s->lock);
			j->refs = 2; /* the state's and this answer's */
			st->json = j;
			s->newest = j;
			s->njson++;
			pthread_mutex_unlock(&s->lock);
		}
		pthread_mutex_unlock(&s->json_lock);
	}
	serve_release(s, st);
	if (!j)
		return false;
	*out = (struct http_body){j->data, j->len, serve_json_release, j};
	return true;
}

static const char *serve_unhealthy(void *ctx)
{
	struct serve *s = ctx;
	const char *why = NULL;

	pthread_mutex_lock(&s->lock);
	if (!s->cur)
		why = "starting";
	else if (s->cur->snap.error)
		why = s->cur->snap.error; /* engine-owned: outlives us */
	pthread_mutex_unlock(&s->lock);
	return why;
}

struct serve *serve_create(const struct serve_options *o, bool *usage,
			   char *err, size_t errlen)
{
	struct serve *s = calloc(1, sizeof(*s));
	struct http_config hc;
	struct http_source src;

	*usage = false;
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->o = *o;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->json_lock, NULL);
	order_init(&s->order);
	src = (struct http_source){.metrics = serve_metrics,
				   .snapshot = serve_snapshot,
				   .unhealthy = serve_unhealthy,
				   .ctx = s};
	http_config_defaults(&hc);
	if (o->listen)
		hc.listen = o->listen;
	if (o->web_config) {
		if (!webconfig_load(&s->web, o->web_config, err, errlen)) {
			*usage = true;
			serve_destroy(s);
			return NULL;
		}
		hc.web = &s->web;
	}
	s->http = http_create(&hc, &src, usage, err, errlen);
	if (!s->http) {
		serve_destroy(s);
		return NULL;
	}
	return s;
}

const char *serve_address(const struct serve *s)
{
	return http_address(s->http);
}

static int serve_status(const struct snapshot *snap)
{
	if (snap->target.term_signal)
		return 128 + snap->target.term_signal;
	return snap->target.exit_code;
}

int serve_run(struct serve *s, struct engine *e, const sigset_t *sigs)
{
	uint64_t period = (uint64_t)s->o.delay_tenths * 100000000u;
	uint64_t next = clock_now_ns(CLOCK_MONOTONIC) + period;
	bool ended = false;
	int status = 0;

	s->engine = e;
	serve_refresh(s, e);
	/* Said once there is something to serve: a client that waits for
	 * this line never sees "no metrics yet". */
	fprintf(stderr, "corotop serve: listening on %s://%s/\n",
		http_scheme(s->http), http_address(s->http));
	for (;;) {
		uint64_t now = clock_now_ns(CLOCK_MONOTONIC);
		/* At least once a second: the connections' deadlines. */
		struct timespec wait = {ended ? 1 : 0, 0};
		siginfo_t si;
		int sig;

		http_sweep(s->http);
		if (!ended && now < next) {
			wait.tv_sec = (time_t)((next - now) / 1000000000u);
			wait.tv_nsec = (long)((next - now) % 1000000000u);
		}
		if (wait.tv_sec >= 1)
			wait = (struct timespec){1, 0};
		sig = sigtimedwait(sigs, &si, &wait);
		if (sig == SIGCHLD) {
			if (ended || !engine_reap(e))
				continue;
			/* Its last words harvested, then kept as they are. */
			pthread_mutex_lock(&s->json_lock);
			engine_stop(e);
			pthread_mutex_unlock(&s->json_lock);
			serve_refresh(s, e);
			ended = true;
			pthread_mutex_lock(&s->lock);
			status = s->cur ? serve_status(&s->cur->snap) : 1;
			pthread_mutex_unlock(&s->lock);
			fprintf(stderr,
				"corotop serve: the target exited (status "
				"%d); serving its final state until "
				"SIGTERM\n",
				status);
			continue;
		}
		if (sig == SIGWINCH)
			continue;
		if (sig > 0)
			return ended ? status : 128 + sig;
		if (sig < 0 && errno != EAGAIN && errno != EINTR)
			return 1;
		if (ended || clock_now_ns(CLOCK_MONOTONIC) < next)
			continue;
		next += period;
		/* Behind by more than a period (a stopped process): start
		 * the schedule over rather than refresh in a burst. */
		if (next < clock_now_ns(CLOCK_MONOTONIC))
			next = clock_now_ns(CLOCK_MONOTONIC) + period;
		serve_refresh(s, e);
	}
}

void serve_destroy(struct serve *s)
{
	if (!s)
		return;
	http_destroy(s->http); /* no request runs past here */
	if (s->cur)
		serve_state_free(s->cur);
	serve_state_free(s->spare);
	order_finish(&s->order);
	free(s->idx);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->json_lock);
	webconfig_finish(&s->web);
	free(s);
}
