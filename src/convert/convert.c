/*
 * convert: a Heph trace for other tools.
 *
 * A coroutine, for chrome's tracks and for every summary: in a corotop
 * recording, a probe id (substream) from one corotop_birth to the next --
 * probe ids are reused, so a reused one is a new coroutine -- on whatever
 * streams (OS threads) it ran; in another writer's trace, a (stream,
 * substream) pair, as replay groups them.
 *
 * chrome   Chrome Trace Event JSON (the JSON Object Format), which Perfetto
 *          and chrome://tracing open.  One process for the traced program
 *          (pid: corotop_pid when it fits 31 bits, else 1; named by a
 *          process_name event from corotop_command) -- and one per child
 *          process whose coroutines were recorded (corotop_coro_pid; named
 *          "process PID") --, one thread track per
 *          coroutine (tids 1, 2, ... in order of first start, the pid
 *          skipped), named at the end by thread_name -- its corotop_name,
 *          else its WHERE (the `symbol` of its first parked interval that
 *          has one, else that interval's innermost stack frame by name),
 *          else "coroutine ID", the probe id in hex as the table spells it
 *          -- and ordered by thread_sort_index.  Each
 *          event packet is a complete event, ph "X", its description as
 *          name, ts and dur in microseconds with nanosecond decimals, every
 *          attribute in args -- arrays as JSON arrays, strings escaped
 *          (invalid UTF-8 as U+FFFD), u64 and i64 beyond 2^53 as decimal
 *          strings so that no JavaScript reader rounds them, f64
 *          infinities and NaN as null -- then "os_tid" (another writer's:
 *          "stream"), and "coroutine": its name.  Migration: a running
 *          interval on another OS thread than the coroutine's previous
 *          running interval carries "migrated_from": that thread, and a
 *          flow (ph "s" on the previous running slice, "f" with bp "e" on
 *          this one, one id) draws the arrow.  A track's slices start in
 *          order, never together: one that starts at or before the last
 *          start written on its track is moved just after it (counted in
 *          `nudged`).
 * jsonl    coroTracer's record shape, one transition per line in start
 *          order: {"probe_id","tid","addr","seq","is_active","ts"} from a
 *          "running"/"suspended" interval (its substream, stream, `addr`
 *          and `seq` attributes, start); another writer's span is two
 *          records, active at its start and inactive at its end.  A named
 *          coroutine's lines end with "name" (corotop_name).  "lost" events
 *          have no place in that shape: they are counted.
 * folded, speedscope
 *          the `stack` attributes of suspended intervals, weighted by the
 *          interval's length in nanoseconds: where coroutines spent their
 *          time parked, one profile written by either of the live
 *          export's writers (convert_parked.c).
 *
 * chrome and jsonl walk the events once in start order through the index
 * and count coroutines, streams, migrations and losses through the same
 * code, so their summaries of one file agree (convert_summary); folded and
 * speedscope walk them in file order.  Memory is the index's, the births', and
 * one entry per coroutine (with its WHERE, at most 120 bytes).
 */
#define _GNU_SOURCE
#include "convert/convert.h"
#include "convert/convert_coros.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/json_writer.h"
#include "common/jsonstr.h"
#include "engine/export/jsonl.h"
#include "engine/export/profile.h"
#include "engine/heph/hephcoronames.h"
#include "engine/heph/hephfile.h"
#include "engine/heph/hephnames.h"
#include "engine/symbols/framenames.h"
#include "engine/names/symname.h"
#include "engine/heph/streammap.h"

const struct convert_format convert_formats[] = {
	{"chrome", CONVERT_CHROME,
	 "Chrome Trace Event JSON (Perfetto, chrome://tracing)"},
	{"jsonl", CONVERT_JSONL, "coroTracer JSONL, one transition per line"},
	{"folded", CONVERT_FOLDED,
	 "folded stacks of parked time (flamegraph.pl, speedscope)"},
	{"speedscope", CONVERT_SPEEDSCOPE,
	 "the same parked time as a speedscope profile (JSON)"},
};
const size_t convert_nformats =
	sizeof(convert_formats) / sizeof(convert_formats[0]);

