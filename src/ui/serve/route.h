/*
 * route: what corotop serve answers to a request line and its Accept
 * header -- the only paths there are (/metrics, /snapshot, /healthz), the
 * only methods (GET, HEAD), and which metrics format the client asked for.
 * No I/O: the HTTP library hands it the parsed request, and the fuzz
 * target hands it anything.
 */
#ifndef COROTOP_SERVE_ROUTE_H
#define COROTOP_SERVE_ROUTE_H

#include <stdbool.h>

#include "ui/serve/metrics.h"

enum route_kind {
	ROUTE_METRICS = 0,
	ROUTE_SNAPSHOT,
	ROUTE_HEALTHZ,
	ROUTE_NOT_FOUND,	  /* 404 */
	ROUTE_METHOD_NOT_ALLOWED, /* 405, with "Allow: GET, HEAD" */
};

struct route {
	enum route_kind kind;
	unsigned status;	 /* 200 (may become 503), 404 or 405 */
	enum metrics_format fmt; /* ROUTE_METRICS */
};

/* method and path as the request line has them (path without the query);
 * accept: the Accept header, or NULL. */
struct route route_request(const char *method, const char *path,
			   const char *accept);

/* True when Accept names application/openmetrics-text with a quality
 * above 0 and at least that of any text/plain, text/any or any/any
 * range. */
bool route_wants_openmetrics(const char *accept);

#endif
