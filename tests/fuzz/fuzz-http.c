/*
 * fuzz-http: arbitrary bytes against corotop serve's request handling.
 *
 * The server (src/ui/serve/http.c, libmicrohttpd under our limits, route.c
 * behind it) runs in this process on a loopback port, with a fake source:
 * /metrics renders a small fixed snapshot through metrics.c, /snapshot a
 * fixed object, /healthz alternates between healthy and not.  Each input:
 *
 *   1. is split at NUL bytes into method, path and Accept, handed to
 *      route_request directly (our dispatch, whatever MHD would have let
 *      through);
 *   2. is sent over a socket: when its first byte is below 0x40 (no
 *      method starts so), as a request built from those parts, its method
 *      and path picked by the second and third bytes from the real ones
 *      or the parts (so random bytes reach every handler); else as raw
 *      bytes.  Then the write side is shut and the reply read to its end
 *      with a deadline.  A reply must be empty (closed) or an HTTP status
 *      line; a server that has not finished within the deadline is a
 *      hang, and aborts.
 *
 * ASan (the sanitizer build's fuzz suite) watches both sides.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ui/serve/http.h"
#include "ui/serve/metrics.h"
#include "ui/serve/route.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_HTTP_DEADLINE_MS 10000
#define FUZZ_HTTP_MAX_PART 4096

static struct http *fuzz_server;
/* Replies by status class (0: closed without one), printed at exit: how
 * far the inputs got. */
static unsigned long fuzz_replies[6];
static struct snapshot fuzz_snap;
static struct model_coro fuzz_coro[3];
/* Relaxed, pairs with nothing: a toggle whose order does not matter. */
static atomic_uint fuzz_health;

static bool fuzz_metrics(void *ctx, enum metrics_format fmt, char **body,
			 size_t *len)
{
	struct metrics_input in = {.s = &fuzz_snap, .top_where = 1};
	FILE *f;

	(void)ctx;
	*body = NULL;
	f = open_memstream(body, len);
	if (!f)
		return false;
	if (!metrics_render(f, &in, fmt)) {
		fclose(f);
		free(*body);
		return false;
	}
	return fclose(f) == 0;
}

static void fuzz_release(void *cls)
{
	free(cls);
}

static bool fuzz_snapshot(void *ctx, struct http_body *out)
{
	char *body = strdup("{\"ts\":1}\n");

	(void)ctx;
	if (!body)
		return false;
	*out = (struct http_body){body, strlen(body), fuzz_release, body};
	return true;
}

static const char *fuzz_unhealthy(void *ctx)
{
	(void)ctx;
	return atomic_fetch_add_explicit(&fuzz_health, 1,
					 memory_order_relaxed) %
			       2
		       ? "region truncated"
		       : NULL;
}

static void fuzz_report(void)
{
	fprintf(stderr,
		"fuzz-http: replies: %lu none, %lu 2xx, %lu 3xx, %lu 4xx, %lu "
		"5xx\n",
		fuzz_replies[0], fuzz_replies[2], fuzz_replies[3],
		fuzz_replies[4], fuzz_replies[5]);
}

static void fuzz_start(void)
{
	struct http_source src = {.metrics = fuzz_metrics,
				  .snapshot = fuzz_snapshot,
				  .unhealthy = fuzz_unhealthy};
	struct http_config c;
	char err[256];
	bool usage;

	snapshot_init(&fuzz_snap);
	fuzz_snap.ts = 10000000000ull;
	fuzz_snap.coro = fuzz_coro;
	fuzz_snap.count = 3;
	for (int i = 0; i < 3; i++) {
		fuzz_coro[i].id = (uint64_t)i + 1;
		fuzz_coro[i].state = i ? MODEL_SUSPENDED : MODEL_RUNNING;
		fuzz_coro[i].last_addr = 0x1000u * (unsigned)i;
	}
	fuzz_snap.t.running = 1;
	fuzz_snap.t.suspended = 2;
	http_config_defaults(&c);
	c.listen = "127.0.0.1:0";
	c.timeout_s = 2; /* an unfinished request is dropped soon */
	fuzz_server = http_create(&c, &src, &usage, err, sizeof(err));
	if (!fuzz_server) {
		fprintf(stderr, "fuzz-http: %s\n", err);
		abort();
	}
	atexit(fuzz_report);
}