#define CONVERT_EXACT (UINT64_C(1) << 53) /* beyond: a JSON string */

/* ---- JSON values ---- */

/* Microseconds with nanosecond decimals. */
static void cv_us(struct json_writer *w, uint64_t ns)
{
	json_writer_valuef(w, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
}

/* Beyond 2^53 a decimal string: no JavaScript reader rounds it. */
static void cv_u64(struct json_writer *w, uint64_t v)
{
	if (v < CONVERT_EXACT)
		json_writer_uint(w, v);
	else
		json_writer_valuef(w, "\"%" PRIu64 "\"", v);
}

static void cv_i64(struct json_writer *w, int64_t v)
{
	if (v > -(int64_t)CONVERT_EXACT && v < (int64_t)CONVERT_EXACT)
		json_writer_int(w, v);
	else
		json_writer_valuef(w, "\"%" PRId64 "\"", v);
}

static void cv_f64(struct json_writer *w, double v)
{
	if (isfinite(v))
		json_writer_double(w, "%.17g", v);
	else
		json_writer_null(w);
}

/* One attribute value (array or not). */
static void cv_value(struct json_writer *w, const struct heph_attr *a)
{
	uint8_t base = a->type & (uint8_t)~HEPH_ARRAY;
	bool array = a->type & HEPH_ARRAY;
	uint32_t pos = 0;

	if (array)
		json_writer_array_begin(w);
	for (uint16_t i = 0; i < a->count; i++) {
		uint16_t len = 0;
		const char *s;

		switch (base) {
		case HEPH_U64:
			cv_u64(w, heph_attr_u64(a, i));
			break;
		case HEPH_I64:
			cv_i64(w, heph_attr_i64(a, i));
			break;
		case HEPH_F64:
			cv_f64(w, heph_attr_f64(a, i));
			break;
		default:
			s = array ? heph_attr_str_next(a, &pos, &len)
				  : heph_attr_str(a, 0, &len);
			json_writer_string_len(w, s ? s : "", s ? len : 0);
			break;
		}
	}
	if (array)
		json_writer_array_end(w);
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

/* Whether p has an attribute named `name`. */
static bool cv_has(const struct heph_packet *p, const char *name)
{
	size_t n = strlen(name);
	struct heph_attr a;
	uint32_t pos = 0;

	while (heph_attr_next(p, &pos, &a))
		if (a.name_len == n && !memcmp(a.name, name, n))
			return true;
	return false;
}

/* args: every attribute; a name seen before in the packet gets "#2"...;
 * then the stream it ran on (as `where`: "os_tid" or "stream"), the
 * stream a migration came from (from >= 0), and the coroutine's name. */
static void cv_args(struct json_writer *w, const struct heph_packet *p,
		    const char *where, const char *coro, int64_t from)
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
	json_writer_key(w, "args");
	json_writer_object_begin(w);
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
		if (dup) {
			char name[80];
			int nw = snprintf(name, sizeof(name), "%.*s#%u",
					  a.name_len > 60 ? 60 : a.name_len,
					  a.name, dup + 1);

			json_writer_key_len(w, name, (size_t)nw);
		} else {
			json_writer_key_len(w, a.name, a.name_len);
		}
		cv_value(w, &a);
		k++;
	}
	/* Ours after the packet's own, unless it has them (one key once). */
	if (!cv_has(p, where))
		json_writer_uint_field(w, where, p->stream);
	if (from >= 0 && !cv_has(p, "migrated_from"))
		json_writer_int_field(w, "migrated_from", from);
	if (coro && !cv_has(p, "coroutine"))
		json_writer_string_field(w, "coroutine", coro);
	json_writer_object_end(w);
	free(dups);
}

