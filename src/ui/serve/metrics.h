/*
 * metrics: a snapshot as Prometheus metrics, in the OpenMetrics 1.0.0 text
 * format or the Prometheus 0.0.4 text format.  A pure function of its
 * input (a snapshot copy and the engine's statistics), so the unit test
 * feeds it hand-built snapshots.  docs/METRICS.md lists every family.
 */
#ifndef COROTOP_SERVE_METRICS_H
#define COROTOP_SERVE_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "engine/engine.h"
#include "engine/model/snapshot.h"

enum metrics_format {
	METRICS_PROMETHEUS = 0, /* text/plain; version=0.0.4 */
	METRICS_OPENMETRICS,	/* application/openmetrics-text 1.0.0 */
};

/* The Content-Type each format is served with. */
const char *metrics_content_type(enum metrics_format f);

/* The most WHERE locations --top-where may ask for. */
#define METRICS_TOP_WHERE_MAX 1000
#define METRICS_TOP_WHERE_DEFAULT 20

struct metrics_input {
	const struct snapshot *s;
	const struct engine_stats *stats; /* NULL: no corotop_engine_*_total */
	/* Attach mode's ppt buffers (NULL or !enabled: no corotop_ppt_*). */
	const struct engine_ppt_info *ppt;
	const struct engine_ppt_buffer *buf;
	size_t nbuf;
	/* corotop_suspended_where: the top K locations by suspended count,
	 * the rest as where="other" (0: only "other"). */
	unsigned top_where;
	/* A suspended coroutine's location for people (NULL: snapshot_where,
	 * full).  Returns buf. */
	const char *(*where)(void *ctx, const struct snapshot *s, uint64_t addr,
			     char *buf, size_t n);
	void *ctx;
};

/* The buckets of corotop_coroutine_state_seconds, in seconds (+Inf
 * follows them). */
#define METRICS_STATE_BUCKETS 9
extern const double metrics_state_bounds[METRICS_STATE_BUCKETS];

/* Whether the watched program is up: a launched or attached target that
 * has not exited, or an observed region whose engine has no error. */
bool metrics_target_up(const struct snapshot *s);

/* Write every family to f.  False when memory ran out (f then holds a
 * partial text the caller must not serve). */
bool metrics_render(FILE *f, const struct metrics_input *in,
		    enum metrics_format fmt);

/* A label value with \ " and newline escaped, and any byte that does not
 * start well-formed UTF-8 written as U+FFFD. */
void metrics_label_value(FILE *f, const char *v);

#endif