static uint64_t fuzz_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* Up to three NUL-separated parts of data, each NUL-terminated. */
static void fuzz_parts(const uint8_t *data, size_t size, char *part[3])
{
	size_t at = 0;

	for (int i = 0; i < 3; i++) {
		size_t n = 0;

		part[i] = calloc(1, FUZZ_HTTP_MAX_PART + 1);
		if (!part[i])
			abort();
		while (at < size && data[at] && n < FUZZ_HTTP_MAX_PART)
			part[i][n++] = (char)data[at++];
		while (at < size && data[at])
			at++; /* the rest of an overlong part */
		if (at < size)
			at++;
	}
}

static void fuzz_exchange(const char *req, size_t len)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(http_port(fuzz_server)),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	uint64_t deadline = fuzz_ms() + FUZZ_HTTP_DEADLINE_MS;
	char reply[8192];
	size_t got = 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		abort();
	/* The server may close early (a request too large): a short write is
	 * no finding. */
	for (size_t off = 0; off < len;) {
		ssize_t w = send(fd, req + off, len - off, MSG_NOSIGNAL);

		if (w <= 0)
			break;
		off += (size_t)w;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t now = fuzz_ms();
		ssize_t r;

		if (now >= deadline) {
			fprintf(stderr, "fuzz-http: no end of reply in %d ms\n",
				FUZZ_HTTP_DEADLINE_MS);
			abort();
		}
		if (poll(&p, 1, (int)(deadline - now)) <= 0)
			continue;
		r = recv(fd, got < sizeof(reply) ? reply + got : reply,
			 got < sizeof(reply) ? sizeof(reply) - got
					     : sizeof(reply),
			 0);
		if (r == 0 || (r < 0 && errno == ECONNRESET))
			break;
		if (r < 0 && errno != EINTR && errno != EAGAIN)
			break;
		if (r > 0 && got < sizeof(reply))
			got += (size_t)r;
	}
	close(fd);
	if (got && (got < 9 || memcmp(reply, "HTTP/1.", 7))) {
		fprintf(stderr, "fuzz-http: a reply that is not HTTP: %.*s\n",
			(int)(got < 80 ? got : 80), reply);
		abort();
	}
	if (!got)
		fuzz_replies[0]++;
	else if (reply[9] >= '2' && reply[9] <= '5')
		fuzz_replies[reply[9] - '0']++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *part[3], *req = NULL;
	struct route r;
	int n;

	if (!fuzz_server)
		fuzz_start();
	fuzz_parts(data, size, part);
	r = route_request(part[0], part[1], part[2]);
	if (r.status != 200 && r.status != 404 && r.status != 405)
		abort();
	if (r.status == 200 && strcmp(part[0], "GET") &&
	    strcmp(part[0], "HEAD"))
		abort();
	if (size >= 3 && data[0] < 0x40) {
		static const char *methods[] = {"GET", "HEAD", "POST", NULL};
		static const char *paths[] = {"/metrics", "/snapshot",
					      "/healthz", NULL};
		/* part[0] starts with the three choice bytes. */
		const char *m = methods[data[1] % 4], *p = paths[data[2] % 4];
		const char *own = strlen(part[0]) > 3 ? part[0] + 3 : "GET";

		n = asprintf(&req,
			     "%s %s HTTP/1.1\r\nHost: fuzz\r\nAccept: %s\r\n"
			     "Connection: close\r\n\r\n",
			     m ? m : own, p ? p : part[1], part[2]);
		if (n < 0)
			abort();
		fuzz_exchange(req, (size_t)n);
		free(req);
	} else {
		fuzz_exchange((const char *)data, size);
	}
	for (int i = 0; i < 3; i++)
		free(part[i]);
	return 0;
}