struct cv_chrome {
	struct json_writer w;
	struct convert_coros cs;
	uint32_t pid;
	uint64_t flows; /* flow ids handed out */
	convert_name_fn fn;
	void *ctx;
};

/* The separator before the next trace event: one per line. */
static void cv_next(struct cv_chrome *ch)
{
	json_writer_break(&ch->w, "\n");
}

/* The process a coroutine's track is in: its own (a child of the
 * program's), else the program's. */
static uint32_t cv_pid(const struct cv_chrome *ch, const struct convert_coro *c)
{
	return c && c->pid ? c->pid : ch->pid;
}

/* A metadata event: `what` of (pid, tid) is {key: text or number}. */
static void cv_meta(struct cv_chrome *ch, const char *what, uint32_t pid,
		    uint32_t tid, const char *key, const char *text,
		    uint64_t num)
{
	struct json_writer *w = &ch->w;

	cv_next(ch);
	json_writer_object_begin(w);
	json_writer_string_field(w, "ph", "M");
	json_writer_string_field(w, "name", what);
	json_writer_uint_field(w, "pid", pid);
	json_writer_uint_field(w, "tid", tid);
	json_writer_key(w, "args");
	json_writer_object_begin(w);
	json_writer_key(w, key);
	if (text)
		json_writer_string(w, text);
	else
		json_writer_uint(w, num);
	json_writer_object_end(w);
	json_writer_object_end(w);
}

/* One half of a migration's flow: "s" on the interval it left, "f" on
 * the one it arrived at (bound to the slice around ts: bp "e"). */
static void cv_flow(struct cv_chrome *ch, const struct convert_coro *c,
		    bool end, uint64_t ts)
{
	struct json_writer *w = &ch->w;

	cv_next(ch);
	json_writer_object_begin(w);
	json_writer_string_field(w, "name", "migration");
	json_writer_string_field(w, "cat", "migration");
	json_writer_string_field(w, "ph", end ? "f" : "s");
	if (end)
		json_writer_string_field(w, "bp", "e");
	json_writer_uint_field(w, "id", ch->flows);
	json_writer_uint_field(w, "pid", cv_pid(ch, c));
	json_writer_uint_field(w, "tid", c->tid);
	json_writer_key(w, "ts");
	cv_us(w, ts);
	json_writer_object_end(w);
}

static bool cv_chrome_event(struct cv_chrome *ch, const struct heph_packet *p,
			    struct convert_stats *st)
{
	bool lost = convert_desc_is(p, "lost");
	uint64_t start = p->start,
		 dur = p->end > p->start ? p->end - p->start : 0;
	int64_t from;
	struct convert_coro *c = convert_coro_of(&ch->cs, p, lost, &from);
	struct json_writer *w = &ch->w;

	if (!c)
		return false;
	if (!c->tid) {
		/* Tracks numbered from 1 in order of first event; the
		 * program's pid is skipped (its main thread's number). */
		c->tid = (uint32_t)ch->cs.n + (ch->cs.n >= ch->pid);
	}
	convert_coro_where(c, p, ch->fn, ch->ctx);
	/* One track's slices start in order and never together: the same
	 * start (or an earlier one, after a nudge) would hide one. */
	if (c->seen && p->start <= c->last_out && c->last_out < UINT64_MAX) {
		start = c->last_out + 1;
		/* The end stays: the start moved start - p->start ns. */
		dur = dur > start - p->start ? dur - (start - p->start) : 0;
		st->nudged++;
	} else if (c->seen && p->start <= c->last_out) {
		start = c->last_out;
	}
	c->seen = true;
	c->last_out = start;
	if (from >= 0) {
		ch->flows++;
		cv_flow(ch, c, false, c->ran_ts);
		cv_flow(ch, c, true, start);
	}
	if (convert_desc_is(p, "running"))
		c->ran_ts = start;
	cv_next(ch);
	json_writer_object_begin(w);
	json_writer_key(w, "name");
	json_writer_string_len(w, p->desc, p->desc_len);
	json_writer_string_field(w, "cat", "heph");
	json_writer_string_field(w, "ph", "X");
	json_writer_uint_field(w, "pid", cv_pid(ch, c));
	json_writer_uint_field(w, "tid", c->tid);
	json_writer_key(w, "ts");
	cv_us(w, start);
	json_writer_key(w, "dur");
	cv_us(w, dur);
	cv_args(w, p, ch->cs.ours ? "os_tid" : "stream", c->name, from);
	json_writer_object_end(w);
	st->written++;
	return true;
}

