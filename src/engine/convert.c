/*
 * convert: a Heph trace for other tools.
 *
 * chrome   Chrome Trace Event JSON (the JSON Object Format), which Perfetto
 *          and chrome://tracing open.  One process per stream and one
 *          thread per substream, named by "M" events; each event packet is
 *          a complete event, ph "X", its description as name, ts and dur in
 *          microseconds with nanosecond decimals, and every attribute in
 *          args -- arrays as JSON arrays, strings escaped (invalid UTF-8 as
 *          U+FFFD), u64 and i64 beyond 2^53 as decimal strings so that no
 *          JavaScript reader rounds them, f64 infinities and NaN as null.
 *          A substream beyond 2^31 gets a small thread id of its own (its
 *          name keeps the real one).  A named coroutine (corotop_name)
 *          names its thread, "NAME (substream N)", after the first one
 *          seen on it, and every event's args carry "coroutine": NAME.  Two
 * events of one thread that start at the same nanosecond would hide each other:
 * the later one is moved 1 ns later (counted in `nudged`). jsonl coroTracer's
 * record shape, one transition per line in start-time order:
 * {"probe_id","tid","addr","seq","is_active","ts"} from a "running"/"suspended"
 * interval (its substream, stream, `addr` and `seq` attributes, start); another
 * writer's span is two records, active at its start and inactive at its end.  A
 * named coroutine's lines end with "name" (corotop_name).  "lost" events have
 * no place in that shape: they are counted. folded   the `stack` attributes of
 * suspended intervals, weighted by the interval's length in nanoseconds: where
 * coroutines spent their time parked.  Frames are named by the caller (names
 * recorded in the trace), else hex.
 *
 * Everything is written in one pass in file order (chrome, folded) or in
 * start order through the index (jsonl); memory is the index's plus one
 * entry per thread.
 */
#define _GNU_SOURCE
#include "engine/convert.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/jsonstr.h"
#include "engine/export/profile.h"
#include "engine/heph/hephcoronames.h"
#include "engine/heph/hephfile.h"
#include "engine/heph/hephnames.h"
#include "engine/symbols/framenames.h"
#include "engine/symbols/symname.h"
#include "engine/heph/streammap.h"

const struct convert_format convert_formats[] = {
	{"chrome", CONVERT_CHROME,
	 "Chrome Trace Event JSON (Perfetto, chrome://tracing)"},
	{"jsonl", CONVERT_JSONL, "coroTracer JSONL, one transition per line"},
	{"folded", CONVERT_FOLDED,
	 "folded stacks of parked time (flamegraph.pl, speedscope)"},
};
const size_t convert_nformats =
	sizeof(convert_formats) / sizeof(convert_formats[0]);

#define CONVERT_EXACT (UINT64_C(1) << 53) /* beyond: a JSON string */

/* ---- chrome ---- */

/* A Chrome thread: one (stream, substream) pair of the trace. */
struct cv_thread {
	bool named;
	bool seen;
	uint64_t tid;	   /* as written */
	uint64_t last;	   /* the last start seen (as in the file) */
	uint64_t last_out; /* ... and as written */
};

struct cv_map {
	struct streammap pairs; /* (stream, substream) -> t[number] */
	struct cv_thread *t;
	size_t n, cap;
	uint64_t next_tid;	  /* for substreams beyond 2^31 */
	struct streammap streams; /* (stream, 0): the streams named so far */
};

static void cv_map_init(struct cv_map *m)
{
	memset(m, 0, sizeof(*m));
	streammap_init(&m->pairs);
	streammap_init(&m->streams);
}

static void cv_map_finish(struct cv_map *m)
{
	streammap_finish(&m->pairs);
	streammap_finish(&m->streams);
	free(m->t);
}

