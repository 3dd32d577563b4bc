/*
 * metrics: one snapshot as Prometheus text.
 *
 * Every family is aggregated: counts by state, by lint kind, by buffer,
 * and the K WHERE locations with the most suspended coroutines (the rest
 * summed as where="other"; one that has not switched yet has no WHERE and
 * is in neither), never a series per coroutine, so the number of series
 * is bounded by K whatever the program does.
 *
 * The two formats differ only in a few places, written once here:
 *   - a counter family is named without _total in OpenMetrics' HELP and
 *     TYPE lines and with it in 0.0.4's; its sample is name_total in both;
 *   - OpenMetrics has UNIT lines, a gaugehistogram type (_bucket, _gcount,
 *     _gsum) and ends with "# EOF";
 *   - 0.0.4 has no gauge histogram: the nearest equivalent is the same
 *     buckets as a histogram-typed family (_bucket, _count, _sum), as the
 *     Python client writes one; its values are gauges all the same (they
 *     go down), so they are read directly, never through rate().
 *
 * One pass over the snapshot finds the histograms, the oldest suspended
 * coroutine and the suspended count of each WHERE address (a hash table
 * of the addresses, sized for the suspended count); a min-heap of K keeps
 * the top ones, and only those K are named.
 */
#include "ui/serve/metrics.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/utf8.h"

const double metrics_state_bounds[METRICS_STATE_BUCKETS] = {
	0.001, 0.01, 0.1, 1, 5, 10, 60, 600, 3600,
};

const char *metrics_content_type(enum metrics_format f)
{
	return f == METRICS_OPENMETRICS
		       ? "application/openmetrics-text; version=1.0.0; "
			 "charset=utf-8"
		       : "text/plain; version=0.0.4; charset=utf-8";
}

bool metrics_target_up(const struct snapshot *s)
{
	if (!s->target.pid)
		return !s->error; /* observer: the region is readable */
	return !s->target.exited;
}

/* ---- writing ---- */

struct mw {
	FILE *f;
	enum metrics_format fmt;
};

static bool mw_om(const struct mw *w)
{
	return w->fmt == METRICS_OPENMETRICS;
}

/* HELP and TYPE (and OpenMetrics' UNIT) of family `name`: a counter's
 * name without _total. */
static void mw_family(struct mw *w, const char *name, const char *type,
		      const char *unit, const char *help)
{
	bool counter = !strcmp(type, "counter");
	const char *suffix = counter && !mw_om(w) ? "_total" : "";

	if (!mw_om(w) && !strcmp(type, "gaugehistogram"))
		type = "histogram";
	fprintf(w->f, "# HELP %s%s %s\n", name, suffix, help);
	fprintf(w->f, "# TYPE %s%s %s\n", name, suffix, type);
	if (mw_om(w) && unit)
		fprintf(w->f, "# UNIT %s %s\n", name, unit);
}

void metrics_label_value(FILE *f, const char *v)
{
	const unsigned char *p = (const unsigned char *)v;
	size_t n = strlen(v);

	for (size_t i = 0; i < n;) {
		size_t len;

		if (p[i] == '\\' || p[i] == '"') {
			fputc('\\', f);
			fputc(p[i++], f);
		} else if (p[i] == '\n') {
			fputs("\\n", f);
			i++;
		} else if (p[i] < 0x80) {
			fputc(p[i++], f);
		} else if ((len = utf8_len(p + i, n - i)) != 0) {
			fwrite(p + i, 1, len, f);
			i += len;
		} else {
			fputs("\xef\xbf\xbd", f); /* U+FFFD */
			i++;
		}
	}
}

/* name{key="value"} or name, then a space: a sample's start. */
static void mw_name(struct mw *w, const char *name, const char *suffix,
		    const char *key, const char *value)
{
	fprintf(w->f, "%s%s", name, suffix);
	if (key) {
		fprintf(w->f, "{%s=\"", key);
		metrics_label_value(w->f, value);
		fputs("\"}", w->f);
	}
	fputc(' ', w->f);
}