/* The track's name: the coroutine's, its WHERE, or its number. */
static void cv_track_name(const struct cv_chrome *ch,
			  const struct convert_coro *c, char *buf, size_t n)
{
	if (c->name)
		snprintf(buf, n, "%s", c->name);
	else if (c->where)
		snprintf(buf, n, "%s", c->where);
	else if (ch->cs.ours && !c->sub)
		snprintf(buf, n, "corotop");
	else if (ch->cs.ours) /* its probe id as the table spells it */
		snprintf(buf, n, "coroutine %" PRIx64, c->sub);
	else
		snprintf(buf, n, "substream %" PRIu64 " (stream %" PRIu32 ")",
			 c->sub, c->stream);
}

static bool cv_chrome(const struct heph_file *hf,
		      const struct heph_coronames *cn, FILE *f,
		      convert_name_fn fn, void *ctx, struct convert_stats *st)
{
	struct cv_chrome ch = {.fn = fn, .ctx = ctx};
	char name[200];
	bool ok = true;

	json_writer_init(&ch.w, f);
	convert_coros_init(&ch.cs, hf, cn, st);
	/* One process: the traced program, by its pid when it fits. */
	ch.pid = ch.cs.pid && ch.cs.pid <= INT32_MAX ? (uint32_t)ch.cs.pid : 1;
	if (!ch.cs.ours)
		snprintf(name, sizeof(name), "Heph trace");
	else if (ch.cs.command[0] && ch.cs.pid)
		snprintf(name, sizeof(name), "%s (pid %" PRIu64 ")",
			 ch.cs.command, ch.cs.pid);
	else
		snprintf(name, sizeof(name), "%s",
			 ch.cs.command[0] ? ch.cs.command
					  : "corotop recording");
	json_writer_object_begin(&ch.w);
	json_writer_string_field(&ch.w, "displayTimeUnit", "ns");
	json_writer_key(&ch.w, "traceEvents");
	json_writer_array_begin(&ch.w);
	cv_meta(&ch, "process_name", ch.pid, 0, "name", name, 0);
	for (size_t k = 0; k < hf->nev && ok; k++) {
		struct heph_packet p;

		if (!heph_file_event(hf, hf->by_start ? hf->by_start[k] : k,
				     &p)) {
			st->skipped++;
			continue;
		}
		st->events++;
		ok = cv_chrome_event(&ch, &p, st);
	}
	/* Names last: a coroutine's WHERE is known once it parked. */
	for (size_t i = 0; i < ch.cs.n && ok; i++) {
		const struct convert_coro *c = &ch.cs.c[i];

		cv_track_name(&ch, c, name, sizeof(name));
		/* A child process's tracks: that process named by its pid
		 * (once per run of coroutines in it). */
		if (c->pid && (!i || ch.cs.c[i - 1].pid != c->pid)) {
			char proc[48];

			snprintf(proc, sizeof(proc), "process %" PRIu32,
				 c->pid);
			cv_meta(&ch, "process_name", c->pid, 0, "name", proc,
				0);
		}
		cv_meta(&ch, "thread_name", cv_pid(&ch, c), c->tid, "name",
			name, 0);
		cv_meta(&ch, "thread_sort_index", cv_pid(&ch, c), c->tid,
			"sort_index", NULL, i);
	}
	json_writer_raw(&ch.w, "\n");
	json_writer_array_end(&ch.w);
	json_writer_object_end(&ch.w);
	json_writer_raw(&ch.w, "\n");
	json_writer_finish(&ch.w);
	convert_coros_finish(&ch.cs);
	return ok;
}

