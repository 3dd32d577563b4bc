/*
 * serve: the engine published over HTTP.
 *
 * The main thread owns the engine, as in batch mode: every refresh period
 * (ticker.c) it takes one frame (engine_frame_take: the snapshot -- the
 * only time the model's lock is held, to copy the records changed since
 * that state's previous snapshot; a new state starts from the current
 * one's records, serve_seed -- the engine's statistics, the ppt
 * buffers and the hot stacks), renders the metrics in both formats, and
 * publishes the lot as one
 * immutable, reference-counted state.  A scrape only copies the rendered
 * text of the latest state under serve's own lock: however many scrapes
 * come, and however slowly they read, the engine's lock is taken once per
 * refresh, and the harvest thread never waits for a client.
 *
 * /snapshot renders batch mode's JSON object from the state it holds a
 * reference to (the rows chosen as batch mode chooses them, rowset.c: -F
 * and --sort), one render at a time (json_lock: the frame names and parked
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
#include "ui/batch/batch.h"
#include "ui/batch/batch_loop.h"
#include "ui/batch/ticker.h"
#include "ui/rows/rowset.h"
#include "ui/serve/http.h"
#include "ui/serve/metrics.h"

/* /snapshot bodies kept alive at once for slow readers (serve_snapshot). */
#define SERVE_JSON_MAX 2

struct serve_state {
	unsigned refs;		   /* under serve.lock */
	struct engine_frame frame; /* options.hot_stacks stacks, as kept */
	char *text[2];		   /* metrics, by enum metrics_format */
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
	struct rowset rows;   /* json_lock */
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
	engine_frame_finish(&st->frame);
	free(st->text[0]);
	free(st->text[1]);
	free(st);
}

static struct serve_state *serve_state_new(const struct serve *s)
{
	struct serve_state *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	/* Without memory for the hot stacks, /snapshot has none. */
	engine_frame_init(&st->frame, s->o.hot_stacks, false,
			  ENGINE_HOT_BY_FUNCTION);
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
		.s = &st->frame.snap,
		.stats = &st->frame.stats,
		.ppt = &st->frame.ppt,
		.buf = st->frame.buf,
		.nbuf = st->frame.nbuf,
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

/* A new state's records seeded from the current state's (read-only, as
 * the request threads read it), so that its first snapshot copies under
 * the engine's lock only what changed since (snapshot_seed), not every
 * record: the first refresh, and one while a slow /snapshot reader holds
 * the spare, would otherwise. */
static void serve_seed(struct serve *s, struct serve_state *st)
{
	struct serve_state *cur;

	pthread_mutex_lock(&s->lock);
	if ((cur = s->cur))
		cur->refs++;
	pthread_mutex_unlock(&s->lock);
	if (!cur)
		return;
	snapshot_seed(&st->frame.snap, &cur->frame.snap);
	serve_release(s, cur);
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
	if (!st && (st = serve_state_new(s)))
		serve_seed(s, st);
	if (!st)
		return; /* out of memory: the previous state stays */
	engine_frame_take(e, &st->frame);
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
	struct batch_ppt ppt;
	struct batch_hot hot;
	struct rowset_order order = {.column = s->o.sort_column};
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
	batch_ppt_of(&ppt, pb, s->engine, &st->frame);
	batch_hot_of(&hot, s->engine, &st->frame, false);
	/* The rows as batch mode prints them. */
	idx = rowset_rows(&s->rows, &st->frame.snap, s->o.filter, &order, &n);
	batch_print_json(f, &st->frame.snap, idx, n, &hot, &ppt);
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
	else if (s->cur->frame.snap.error)
		why = s->cur->frame.snap.error; /* engine-owned: outlives us */
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
	rowset_init(&s->rows);
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
	struct ticker t;
	bool ended = false;
	int status = 0;

	ticker_init(&t, s->o.delay_tenths, true);
	s->engine = e;
	serve_refresh(s, e);
	/* Said once there is something to serve: a client that waits for
	 * this line never sees "no metrics yet". */
	fprintf(stderr, "corotop serve: listening on %s://%s/\n",
		http_scheme(s->http), http_address(s->http));
	for (;;) {
		int sig;

		http_sweep(s->http);
		/* At least once a second: the connections' deadlines. */
		switch (ticker_wait(&t, sigs, 1000000000u, !ended, &sig)) {
		case TICKER_CHILD:
			if (ended || !engine_reap(e))
				continue;
			/* Its last words harvested, then kept as they are. */
			pthread_mutex_lock(&s->json_lock);
			engine_stop(e);
			pthread_mutex_unlock(&s->json_lock);
			serve_refresh(s, e);
			ended = true;
			pthread_mutex_lock(&s->lock);
			status = s->cur ? serve_status(&s->cur->frame.snap) : 1;
			pthread_mutex_unlock(&s->lock);
			fprintf(stderr,
				"corotop serve: the target exited (status "
				"%d); serving its final state until "
				"SIGTERM\n",
				status);
			continue;
		case TICKER_SIGNAL:
			return ended ? status : 128 + sig;
		case TICKER_FAILED:
			return 1;
		case TICKER_IDLE:
			continue;
		case TICKER_TICK:
			serve_refresh(s, e);
			continue;
		}
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
	rowset_finish(&s->rows);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->json_lock);
	webconfig_finish(&s->web);
	free(s);
}