static void mw_u64(struct mw *w, const char *name, const char *suffix,
		   const char *key, const char *value, uint64_t v)
{
	mw_name(w, name, suffix, key, value);
	fprintf(w->f, "%" PRIu64 "\n", v);
}

static void mw_double(struct mw *w, const char *name, const char *key,
		      const char *value, double v)
{
	mw_name(w, name, "", key, value);
	fprintf(w->f, "%.9g\n", v);
}

/* A family of one unlabelled sample. */
static void mw_counter1(struct mw *w, const char *name, const char *help,
			uint64_t v)
{
	mw_family(w, name, "counter", NULL, help);
	mw_u64(w, name, "_total", NULL, NULL, v);
}

static void mw_gauge1(struct mw *w, const char *name, const char *help,
		      uint64_t v)
{
	mw_family(w, name, "gauge", NULL, help);
	mw_u64(w, name, "", NULL, NULL, v);
}

/* ---- the pass over the coroutines ---- */

struct where_count {
	uint64_t addr;
	uint64_t n; /* 0: an empty slot */
};

struct metrics_pass {
	/* Per state (MODEL_RUNNING, MODEL_SUSPENDED, MODEL_DEAD order as
	 * metrics_states): bucket counts (not yet cumulative), sum. */
	uint64_t bucket[3][METRICS_STATE_BUCKETS + 1];
	double sum[3];
	uint64_t count[3];
	uint64_t oldest_age_ns, longest_wait_ns;
	struct where_count *table; /* open addressing, mask + 1 slots */
	size_t mask;
	uint64_t suspended;
};

static const struct {
	uint8_t state;
	const char *name;
} metrics_states[3] = {
	{MODEL_RUNNING, "running"},
	{MODEL_SUSPENDED, "suspended"},
	{MODEL_DEAD, "dead"},
};

static int metrics_state_index(uint8_t state)
{
	if (state == MODEL_RUNNING)
		return 0;
	if (state == MODEL_DEAD)
		return 2;
	return 1; /* as model_totals_count counts it */
}

static void where_add(struct metrics_pass *p, uint64_t addr, uint64_t n)
{
	size_t i = (size_t)hash_fib(addr, 32) & p->mask;

	while (p->table[i].n && p->table[i].addr != addr)
		i = (i + 1) & p->mask;
	p->table[i].addr = addr;
	p->table[i].n += n;
}

static bool metrics_scan(const struct snapshot *s, struct metrics_pass *p)
{
	size_t slots = 16;

	memset(p, 0, sizeof(*p));
	/* At most one address per suspended row: at most half full. */
	while (slots < 2 * (size_t)s->t.suspended)
		slots *= 2;
	p->table = calloc(slots, sizeof(*p->table));
	if (!p->table)
		return false;
	p->mask = slots - 1;
	for (size_t i = 0; i < s->count; i++) {
		const struct model_coro *c = &s->coro[i];
		int k = metrics_state_index(c->state);
		uint64_t in = snapshot_in_state_ns(s, c);
		double sec = (double)in / 1e9;
		size_t b = 0;

		while (b < METRICS_STATE_BUCKETS &&
		       sec > metrics_state_bounds[b])
			b++;
		p->bucket[k][b]++;
		p->sum[k] += sec;
		p->count[k]++;
		if (k != 1)
			continue;
		if (snapshot_age_ns(s, c) > p->oldest_age_ns)
			p->oldest_age_ns = snapshot_age_ns(s, c);
		if (in > p->longest_wait_ns)
			p->longest_wait_ns = in;
		/* Grown only for a snapshot whose totals undercount its
		 * rows (engine snapshots count them as they copy). */
		if (2 * (p->suspended + 1) > p->mask + 1) {
			struct where_count *old = p->table;
			size_t n = p->mask + 1;

			p->table = calloc(2 * n, sizeof(*p->table));
			if (!p->table) {
				free(old);
				return false;
			}
			p->mask = 2 * n - 1;
			for (size_t j = 0; j < n; j++)
				if (old[j].n)
					where_add(p, old[j].addr, old[j].n);
			free(old);
		}
		/* No switch yet (a coroutine opened and not harvested, a
		 * context never resumed): no WHERE to count it at, never a
		 * where="0x0" series. */
		if (!c->last_addr)
			continue;
		where_add(p, c->last_addr, 1);
		p->suspended++;
	}
	return true;
}