/* ---- jsonl ---- */

static void cv_line(FILE *f, const struct heph_packet *p, bool active,
		    uint64_t ts, const char *name)
{
	uint64_t addr = 0, seq = 0;
	char line[256];

	heph_packet_u64(p, "addr", &addr);
	heph_packet_u64(p, "seq", &seq);
	/* The live --jsonl log's formatting, then the name it lacks. */
	jsonl_format(line, sizeof(line), p->substream, p->stream, addr, seq,
		     active, ts);
	fputs(line, f);
	if (name) {
		fputs(",\"name\":", f);
		jsonstr_write_cstr(f, name);
	}
	fputs("}\n", f);
}

static bool cv_jsonl(const struct heph_file *hf,
		     const struct heph_coronames *cn, FILE *f,
		     struct convert_stats *st)
{
	struct convert_coros cs;
	bool ok = true;

	/* The coroutines only for the summary (the lines name no track). */
	convert_coros_init(&cs, hf, cn, st);
	for (size_t k = 0; k < hf->nev && ok; k++) {
		struct heph_packet p;
		bool lost;
		int64_t from;
		const struct convert_coro *c;

		if (!heph_file_event(hf, hf->by_start ? hf->by_start[k] : k,
				     &p)) {
			st->skipped++;
			continue;
		}
		st->events++;
		lost = convert_desc_is(&p, "lost");
		c = convert_coro_of(&cs, &p, lost, &from);
		if (!c) {
			ok = false;
		} else if (lost) {
			st->skipped++;
		} else if (convert_desc_is(&p, "running") ||
			   convert_desc_is(&p, "suspended")) {
			cv_line(f, &p, convert_desc_is(&p, "running"), p.start,
				c->name);
			st->written++;
		} else {
			cv_line(f, &p, true, p.start, c->name);
			cv_line(f, &p, false, p.end, c->name);
			st->written += 2;
		}
	}
	convert_coros_finish(&cs);
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
		ok = cv_chrome(f, &cn, out, names, ctx, st);
		break;
	case CONVERT_JSONL:
		ok = cv_jsonl(f, &cn, out, st);
		break;
	case CONVERT_FOLDED:
		ok = convert_parked(f, &profile_folded, out, names, ctx, st);
		break;
	case CONVERT_SPEEDSCOPE:
		ok = convert_parked(f, &profile_speedscope, out, names, ctx,
				    st);
		break;
	default:
		heph_coronames_finish(&cn);
		snprintf(err, errlen, "unknown format");
		return false;
	}
	heph_coronames_finish(&cn);
	/* The profile writers say false for a failed write too. */
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

const char *convert_summary(const struct convert_stats *st, char *buf,
			    size_t len)
{
	snprintf(buf, len,
		 "%" PRIu64 " events, %" PRIu64 " coroutines on %" PRIu64
		 " streams, %" PRIu64 " migrations, %" PRIu64 " lost",
		 st->events, st->coroutines, st->streams, st->migrations,
		 st->lost);
	return buf;
}

/* ---- corotop convert ---- */

/* Profile frames by function: "func+0x1a (f.c:3)" is folded as "func". */
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
	/* chrome and jsonl go in start order, the profiles in file order. */
	if (!heph_file_open_flags(&c->f, in,
				  to == CONVERT_FOLDED ||
						  to == CONVERT_SPEEDSCOPE
					  ? HEPH_FILE_NOSORT
					  : 0,
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
