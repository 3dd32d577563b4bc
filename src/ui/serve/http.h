/*
 * http: corotop serve's HTTP server, on libmicrohttpd.  It owns the
 * listening socket and the library's threads; what it answers comes from a
 * source (the engine's published state in serve.c; a fake one in the fuzz
 * target), through route.c's dispatch.
 */
#ifndef COROTOP_SERVE_HTTP_H
#define COROTOP_SERVE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ui/serve/metrics.h"
#include "ui/serve/webconfig.h"

/* A body shared between answers: data stays valid until release(cls),
 * which the server calls once the answer is sent or dropped. */
struct http_body {
	const char *data;
	size_t len;
	void (*release)(void *cls);
	void *cls;
};

/* What the server serves.  Called on the library's threads, concurrently:
 * each must be thread-safe.  A metrics body is malloc'd and handed over;
 * the snapshot's is shared (one rendered copy for every client that asks
 * meanwhile, however slowly it reads). */
struct http_source {
	bool (*metrics)(void *ctx, enum metrics_format fmt, char **body,
			size_t *len);
	bool (*snapshot)(void *ctx, struct http_body *out);
	/* /healthz: NULL when healthy, else why not (503). */
	const char *(*unhealthy)(void *ctx);
	void *ctx;
};

#define HTTP_LISTEN_DEFAULT "127.0.0.1:9464"

struct http_config {
	const char *listen;   /* "ADDR:PORT" or "[ADDR6]:PORT"; port 0: any */
	unsigned connections; /* at once, all clients (64) */
	unsigned per_ip;      /* ... from one address (32) */
	unsigned timeout_s;   /* an idle connection is closed (10) */
	unsigned deadline_s;  /* a request must be whole by then (5) */
	size_t request_bytes; /* per connection: request line, headers (16 KiB)
			       */
	/* --web-config: TLS and basic auth (NULL: neither; loopback only). */
	const struct webconfig *web;
};

void http_config_defaults(struct http_config *c);

struct http;

/* Listening when it returns; NULL with why in err (the address cannot be
 * read: *usage set; or cannot be bound). */
struct http *http_create(const struct http_config *c,
			 const struct http_source *src, bool *usage, char *err,
			 size_t errlen);
/* The port bound (the one asked for, or the one the kernel picked). */
uint16_t http_port(const struct http *h);
/* The address bound, as "127.0.0.1:9464" or "[::1]:9464". */
const char *http_address(const struct http *h);
/* "https" with TLS, else "http". */
const char *http_scheme(const struct http *h);
/* Shut the connections whose request is past its deadline (the gate's
 * sweep; arrivals sweep too).  Call now and then. */
void http_sweep(struct http *h);
/* Stop listening, close every connection, join the threads. */
void http_destroy(struct http *h);

#endif