/* a ranks above b: more suspended, then the lower address. */
static bool where_above(const struct where_count *a,
			const struct where_count *b)
{
	return a->n > b->n || (a->n == b->n && a->addr < b->addr);
}

/* heap[0] is the lowest-ranked of the n kept. */
static void heap_down(struct where_count *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct where_count t;

		if (l < n && where_above(&h[m], &h[l]))
			m = l;
		if (r < n && where_above(&h[m], &h[r]))
			m = r;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static int where_cmp(const void *a, const void *b)
{
	const struct where_count *x = a, *y = b;

	return where_above(x, y) ? -1 : where_above(y, x) ? 1 : 0;
}

/* The top k of the table into top (at most k), best first. */
static size_t where_top(const struct metrics_pass *p, struct where_count *top,
			size_t k)
{
	size_t n = 0;

	for (size_t i = 0; k && i <= p->mask; i++) {
		const struct where_count *c = &p->table[i];

		if (!c->n)
			continue;
		if (n < k) {
			top[n++] = *c;
			if (n == k)
				for (size_t j = k / 2 + 1; j-- > 0;)
					heap_down(top, n, j);
		} else if (where_above(c, &top[0])) {
			top[0] = *c;
			heap_down(top, n, 0);
		}
	}
	qsort(top, n, sizeof(*top), where_cmp);
	return n;
}

static const char *metrics_where_default(void *ctx, const struct snapshot *s,
					 uint64_t addr, char *buf, size_t n)
{
	(void)ctx;
	return snapshot_where(s, addr, true, buf, n);
}

#define METRICS_WHERE_TEXT 256

/* corotop_suspended_where: the top K by their names, equal names (two
 * addresses that read alike) merged into one series. */
static bool metrics_where(struct mw *w, const struct metrics_input *in,
			  const struct metrics_pass *p)
{
	size_t k = in->top_where > METRICS_TOP_WHERE_MAX ? METRICS_TOP_WHERE_MAX
							 : in->top_where;
	struct where_count *top = calloc(k ? k : 1, sizeof(*top));
	char(*names)[METRICS_WHERE_TEXT] = calloc(k ? k : 1, sizeof(*names));
	const char *(*where)(void *, const struct snapshot *, uint64_t, char *,
			     size_t) =
		in->where ? in->where : metrics_where_default;
	uint64_t shown = 0;
	size_t n;

	if (!top || !names) {
		free(top);
		free(names);
		return false;
	}
	n = where_top(p, top, k);
	for (size_t i = 0; i < n; i++) {
		const char *t = where(in->ctx, in->s, top[i].addr, names[i],
				      METRICS_WHERE_TEXT);

		if (t != names[i])
			snprintf(names[i], METRICS_WHERE_TEXT, "%s", t);
		/* "other" is the rest's: a location named so is told apart. */
		if (!strcmp(names[i], "other"))
			snprintf(names[i], METRICS_WHERE_TEXT, "other ");
		for (size_t j = 0; j < i; j++)
			if (top[j].n && !strcmp(names[j], names[i])) {
				top[j].n += top[i].n;
				top[i].n = 0;
				break;
			}
	}
	mw_family(w, "corotop_suspended_where", "gauge", NULL,
		  "Suspended coroutines by where they last switched, the top "
		  "--top-where locations, the rest summed as where other.");
	for (size_t i = 0; i < n; i++) {
		if (!top[i].n)
			continue;
		mw_u64(w, "corotop_suspended_where", "", "where", names[i],
		       top[i].n);
		shown += top[i].n;
	}
	mw_u64(w, "corotop_suspended_where", "", "where", "other",
	       p->suspended - shown);
	free(top);
	free(names);
	return true;
}

/* corotop_coroutine_state_seconds: a gauge histogram per state. */
static void metrics_state_histogram(struct mw *w, const struct metrics_pass *p)
{
	const char *name = "corotop_coroutine_state_seconds";

	mw_family(w, name, "gaugehistogram", "seconds",
		  "How long the current coroutines have been in their state.");
	for (int k = 0; k < 3; k++) {
		uint64_t cum = 0;

		for (size_t b = 0; b <= METRICS_STATE_BUCKETS; b++) {
			cum += p->bucket[k][b];
			fprintf(w->f, "%s_bucket{state=\"%s\",le=\"", name,
				metrics_states[k].name);
			if (b < METRICS_STATE_BUCKETS)
				fprintf(w->f, "%g", metrics_state_bounds[b]);
			else
				fputs("+Inf", w->f);
			fprintf(w->f, "\"} %" PRIu64 "\n", cum);
		}
		fprintf(w->f, "%s_%scount{state=\"%s\"} %" PRIu64 "\n", name,
			mw_om(w) ? "g" : "", metrics_states[k].name,
			p->count[k]);
		fprintf(w->f, "%s_%ssum{state=\"%s\"} %.9g\n", name,
			mw_om(w) ? "g" : "", metrics_states[k].name, p->sum[k]);
	}
}

static void metrics_ppt(struct mw *w, const struct metrics_input *in)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} counters[] = {
		{"corotop_ppt_frames_delivered",
		 "ppt frames read from the buffer.",
		 offsetof(struct engine_ppt_buffer, delivered)},
		{"corotop_ppt_frames_lost",
		 "ppt frames overwritten before they were read.",
		 offsetof(struct engine_ppt_buffer, lost)},
		{"corotop_ppt_frames_torn",
		 "ppt frames overwritten while they were read.",
		 offsetof(struct engine_ppt_buffer, torn)},
	};

	if (!in->ppt || !in->ppt->enabled)
		return;
	for (size_t c = 0; c < sizeof(counters) / sizeof(*counters); c++) {
		mw_family(w, counters[c].name, "counter", NULL,
			  counters[c].help);
		for (size_t i = 0; i < in->nbuf; i++) {
			uint64_t v;

			memcpy(&v, (const char *)&in->buf[i] + counters[c].off,
			       sizeof(v));
			mw_u64(w, counters[c].name, "_total", "buffer",
			       in->buf[i].name, v);
		}
	}
	mw_family(w, "corotop_ppt_attached", "gauge", NULL,
		  "1 while corotop reads the ppt buffer, else 0.");
	for (size_t i = 0; i < in->nbuf; i++)
		mw_u64(w, "corotop_ppt_attached", "", "buffer", in->buf[i].name,
		       in->buf[i].state == ENGINE_PPT_ATTACHED);
}

