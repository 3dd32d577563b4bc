/*
 * convert_coros: the coroutines of a Heph trace, as the converters see
 * them -- who was born when (corotop_birth), which track each interval
 * belongs to, the program (corotop_pid, corotop_command), and each
 * coroutine's WHERE.  See convert_coros.c.
 */
#ifndef COROTOP_CONVERT_COROS_H
#define COROTOP_CONVERT_COROS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "convert/convert.h"
#include "engine/heph/heph.h"
#include "engine/heph/hephcoronames.h"
#include "engine/heph/hephfile.h"
#include "engine/heph/streammap.h"

/* A corotop_birth option: probe id `sub` became a new coroutine. */
struct convert_birth {
	uint64_t sub, ts, id;
	uint32_t pid; /* its corotop_coro_pid, 0: the program's */
};

/* One coroutine of the trace: a Chrome thread track. */
struct convert_coro {
	uint64_t sub, id; /* probe id; corotop's id for it (0: unknown) */
	uint32_t stream;  /* the first stream it was seen on */
	uint32_t ran_on;  /* the stream of its last running interval */
	uint32_t tid;	  /* as written */
	uint32_t pid;	  /* its process when not the program's, else 0 */
	bool ran, counted, seen;
	uint64_t ran_ts;   /* its last running interval's ts, written */
	uint64_t last_out; /* the last ts written on the track */
	const char *name;  /* corotop_name, or NULL */
	char *where;	   /* its first parked symbol or frame, or NULL */
};

struct convert_coros {
	bool ours; /* a corotop recording: its options have meaning */
	uint64_t pid;
	char command[160];
	struct convert_birth *births; /* by (sub, ts) */
	size_t nbirths;
	struct streammap keys; /* (sub, birth + 1 | stream) -> c[number] */
	struct convert_coro *c;
	size_t n, cap;
	struct streammap streams; /* (0, stream): the streams seen */
	const struct heph_coronames *cn;
	struct convert_stats *st;
};

/* Read f's corotop options (births, the program); st counts what the
 * converters share (convert_summary). */
void convert_coros_init(struct convert_coros *cs, const struct heph_file *f,
			const struct heph_coronames *cn,
			struct convert_stats *st);
void convert_coros_finish(struct convert_coros *cs);

/* The coroutine event packet p belongs to (a "lost" one: lost), counted
 * once; *from: the stream it last ran on when this running interval is on
 * another (a migration), else -1.  NULL when memory runs out. */
struct convert_coro *convert_coro_of(struct convert_coros *cs,
				     const struct heph_packet *p, bool lost,
				     int64_t *from);

/* Keep c's WHERE from p, a suspended interval, if it has none yet: its
 * symbol, else its innermost frame named by fn. */
void convert_coro_where(struct convert_coro *c, const struct heph_packet *p,
			convert_name_fn fn, void *ctx);

/* p's description is s ("running", "suspended", "lost"). */
static inline bool convert_desc_is(const struct heph_packet *p, const char *s)
{
	size_t n = strlen(s);

	return p->desc_len == n && !memcmp(p->desc, s, n);
}

#endif
