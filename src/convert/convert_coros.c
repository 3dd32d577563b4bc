/*
 * convert_coros: the coroutines of a trace for the converters.
 *
 * A probe id is reused: a corotop recording says where with a
 * corotop_birth option (probe id, time, corotop's id), so a substream's
 * intervals belong to the coroutine of the latest birth at or before
 * them; a trace without births (another writer's) has one coroutine per
 * (stream, substream) pair, the grouping replay uses.  Births are read
 * once, sorted by (probe id, time) and found by binary search; the
 * coroutines are found by key in a streammap.  Each is counted once in the
 * shared statistics (coroutines, streams, migrations), so chrome and jsonl
 * summarize a file with the same numbers.  At most CV_BIRTHS_MAX births
 * are kept.
 */
#define _GNU_SOURCE
#include "convert/convert_coros.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"

#define CV_BIRTHS_MAX (1u << 24)
#define CV_WHERE_MAX 120 /* bytes of a WHERE kept for a track name */

static int cv_birth_cmp(const void *a, const void *b)
{
	const struct convert_birth *x = a, *y = b;

	if (x->sub != y->sub)
		return x->sub < y->sub ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static bool cv_option_is(const struct heph_packet *p, const char *name)
{
	size_t n = strlen(name);

	return p->option_len == n && !memcmp(p->option, name, n);
}

/* corotop's options: the program (pid, command) and every birth. */
static void cv_options(struct convert_coros *cs, const struct heph_file *f)
{
	size_t cap = 0;

	for (size_t i = 0; i < f->nmeta_off; i++) {
		struct heph_packet p;

		if (!heph_file_option(f, i, &p))
			continue;
		if (cv_option_is(&p, "corotop")) {
			cs->ours = true;
		} else if (cv_option_is(&p, "corotop_pid") &&
			   p.value_len == 8) {
			cs->pid = heph_be64(p.value);
		} else if (cv_option_is(&p, "corotop_command")) {
			size_t n = p.value_len < sizeof(cs->command) - 1
					   ? p.value_len
					   : sizeof(cs->command) - 1;

			/* Untrusted: printable ASCII only. */
			for (size_t k = 0; k < n; k++)
				cs->command[k] =
					p.value[k] >= 0x20 && p.value[k] < 0x7f
						? (char)p.value[k]
						: '?';
			cs->command[n] = 0;
		} else if (cv_option_is(&p, "corotop_birth") &&
			   (p.value_len == 16 || p.value_len == 24) &&
			   cs->nbirths < CV_BIRTHS_MAX &&
			   grow_array((void **)&cs->births, &cap,
				      cs->nbirths + 1, sizeof(*cs->births))) {
			cs->births[cs->nbirths++] = (struct convert_birth){
				.sub = heph_be64(p.value),
				.ts = heph_be64(p.value + 8),
				.id = p.value_len == 24
					      ? heph_be64(p.value + 16)
					      : 0,
			};
		} else if (cv_option_is(&p, "corotop_coro_pid") &&
			   p.value_len == 16 && cs->nbirths &&
			   cs->births[cs->nbirths - 1].id ==
				   heph_be64(p.value) &&
			   heph_be64(p.value + 8) <= INT32_MAX) {
			/* Right after its birth (file order, not sorted
			 * yet). */
			cs->births[cs->nbirths - 1].pid =
				(uint32_t)heph_be64(p.value + 8);
		}
	}
	if (cs->nbirths)
		qsort(cs->births, cs->nbirths, sizeof(*cs->births),
		      cv_birth_cmp);
	if (!cs->ours) /* another writer's options mean nothing to us */
		cs->nbirths = 0;
}

void convert_coros_init(struct convert_coros *cs, const struct heph_file *f,
			const struct heph_coronames *cn,
			struct convert_stats *st)
{
	memset(cs, 0, sizeof(*cs));
	streammap_init(&cs->keys);
	streammap_init(&cs->streams);
	cs->cn = cn;
	cs->st = st;
	cv_options(cs, f);
}

void convert_coros_finish(struct convert_coros *cs)
{
	for (size_t i = 0; i < cs->n; i++)
		free(cs->c[i].where);
	free(cs->c);
	free(cs->births);
	streammap_finish(&cs->keys);
	streammap_finish(&cs->streams);
}

/* 1 + the latest birth of sub at or before ts, 0 when there is none. */
static uint32_t cv_birth_at(const struct convert_coros *cs, uint64_t sub,
			    uint64_t ts)
{
	size_t lo = 0, hi = cs->nbirths;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct convert_birth *b = &cs->births[mid];

		if (b->sub < sub || (b->sub == sub && b->ts <= ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && cs->births[lo - 1].sub == sub ? (uint32_t)lo : 0;
}

/*
 * The coroutine of event p, and the summary's counts.  In a corotop
 * recording a coroutine is a probe id from one corotop_birth to the next
 * (ids are reused), whatever stream it ran on; in another writer's trace
 * it is a (stream, substream) pair, as replay groups them.  *from: the
 * stream a running interval migrated from, or -1.  NULL: no memory.
 */
struct convert_coro *convert_coro_of(struct convert_coros *cs,
				     const struct heph_packet *p, bool lost,
				     int64_t *from)
{
	uint32_t b = cs->ours ? cv_birth_at(cs, p->substream, p->start) : 0;
	long k = streammap_get(&cs->keys, p->substream,
			       cs->ours ? b : p->stream, true);
	struct convert_coro *c;

	*from = -1;
	if (k < 0)
		return NULL;
	if ((size_t)k >= cs->n) {
		if (!grow_array((void **)&cs->c, &cs->cap, (size_t)k + 1,
				sizeof(*cs->c)))
			return NULL;
		cs->c[k] = (struct convert_coro){
			.sub = p->substream,
			.id = b ? cs->births[b - 1].id : 0,
			.pid = b ? cs->births[b - 1].pid : 0,
			.stream = p->stream,
		};
		if (cs->c[k].id)
			cs->c[k].name =
				heph_coronames_best(cs->cn, cs->c[k].id);
		cs->n = (size_t)k + 1;
	}
	c = &cs->c[k];
	if (lost) {
		uint64_t count = 1;

		heph_packet_u64(p, "count", &count);
		/* From the file: saturate, never wrap. */
		cs->st->lost = count > UINT64_MAX - cs->st->lost
				       ? UINT64_MAX
				       : cs->st->lost + count;
		return c;
	}
	if (!c->counted) {
		c->counted = true;
		cs->st->coroutines++;
	}
	k = streammap_get(&cs->streams, 0, p->stream, true);
	if (k < 0)
		return NULL;
	cs->st->streams = cs->streams.n;
	if (convert_desc_is(p, "running")) {
		if (c->ran && c->ran_on != p->stream) {
			*from = c->ran_on;
			cs->st->migrations++;
		}
		c->ran = true;
		c->ran_on = p->stream;
	}
	return c;
}

/* The WHERE of a coroutine: the `symbol` of its first parked interval
 * that has one, else the name of that interval's innermost `stack`
 * frame.  Kept only for a coroutine without a name of its own. */
void convert_coro_where(struct convert_coro *c, const struct heph_packet *p,
			convert_name_fn fn, void *ctx)
{
	const char *s = NULL;
	struct heph_attr a;
	uint32_t pos = 0;
	uint16_t len = 0;

	if (c->where || c->name || !convert_desc_is(p, "suspended"))
		return;
	while (!s && heph_attr_next(p, &pos, &a))
		if (a.name_len == 6 && !memcmp(a.name, "symbol", 6) &&
		    a.type == HEPH_STR)
			s = heph_attr_str(&a, 0, &len);
	for (pos = 0; !s && fn && heph_attr_next(p, &pos, &a);)
		if (a.name_len == 5 && !memcmp(a.name, "stack", 5) &&
		    a.type == (HEPH_U64 | HEPH_ARRAY) && a.count &&
		    (s = fn(ctx, heph_attr_u64(&a, 0), true)))
			len = (uint16_t)strnlen(s, CV_WHERE_MAX);
	if (s && len)
		c->where = strndup(s, len < CV_WHERE_MAX ? len : CV_WHERE_MAX);
}