static void metrics_totals(struct mw *w, const struct snapshot *s)
{
	const struct model_totals *t = &s->t;

	mw_family(w, "corotop_coroutines", "gauge", NULL,
		  "Coroutines by state.");
	mw_u64(w, "corotop_coroutines", "", "state", "running", t->running);
	mw_u64(w, "corotop_coroutines", "", "state", "suspended", t->suspended);
	mw_u64(w, "corotop_coroutines", "", "state", "dead", t->dead);
	mw_counter1(w, "corotop_coroutines_seen",
		    "Coroutines seen since corotop started.",
		    t->coroutines_seen);
	mw_counter1(w, "corotop_events_harvested",
		    "Events (switches and census records) harvested.",
		    t->events);
	mw_counter1(w, "corotop_events_lost",
		    "Events overwritten before corotop read them.", t->lost);
	mw_counter1(w, "corotop_events_untraced",
		    "Switches the probe made while nothing traced.",
		    t->untraced);
	mw_counter1(w, "corotop_events_torn",
		    "Event slots overwritten while corotop read them.",
		    t->torn);
	mw_counter1(w, "corotop_switches",
		    "Coroutine switches harvested (events less the census).",
		    t->events >= t->census ? t->events - t->census : 0);
	mw_gauge1(w, "corotop_stations_allocated",
		  "Stations in use by coroutines.", t->stations_allocated);
	mw_gauge1(w, "corotop_stations_max", "Stations the region holds.",
		  t->stations_max);
	mw_counter1(w, "corotop_stations_recycled",
		    "Stations given to a new coroutine after a dead one.",
		    t->recycled);
	mw_counter1(w, "corotop_contexts_untracked",
		    "Contexts the interposer could not track (its table was "
		    "full: COROTOP_CONTEXTS).",
		    s->contexts_untracked);
	mw_counter1(w, "corotop_switches_unseen",
		    "Switches the interposer found made where it could not "
		    "see them (a longjmp it cannot decode, a runtime's own "
		    "assembly): the states shown may be wrong.",
		    s->switches_unseen);
	mw_family(w, "corotop_frames_rejected", "counter", NULL,
		  "Stack walks stopped at a frame that is no return address "
		  "into the program's code.");
	mw_u64(w, "corotop_frames_rejected", "_total", "why", "not_code",
	       s->frames_not_code);
	mw_u64(w, "corotop_frames_rejected", "_total", "why", "not_after_call",
	       s->frames_not_after_call);
	mw_family(w, "corotop_lints", "gauge", NULL,
		  "Coroutines that trip each lint now.");
	for (int k = 0; k < LINT_COUNT; k++) {
		char kind[32];

		/* lint_name is "lost-wakeup": label values in snake_case. */
		snprintf(kind, sizeof(kind), "%s", lint_name(k));
		for (char *c = kind; *c; c++)
			if (*c == '-')
				*c = '_';
		mw_u64(w, "corotop_lints", "", "kind", kind, s->warn_counts[k]);
	}
}

