/*
 * serve: corotop serve, the headless agent.  The engine runs as in batch
 * mode; instead of printing snapshots, it publishes one per refresh, and
 * an HTTP server (http.c) answers /metrics, /snapshot and /healthz from
 * the latest.  See serve.c.
 */
#ifndef COROTOP_SERVE_H
#define COROTOP_SERVE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "engine/engine.h"
#include "ui/rows/filter.h"

struct serve_options {
	const char *listen;	/* NULL: 127.0.0.1:9464 */
	const char *web_config; /* --web-config FILE, or NULL */
	unsigned top_where;	/* corotop_suspended_where's K */
	unsigned delay_tenths;	/* refresh period */
	unsigned hot_stacks;	/* /snapshot's hot_stacks rows */
	struct filter *filter;	/* -F for /snapshot's rows, or NULL */
	int sort_column;	/* --sort for them (-1: by model id) */
};

struct serve;

/* Bind and start listening (/metrics answers 503 until serve_run's first
 * refresh).  NULL with why in err; *usage when the address or the
 * --web-config file could not be read or is refused (exit 2) rather than
 * bound (exit 1).  Call with the signals
 * already blocked: the server's threads inherit the mask. */
struct serve *serve_create(const struct serve_options *o, bool *usage,
			   char *err, size_t errlen);
/*
 * Serve engine e (started) until SIGINT, SIGTERM or SIGHUP in sigs; once
 * the first state is published, say where on stderr ("corotop serve:
 * listening on http://ADDR:PORT/").  Returns 128 + N, or the target's
 * status when it ended first (its final state is served until then).
 */
int serve_run(struct serve *s, struct engine *e, const sigset_t *sigs);
/* One refresh of engine e's state, as serve_run makes every period:
 * snapshot, statistics, metrics rendered, published (bench/serve_scrape). */
void serve_refresh(struct serve *s, struct engine *e);
/* Where it listens: "127.0.0.1:PORT". */
const char *serve_address(const struct serve *s);
/* Stop the server (every connection closed, threads joined). */
void serve_destroy(struct serve *s);

#endif