static struct cv_thread *cv_thread(struct cv_map *m, uint64_t sub,
				   uint32_t stream)
{
	long k = streammap_get(&m->pairs, sub, stream, true);

	if (k < 0)
		return NULL;
	/* A new pair: its record, in the order the pairs are numbered. */
	if ((size_t)k >= m->n &&
	    !grow_array((void **)&m->t, &m->cap, (size_t)k + 1, sizeof(*m->t)))
		return NULL;
	for (; m->n <= (size_t)k; m->n++) {
		uint64_t s = m->pairs.key[m->n].substream;

		m->t[m->n] = (struct cv_thread){
			.tid = s <= INT32_MAX
				       ? s
				       : (uint64_t)INT32_MAX + ++m->next_tid,
		};
	}
	return &m->t[k];
}

/* 1 the first time a stream is seen, 0 after, -1 out of memory. */
static int cv_new_stream(struct cv_map *m, uint32_t stream)
{
	size_t had = m->streams.n;

	if (streammap_get(&m->streams, 0, stream, true) < 0)
		return -1;
	return m->streams.n > had;
}

static void cv_us(FILE *f, uint64_t ns)
{
	fprintf(f, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
}

static void cv_u64(FILE *f, uint64_t v)
{
	fprintf(f, v < CONVERT_EXACT ? "%" PRIu64 : "\"%" PRIu64 "\"", v);
}

static void cv_i64(FILE *f, int64_t v)
{
	bool exact = v > -(int64_t)CONVERT_EXACT && v < (int64_t)CONVERT_EXACT;

	fprintf(f, exact ? "%" PRId64 : "\"%" PRId64 "\"", v);
}

static void cv_f64(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.17g", v);
	else
		fputs("null", f);
}

/* One attribute value (array or not). */
static void cv_value(FILE *f, const struct heph_attr *a)
{
	uint8_t base = a->type & (uint8_t)~HEPH_ARRAY;
	bool array = a->type & HEPH_ARRAY;
	uint32_t pos = 0;

	if (array)
		fputc('[', f);
	for (uint16_t i = 0; i < a->count; i++) {
		uint16_t len = 0;
		const char *s;

		if (i)
			fputc(',', f);
		switch (base) {
		case HEPH_U64:
			cv_u64(f, heph_attr_u64(a, i));
			break;
		case HEPH_I64:
			cv_i64(f, heph_attr_i64(a, i));
			break;
		case HEPH_F64:
			cv_f64(f, heph_attr_f64(a, i));
			break;
		default:
			s = array ? heph_attr_str_next(a, &pos, &len)
				  : heph_attr_str(a, 0, &len);
			jsonstr_write(f, s ? s : "", s ? len : 0);
			break;
		}
	}
	if (array)
		fputc(']', f);
}

struct cv_name {
	const char *name;
	uint32_t len, i; /* i: the attribute's position */
};

static int cv_name_cmp(const void *x, const void *y)
{
	const struct cv_name *a = x, *b = y;
	int c = memcmp(a->name, b->name, a->len < b->len ? a->len : b->len);

	if (c)
		return c;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

/* How many attributes before each one in p carry its name: dup[i] for
 * the i-th (n of them).  Sorted by (name, position), O(n log n) -- a
 * packet of a lying file may hold millions.  False: out of memory. */
static bool cv_dups(const struct heph_packet *p, uint32_t n, uint32_t *dup)
{
	struct cv_name *v = malloc((n ? n : 1) * sizeof(*v));
	struct heph_attr a;
	uint32_t pos = 0, k = 0;

	if (!v)
		return false;
	while (k < n && heph_attr_next(p, &pos, &a)) {
		v[k] = (struct cv_name){a.name, a.name_len, k};
		k++;
	}
	qsort(v, k, sizeof(*v), cv_name_cmp);
	for (uint32_t j = 0; j < k; j++)
		dup[v[j].i] = j && v[j - 1].len == v[j].len &&
					      !memcmp(v[j - 1].name, v[j].name,
						      v[j].len)
				      ? dup[v[j - 1].i] + 1
				      : 0;
	free(v);
	return true;
}

/* args: every attribute; a name seen before in the packet gets "#2"...;
 * then "coroutine": the coroutine's name, when it has one. */
static void cv_args(FILE *f, const struct heph_packet *p, const char *coro)
{
	struct heph_attr a, b;
	uint32_t pos = 0, k = 0, n = 0, *dups = NULL;

	/* Many attributes: their duplicates by sorting, not by rescanning
	 * the ones before each (quadratic). */
	while (heph_attr_next(p, &pos, &a))
		n++;
	pos = 0;
	if (n > 32) {
		dups = malloc(n * sizeof(*dups));
		if (dups && !cv_dups(p, n, dups)) {
			free(dups);
			dups = NULL;
		}
	}
	fputs(",\"args\":{", f);
	while (heph_attr_next(p, &pos, &a)) {
		uint32_t dup = 0, pos2 = 0;

		if (dups)
			dup = k < n ? dups[k] : 0;
		else
			for (uint32_t j = 0;
			     j < k && heph_attr_next(p, &pos2, &b); j++)
				if (b.name_len == a.name_len &&
				    !memcmp(b.name, a.name, a.name_len))
					dup++;
		if (k)
			fputc(',', f);
		if (dup) {
			char name[80];
			int w = snprintf(name, sizeof(name), "%.*s#%u",
					 a.name_len > 60 ? 60 : a.name_len,
					 a.name, dup + 1);

			jsonstr_write(f, name, (size_t)w);
		} else {
			jsonstr_write(f, a.name, a.name_len);
		}
		fputc(':', f);
		cv_value(f, &a);
		k++;
	}
	if (coro) {
		fputs(k ? ",\"coroutine\":" : "\"coroutine\":", f);
		jsonstr_write_cstr(f, coro);
	}
	fputc('}', f);
	free(dups);
}

static bool cv_chrome_event(FILE *f, struct cv_map *m,
			    const struct heph_coronames *cn,
			    const struct heph_packet *p,
			    struct convert_stats *st, bool *first)
{
	struct cv_thread *t = cv_thread(m, p->substream, p->stream);
	uint64_t start = p->start,
		 dur = p->end > p->start ? p->end - p->start : 0;
	int fresh = cv_new_stream(m, p->stream);
	const char *coro = heph_coronames_at(cn, p->substream, p->start);
	char name[128];
	int n;

	if (!t || fresh < 0)
		return false;
	if (fresh) {
		n = snprintf(name, sizeof(name), "stream %" PRIu32, p->stream);
		fprintf(f,
			"%s\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":"
			"%" PRIu32 ",\"tid\":0,\"args\":{\"name\":",
			*first ? "" : ",", p->stream);
		jsonstr_write(f, name, (size_t)n);
		fputs("}}", f);
		*first = false;
	}
	if (!t->named) {
		/* The track is named after the first coroutine seen on it
		 * (a probe id may be reused: each event's args say whose). */
		n = coro ? snprintf(name, sizeof(name),
				    "%s (substream %" PRIu64 ")", coro,
				    p->substream)
			 : snprintf(name, sizeof(name), "substream %" PRIu64,
				    p->substream);
		fprintf(f,
			"%s\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":"
			"%" PRIu32 ",\"tid\":%" PRIu64 ",\"args\":{\"name\":",
			*first ? "" : ",", p->stream, t->tid);
		jsonstr_write(f, name, (size_t)n);
		fputs("}}", f);
		t->named = true;
		*first = false;
	}
	/* Same thread, same start: one would hide the other. */
	if (t->seen && p->start == t->last && t->last_out < UINT64_MAX) {
		start = t->last_out + 1;
		/* The end stays: the start moved start - p->start ns. */
		dur = dur > start - p->start ? dur - (start - p->start) : 0;
		st->nudged++;
	}
	t->seen = true;
	t->last = p->start;
	t->last_out = start;
	fprintf(f, "%s\n{\"name\":", *first ? "" : ",");
	jsonstr_write(f, p->desc, p->desc_len);
	fprintf(f,
		",\"cat\":\"heph\",\"ph\":\"X\",\"pid\":%" PRIu32
		",\"tid\":%" PRIu64 ",\"ts\":",
		p->stream, t->tid);
	cv_us(f, start);
	fputs(",\"dur\":", f);
	cv_us(f, dur);
	cv_args(f, p, coro);
	fputc('}', f);
	*first = false;
	st->written++;
	return true;
}

static bool cv_chrome(const struct heph_file *hf,
		      const struct heph_coronames *cn, FILE *f,
		      struct convert_stats *st)
{
	struct cv_map m;
	bool first = true, ok = true;

	cv_map_init(&m);

	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
	for (size_t i = 0; i < hf->nev && ok; i++) {
		struct heph_packet p;

		if (!heph_file_event(hf, i, &p)) {
			st->skipped++;
			continue;
		}
		st->events++;
		ok = cv_chrome_event(f, &m, cn, &p, st, &first);
	}
	fputs("\n]}\n", f);
	cv_map_finish(&m);
	return ok;
}

/* ---- jsonl ---- */

static void cv_line(FILE *f, const struct heph_packet *p, bool active,
		    uint64_t ts, const char *name)
{
	uint64_t addr = 0, seq = 0;

	heph_packet_u64(p, "addr", &addr);
	heph_packet_u64(p, "seq", &seq);
	fprintf(f,
		"{\"probe_id\":%" PRIu64 ",\"tid\":%" PRIu32
		",\"addr\":\"0x%016" PRIx64 "\",\"seq\":%" PRIu64
		",\"is_active\":%s,\"ts\":%" PRIu64,
		p->substream, p->stream, addr, seq, active ? "true" : "false",
		ts);
	if (name) {
		fputs(",\"name\":", f);
		jsonstr_write_cstr(f, name);
	}
	fputs("}\n", f);
}

static bool cv_is(const struct heph_packet *p, const char *s)
{
	size_t n = strlen(s);

	return p->desc_len == n && !memcmp(p->desc, s, n);
}

static bool cv_jsonl(const struct heph_file *hf,
		     const struct heph_coronames *cn, FILE *f,
		     struct convert_stats *st)
{
	for (size_t k = 0; k < hf->nev; k++) {
		struct heph_packet p;
		uint64_t count = 1;
		const char *name;

		if (!heph_file_event(hf, hf->by_start[k], &p)) {
			st->skipped++;
			continue;
		}
		st->events++;
		if (cv_is(&p, "lost")) {
			heph_packet_u64(&p, "count", &count);
			/* From the file: saturate, never wrap. */
			st->lost = count > UINT64_MAX - st->lost
					   ? UINT64_MAX
					   : st->lost + count;
			st->skipped++;
			continue;
		}
		name = heph_coronames_at(cn, p.substream, p.start);
		if (cv_is(&p, "running") || cv_is(&p, "suspended")) {
			cv_line(f, &p, cv_is(&p, "running"), p.start, name);
			st->written++;
		} else {
			cv_line(f, &p, true, p.start, name);
			cv_line(f, &p, false, p.end, name);
			st->written += 2;
		}
	}
	return true;
}

/* ---- folded ---- */

#define CV_FRAMES 256

static bool cv_folded(const struct heph_file *hf, FILE *f, convert_name_fn fn,
		      void *ctx, struct convert_stats *st)
{
	static char buf[CV_FRAMES][256];
	const char *names[CV_FRAMES];
	struct profile prof;
	bool ok = true;

	if (!profile_init(&prof, "parked"))
		return false;
	for (size_t i = 0; i < hf->nev && ok; i++) {
		struct heph_packet p;
		struct heph_attr a;
		uint32_t pos = 0;

		if (!heph_file_event(hf, i, &p)) {
			st->skipped++;
			continue;
		}
		st->events++;
		if (!cv_is(&p, "suspended") || p.end <= p.start)
			continue;
		while (heph_attr_next(&p, &pos, &a)) {
			uint16_t n = a.count < CV_FRAMES ? a.count : CV_FRAMES;

			if (a.name_len != 5 || memcmp(a.name, "stack", 5) ||
			    a.type != (HEPH_U64 | HEPH_ARRAY) || !n)
				continue;
			for (uint16_t k = 0; k < n; k++) {
				uint64_t addr = heph_attr_u64(&a, k);
				const char *name =
					fn ? fn(ctx, addr, !k) : NULL;

				/* A copy: fn may reuse its buffer. */
				if (name)
					snprintf(buf[k], sizeof(buf[k]), "%s",
						 name);
				else
					snprintf(buf[k], sizeof(buf[k]),
						 "0x%" PRIx64, addr);
				names[k] = buf[k];
			}
			ok = profile_add(&prof, names, NULL, n,
					 p.end - p.start);
			st->written++;
			break;
		}
	}
	if (ok)
		ok = profile_folded.write(f, &prof);
	profile_finish(&prof);
	return ok;
}

bool convert_write(const struct heph_file *f, enum convert_to to, FILE *out,
		   convert_name_fn names, void *ctx, struct convert_stats *st,
		   char *err, size_t errlen)
{
	struct heph_coronames cn;
	bool ok;

	memset(st, 0, sizeof(*st));
	/* Coroutine names, for chrome's tracks and jsonl's lines. */
	heph_coronames_init(&cn, f);
	switch (to) {
	case CONVERT_CHROME:
		ok = cv_chrome(f, &cn, out, st);
		break;
	case CONVERT_JSONL:
		ok = cv_jsonl(f, &cn, out, st);
		break;
	case CONVERT_FOLDED:
		ok = cv_folded(f, out, names, ctx, st);
		break;
	default:
		heph_coronames_finish(&cn);
		snprintf(err, errlen, "unknown format");
		return false;
	}
	heph_coronames_finish(&cn);
	/* folded's writer says false for a failed write too. */
	if (!ok && !ferror(out)) {
		snprintf(err, errlen, "out of memory");
		return false;
	}
	if (!ok || fflush(out) || ferror(out)) {
		snprintf(err, errlen, "writing the output: %s",
			 strerror(errno ? errno : EIO));
		return false;
	}
	return true;
}

/* ---- corotop convert ---- */

/* Folded frames by function: "func+0x1a (f.c:3)" is folded as "func". */
static const char *convert_name(void *ctx, uint64_t addr, bool leaf)
{
	static char buf[HEPH_NAME_LEN + 1];
	const char *n = heph_names_find(ctx, framename_key(addr, leaf));
	size_t len;

	if (!n)
		return NULL;
	len = symname_function_len(n); /* "operator+(int) const+0x1a" */
	if (!len || len > HEPH_NAME_LEN)
		return n;
	memcpy(buf, n, len);
	buf[len] = 0;
	return buf;
}

struct convert {
	struct heph_file f;
	struct heph_names names;
	enum convert_to to;
};

struct convert *convert_create(const char *in, enum convert_to to,
			       convert_problem_fn problem, void *ctx,
			       struct convert_result *res, char *err,
			       size_t errlen)
{
	struct convert *c = calloc(1, sizeof(*c));

	memset(res, 0, sizeof(*res));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->to = to;
	/* Only jsonl goes in start order. */
	if (!heph_file_open_flags(&c->f, in,
				  to == CONVERT_JSONL ? 0 : HEPH_FILE_NOSORT,
				  err, errlen)) {
		free(c);
		return NULL;
	}
	res->events = c->f.nev;
	res->problems = c->f.problems_total;
	res->told = problem ? c->f.nproblems : 0;
	for (size_t i = 0; problem && i < c->f.nproblems; i++)
		problem(ctx, c->f.problems[i].off, c->f.problems[i].what);
	heph_names_init(&c->names, &c->f);
	return c;
}

bool convert_write_to(struct convert *c, FILE *out, struct convert_result *res,
		      char *err, size_t errlen)
{
	return convert_write(&c->f, c->to, out, convert_name, &c->names,
			     &res->st, err, errlen);
}

void convert_destroy(struct convert *c)
{
	if (!c)
		return;
	heph_names_finish(&c->names);
	heph_file_close(&c->f);
	free(c);
}