static void metrics_health(struct mw *w, const struct metrics_input *in)
{
	const struct snapshot *s = in->s;

	mw_gauge1(w, "corotop_engine_sleeping",
		  "1 while the engine sleeps, waiting for the probe's wake.",
		  s->sleeping);
	mw_gauge1(w, "corotop_engine_error",
		  "1 after the engine stopped on an error, else 0.",
		  s->error != NULL);
	if (in->stats) {
		mw_counter1(w, "corotop_engine_sleeps",
			    "Times the engine went to sleep.",
			    in->stats->sleeps);
		mw_counter1(w, "corotop_engine_scans", "Scans of the stations.",
			    in->stats->scans);
	}
	mw_gauge1(w, "corotop_target_up",
		  "1 while the watched program runs, else 0.",
		  metrics_target_up(s));
	if (s->target.exited) {
		int status = s->target.term_signal ? 128 + s->target.term_signal
						   : s->target.exit_code;

		mw_family(w, "corotop_target_exit_status", "gauge", NULL,
			  "The exit status of the program, 128 + N when "
			  "signal N ended it.");
		fprintf(w->f, "corotop_target_exit_status %d\n", status);
	}
}

bool metrics_render(FILE *f, const struct metrics_input *in,
		    enum metrics_format fmt)
{
	struct mw w = {f, fmt};
	struct metrics_pass p;
	bool ok;

	if (!metrics_scan(in->s, &p))
		return false;
	metrics_totals(&w, in->s);
	mw_family(&w, "corotop_suspended_oldest_age_seconds", "gauge",
		  "seconds",
		  "Age of the oldest suspended coroutine (0: none suspended).");
	mw_double(&w, "corotop_suspended_oldest_age_seconds", NULL, NULL,
		  (double)p.oldest_age_ns / 1e9);
	mw_family(&w, "corotop_suspended_longest_seconds", "gauge", "seconds",
		  "Longest time a coroutine has been suspended now.");
	mw_double(&w, "corotop_suspended_longest_seconds", NULL, NULL,
		  (double)p.longest_wait_ns / 1e9);
	metrics_state_histogram(&w, &p);
	ok = metrics_where(&w, in, &p);
	metrics_ppt(&w, in);
	metrics_health(&w, in);
	if (mw_om(&w))
		fputs("# EOF\n", f);
	free(p.table);
	return ok;
}
